"""Data loaders and write cost (seed 001 Secs 5.1-5.8, Figs 1-11, Table 1): each workload (text,
image, graph) written into each store, R rows per key, then read whole by PyTorch DataLoaders:
map-style (batch B, R, workers W) vs iterable-style (B, prefetch PF, W).

Per store and R we time the conversion into the store (encoding + writes + flush: the seed's
"cost of converting dataset to DB format"), with parallel writer threads where the store takes
them (TileDB: one fragment per writer; TensorStore kvstore: one transaction per writer) and one
writer elsewhere (RocksDB: one handle per directory, its writes serialise through one write
queue, and the seed saw write-lock trouble with several writers; ext4 as a plain copy). Then an
unrecorded warm-up epoch that reads and verifies every row, then every loader configuration with
its workers persisting across its epochs (their start-up reported apart), repeated as the repeat
policy says (storebench.core.repeats); each store's fastest configuration is then re-measured on
fresh repeats (``phase`` confirm). The seed's three stores and ext4 get the full grid; every other
system of the registry (servers included) a small grid (``server_grid``).

The loaders' own cost is measured against a bare loop of the same store calls (no decoding,
verification or tensors), in this process, rounds alternating, so the ratio holds on a busy machine.

Tables: ``dataloaders`` (one row per epoch), ``dataloaders_write`` (one row per timed conversion),
``dataloaders_overhead`` (loader vs bare loop), ``dataloaders_best`` (each workload and store's fastest
configuration: scalability and resources read it from ``<results root>/dataloaders/``), ``skipped``, ``notes``.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Annotated, Callable, Literal

import numpy as np
import pandas as pd
from pydantic import AfterValidator, Field, model_validator

from storebench.core.experiment import ResultsDir
from storebench.core.repeats import Cell, RepeatPolicy
from storebench.core.settings import NonNegativeInt, PositiveFloat, PositiveInt, Settings as Base, one_of, params_hash
from storebench.data import samples as sample_data
from storebench.loaders import rows as rowloaders
from storebench.loaders.heap import heap_setting
from storebench.loaders.opener import StoreOpener, start_method
from storebench.testbed.locations import store_root
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.data.rowformats import KeyLayout, encode_objects, row_format
from storebench.data.samples import row_fingerprints
from storebench.stores import STORES, get_store_class
from storebench.stores.base import package_version
from storebench.stores.systems import LocationNotSupported, ServicePool, open_system
from storebench.stores.tables import TABLES, TableNotSupported
from storebench.experiments.common import Run, Skipped, record_skipped
from storebench.experiments.ml_storage_study.dataloaders.best import best_configs, summary

EXPERIMENT = "dataloaders"
LOCATION = "disk-warm"
SEED_SYSTEMS = ("localfs", "rocksdb", "tiledb", "tiledb-attrs", "tensorstore", "tensorstore-zarr")
PARALLEL_WRITERS = {"tiledb": "threads, one fragment each", "tensorstore": "threads, one transaction each"}
LOADER_SYSTEMS = sorted(set(STORES) | set(TABLES))


GRID_KEYS = {"batch_sizes", "rows_per_key", "prefetch", "workers", "loaders", "iterable_rows_per_key"}
Workload = Literal["text", "image", "graph"]


def _grid(value: dict) -> dict:
    """A sub-grid (``server_grid``, ``workers_at``): some of the grid keys, each a non-empty list."""
    unknown = set(value) - GRID_KEYS
    if unknown:
        raise ValueError(f"has unknown keys {sorted(unknown)}; valid: {', '.join(sorted(GRID_KEYS))}")
    for key, values in value.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"{key} must be a non-empty list")
        if key == "loaders":
            if bad := [v for v in values if v not in rowloaders.LOADER_KINDS]:
                raise ValueError(f"loaders {bad}; valid: {', '.join(sorted(rowloaders.LOADER_KINDS))}")
        elif not all(isinstance(v, int) and not isinstance(v, bool) and v >= (0 if key == "workers" else 1)
                     for v in values):
            raise ValueError(f"{key} values must be integers >= {0 if key == 'workers' else 1}")
    return value


LoaderSystem = Annotated[str, one_of("loader system", LOADER_SYSTEMS)]
Grid = Annotated[dict, AfterValidator(_grid)]


class Settings(Base):
    workloads: list[Workload] = Field(min_length=1)
    rows: dict[Workload, PositiveInt]  # first rows of each workload (beyond its dataset: whole copies of it)
    systems: list[LoaderSystem] = Field(min_length=1)
    full_grid_systems: list[LoaderSystem] = list(SEED_SYSTEMS)  # the full grid; every other system: server_grid
    loaders: list[Literal["map", "iterable"]] = Field(min_length=1)
    batch_sizes: list[PositiveInt] = Field(min_length=1)
    rows_per_key: list[PositiveInt] = Field(min_length=1)
    prefetch: list[PositiveInt] = Field(min_length=1)
    workers: list[NonNegativeInt] = Field(min_length=1)
    server_grid: Grid = {}
    workers_at: Grid | None = None  # W > 0 only at these batch sizes, rows per key and prefetch sizes
    iterable_rows_per_key: list[PositiveInt] | None = None  # bytes stores: the iterable loader at these R only
    prefetch_batch_sizes: dict[PositiveInt, list[PositiveInt]] = {}  # PF -> the only B it is measured at
    memory_systems: list[LoaderSystem] = []  # these hold their data on tmpfs (location memory), not disk-warm
    long_cell_s: PositiveFloat | None = None  # the time cap: a cell whose first repeat is longer than this ...
    long_cell_repeats: Annotated[int, Field(ge=3, strict=True)] = 3  # ... gets this many repeats (no more)
    order: Literal["sequential", "shuffled"] = "sequential"
    writers: PositiveInt = 2
    # False: each write is made once and not timed, for a part that reads a system whose writes another part times
    writes_measured: bool = True
    chunk_rows: PositiveInt = 64
    overhead_rounds: PositiveInt = 5
    overhead_systems: list[LoaderSystem] = []

    @model_validator(mode="after")
    def _rows_fit(self):
        """Every workload has a row count, and R is not larger than it."""
        for workload in self.workloads:
            if workload not in self.rows:
                raise ValueError(f"{EXPERIMENT}.rows has no entry for workload {workload!r}")
            rs = self.rows_per_key + self.server_grid.get("rows_per_key", [])
            too_big = [r for r in rs if r > self.rows[workload]]
            if too_big:
                raise ValueError(f"{EXPERIMENT}.rows_per_key (or server_grid.rows_per_key) {too_big} is larger than "
                                 f"the {workload} dataset at this scale ({self.rows[workload]} rows, "
                                 f"{EXPERIMENT}.rows.{workload})")
        return self


def capped_policy(config) -> "RepeatPolicy | Callable[[float], RepeatPolicy]":
    """The repeat policy, time-capped when ``long_cell_s`` is set: a cell whose first repeat (a steady
    epoch, or a write) lasts longer than ``long_cell_s`` takes exactly ``long_cell_repeats`` repeats
    (at least 3, so it keeps a CI), every other cell the policy's. Rows record their cell's repeats."""
    policy, cap = config.policy, config.get("long_cell_s")
    if cap is None:
        return policy
    long = RepeatPolicy(min_repeats=config.get("long_cell_repeats", 3), max_repeats=config.get("long_cell_repeats", 3),
                        target_ci=policy.target_ci, cell_cap_s=policy.cell_cap_s, min_repeat_s=policy.min_repeat_s)
    return lambda first_s: long if first_s > cap else policy


def capped_cell(config, measure: Callable[[int], tuple[float, dict | None]]) -> tuple[Cell, RepeatPolicy]:
    """``measure(repeat)`` -> (seconds, row) repeated under ``capped_policy`` (the first repeat decides it);
    a write is never looped (it replaces the data), so a repeat is one pass."""
    choose, cell = capped_policy(config), Cell()
    policy = choose if isinstance(choose, RepeatPolicy) else None
    while policy is None or not policy.done(cell):
        start = time.perf_counter()
        value, row = measure(cell.repeats)
        cell.add(value, time.perf_counter() - start, row)
        policy = policy or choose(value)
    return cell, policy


def write_method(system: str, writers: int) -> str:
    """How ``write_objects`` writes into ``system`` with ``writers`` threads, as the write-cost rows give it."""
    return PARALLEL_WRITERS.get(system, "one writer") if writers > 1 else "one writer"


def timed_writes(config, write_once: Callable[[int], tuple[float, dict]]) -> list[dict]:
    """The rows of one write cell (``write_once(repeat)`` -> (seconds, row)); with ``writes_measured`` off, the
    write is made once and no row is kept (the part that times it is another)."""
    if not config.get("writes_measured", True):
        write_once(0)
        return []
    cell, policy = capped_cell(config, write_once)
    return cell.annotated_rows(policy)


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    result = run(settings, progress=progress)
    for name, frame in result.frames.items():
        out.write(name, frame)
    record_skipped(result, out)


@dataclass(frozen=True)
class Point:
    loader: str
    rows_per_key: int
    batch_size: int
    prefetch: int | None
    workers: int


def grid(config: Settings, system: str, table: bool) -> list[Point]:
    """The loader configurations measured on ``system``: the full grid for the seed's stores (and
    ``full_grid_systems``), ``server_grid`` over it for the others; tables have no R. With
    ``iterable_rows_per_key``, a bytes store's iterable loader runs at those R only (the seed's: R = 1,
    prefetching instead of packing); with ``prefetch_batch_sizes``, a prefetch size listed there only at its
    batch sizes (a small prefetch issues a request per few rows: its epochs are the long ones). With
    ``workers_at``, W > 0 is measured only at those batch sizes, rows per key (map-style, or an iterable
    swept over R) and prefetch sizes (worker start-up makes those epochs the long ones)."""
    g = {key: config[key] for key in ("loaders", "batch_sizes", "rows_per_key", "prefetch", "workers")}
    if system not in config.full_grid_systems:
        g.update(config.server_grid)
    rs = [1] if table else g["rows_per_key"]
    iterable_rs = g.get("iterable_rows_per_key", config.get("iterable_rows_per_key"))
    at = config.get("workers_at") or {}
    pf_bs = config.get("prefetch_batch_sizes") or {}

    def workers_here(b: int, r: int, pf: int | None) -> bool:
        r_axis = not table and (pf is None or iterable_rs is None)  # an iterable at one R only: R is no axis
        return (b in at.get("batch_sizes", [b]) and (not r_axis or r in at.get("rows_per_key", [r]))
                and (pf is None or pf in at.get("prefetch", [pf])))
    points = []
    for r in rs:
        for loader in g["loaders"]:
            if loader == "iterable" and not table and iterable_rs is not None and r not in iterable_rs:
                continue
            for b in g["batch_sizes"]:
                for pf in (g["prefetch"] if loader == "iterable" else [None]):
                    if pf is not None and b not in pf_bs.get(pf, [b]):
                        continue
                    points += [Point(loader, r, b, pf, w) for w in g["workers"] if w == 0 or workers_here(b, r, pf)]
    return points


def loader_dataset(source, modality: str, fingerprints, point: Point, order: str = "sequential", seed: int = 0):
    """(dataset, batch plan) of ``point`` over ``source``; the plan is None for an iterable dataset."""
    if point.loader == "iterable":
        return rowloaders.RowIterableDataset(source, modality, fingerprints, point.batch_size, point.prefetch), None
    return (rowloaders.RowMapDataset(source, modality, fingerprints),
            rowloaders.map_batches(source.n_rows, point.batch_size, order, seed))


def point_of(row) -> Point:
    """The Point of a best-configuration row (dataloaders_best.csv, or the seed's Table 1)."""
    def number(key, default=None):
        value = row.get(key)
        return default if value is None or pd.isna(value) else int(value)
    return Point(row["loader"], number("rows_per_key", 1), int(row["batch_size"]), number("prefetch"),
                 int(row["workers"]))


# ------------------------------------------------------------------------------- writing
def write_objects(store, samples, layout: KeyLayout, writers: int, batch: int = 256,
                  batch_bytes: int = 4 << 20) -> None:
    """Every key of ``layout`` into ``store`` (encoding included), then flush; ``writers`` threads
    each ``put_many`` a chunk of at most ``batch`` keys and ``batch_bytes`` bytes (a server client
    sends a chunk's writes concurrently: unbounded, 100 KB objects time out on 2 cores)."""
    chunks = _chunks(encode_objects(samples, layout, row_format(samples)), batch, batch_bytes)
    if writers == 1:
        for chunk in chunks:
            store.put_many(chunk)
    else:
        with ThreadPoolExecutor(writers, thread_name_prefix="writer") as pool:
            for _ in pool.map(store.put_many, chunks):
                pass
    store.flush()


def _chunks(objects, batch: int, batch_bytes: int):
    chunk, size = [], 0
    for key, value in objects:
        if chunk and (len(chunk) == batch or size + len(value) > batch_bytes):
            yield chunk
            chunk, size = [], 0
        chunk.append((key, value))
        size += len(value)
    if chunk:
        yield chunk


# ------------------------------------------------------------------------------- one source
class SourceRun:
    """What one (workload, system, R or table) measurement needs, and its rows."""

    def __init__(self, run: Run, config: dict, workload: str, samples, fingerprints, system: str,
                 system_version: str, client_version: str, location: str, progress: bool, client_config: str = ""):
        self.run, self.config, self.workload, self.samples = run, config, workload, samples
        self.fingerprints, self.system, self.location, self.progress = fingerprints, system, location, progress
        self.versions = {"system_version": system_version, "client_version": client_version,
                         "client_config": client_config or client_version}
        self.size = run.size_of(workload) if isinstance(run, DataloaderRun) else data_size(samples)

    def write_row(self, repeat: int, seconds: float, rows_per_key: int, writers: int, how: str, usage: int | None):
        return {"experiment": EXPERIMENT, "workload": self.workload, "dataset": self.samples.name,
                "system": self.system, "location": self.location, "rows_per_key": rows_per_key, "writers": writers,
                "write_method": how, "repeat": repeat, **self.size, "seconds": seconds,
                "rows_per_second": len(self.samples) / seconds,
                "disk_usage_bytes": usage, **self.versions, **self._provenance(rows_per_key=rows_per_key)}

    def epoch_row(self, point: Point, repeat: int, epoch, layout: str) -> dict:
        return {"experiment": EXPERIMENT, "workload": self.workload, "dataset": self.samples.name,
                "system": self.system, "location": self.location, "layout": layout, **asdict(point),
                "start_method": (start_method(self.system) or "fork") if point.workers else "none",
                "order": self.config.get("order", "sequential"), "repeat": repeat, **self.size,
                "n_rows": epoch.rows, "batches": epoch.batches, "seconds": epoch.seconds,
                "rows_per_second": epoch.rows / epoch.seconds,
                "cpu_seconds": epoch.cpu_seconds, "verified": True, **self.versions,
                **self._provenance(**asdict(point))}

    def _provenance(self, **point) -> dict:
        workload = dict(experiment=EXPERIMENT, workload=self.workload, dataset=self.samples.name,
                        n_rows=len(self.samples), system=self.system, order=self.config.get("order", "sequential"),
                        **point)
        return {**machine(), "params_hash": params_hash(workload), "scale": self.config["scale"],
                "load_avg_1m": os.getloadavg()[0]}

    def measure(self, source, points: list[Point], layout: str) -> None:
        """Warm-up (verifies every row), then each point until the repeat policy is done with it
        (``phase`` select); then the fastest point again on fresh repeats (``phase`` confirm), so the
        figure reported for a best configuration is not the one it was picked on. A single point is not
        picked from others, so its figure is not biased by the picking and it is not measured again: the
        parts of one long cell (graph-tiledb-pf1, text-tiledb-pf16) then take half the time."""
        warm = rowloaders.RowMapDataset(source, self.samples.modality, self.fingerprints)
        rowloaders.run_epoch(rowloaders.row_loader(warm, 0, batches=rowloaders.map_batches(len(self.samples), 1024)))
        cells = [self.measure_point(source, point, layout, "select")
                 for point in tqdm(points, desc=f"{self.workload} {self.system} {layout}", unit="config",
                                   disable=not self.progress, leave=False)]
        if len(points) == 1:
            return
        best = min(range(len(points)), key=lambda i: np.mean(cells[i].values))
        self.measure_point(source, points[best], layout, "confirm")

    def measure_point(self, source, point: Point, layout: str, phase: str) -> Cell:
        """One DataLoader whose workers persist across the point's epochs: a first epoch (workers
        start), a steady one (sets the epochs per repeat), then repeats (time-capped: ``capped_policy``).
        ``startup_seconds`` is the first epoch minus the steady one: the workers' start-up, reported apart."""
        dataset, batches = self.dataset(source, point)

        def row(repeat: int, epoch, startup: float) -> dict:
            return {**self.epoch_row(point, repeat, epoch, layout), "phase": phase, "startup_seconds": startup}
        cell, policy = rowloaders.measure_epochs(dataset, point.workers, start_method(self.system), batches,
                                                 capped_policy(self.config), row)
        self.run.writer.rows.extend(cell.annotated_rows(policy))
        return cell

    def dataset(self, source, point: Point):
        return loader_dataset(source, self.samples.modality, self.fingerprints, point,
                              self.config.get("order", "sequential"), self.config["seed"])

    def overhead(self, source, points: list[Point], layout: str) -> list[dict]:
        """Loader vs bare loop of the same store calls, no workers, the largest batch (and prefetch)."""
        out = []
        for loader in self.config["loaders"]:
            candidates = [p for p in points if p.loader == loader and p.workers == 0]
            if not candidates:
                continue
            point = max(candidates, key=lambda p: (p.batch_size, p.prefetch or 0))
            dataset, batches = self.dataset(source, point)
            timed, bare = [], []
            for _ in range(self.config.get("overhead_rounds", 5)):
                timed.append(rowloaders.run_epoch(rowloaders.row_loader(dataset, 0, batches=batches)).seconds)
                bare.append(rowloaders.bare_epoch(dataset, batches).seconds)
            n = len(self.samples)
            out.append({"workload": self.workload, "system": self.system, "layout": layout, **asdict(point),
                        "rounds": len(timed), "loader_rows_per_second": n / np.median(timed),
                        "bare_rows_per_second": n / np.median(bare),
                        "loader_vs_bare": float(np.median(bare) / np.median(timed)),
                        "loader_us_per_row": 1e6 * np.median(timed) / n, "bare_us_per_row": 1e6 * np.median(bare) / n,
                        "loader_round_seconds": _joined(timed), "bare_round_seconds": _joined(bare),
                        "heap": heap_setting(), **self.versions, **machine()})
        return out


def _joined(seconds: list[float]) -> str:
    """Each round's seconds, ';'-separated (one CSV cell): the analysis takes a CI over them."""
    return ";".join(f"{s:.6g}" for s in seconds)


# ------------------------------------------------------------------------------- the run
class EpochRows:
    """The epoch rows of one run (a Run's writer)."""

    experiment = EXPERIMENT

    def __init__(self):
        self.rows: list[dict] = []

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)


