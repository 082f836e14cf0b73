"""Data loaders and write cost (seed 001 Secs 5.1-5.8, Figs 1-11, Table 1): each workload (text,
image, graph) written into each store, R rows per key, then read whole by PyTorch DataLoaders:
map-style (batch B, R, workers W) vs iterable-style (B, prefetch PF, W).

Per store and R we time the conversion into the store (encoding + writes + flush: the seed's
"cost of converting dataset to DB format"), with parallel writer threads where the store takes
them (TileDB: one fragment per writer; TensorStore kvstore: one transaction per writer) and one
writer elsewhere (RocksDB: one handle per directory, its writes serialise through one write
queue, and the seed saw write-lock trouble with several writers; ext4 as a plain copy). Then an
unrecorded warm-up epoch that reads and verifies every row, then every loader configuration
``repeats`` times (repeat-major). The seed's three stores and ext4 get the full grid; every other
system of the registry (servers included) a small grid (``server_grid``).

The loaders' own cost is measured against a bare loop of the same store calls (no decoding,
verification or tensors), in this process, rounds alternating, so the ratio holds on a busy machine.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from storebench.experiments.ml_storage_study import published as paper001
from storebench.data import samples as sample_data
from storebench.core.config import all_non_negative, all_positive, choices, params_hash, positive
from storebench.loaders import rows as rowloaders
from storebench.loaders.heap import heap_setting
from storebench.loaders.opener import StoreOpener, start_method
from storebench.testbed.locations import store_root
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.data.rowformats import KeyLayout, encode_objects, row_format
from storebench.data.samples import WORKLOADS, row_fingerprints
from storebench.stores import STORES, get_store_class
from storebench.stores.base import package_version
from storebench.stores.systems import LocationNotSupported, ServicePool, open_system
from storebench.stores.tables import TABLES, TableNotSupported
from storebench.core.stats import mean_ci
from storebench.experiments.common import Run, Skipped

EXPERIMENT = "dataloaders"
SEED = "001"
LOCATION = "disk-warm"
SEED_SYSTEMS = ("localfs", "rocksdb", "tiledb", "tiledb-attrs", "tensorstore", "tensorstore-zarr")
BASELINE = "localfs"  # the seed's ext4 baseline
PARALLEL_WRITERS = {"tiledb": "threads, one fragment each", "tensorstore": "threads, one transaction each"}
LOADER_SYSTEMS = sorted(set(STORES) | set(TABLES))
CONFIG_KEYS = ["workload", "system", "loader", "rows_per_key", "batch_size", "prefetch", "workers"]


def _grid(value):
    if not isinstance(value, dict):
        return "must be a mapping of grid keys (batch_sizes, rows_per_key, prefetch, workers)"
    unknown = set(value) - {"batch_sizes", "rows_per_key", "prefetch", "workers", "loaders"}
    if unknown:
        return f"has unknown keys {sorted(unknown)}; valid: batch_sizes, rows_per_key, prefetch, workers, loaders"
    for key, values in value.items():
        if not isinstance(values, list) or not values or not all(isinstance(v, (int, str)) for v in values):
            return f"{key} must be a non-empty list"
        if key != "loaders" and (check := (all_non_negative if key == "workers" else all_positive)(values)):
            return f"{key}: {check}"
    return None


def _rows(value):
    bad = {k: v for k, v in value.items() if k not in WORKLOADS or not isinstance(v, int) or isinstance(v, bool) or v < 1}
    return f"must map workloads ({', '.join(WORKLOADS)}) to row counts >= 1; bad: {bad}" if bad else None


SCHEMA = {
    "workloads": (list[str], choices(WORKLOADS)),
    "rows": (dict, _rows),
    "systems": (list[str], choices(LOADER_SYSTEMS)),
    "full_grid_systems": (list[str], choices(LOADER_SYSTEMS)),
    "loaders": (list[str], choices(rowloaders.LOADER_KINDS)),
    "batch_sizes": (list[int], all_positive),
    "rows_per_key": (list[int], all_positive),
    "prefetch": (list[int], all_positive),
    "workers": (list[int], all_non_negative),
    "server_grid": (dict, _grid),
    "workers_at": (dict, _grid),
    "order": (str, choices({"sequential", "shuffled"})),
    "writers": (int, positive),
    "chunk_rows": (int, positive),
    "overhead_rounds": (int, positive),
    "overhead_systems": (list[str], choices(LOADER_SYSTEMS)),
}


@dataclass(frozen=True)
class Point:
    loader: str
    rows_per_key: int
    batch_size: int
    prefetch: int | None
    workers: int


def grid(config: dict, system: str, table: bool) -> list[Point]:
    """The loader configurations measured on ``system``: the full grid for the seed's stores (and
    ``full_grid_systems``), ``server_grid`` over it for the others; tables have no R. With
    ``workers_at``, W > 0 is measured only at those batch sizes and rows per key (worker start-up
    makes those epochs the long ones)."""
    g = {key: config[key] for key in ("loaders", "batch_sizes", "rows_per_key", "prefetch", "workers")}
    if system not in config.get("full_grid_systems", SEED_SYSTEMS):
        g.update(config.get("server_grid", {}))
    rs = [1] if table else g["rows_per_key"]
    at = config.get("workers_at") or {}
    points = []
    for r in rs:
        for loader in g["loaders"]:
            for b in g["batch_sizes"]:
                for pf in (g["prefetch"] if loader == "iterable" else [None]):
                    points += [Point(loader, r, b, pf, w) for w in g["workers"]
                               if w == 0 or (b in at.get("batch_sizes", [b])
                                             and (table or r in at.get("rows_per_key", [r])))]
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
                 system_version: str, client_version: str, location: str, progress: bool):
        self.run, self.config, self.workload, self.samples = run, config, workload, samples
        self.fingerprints, self.system, self.location, self.progress = fingerprints, system, location, progress
        self.versions = {"system_version": system_version, "client_version": client_version}

    def write_row(self, repeat: int, seconds: float, rows_per_key: int, writers: int, how: str, usage: int | None):
        return {"experiment": EXPERIMENT, "workload": self.workload, "dataset": self.samples.name,
                "system": self.system, "location": self.location, "rows_per_key": rows_per_key, "writers": writers,
                "write_method": how, "repeat": repeat, "n_rows": len(self.samples),
                "dataset_bytes": self.samples.nbytes, "seconds": seconds, "rows_per_second": len(self.samples) / seconds,
                "disk_usage_bytes": usage, **self.versions, **self._provenance(rows_per_key=rows_per_key)}

    def epoch_row(self, point: Point, repeat: int, epoch, layout: str) -> dict:
        return {"experiment": EXPERIMENT, "workload": self.workload, "dataset": self.samples.name,
                "system": self.system, "location": self.location, "layout": layout, **asdict(point),
                "start_method": (start_method(self.system) or "fork") if point.workers else "none",
                "order": self.config.get("order", "sequential"), "repeat": repeat, "n_rows": epoch.rows,
                "batches": epoch.batches, "seconds": epoch.seconds, "rows_per_second": epoch.rows / epoch.seconds,
                "cpu_seconds": epoch.cpu_seconds, "verified": True, **self.versions,
                **self._provenance(**asdict(point))}

    def _provenance(self, **point) -> dict:
        workload = dict(experiment=EXPERIMENT, workload=self.workload, dataset=self.samples.name,
                        n_rows=len(self.samples), system=self.system, order=self.config.get("order", "sequential"),
                        **point)
        return {**machine(), "params_hash": params_hash(workload), "scale": self.config["scale"],
                "load_avg_1m": os.getloadavg()[0]}

    def measure(self, source, points: list[Point], layout: str) -> None:
        """Warm-up (verifies every row), then each point ``repeats`` times, repeat-major."""
        warm = rowloaders.RowMapDataset(source, self.samples.modality, self.fingerprints)
        rowloaders.run_epoch(rowloaders.row_loader(warm, 0, batches=rowloaders.map_batches(len(self.samples), 1024)))
        bar = tqdm(total=len(points) * self.config["repeats"], desc=f"{self.workload} {self.system} {layout}",
                   unit="epoch", disable=not self.progress, leave=False)
        for repeat in range(self.config["repeats"]):
            for point in points:
                dataset, batches = self.dataset(source, point)
                loader = rowloaders.row_loader(dataset, point.workers, start_method(self.system), batches)
                self.run.writer.rows.append(self.epoch_row(point, repeat, rowloaders.run_epoch(loader), layout))
                bar.update()
        bar.close()

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
            for _ in range(self.config.get("overhead_rounds", 3)):
                timed.append(rowloaders.run_epoch(rowloaders.row_loader(dataset, 0, batches=batches)).seconds)
                bare.append(rowloaders.bare_epoch(dataset, batches).seconds)
            n = len(self.samples)
            out.append({"workload": self.workload, "system": self.system, "layout": layout, **asdict(point),
                        "rounds": len(timed), "loader_rows_per_second": n / np.median(timed),
                        "bare_rows_per_second": n / np.median(bare),
                        "loader_vs_bare": float(np.median(bare) / np.median(timed)),
                        "loader_us_per_row": 1e6 * np.median(timed) / n, "bare_us_per_row": 1e6 * np.median(bare) / n,
                        "heap": heap_setting(), **self.versions, **machine()})
        return out


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

    @property
    def frames(self) -> dict[str, pd.DataFrame]:
        """The run's tables by report name: epochs, writes, overheads, best configurations."""
        epochs = self.rows
        return {EXPERIMENT: epochs, f"{EXPERIMENT}_write": pd.DataFrame(self.writes),
                f"{EXPERIMENT}_overhead": pd.DataFrame(self.overheads),
                f"{EXPERIMENT}_best": best_configs(summary(epochs))}

    def save(self, out_dir) -> None:
        from pathlib import Path

        for name, frame in self.frames.items():
            path = Path(out_dir) / f"{name}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            frame.to_csv(path, index=False)


