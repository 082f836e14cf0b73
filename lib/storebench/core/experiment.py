"""The experiment contract: what every experiment is, written once.

An experiment is a package ``storebench.experiments.<paper>.<name>`` made of three modules:

- ``__init__.py`` declares ``EXPERIMENT = Experiment(...)``: its name, the paper and the section,
  figure or table it reproduces, and the question it answers, plus any vocabulary both steps share
  (labels that measure writes and analysis reads). Nothing that imports more: both steps below
  import it, so it stays light.
- ``measure.py`` defines ``Settings`` (a ``storebench.core.settings.Settings``: typed, checked
  against ``params.yaml``) and ``measure(settings, out: ResultsDir) -> None``. The only step that
  starts servers: it writes result tables (``out.write(name, frame)``) and the raw per-request
  events (``out.raw_dir``). The manifest (run id, UTC times, git revision, params hash, machine
  card, versions) is written around it by ``storebench.pipeline.run``.
- ``analysis.py`` defines ``analyse(tables: ResultTables) -> Findings`` (pure: tables in, findings
  out; no server, no clock, no file written) and ``figures(tables) -> dict[str, Figure]``.

The measurement stage of ``dvc.yaml`` runs ``measure``; the report stage runs the notebook, which
reads the recorded tables and calls ``analyse`` and ``figures``. So editing a verdict rule or a
figure re-renders in seconds, and only a change to a store or to the timing code re-measures.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

# Paper key -> citation. Each paper has a subpackage of storebench.experiments named after it; "harness"
# holds what calibrates the suite itself (first: it says how far every other number is from its ceiling).
PAPERS = {
    "harness": "storebench's own clients beside each system's native benchmark tool (calibration)",
    "dl_storage_benchmarking": "Peng Cheng and Haryadi S. Gunawi, \"Storage Benchmarking with Deep Learning "
                               "Workloads\", University of Chicago (seeds 000/003)",
    "ml_storage_study": "Benita Kathleen Britto, Hemalkumar Patel and Reetuparna Mukherjee, \"Studying Storage "
                        "Systems for ML Workloads\" (seed 001)",
    "layoutbench": "Debopam Sanyal, Hongjie Chen, Alexey Tumanov and Joshua Kimball, \"LayoutBench: Performance "
                   "Benchmarking of Cloud Storage Layouts for Multimedia Data\", Georgia Tech and Dolby (seed 002)",
    "cassandra_dl": "Francesco Versaci and Giovanni Busonera, \"Scaling deep learning data management with "
                    "Cassandra DB\", CRS4, 2022 (seed 004)",
}
PAPER_TITLES = {
    "harness": "The harness: storebench's clients vs each system's own tool",
    "dl_storage_benchmarking": "Storage Benchmarking with Deep Learning Workloads (Cheng & Gunawi)",
    "ml_storage_study": "Studying Storage Systems for ML Workloads (Britto, Patel & Mukherjee)",
    "layoutbench": "LayoutBench: cloud storage layouts for multimedia data (Sanyal, Chen, Tumanov & Kimball)",
    "cassandra_dl": "Scaling deep learning data management with Cassandra DB (Versaci & Busonera)",
}
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Experiment:
    """The declaration every experiment package makes (its ``EXPERIMENT``)."""
    name: str
    paper: str  # a key of PAPERS
    reference: str  # section, figures and tables of the paper it reproduces
    question: str  # one sentence
    # For an experiment that does not follow the repeat policy or read the n_samples dataset: how it
    # repeats and what it reads, as templates filled from its settings (the report's Repeats and Measured).
    repeats: str | None = None
    data: str | None = None

    def __post_init__(self):
        if self.paper not in PAPERS:
            raise ValueError(f"experiment {self.name!r}: unknown paper {self.paper!r}; known: {', '.join(PAPERS)}")

    @property
    def package(self) -> str:
        return f"storebench.experiments.{self.paper}.{self.name}"


class ResultsDir:
    """Where one measurement writes its result tables (CSV, committed) and raw events (DVC cache)."""

    def __init__(self, path: Path, root: Path | None = None):
        self.path = Path(path)
        self.root = Path(root) if root is not None else self.path.parent  # the results root it writes under
        self.path.mkdir(parents=True, exist_ok=True)

    @property
    def raw_dir(self) -> Path:
        return self.path / "raw"

    def write(self, name: str, frame: pd.DataFrame) -> Path:
        """Record table ``name`` (``<results>/<name>.csv``)."""
        if not name.replace("_", "").isalnum():
            raise ValueError(f"table name {name!r}: letters, digits and _ only")
        target = self.path / f"{name}.csv"
        frame.to_csv(target, index=False)
        return target

    def tables(self) -> list[str]:
        return sorted(p.stem for p in self.path.glob("*.csv"))


class TableMissing(KeyError):
    pass


class ResultTables:
    """The recorded tables of one measurement, read back (what ``analyse`` and ``figures`` receive)."""

    def __init__(self, frames: dict[str, pd.DataFrame], manifest: dict):
        self._frames, self.manifest = frames, manifest

    @classmethod
    def read(cls, path: Path) -> "ResultTables":
        """One measurement's tables, or, where ``path`` holds the parts of a split measurement (one folder
        each, with its own manifest), all parts read together (``merged``)."""
        path = Path(path)
        manifest_path = path / MANIFEST
        if not manifest_path.exists():
            parts = sorted(p for p in path.iterdir() if (p / MANIFEST).exists()) if path.is_dir() else []
            if parts:
                return cls.merged({p.name: cls.read(p) for p in parts})
            raise FileNotFoundError(f"no recorded measurement in {path} (no {MANIFEST}): run its measurement "
                                    f"stage first (dvc repro measure_<experiment>) or set measure=True")
        frames = {p.stem: _read_csv(p) for p in sorted(path.glob("*.csv"))}
        return cls(frames, json.loads(manifest_path.read_text()))

    @classmethod
    def merged(cls, parts: dict[str, "ResultTables"]) -> "ResultTables":
        """The parts of a split measurement as one: each table concatenated over the parts (a ``part``
        column says which), one manifest (the first and last UTC times, the summed duration, the settings
        and machine cards merged: equal values kept, lists unioned in order) that lists every part's own
        run and machine (parts measured in different sessions may have run on different hosts)."""
        names = list(dict.fromkeys(n for tables in parts.values() for n in tables.names))
        frames = {}
        for name in names:
            pieces = [tables[name].assign(part=part) for part, tables in parts.items() if name in tables]
            # a part's table with no rows would turn the others' integer columns into floats
            kept = [p for p in pieces if len(p)] or [p for p in pieces if len(p.columns)][:1]
            frames[name] = pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
        return cls(frames, merged_manifest({part: tables.manifest for part, tables in parts.items()}))

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name not in self._frames:
            raise TableMissing(f"table {name!r} was not recorded; recorded: {', '.join(self._frames) or 'none'}")
        return self._frames[name]

    def get(self, name: str, default=None):
        return self._frames.get(name, default)

    def __contains__(self, name: str) -> bool:
        return name in self._frames

    @property
    def names(self) -> list[str]:
        return list(self._frames)

    @property
    def settings(self) -> dict:
        """The settings the measurement ran with (from its manifest)."""
        return self.manifest.get("settings", {})


def recorded_table(results_root: Path, experiment: str, table: str) -> tuple[pd.DataFrame, dict] | None:
    """Table ``table`` of another experiment's measurement under ``results_root`` (its parts read together)
    and that measurement's manifest, or None where it has not been measured or did not record the table."""
    try:
        tables = ResultTables.read(Path(results_root) / experiment)
    except FileNotFoundError:
        return None
    return (tables[table], tables.manifest) if table in tables else None


