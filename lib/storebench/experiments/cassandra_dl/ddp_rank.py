"""One rank of seed 004's data-parallel training (Sec 6), started by storebench.experiments.cassandra_dl.ranks.launch (torchrun):

    torchrun --nproc-per-node N -m storebench.experiments.cassandra_dl.ddp_rank --spec SPEC.json --out-dir DIR

Every rank loads the same split file (checked against the table), so with N ranks splits 0..N-1 are
training and N..2N-1 validation: rank i trains on split i and validates on split N+i (the seed's
Sec 6.2); every rank takes as many batches as the smallest split of its phase has. Compute is emulated (the seed slept too): per training batch ``train_seconds_per_batch``
then a real all-reduce of a ResNet-50-sized gradient (``gradient_elements`` float32) over gloo; per
validation batch ``val_seconds_per_batch`` then an all-reduce of the batch's loss and accuracy.
With ``gradient`` false (the loader-bound step: both times 0) a training step all-reduces only the
two numbers a validation step does, so what is timed is the loading.
Each rank writes ``rank-<i>.json``: images, bytes and seconds per phase, time in all-reduce.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def phase(loader, split: int, steps: int, seconds_per_batch: float, reduce) -> dict:
    """``steps`` batches of ``split``: every rank takes the same number, so the all-reduces pair up."""
    import torch.distributed as dist

    images = nbytes = 0
    reduce_s = 0.0
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        batch = loader.load_batch(split)
        images += len(batch.ids)
        nbytes += sum(len(b) for b in batch.blobs)
        if seconds_per_batch:
            time.sleep(seconds_per_batch)
        t = time.perf_counter()
        reduce()
        reduce_s += time.perf_counter() - t
    seconds = time.perf_counter() - start
    return {"images": images, "bytes": nbytes, "seconds": seconds, "allreduce_seconds": reduce_s}


def main(argv=None) -> None:
    import torch
    import torch.distributed as dist

    from storebench.stores import cassandra_model as cm
    from storebench.data import splits as sp
    from storebench.loaders.prefetch import CassandraBlobs, Catalog, PrefetchLoader

    parser = argparse.ArgumentParser()
    parser.add_argument("--spec", required=True)
    parser.add_argument("--out-dir", required=True)
    args = parser.parse_args(argv)
    spec = json.loads(Path(args.spec).read_text())
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)
    with cm.session_for(spec["endpoint"]) as session:
        catalog = Catalog.from_frame(cm.read_metadata(session, spec["keyspace"]))
        splits = sp.Splits.load(spec["splits"], sp.CassandraMetadata(session, spec["keyspace"]))
    if len(splits) != 2 * world:
        raise SystemExit(f"{spec['splits']} has {len(splits)} splits; {world} ranks need {2 * world}")
    gradient = torch.zeros(spec["gradient_elements"], dtype=torch.float32)
    metrics = torch.zeros(2, dtype=torch.float32)
    source = CassandraBlobs(spec["endpoint"], spec["keyspace"], spec["in_flight"])
    with PrefetchLoader(source, catalog, splits, batch_size=spec["batch_size"], depth=spec["depth"]) as loader:
        batches = loader.num_batches
        train_steps, val_steps = min(batches[:world]), min(batches[world:])
        step_reduce = (lambda: dist.all_reduce(gradient)) if spec.get("gradient", True) else (lambda: dist.all_reduce(metrics))
        train = phase(loader, rank, train_steps, spec["train_seconds_per_batch"], step_reduce)
        val = phase(loader, world + rank, val_steps, spec["val_seconds_per_batch"], lambda: dist.all_reduce(metrics))
    result = {"rank": rank, "world": world, "train": train, "val": val}
    Path(args.out_dir, f"rank-{rank}.json").write_text(json.dumps(result))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
