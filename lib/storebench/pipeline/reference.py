"""The reference run: measure one experiment (or one part of it) at the `reference` preset, record it in
reference/dvc.lock, render its report and the index; and say, per experiment, what has been measured,
when, how long it took and whether the code it ran has changed since.

    python -m storebench.pipeline.reference status
    python -m storebench.pipeline.reference measure location            # ~40 min at most per stage
    python -m storebench.pipeline.reference measure access_pattern --part servers
    python -m storebench.pipeline.reference render location             # the report and the index only
    python -m storebench.pipeline.reference render granularity          # some parts measured: its partial report

The measurement stages of reference/dvc.yaml are frozen (``dvc repro`` never starts one): this command runs
a stage's own command, then ``dvc commit`` records the inputs it ran with, so ``status`` can tell later
whether a committed reference result still matches the code.
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from storebench.paths import ROOT
from storebench.pipeline import yamlfile

REFERENCE_DIR = ROOT / "reference"


@dataclass(frozen=True)
class StageState:
    stage: str
    experiment: str
    part: str | None
    measured: bool
    started_utc: str | None
    duration_s: float | None
    git_rev: str | None
    changed_inputs: tuple[str, ...]  # inputs whose content differs from what the measurement ran with
    machine: str | None = None  # the CPU it ran on: parts compared with each other need one machine

    @property
    def summary(self) -> str:
        if not self.measured:
            return "not measured yet"
        stale = (f"; {len(self.changed_inputs)} input(s) changed since: {', '.join(self.changed_inputs[:4])}"
                 + (", ..." if len(self.changed_inputs) > 4 else "")) if self.changed_inputs else "; inputs unchanged"
        where = f" on {self.machine}" if self.machine else ""
        return (f"measured {str(self.started_utc)[:16].replace('T', ' ')} UTC in {self.duration_s:.0f} s{where} at "
                f"{self.git_rev}{stale}")


def stages() -> dict[str, dict]:
    return yamlfile.load(REFERENCE_DIR / "dvc.yaml")["stages"]


def measure_stages(experiment: str | None = None) -> dict[str, tuple[str, str | None]]:
    """reference/dvc.yaml's measurement stages: stage name -> (experiment, part)."""
    found = {}
    for name, stage in stages().items():
        if not name.startswith("measure_"):
            continue
        words = shlex.split(stage["cmd"])
        exp = words[words.index("measure") + 1]
        part = words[words.index("--part") + 1] if "--part" in words else None
        if experiment in (None, exp):
            found[name] = (exp, part)
    return found


def stage_name(experiment: str, part: str | None) -> str:
    for name, (exp, p) in measure_stages(experiment).items():
        if p == part:
            return name
    parts = [p for _, p in measure_stages(experiment).values()]
    if not parts:
        from storebench.experiments import EXPERIMENTS

        raise SystemExit(f"no reference stage for {experiment!r}; experiments: {', '.join(EXPERIMENTS)}")
    raise SystemExit(f"{experiment}: no part {part!r}; its parts: {', '.join(str(p) for p in parts)}")


def _lock() -> dict:
    path = REFERENCE_DIR / "dvc.lock"
    return (yamlfile.load(path) or {}).get("stages", {}) if path.exists() else {}


def state(stage: str, tracked_only: bool = False) -> StageState:
    return states([stage], tracked_only)[stage]


def states(names: list[str] | None = None, tracked_only: bool = False) -> dict[str, StageState]:
    """Per reference measurement stage (all, or ``names``): measured or not, when, how long, at which commit,
    and which of its inputs differ now from what it ran with (DVC's own comparison with reference/dvc.lock).
    ``tracked_only`` compares only what git holds (code, configuration, params, committed result tables),
    so the answer is the same on every clone; otherwise the data folders too, where this machine has them."""
    import json

    defined = measure_stages()
    names = list(defined) if names is None else names
    lock = _lock()
    found = {name: json.loads(_manifest(*defined[name]).read_text()) for name in names
             if name in lock and _manifest(*defined[name]).exists()}
    measured = list(found)
    changed = changed_inputs(measured, tracked_only)
    result = {}
    for name in names:
        experiment, part = defined[name]
        manifest = found.get(name)
        result[name] = (StageState(name, experiment, part, False, None, None, None, ()) if manifest is None else
                        StageState(name, experiment, part, True, manifest.get("started_utc"),
                                   manifest.get("duration_s"), str(manifest.get("git_rev", ""))[:8], changed[name],
                                   _machine_label(manifest)))
    return result


