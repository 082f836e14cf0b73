"""Measure CPU and memory of the loaders (seed 001 Sec 5.11, Figs 16-21): epochs of each store's best
loader configuration per workload (at least ``repeats`` of them and ``min_seconds``), with CPU%, RSS and
VSZ (the virtual memory the seed plotted) of the whole process tree sampled from outside every
``interval_s`` (storebench.testbed.resources), per component: the client, its DataLoader workers, and the
server's processes for server stores.

Each store's loader runs in a FRESH client process of its own (resources/client.py): this process writes
the workload into the store (untimed, unsampled), hands the client the store's address and the rows'
fingerprints, and samples the client's tree while it reads. A long-lived client would carry what earlier
stores left in it (its RSS climbed with the run order). The client's memory after its imports (before it
opens the store) is recorded beside, so a store's own share can be told from the interpreter's and torch's.

Data sizes: ``rows`` of each workload, concatenated ``factors`` times (the seed's text file is 228 MB; the
offline Sentiment140 sample of 100,000 tweets is concatenated to reach about that, and the rows say so).

Loader configurations come from the dataloaders measurement's ``dataloaders_best`` table
(``<results root>/dataloaders/dataloaders_best.csv``: the results root this measurement writes under), else
the seed's Table 1 with W capped, as in the scalability experiment. 100% CPU is one core.

Tables: ``resources`` (per workload, store and process group: mean and peak CPU%, peak and mean RSS, peak
and lowest VSZ, the client's memory after imports and after the warm-up, the dataset's size) and
``resources_timeline`` (every sample), plus ``skipped`` and ``notes``.
"""
from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import Field, model_validator

from storebench.core.experiment import ResultsDir
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.core.settings import PositiveFloat, PositiveInt, Settings as Base
from storebench.data import samples as sample_data
from storebench.data.rowformats import KeyLayout, row_format
from storebench.data.samples import row_fingerprints
from storebench.experiments.common import Run, Skipped, record_skipped
from storebench.experiments.ml_storage_study import published as paper001
from storebench.experiments.ml_storage_study.dataloaders.measure import LOCATION, LoaderSystem, write_objects
from storebench.experiments.ml_storage_study.resources.client import ClientProcess
from storebench.experiments.ml_storage_study.scalability.measure import loader_configs
from storebench.loaders import rows as rowloaders
from storebench.loaders.opener import StoreOpener, start_method
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system
from storebench.stores.tables import TABLES
from storebench.testbed.locations import store_root
from storebench.testbed.resources import ResourceSampler

EXPERIMENT = "resources"
Workload = Literal["text", "image", "graph"]




class Settings(Base):
    workloads: list[Workload] = Field(min_length=1)
    rows: dict[Workload, PositiveInt]  # rows of each workload's dataset
    factors: dict[Workload, PositiveInt] = {}  # the rows concatenated this many times (missing: 1)
    systems: list[LoaderSystem] = Field(min_length=1)
    max_workers: PositiveInt  # W cap of the seed's Table 1 (fallback configurations)
    interval_s: PositiveFloat  # sampling tick (s)
    min_seconds: PositiveFloat  # epochs repeated inside the sampler until at least this long
    chunk_rows: PositiveInt

    @model_validator(mode="after")
    def _rows_cover_workloads(self):
        missing = [w for w in self.workloads if w not in self.rows]
        if missing:
            raise ValueError(f"rows has no entry for workload(s) {missing}")
        return self


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    result = run(settings, results_root=out.root, progress=progress)
    out.write("resources", result.rows)
    out.write("resources_timeline", pd.concat(result.samples, ignore_index=True) if result.samples else pd.DataFrame())
    record_skipped(result, out)


