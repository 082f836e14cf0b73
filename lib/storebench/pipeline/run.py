"""Running the two steps of an experiment (storebench.core.experiment): measure into result tables,
then analyse and render from them.

    python -m storebench.pipeline.run measure granularity --scale small   # servers; -> results/granularity/
    python -m storebench.pipeline.run analyse granularity                 # no server; prints the claims
    python -m storebench.pipeline.run measure access_pattern --scale reference --part servers \
        --results results/reference                                        # one part of a split measurement

``measure`` runs into a fresh directory and replaces ``results/<experiment>/`` only when it
finished, so a failed or interrupted measurement never leaves a mix of two runs. A part of a split measurement
(``parts.<experiment>.<part>`` in params.yaml) goes to ``results/<experiment>/<part>/``; the report reads
the parts together (storebench.core.experiment.ResultTables.read). The measure
modules are imported by name at run time: a report stage, which only reads tables, then depends on
the analysis code alone (storebench.pipeline.deps follows imports).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

from storebench.core import provenance
from storebench.core.experiment import MANIFEST, ResultsDir, ResultTables
from storebench.core.settings import load, load_params, params_hash, part_overrides
from storebench.experiments import experiment, step
from storebench.paths import ROOT

RESULTS_DIR = ROOT / "results"


def results_path(name: str, results_root: Path | None = None, part: str | None = None) -> Path:
    path = Path(results_root or RESULTS_DIR) / name
    return path / part if part else path


def raw_path(name: str, results_root: Path | None = None, part: str | None = None) -> Path:
    """Raw per-request events: beside the tables, but kept in DVC's cache rather than git."""
    path = Path(results_root or RESULTS_DIR) / "raw" / name
    return path / part if part else path


def settings(name: str, scale: str | None = None, params_file: Path | None = None, overrides: dict | None = None):
    return load(step(name, "measure").Settings, name, scale, load_params(params_file), overrides)


def measure(name: str, scale: str | None = None, *, results_root: Path | None = None, params_file: Path | None = None,
            overrides: dict | None = None, progress: bool = True, part: str | None = None) -> ResultTables:
    """Measure experiment ``name`` (or one ``part`` of it) and record its tables and manifest; returns them as
    read back."""
    declared, module = experiment(name), step(name, "measure")
    overrides = {**part_overrides(load_params(params_file), name, part), **(overrides or {})}
    chosen = settings(name, scale, params_file, overrides)
    target, raw = results_path(name, results_root, part), raw_path(name, results_root, part)
    staging = target.with_name(f".{target.name}.measuring")
    shutil.rmtree(staging, ignore_errors=True)
    out = ResultsDir(staging, root=Path(results_root or RESULTS_DIR))
    started, clock = provenance.utc_now(), time.monotonic()
    with provenance.LoadSampler() as load:
        module.measure(chosen, out, progress=progress)
    manifest = {
        "experiment": name, "paper": declared.paper, "reference": declared.reference,
        "run_id": provenance.new_run_id(name, started), "started_utc": started.isoformat(),
        "finished_utc": provenance.utc_now().isoformat(), "duration_s": round(time.monotonic() - clock, 1),
        "scale": chosen.scale, "part": part, "git_rev": provenance.git_revision(), "params_hash": params_hash(chosen.as_dict()),
        "settings": chosen.as_dict(), "machine": provenance.machine_card(), "load_avg_1m": load.summary(),
        "versions": {"client_packages": provenance.package_versions(), **_system_versions(out)},
        "tables": out.tables(),
    }
    provenance.write_manifest(staging / MANIFEST, manifest)
    _replace(staging / "raw", raw)
    _replace(staging, target)
    return ResultTables.read(target)


def _system_versions(out: ResultsDir) -> dict:
    """Server and client versions named in the tables' ``system_version``/``client_version`` columns."""
    import pandas as pd

    found = {}
    for name in out.tables():
        try:
            frame = pd.read_csv(out.path / f"{name}.csv")
        except pd.errors.EmptyDataError:
            continue
        for column in ("system_version", "client_version"):
            if "system" in frame and column in frame:
                pairs = frame[["system", column]].dropna().drop_duplicates()
                found.setdefault(column + "s", {}).update(dict(zip(pairs.system, pairs[column].astype(str))))
    return found


def _replace(source: Path, target: Path) -> None:
    if not source.exists():
        return
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    source.rename(target)


def tables(name: str, results_root: Path | None = None) -> ResultTables:
    return ResultTables.read(results_path(name, results_root))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m storebench.pipeline.run", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["measure", "analyse"])
    parser.add_argument("name")
    parser.add_argument("--scale", default=None, help="smoke | small | paper | reference (default: params.yaml's scale)")
    parser.add_argument("--results", default=str(RESULTS_DIR), help="results root (default: results/)")
    parser.add_argument("--part", default=None, help="one part of a split measurement (params.yaml: parts.<name>)")
    args = parser.parse_args(argv)
    if args.action == "measure":
        recorded = measure(args.name, args.scale, results_root=Path(args.results), part=args.part)
        print(f"{args.name}: {', '.join(recorded.names)} in {results_path(args.name, Path(args.results), args.part)} "
              f"({recorded.manifest['duration_s']} s)")
        return 0
    findings = step(args.name, "analysis").analyse(tables(args.name, Path(args.results)))
    print(findings.headline)
    for claim in findings.claims:
        print(f"- [{claim.verdict}] {claim.reference}: {claim.statement} ({claim.metric})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