def parts_on_other_machines(experiment: str) -> list[str]:
    """The measured parts of ``experiment`` whose manifests name a machine other than this one."""
    import json

    from storebench.core.provenance import machine_card
    from storebench.report.machine import IDENTITY_FIELDS

    def identity(machine: dict) -> tuple[str, ...]:
        return tuple(str(machine.get(key)) for key in IDENTITY_FIELDS)

    here, lock = identity(machine_card()), _lock()
    found = []
    for name, (exp, part) in measure_stages(experiment).items():
        path = _manifest(exp, part)
        if part is not None and name in lock and path.exists():
            there = json.loads(path.read_text()).get("machine")
            if there and identity(there) != here:
                found.append(part)
    return found


def _machine_label(manifest: dict) -> str | None:
    from storebench.report.machine import label

    machine = manifest.get("machine")
    if not machine:
        return None
    return f"{label(machine)}, kernel {machine['kernel']}" if machine.get("kernel") else label(machine)


def is_measured(stage: str) -> bool:
    """Recorded in reference/dvc.lock, with the manifest its measurement wrote."""
    return stage in recorded({stage: measure_stages()[stage]})


def recorded(defined: dict[str, tuple[str, str | None]]) -> set[str]:
    """Of the measurement stages ``defined`` (name -> (experiment, part)), those recorded in reference/dvc.lock
    with the manifest their measurement wrote."""
    lock = _lock()
    return {name for name, (experiment, part) in defined.items()
            if name in lock and _manifest(experiment, part).exists()}


def _manifest(experiment: str, part: str | None) -> Path:
    return ROOT / "results" / "reference" / experiment / (part or "") / "manifest.json"


def changed_inputs(names: list[str], tracked_only: bool = False) -> dict[str, tuple[str, ...]]:
    """Per measured stage, its inputs that differ from the lock: files and folders by path, params as
    ``param <key>``. DVC's status skips frozen stages, so this asks each of their deps directly."""
    if not names:
        return {}
    from dvc.dependency.param import ParamsDependency
    from dvc.repo import Repo

    tracked = _in_git_paths() if tracked_only else None
    result = {}
    with Repo(str(ROOT)) as repo:
        wanted = set(names)
        for stage in repo.stage.collect(str(REFERENCE_DIR / "dvc.yaml")):
            if stage.name not in wanted:
                continue
            changed = []
            for dep in stage.deps:
                path = str(Path(dep.fs_path).relative_to(ROOT))
                if tracked is not None and not isinstance(dep, ParamsDependency) and path.rstrip("/") not in tracked:
                    continue
                for what in dep.status().values():
                    changed += [f"param {p}" for p in what] if isinstance(what, dict) else [path]
            result[stage.name] = tuple(changed)
    return result


def index_inputs() -> tuple[list[str], list[str]]:
    """What decides whether the committed reference results are still current, as the index shows it (so
    its DVC stage depends on them): reference/dvc.lock, and every measured stage's git-tracked inputs and
    params. Inputs another measurement writes (resources reads results/reference/dataloaders) are left out:
    reference/dvc.lock records each such measurement, and as a dep they would put that experiment's frozen
    stages, measured or not, upstream of the index."""
    defined, tracked = stages(), _in_git_paths()
    written = [_dep_path(o).rstrip("/") for s in measure_stages() for o in defined[s].get("outs", [])]
    deps, params = {"reference/dvc.lock"}, set()
    for name in _lock():
        if name.startswith("measure_") and name in defined:
            deps |= {d for d in map(_dep_path, defined[name]["deps"]) if d.rstrip("/") in tracked
                     and not any(_overlaps(d.rstrip("/"), out) for out in written)}
            params |= set(defined[name].get("params", []))
    return sorted(deps), sorted(params)


def _overlaps(path: str, other: str) -> bool:
    return path == other or path.startswith(other + "/") or other.startswith(path + "/")


def _in_git_paths() -> set[str]:
    """Every file git tracks and every folder that holds one."""
    files = _git("ls-files").splitlines()
    return set(files) | {str(parent) for f in files for parent in Path(f).parents if str(parent) != "."}


def _dep_path(dep) -> str:
    return next(iter(dep)) if isinstance(dep, dict) else str(dep)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def _dvc(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "dvc", *args], cwd=ROOT, check=True)


def unmeasured_upstream(name: str) -> list[str]:
    """The reference measurement stages not yet measured whose results ``name`` reads (e.g. resources and
    scalability take their loader configurations from the reference dataloaders, all parts)."""
    defined = stages()
    inputs = [_dep_path(d).rstrip("/") for d in defined[name]["deps"]]
    writers = []
    for stage in measure_stages():
        outs = [_dep_path(o).rstrip("/") for o in defined[stage].get("outs", [])]
        if any(_overlaps(o, i) for o in outs for i in inputs):
            writers.append(stage)
    return [stage for stage in writers if stage != name and not is_measured(stage)]