RUN_KEYS = ("run_id", "started_utc", "finished_utc", "duration_s", "git_rev", "params_hash", "load_avg_1m", "machine")


def merged_manifest(manifests: dict[str, dict]) -> dict:
    """One manifest for the parts of a measurement (see ``ResultTables.merged``)."""
    first = next(iter(manifests.values()))
    runs = list(manifests.values())
    manifest = {**first, "part": None, "tables": sorted({t for m in runs for t in m.get("tables", [])})}
    manifest["run_id"] = "+".join(str(m.get("run_id")) for m in runs)
    manifest["started_utc"] = min(str(m.get("started_utc")) for m in runs)
    manifest["finished_utc"] = max(str(m.get("finished_utc")) for m in runs)
    manifest["duration_s"] = round(sum(float(m.get("duration_s") or 0) for m in runs), 1)
    manifest["git_rev"] = ", ".join(dict.fromkeys(str(m.get("git_rev")) for m in runs))
    manifest["settings"] = merge_settings([m.get("settings") or {} for m in runs])
    manifest["versions"] = merge_settings([m.get("versions") or {} for m in runs])
    manifest["machine"] = merge_settings([m.get("machine") or {} for m in runs])  # a differing field: a list
    manifest["parts"] = {part: {key: m.get(key) for key in RUN_KEYS} for part, m in manifests.items()}
    loads = [m["load_avg_1m"] for m in runs if isinstance(m.get("load_avg_1m"), dict)]
    manifest["load_avg_1m"] = {"max": max(x["max"] for x in loads), "mean": round(
        sum(x["mean"] for x in loads) / len(loads), 2), "parts_recorded": len(loads)} if loads else None
    return manifest


def merge_settings(settings: list[dict]) -> dict:
    """Settings of several parts as one: a key the parts agree on keeps its value; lists are unioned
    in order; mappings are merged key by key; other values that differ become the list of them."""
    merged = {}
    for key in dict.fromkeys(k for s in settings for k in s):
        values = [s[key] for s in settings if key in s]
        if all(v == values[0] for v in values):
            merged[key] = values[0]
        elif all(isinstance(v, list) for v in values):
            merged[key] = list(_unique(item for v in values for item in v))
        elif all(isinstance(v, dict) for v in values):
            merged[key] = merge_settings(values)
        else:
            merged[key] = list(_unique(values))
    return merged


def _unique(items):
    seen = []
    for item in items:
        if item not in seen:
            seen.append(item)
            yield item


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:  # a table with no rows and no header (nothing measured)
        return pd.DataFrame()
