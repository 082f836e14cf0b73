"""Measure access_pattern: sequential one-by-one vs the full set in one request vs random requests of k
samples, per system and location; then the Redis client comparison (redis-py's pure-Python vs hiredis
parser, and redis-benchmark) and the harness check (the harness vs a bare loop of client calls)."""
from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import Field

from storebench.core.experiment import ResultsDir
from storebench.core.results import ResultWriter
from storebench.core.settings import DatasetName, FormatName, LocationName, PositiveInt, Settings as Base, StoreName
from storebench.data import datasets
from storebench.data.workloads import Workload
from storebench.experiments.common import Run, has_server, loaded_reader, record_skipped, sweep
from storebench.experiments.dl_storage_benchmarking.access_pattern import clients


class Settings(Base):
    dataset: DatasetName
    format: FormatName
    systems: list[StoreName] = Field(min_length=1)
    locations: list[LocationName] = Field(min_length=1)
    samples_per_request: list[PositiveInt] = Field(min_length=1)
    restart_datasets: list[DatasetName] | None = None
    # which workloads: sequential one by one, the full set in one request, random requests of k samples (a part
    # of the reference run may measure some of them)
    access: list[Literal["sequential", "full", "random"]] = Field(default=["sequential", "full", "random"],
                                                                   min_length=1)
    harness_check: bool = True  # the harness vs a bare loop (one part of a split run does it)
    overhead_samples_per_request: PositiveInt = 16  # the harness check's k


def workloads(settings: Settings, n_samples: int) -> list[Workload]:
    spo, seed = 1, settings.seed
    plan = [Workload("sequential", 1, spo, n_samples, seed)] if "sequential" in settings.access else []
    plan += [Workload("full", 0, spo, n_samples, seed)] if "full" in settings.access else []
    if "random" in settings.access:
        plan += [Workload("random", k, spo, n_samples, seed) for k in settings.samples_per_request]
    return plan


def harness_check(settings: Settings, systems=("rocksdb", "localfs"), location: str = "memory") -> pd.DataFrame:
    """Harness overhead on the fastest stores (where it would show most), random k requests."""
    from storebench.core.timing import harness_overhead

    dataset = datasets.load(settings.dataset, settings.samples_of(settings.dataset))
    k = settings.overhead_samples_per_request
    rows = []
    for system in systems:
        with loaded_reader(system, location, dataset, settings.format, 1, progress=False) as reader:
            rows.append(harness_overhead(reader, Workload("random", k, 1, len(dataset), settings.seed), rounds=31))
    return pd.DataFrame(rows)


def redis_clients(settings: Settings) -> pd.DataFrame:
    """Redis k=max with redis-py's pure-Python vs hiredis parser (+ redis-benchmark), on the same data;
    a row saying why where Redis (or random access) is not among what this run measures."""
    if "redis" not in settings.systems or "random" not in settings.access:
        return pd.DataFrame({"not_measured": ["redis (random access) is not among what this run measures"]})
    dataset = datasets.load(settings.dataset, settings.samples_of(settings.dataset))
    return clients.redis_parsers(dataset, settings, k=max(settings.samples_per_request))


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    run = Run(ResultWriter("access_pattern", raw_dir=out.raw_dir))
    sweep(run, settings, datasets=[settings.dataset], formats=[settings.format], samples_per_object=[1],
          plan=lambda n, spo: workloads(settings, n), progress=progress)
    out.write("access_pattern", run.rows)
    out.write("systems", pd.DataFrame({"system": settings.systems,
                                       "has_server": [has_server(s) for s in settings.systems]}))
    record_skipped(run, out)
    out.write("clients_redis", redis_clients(settings))
    out.write("harness", harness_check(settings) if settings.harness_check else pd.DataFrame())
