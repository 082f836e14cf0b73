"""The query client of the layouts experiment, in a process of its own (so a memory tier can limit
it and an OOM kill loses nothing already measured).

    python -m storebench.experiments.layoutbench.layout_client SPEC.json

SPEC names the layout (and its options), the S3 place to read through, the tier's metadata file, the
memory limit it runs under (an engine that sizes itself by the machine's memory is told it),
the plan (``[repeat, query]`` pairs, in order, each run once), optionally a repeat policy with the
queries to measure under it (after the plan), and the wiretap's counter file. The client prints
``started`` before it imports anything and waits for a line on stdin (the parent moves it into a
memory cgroup meanwhile, so the group is charged with the whole client: libraries, engine, data);
then, per repeat and query, with a cold client each time: T = first call to last image verified, the
bytes/requests/connections the wiretap saw, and the peak memory charged to its cgroup. An engine
that stops for want of memory (DuckDB reads the cgroup's limit) "did not finish", as does a client
the kernel kills. Each result is one JSON line in ``out``, flushed at once.
A query whose answer differs from the metadata's (keys or SHA-256) stops the client with exit code
3: a wrong answer is never a time.
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

WRONG_ANSWER_EXIT = 3


class WrongAnswer(AssertionError):
    pass


def verify(query, copies: int, meta, images) -> tuple[int, int]:
    """Consume ``images`` (key, bytes) checking each against the tier's metadata; (images, bytes).
    The keys must be exactly the query's selection."""
    expected = query.select(meta, copies)
    digests = dict(zip(expected.key, expected.sha256))
    seen, total = set(), 0
    for key, data in images:
        if key not in digests or key in seen:
            raise WrongAnswer(f"{query.name}: key {key} is not in the answer (or came twice)")
        if hashlib.sha256(data).hexdigest() != digests[key]:
            raise WrongAnswer(f"{query.name}: the bytes of key {key} do not match the SHA-256 written")
        seen.add(key)
        total += len(data)
    if len(seen) != len(digests):
        raise WrongAnswer(f"{query.name}: {len(digests) - len(seen)} of {len(digests)} images missing")
    return len(seen), total


def out_of_memory(error: BaseException) -> bool:
    """An engine that stopped for want of memory (DuckDB sees the cgroup's limit and says so)."""
    return isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryException"


def run(spec: dict) -> None:
    import pandas as pd

    from storebench.layouts import S3Place, get_layout
    from storebench.layouts.queries import get_queries

    meta = pd.read_parquet(spec["meta"])
    place = S3Place(spec["endpoint"], spec["bucket"], spec["prefix"])
    layout = get_layout(spec["layout"])(place, Path(spec["index_dir"]), **spec.get("options", {}))
    layout.machine_memory_bytes = spec.get("memory_limit")
    counters = Path(spec["counter_file"])
    with open(spec["out"], "a") as out:
        def record(row: dict) -> dict:
            out.write(json.dumps(row) + "\n")
            out.flush()
            return row

        def run_query(name: str, repeat: int, passes: int = 1) -> dict:
            query, = get_queries([name])
            return timed_query(query, repeat, passes, layout, meta, spec["copies"], counters)
        for repeat, name in spec["plan"]:
            record(run_query(name, repeat))
        if spec.get("policy"):
            measure_adaptively(spec, run_query, record)


def timed_query(query, repeat: int, passes: int, layout, meta, copies: int, counters: Path) -> dict:
    """One repeat of ``query``: ``passes`` runs back to back (each verified); seconds, bytes and
    requests per pass, the peak memory of the repeat. An engine's out-of-memory "did not finish"."""
    from storebench.testbed.memlimits import own_group_peak
    from storebench.testbed.wiretap import read_counters

    own_group_peak(reset=True)
    before = read_counters(counters)
    start = time.perf_counter()
    try:
        for _ in range(passes):
            n_images, n_bytes = verify(query, copies, meta, layout.query(query, copies))
    except Exception as error:  # noqa: BLE001 - only an engine's out-of-memory is a result
        if not out_of_memory(error):
            raise
        return {"query": query.name, "repeat": repeat, "status": "did not finish",
                "reason": f"{type(error).__name__}: {str(error).splitlines()[0]}", "peak_bytes": own_group_peak()}
    seconds = (time.perf_counter() - start) / passes
    moved = read_counters(counters) - before
    return {"query": query.name, "repeat": repeat, "status": "ok", "seconds": seconds, "passes": passes,
            "images": n_images, "image_bytes": n_bytes, "bytes_down": moved.bytes_down / passes,
            "bytes_up": moved.bytes_up / passes, "requests": moved.requests / passes,
            "connections": moved.connections / passes, "peak_bytes": own_group_peak()}


def measure_adaptively(spec: dict, run_query, record) -> None:
    """Every query of ``spec["queries"]`` under the repeat policy: an unrecorded warm-up run sets its
    passes per repeat, then rounds over the queries still open (storebench.core.repeats)."""
    from storebench.core.repeats import Cell, RepeatPolicy, rounds

    policy = RepeatPolicy(**spec["policy"])
    names = spec["queries"]
    warm = [run_query(name, -1) for name in names]
    for row in warm:
        if row["status"] != "ok":
            raise RuntimeError(f"{row['query']} did not finish without a memory limit: {row['reason']}")
    cells = [Cell(policy.passes_for(row["seconds"])) for row in warm]

    def one_repeat(name: str, repeat: int, cell: Cell):
        row = record(run_query(name, repeat, cell.passes))
        if row["status"] != "ok":
            raise RuntimeError(f"{name} did not finish without a memory limit: {row['reason']}")
        return row["seconds"], None
    rounds(names, policy, one_repeat, cells)


def main(argv=None):
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    print("started", flush=True)
    sys.stdin.readline()
    try:
        run(spec)
    except WrongAnswer as error:
        print(f"wrong answer: {error}", file=sys.stderr, flush=True)
        sys.exit(WRONG_ANSWER_EXIT)


if __name__ == "__main__":
    main()
