"""CPU and memory of a whole process tree over time, sampled by a background thread.

Groups, one row per group per tick:
- ``client``: the client process: this one (its sampler thread included) or ``client_pid``, a
  process of its own that the sampler watches from outside;
- ``workers``: the client's descendants (DataLoader workers, ...), except those in ``server``;
- ``server``: the ``extra_pids`` and their descendants (only when ``extra_pids`` are given);
  a server this process started is a descendant too, and counts as server only.

CPU percent is the CPU time (user + system) a group used during the tick over the tick's
wall time: 100 is one full core. Linux counts CPU time in clock ticks (10 ms), so at the
default 0.1 s interval one process's figure moves in steps of about 10%. A process first seen
at a tick was started after the previous one, and all of its CPU time counts in that tick; the
CPU a process used between the last tick and its exit is lost once it is reaped.
RSS is summed over the group's processes, so pages that forked workers share with their
parent count once per process: an upper bound on the memory used. VSZ (``vms_bytes``, the
virtual memory the processes have mapped, what ``ps`` shows as VSZ) is summed the same way.
"""
from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterable

import pandas as pd
import psutil

COLUMNS = ["t_s", "group", "n_processes", "cpu_percent", "rss_bytes", "vms_bytes", "interval_s"]
SUMMARY_COLUMNS = ["label", "group", "mean_cpu_percent", "peak_cpu_percent", "peak_rss_bytes", "mean_rss_bytes",
                   "peak_vms_bytes", "min_vms_bytes", "peak_n_processes", "duration_s"]
GONE = (psutil.NoSuchProcess, psutil.AccessDenied)  # ZombieProcess is a NoSuchProcess


class ResourceSampler:
    """Samples CPU%, RSS and VSZ of the client (this process, or ``client_pid``), its descendants and
    ``extra_pids`` every ``interval_s`` while in its ``with`` block; ``samples`` and ``summary()`` give
    the result."""

    def __init__(self, interval_s: float = 0.1, extra_pids: Iterable[int] = (), label: str = "",
                 client_pid: int | None = None):
        if not (math.isfinite(interval_s) and interval_s > 0):
            raise ValueError(f"interval_s must be a finite number > 0, got {interval_s!r}")
        self.interval_s, self.label = interval_s, label
        self.client_pid = os.getpid() if client_pid is None else int(client_pid)
        self.extra_pids = tuple(int(pid) for pid in extra_pids)
        if self.client_pid in self.extra_pids:
            raise ValueError(f"extra_pids must not include the client ({self.client_pid})")
        self._rows: list[tuple] = []
        self._cpu_seen: dict[psutil.Process, float] = {}  # CPU seconds at the last tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __enter__(self) -> ResourceSampler:
        self._me = _existing_process(self.client_pid, "client")
        self._servers = [_existing_process(pid) for pid in self.extra_pids]
        self._start = self._last = time.monotonic()
        for procs in self._groups().values():  # CPU baselines, before the body starts anything
            readings = {proc: _read(proc) for proc in procs}
            self._cpu_seen.update({proc: r[0] for proc, r in readings.items() if r is not None})
        self._thread = threading.Thread(target=self._run, name=f"ResourceSampler {self.label}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None and exc_type is None:
            raise RuntimeError(f"resource sampler {self.label!r} failed") from self._error

    @property
    def samples(self) -> pd.DataFrame:
        """One row per group per tick: t_s (end of the tick, seconds since the start),
        group, n_processes, cpu_percent, rss_bytes, vms_bytes, interval_s (the tick's length)."""
        frame = pd.DataFrame(list(self._rows), columns=COLUMNS)
        frame.attrs["label"] = self.label
        return frame

    def summary(self) -> pd.DataFrame:
        """Per group: time-weighted mean and peak CPU%, peak and time-weighted mean RSS, peak and
        lowest VSZ, peak process count."""
        frame = self.samples
        rows = []
        for group, ticks in frame.groupby("group", sort=False):
            duration = ticks.interval_s.sum()
            cpu_seconds = (ticks.cpu_percent / 100 * ticks.interval_s).sum()
            mean_rss = (ticks.rss_bytes * ticks.interval_s).sum() / duration
            rows.append((self.label, group, 100 * cpu_seconds / duration, ticks.cpu_percent.max(),
                         int(ticks.rss_bytes.max()), int(mean_rss), int(ticks.vms_bytes.max()),
                         int(ticks.vms_bytes.min()), int(ticks.n_processes.max()), duration))
        return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval_s):
                self._tick()
            if not self._rows or time.monotonic() - self._last >= self.interval_s / 2:
                self._tick()  # the end of the block; a sliver of a tick would give noisy CPU%
        except Exception as error:  # a bug, not a vanished process: raised again on exit
            self._error = error

    def _tick(self) -> None:
        groups = self._groups()
        now = time.monotonic()
        interval, t_s = max(now - self._last, 1e-6), now - self._start
        cpu_now: dict[psutil.Process, float] = {}
        for group, procs in groups.items():
            cpu_seconds, rss, vms, n_running = 0.0, 0, 0, 0
            for proc in procs:
                reading = _read(proc)
                if reading is None:
                    continue
                cpu_now[proc], proc_rss, proc_vms, running = reading
                cpu_seconds += cpu_now[proc] - self._cpu_seen.get(proc, 0.0)  # new: all its CPU
                rss += proc_rss
                vms += proc_vms
                n_running += running
            self._rows.append((t_s, group, n_running, 100 * cpu_seconds / interval, rss, vms, interval))
        self._cpu_seen, self._last = cpu_now, now

    def _groups(self) -> dict[str, list[psutil.Process]]:
        servers = [proc for root in self._servers for proc in _tree(root)]
        in_servers = set(servers)
        workers = [proc for proc in _tree(self._me)[1:] if proc not in in_servers]
        groups = {"client": [self._me], "workers": workers}
        return {**groups, "server": servers} if self._servers else groups


def _existing_process(pid: int, what: str = "extra") -> psutil.Process:
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        raise ValueError(f"{what} PID {pid} is not a running process") from None


def _tree(root: psutil.Process) -> list[psutil.Process]:
    """``root`` and its descendants; empty once ``root`` is gone."""
    try:
        return [root, *root.children(recursive=True)]
    except GONE:
        return []


def _read(proc: psutil.Process) -> tuple[float, int, int, bool] | None:
    """(CPU seconds, RSS bytes, VSZ bytes, still running) of ``proc``, or None if it cannot be read.

    A zombie (exited, not yet reaped) still reports its final CPU time; it counts for CPU,
    not as a running process.
    """
    try:
        with proc.oneshot():
            times = proc.cpu_times()
            if proc.status() == psutil.STATUS_ZOMBIE:
                return times.user + times.system, 0, 0, False
            memory = proc.memory_info()
            return times.user + times.system, memory.rss, memory.vms, True
    except GONE:
        return None
