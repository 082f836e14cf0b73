"""Where things live: the one room for every directory the suite reads or writes.

The source tree is fixed at import; the work, cache and memory directories are looked up at
call time, so a test or a second checkout can point them elsewhere with the environment:
STOREBENCH_ROOT, STOREBENCH_WORK, STOREBENCH_CACHE, STOREBENCH_MEMORY_DIR, STOREBENCH_PREPARED,
STOREBENCH_CONF_DIR.
"""
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
LOCATIONS = ("memory", "disk")


def work_dir() -> Path:
    """Store data, server directories, logs (git-ignored): ``$STOREBENCH_WORK``, default ``<repo>/work``."""
    return Path(os.environ.get("STOREBENCH_WORK", ROOT / "work"))


def services_dir() -> Path:
    """Where local servers keep their data and logs: ``<work dir>/services``."""
    return work_dir() / "services"


def cache_dir() -> Path:
    """Downloads, server binaries and jars (env/servers/install-*.sh): ``$STOREBENCH_CACHE``,
    default ``~/.cache/storebench``."""
    return Path(os.environ.get("STOREBENCH_CACHE", Path.home() / ".cache" / "storebench"))


def memory_dir() -> Path:
    """The tmpfs directory behind location "memory": ``$STOREBENCH_MEMORY_DIR`` (default /dev/shm)
    ``/storebench-<uid>``."""
    return Path(os.environ.get("STOREBENCH_MEMORY_DIR", "/dev/shm")) / f"storebench-{os.getuid()}"


def conf_dir() -> Path:
    """Server configuration templates: ``$STOREBENCH_CONF_DIR``, default ``<repo>/env/conf``."""
    return Path(os.environ.get("STOREBENCH_CONF_DIR", ROOT / "env" / "conf"))


def prepared_dir() -> Path:
    """Where prepared datasets are read from: ``$STOREBENCH_PREPARED``, default ``<repo>/prepared``."""
    return Path(os.environ.get("STOREBENCH_PREPARED", PREPARED_DIR))


def scratch_dir(experiment: str) -> Path:
    """A new directory for one run of ``experiment``, under ``<work dir>/<experiment>``."""
    import tempfile

    parent = work_dir() / experiment
    parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{experiment}-", dir=parent))