def check(config: dict) -> None:
    """What the schema cannot see: every workload has a row count, and R is not larger than it."""
    from storebench.core.config import ParamsError

    for workload in config["workloads"]:
        if workload not in config["rows"]:
            raise ParamsError(f"params.yaml: {EXPERIMENT}.rows has no entry for workload {workload!r}")
        rs = config["rows_per_key"] + config.get("server_grid", {}).get("rows_per_key", [])
        too_big = [r for r in rs if r > config["rows"][workload]]
        if too_big:
            raise ParamsError(f"params.yaml: {EXPERIMENT}.rows_per_key (or server_grid.rows_per_key) {too_big} "
                              f"is larger than the {workload} dataset at this scale ({config['rows'][workload]} rows, "
                              f"{EXPERIMENT}.rows.{workload})")


def run(config: dict, out_dir=None, progress: bool = True, services: ServicePool | None = None) -> DataloaderRun:
    """Every workload x system: write (timed), then every loader configuration."""
    check(config)
    result = DataloaderRun(EpochRows())
    pool = services or ServicePool(config["endpoints"])
    systems = sorted(config["systems"], key=_run_order)
    data = {}
    for workload in config["workloads"]:
        samples = sample_data.load(workload, config["rows"][workload])
        data[workload] = samples, row_fingerprints(samples.columns)
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
    location = "memory" if cls.capabilities.in_memory_only else LOCATION
    if location != LOCATION:
        result.notes.append(f"{system} keeps its data in memory only: measured at memory")
    with open_system(system, location, pool) as store:
        writers = config.get("writers", 2) if system in PARALLEL_WRITERS else 1
        how = PARALLEL_WRITERS.get(system, "one writer") if writers > 1 else "one writer"
        points = grid(config, system, table=False)
        source_run = SourceRun(result, config, workload, samples, fingerprints, system, store.system_version(),
                               f"{store.client_package} {package_version(store.client_package)}", location, progress)
        try:
            for r in sorted({p.rows_per_key for p in points}):
                layout = KeyLayout(len(samples), r)
                for repeat in range(config["repeats"]):
                    store.clear()
                    start = time.perf_counter()
                    write_objects(store, samples, layout, writers)
                    seconds = time.perf_counter() - start
                    usage = _usage(store)
                    result.writes.append(source_run.write_row(repeat, seconds, r, writers, how, usage))
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
    table = cls(root, chunk_rows=chunk)
    source_run = SourceRun(result, config, workload, samples, fingerprints, system, table.system_version(),
                           f"{cls.client_package} {package_version(cls.client_package)}", LOCATION, progress)
    try:
        for repeat in range(config["repeats"]):
            start = time.perf_counter()
            table.write(samples)
            table.flush()
            seconds = time.perf_counter() - start
            usage = table.disk_usage().bytes
            how = "one write per column array (TileDB's own threads)" if system == "tiledb-attrs" else \
                "all columns written concurrently (async futures)"
            result.writes.append(source_run.write_row(repeat, seconds, 1, 1, how, usage))
        table.close()
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