@dataclass
class DataloaderRun(Run):
    writes: list = field(default_factory=list)  # one row per timed conversion into a store
    overheads: list = field(default_factory=list)  # loader vs bare loop
    data: list = field(default_factory=list)  # one row per workload: what was measured, rows and bytes

    @property
    def frames(self) -> dict[str, pd.DataFrame]:
        """The run's tables by report name: epochs, writes, overheads, best configurations, data sizes."""
        epochs = self.rows
        return {EXPERIMENT: epochs, f"{EXPERIMENT}_write": pd.DataFrame(self.writes),
                f"{EXPERIMENT}_overhead": pd.DataFrame(self.overheads),
                f"{EXPERIMENT}_best": best_configs(summary(epochs)), f"{EXPERIMENT}_data": pd.DataFrame(self.data)}

    def size_of(self, workload: str) -> dict:
        """The data size fields of ``workload``'s rows (its ``data`` row, without the workload)."""
        return next({k: v for k, v in d.items() if k != "workload"} for d in self.data if d["workload"] == workload)


def workload_samples(workload: str, rows: int):
    """(samples, copies): the first ``rows`` rows of ``workload``'s dataset (1 copy), or, for more rows than it
    has, a whole number of copies of it end to end (named e.g. ``sentiment140x27``): how the seed grew its inputs,
    and how the offline text sample reaches the seed's size."""
    full = sample_data.load(workload)
    if rows <= len(full):
        return full.head(rows), 1
    copies, rest = divmod(rows, len(full))
    if rest:
        raise ValueError(f"{workload}: {rows:,} rows is more than {full.name}'s {len(full):,} and not a whole number "
                         f"of copies of it: give at most {len(full):,} rows, or a multiple of {len(full):,} (the "
                         "dataset concatenated with itself)")
    return full.scaled(copies), copies


