"""What every experiment does: put a dataset in a store at a location, then measure workloads."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable
from dataclasses import dataclass, field

import pandas as pd
from tqdm import tqdm

from ..datasets import Dataset
from ..formats import get_format
from ..readers import ArrayReader, NotSupported, ObjectReader
from ..results import LOCAL_NETWORK, ResultWriter
from ..stores import get_store_class
from ..systems import LocationNotSupported, ServicePool, open_system
from ..stores.base import package_version
from ..timing import measure
from ..workloads import Workload


class MeasurementFailed(RuntimeError):
    """A system failed during a measurement; nothing of that run is recorded."""


@dataclass
class Skipped:
    system: str
    location: str
    what: str
    reason: str


@dataclass
class Run:
    """Everything one experiment run produced."""
    writer: ResultWriter
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> pd.DataFrame:
        return self.writer.frame()


@contextmanager
def loaded_reader(system: str, location: str, dataset: Dataset, format: str, samples_per_object: int,
                  progress: bool = True, services: ServicePool | None = None):
    """A reader over ``system`` at ``location`` holding ``dataset``; the store is emptied after."""
    with open_system(system, location, services) as store:
        try:
            if store.capabilities.array_native:
                reader = ArrayReader.ingest(store, dataset, progress=progress)
            else:
                reader = ObjectReader.ingest(store, dataset, get_format(format), samples_per_object,
                                             progress=progress)
            yield reader
        finally:
            store.clear()


def measure_into(run: Run, reader, workload: Workload, *, location: str, repeats: int, dataset: str,
                 format: str, scale: str, seed: int, warmup: bool = True, progress: bool = False) -> bool:
    """Measure ``workload`` and add its rows to ``run``; False (and a Skipped entry) if unsupported."""
    store = reader.store
    try:
        passes = measure(reader, workload, repeats, cold=(location == "disk-cold"), warmup=warmup,
                         progress=progress, desc=f"{store.name} {workload.label} {location}")
    except NotSupported as why:
        run.skipped.append(Skipped(store.name, location, workload.label, str(why)))
        return False
    except Exception as error:
        raise failure(store.name, workload, location, error) from error
    record(run, reader, workload, passes, location=location, dataset=dataset, format=format, scale=scale, seed=seed)
    return True


def failure(system: str, workload: Workload, location: str, error: BaseException) -> MeasurementFailed:
    return MeasurementFailed(f"{system} failed during {workload.label} at {location}: "
                             f"{type(error).__name__}: {error}. No result of this run was recorded.")


def record(run: Run, reader, workload: Workload, passes, *, location: str, dataset: str, format: str, scale: str,
           seed: int, network: str = LOCAL_NETWORK) -> None:
    """Add measured passes to ``run`` with their workload, versions and ``network`` (where the client sat)."""
    store = reader.store
    run.writer.add(passes, system=store.name, dataset=dataset,
                   format="array" if store.capabilities.array_native else format,
                   samples_per_object=workload.samples_per_object,
                   samples_per_request=workload.samples_per_request, access=workload.access,
                   location=location, network=network, n_samples=workload.n_samples,
                   system_version=store.system_version(),
                   client_version=f"{store.client_package} {package_version(store.client_package)}",
                   scale=scale, seed=seed)


def system_locations(systems, locations, run: Run) -> list[tuple[str, str]]:
    """(location, system) pairs to measure, location-major so each server starts once per location.
    A memory-only system (Redis) asked for a disk location is measured in memory instead, as the
    paper did, and the substitution is noted."""
    pairs = []
    for location in locations:
        for system in systems:
            where = location
            if get_store_class(system).capabilities.in_memory_only and location != "memory":
                run.notes.append(f"{system} keeps its data in memory only: asked for {location}, measured at memory")
                where = "memory"
            if (where, system) not in pairs:
                pairs.append((where, system))
    return sorted(pairs, key=lambda p: locations.index(p[0]) if p[0] in locations else -1)


def sweep(run: Run, config: dict, *, datasets: list[str], formats: list[str], samples_per_object: list[int],
          plan: Callable[[int, int], list[Workload]], progress: bool = True,
          on_loaded: Callable[..., None] | None = None) -> None:
    """Measure ``plan(n_samples, samples_per_object)`` for every system x location x dataset x format x
    granularity, ingesting once per combination; one local server runs at a time. ``on_loaded(reader,
    location=, dataset=, format=, samples_per_object=)`` runs after each ingest (e.g. disk usage)."""
    from .. import datasets as data

    loaded = {name: data.load(name, config["n_samples"]) for name in datasets}
    pairs = system_locations(config["systems"], config["locations"], run)
    combos = [(loc, system, name, fmt, spo) for loc, system in pairs for name in datasets for fmt in formats
              for spo in samples_per_object]
    with ServicePool(config["endpoints"]) as services:
        for location, system, name, fmt, spo in tqdm(combos, desc=run.writer.experiment, unit="config",
                                                     disable=not progress):
            try:
                with loaded_reader(system, location, loaded[name], fmt, spo, progress=progress,
                                   services=services) as reader:
                    if on_loaded:
                        on_loaded(reader, location=location, dataset=name, format=fmt, samples_per_object=spo)
                    for workload in plan(len(loaded[name]), spo):
                        measure_into(run, reader, workload, location=location, repeats=config["repeats"],
                                     dataset=name, format=fmt, scale=config["scale"], seed=config["seed"],
                                     warmup=config.get("warmup", True))
            except LocationNotSupported as why:
                run.skipped.append(Skipped(system, location, "every workload", str(why)))


def has_server(system: str) -> bool:
    return get_store_class(system).capabilities.has_server


def number(value, spec: str, suffix: str = "") -> str:
    """A figure for a findings table; 'n/a' for what was not measured at this scale."""
    return "n/a (not measured at this scale)" if value is None or pd.isna(value) else f"{value:{spec}}{suffix}"
