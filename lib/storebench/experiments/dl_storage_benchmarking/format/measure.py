"""Measure format: raw PNG files vs pickle vs blob, on every system: the space each system reports for
the dataset (its own accounting, after ingest), the sequential one-by-one and full-set download times,
and the client's decode time measured apart."""
from __future__ import annotations

import pandas as pd
from pydantic import Field

from storebench.core.experiment import ResultsDir
from storebench.core.results import ResultWriter
from storebench.core.settings import DatasetName, FormatName, LocationName, Settings as Base, StoreName
from storebench.data.workloads import Workload
from storebench.experiments.common import Run, record_skipped, sweep


class Settings(Base):
    dataset: DatasetName
    formats: list[FormatName] = Field(min_length=1)
    systems: list[StoreName] = Field(min_length=1)
    locations: list[LocationName] = Field(min_length=1)


def workloads(settings: Settings, n_samples: int, spo: int) -> list[Workload]:
    return [Workload("sequential", 1, spo, n_samples, settings.seed), Workload("full", 0, spo, n_samples, settings.seed)]


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    run = Run(ResultWriter("format", raw_dir=out.raw_dir))
    usage = []

    def record_usage(reader, *, location, dataset, format, samples_per_object):
        store = reader.store
        measured = store.disk_usage()
        usage.append({"system": store.name, "system_version": store.system_version(), "dataset": dataset,
                      "format": format, "location": location, "n_samples": settings.samples_of(dataset),
                      "object_bytes": int(reader.sizes.sum()), "usage_bytes": measured.bytes, "usage_how": measured.how})

    sweep(run, settings, datasets=[settings.dataset], formats=settings.formats, samples_per_object=[1],
          plan=lambda n, spo: workloads(settings, n, spo), progress=progress, on_loaded=record_usage)
    out.write("format", run.rows)
    columns = ["system", "system_version", "dataset", "format", "location", "n_samples", "object_bytes",
               "usage_bytes", "usage_how"]
    out.write("format_usage", pd.DataFrame(usage, columns=columns))
    record_skipped(run, out)
