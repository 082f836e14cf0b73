"""The resource sampler sees the whole process tree, survives processes that vanish, stops promptly."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from storebench.testbed import resources
from storebench.testbed.resources import ResourceSampler

MB = 2**20

BURN_AND_HOLD_100MB = """
import time
memory = b"x" * (100 * 2**20)
start = time.process_time()
while time.process_time() - start < 1.0:
    pass
"""

SERVER_WITH_A_CHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import time; memory = b'x' * (40 * 2**20); print('ready', flush=True); time.sleep(30)"],
    stdout=subprocess.PIPE, text=True)
memory = b"x" * (60 * 2**20)
child.stdout.readline()
print("ready", flush=True)
time.sleep(30)
"""


@pytest.fixture
def spawn(default_ports_free):
    """Starts ``python -c code``; kills it and its descendants after the test. The session's servers
    (children of this process) are stopped first: these tests count the process tree exactly."""
    started = []

    def start(code: str, **popen_args) -> subprocess.Popen:
        started.append(subprocess.Popen([sys.executable, "-c", code], **popen_args))
        return started[-1]

    yield start
    for proc in started:
        try:
            tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
        except psutil.NoSuchProcess:
            tree = []
        for member in reversed(tree):
            try:
                member.kill()
            except psutil.NoSuchProcess:
                pass
        proc.wait()


def group(samples, name):
    return samples[samples.group == name]


def children_already_here() -> int:
    """Children this process had before the test (in a whole-suite run an earlier test may have left one, e.g.
    multiprocessing's forkserver): the sampler rightly counts them as workers, so counts are relative to them."""
    return len(psutil.Process().children(recursive=True))


def test_workers_group_shows_a_child_burning_cpu_and_holding_memory(spawn):
    before = children_already_here()
    with ResourceSampler(interval_s=0.1, label="burn") as sampler:
        spawn(BURN_AND_HOLD_100MB).wait()
    samples = sampler.samples
    assert list(samples.columns) == ["t_s", "group", "n_processes", "cpu_percent", "rss_bytes", "vms_bytes",
                                     "interval_s"]
    assert set(samples.group) == {"client", "workers"}  # no server group without extra_pids
    assert (samples.groupby("t_s").size() == 2).all()  # one row per group per tick
    workers, client = group(samples, "workers"), group(samples, "client")
    assert workers.cpu_percent.max() > 50 and workers.rss_bytes.max() > 80 * MB
    assert workers.n_processes.max() == before + 1
    assert (client.n_processes == 1).all() and (client.rss_bytes > 10 * MB).all()
    assert (client.vms_bytes >= client.rss_bytes).all()  # VSZ: every mapping, resident or not
    summary = sampler.summary().set_index("group")
    assert list(summary.columns) == ["label", "mean_cpu_percent", "peak_cpu_percent", "peak_rss_bytes",
                                     "mean_rss_bytes", "peak_vms_bytes", "min_vms_bytes", "peak_n_processes",
                                     "duration_s"]
    assert summary.loc["workers", "label"] == "burn"
    assert 25 < summary.loc["workers", "mean_cpu_percent"] <= summary.loc["workers", "peak_cpu_percent"]
    assert summary.loc["workers", "peak_rss_bytes"] > 80 * MB
    assert summary.loc["workers", "duration_s"] == pytest.approx(samples.t_s.max())


def test_extra_pids_and_their_descendants_form_the_server_group(spawn):
    before = children_already_here()
    server = spawn(SERVER_WITH_A_CHILD, stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "ready"
    with ResourceSampler(interval_s=0.05, extra_pids=[server.pid]) as sampler:
        time.sleep(0.25)
    servers, workers = group(sampler.samples, "server"), group(sampler.samples, "workers")
    assert (servers.n_processes == 2).all()
    assert servers.rss_bytes.min() > 90 * MB  # 60 MB + 40 MB, plus two interpreters
    assert (workers.n_processes == before).all()  # our child, but a server: counted once, as server
    # the same process watched from outside as the client (a client in a fresh process): its child is a worker
    with ResourceSampler(interval_s=0.05, client_pid=server.pid) as outside:
        time.sleep(0.25)
    client, workers = group(outside.samples, "client"), group(outside.samples, "workers")
    assert (client.rss_bytes > 60 * MB).all() and (workers.n_processes == 1).all()
    assert (workers.rss_bytes > 40 * MB).all() and (workers.vms_bytes > workers.rss_bytes).all()


def test_processes_exiting_mid_sampling_are_tolerated(spawn):
    before = children_already_here()
    worker = spawn("import time; time.sleep(0.2)")
    server = spawn("import time; time.sleep(0.2)")
    with ResourceSampler(interval_s=0.05, extra_pids=[server.pid]) as sampler:
        server.wait()  # reaped: gone
        wait_for_zombie(worker.pid)  # exited, reaped only after the block
        time.sleep(0.2)
    worker.wait()
    samples = sampler.samples
    for name, already in (("workers", before), ("server", 0)):
        counts = [n - already for n in group(samples, name).n_processes.tolist()]
        assert counts[0] == 1 and counts[-3:] == [0, 0, 0], (name, counts)  # sampled on after the exits


def wait_for_zombie(pid: int, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, f"process {pid} did not exit"
        time.sleep(0.01)


def test_an_unreadable_process_is_skipped():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    handle = psutil.Process(proc.pid)
    proc.wait()
    assert resources._read(handle) is None and resources._tree(handle) == []


def test_stopping_is_prompt():
    with ResourceSampler(interval_s=2.0) as sampler:
        time.sleep(0.05)
        started = time.monotonic()
    assert time.monotonic() - started < 1.0  # well within one interval: not a sleeping loop
    assert not sampler._thread.is_alive()
    assert set(sampler.samples.group) == {"client", "workers"}  # the final tick of a short block


def test_a_failure_inside_the_thread_is_raised_on_exit(monkeypatch):
    read = resources._read

    def fails_in_the_sampler_thread(proc):
        if threading.current_thread() is not threading.main_thread():
            raise KeyError("bug")
        return read(proc)

    monkeypatch.setattr(resources, "_read", fails_in_the_sampler_thread)
    with pytest.raises(RuntimeError, match="resource sampler 'x' failed"):
        with ResourceSampler(interval_s=0.02, label="x"):
            time.sleep(0.05)


def test_invalid_arguments_are_rejected():
    for interval in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="interval_s must be a finite number > 0"):
            ResourceSampler(interval_s=interval)
    with pytest.raises(ValueError, match=f"must not include the client \\({psutil.Process().pid}\\)"):
        ResourceSampler(extra_pids=[psutil.Process().pid])
    missing = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    with pytest.raises(ValueError, match=f"extra PID {missing} is not a running process"):
        with ResourceSampler(extra_pids=[missing]):
            pass