def run(config: Settings, results_root=None, progress: bool = True, services: ServicePool | None = None) -> Run:
    from storebench.experiments.ml_storage_study.dataloaders.measure import EpochRows

    result = Run(EpochRows())
    result.samples = []
    configs, source = loader_configs(config, results_root)
    result.notes.append(f"loader configurations from {source}")
    pool = services or ServicePool(config.endpoints)
    systems = sorted(config.systems)
    try:
        for workload in config.workloads:
            samples = sample_data.load(workload, config.rows[workload]).scaled(config.factors.get(workload, 1))
            fingerprints = row_fingerprints(samples.columns)
            for system in tqdm(systems, desc=f"{EXPERIMENT} {workload}", disable=not progress, leave=False):
                point = configs.get((workload, system))
                if point is None or (system in TABLES and samples.modality not in TABLES[system].modalities):
                    result.skipped.append(Skipped(system, LOCATION, workload, "no loader configuration for it"
                                                  if point is None else f"{system} holds no {workload} rows"))
                    continue
                _sample_one(result, config, workload, samples, fingerprints, system, point, pool, source)
    finally:
        if services is None:
            pool.close()
    return result


def _sample_one(result, config, workload, samples, fingerprints, system, point, pool, source) -> None:
    point = type(point)(point.loader, min(point.rows_per_key, len(samples)), point.batch_size, point.prefetch,
                        point.workers)
    label = f"{workload}/{system}"
    with _loaded(config, workload, samples, system, point, pool) as (data_source, server_pids, version, client), \
            tempfile.TemporaryDirectory(prefix="sb-resources-") as folder:
        spec = Path(folder) / "client.pickle"
        spec.write_bytes(pickle.dumps({"source": data_source, "modality": samples.modality,
                                       "fingerprints": fingerprints, "point": point,
                                       "start_method": start_method(system), "min_epochs": config.policy.min_repeats,
                                       "min_seconds": config.min_seconds}))
        with ClientProcess(spec, label) as reader:
            with ResourceSampler(config.interval_s, extra_pids=server_pids, label=label,
                                 client_pid=reader.pid) as sampler:
                epochs = reader.go()
            ready = reader.ready
    seconds = epochs["seconds"]
    fields = {"workload": workload, "system": system, "config": paper001.config_text(vars(point)),
              "config_source": source, "epochs": len(seconds), "repeats": len(seconds),
              "epoch_seconds": sum(seconds) / len(seconds), "n_rows": epochs["rows"], "dataset": samples.name,
              "dataset_bytes": samples.nbytes, "factor": config.factors.get(workload, 1),
              "client_process": "fresh per store"}
    result.samples.append(sampler.samples.assign(**fields))
    client_memory = {"client_imported_rss_bytes": ready["imported"]["rss_bytes"],
                     "client_imported_vms_bytes": ready["imported"]["vms_bytes"],
                     "client_warm_rss_bytes": ready["warm"]["rss_bytes"],
                     "client_warm_vms_bytes": ready["warm"]["vms_bytes"]}
    for summary in sampler.summary().to_dict("records"):
        result.writer.rows.append({"experiment": EXPERIMENT, **fields, **summary, **client_memory, "verified": True,
                                   "system_version": version, "client_version": client, **machine(),
                                   "scale": config.scale, "load_avg_1m": os.getloadavg()[0]})


class _loaded:
    """The workload written into ``system`` (untimed); yields (source, server PIDs, versions); cleans up."""

    def __init__(self, config, workload, samples, system, point, pool):
        self.args = config, workload, samples, system, point, pool

    def __enter__(self):
        config, workload, samples, system, point, pool = self.args
        if system in TABLES:
            cls = TABLES[system]
            self.table = cls(store_root(f"{system}-{workload}-res", LOCATION), chunk_rows=config.chunk_rows)
            self.table.write(samples)
            self.table.close()
            source = rowloaders.TableRows(rowloaders.TableOpener(cls, str(self.table.root),
                                                                 {"chunk_rows": self.table.chunk_rows}), len(samples))
            return source, [], self.table.system_version(), f"{cls.client_package} {package_version(cls.client_package)}"
        self.table = None
        self.context = open_system(system, "memory" if system == "redis" else LOCATION, pool)
        self.store = store = self.context.__enter__()
        layout = KeyLayout(len(samples), point.rows_per_key)
        store.clear()
        write_objects(store, samples, layout, 1)
        pids = store.local.pids() if getattr(store, "local", None) is not None else []
        return (rowloaders.StoreRows(StoreOpener.of(store), layout, row_format(samples)), pids, store.system_version(),
                f"{store.client_package} {package_version(store.client_package)}")

    def __exit__(self, *exc):
        if self.table is not None:
            self.table.clear()
            return
        try:
            self.store.clear()
        finally:
            self.context.__exit__(*exc)
