"""Run a client process under a memory limit: the seed 002 instances' memory tiers on one machine.

This machine's cgroup v2 tree has no memory controller, but cgroup v1's does (SERVICES.md): a child
group under this process's memory cgroup, ``memory.limit_in_bytes`` set, the PID moved into it. This
kernel refuses ``memory.move_charge_at_immigrate``, so the pages a process already has stay charged
where they were: the limit bounds what it allocates AFTER the move (a query client moved in once its
imports are done is limited in what its queries may use). Over the limit the kernel OOM-kills the
process: the caller records "did not finish", never a time.

    with MemoryLimit(512 * 2**20) as limit:      # raises MemoryLimitUnavailable if it cannot be made
        limit.add(proc.pid)
        ...
        limit.peak_bytes, limit.oom_kills
"""
from __future__ import annotations

import os
import time
from pathlib import Path

V1_ROOT = Path("/sys/fs/cgroup/memory")


class MemoryLimitUnavailable(RuntimeError):
    """No cgroup memory controller this process may use: the tier cannot be measured here."""


def own_memory_cgroup() -> Path:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return V1_ROOT / path.lstrip("/")
    raise MemoryLimitUnavailable("no cgroup v1 memory controller in /proc/self/cgroup (cgroup v2 here has none)")


class MemoryLimit:
    def __init__(self, limit_bytes: int | None, name: str | None = None):
        """``limit_bytes`` None: no limit, the group only measures (``peak_bytes``)."""
        if limit_bytes is not None and limit_bytes < 1:
            raise ValueError(f"limit_bytes must be >= 1, got {limit_bytes}")
        self.limit_bytes = None if limit_bytes is None else int(limit_bytes)
        self.name = name or f"storebench-{os.getpid()}-{time.monotonic_ns()}"
        self.path: Path | None = None

    def __enter__(self) -> "MemoryLimit":
        parent = own_memory_cgroup()
        path = parent / self.name
        try:
            path.mkdir()
            (path / "memory.limit_in_bytes").write_text(str(self.limit_bytes or -1))
        except OSError as error:
            if path.exists():
                path.rmdir()
            raise MemoryLimitUnavailable(f"cannot make a memory cgroup under {parent}: {error} "
                                         "(needs root and cgroup v1's memory controller)") from error
        self.path = path
        return self

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def _read(self, name: str) -> int:
        return int((self.path / name).read_text().split()[0])

    @property
    def peak_bytes(self) -> int:
        return self._read("memory.max_usage_in_bytes")

    @property
    def oom_kills(self) -> int:
        for line in (self.path / "memory.oom_control").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def __exit__(self, *exc) -> None:
        if self.path is None:
            return
        for _ in range(50):   # the group can be removed once its last task has exited
            try:
                self.path.rmdir()
                break
            except OSError:
                time.sleep(0.1)
        self.path = None


def own_group_peak(reset: bool = False) -> int | None:
    """Peak memory charged to this process's own memory cgroup (one made by MemoryLimit), reset to
    the current use with ``reset``; None outside such a group."""
    try:
        path = own_memory_cgroup()
    except (MemoryLimitUnavailable, OSError):
        return None
    if not path.name.startswith("storebench-"):
        return None
    peak = path / "memory.max_usage_in_bytes"
    if reset:
        peak.write_text("0")
    return int(peak.read_text())


def available() -> str | None:
    """None if memory cgroups can be made here, else why not."""
    try:
        with MemoryLimit(None):
            return None
    except (MemoryLimitUnavailable, OSError) as why:
        return str(why)
