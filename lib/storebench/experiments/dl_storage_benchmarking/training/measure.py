"""Measure training (seed 003, Sec 5.5, Fig 8): LeNet-5 on MNIST with PyTorch on the CPU, data read from
a local store or a remote one, batch size x DataLoader workers, per-sample ``__getitem__`` (the
paper's RedisMnist, one HGET per sample) vs batched ``__getitems__`` (one native multi-read per
batch: the paper's future work).

Per epoch we record the end-to-end time (creating the loader's iterator, which starts its
workers, to the end of the last step), the time the training loop waited for data (blocked in
``next(iterator)``), the compute time (the model step, or an emulated step that sleeps a fixed
time per batch as DLIO does), and accelerator utilisation as DLIO / MLPerf Storage define it:
compute time / total time with the first step excluded. Every object read is checked against
its CRC-32 from ingest (in the dataset, in whichever process reads it) and every batch's labels
against the source labels of the planned indices (in the training loop).

Threads: ``torch.set_num_threads(1)`` and ``set_num_interop_threads(1)`` in the training process
(``torch_threads``), on purpose: this machine has 2 cores, and the loader's workers and the local
servers need the other one. DataLoader workers run single-threaded (PyTorch sets 1 in workers).
"""
from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from storebench.core.experiment import ResultsDir
from storebench.core.progress import tqdm
from storebench.core.repeats import Cell, rounds
from storebench.core.results import LOCAL_NETWORK, ROW_COLUMNS, ResultWriter, machine
from storebench.core.settings import (DatasetName, FormatName, LocationName, NonNegativeFloat, NonNegativeInt,
                                      PositiveFloat, PositiveInt, Settings as Base, StoreName, params_hash)
from storebench.data import datasets
from storebench.data.formats import get_format
from storebench.experiments.common import Run, Skipped, record_skipped, system_locations
from storebench.stores.base import package_version
from storebench.stores.readers import ObjectReader, VerificationError
from storebench.stores.systems import LocationNotSupported, ServicePool, open_system

EXPERIMENT = "training"
TRAINING_COLUMNS = ["batch_size", "workers", "loader", "epoch_seconds", "data_wait_seconds", "compute_seconds",
                    "utilisation", "emulated_compute_s", "final_loss", "steps", "first_step_seconds",
                    "start_method", "torch_version", "torch_threads", "has_server"]


class Settings(Base):
    dataset: DatasetName
    format: FormatName
    samples_per_object: list[PositiveInt] = Field(min_length=1)
    systems: list[StoreName] = Field(min_length=1)
    locations: list[LocationName] = Field(default=["disk-warm"], min_length=1)
    loaders: list[Literal["per-sample", "batched"]] = Field(min_length=1)  # = storebench.loaders.LOADERS
    batch_sizes: list[PositiveInt] = Field(min_length=1)
    workers: list[NonNegativeInt] = Field(min_length=1)
    emulated_compute_s: list[NonNegativeFloat] = Field(default=[0.0], min_length=1)  # s per batch; 0 = real step
    emulated_batch_sizes: list[PositiveInt] | None = None  # None: the largest batch size
    learning_rate: PositiveFloat = 1e-3
    torch_threads: PositiveInt = 1
    epoch_samples: PositiveInt | None = None  # None: one pass over n_samples


