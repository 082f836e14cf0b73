"""Embedding updates (seed 001, Sec 5.10, Figs 13-15, and its Sec 6 future work).

A training job keeps one embedding per key (a word for text, a node for a graph) in a store:
per batch it reads the embeddings of the batch's distinct keys, computes new ones and writes
them back. Keys come from skewed streams (storebench.data.keystreams): ``zipf`` stands for the
seed's text workload, ``power-law`` for its graph workload. As in the seed, one parameter is
swept at a time with the others at ``fixed``:

- ``dataset_size``: samples in the generated dataset, i.e. keys drawn and pushed through the
  updates (the seed's Fig 13; "no workers, so fetch time grows linearly" only makes sense if
  this is the amount of data processed). The table keeps ``fixed.table_rows`` rows;
- ``table_size``: rows of the embedding table (distinct keys), the draws fixed;
- ``embedding_size``: floats per embedding (Fig 14);
- ``batch_size``: draws per batch (Fig 15);
- ``update``: ``dense`` (every key of the batch written back: the seed) vs ``sparse`` (only
  ``sparse_fraction`` of them, as with sparse gradients): seed Sec 6 future work;
- ``locality``: ``shuffled`` (hot keys scattered over the key space) vs ``clustered`` (hot keys
  adjacent): Sec 6's "locality of updates".

Durability is a dimension of its own (``durability``: ``none`` and/or ``fsync``), the same for
every table of a variant, so the tables are compared at equal durability, never at each
system's default (TileDB and TensorStore sync by default, RocksDB and ext4 do not). Each
variant runs in a fresh process of its own: ``fsync`` as is, ``none`` with fsync turned off for
the whole process (storebench.testbed.durability: TileDB has no setting to skip its fsyncs), and
every table's own switch set alike (storebench.stores.embeddings).

Each run creates its table afresh (creation timed apart, never in the totals), runs the stream,
and checks the final table bit for bit against the same updates computed in memory with numpy.
Configurations shared by several sweeps (the fixed point) are measured once and carry every
sweep they belong to in ``sweep``. Repeats are repeat-major and the tables interleave within a
configuration, so drift on this busy machine hits every table alike (the durability variants run
one after the other). The stream (seeded by ``seed``) is the same in every repeat: the CI is the
machine's noise, not the workload's.

    python -m storebench.experiments.ml_storage_study.embeddings.measure SETTINGS.json OUT_DIR

runs one durability variant (the settings' single ``durability``) in this process: what
``run`` starts per variant.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from storebench.core.experiment import ResultsDir
from storebench.core.progress import tqdm
from storebench.core.repeats import Cell, rounds
from storebench.core.results import machine
from storebench.core.settings import NonNegativeInt, PositiveFloat, PositiveInt, Settings as Base, one_of, params_hash
from storebench.data import keystreams
from storebench.experiments.ml_storage_study.embeddings import STREAM_STANDS_FOR, SWEEPS

EXPERIMENT = "embeddings"
from storebench.stores.base import package_version
from storebench.stores.embeddings import (EMBEDDING_TABLES, TILEDB_LAYOUTS, default_update, make_table,
                                          reference_updates, remove_table, run_updates, verify)
from storebench.testbed import durability as durability_
from storebench.testbed.locations import filesystem_type, store_root

LOCATION = "disk-warm"  # each table is written just before it is updated: its pages are in the page cache
TABLE_OPTIONS = sorted({option for cls in EMBEDDING_TABLES.values() for option in cls.options})


TableName = Annotated[str, one_of("embedding table", lambda: list(EMBEDDING_TABLES))]
StreamName = Annotated[str, one_of("key stream", lambda: list(keystreams.STREAMS))]
SweepName = Annotated[str, one_of("sweep", lambda: list(SWEEPS))]
TiledbLayout = Annotated[str, one_of("TileDB layout", lambda: list(TILEDB_LAYOUTS))]
Update = Literal["dense", "sparse"]
Durability = Literal["none", "fsync"]
Locality = Literal["shuffled", "clustered"]


class Fixed(BaseModel):
    """The configuration every sweep varies one field of."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset_size: PositiveInt
    table_rows: PositiveInt
    embedding_size: PositiveInt
    batch_size: PositiveInt
    update: Update = "dense"
    locality: Locality = "shuffled"


