"""The measurement loop: warm-up, repeats, one raw event per request.

"Download time" (seed 003, Sec 4.2.1) is the time from the first request to the last byte
received. The client here is serial, so it is the sum of the requests' durations; the
checks and decoding done between requests are timed apart (``decode_s``) and reported
as their own columns, never mixed into download time.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from storebench.core.progress import tqdm

from storebench.core.repeats import RepeatPolicy, repeat_cell
from storebench.testbed.locations import make_cold
from storebench.data.workloads import Workload

EVENT_COLUMNS = ["start_ns", "end_ns", "n_samples", "n_objects", "bytes", "needed_bytes", "decode_ns"]


@dataclass
class PassResult:
    """One recorded repeat: ``passes`` back-to-back passes over the workload (1 for a cold pass), its
    figures per pass (the mean of those passes)."""
    repeat: int  # 0-based; the warm-up pass is not returned
    events: pd.DataFrame  # one row per request of every pass, EVENT_COLUMNS + "pass"
    wall_seconds: float  # per pass, checks and decoding included
    cpu_seconds: float  # client process CPU time per pass (all threads)
    peak_rss_bytes: int  # client peak resident set during the repeat
    resident_fraction: float | None  # page-cache residency of the store's files before the repeat
    cold_method: str | None = None  # how the repeat was made cold (storebench.testbed.locations.COLD_METHODS)
    server_restart_seconds: float | None = None  # the restart before the repeat, not in its times
    passes: int = 1
    cell_repeats: int | None = None  # how many repeats its cell took (storebench.core.repeats)
    ci_target_met: bool | None = None

    @property
    def seconds(self) -> float:  # download time per pass
        return float((self.events.end_ns - self.events.start_ns).sum() / 1e9 / self.passes)

    @property
    def decode_seconds(self) -> float:
        return float(self.events.decode_ns.sum() / 1e9 / self.passes)

    def per_pass(self, column: str) -> int:
        return int(self.events[column].sum()) // self.passes

    @property
    def requests_per_pass(self) -> int:
        return len(self.events) // self.passes


def run_pass(reader, workload: Workload) -> tuple[pd.DataFrame, float, float]:
    """Issue every request of ``workload`` once, then verify and decode each; raw events.

    The timed loop does nothing but the store calls (answers are kept), so checking and
    decoding cannot disturb the timing; they run after it, decode timed per request.
    """
    full = workload.access == "full"
    requests = workload.requests()
    calls = [reader.call(request, full=full) for request in requests]
    answers = []
    record = answers.append
    clock = time.perf_counter_ns
    wall0, cpu0 = clock(), time.process_time()
    for function, argument in calls:
        start = clock()
        payload = function(argument)
        record((start, clock(), payload))
    rows = np.zeros((len(calls), len(EVENT_COLUMNS)), dtype=np.int64)
    rows[:, 0] = [a[0] for a in answers]
    rows[:, 1] = [a[1] for a in answers]
    payloads = [a[2] for a in answers]
    del answers
    for i, request in enumerate(requests):
        fetched = reader.verify(request, payloads[i])
        decode_start = clock()
        reader.decode(request, payloads[i])
        rows[i, 2:] = (fetched.n_samples, len(request.objects), fetched.n_bytes, fetched.needed_bytes,
                       clock() - decode_start)
        payloads[i] = None
    wall = (clock() - wall0) / 1e9
    events = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    delivered = int(events.n_samples.sum())
    if delivered != workload.n_samples:
        raise AssertionError(f"pass delivered {delivered} samples, workload has {workload.n_samples}")
    return events, wall, time.process_time() - cpu0


def measure(reader, workload: Workload, policy: RepeatPolicy, cold: bool, warmup: bool = True,
            progress: bool = False, desc: str = "", restart_server: bool = False,
            passes: int | None = None) -> list[PassResult]:
    """An unrecorded warm-up pass (which also checks every answer), then repeats as ``policy`` says.

    A warm repeat loops the pass until it covers ``policy.min_repeat_s``. ``cold``: before each
    repeat the store is reopened (dropping in-process caches) and its files are evicted from the page
    cache; the residency left is recorded, and the repeat is one pass. With ``restart_server`` a local
    server is restarted instead of reopened (``disk-cold``; the restart is timed apart). ``passes``
    sets the passes per repeat (a caller that calibrated them itself); otherwise the warm-up does.
    """
    if passes is None and cold:
        passes = 1
    if warmup and passes is None:
        events, _, _ = run_pass(reader, workload)
        passes = policy.passes_for(_download_seconds(events), loopable=not cold)
    elif warmup:
        run_pass(reader, workload)
    bar = tqdm(total=policy.min_repeats, desc=desc, disable=not progress, leave=False, delay=2, unit="repeat")
    results = []

    def one_repeat(repeat: int):
        made = make_cold(reader.store, restart_server) if cold else None
        _reset_peak_rss()
        runs = [run_pass(reader, workload) for _ in range(passes or 1)]
        events = pd.concat([e.assign(**{"pass": i}) for i, (e, _, _) in enumerate(runs)], ignore_index=True)
        result = PassResult(repeat, events, sum(r[1] for r in runs) / len(runs), sum(r[2] for r in runs) / len(runs),
                            _peak_rss(), resident_fraction=None, passes=len(runs))
        if made:
            result.resident_fraction, result.cold_method = made.residency.fraction, made.method
            result.server_restart_seconds = made.server_restart_seconds
        results.append(result)
        bar.update()
        return result.seconds, None

    cell = repeat_cell(policy, one_repeat, passes or 1)
    bar.close()
    for result in results:
        result.cell_repeats, result.ci_target_met = cell.repeats, policy.met(cell.values)
    return results


def _download_seconds(events: pd.DataFrame) -> float:
    return float((events.end_ns - events.start_ns).sum() / 1e9)


def _reset_peak_rss() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM (Linux >= 4.0)
    except OSError:
        pass


def _peak_rss() -> int:
    with open(f"/proc/{os.getpid()}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def harness_overhead(reader, workload: Workload, rounds: int = 5) -> dict:
    """Download time as the harness measures it vs a bare loop of the same client calls.

    Rounds alternate between the two so drift on a busy machine hits both alike; the
    ratio of the medians is the harness's cost (1.0 = none).
    """
    requests = workload.requests()
    store, full = reader.store, workload.access == "full"
    harness, bare = [], []
    for _ in range(rounds):
        events, _, _ = run_pass(reader, workload)
        harness.append(float((events.end_ns - events.start_ns).sum() / 1e9))
        start = time.perf_counter_ns()
        for request in requests:
            if full:
                reader.call(request, full=True)[0](request.keys)
            elif len(request.keys) > 1:
                store.get_many(request.keys)
            else:
                store.get(request.keys[0])
        bare.append((time.perf_counter_ns() - start) / 1e9)
    return {"system": store.name, "workload": workload.label, "rounds": rounds,
            "harness_seconds": float(np.median(harness)), "bare_loop_seconds": float(np.median(bare)),
            "ratio": float(np.median(harness) / np.median(bare))}
