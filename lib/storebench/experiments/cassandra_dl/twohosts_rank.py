"""One rank of the two-hosts rehearsal (storebench.experiments.cassandra_dl.twohosts), started by torchrun on
each host:

    torchrun --nnodes 2 --node-rank I --nproc-per-node 1 --master-addr HOST_A --master-port PORT \
        -m storebench.experiments.cassandra_dl.twohosts_rank --spec SPEC.json --out-dir DIR

Rank i reads split i with seed 004's prefetching loader, epoch after epoch, while the ring grows and
shrinks underneath, until rank 0 sees the spec's ``stop_file`` (or ``max_seconds`` pass). Every blob
is checked against its CRC-32 (the loader's Catalog); every completed epoch must have delivered
each sample of the split exactly once, else the rank fails. A failed read (a node leaving under a
request) is recorded with its time and the epoch starts again on new connections. Per step: a real
all-reduce of ``gradient_elements`` float32 over gloo (across the hosts' link) and of the stop flag,
so both ranks take the same number of steps. Writes ``rank-<i>.json``: batches (time, images,
bytes), all-reduces (time, seconds), errors, completed epochs; and ``reading-<i>`` once its first
batch arrived.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from storebench.loaders.prefetch import Catalog, LoaderError, PrefetchLoader
from storebench.stores.readers import VerificationError


class EpochReader:
    """Split ``split``, one batch per ``step()``; epochs checked whole, failed reads recorded."""

    def __init__(self, source, catalog: Catalog, splits, split: int, batch_size: int, depth: int):
        self.source, self.catalog, self.splits, self.split = source, catalog, splits, split
        self.batch_size, self.depth = batch_size, depth
        self.expected = sorted(splits.ids[split])
        self.loader: PrefetchLoader | None = None
        self.seen: list = []
        self.batches: list[list] = []   # [unix time, images, bytes]
        self.errors: list[dict] = []    # {"t": unix time, "error": ...}
        self.epochs: list[dict] = []    # {"t": unix time, "images": ...} of every completed epoch

    def step(self) -> None:
        if self.loader is None:
            self.loader, self.seen = PrefetchLoader(self.source, self.catalog, self.splits, self.batch_size,
                                                    self.depth), []
        try:
            batch = self.loader.load_batch(self.split)
        except StopIteration:
            self._end_epoch()
            return
        except LoaderError as error:
            self.errors.append({"t": time.time(), "error": str(error)})
            self._close()   # this epoch starts again, on new connections
            return
        self.seen.extend(batch.ids)
        self.batches.append([time.time(), len(batch.ids), sum(len(b) for b in batch.blobs)])

    def _end_epoch(self) -> None:
        if sorted(self.seen) != self.expected:
            missing = len(set(self.expected) - set(self.seen))
            raise VerificationError(f"split {self.split}: an epoch delivered {len(self.seen)} samples "
                                    f"({missing} of {len(self.expected)} missing, or some twice)")
        self.epochs.append({"t": time.time(), "images": len(self.seen)})
        self.seen = []
        self.loader.rewind_splits(shuffle=True)

    def _close(self) -> None:
        if self.loader is not None:
            self.loader.close()
        self.loader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._close()


def network_namespace() -> str:
    """This process's network namespace (``net:[inode]``): which "host" the rank ran on."""
    return os.readlink("/proc/self/ns/net")


def main(argv=None) -> None:
    import torch
    import torch.distributed as dist

    from storebench.data import splits as sp
    from storebench.loaders.prefetch import CassandraBlobs
    from storebench.stores import cassandra_model as cm

    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)
    spec, out_dir = json.loads(Path(args.spec).read_text()), Path(args.out_dir)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    with cm.session_for(spec["endpoint"]) as session:
        catalog = Catalog.from_frame(cm.read_metadata(session, spec["keyspace"]))
        splits = sp.Splits.load(spec["splits"], sp.CassandraMetadata(session, spec["keyspace"]))
    if len(splits) != world:
        raise SystemExit(f"{spec['splits']} has {len(splits)} splits; {world} ranks need {world}")
    source = CassandraBlobs(spec["endpoint"], spec["keyspace"], spec["in_flight"],
                            consistency_level=spec["consistency"])
    gradient = torch.zeros(spec["gradient_elements"], dtype=torch.float32)
    stop = torch.zeros(1)
    deadline = time.monotonic() + spec["max_seconds"]
    steps, marked, allreduce = 0, False, []   # allreduce: [unix time, seconds] per step
    with EpochReader(source, catalog, splits, rank, spec["batch_size"], spec["depth"]) as reader:
        while True:
            reader.step()
            if reader.batches and not marked:
                (out_dir / f"reading-{rank}").touch()
                marked = True
            steps += 1
            start = time.perf_counter()
            dist.all_reduce(gradient)
            stop[0] = float(rank == 0 and (Path(spec["stop_file"]).exists() or time.monotonic() > deadline))
            dist.all_reduce(stop)
            allreduce.append([time.time(), time.perf_counter() - start])
            if stop.item() > 0:
                break
    result = {"rank": rank, "world": world, "netns": network_namespace(), "split_size": len(reader.expected),
              "steps": steps, "batches": reader.batches, "allreduce": allreduce, "errors": reader.errors,
              "epochs": reader.epochs}
    (out_dir / f"rank-{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
