"""Measure input scalability (seed 001 Sec 5.9, Fig 12): text x1..x10 and graph x1..x50, made by
concatenating each dataset with itself (``Samples.scaled``), written into each store (timed) and
read whole by that store's best loader configuration, with the stores' caches as a parameter.

Loader configurations come from the dataloaders measurement's best configurations
(``<results root>/dataloaders/``'s ``dataloaders_best`` table, its parts read together: the results root this
measurement writes under), else from the seed's Table 1 with W capped to ``max_workers``; the rows say which
(``config_source``). The x1 input may be whole copies of a dataset (``base_rows`` beyond its rows: the text
sample to the seed's 228 MB); every row records its input's rows and bytes. Writes and epochs follow the
time-capped repeat policy (``long_cell_s``); stores in ``memory_systems`` sit on tmpfs.
Caches: RocksDB's block cache (``block_cache_mib``; the seed's text says 50 MB for its version) and
TileDB's VFS read-ahead cache (``tiledb_read_ahead_mib``; TileDB 2.30 has no tile cache any more, this
is its one cache and 10 MiB is its default, the seed's "10 MB"). The seed did not vary them; we do.
``None`` means the library's default.

Tables: ``scalability`` (one row per epoch), ``skipped`` and ``notes``.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Literal

import pandas as pd
from pydantic import Field, model_validator

from storebench.core.experiment import ResultsDir, recorded_table
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.core.settings import NonNegativeFloat, PositiveFloat, PositiveInt, Settings as Base, params_hash
from storebench.data.rowformats import KeyLayout, row_format
from storebench.data.samples import row_fingerprints
from storebench.experiments.common import Run, Skipped, record_skipped
from storebench.experiments.ml_storage_study import published as paper001
from storebench.experiments.ml_storage_study.dataloaders.measure import (LOCATION, LoaderSystem, PARALLEL_WRITERS, Point,
                                                                 capped_cell, capped_policy, data_size,
                                                                 loader_dataset, point_of, workload_samples,
                                                                 write_method, write_objects)
from storebench.loaders import rows as rowloaders
from storebench.loaders.opener import StoreOpener, start_method
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system
from storebench.stores.tables import TABLES
from storebench.testbed.locations import store_root

EXPERIMENT = "scalability"
MIB = 1 << 20
Workload = Literal["text", "image", "graph"]


CacheMiB = list[NonNegativeFloat | None]  # null: the library's default


class Settings(Base):
    workloads: list[Workload] = Field(min_length=1)
    base_rows: dict[Workload, PositiveInt]  # rows of the x1 input (beyond the dataset: whole copies of it)
    factors: dict[Workload, Annotated[list[PositiveInt], Field(min_length=1)]]  # x the base dataset
    systems: list[LoaderSystem] = Field(min_length=1)
    max_workers: PositiveInt  # W cap of the seed's Table 1 (fallback configurations)
    block_cache_mib: Annotated[CacheMiB, Field(min_length=1)] = [None]  # RocksDB block cache
    tiledb_read_ahead_mib: Annotated[CacheMiB, Field(min_length=1)] = [None]  # TileDB VFS read-ahead cache
    writers: PositiveInt = 2  # parallel writer threads where the store takes them
    chunk_rows: PositiveInt = 64
    memory_systems: list[LoaderSystem] = []  # these hold their data on tmpfs (location memory), not disk-warm
    long_cell_s: PositiveFloat | None = None  # the time cap (dataloaders.measure.capped_policy) ...
    long_cell_repeats: Annotated[int, Field(ge=3, strict=True)] = 3  # ... repeats of a cell longer than it

    @model_validator(mode="after")
    def _every_workload_sized(self):
        missing = [w for w in self.workloads if w not in self.base_rows or w not in self.factors]
        if missing:
            raise ValueError(f"base_rows and factors need an entry for workload(s) {missing}")
        return self


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    result = run(settings, results_root=out.root, progress=progress)
    out.write("scalability", result.rows)
    record_skipped(result, out)


def loader_configs(config, results_root=None) -> tuple[dict, str]:
    """(workload, system) -> Point, and where they came from: the dataloaders measurement's best
    configurations under ``results_root`` (default results/; its parts read together), else the seed's Table 1."""
    from storebench.paths import ROOT

    found = recorded_table(Path(results_root or ROOT / "results"), "dataloaders", "dataloaders_best")
    configs, source = {}, "seed 001 Table 1 (W capped)"
    if found is not None and len(found[0]):
        best, manifest = found
        if "mean" in best:  # parts that measured one store apart (e.g. by R): its fastest over them
            best = best.sort_values("mean", kind="stable").drop_duplicates(["workload", "system"])
        configs = {(r["workload"], r["system"]): point_of(r) for r in best.to_dict("records")}
        source = f"dataloaders/dataloaders_best.csv of run {manifest.get('run_id', '')} (the dataloaders measurement)"
    cap = config.get("max_workers", 2)
    for (workload, system), c in paper001.TABLE1.items():
        for name in (system, "tiledb-attrs" if system == "tiledb" else system):
            configs.setdefault((workload, name), Point(c["loader"], c.get("rows_per_key", 1), c["batch_size"],
                                                       c.get("prefetch"), min(c["workers"], cap)))
    return configs, source