# ------------------------------------------------------------------------------- analysis
def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean epoch time and 95% CI per configuration (NaN prefetch for map-style kept as a key)."""
    if rows.empty:
        return pd.DataFrame(columns=CONFIG_KEYS + ["mean", "ci95", "rows_per_second", "repeats"])
    out = []
    keyed = rows.assign(prefetch=rows.prefetch.fillna(0))
    for key, group in keyed.groupby(CONFIG_KEYS, sort=False):
        mean, half, n = mean_ci(group.seconds)
        out.append({**dict(zip(CONFIG_KEYS, key)), "layout": group.layout.iloc[0], "mean": mean, "ci95": half,
                    "rows_per_second": group.n_rows.iloc[0] / mean, "repeats": n,
                    "system_version": group.system_version.iloc[0]})
    frame = pd.DataFrame(out)
    frame["prefetch"] = frame.prefetch.replace(0, np.nan)
    return frame


def best_configs(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload and system, the fastest configuration (lowest mean epoch time)."""
    if summary.empty:
        return summary
    best = summary.loc[summary.groupby(["workload", "system"], sort=False)["mean"].idxmin()]
    return best.reset_index(drop=True)


def write_summary(writes: pd.DataFrame) -> pd.DataFrame:
    out = []
    for key, group in writes.groupby(["workload", "system", "rows_per_key", "writers", "write_method"], sort=False):
        mean, half, n = mean_ci(group.seconds)
        out.append({**dict(zip(["workload", "system", "rows_per_key", "writers", "write_method"], key)),
                    "mean": mean, "ci95": half, "repeats": n, "disk_usage_bytes": group.disk_usage_bytes.iloc[-1]})
    return pd.DataFrame(out)