class Settings(Base):
    tables: list[TableName] = Field(min_length=1)
    streams: list[StreamName] = Field(min_length=1)
    sweeps: list[SweepName] = Field(min_length=1)
    dataset_sizes: list[PositiveInt] | None = None
    table_sizes: list[PositiveInt] | None = None
    embedding_sizes: list[PositiveInt] | None = None
    batch_sizes: list[PositiveInt] | None = None
    updates: list[Update] | None = None
    locality: list[Locality] | None = None
    fixed: Fixed
    sparse_fraction: Annotated[float, Field(gt=0, le=1)] = 0.1
    zipf_exponent: PositiveFloat = 1.1
    power_law_alpha: Annotated[float, Field(gt=1)] = 2.1
    store_dir: str | None = None  # where the tables live (default: the work dir's stores/, on local disk)
    # every table at each durability: none (nothing forced to disk) and/or fsync (each batch durable when written)
    durability: Annotated[list[Durability], Field(min_length=1)] = ["none", "fsync"]
    # table settings (recorded with every row); null = the system's default
    block_cache_bytes: NonNegativeInt | None = None  # rocksdb
    tile_keys: PositiveInt = 64  # tiledb
    tiledb_layout: TiledbLayout = "vector-cell"
    read_ahead_cache_bytes: NonNegativeInt | None = None  # tiledb (its only cache; no tile cache in 2.30)
    chunk_keys: PositiveInt = 64  # tensorstore
    cache_pool_bytes: NonNegativeInt = 0  # tensorstore



def provenance(rows: pd.DataFrame, options: list[str]) -> pd.DataFrame:
    """Who measured what with which versions and settings (``options``: the tables' settings columns): one row
    per table, plus the machine (measure records it as the ``embeddings_provenance`` table)."""
    settings = [c for c in ["table_layout", *options, "durable_how", "fsync_in_process"] if c in rows.columns]
    keys = ["table", "durability"] if "durability" in rows.columns else ["table"]
    out = []
    for key, group in rows.groupby(keys, sort=False):
        first = group.iloc[0]
        row = {**dict(zip(keys, key if isinstance(key, tuple) else (key,))), "system_version": first.system_version,
               "client_version": first.client_version}
        row.update({c: first[c] for c in settings if pd.notna(first[c])})
        out.append(row)
    table_ = pd.DataFrame(out)
    first = rows.iloc[0]
    for key in ("location", "store_fs", "host", "cpus", "memory_bytes", "python", "git_rev", "scale"):
        table_[key] = first[key]
    table_["repeats"] = int(rows.repeats.min()) if "repeats" in rows else int(rows.repeat.max()) + 1
    return table_

def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """Every durability x configuration x stream x table, under the repeat policy, verified: the ``embeddings``
    table (one row per run), ``embeddings_provenance`` (versions and settings per table and durability) and the
    per-batch timings (raw/<table>.parquet)."""
    result = run(settings, progress=progress)
    out.write("embeddings", result.rows)
    out.write("embeddings_provenance", provenance(result.rows, TABLE_OPTIONS))
    _write_raw(result.batches, out.raw_dir)


# ------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Point:
    dataset_size: int  # keys drawn = samples pushed through the updates
    table_rows: int  # distinct keys = rows of the embedding table
    embedding_size: int
    batch_size: int
    update: str = "dense"
    locality: str = "shuffled"


def plan(config: dict) -> list[tuple[Point, list[str]]]:
    """Every configuration to measure, once, with the sweeps it belongs to (seed order)."""
    base = Point(**config["fixed"].model_dump())
    points: dict[Point, list[str]] = {}
    for sweep in config["sweeps"]:
        field, key = SWEEPS[sweep]
        if config[key] is None:
            raise ValueError(f"{EXPERIMENT}: sweep {sweep!r} needs {EXPERIMENT}.{key} in params.yaml")
        for value in config[key]:
            points.setdefault(replace(base, **{field: value}), []).append(sweep)
    return list(points.items())


@dataclass(frozen=True)
class Workload:
    """One stream over one configuration: the keys, the initial table and the table to expect."""
    stream: keystreams.KeyStream
    point: Point
    initial: np.ndarray
    reference: np.ndarray
    sparse_fraction: float


def stream_params(name: str, config: dict) -> dict:
    if name == "zipf":
        return {"exponent": config.get("zipf_exponent", 1.1)}
    return {"alpha": config.get("power_law_alpha", 2.1)}


def workload(name: str, point: Point, config: dict) -> Workload:
    seed = config["seed"]
    stream = keystreams.key_stream(name, point.table_rows, point.dataset_size, seed=seed,
                                   clustered=point.locality == "clustered", **stream_params(name, config))
    initial = np.random.default_rng(seed).standard_normal((point.table_rows, point.embedding_size), dtype=np.float32)
    fraction = config.get("sparse_fraction", 0.1)
    reference = reference_updates(initial, stream.keys, point.batch_size, default_update, point.update == "dense",
                                  fraction)
    return Workload(stream, point, initial, reference, fraction)


