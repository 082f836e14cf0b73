"""Measure location: the same sequential read, one sample per request (and the full set in one request
where the system has it), with the data in memory, on a warm local disk, and on a cold local disk, for
every system and dataset.

Cold comes in two kinds (storebench.testbed.locations): ``disk-cold`` is really cold (a local server is
restarted, its files evicted; an embedded store reopened, its files evicted) and
``disk-cold-pagecache`` evicts only the page cache under a running server, which keeps its own caches.
Each row's ``cold_method`` says which was done. Beside the rows: which systems have a server
(``systems``) and what each cold method does (``cold_method_names``), so the analysis needs neither."""
from __future__ import annotations

import pandas as pd
from pydantic import Field

from storebench.core.experiment import ResultsDir
from storebench.core.results import ResultWriter
from storebench.core.settings import DatasetName, FormatName, LocationName, Settings as Base, StoreName
from storebench.data.workloads import Workload
from storebench.experiments.common import Run, has_server, record_skipped, sweep
from storebench.stores import get_store_class
from storebench.testbed.locations import COLD_METHODS


class Settings(Base):
    datasets: list[DatasetName] = Field(min_length=1)
    format: FormatName
    systems: list[StoreName] = Field(min_length=1)
    locations: list[LocationName] = Field(min_length=1)
    restart_datasets: list[DatasetName] | None = None


def workloads(n_samples: int, spo: int, seed: int) -> list[Workload]:
    return [Workload("sequential", 1, spo, n_samples, seed), Workload("full", 0, spo, n_samples, seed)]


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    run = Run(ResultWriter("location", raw_dir=out.raw_dir))
    sweep(run, settings, datasets=settings.datasets, formats=[settings.format], samples_per_object=[1],
          plan=lambda n, spo: workloads(n, spo, settings.seed), progress=progress)
    out.write("location", run.rows)
    out.write("systems", pd.DataFrame([
        {"system": s, "has_server": has_server(s), "in_memory_only": get_store_class(s).capabilities.in_memory_only}
        for s in settings.systems]))
    out.write("cold_method_names", pd.DataFrame(list(COLD_METHODS.items()), columns=["cold_method", "what_was_done"]))
    record_skipped(run, out)
