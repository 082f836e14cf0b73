"""Measure granularity: every system x samples per object x samples per request x shuffle. Two shuffles:
``random-objects`` (objects shuffled, their samples kept together: what coarse objects allow without
waste) and ``random`` (true per-sample shuffling: a coarse object is fetched whole for the few samples a
batch needs: the flexibility cost).

Samples per object is each system's own unit of reading (``Store.layout_for``): k samples packed into one
object (key-value and object stores; TileDB's and TensorStore's bytes layouts: k samples per cell / kvstore
entry, TileDB's sparse tiles holding 64 samples' worth of cells), or for the array layouts (``tiledb-array``,
``tensorstore-zarr``) k samples per tile / chunk along the sample axis, which a read fetches whole."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from storebench.core.experiment import ResultsDir
from storebench.core.results import ResultWriter
from storebench.core.settings import DatasetName, FormatName, LocationName, PositiveInt, Settings as Base, StoreName
from storebench.data.workloads import Workload
from storebench.experiments.common import Run, record_skipped, sweep


class Settings(Base):
    datasets: list[DatasetName] = Field(min_length=1)
    format: FormatName
    systems: list[StoreName] = Field(min_length=1)
    locations: list[LocationName] = Field(min_length=1)
    samples_per_object: list[PositiveInt] = Field(min_length=1)
    samples_per_request: list[PositiveInt] = Field(min_length=1)
    shuffles: list[Literal["random", "random-objects"]] = Field(min_length=1)
    restart_datasets: list[DatasetName] | None = None
    # random-objects requests of fewer samples than an object (each part of an object fetched whole again):
    # not what the paper's Figs 5-6 read (whole objects); False leaves them out
    partial_objects: bool = True


def workloads(settings: Settings, n_samples: int, spo: int) -> list[Workload]:
    return [Workload(access, k, spo, n_samples, settings.seed)
            for access in settings.shuffles for k in settings.samples_per_request
            if settings.partial_objects or access != "random-objects" or k >= spo]


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    run = Run(ResultWriter("granularity", raw_dir=out.raw_dir))
    sweep(run, settings, datasets=settings.datasets, formats=[settings.format],
          samples_per_object=settings.samples_per_object, plan=lambda n, spo: workloads(settings, n, spo),
          progress=progress, layout=True)
    out.write("granularity", run.rows)
    record_skipped(run, out)