# ------------------------------------------------------------------------------- the model
def lenet5():
    """LeNet-5 for 28x28 inputs: conv(6,5x5,pad 2)-pool-conv(16,5x5)-pool-fc120-fc84-fc10, tanh,
    average pooling (LeCun et al. 1998; the PyTorch version the seed cites)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.Tanh(), nn.AvgPool2d(2),
        nn.Conv2d(6, 16, 5), nn.Tanh(), nn.AvgPool2d(2),
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(), nn.Linear(84, 10))


# ------------------------------------------------------------------------------- one epoch
@dataclass
class Epoch:
    seconds: float  # iterator creation (worker start) to the end of the last step
    first_step_seconds: float  # iterator creation to the end of step 0 (excluded from utilisation)
    wait_ns: np.ndarray  # per step: blocked in next(iterator)
    compute_ns: np.ndarray  # per step: model step (or emulated sleep)
    losses: np.ndarray  # per step (NaN when emulated)
    cpu_seconds: float  # training process + its (joined) loader workers

    @property
    def utilisation(self) -> float:
        """DLIO / MLPerf Storage AU: compute time / wall time, the first step excluded."""
        after_first = self.seconds - self.first_step_seconds
        return float(self.compute_ns[1:].sum() / 1e9 / after_first) if len(self.compute_ns) > 1 and after_first > 0 \
            else float("nan")

    @property
    def final_loss(self) -> float:
        tail = self.losses[-max(1, len(self.losses) // 10):]
        return float(np.nanmean(tail)) if np.isfinite(tail).any() else float("nan")

    @property
    def data_wait_seconds(self) -> float:
        return float(self.wait_ns.sum() / 1e9)

    @property
    def compute_seconds(self) -> float:
        return float(self.compute_ns.sum() / 1e9)


@dataclass
class Epochs:
    """The epochs of one repeat (looped to cover the policy's timed work): per-epoch means, the steps of all."""
    epochs: list[Epoch]

    def _mean(self, name: str) -> float:
        return float(np.mean([getattr(e, name) for e in self.epochs]))

    seconds = property(lambda self: self._mean("seconds"))
    first_step_seconds = property(lambda self: self._mean("first_step_seconds"))
    cpu_seconds = property(lambda self: self._mean("cpu_seconds"))
    utilisation = property(lambda self: self._mean("utilisation"))
    data_wait_seconds = property(lambda self: self._mean("data_wait_seconds"))
    compute_seconds = property(lambda self: self._mean("compute_seconds"))
    final_loss = property(lambda self: self.epochs[-1].final_loss)
    wait_ns = property(lambda self: np.concatenate([e.wait_ns for e in self.epochs]))
    compute_ns = property(lambda self: np.concatenate([e.compute_ns for e in self.epochs]))
    losses = property(lambda self: np.concatenate([e.losses for e in self.epochs]))


def train_epoch(loader, plan: list[list[int]], labels: np.ndarray, model, optimizer, emulated_s: float = 0.0) -> Epoch:
    """One pass of ``loader`` (whose batches are ``plan``) through a training step per batch."""
    import torch.nn.functional as F

    clock = time.perf_counter_ns
    n = len(plan)
    wait, compute, losses = np.zeros(n, np.int64), np.zeros(n, np.int64), np.full(n, np.nan)
    cpu0, children0 = time.process_time(), _children_cpu()
    start = clock()
    iterator = iter(loader)
    first_end = start
    for step, indices in enumerate(plan):
        a = clock()
        x, y = next(iterator)
        b = clock()
        if len(y) != len(indices) or not np.array_equal(y.numpy(), labels[indices]):
            raise VerificationError(f"batch {step}: labels differ from the source labels of the planned samples")
        if emulated_s > 0:
            time.sleep(emulated_s)
        else:
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            losses[step] = loss.item()
        c = clock()
        wait[step], compute[step] = b - a, c - b
        if step == 0:
            first_end = c
    end = clock()
    if next(iterator, None) is not None:
        raise VerificationError("the loader delivered more batches than planned")
    del iterator  # joins the workers, so their CPU time is counted below
    cpu = time.process_time() - cpu0 + _children_cpu() - children0
    return Epoch((end - start) / 1e9, (first_end - start) / 1e9, wait, compute, losses, cpu)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # waited-for children: the joined workers
    return usage.ru_utime + usage.ru_stime


# ------------------------------------------------------------------------------- the grid
def grid(config: Settings) -> list[dict]:
    """Every (emulated compute, loader, batch size, workers) combination, in a fixed order. The real
    model runs at every batch size; an emulated compute time (fixed per batch, as a DLIO config has one
    batch size) runs at ``emulated_batch_sizes`` (default: the largest batch size). At batch size 1 the
    batched loader is left out where the per-sample loader runs: a batch of one sample is one read either way."""
    emulated_batches = config.emulated_batch_sizes or [max(config.batch_sizes)]
    return [dict(emulated_compute_s=float(c), loader=loader, batch_size=b, workers=w)
            for c in config.emulated_compute_s for loader in config.loaders
            for b in (emulated_batches if c > 0 else config.batch_sizes) for w in config.workers
            if not (loader == "batched" and b == 1 and "per-sample" in config.loaders)]


class TrainingResultWriter(ResultWriter):
    """ResultWriter whose rows carry the training columns too; raw per-step events per run."""

    def __init__(self, raw_dir):
        super().__init__(EXPERIMENT, raw_dir=raw_dir)
        self.events: dict[str, list[pd.DataFrame]] = {}

    def add_epoch(self, row: dict, epoch: Epoch) -> None:
        self.rows.append(row)
        steps = pd.DataFrame({"step": np.arange(len(epoch.wait_ns)), "wait_ns": epoch.wait_ns,
                              "compute_ns": epoch.compute_ns, "loss": epoch.losses, "repeat": row["repeat"]})
        self.events.setdefault(row["run_id"], []).append(steps)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=ROW_COLUMNS + TRAINING_COLUMNS)

    def write_events(self) -> None:
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        for run_id, frames in self.events.items():
            pd.concat(frames, ignore_index=True).to_parquet(self.raw_dir / f"{run_id}.parquet", index=False)


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """The ``training`` table (one row per epoch) and per-step events under ``out.raw_dir``."""
    run = train(settings, raw_dir=out.raw_dir, progress=progress)
    out.write("training", run.rows)
    record_skipped(run, out)