def cache_settings(config: dict, system: str) -> list[dict]:
    """The store options to sweep for ``system`` (one {} for stores without a cache knob here)."""
    def option(mib):
        return None if mib is None else int(mib * MIB)
    if system == "rocksdb":
        return [{"block_cache_bytes": option(m)} for m in config.get("block_cache_mib", [None])]
    if system in ("tiledb", "tiledb-attrs"):
        return [{"read_ahead_cache_bytes": option(m)} for m in config.get("tiledb_read_ahead_mib", [None])]
    return [{}]


def run(config: Settings, results_root=None, progress: bool = True, services: ServicePool | None = None) -> Run:
    from storebench.experiments.ml_storage_study.dataloaders.measure import EpochRows

    result = Run(EpochRows())
    result.writer.experiment = EXPERIMENT
    configs, source = loader_configs(config, results_root)
    result.notes.append(f"loader configurations from {source}")
    pool = services or ServicePool(config["endpoints"])
    plan = [(w, f, s, c) for w in config["workloads"] for f in config["factors"][w] for s in config["systems"]
            for c in cache_settings(config, s)]
    plan.sort(key=lambda p: (start_method(p[2]) is not None, p[0], p[1]))  # forking systems first
    base = {w: workload_samples(w, config["base_rows"][w]) for w in config["workloads"]}
    try:
        for workload, factor, system, cache in tqdm(plan, desc=EXPERIMENT, unit="config", disable=not progress):
            point = configs.get((workload, system))
            if point is None:
                result.skipped.append(Skipped(system, LOCATION, f"{workload} x{factor}", "no loader configuration"))
                continue
            if system in TABLES and base[workload][0].modality not in TABLES[system].modalities:
                result.skipped.append(Skipped(system, LOCATION, f"{workload}", f"{system} holds no {workload} rows"))
                continue
            samples, copies = base[workload][0].scaled(factor), base[workload][1]
            result.writer.rows += _measure(config, workload, factor, samples, system, point, cache, pool, source,
                                           data_size(samples, copies * factor))
    finally:
        if services is None:
            pool.close()
    return result


