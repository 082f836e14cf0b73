"""What every experiment does: put a dataset in a store at a location, then measure workloads."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field

import pandas as pd

from ..datasets import Dataset
from ..formats import get_format
from ..readers import ArrayReader, NotSupported, ObjectReader
from ..results import ResultWriter
from ..systems import ServicePool, open_system
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
        raise MeasurementFailed(f"{store.name} failed during {workload.label} at {location}: "
                                f"{type(error).__name__}: {error}. No result of this run was recorded.") from error
    run.writer.add(passes, system=store.name, dataset=dataset,
                   format="array" if store.capabilities.array_native else format,
                   samples_per_object=workload.samples_per_object,
                   samples_per_request=workload.samples_per_request, access=workload.access,
                   location=location, n_samples=workload.n_samples, system_version=store.system_version(),
                   client_version=f"{store.client_package} {package_version(store.client_package)}",
                   scale=scale, seed=seed)
    return True
