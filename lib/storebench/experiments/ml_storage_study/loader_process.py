"""One short-circuited loader in a process of its own (seed 004 Table 2's concurrent loaders):

    python -m storebench.experiments.ml_storage_study.loader_process SPEC.json

SPEC: a Cassandra endpoint and keyspace, the catalog (a parquet of id, key, label, checksum), batch
size, requests in flight, prefetch depth and seconds. The process opens its reader, prints
``ready``, waits for a line on stdin (so that every loader starts together), reads batches of the
whole table (verified) until ``seconds`` have passed and prints one JSON line: images, bytes, seconds.
"""
from __future__ import annotations

import json
import sys
import time
import uuid
from pathlib import Path


def main(argv=None) -> None:
    import pandas as pd

    from storebench.data import splits as sp
    from storebench.loaders.prefetch import CassandraBlobs, Catalog, PrefetchLoader

    spec = json.loads(Path((argv or sys.argv[1:])[0]).read_text())
    table = pd.read_parquet(spec["catalog"])
    table["id"] = table["id"].map(uuid.UUID)
    catalog = Catalog.from_frame(table)
    splits = sp.make_splits(sp.FrameMetadata(table, "catalog"), [1], seed=0)
    source = CassandraBlobs(spec["endpoint"], spec["keyspace"], spec["in_flight"])
    with PrefetchLoader(source, catalog, splits, batch_size=spec["batch_size"], depth=spec["depth"]) as loader:
        loader.load_batch(0)
        loader.rewind_splits()
        print("ready", flush=True)
        sys.stdin.readline()
        images = nbytes = 0
        start = time.perf_counter()
        while time.perf_counter() - start < spec["seconds"]:
            try:
                batch = loader.load_batch(0)
            except StopIteration:
                loader.rewind_splits()
                continue
            images += len(batch.ids)
            nbytes += sum(len(b) for b in batch.blobs)
        seconds = time.perf_counter() - start
    print(json.dumps({"images": images, "bytes": nbytes, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