# ------------------------------------------------------------------------------- measuring
@dataclass
class EmbeddingRun:
    rows: pd.DataFrame  # one row per run (the embeddings table)
    batches: pd.DataFrame  # one row per batch of every run (raw/<table>.parquet)


def run(config: Settings, progress: bool = True) -> EmbeddingRun:
    """Every durability variant of ``config``, each in a fresh process of its own (``run_variant`` there)."""
    runs = [run_in_process(config, durability, progress) for durability in config.durability]
    return EmbeddingRun(pd.concat([r.rows for r in runs], ignore_index=True),
                        pd.concat([r.batches for r in runs], ignore_index=True))


def run_in_process(config: Settings, durability: str, progress: bool = True) -> EmbeddingRun:
    """One durability variant in a new Python process (``none``: with fsync turned off in it); its tables back."""
    env = durability_.environment(durability)  # FileNotFoundError naming the package, before any work
    with tempfile.TemporaryDirectory(prefix="sb-embeddings-") as folder:
        spec, log = Path(folder) / "settings.json", Path(folder) / "stderr.log"
        spec.write_text(json.dumps({**config.model_dump(mode="json"), "durability": [durability]}))
        if progress:
            print(f"{EXPERIMENT}: durability {durability} in a process of its own", file=sys.stderr, flush=True)
        with open(log, "w") as err:
            done = subprocess.run([sys.executable, "-m", __name__, str(spec), folder], env=env, stdout=err,
                                  stderr=err, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            tail = log.read_text()[-3000:]
            raise RuntimeError(f"{EXPERIMENT}: the durability {durability!r} process failed (exit "
                               f"{done.returncode}):\n{tail}")
        return EmbeddingRun(pd.read_parquet(Path(folder) / "rows.parquet"),
                            pd.read_parquet(Path(folder) / "batches.parquet"))


def process_durability() -> str:
    """The durability this process gives: ``none`` when fsync is turned off in it, else ``fsync``."""
    return "none" if durability_.fsync_disabled() else "fsync"


def run_variant(config: Settings, progress: bool = True) -> EmbeddingRun:
    """Every configuration of ``plan`` x stream x table at this process's durability (``config.durability``
    must name it alone), under the repeat policy, verified. A cell's
    repeat runs the whole stream ``passes`` times (each on a fresh table) when one run (creating the
    table included) is shorter than the policy's work per repeat; its row holds the mean run."""
    if list(config.durability) != [process_durability()]:
        raise RuntimeError(f"{EXPERIMENT}: this process gives durability {process_durability()!r}, the settings ask "
                           f"for {config.durability}: run them with run() (a process per durability)")
    policy = config.policy
    tables, streams = config["tables"], config["streams"]
    points = plan(config)
    cells = [(table, work, sweeps) for name in streams for point, sweeps in points
             for work in [workload(name, point, config)] for table in tables]
    if config.get("warmup", True):
        _warm_up(tables, streams[0], points[0][0], config)
    bar = tqdm(total=len(cells) * policy.min_repeats, desc=EXPERIMENT, unit="run", disable=not progress, leave=False)
    calibrated = [Cell(policy.passes_for(_timed_run(table, work, config))) for table, work, _ in cells]
    batches = []

    def one_repeat(cell_plan, repeat: int, cell: Cell):
        table, work, sweeps = cell_plan
        runs = [measure_one(table, work, config, repeat, sweeps) for _ in range(cell.passes)]
        batches.extend(per_batch.assign(run_pass=i) for i, (_row, per_batch) in enumerate(runs))
        row = _mean_row([row for row, _ in runs])
        return row["total_seconds"], row
    done = rounds(cells, policy, one_repeat, calibrated, on_repeat=bar.update)
    bar.close()
    rows = [row for cell in done for row in cell.annotated_rows(policy)]
    return EmbeddingRun(pd.DataFrame(rows), pd.concat(batches, ignore_index=True))


TIMED_COLUMNS = ["total_seconds", "read_seconds", "update_seconds", "write_seconds", "create_seconds"]


def _mean_row(rows: list[dict]) -> dict:
    """One repeat's row from its passes: the timings are the mean pass, the rest is the same in each."""
    return {**rows[0], **{c: float(np.mean([row[c] for row in rows])) for c in TIMED_COLUMNS}}


def _timed_run(table: str, work: Workload, config: dict) -> float:
    """One unrecorded, verified run of a cell: its duration sets the cell's passes per repeat. The table's
    creation counts, since every pass creates its table anew: a store that is slow to create (localfs, one
    file per row) and quick to update is not looped dozens of times for a few milliseconds of updates."""
    row, _ = measure_one(table, work, config, -1, [])
    return row["total_seconds"] + row["create_seconds"]


def _warm_up(tables: list[str], stream: str, point: Point, config: dict) -> None:
    """One unrecorded (but verified) run per table of the first configuration: the first run in a
    process pays for loading libraries and first contexts, which no configuration should carry."""
    work = workload(stream, point, config)
    for name in tables:
        measure_one(name, work, config, -1, [])


def table_root(table: str, config: dict) -> Path:
    if config.get("store_dir"):
        return Path(config["store_dir"]) / f"emb-{table}"
    return store_root(f"emb-{table}", LOCATION)


def measure_one(name: str, work: Workload, config: dict, repeat: int, sweeps: list[str]) -> tuple[dict, pd.DataFrame]:
    """One run at this process's durability: create the table, push the stream through it, verify; its row and
    per-batch times."""
    root, point, durability = table_root(name, config), work.point, process_durability()
    remove_table(root)
    table = make_table(name, root, durability, **{k: config[k] for k in TABLE_OPTIONS if k in config})
    try:
        start = time.perf_counter()
        table.create(point.table_rows, point.embedding_size, work.initial)
        created = time.perf_counter()
        per_batch = run_updates(table, work.stream.keys, point.batch_size, default_update, point.update == "dense",
                                work.sparse_fraction)
        seconds = time.perf_counter() - created
        run_id = _run_id(name, work, durability)
        verify(table, work.reference, f"{run_id}, repeat {repeat}")
        stored = dict(disk_bytes=table.disk_usage(), table_files=len(table.files()), store_fs=filesystem_type(root),
                      system_version=table.system_version(),
                      client_version=f"{table.client_package} {package_version(table.client_package)}",
                      **table.settings())
    finally:
        table.close()
        remove_table(root)
    row = _row(name, work, config, repeat, sweeps, per_batch, seconds, created - start, run_id, stored)
    return row, per_batch.assign(run_id=run_id, repeat=repeat, table=name, stream=work.stream.name,
                                 durability=durability)


def _run_id(name: str, work: Workload, durability: str) -> str:
    p = work.point
    return (f"{name}_{work.stream.name}_n{p.dataset_size}_k{p.table_rows}_e{p.embedding_size}_b{p.batch_size}_"
            f"{p.update}_{p.locality}_{durability}")


def _row(name, work: Workload, config, repeat, sweeps, per_batch: pd.DataFrame, seconds: float,
         create_seconds: float, run_id: str, stored: dict) -> dict:
    point, dim = work.point, work.point.embedding_size
    workload_fields = dict(experiment=EXPERIMENT, table=name, stream=work.stream.name, **asdict(point),
                           durability=stored["durability"], sparse_fraction=work.sparse_fraction, seed=config["seed"],
                           **stream_params(work.stream.name, config))
    keys_read, keys_written = int(per_batch.keys_read.sum()), int(per_batch.keys_written.sum())
    return {
        "experiment": EXPERIMENT, "table": name, "stream": work.stream.name,
        "stands_for": STREAM_STANDS_FOR[work.stream.name], "sweep": ",".join(sweeps), **asdict(point),
        "sparse_fraction": work.sparse_fraction if point.update == "sparse" else 1.0, "location": LOCATION,
        "repeat": repeat, "n_batches": len(per_batch),
        "total_seconds": seconds, "read_seconds": per_batch.read_ns.sum() / 1e9,
        "update_seconds": per_batch.update_ns.sum() / 1e9, "write_seconds": per_batch.write_ns.sum() / 1e9,
        "create_seconds": create_seconds, "keys_read": keys_read, "keys_written": keys_written,
        "bytes_read": keys_read * dim * 4, "bytes_written": keys_written * dim * 4, "verified": True,
        **stored, **work.stream.describe(), **machine(), "params_hash": params_hash(workload_fields),
        "run_id": run_id, "scale": config.get("scale"), "load_avg_1m": os.getloadavg()[0],
    }


def _write_raw(raw: pd.DataFrame, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, part in raw.groupby("table", sort=False):
        part.to_parquet(folder / f"{name}.parquet", index=False)


def main(argv=None) -> None:
    """One durability variant in this process: SETTINGS.json (a Settings dump naming one durability) -> OUT_DIR
    (rows.parquet, batches.parquet)."""
    spec, folder = (argv or sys.argv[1:])[:2]
    config = Settings.model_validate(json.loads(Path(spec).read_text()))
    result = run_variant(config, progress=False)
    result.rows.to_parquet(Path(folder) / "rows.parquet", index=False)
    result.batches.to_parquet(Path(folder) / "batches.parquet", index=False)


if __name__ == "__main__":
    main()
