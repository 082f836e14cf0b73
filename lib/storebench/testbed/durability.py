"""Durability as a setting of the process: whether a write the client makes durable (fsync,
fdatasync, O_SYNC) really reaches the disk.

A store that offers no setting to skip its fsyncs (TileDB 2.30 fsyncs every file of every
fragment it writes) can only be compared with stores that skip theirs by turning fsync off for
the whole client process: ``libeatmydata`` (Debian ``libeatmydata1``), loaded with ``LD_PRELOAD``,
makes fsync, fdatasync, sync, syncfs, msync and sync_file_range return at once and strips O_SYNC
and O_DSYNC from opens. Writes then sit in the page cache until the kernel writes them back, as
a store's own "no sync" setting leaves them. This module finds the library, builds the
environment of such a process and tells a process whether it runs under it.
"""
from __future__ import annotations

import os
from pathlib import Path

DURABILITIES = ("none", "fsync")  # none: nothing forced to disk; fsync: each batch durable when written
LIBRARY = "libeatmydata.so"
PACKAGE = "libeatmydata1"  # Debian package (env/tools/install-tools.sh installs it)
_SEARCH = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib")


def check(durability: str) -> str:
    if durability not in DURABILITIES:
        raise ValueError(f"unknown durability {durability!r}; valid: {', '.join(DURABILITIES)}")
    return durability


def library() -> Path:
    """The no-fsync library's path, or FileNotFoundError naming the package that provides it."""
    for folder in _SEARCH:
        for name in (LIBRARY, f"{LIBRARY}.1"):
            path = Path(folder) / name
            if path.exists():
                return path
    raise FileNotFoundError(f"{LIBRARY} not found (looked in {', '.join(_SEARCH)}): durability 'none' turns fsync "
                            f"off with it; install it with `apt-get install {PACKAGE}` (env/tools/install-tools.sh)")


def environment(durability: str, base: dict | None = None) -> dict:
    """The environment of a client process with ``durability``: ``none`` preloads the no-fsync
    library, ``fsync`` removes it if the current environment preloads it."""
    env = dict(os.environ if base is None else base)
    preload = [p for p in env.get("LD_PRELOAD", "").split() if "libeatmydata" not in p]
    if check(durability) == "none":
        preload.append(str(library()))
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
    else:
        env.pop("LD_PRELOAD", None)
    return env


def fsync_disabled() -> bool:
    """Whether this process runs with fsync turned off (the no-fsync library is mapped)."""
    try:
        return "libeatmydata" in Path("/proc/self/maps").read_text()
    except OSError:
        return False


def mechanism() -> str:
    """One line for the results: how this process treats fsync."""
    return (f"fsync turned off for the whole client process ({LIBRARY} preloaded)" if fsync_disabled()
            else "fsync reaches the disk")