def train(config: Settings, raw_dir=None, progress: bool = True, services: ServicePool | None = None) -> Run:
    """Train for ``epoch_samples`` samples per configuration, ``repeats`` times, every system."""
    import torch

    dataset = datasets.load(config.dataset, config.samples_of(config.dataset))
    writer = TrainingResultWriter(raw_dir)
    result = Run(writer)
    threads = config.torch_threads
    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)  # only possible before the first parallel op
    except RuntimeError:
        pass
    from storebench.loaders import start_method

    combos = system_locations(config.systems, config.locations, result)
    # Systems whose workers start from the forkserver last: once TileDB or TensorStore ran in this process, forking
    # workers for another system is no longer safe.
    combos.sort(key=lambda combo: start_method(combo[1]) is not None)
    pool = services or ServicePool(config.endpoints)
    try:
        for location, system in combos:
            try:
                with open_system(system, location, pool) as store:
                    if store.capabilities.array_native:
                        result.skipped.append(Skipped(system, location, "training",
                                                      "array-native store: the loaders read encoded objects"))
                        continue
                    try:
                        for spo in config.samples_per_object:
                            _measure_system(result, store, dataset, config, location, spo, threads, progress)
                    finally:
                        store.clear()
            except LocationNotSupported as why:
                result.skipped.append(Skipped(system, location, "training", str(why)))
    finally:
        if services is None:
            pool.close()
        torch.set_num_threads(saved)
    writer.write_events()
    return result


