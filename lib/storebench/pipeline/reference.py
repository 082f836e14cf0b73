"""The reference run: measure one experiment (or one part of it) at the `reference` preset, record it in
reference/dvc.lock, render its report and the index; and say, per experiment, what has been measured,
when, how long it took and whether the code it ran has changed since.

    python -m storebench.pipeline.reference status
    python -m storebench.pipeline.reference measure location            # ~40 min at most per stage
    python -m storebench.pipeline.reference measure access_pattern --part servers
    python -m storebench.pipeline.reference render location             # the report and the index only

The measurement stages of reference/dvc.yaml are frozen (``dvc repro`` never starts one): this command runs
a stage's own command, then ``dvc commit`` records the inputs it ran with, so ``status`` can tell later
whether a committed reference result still matches the code.
"""
from __future__ import annotations

import argparse
import hashlib
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from storebench.paths import ROOT

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

    @property
    def summary(self) -> str:
        if not self.measured:
            return "not measured yet"
        stale = (f"; {len(self.changed_inputs)} input(s) changed since: {', '.join(self.changed_inputs[:4])}"
                 + (", ..." if len(self.changed_inputs) > 4 else "")) if self.changed_inputs else "; inputs unchanged"
        return f"measured {str(self.started_utc)[:16].replace('T', ' ')} UTC in {self.duration_s:.0f} s at {self.git_rev}{stale}"


def stages() -> dict[str, dict]:
    return yaml.safe_load((REFERENCE_DIR / "dvc.yaml").read_text())["stages"]


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
    return (yaml.safe_load(path.read_text()) or {}).get("stages", {}) if path.exists() else {}


def state(stage: str) -> StageState:
    import json

    experiment, part = measure_stages()[stage]
    results = ROOT / "results" / "reference" / experiment / (part or "")
    manifest_path = results / "manifest.json"
    locked = _lock().get(stage)
    if locked is None or not manifest_path.exists():
        return StageState(stage, experiment, part, False, None, None, None, ())
    manifest = json.loads(manifest_path.read_text())
    changed = tuple(d["path"] for d in locked.get("deps", []) if _changed(ROOT / d["path"], d))
    return StageState(stage, experiment, part, True, manifest.get("started_utc"), manifest.get("duration_s"),
                      str(manifest.get("git_rev", ""))[:8], changed)


def _changed(path: Path, recorded: dict) -> bool:
    """A file dep whose md5 differs from the lock's (directories: DVC's own hash, checked by existence only)."""
    if not path.exists():
        return True
    if path.is_dir() or str(recorded.get("md5", "")).endswith(".dir"):
        return False
    return hashlib.md5(path.read_bytes()).hexdigest() != recorded.get("md5")


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
        if any(o == i or o.startswith(i + "/") or i.startswith(o + "/") for o in outs for i in inputs):
            writers.append(stage)
    return [stage for stage in writers if stage != name and not state(stage).measured]


def measure(experiment: str, part: str | None = None) -> float:
    """Run one reference measurement stage, record it in reference/dvc.lock, then render."""
    name = stage_name(experiment, part)
    cmd, inputs = stages()[name]["cmd"], [_dep_path(d) for d in stages()[name]["deps"]]
    upstream = unmeasured_upstream(name)
    if upstream:
        raise SystemExit(f"{name} reads what these reference stages write; measure them first:\n  "
                         + "\n  ".join(upstream))
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
    if all(state(s).measured for s in measure_stages(experiment)):
        render(experiment)
    else:
        print(f"[reference] {experiment}: other parts not measured yet; report not rendered", flush=True)
    print(f"[reference] {name}: measured in {took:.0f} s", flush=True)
    return took


def render(experiment: str) -> None:
    """The reference report of ``experiment`` and the index (no server; seconds)."""
    _dvc("repro", f"reference/dvc.yaml:report_{experiment}")
    subprocess.run([sys.executable, "-m", "storebench.pipeline.deps", "write"], cwd=ROOT, check=True)
    _dvc("repro", "--single-item", "index")


def status() -> list[StageState]:
    return [state(name) for name in measure_stages()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m storebench.pipeline.reference", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("status", help="per reference stage: measured when, how long, inputs changed since")
    one = sub.add_parser("measure", help="measure one experiment (or one part), then render it")
    one.add_argument("experiment")
    one.add_argument("--part", default=None)
    again = sub.add_parser("render", help="re-render one experiment's reference report and the index")
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