def _measure(config, workload, factor, samples, system, point: Point, cache: dict, pool, source, size: dict
             ) -> list[dict]:
    fingerprints = row_fingerprints(samples.columns)
    point = Point(point.loader, min(point.rows_per_key, len(samples)), point.batch_size, point.prefetch,
                  point.workers)
    writes, data_source, cleanup, version, client, write_method = _write(config, workload, samples, system, point,
                                                                          cache, pool)
    try:
        dataset, batches = loader_dataset(data_source, samples.modality, fingerprints, point)
        rowloaders.run_epoch(rowloaders.row_loader(dataset, 0, batches=batches))  # warm-up, verifies every row
        workload_fields = dict(experiment=EXPERIMENT, workload=workload, dataset=samples.name, factor=factor,
                               n_rows=len(samples), system=system, loader=point.loader,
                               rows_per_key=point.rows_per_key, batch_size=point.batch_size,
                               prefetch=point.prefetch, workers=point.workers)

        def row(repeat: int, epoch, startup: float) -> dict:
            return {**workload_fields, "repeat": repeat, **size, "n_rows": len(samples), "dataset": samples.name,
                    "write_seconds": writes[repeat % len(writes)], "write_repeats_seconds": _joined(writes),
                    "write_method": write_method,
                    "read_seconds": epoch.seconds,
                    "startup_seconds": startup, "rows_per_second": epoch.rows / epoch.seconds,
                    "cpu_seconds": epoch.cpu_seconds, "config_source": source,
                    "block_cache_bytes": cache.get("block_cache_bytes"),
                    "tiledb_read_ahead_cache_bytes": cache.get("read_ahead_cache_bytes"),
                    "cache_setting": _cache_text(system, cache), "location": location_of(config, system),
                    "verified": True, "system_version": version,
                    "client_version": client, **machine(), "params_hash": params_hash({**workload_fields, **cache}),
                    "scale": config["scale"], "load_avg_1m": os.getloadavg()[0]}
        dataset, batches = loader_dataset(data_source, samples.modality, fingerprints, point)
        cell, policy = rowloaders.measure_epochs(dataset, point.workers, start_method(system), batches,
                                                 capped_policy(config), row)
        rows = cell.annotated_rows(policy)
    finally:
        data_source.close()
        cleanup()
    return rows


def _timed_writes(config, write) -> list[float]:
    """Seconds of each write of the dataset, repeated by the (time-capped) policy (a write is never looped:
    it replaces)."""
    def once(repeat: int):
        start = time.perf_counter()
        write()
        return time.perf_counter() - start, None
    return capped_cell(config, once)[0].values


def _joined(seconds: list[float]) -> str:
    """Every timed write of the cell, ';'-separated (one CSV cell): the analysis takes the write's CI over them,
    not over the read rows (a cell may have more or fewer writes than reads)."""
    return ";".join(f"{s:.6g}" for s in seconds)


def _cache_text(system: str, cache: dict) -> str:
    if not cache:
        return "no cache knob (page cache only)"
    (key, value), = cache.items()
    what = "RocksDB block cache" if key == "block_cache_bytes" else "TileDB VFS read-ahead cache"
    return f"{what} {'default' if value is None else f'{value / MIB:g} MiB'}"


def location_of(config, system: str) -> str:
    """disk-warm, or memory (tmpfs) for ``memory_systems``."""
    return "memory" if system in config.get("memory_systems", []) else LOCATION


def _write(config, workload, samples, system, point: Point, cache: dict, pool):
    """Timed conversions (repeated by the policy), a source over the last one, what removes it, the system's
    and client's versions and how it was written."""
    if system in TABLES:
        cls = TABLES[system]
        root = store_root(f"{system}-{workload}-scaled", LOCATION)
        options = {"chunk_rows": config.get("chunk_rows", 64), **cache}
        table = cls(root, **options)
        seconds = _timed_writes(config, lambda: table.write(samples))
        table.close()
        source = rowloaders.TableRows(rowloaders.TableOpener(cls, str(root), options), len(samples))
        return seconds, source, table.clear, table.system_version(), \
            f"{cls.client_package} {package_version(cls.client_package)}", table.write_method()
    context = open_system(system, location_of(config, system), pool, **cache)
    store = context.__enter__()
    writers = config.get("writers", 2) if system in PARALLEL_WRITERS else 1
    layout = KeyLayout(len(samples), point.rows_per_key)
    def write():
        store.clear()
        write_objects(store, samples, layout, writers)
    seconds = _timed_writes(config, write)
    source = rowloaders.StoreRows(StoreOpener.of(store, **cache), layout, row_format(samples))

    def cleanup():
        store.clear()
        context.__exit__(None, None, None)
    return seconds, source, cleanup, store.system_version(), \
        f"{store.client_package} {package_version(store.client_package)}", write_method(system, writers)


