"""Where things live. Override with STOREBENCH_ROOT, STOREBENCH_WORK, STOREBENCH_CACHE."""
from __future__ import annotations

import os
from pathlib import Path


def _repo_root() -> Path:
    if "STOREBENCH_ROOT" in os.environ:
        return Path(os.environ["STOREBENCH_ROOT"]).resolve()
    source_tree = Path(__file__).resolve().parents[2]
    if (source_tree / "params.yaml").exists():
        return source_tree
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "params.yaml").exists():
            return folder
    return here


ROOT = _repo_root()
DATA_DIR = ROOT / "data"  # raw datasets, tracked by data.dvc
PREPARED_DIR = ROOT / "prepared"  # arrays made by the prepare stage (STOREBENCH_PREPARED overrides: prepared_dir())
REPORTS_DIR = ROOT / "reports"
WORK_DIR = Path(os.environ.get("STOREBENCH_WORK", ROOT / "work"))  # store data, server dirs, logs (git-ignored)
CACHE_DIR = Path(os.environ.get("STOREBENCH_CACHE", Path.home() / ".cache" / "storebench"))


def scratch_dir(experiment: str) -> Path:
    """A new directory for one run of ``experiment``, under ``WORK_DIR/<experiment>``."""
    import tempfile

    parent = WORK_DIR / experiment
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{experiment}-", dir=parent))


def prepared_dir() -> Path:
    """Where prepared datasets are read from; looked up at call time so tests can point it elsewhere."""
    return Path(os.environ.get("STOREBENCH_PREPARED", PREPARED_DIR))


MEMORY_DIR = Path(os.environ.get("STOREBENCH_MEMORY_DIR", "/dev/shm")) / f"storebench-{os.getuid()}"