def _measure_system(result: Run, store, dataset, config: Settings, location: str, spo: int, threads: int,
                    progress: bool):
    import torch

    from storebench import loaders

    fmt, seed = config.format, config.seed
    reader = ObjectReader.ingest(store, dataset, get_format(fmt), spo, progress=progress)
    n = len(dataset)
    epoch_samples = config.epoch_samples or n
    method = loaders.start_method(store.name)
    opener = loaders.StoreOpener.of(store)
    # unrecorded warm-up: every object read once (batched), checked; warms the page cache too
    warm = loaders.make_dataset("batched", reader, opener)
    for batch in loaders.data_loader(warm, loaders.batch_plan(n, n, 256, seed), 0):
        pass
    warm.close()
    fixed = dict(system=store.name, system_version=store.system_version(),
                 client_version=f"{store.client_package} {package_version(store.client_package)}",
                 client_config=store.client_config())
    plan = grid(config)
    policy = config.policy
    bar = tqdm(total=len(plan) * policy.min_repeats, desc=f"{EXPERIMENT} {store.name}", unit="repeat",
               disable=not progress, leave=False)

    def one_epoch(point, repeat: int, k: int) -> Epoch:
        batches = loaders.batch_plan(n, epoch_samples, point["batch_size"], seed + repeat + k)
        dataset_ = loaders.make_dataset(point["loader"], reader, opener)
        loader = loaders.data_loader(dataset_, batches, point["workers"], method if point["workers"] else None)
        torch.manual_seed(seed + repeat)
        model = lenet5()
        optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
        epoch = train_epoch(loader, batches, dataset.labels.astype(np.int64), model, optimizer,
                            point["emulated_compute_s"])
        dataset_.close()
        return epoch

    def one_repeat(point, repeat: int, cell: Cell):  # an epoch is rebuilt each time, as in seed 003's loop
        epochs = Epochs([one_epoch(point, repeat, k) for k in range(cell.passes)])
        batches = loaders.batch_plan(n, epoch_samples, point["batch_size"], seed + repeat)
        result.writer.add_epoch(_row(point, epochs, batches, reader, config, location, repeat, method, threads,
                                     store.capabilities.has_server, **fixed), epochs)
        bar.update()
        return epochs.seconds, None

    cells = [Cell(policy.passes_for(one_epoch(point, 0, 0).seconds)) for point in plan]  # warm-ups
    before = len(result.writer.rows)
    cells = rounds(plan, policy, one_repeat, cells)  # repeat-major: drift hits every configuration alike
    _annotate(result.writer.rows[before:], plan, cells, policy)
    bar.close()


def _annotate(rows: list[dict], plan: list[dict], cells, policy) -> None:
    by_point = {tuple(sorted(point.items())): cell for point, cell in zip(plan, cells)}
    for row in rows:
        row.update(by_point[tuple(sorted((k, row[k]) for k in plan[0]))].fields(policy))


def _row(point, epoch: Epoch, batches, reader: ObjectReader, config: Settings, location, repeat, method, threads,
         has_server: bool, **fixed) -> dict:
    import torch

    spo = reader.samples_per_object
    per_batch_objects = [sorted({i // spo for i in b}) for b in batches]
    if point["loader"] == "batched":
        requests, read = len(batches), [k for objs in per_batch_objects for k in objs]
    else:
        read = [i // spo for b in batches for i in b]
        requests = len(read)
    epoch_samples = sum(len(b) for b in batches)
    workload = dict(experiment=EXPERIMENT, system=fixed["system"], dataset=config.dataset,
                    format=config.format, samples_per_object=spo, location=location,
                    n_samples=reader.n_samples, epoch_samples=epoch_samples, seed=config.seed,
                    learning_rate=config.learning_rate, **point)
    run_id = "_".join(str(v) for v in (fixed["system"], location, point["loader"], f"b{point['batch_size']}",
                                       f"w{point['workers']}", f"c{point['emulated_compute_s']:g}"))
    return {
        "experiment": EXPERIMENT, "dataset": config.dataset, "format": config.format,
        "samples_per_object": spo, "samples_per_request": point["batch_size"], "access": "random",
        "location": location, "network": LOCAL_NETWORK, "repeat": repeat, "n_samples": epoch_samples,
        "n_requests": requests,
        "bytes": int(reader.sizes[read].sum()),
        "needed_bytes": int(round(float(reader.sizes[[i // spo for b in batches for i in b]].sum()) / spo)),
        "seconds": epoch.seconds, "decode_seconds": float("nan"), "wall_seconds": epoch.seconds,
        "client_cpu_seconds": epoch.cpu_seconds, "client_peak_rss_bytes": None, "resident_fraction": None,
        "verified": True, **fixed, **machine(), "params_hash": params_hash(workload), "run_id": run_id,
        "scale": config.scale, "load_avg_1m": os.getloadavg()[0],
        **point, "epoch_seconds": epoch.seconds, "data_wait_seconds": epoch.data_wait_seconds,
        "compute_seconds": epoch.compute_seconds, "utilisation": epoch.utilisation,
        "final_loss": epoch.final_loss, "steps": len(batches), "first_step_seconds": epoch.first_step_seconds,
        "start_method": method or "fork", "torch_version": torch.__version__, "torch_threads": threads,
        "has_server": has_server,
    }