def measure(experiment: str, part: str | None = None) -> float:
    """Run one reference measurement stage, record it in reference/dvc.lock, then render."""
    name = stage_name(experiment, part)
    cmd, inputs = stages()[name]["cmd"], [_dep_path(d) for d in stages()[name]["deps"]]
    upstream = unmeasured_upstream(name)
    if upstream:
        raise SystemExit(f"{name} reads what these reference stages write; measure them first:\n  "
                         + "\n  ".join(upstream))
    elsewhere = [p for p in parts_on_other_machines(experiment) if p != part]
    if elsewhere:
        print(f"[reference] note: {len(elsewhere)} measured part(s) of {experiment} ran on another machine "
              f"({', '.join(elsewhere)}): a claim that sets this part against them is judged not comparable "
              f"(crosses machines) until they are measured on one machine", flush=True)
    uncommitted = _git("status", "--porcelain", "--", *inputs)
    if uncommitted:
        raise SystemExit(f"{name}: commit these first, so the measurement is of committed code:\n{uncommitted}")
    started_at = _git("rev-parse", "HEAD")
    print(f"[reference] {name}: {cmd}", flush=True)
    clock = time.monotonic()
    subprocess.run(shlex.split(cmd.replace("python ", f"{sys.executable} ", 1)), cwd=ROOT, check=True)
    took = time.monotonic() - clock
    moved = _git("diff", "--name-only", started_at, "--", *inputs) + _git("status", "--porcelain", "--", *inputs)
    if moved:  # dvc commit hashes today's files: it must not record inputs the measurement did not run
        raise SystemExit(f"{name}: its inputs changed while it measured; not recorded in reference/dvc.lock:\n{moved}")
    _dvc("commit", "-f", f"reference/dvc.yaml:{name}")
    try:
        render(experiment)
    except subprocess.CalledProcessError:
        print(f"[reference] {name}: measured and recorded in reference/dvc.lock, but its report did not render (the "
              f"error is above); mend it, then: python -m storebench.pipeline.reference render {experiment}",
              file=sys.stderr, flush=True)
        raise
    print(f"[reference] {name}: measured in {took:.0f} s", flush=True)
    return took


def render(experiment: str) -> None:
    """The reference report of ``experiment`` (while only some of its parts are measured, its partial report,
    under reports/reference/partial/) and the index, which counts the parts measured (no server; seconds)."""
    from storebench.pipeline.deps import REFERENCE_REPORTS

    defined = measure_stages(experiment)
    held = recorded(defined)
    if not held:
        raise SystemExit(f"{experiment}: no reference part measured yet, nothing to render; "
                         f"measure one first (python -m storebench.pipeline.reference measure {experiment} --part ...)")
    complete = len(held) == len(defined)
    if complete and f"partial_{experiment}" in stages():  # measured in full: the partial report goes
        _dvc("remove", "--outs", f"reference/dvc.yaml:partial_{experiment}")
    first_render = complete and not (ROOT / REFERENCE_REPORTS / f"{experiment}.findings.json").exists()
    _write_stages()  # a partial stage names the parts measured so far; the index, the inputs of the measured ones
    if complete:
        _dvc("repro", f"reference/dvc.yaml:report_{experiment}")
    else:
        print(f"[reference] {experiment}: {len(held)} of {len(defined)} parts measured; rendering its partial report",
              flush=True)
        _dvc("repro", f"reference/dvc.yaml:partial_{experiment}")
    if first_render:
        _write_stages()  # the new report is now upstream of the index
    _dvc("repro", "--single-item", "index")


def _write_stages() -> None:
    """dvc.yaml's and reference/dvc.yaml's stages and deps, as the imports, params and measured parts make them."""
    subprocess.run([sys.executable, "-m", "storebench.pipeline.deps", "write"], cwd=ROOT, check=True)


def status(tracked_only: bool = False) -> list[StageState]:
    return list(states(tracked_only=tracked_only).values())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m storebench.pipeline.reference", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("status", help="per reference stage: measured when, how long, inputs changed since")
    one = sub.add_parser("measure", help="measure one experiment (or one part), then render it")
    one.add_argument("experiment")
    one.add_argument("--part", default=None)
    again = sub.add_parser("render", help="re-render one experiment's reference report (its partial report while "
                                          "parts are missing) and the index")
    again.add_argument("experiment")
    args = parser.parse_args(argv)
    if args.action == "measure":
        measure(args.experiment, args.part)
    elif args.action == "render":
        render(args.experiment)
    else:
        for s in status():
            print(f"{s.stage:40s} {s.summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