def data_size(samples, copies: int = 1) -> dict:
    """What a result row says of its data: the dataset (and how it was made), rows and bytes (the rows'
    columns in memory: tweet bytes + offsets + labels, pixels + labels, three int32 per triple)."""
    return {"dataset": samples.name, "copies": copies, "rows_per_copy": len(samples) // copies,
            "n_rows": len(samples), "dataset_bytes": samples.nbytes}


def run(config: Settings, progress: bool = True, services: ServicePool | None = None) -> DataloaderRun:
    """Every workload x system: write (timed), then every loader configuration."""
    result = DataloaderRun(EpochRows())
    pool = services or ServicePool(config["endpoints"])
    systems = sorted(config["systems"], key=_run_order)
    data = {}
    for workload in config["workloads"]:
        samples, copies = workload_samples(workload, config["rows"][workload])
        data[workload] = samples, row_fingerprints(samples.columns)
        result.data.append({"workload": workload, **data_size(samples, copies)})
    try:
        for system in systems:  # system-major: each local server starts once for every workload
            for workload, (samples, fingerprints) in data.items():
                try:
                    _measure_system(result, config, workload, samples, fingerprints, system, pool, progress)
                except (LocationNotSupported, TableNotSupported) as why:
                    result.skipped.append(Skipped(system, LOCATION, f"{workload} loaders", str(why)))
    finally:
        if services is None:
            pool.close()
    return result