# Our layout -> the seed's store and whether it is the seed's own layout (Sec 3.4) or its future work.
SEED_LAYOUTS = {
    "rocksdb": ("rocksdb", "the seed's (R rows per key)"),
    "tiledb-attrs": ("tiledb", "the seed's (one cell per row, an attribute per column)"),
    "tiledb": ("tiledb", "future work (R rows per cell, as bytes)"),
    "tensorstore": ("tensorstore", "the seed's for text and graph (kvstore); not its layout for images"),
    "tensorstore-zarr": ("tensorstore", "the seed's for images (array driver; zarr here, N5 there); "
                                        "not its layout for graphs (kvstore there)"),
}


def table1(best: pd.DataFrame) -> pd.DataFrame:
    """Our best configuration per workload and store beside the seed's Table 1 (matched by store)."""
    paper = paper001.table1().set_index(["workload", "system"])
    rows = []
    for _, b in best.iterrows():
        seed_store, layout = SEED_LAYOUTS.get(b.system, (None, "not in the seed"))
        theirs = paper.loc[(b.workload, seed_store)] if (b.workload, seed_store) in paper.index else None
        rows.append({"workload": b.workload, "system": b.system, "layout": layout,
                     "ours": paper001.config_text(b.to_dict()),
                     "epoch (s)": f"{b['mean']:.3g} ± {b.ci95:.2g}" if pd.notna(b.ci95) else f"{b['mean']:.3g}",
                     "seed Table 1": paper001.config_text(theirs.to_dict()) if theirs is not None else "-"})
    return pd.DataFrame(rows)


