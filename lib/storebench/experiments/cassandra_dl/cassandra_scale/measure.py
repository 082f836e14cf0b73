"""Seed 004 at scale: a ring that grows and shrinks under load (Sec 5.4) and data-parallel ranks
(Sec 6, Tables 3-4, Fig 3).

- **ring**: a Cassandra node on 127.0.0.1 holds the images (keyspace with ``replication_factor``,
  reads at ``consistency``); ``ring_loaders`` loaders (threads, each its own prefetching loader and
  connections) read it continuously; a second node on 127.0.0.2 joins (bootstrap streams its token
  ranges), then leaves (decommission streams them back). Per second: images and bytes read; every
  blob verified; every failed batch counted and the loader restarted (none is ever silently lost).
  The phases (``ring_phases_s``) are held for stated times; the analysis discards ``ring_warmup_s``
  at the start of each (the loaders' ramp-up, a new node's) before it takes a steady rate.
- **ranks**: ``torchrun`` with N gloo ranks on this machine (storebench.experiments.cassandra_dl.ranks), each reading its own
  training split i and validation split N+i from the same node. Per ``steps``: ``emulated``, the
  seed's step (emulated compute per batch, the seed's per-batch times, and a real all-reduce of a
  ResNet-50-sized gradient per training step), and ``loader-bound`` (no compute, no gradient: only
  the all-reduce of two numbers that keeps the ranks in step), what the loaders alone deliver. Train
  and validation images/s vs ranks, the seed's Tables 3-4 beside.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from storebench.stores import cassandra_model as cm
from storebench.data import imagesets
from storebench.experiments.cassandra_dl import ranks
from storebench.data import splits as sp
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from storebench.core.repeats import RepeatPolicy, repeat_cell
from storebench.core.experiment import ResultsDir
from storebench.core.settings import NonNegativeFloat, PositiveInt, Settings as Base
from storebench.experiments.common import Skipped, record_skipped
from storebench.loaders.prefetch import CassandraBlobs, Catalog, LoaderError, PrefetchLoader
from storebench.paths import scratch_dir
from storebench.core.results import machine
from storebench.experiments.cassandra_dl.ring import FIRST, SECOND, Ring
from storebench.stores.base import package_version

EXPERIMENT = "cassandra_scale"
KEYSPACE = "seed004_scale"
EMULATED, LOADER_BOUND = "emulated", "loader-bound"
STEPS = (EMULATED, LOADER_BOUND)



def _phases(value: dict) -> dict:
    if set(value) != {"before", "joined", "after"} or not all(
            isinstance(x, (int, float)) and x >= 0 for x in value.values()):
        raise ValueError("must map before, joined, after to seconds >= 0")
    return value


class Settings(Base):
    encoding: Literal[imagesets.ENCODINGS]
    images: PositiveInt
    originals: PositiveInt
    in_flight: PositiveInt
    depth: PositiveInt
    batch_size: PositiveInt
    replication_factor: Literal[1, 2] = Field(description="1 or 2 (a ring of two nodes)")
    consistency: Literal["ONE", "QUORUM", "ALL"]
    ring: bool
    ring_loaders: PositiveInt
    ring_phases_s: Annotated[dict[str, float], AfterValidator(_phases)]
    ring_warmup_s: NonNegativeFloat  # discarded at the start of each phase before its steady rate is taken
    ranks: list[PositiveInt] = Field(min_length=1)
    steps: list[Literal[STEPS]] = Field(min_length=1)
    train_share: Annotated[float, Field(gt=0, lt=1)]
    train_seconds_per_batch: NonNegativeFloat
    val_seconds_per_batch: NonNegativeFloat
    gradient_elements: PositiveInt

    @model_validator(mode="after")
    def _warmup_inside_the_phases(self):
        short = {k: v for k, v in self.ring_phases_s.items() if v <= self.ring_warmup_s}
        if self.ring and short:
            raise ValueError(f"ring_warmup_s ({self.ring_warmup_s:g} s) leaves nothing of the phases {short}: "
                             "each phase must last longer than the warm-up it discards")
        return self


@dataclass
class ScaleRun:
    config: dict
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    failures: list[dict] = field(default_factory=list)
    ranks: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)
    skipped: list = field(default_factory=list)

    def save(self, out: ResultsDir) -> None:
        for frame, name in ((self.timeline, f"{EXPERIMENT}_timeline"), (self.events, f"{EXPERIMENT}_events"),
                            (self.ranks, f"{EXPERIMENT}_ranks"), (pd.DataFrame(self.failures), f"{EXPERIMENT}_failures")):
            out.write(name, frame.assign(**machine(), scale=self.config["scale"]))
        record_skipped(self, out)


# ------------------------------------------------------------------ loaders that keep reading
class Readers:
    """``n`` threads, each with its own prefetching loader over the whole table, reading until
    stopped; images and bytes per second in ``counts``; a failed batch is recorded (time, loader,
    error) and that loader starts again with a new reader. A wrong blob stops the run."""

    def __init__(self, source, catalog: Catalog, splits: sp.Splits, n: int, batch_size: int, depth: int):
        self.source, self.catalog, self.splits = source, catalog, splits
        self.n, self.batch_size, self.depth = n, batch_size, depth
        self.counts: dict[int, list[int]] = {}
        self.failures: list[dict] = []
        self.wrong: list[BaseException] = []
        self.lock, self.stop = threading.Lock(), threading.Event()
        self.start = time.perf_counter()
        self.threads = [threading.Thread(target=self._read, args=(i,), daemon=True) for i in range(n)]

    def __enter__(self):
        self.start = time.perf_counter()
        for t in self.threads:
            t.start()
        return self

    def now(self) -> float:
        return time.perf_counter() - self.start

    def _read(self, i: int) -> None:
        from storebench.stores.readers import VerificationError

        while not self.stop.is_set():
            try:
                with PrefetchLoader(self.source, self.catalog, self.splits, self.batch_size, self.depth) as loader:
                    while not self.stop.is_set():
                        try:
                            batch = loader.load_batch(0)
                        except StopIteration:
                            loader.rewind_splits()
                            continue
                        with self.lock:
                            second = self.counts.setdefault(int(self.now()), [0, 0])
                            second[0] += len(batch.ids)
                            second[1] += sum(len(b) for b in batch.blobs)
            except VerificationError as error:
                self.wrong.append(error)
                self.stop.set()
            except (LoaderError, Exception) as error:  # noqa: BLE001 - counted, then read on
                with self.lock:
                    self.failures.append({"t_s": self.now(), "loader": i, "error": f"{type(error).__name__}: {error}"})
                time.sleep(0.2)

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(timeout=60)

    def timeline(self) -> pd.DataFrame:
        seconds = range(int(self.now()))
        return pd.DataFrame({"t_s": list(seconds), "images": [self.counts.get(s, [0, 0])[0] for s in seconds],
                             "bytes": [self.counts.get(s, [0, 0])[1] for s in seconds]})


def ring_under_load(ring: Ring, images: imagesets.ImageSet, config: dict, result: ScaleRun) -> None:
    endpoint = ring.endpoint()
    catalog = Catalog.from_frame(images.table)
    splits = sp.make_splits(sp.FrameMetadata(images.table, "scale image set"), [1], seed=0)
    source = CassandraBlobs(endpoint, KEYSPACE, config["in_flight"], consistency_level=config["consistency"])
    phases = config["ring_phases_s"]
    events = []
    with Readers(source, catalog, splits, config["ring_loaders"], config["batch_size"], config["depth"]) as readers:
        time.sleep(phases["before"])
        events.append({"event": "join starts", "t_s": readers.now()})
        ring.join()
        events.append({"event": "join done (both Up/Normal)", "t_s": readers.now()})
        time.sleep(phases["joined"])
        events.append({"event": "leave starts", "t_s": readers.now()})
        ring.leave()
        events.append({"event": "leave done", "t_s": readers.now()})
        time.sleep(phases["after"])
    if readers.wrong:
        raise readers.wrong[0]
    result.timeline = readers.timeline().assign(mb_per_s=lambda f: f.bytes / 1e6)
    result.events = pd.DataFrame(events)
    result.failures = readers.failures
    result.notes.append(f"ring: replication factor {config['replication_factor']}, reads at consistency "
                        f"{config['consistency']}, {config['ring_loaders']} loaders; nodes {FIRST} and {SECOND}")


# ------------------------------------------------------------------ data-parallel ranks
def data_parallel(endpoint: dict, config: dict, work: Path, policy: RepeatPolicy) -> list[dict]:
    """Per rank count and step (``emulated``, ``loader-bound``), a torchrun launch per repeat (under
    ``policy``): train and validation rows."""
    out = []
    for n in config["ranks"]:
        share = config["train_share"]
        with cm.session_for(endpoint) as session:
            splits = sp.make_splits(sp.CassandraMetadata(session, KEYSPACE), [share / n] * n + [(1 - share) / n] * n,
                                    group_by=["original"], label="kind", seed=config["seed"])
        path = splits.save(work / f"splits-{n}.json")
        for step in config["steps"]:
            emulated = step == EMULATED
            spec = {"endpoint": endpoint, "keyspace": KEYSPACE, "splits": str(path), "in_flight": config["in_flight"],
                    "depth": config["depth"], "batch_size": config["batch_size"],
                    "train_seconds_per_batch": config["train_seconds_per_batch"] if emulated else 0.0,
                    "val_seconds_per_batch": config["val_seconds_per_batch"] if emulated else 0.0,
                    "gradient_elements": config["gradient_elements"], "gradient": emulated}
            spec_path = work / f"ddp-{n}-{step}.json"
            spec_path.write_text(json.dumps(spec))
            out += repeat_cell(policy, lambda repeat: _launch(n, step, repeat, spec_path, work)).annotated_rows(policy)
    return out


def _launch(n: int, step: str, repeat: int, spec_path: Path, work: Path) -> tuple[float, list[dict]]:
    results = ranks.launch("storebench.experiments.cassandra_dl.ddp_rank", ["--spec", str(spec_path)],
                           nproc=n, out_dir=work / f"ranks-{n}-{step}-{repeat}")
    rows = [{"ranks": n, "step": step, "repeat": repeat, **_phase_totals(results, phase)} for phase in ("train", "val")]
    return rows[0]["seconds"], rows


def _phase_totals(results: list[dict], phase: str) -> dict:
    """One phase over all ranks: the slowest rank's seconds, every rank's images and bytes."""
    parts = [r[phase] for r in results]
    seconds = max(p["seconds"] for p in parts)
    images, nbytes = sum(p["images"] for p in parts), sum(p["bytes"] for p in parts)
    return {"phase": phase, "images": images, "bytes": nbytes, "seconds": seconds, "images_per_s": images / seconds,
            "mb_per_s": nbytes / seconds / 1e6,
            "allreduce_share": float(np.mean([p["allreduce_seconds"] / p["seconds"] for p in parts]))}


# ------------------------------------------------------------------ the run
def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """The ring under load (where ``ring``) and the data-parallel ranks, into ``out``."""
    run(settings, out, progress)


def run(settings: Settings, out: ResultsDir | None = None, progress: bool = True) -> ScaleRun:
    config = settings.as_dict()
    result = ScaleRun(config)
    work = scratch_dir(EXPERIMENT)
    images = imagesets.image_set(config["images"], config["encoding"], config["seed"], config["originals"])
    result.notes.append(images.describe())
    with Ring(work / "ring") as ring:
        endpoint = ring.endpoint()
        cm.ingest_endpoint(endpoint, KEYSPACE, images, replication_factor=config["replication_factor"],
                           consistency_level=config["consistency"], progress=progress)
        version = ring.first.version()
        if config["ring"]:
            ring_under_load(ring, images, config, result)
        else:
            result.skipped.append(Skipped("cassandra", "disk", "ring join/leave under load",
                                          "not run at this scale (ring: false); overrides={'ring': True} runs it"))
            result.notes.append("ring: not run at this scale (ring: false)")
        rows = data_parallel(endpoint, config, work, settings.policy)
    result.ranks = pd.DataFrame(rows).assign(system="cassandra", system_version=version,
                                             client_version=package_version("cassandra-driver"),
                                             torch_version=package_version("torch"))
    if out is not None:
        result.save(out)
    return result