def _run_order(system: str) -> tuple:
    """Fork-safe systems first (their workers fork from this process), then the forkserver ones;
    local servers grouped so each starts once per workload."""
    has_server = system in STORES and get_store_class(system).capabilities.has_server
    return (start_method(system) is not None, has_server, system)


def _measure_system(result: Run, config, workload, samples, fingerprints, system, pool, progress) -> None:
    if system in TABLES:
        _measure_table(result, config, workload, samples, fingerprints, system, progress)
        return
    cls = get_store_class(system)
    if cls.capabilities.array_native:
        raise TableNotSupported(f"{system} stores image tensors only; seed 001's array layouts are "
                                f"{', '.join(TABLES)}")
    on_tmpfs = system in config.get("memory_systems", [])
    location = "memory" if cls.capabilities.in_memory_only or on_tmpfs else LOCATION
    if cls.capabilities.in_memory_only:
        result.notes.append(f"{system} keeps its data in memory only: measured at memory")
    elif location != LOCATION:
        result.notes.append(f"{system} measured with its data on tmpfs (memory_systems), as the seed kept it in memory")
    with open_system(system, location, pool) as store:
        writers = config.get("writers", 2) if system in PARALLEL_WRITERS else 1
        how = write_method(system, writers)
        points = grid(config, system, table=False)
        source_run = SourceRun(result, config, workload, samples, fingerprints, system, store.system_version(),
                               f"{store.client_package} {package_version(store.client_package)}", location, progress,
                               client_config=store.client_config())
        try:
            for r in sorted({p.rows_per_key for p in points}):
                layout = KeyLayout(len(samples), r)

                def write_once(repeat: int):
                    store.clear()
                    start = time.perf_counter()
                    write_objects(store, samples, layout, writers)
                    seconds = time.perf_counter() - start
                    return seconds, source_run.write_row(repeat, seconds, r, writers, how, _usage(store))

                result.writes += timed_writes(config, write_once)
                source = rowloaders.StoreRows(StoreOpener.of(store), layout, row_format(samples))
                mine = [p for p in points if p.rows_per_key == r]
                source_run.measure(source, mine, f"{r} rows/key")
                if system in config.get("overhead_systems", []) and r == min(p.rows_per_key for p in points):
                    result.overheads += source_run.overhead(source, mine, f"{r} rows/key")
                source.close()
        finally:
            store.clear()