def versus_baseline(best: pd.DataFrame) -> pd.DataFrame:
    """Fig 11: each store's best epoch time vs the ext4 baseline's best (speed-up > 1: faster than ext4)."""
    out = []
    for workload, group in best.groupby("workload", sort=False):
        base = group[group.system == BASELINE]
        if base.empty:
            continue
        base = base.iloc[0]
        for _, b in group.iterrows():
            out.append({"workload": workload, "system": b.system, "best_config": paper001.config_text(b.to_dict()),
                        "seconds": b["mean"], "ci95": b.ci95, "speedup_vs_ext4": base["mean"] / b["mean"],
                        "speedup_ci95": _ratio_ci(base["mean"], base.ci95, b["mean"], b.ci95)})
    return pd.DataFrame(out)


def _ratio_ci(num, num_ci, den, den_ci) -> float:
    def rel(ci, mean):
        return 0.0 if pd.isna(ci) or mean == 0 else ci / mean
    return float(num / den * np.hypot(rel(num_ci, num), rel(den_ci, den)))


def rows_per_key_effect(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload and byte store: best map-style time at R=1 vs at its best R (Figs 3, 6, 9)."""
    out = []
    maps = summary[(summary.loader == "map") & ~summary.system.isin(list(TABLES))]
    for (workload, system), group in maps.groupby(["workload", "system"], sort=False):
        by_r = group.loc[group.groupby("rows_per_key")["mean"].idxmin()].set_index("rows_per_key")
        if 1 not in by_r.index or len(by_r) < 2:
            continue
        best_r = by_r["mean"].idxmin()
        one, best = by_r.loc[1], by_r.loc[best_r]
        out.append({"workload": workload, "system": system, "best_rows_per_key": int(best_r),
                    "r1_seconds": one["mean"], "best_seconds": best["mean"], "speedup": one["mean"] / best["mean"],
                    "speedup_ci95": _ratio_ci(one["mean"], one.ci95, best["mean"], best.ci95)})
    return pd.DataFrame(out)


def map_vs_iterable(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload and store: the best map-style time / the best iterable-style time (> 1: iterable faster)."""
    out = []
    for (workload, system), group in summary.groupby(["workload", "system"], sort=False):
        kinds = {k: g.loc[g["mean"].idxmin()] for k, g in group.groupby("loader")}
        if {"map", "iterable"} <= set(kinds):
            m, i = kinds["map"], kinds["iterable"]
            out.append({"workload": workload, "system": system, "best_map": paper001.config_text(m.to_dict()),
                        "best_iterable": paper001.config_text(i.to_dict()), "map_over_iterable": m["mean"] / i["mean"],
                        "ratio_ci95": _ratio_ci(m["mean"], m.ci95, i["mean"], i.ci95)})
    return pd.DataFrame(out)


def workers_effect(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload, store, loader: best time with 0 workers / best with the most workers measured."""
    out = []
    for (workload, system, loader), group in summary.groupby(["workload", "system", "loader"], sort=False):
        by_w = group.groupby("workers")["mean"].min()
        if len(by_w) > 1:
            out.append({"workload": workload, "system": system, "loader": loader,
                        "workers": f"{by_w.index.min()} -> {by_w.index.max()}",
                        "speedup": by_w.iloc[0] / by_w.iloc[-1]})
    return pd.DataFrame(out)


def figure(summary: pd.DataFrame, writes: pd.DataFrame):
    """Fig 1 (write cost), Fig 11 (best of each store vs ext4), Figs 3/6/9 (rows per key) and the
    workers sweep, one column per workload."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    workloads = list(dict.fromkeys(summary.workload)) or list(dict.fromkeys(writes.workload))
    fig, axes = plt.subplots(4, len(workloads), figsize=(5.6 * len(workloads), 17), squeeze=False)
    best = best_configs(summary)
    ws = write_summary(writes) if len(writes) else pd.DataFrame()
    colors = plots.palette(sorted(set(summary.system) | set(writes.system if len(writes) else [])))
    for col, workload in enumerate(workloads):
        _bars(axes[0][col], ws[ws.workload == workload] if len(ws) else ws,
              lambda r: f"{r.system}" + (f" R={r.rows_per_key}" if r.system not in TABLES else ""),
              f"{workload}: conversion into the store (Fig 1)", "write time (s)")
        b = best[best.workload == workload]
        _bars(axes[1][col], b, lambda r: r.system, f"{workload}: best loader per store (Fig 11)", "epoch time (s)")
        base = b[b.system == BASELINE]
        if len(base):
            axes[1][col].axhline(base["mean"].iloc[0], color="0.3", linestyle="--", linewidth=1, label="ext4 best")
            axes[1][col].legend(fontsize=7)
        ax = axes[2][col]
        maps = summary[(summary.workload == workload) & (summary.loader == "map") & ~summary.system.isin(list(TABLES))]
        for system, g in maps.groupby("system", sort=False):
            by_r = g.loc[g.groupby("rows_per_key")["mean"].idxmin()].sort_values("rows_per_key")
            ax.errorbar(by_r.rows_per_key, by_r["mean"], yerr=by_r.ci95.fillna(0), marker="o", capsize=3,
                        label=system, color=colors.get(system))
        ax.set(xscale="log", yscale="log", title=f"{workload}: map-style, rows per key (Figs 3, 6, 9)",
               xlabel="rows per key R", ylabel="best epoch time (s)")
        ax.legend(fontsize=7)
        ax = axes[3][col]
        for (system, loader), g in summary[summary.workload == workload].groupby(["system", "loader"], sort=False):
            by_w = g.groupby("workers")["mean"].min()
            ax.plot(by_w.index, by_w.values, marker="o", linestyle="-" if loader == "map" else "--",
                    color=colors.get(system), label=f"{system} {loader}")
        ax.set(yscale="log", title=f"{workload}: workers (solid map, dashed iterable)", xlabel="DataLoader workers W",
               ylabel="best epoch time (s)")
        ax.legend(fontsize=6, ncol=2)
    versions = "; ".join(f"{s}: {v}" for s, v in summary.groupby("system", sort=False).system_version.first().items())
    plots.footnote(fig, f"Ours: mean of the repeats, error bars 95% CI, every row verified. Versions: {versions}. "
                        f"The seed publishes no numbers for these figures ({paper001.MACHINE}).")
    fig.tight_layout()
    return fig


def _bars(ax, frame: pd.DataFrame, label, title: str, ylabel: str) -> None:
    if frame is None or frame.empty:
        ax.axis("off")
        return
    labels = [label(r) for r in frame.itertuples()]
    ax.bar(range(len(frame)), frame["mean"], yerr=frame.ci95.fillna(0), capsize=2, color="0.6")
    ax.set_xticks(range(len(frame)), labels, rotation=60, ha="right", fontsize=7)
    ax.set(yscale="log", title=title, ylabel=ylabel)


# ------------------------------------------------------------------------------- findings
def verdict(holds: bool | None) -> str:
    return "not comparable" if holds is None else ("holds" if holds else "does not hold")


def findings(summary: pd.DataFrame, writes: pd.DataFrame, overheads: pd.DataFrame):
    """The seed's Secs 5.1-5.8 statements checked in our numbers, a summary per workload, Table 1."""
    from storebench.report.findings import Findings

    best = best_configs(summary)
    vs = versus_baseline(best)
    rk = rows_per_key_effect(summary)
    mi = map_vs_iterable(summary)
    lines = ["| workload | best store here | its configuration | speed-up over ext4 (best vs best) | seed | verdict |",
             "|---|---|---|---|---|---|"]
    for workload, group in vs.groupby("workload", sort=False):
        top = group.loc[group.seconds.idxmin()]
        seed, holds = _workload_verdict(workload, group)
        lines.append(f"| {workload} | {top.system} | {top.best_config} | {top.speedup_vs_ext4:.2f}x "
                     f"± {top.speedup_ci95:.2f} | {seed} | {verdict(holds)} |")
    checks = _checks(summary, best, vs, rk, writes)
    check_lines = ["| seed statement | ours | verdict |", "|---|---|---|"] + [
        f"| {paper001.FINDINGS[key]} | {ours} | {verdict(holds)} |" for key, ours, holds in checks]
    over_lines = _overhead_lines(overheads)
    n_held = sum(1 for _, _, h in checks if h)
    headline = (f"seed 001 loaders: {n_held} of {len(checks)} of the paper's statements hold here; "
                + "; ".join(f"{w}: best {g.loc[g.seconds.idxmin()].system} "
                            f"({g.loc[g.seconds.idxmin()].speedup_vs_ext4:.2f}x ext4)"
                            for w, g in vs.groupby("workload", sort=False)))
    t1 = table1(best)
    table1_lines = ["**Table 1, ours beside the seed's** (M map-style, I iterable; R rows per key, W workers, B batch, "
                    "PF prefetch):", "", "| workload | store | layout | ours | epoch (s) | seed |", "|---|---|---|---|---|---|"]
    table1_lines += [f"| {r.workload} | {r.system} | {r.layout} | {r.ours} | {r._5} | {r._6} |" for r in t1.itertuples()]
    rk_lines = ["**Rows per key** (map-style, best over B and W at each R):", "",
                "| workload | store | best R | R=1 (s) | best R (s) | speed-up |", "|---|---|---|---|---|---|"]
    rk_lines += [f"| {r.workload} | {r.system} | {r.best_rows_per_key} | {r.r1_seconds:.3g} | {r.best_seconds:.3g} | "
                 f"{r.speedup:.2f}x ± {r.speedup_ci95:.2f} |" for r in rk.itertuples()]
    mi_lines = ["**Map vs iterable** (best of each; > 1: iterable faster):", "",
                "| workload | store | best map | best iterable | map / iterable |", "|---|---|---|---|---|"]
    mi_lines += [f"| {r.workload} | {r.system} | {r.best_map} | {r.best_iterable} | {r.map_over_iterable:.2f}x ± "
                 f"{r.ratio_ci95:.2f} |" for r in mi.itertuples()]
    text = "\n".join([
        f"**Paper (seed 001, Secs 5.1-5.8, Table 1):** {paper001.MACHINE}; RocksDB, TileDB, TensorStore vs ext4 for "
        "text, image and graph loaders; only Table 1 and statements in the text are published (no figure values).",
        "", "**Ours** (this machine: 2 cores shared by the loader, its workers and any server; W up to "
        f"{int(summary.workers.max()) if len(summary) else 0} instead of the seed's 32):", "",
        *lines, "", *check_lines, "", *table1_lines, "", *rk_lines, "", *mi_lines, "", *over_lines, "",
        "Ratios are within one run; every row delivered was checked against its fingerprint from ingest."])
    return Findings(headline, text, overview_metrics(vs))


SEED_BEST = {  # Secs 5.2-5.8: the seed's best store among its three, and whether any beat ext4
    "text": ("rocksdb", False), "graph": ("tensorstore", False), "image": ("tensorstore", True)}


def _workload_verdict(workload: str, group: pd.DataFrame) -> tuple[str, bool | None]:
    """The seed's finding for ``workload`` (best of its three stores; beats ext4 or not) checked here."""
    if workload not in SEED_BEST:
        return "-", None
    best_store, beats = SEED_BEST[workload]
    seeds = group[group.system.map(lambda s: SEED_LAYOUTS.get(s, (None,))[0]).notna()]
    if seeds.empty:
        return "-", None
    top = seeds.loc[seeds.seconds.idxmin()]
    ours_beats = bool((seeds.speedup_vs_ext4 > 1).any())
    seed = f"best of the three: {best_store}; {'a store beats' if beats else 'none beats'} ext4"
    ours = SEED_LAYOUTS[top.system][0]
    return f"{seed} (ours: {top.system}; {'a store beats' if ours_beats else 'none beats'} ext4)", \
        ours == best_store and ours_beats == beats


def _checks(summary, best, vs, rk, writes) -> list[tuple[str, str, bool | None]]:
    out = []
    ws = write_summary(writes) if len(writes) else pd.DataFrame()
    rock = ws[ws.system == "rocksdb"] if len(ws) else ws
    if len(rock) and rock.rows_per_key.nunique() > 1:
        parts, holds = [], True
        for workload, g in rock.groupby("workload", sort=False):
            r1 = g[g.rows_per_key == 1]["mean"]
            others = ws[(ws.workload == workload) & ~((ws.system == "rocksdb") & (ws.rows_per_key == 1))]["mean"]
            if len(r1) and len(others):
                slowest = r1.iloc[0] >= others.max()
                holds &= slowest
                parts.append(f"{workload}: R=1 {r1.iloc[0]:.3g} s, R={int(g.rows_per_key.max())} "
                             f"{g[g.rows_per_key == g.rows_per_key.max()]['mean'].iloc[0]:.3g} s"
                             + ("" if slowest else " (not the slowest)"))
        out.append(("write_rocksdb_r1_slowest", "; ".join(parts), holds if parts else None))
    for key, workload, system in (("write_text_tiledb_best", "text", "tiledb"),
                                  ("write_image_tensorstore_best", "image", "tensorstore")):
        g = ws[ws.workload == workload] if len(ws) else ws
        if len(g) and g.system.str.startswith(system).any():
            top = g.loc[g["mean"].idxmin()]
            out.append((key, f"fastest: {top.system} R={int(top.rows_per_key)} ({top['mean']:.3g} s)",
                        top.system.startswith(system)))
    if len(rk):
        rock_rk = rk[rk.system == "rocksdb"]
        if len(rock_rk):
            measured = ", ".join(f"{r.workload}: R={r.best_rows_per_key} ({r.speedup:.1f}x R=1)"
                                 for r in rock_rk.itertuples())
            grid_rs = sorted(summary[summary.system == "rocksdb"].rows_per_key.unique())
            holds = all(r.best_rows_per_key >= 128 for r in rock_rk.itertuples())  # the seed's range, on our grid
            out.append(("rocksdb_best_r", f"{measured}; R measured: {', '.join(map(str, grid_rs))}", holds))
    seed_text = best[(best.workload == "text") & best.system.isin(list(paper001.SYSTEMS.values()) + ["tiledb-attrs"])]
    if len(seed_text):
        top = seed_text.loc[seed_text["mean"].idxmin()]
        out.append(("text_map_rocksdb_best", f"fastest seed store for text: {top.system} "
                    f"({paper001.config_text(top.to_dict())}, {top['mean']:.3g} s)", top.system == "rocksdb"))
    image_it = summary[(summary.workload == "image") & (summary.loader == "iterable")]
    if len(image_it):
        top = image_it.loc[image_it["mean"].idxmin()]
        out.append(("image_iterable_tensorstore_best", f"fastest iterable for images: {top.system} "
                    f"({paper001.config_text(top.to_dict())}, {top['mean']:.3g} s)", top.system.startswith("tensorstore")))
    if len(vs):
        beats = vs[(vs.system.isin(["rocksdb", "tensorstore", "tensorstore-zarr"])) & (vs.speedup_vs_ext4 > 1)]
        where = sorted(set(beats.workload))
        out.append(("stores_beat_ext4_only_for_images",
                    "RocksDB/TensorStore beat ext4 on: " + (", ".join(where) or "no workload"), where == ["image"]))
    return out


def _overhead_lines(overheads: pd.DataFrame) -> list[str]:
    if overheads is None or overheads.empty:
        return ["Loader cost vs a bare loop: not measured at this scale."]
    lines = ["**Loader cost** (samples/s of the loader / of a bare loop of the same store calls, no workers, "
             "no decoding; target >= 0.5 for the batched map-style and the iterable loader on localfs and RocksDB; "
             f"both loops in one process with {overheads['heap'].iloc[0] if 'heap' in overheads else 'the allocator default'}, "
             "see storebench.loaders.heap):",
             "", "| workload | system | loader | B | PF | loader rows/s | bare rows/s | ratio | target |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in overheads.itertuples():
        target = ("met" if r.loader_vs_bare >= 0.5 else "missed") if r.system in ("localfs", "rocksdb") else "-"
        pf = "" if pd.isna(r.prefetch) else int(r.prefetch)
        lines.append(f"| {r.workload} | {r.system} | {r.loader} | {r.batch_size} | {pf} | "
                     f"{r.loader_rows_per_second:,.0f} | {r.bare_rows_per_second:,.0f} | {r.loader_vs_bare:.2f} | "
                     f"{target} |")
    return lines


def overview_metrics(vs: pd.DataFrame) -> tuple:
    """Per system and workload, the best loader's speed-up over ext4's best (index overview)."""
    from storebench.report.findings import Metric

    return tuple(Metric(r.system, f"best loader vs ext4, {r.workload} (dataloaders)", float(r.speedup_vs_ext4),
                        float(r.speedup_ci95), 1.0, "x")
                 for r in vs.itertuples() if r.system != BASELINE)
