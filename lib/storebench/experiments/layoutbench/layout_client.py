"""The query client of the layouts experiment, in a process of its own (so a memory tier can limit
it and an OOM kill loses nothing already measured).

    python -m storebench.experiments.layoutbench.layout_client SPEC.json

SPEC names the layout (and its options), the S3 place to read through, the tier's metadata file,
the plan (``[repeat, query]`` pairs, in order) and the wiretap's counter file. The client imports everything, prints
``ready`` and waits for a line on stdin (the parent moves it into a memory cgroup meanwhile); then,
per repeat and query, with a cold client each time: T = first call to last image verified, the
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
    from storebench.testbed.memlimits import own_group_peak
    from storebench.layouts.queries import get_queries
    from storebench.testbed.wiretap import read_counters

    meta = pd.read_parquet(spec["meta"])
    place = S3Place(spec["endpoint"], spec["bucket"], spec["prefix"])
    layout = get_layout(spec["layout"])(place, Path(spec["index_dir"]), **spec.get("options", {}))
    counters = Path(spec["counter_file"])
    print("ready", flush=True)
    sys.stdin.readline()
    with open(spec["out"], "a") as out:
        for repeat, name in spec["plan"]:
            query, = get_queries([name])
            own_group_peak(reset=True)
            before = read_counters(counters)
            start = time.perf_counter()
            try:
                n_images, n_bytes = verify(query, spec["copies"], meta, layout.query(query, spec["copies"]))
            except Exception as error:  # noqa: BLE001 - only an engine's out-of-memory is a result
                if not out_of_memory(error):
                    raise
                out.write(json.dumps({"query": name, "repeat": repeat, "status": "did not finish",
                                      "reason": f"{type(error).__name__}: {str(error).splitlines()[0]}",
                                      "peak_bytes": own_group_peak()}) + "\n")
                out.flush()
                continue
            seconds = time.perf_counter() - start
            moved = read_counters(counters) - before
            out.write(json.dumps({"query": name, "repeat": repeat, "status": "ok", "seconds": seconds,
                                  "images": n_images, "image_bytes": n_bytes, "bytes_down": moved.bytes_down,
                                  "bytes_up": moved.bytes_up, "requests": moved.requests,
                                  "connections": moved.connections, "peak_bytes": own_group_peak()}) + "\n")
            out.flush()


def main(argv=None):
    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    try:
        run(spec)
    except WrongAnswer as error:
        print(f"wrong answer: {error}", file=sys.stderr, flush=True)
        sys.exit(WRONG_ANSWER_EXIT)


if __name__ == "__main__":
    main()