def _measure_table(result: Run, config, workload, samples, fingerprints, system, progress) -> None:
    cls = TABLES[system]
    if samples.modality not in cls.modalities:
        raise TableNotSupported(f"{system} holds {', '.join(cls.modalities)} rows, not {samples.modality} "
                                "(TensorStore's array drivers hold numbers; the seed used its kvstore for text)")
    root = store_root(f"{system}-{workload}", LOCATION)
    chunk = config.get("chunk_rows", 64)
    variants = cls.write_variants() if config.get("writes_measured", True) else cls.write_variants()[-1:]
    tables = [cls(root, chunk_rows=chunk, **variant) for variant in variants]  # the default, read below, last
    table = tables[-1]
    source_run = SourceRun(result, config, workload, samples, fingerprints, system, table.system_version(),
                           f"{cls.client_package} {package_version(cls.client_package)}", LOCATION, progress)
    try:
        for writer in tables:
            def write_once(repeat: int, writer=writer):
                start = time.perf_counter()
                writer.write(samples)
                writer.flush()
                seconds = time.perf_counter() - start
                return seconds, source_run.write_row(repeat, seconds, 1, 1, writer.write_method(),
                                                     writer.disk_usage().bytes)

            result.writes += timed_writes(config, write_once)
            writer.close()
        source = rowloaders.TableRows(rowloaders.TableOpener(cls, str(root), {"chunk_rows": chunk}), len(samples))
        points = grid(config, system, table=True)
        layout = table.layout()
        source_run.measure(source, points, layout)
        if system in config.get("overhead_systems", []):
            result.overheads += source_run.overhead(source, points, layout)
        source.close()
    finally:
        table.clear()


def _usage(store) -> int | None:
    try:
        return store.disk_usage().bytes
    except (NotImplementedError, OSError):
        return None
