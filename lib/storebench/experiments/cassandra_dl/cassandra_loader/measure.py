"""Seed 004's prefetching loader on Cassandra and on every other system (Table 1, Fig 2, Table 2,
Sec 5.2's "how many GPUs does a loader feed").

- **single loader**: real ImageNet images (224x224, JPEG q90 and raw) replicated under UUIDs, written
  into Cassandra's three tables (the seed's data model) and, for the other systems, under integer
  keys; then the short-circuited loader (``load_batch`` as fast as it goes, nothing consumed) per
  batch size: after an unrecorded warm-up epoch, repeats of ``pass_seconds`` of reading each
  (time-based: a pass crosses epoch boundaries, and the passes follow one another without a gap, so
  no pass starts with batches the loader prefetched while nobody timed): ms per batch (mean +- 95%
  CI over the batches), images/s, MB/s, the loader's CPU%.
- **cold epochs** (Cassandra, where the seed read ImageNet from disk): ``cold_epochs`` times, the node
  flushed, stopped, its files evicted from the page cache, started again and its keyspace evicted once
  more (``storebench.testbed.locations``' ``restart-evict``), then one whole epoch read at ``cold_batch``,
  timed from its first request; the keyspace's page-cache residency before it and the restart time
  (never in the read time) beside. Table 1 is the warm case.
- **server latency under load, up to saturation**: 1, 2, 4, ... loader PROCESSES (the counts of
  ``latency_loaders``, ascending) reading batches of ``latency_batch`` for ``latency_seconds``, each
  count ``latency_repeats`` times; the sweep stops at the first count whose mean aggregate MB/s
  gains less than ``saturation_gain`` over the previous count's (``saturation.saturation``: the
  server is saturated there). Read-latency percentiles from ``nodetool tablehistograms`` of a table
  no other run touched (its histogram holds these reads only), and the MB/s served meanwhile.
- **accelerators fed**: emulated accelerators (threads that take a batch and sleep its compute
  time, ``1 / accelerator_images_per_s`` per image: the seed's 200 img/s of a ResNet-50 on a TITAN
  RTX) sharing one loader; the largest count whose mean utilisation (compute / wall) stays at or
  above ``utilisation`` (MLPerf Storage's AU rule), found by running them, starting from the
  count the single-loader rate predicts.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from storebench.stores import cassandra_model as cm
from storebench.data import imagesets
from storebench.data import splits as sp
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from storebench.core.repeats import RepeatPolicy, repeat_cell
from storebench.core.experiment import ResultsDir
from storebench.core.settings import (NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Settings as Base,
                                      StoreName)
from storebench.loaders.opener import StoreOpener
from storebench.loaders.prefetch import CassandraBlobs, Catalog, PrefetchLoader, StoreBlobs
from storebench.paths import scratch_dir
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.stores import get_store_class
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system
from storebench.core.stats import mean_ci
from storebench.experiments.common import Skipped, record_skipped
from storebench.experiments.cassandra_dl.cassandra_loader.saturation import saturation
from storebench.testbed.locations import evict, residency, restart_evicted

EXPERIMENT = "cassandra_loader"
LOCATION = "disk-warm"
COLD = "disk-cold"  # a cold epoch's location; its method is storebench.testbed.locations' "restart-evict"
CASSANDRA = "cassandra"  # the seed's loader: async single-partition reads of data_by_uuid


def _ascending(counts: list[int]) -> list[int]:
    if counts != sorted(set(counts)) or counts[0] != 1:
        raise ValueError(f"must start at 1 loader and ascend without repeats (e.g. [1, 2, 4, 8, 16]), got {counts}")
    return counts


class Settings(Base):
    encodings: list[Literal[imagesets.ENCODINGS]] = Field(min_length=1)
    images: PositiveInt
    originals: PositiveInt
    systems: list[StoreName] = Field(min_length=1)
    batch_sizes: list[PositiveInt] = Field(min_length=1)
    in_flight: PositiveInt
    depth: PositiveInt
    replication_factor: PositiveInt
    consistency: Literal["ONE", "QUORUM", "ALL", "LOCAL_ONE", "LOCAL_QUORUM"]
    pass_seconds: PositiveFloat  # Table 1: timed reading per repeat (time-based passes)
    cold_epochs: NonNegativeInt  # Cassandra: whole epochs read right after a restart with its files evicted
    cold_batch: PositiveInt
    latency_loaders: Annotated[list[PositiveInt], AfterValidator(_ascending)]
    latency_repeats: PositiveInt
    saturation_gain: NonNegativeFloat  # the sweep stops where more loaders gain less MB/s than this share
    latency_batch: PositiveInt
    latency_seconds: PositiveFloat
    accelerator_images_per_s: PositiveFloat
    utilisation: Annotated[float, Field(gt=0, le=1)]
    feed_batch: PositiveInt
    feed_seconds: PositiveFloat
    feed_systems: list[StoreName]

    @model_validator(mode="after")
    def _cold_batch_measured_warm(self):
        if self.cold_epochs and self.cold_batch not in self.batch_sizes:
            raise ValueError(f"cold_batch {self.cold_batch} must be one of batch_sizes {self.batch_sizes}, so its "
                             "warm rate is measured beside the cold one")
        return self


@dataclass
class LoaderRun:
    config: dict
    batches: pd.DataFrame = field(default_factory=pd.DataFrame)    # one row per (system, encoding, B, pass)
    latency: pd.DataFrame = field(default_factory=pd.DataFrame)    # Table 2
    feeds: pd.DataFrame = field(default_factory=pd.DataFrame)      # accelerators fed, per probe
    cold: pd.DataFrame = field(default_factory=pd.DataFrame)       # Cassandra's cold epochs
    ingest: pd.DataFrame = field(default_factory=pd.DataFrame)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def save(self, out: ResultsDir) -> None:
        for frame, name in ((self.batches, EXPERIMENT), (self.latency, f"{EXPERIMENT}_latency"),
                            (self.feeds, f"{EXPERIMENT}_feeds"), (self.cold, f"{EXPERIMENT}_cold"),
                            (self.ingest, f"{EXPERIMENT}_ingest")):
            out.write(name, frame)
        record_skipped(self, out)


# ------------------------------------------------------------------ sources: the same samples everywhere
@contextmanager
def written(system: str, images: imagesets.ImageSet, config: dict, services: ServicePool, result: LoaderRun):
    """(source for the loader, catalog) with ``images`` written into ``system``; emptied afterwards."""
    catalog = Catalog.from_frame(images.table)
    if system == CASSANDRA:
        endpoint, service = services.endpoint("cassandra", LOCATION)
        keyspace = cm.keyspace_for(images.encoding, len(images))
        report = cm.ingest_endpoint(endpoint, keyspace, images, replication_factor=config["replication_factor"],
                                    consistency_level=config["consistency"], progress=config.get("progress", True))
        result.ingest = pd.concat([result.ingest, pd.DataFrame([{"system": system, "encoding": images.encoding,
                                                                 **report}])])
        try:
            yield CassandraBlobs(endpoint, keyspace, config["in_flight"], consistency_level=config["consistency"]), \
                catalog, (endpoint, service, keyspace)
        finally:
            with cm.session_for(endpoint) as session:
                session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
        return
    with open_system(system, location_of(system), services) as store:
        start = time.perf_counter()
        store.put_many(images.items())
        store.flush()
        result.ingest = pd.concat([result.ingest, pd.DataFrame([{
            "system": system, "encoding": images.encoding, "samples": len(images), "bytes": images.nbytes,
            "seconds": time.perf_counter() - start}])])
        try:
            yield StoreBlobs(StoreOpener.of(store), config["in_flight"]), catalog, None
        finally:
            store.clear()


def location_of(system: str) -> str:
    """Local disk, page cache warm; an in-memory-only system (Redis) at memory (said in its rows)."""
    return "memory" if get_store_class(system).capabilities.in_memory_only else LOCATION


def whole_split(images: imagesets.ImageSet) -> sp.Splits:
    """Every sample in one split (the short-circuited loader reads the dataset)."""
    return sp.make_splits(sp.FrameMetadata(images.table, f"{images.encoding} image set"), [1], seed=0)


# ------------------------------------------------------------------ Table 1: the short-circuited loader
def short_circuited(source, catalog: Catalog, splits: sp.Splits, batch_size: int, depth: int,
                    policy: RepeatPolicy, pass_seconds: float, warm_epoch: bool = True) -> list[dict]:
    """``load_batch`` as fast as it goes, under the repeat policy: an unrecorded warm-up (a whole epoch
    where ``warm_epoch``, every sample read once: caches; else one pass: connections, this batch size),
    then repeats of ``pass_seconds`` of reading each. Time-based passes: a pass ends at the first batch
    after ``pass_seconds``; at the end of an epoch the next starts (reshuffled) within the pass, its
    pipeline refill timed like any batch; a pass starts where the previous one ended, so no pass begins
    with batches prefetched untimed. Per repeat: batch times, images, bytes, epochs crossed, CPU."""
    me = psutil.Process()
    with PrefetchLoader(source, catalog, splits, batch_size=batch_size, depth=depth) as loader:
        def next_batch():
            try:
                return loader.load_batch(0), 0
            except StopIteration:
                loader.rewind_splits()
                return loader.load_batch(0), 1

        start = time.perf_counter()
        for _ in range(loader.num_batches[0]):  # the warm-up
            loader.load_batch(0)
            if not warm_epoch and time.perf_counter() - start >= pass_seconds:
                break
        loader.rewind_splits()
        clock = {"last": time.perf_counter(), "cpu": me.cpu_times()}

        def one_pass(repeat: int):
            start, cpu0 = clock["last"], clock["cpu"]
            times, images, nbytes, epochs, last = [], 0, 0, 0, start
            while last - start < pass_seconds:
                batch, rewound = next_batch()
                now = time.perf_counter()
                times.append(now - last)
                last = now
                images += len(batch.ids)
                nbytes += sum(len(b) for b in batch.blobs)
                epochs += rewound
            cpu = me.cpu_times()
            clock.update(last=last, cpu=cpu)
            seconds = last - start
            mean, half, _ = mean_ci(np.asarray(times) * 1000)
            return seconds, {"batch_size": batch_size, "repeat": repeat, "images": images, "bytes": nbytes,
                             "seconds": seconds, "epochs_crossed": epochs, "ms_per_batch": mean,
                             "ms_per_batch_ci": half, "images_per_s": images / seconds, "mb_per_s": nbytes / seconds / 1e6,
                             "cpu_percent": 100 * ((cpu.user - cpu0.user) + (cpu.system - cpu0.system)) / seconds,
                             "threads": me.num_threads()}
        return repeat_cell(policy, one_pass).annotated_rows(policy)


# ------------------------------------------------------------------ cold epochs (Cassandra)
def cold_epochs(source, catalog: Catalog, splits: sp.Splits, service, keyspace: str, config: dict) -> list[dict]:
    """``cold_epochs`` whole epochs at ``cold_batch``, each right after the node was restarted with its
    files evicted: images/s from the first request to the last batch (the connection is set up before)."""
    service.nodetool("flush", keyspace)  # every row in sstables on disk: nothing replayed into memory at start
    rows = []
    for repeat in range(config["cold_epochs"]):
        restart_seconds, resident = restart_cold(service, keyspace)
        with PrefetchLoader(source, catalog, splits, batch_size=config["cold_batch"], depth=config["depth"]) as loader:
            loader.connect(0)
            images = nbytes = 0
            start = time.perf_counter()
            for _ in range(loader.num_batches[0]):
                batch = loader.load_batch(0)
                images += len(batch.ids)
                nbytes += sum(len(b) for b in batch.blobs)
            seconds = time.perf_counter() - start
        rows.append({"batch_size": config["cold_batch"], "repeat": repeat, "images": images, "bytes": nbytes,
                     "seconds": seconds, "images_per_s": images / seconds, "mb_per_s": nbytes / seconds / 1e6,
                     "cold_method": "restart-evict", "resident_fraction": resident.fraction,
                     "keyspace_bytes": resident.total_bytes, "server_restart_seconds": restart_seconds})
    return rows


def restart_cold(service, keyspace: str):
    """Restart the node with its files evicted, then evict the keyspace's files again (what the start read):
    (seconds from stop to ready, the keyspace's page-cache residency right after)."""
    seconds = restart_evicted(service)
    files = [path for path in service.data_dir.rglob("*") if path.is_file() and keyspace in path.parts]
    evict(files)
    return seconds, residency(files)


# ------------------------------------------------------------------ Table 2: latency under load
def latency_sweep(endpoint: dict, service, images: imagesets.ImageSet, config: dict, work: Path) -> list[dict]:
    """Table 2 up to saturation: each count of ``latency_loaders`` in turn, ``latency_repeats`` runs
    each; stops after the first count at which the mean aggregate MB/s stopped rising by
    ``saturation_gain`` (``saturation.saturation``: the server is saturated there)."""
    rows = []
    for loaders in config["latency_loaders"]:
        rows += [latency_under_load(endpoint, service, images, loaders, repeat, config, work)
                 for repeat in range(config["latency_repeats"])]
        if saturation(pd.DataFrame(rows), config["saturation_gain"]).saturated is not None:
            break
    return rows


def latency_under_load(endpoint: dict, service, images: imagesets.ImageSet, loaders: int, repeat: int,
                       config: dict, work: Path) -> dict:
    """``loaders`` loader processes on a keyspace of their own for ``latency_seconds``; read-latency
    percentiles of its data table from nodetool, and what they moved."""
    keyspace = f"seed004_lat_{images.encoding}_{loaders}_{repeat}"
    cm.ingest_endpoint(endpoint, keyspace, images, replication_factor=config["replication_factor"], progress=False)
    table = work / f"catalog-{images.encoding}.parquet"
    images.table.assign(id=images.table["id"].astype(str)).to_parquet(table)
    spec = {"endpoint": endpoint, "keyspace": keyspace, "catalog": str(table), "batch_size": config["latency_batch"],
            "in_flight": config["in_flight"], "depth": config["depth"], "seconds": config["latency_seconds"]}
    spec_path = work / f"loader-{keyspace}.json"
    spec_path.write_text(json.dumps(spec))
    procs = [subprocess.Popen([sys.executable, "-m", "storebench.experiments.ml_storage_study.loader_process", str(spec_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(loaders)]
    try:
        for proc in procs:
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a loader process did not start (exit {proc.wait()})")
        start = time.perf_counter()
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = [json.loads(proc.stdout.readline()) for proc in procs]
        wall = time.perf_counter() - start
        codes = [proc.wait(timeout=60) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    if any(codes):
        raise RuntimeError(f"loader processes failed (exit codes {codes})")
    percentiles = service.read_latency_percentiles(keyspace, "data_by_uuid")
    with cm.session_for(endpoint) as session:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    service.nodetool("clearsnapshot", "--all")  # a drop snapshots the keyspace (auto_snapshot): up to 1.5 GB a run
    moved = sum(r["bytes"] for r in reports)
    return {"encoding": images.encoding, "loaders": loaders, "repeat": repeat, "batch_size": config["latency_batch"],
            "images": sum(r["images"] for r in reports), "bytes": moved, "seconds": wall,
            "mb_per_s": moved / wall / 1e6, "images_per_s": sum(r["images"] for r in reports) / wall,
            **{k: v for k, v in percentiles.items()}}


# ------------------------------------------------------------------ accelerators fed
def feed(source, catalog: Catalog, splits: sp.Splits, consumers: int, config: dict) -> dict:
    """``consumers`` emulated accelerators sharing one loader for about ``feed_seconds``: each takes a
    batch and sleeps batch x per-image compute; utilisation = compute / wall, per accelerator."""
    batch_size, per_image = config["feed_batch"], 1 / config["accelerator_images_per_s"]
    lock, stop = threading.Lock(), threading.Event()
    busy, taken, first = [0.0] * consumers, [0] * consumers, [None] * consumers
    errors: list[BaseException] = []
    with PrefetchLoader(source, catalog, splits, batch_size=batch_size, depth=config["depth"]) as loader:
        loader.load_batch(0)
        loader.rewind_splits()

        def next_batch():
            with lock:
                try:
                    return loader.load_batch(0)
                except StopIteration:
                    loader.rewind_splits()
                    return loader.load_batch(0)

        def accelerator(i):
            try:
                while not stop.is_set():
                    batch = next_batch()
                    if first[i] is None:   # utilisation counts from the first batch on (the pipeline fills first)
                        first[i] = time.perf_counter()
                    compute = len(batch.ids) * per_image
                    time.sleep(compute)
                    busy[i] += compute
                    taken[i] += len(batch.ids)
            except BaseException as error:  # noqa: BLE001 - reported after the run
                errors.append(error)
                stop.set()

        threads = [threading.Thread(target=accelerator, args=(i,), daemon=True) for i in range(consumers)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        stop.wait(config["feed_seconds"])
        stop.set()
        for t in threads:
            t.join()
        end = time.perf_counter()
    if errors:
        raise errors[0]
    utilisation = np.array([b / (end - f) if f is not None else 0.0 for b, f in zip(busy, first)])
    return {"accelerators": consumers, "seconds": end - start, "images": sum(taken),
            "images_per_s": sum(taken) / (end - start), "utilisation_mean": float(utilisation.mean()),
            "utilisation_min": float(utilisation.min())}


def accelerators_fed(source, catalog, splits, rate: float, config: dict) -> list[dict]:
    """The largest count of emulated accelerators whose mean utilisation holds ``utilisation``:
    from the count the loader's rate predicts, down by a fifth until one holds, then up by one
    until one does not (at most ``8`` probes, each run for real)."""
    target, per_accelerator = config["utilisation"], config["accelerator_images_per_s"]
    count = max(1, int(rate * target / per_accelerator))
    probes: dict[int, dict] = {}

    def holds(c):
        if c not in probes:
            probes[c] = feed(source, catalog, splits, c, config)
        return probes[c]["utilisation_mean"] >= target

    while not holds(count) and count > 1 and len(probes) < 8:
        count = max(1, int(count * 0.8))
    while holds(count) and len(probes) < 8:
        count += 1
    best = max((c for c, p in probes.items() if p["utilisation_mean"] >= target), default=0)
    return [{**p, "predicted_from_rate": rate * target / per_accelerator, "largest_held": best}
            for _, p in sorted(probes.items())]


# ------------------------------------------------------------------ the run
def measure_system(system, images, config, services, result, latency, feeds, cold, work) -> list[dict]:
    """Table 1 rows of ``system`` for one image set; accelerators fed, Cassandra's cold epochs and
    Table 2 where asked."""
    splits = whole_split(images)
    versions = {"client_version": package_version(get_store_class(system).client_package)}
    with written(system, images, config, services, result) as (source, catalog, cassandra):
        versions["system_version"] = _system_version(system, services)
        rows = [r for i, b in enumerate(config["batch_sizes"])  # a whole warm-up epoch before the first only
                for r in short_circuited(source, catalog, splits, b, config["depth"], config["policy"],
                                         config["pass_seconds"], warm_epoch=i == 0)]
        if system in config["feed_systems"]:
            at = [r["images_per_s"] for r in rows if r["batch_size"] == config["feed_batch"]]
            rate = max(at or [r["images_per_s"] for r in rows])
            feeds += [{"system": system, "encoding": images.encoding, **p}
                      for p in accelerators_fed(source, catalog, splits, rate, config)]
        if cassandra is not None:
            endpoint, service, keyspace = cassandra
            if service is None:
                result.skipped.append(Skipped(system, LOCATION, "latency under load", "nodetool needs the local node's JMX"))
                if config["cold_epochs"]:
                    result.skipped.append(Skipped(system, COLD, "cold epochs", "a node storebench does not run "
                                                  "cannot be restarted by it"))
            else:
                cold += [{"system": system, "encoding": images.encoding, "location": COLD, **r, **versions}
                         for r in cold_epochs(source, catalog, splits, service, keyspace, config)]
                latency += latency_sweep(endpoint, service, images, config, work)
    return [{"system": system, "encoding": images.encoding, "location": location_of(system), **r, **versions}
            for r in rows]


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """Table 1 (every system), Table 2 (Cassandra) and the accelerators fed, into ``out``."""
    run(settings, out, progress)


def run(settings: Settings, out: ResultsDir | None = None, progress: bool = True) -> LoaderRun:
    config = {**settings.as_dict(), "progress": progress, "policy": settings.policy}
    result = LoaderRun(config)
    work = scratch_dir(EXPERIMENT)
    batches, latency, feeds, cold = [], [], [], []
    sets = {e: imagesets.image_set(config["images"], e, config["seed"], config["originals"]) for e in config["encodings"]}
    result.notes += [images.describe() for images in sets.values()]
    with ServicePool(config["endpoints"]) as services:
        for system in tqdm(config["systems"], desc="systems", disable=not progress):  # each server started once
            for images in sets.values():
                batches += measure_system(system, images, config, services, result, latency, feeds, cold, work)
    provenance = {**machine(), "scale": config["scale"]}
    result.batches, result.latency, result.feeds, result.cold = (pd.DataFrame(rows).assign(**provenance)
                                                                 for rows in (batches, latency, feeds, cold))
    result.ingest = result.ingest.assign(**provenance)
    if out is not None:
        result.save(out)
    return result


def _system_version(system: str, services: ServicePool) -> str:
    cls = get_store_class(system)
    if not cls.capabilities.has_server:
        return package_version(cls.client_package)
    _, service = services.endpoint(cls.service, location_of(system))
    return service.version() if service is not None else "external"
