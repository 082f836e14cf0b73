"""Seed 004's prefetching loader on Cassandra and on every other system (Table 1, Fig 2, Table 2,
Sec 5.2's "how many GPUs does a loader feed").

- **single loader**: real ImageNet images (224x224, JPEG q90 and raw) replicated under UUIDs, written
  into Cassandra's three tables (the seed's data model) and, for the other systems, under integer
  keys; then the short-circuited loader (``load_batch`` as fast as it goes, nothing consumed) per
  batch size: ms per batch (mean +- 95% CI over the batches), images/s, MB/s, the loader's CPU%.
- **server latency under load**: 1 and several loader PROCESSES reading batches of
  ``latency_batch`` at once; read-latency percentiles from ``nodetool tablehistograms`` of a table
  no other run touched (its histogram holds these reads only), and the MB/s served meanwhile.
- **accelerators fed**: emulated accelerators (threads that take a batch and sleep its compute
  time, ``1 / accelerator_images_per_s`` per image: the seed's 200 img/s of a ResNet-50 on a TITAN
  RTX) sharing one loader; the largest count whose mean utilisation (compute / wall) stays at or
  above ``utilisation`` (MLPerf Storage's AU rule), found by running them, starting from the
  count the single-loader rate predicts.
"""
from __future__ import annotations

import json
import os
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
from storebench.experiments.cassandra_dl import published as paper004
from storebench.data import splits as sp
from storebench.core.config import choices, positive
from storebench.loaders.opener import StoreOpener
from storebench.loaders.prefetch import CassandraBlobs, Catalog, PrefetchLoader, StoreBlobs
from storebench.paths import scratch_dir
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.stores import STORES, get_store_class
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system
from storebench.core.stats import mean_ci
from storebench.experiments.common import Skipped

EXPERIMENT = "cassandra_loader"
SEED = "004"
LOCATION = "disk-warm"
CASSANDRA = "cassandra"  # the seed's loader: async single-partition reads of data_by_uuid


def _fraction(v):
    return None if 0 < v <= 1 else "must be in (0, 1]"


SCHEMA = {
    "encodings": (list[str], choices(imagesets.ENCODINGS)),
    "images": (int, positive),
    "originals": (int, positive),
    "systems": (list[str], choices(STORES)),
    "batch_sizes": (list[int], lambda v: None if all(b >= 1 for b in v) else "values must be >= 1"),
    "in_flight": (int, positive),
    "depth": (int, positive),
    "passes": (int, positive),
    "replication_factor": (int, positive),
    "consistency": (str, choices({"ONE", "QUORUM", "ALL", "LOCAL_ONE", "LOCAL_QUORUM"})),
    "latency_loaders": (list[int], lambda v: None if all(k >= 1 for k in v) else "values must be >= 1"),
    "latency_batch": (int, positive),
    "latency_seconds": (float, lambda v: None if v > 0 else "must be > 0"),
    "accelerator_images_per_s": (float, lambda v: None if v > 0 else "must be > 0"),
    "utilisation": (float, _fraction),
    "feed_batch": (int, positive),
    "feed_seconds": (float, lambda v: None if v > 0 else "must be > 0"),
    "feed_systems": (list[str], choices(STORES)),
}


@dataclass
class LoaderRun:
    config: dict
    batches: pd.DataFrame = field(default_factory=pd.DataFrame)    # one row per (system, encoding, B, pass)
    latency: pd.DataFrame = field(default_factory=pd.DataFrame)    # Table 2
    feeds: pd.DataFrame = field(default_factory=pd.DataFrame)      # accelerators fed, per probe
    ingest: pd.DataFrame = field(default_factory=pd.DataFrame)
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def save(self, out_dir: Path) -> None:
        for frame, name in ((self.batches, EXPERIMENT), (self.latency, f"{EXPERIMENT}_latency"),
                            (self.feeds, f"{EXPERIMENT}_feeds"), (self.ingest, f"{EXPERIMENT}_ingest")):
            frame.to_csv(Path(out_dir) / f"{name}.csv", index=False)


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
def short_circuited(source, catalog: Catalog, splits: sp.Splits, batch_size: int, depth: int, passes: int) -> list[dict]:
    """``passes`` epochs of ``load_batch`` as fast as it goes; per pass: batch times, images, bytes, CPU."""
    out = []
    me = psutil.Process()
    with PrefetchLoader(source, catalog, splits, batch_size=batch_size, depth=depth) as loader:
        for _ in range(loader.num_batches[0]):  # an unrecorded warm-up epoch: connections, JIT, caches
            loader.load_batch(0)
        loader.rewind_splits()
        for repeat in range(passes):
            times, images, nbytes = [], 0, 0
            cpu0, start = me.cpu_times(), time.perf_counter()
            last = start
            for _ in range(loader.num_batches[0]):
                batch = loader.load_batch(0)
                now = time.perf_counter()
                times.append(now - last)
                last = now
                images += len(batch.ids)
                nbytes += sum(len(b) for b in batch.blobs)
            seconds = time.perf_counter() - start
            cpu = me.cpu_times()
            loader.rewind_splits()
            mean, half, _ = mean_ci(np.array(times[1:] or times) * 1000)  # the first waits for the pipeline to fill
            out.append({"batch_size": batch_size, "repeat": repeat, "images": images, "bytes": nbytes,
                        "seconds": seconds, "ms_per_batch": mean, "ms_per_batch_ci": half,
                        "images_per_s": images / seconds, "mb_per_s": nbytes / seconds / 1e6,
                        "cpu_percent": 100 * ((cpu.user - cpu0.user) + (cpu.system - cpu0.system)) / seconds,
                        "threads": me.num_threads()})
    return out


# ------------------------------------------------------------------ Table 2: latency under load
def latency_under_load(endpoint: dict, service, images: imagesets.ImageSet, loaders: int, config: dict,
                       work: Path) -> dict:
    """``loaders`` loader processes on a keyspace of their own for ``latency_seconds``; read-latency
    percentiles of its data table from nodetool, and what they moved."""
    keyspace = f"seed004_lat_{images.encoding}_{loaders}"
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
    moved = sum(r["bytes"] for r in reports)
    return {"encoding": images.encoding, "loaders": loaders, "batch_size": config["latency_batch"],
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
def measure_system(system, images, config, services, result, latency, feeds, work) -> list[dict]:
    """Table 1 rows of ``system`` for one image set; accelerators fed and Table 2 where asked."""
    splits = whole_split(images)
    versions = {"client_version": package_version(get_store_class(system).client_package)}
    with written(system, images, config, services, result) as (source, catalog, cassandra):
        versions["system_version"] = _system_version(system, services)
        rows = [r for b in config["batch_sizes"]
                for r in short_circuited(source, catalog, splits, b, config["depth"], config["passes"])]
        if system in config["feed_systems"]:
            at = [r["images_per_s"] for r in rows if r["batch_size"] == config["feed_batch"]]
            rate = max(at or [r["images_per_s"] for r in rows])
            feeds += [{"system": system, "encoding": images.encoding, **p}
                      for p in accelerators_fed(source, catalog, splits, rate, config)]
        if cassandra is not None:
            endpoint, service, _ = cassandra
            if service is None:
                result.skipped.append(Skipped(system, LOCATION, "latency under load", "nodetool needs the local node's JMX"))
            else:
                latency += [latency_under_load(endpoint, service, images, n, config, work)
                            for n in config["latency_loaders"]]
    return [{"system": system, "encoding": images.encoding, "location": location_of(system), **r, **versions}
            for r in rows]


def run(config: dict, out_dir: Path | None = None, progress: bool = True) -> LoaderRun:
    result = LoaderRun(config)
    work = scratch_dir(EXPERIMENT)
    batches, latency, feeds = [], [], []
    config = {**config, "progress": progress}
    sets = {e: imagesets.image_set(config["images"], e, config["seed"], config["originals"]) for e in config["encodings"]}
    result.notes += [images.describe() for images in sets.values()]
    with ServicePool(config["endpoints"]) as services:
        for system in tqdm(config["systems"], desc="systems", disable=not progress):  # each server started once
            for images in sets.values():
                batches += measure_system(system, images, config, services, result, latency, feeds, work)
    provenance = {**machine(), "scale": config["scale"]}
    result.batches, result.latency, result.feeds = (pd.DataFrame(rows).assign(**provenance)
                                                    for rows in (batches, latency, feeds))
    result.ingest = result.ingest.assign(**provenance)
    if out_dir is not None:
        result.save(out_dir)
    return result


def _system_version(system: str, services: ServicePool) -> str:
    cls = get_store_class(system)
    if not cls.capabilities.has_server:
        return package_version(cls.client_package)
    _, service = services.endpoint(cls.service, location_of(system))
    return service.version() if service is not None else "external"


# ------------------------------------------------------------------ analysis
def table1(batches: pd.DataFrame) -> pd.DataFrame:
    """Per system, encoding and batch size: ms per batch (mean +- CI over the passes' means), images/s,
    MB/s, CPU%; the seed's Table 1 beside (Cassandra)."""
    rows = []
    for (system, encoding, b), g in batches.groupby(["system", "encoding", "batch_size"], sort=False):
        ms, ms_ci, _ = mean_ci(g.ms_per_batch)
        rate, rate_ci, _ = mean_ci(g.images_per_s)
        rows.append({"system": system, "encoding": encoding, "batch_size": b, "kb_per_image": g.bytes.sum()
                     / g.images.sum() / 1e3, "ms_per_batch": ms, "ms_ci": ms_ci, "images_per_s": rate,
                     "images_per_s_ci": rate_ci, "mb_per_s": g.mb_per_s.mean(), "cpu_percent": g.cpu_percent.mean(),
                     "images_per_s_per_core": rate / max(g.cpu_percent.mean() / 100, 1e-9)})
    ours = pd.DataFrame(rows)
    seed = paper004.TABLE1.assign(encoding=paper004.TABLE1.image_kb.map({20: "jpeg", 150: "raw"}))
    seed = seed.rename(columns={"ms_per_batch": "seed_ms_per_batch", "images_per_s": "seed_images_per_s",
                                "mb_per_s": "seed_mb_per_s"})[["encoding", "batch_size", "seed_ms_per_batch",
                                                              "seed_images_per_s", "seed_mb_per_s"]]
    return ours.merge(seed, on=["encoding", "batch_size"], how="left")


def table2(latency: pd.DataFrame) -> pd.DataFrame:
    """Ours beside the seed's Table 2 (its 1 and 16 loaders; ours: 1 and the most we ran)."""
    seed = paper004.TABLE2.rename(columns={c: f"seed_{c}" for c in ("mb_per_s", "p50", "p75", "p95", "p98", "p99")})
    seed = seed.assign(load=seed.loaders.map({1: "one loader", 16: "many loaders"}))
    ours = latency.assign(load=np.where(latency.loaders == 1, "one loader", "many loaders"))
    cols = ["encoding", "loaders", "mb_per_s", "images_per_s", "p50", "p75", "p95", "p98", "p99"]
    return ours[[*cols, "load"]].merge(seed.drop(columns="loaders"), on=["encoding", "load"], how="left")


def fed(feeds: pd.DataFrame) -> pd.DataFrame:
    """Per system and encoding: the largest count of emulated accelerators kept >= the utilisation
    threshold, the count the rate predicted, and the seed's answer (50-90 JPEG, 19-24 TIFF)."""
    if feeds.empty:
        return feeds
    out = feeds.groupby(["system", "encoding"], sort=False).agg(
        accelerators_fed=("largest_held", "first"), predicted=("predicted_from_rate", "first"),
        probes=("accelerators", lambda c: ", ".join(map(str, sorted(c))))).reset_index()
    return out.assign(seed=out.encoding.map({"jpeg": "50-90 GPUs", "raw": "19-24 GPUs"}))


def findings(batches: pd.DataFrame, latency: pd.DataFrame, feeds: pd.DataFrame, config: dict):
    from storebench.report.findings import Findings

    t1 = table1(batches)
    cass = t1[t1.system == CASSANDRA]
    lines = [f"Machine: this {os.cpu_count()}-core VM, Cassandra and the loader on the same cores; the seed: "
             f"{paper004.MACHINE}.", ""]
    headline = []
    for encoding, g in cass.groupby("encoding", sort=False):
        best = g.loc[g.images_per_s.idxmax()]
        seed = paper004.TABLE1[paper004.TABLE1.image_kb == (20 if encoding == "jpeg" else 150)]
        seed_best = seed.loc[seed.images_per_s.idxmax()]
        lines.append(f"- **Table 1, {encoding}**: our Cassandra loader peaks at {best.images_per_s:,.0f} img/s "
                     f"({best.mb_per_s:.0f} MB/s) at batch {best.batch_size}; the seed's at "
                     f"{seed_best.images_per_s:,.0f} img/s at batch {int(seed_best.batch_size)} "
                     f"(ratio {best.images_per_s / seed_best.images_per_s:.2f}x). Peak at "
                     f"{'the same' if best.batch_size == seed_best.batch_size else 'a different'} batch size.")
        headline.append(f"{encoding} {best.images_per_s:,.0f} img/s (seed {seed_best.images_per_s:,.0f})")
    jpeg = cass[cass.encoding == "jpeg"]
    if len(jpeg):
        top = jpeg.loc[jpeg.images_per_s.idxmax()]
        seed_per_core = paper004.PEAK_IMAGES_PER_S / (paper004.PEAK_CPU_PERCENT / 100)
        lines.append(f"- **Images/s per client core** (JPEG, best batch): ours {top.images_per_s_per_core:,.0f} "
                     f"(at {top.cpu_percent:.0f}% CPU of the loader process), the seed's {seed_per_core:,.0f} "
                     f"({paper004.PEAK_IMAGES_PER_S:,} img/s at ~{paper004.PEAK_CPU_PERCENT:,}%).")
    others = t1[t1.system != CASSANDRA]
    if len(others) and len(cass):
        best_by = t1.groupby(["system", "encoding"]).images_per_s.max().unstack()
        lines.append("- **Every system, same loader** (best img/s over batch sizes): "
                     + "; ".join(f"{s}: " + ", ".join(f"{e} {v:,.0f}" for e, v in row.items())
                                 for s, row in best_by.iterrows()) + ".")
    if len(latency):
        for encoding, g in latency.groupby("encoding", sort=False):
            one, many = g[g.loaders == g.loaders.min()].iloc[0], g[g.loaders == g.loaders.max()].iloc[0]
            holds = many.p95 <= 1.5 * one.p95 and many.p99 >= one.p99
            lines.append(f"- **Table 2, {encoding}**: {int(one.loaders)} loader {one.mb_per_s:.0f} MB/s, p95 "
                         f"{one.p95:.0f} us, p99 {one.p99:.0f} us; {int(many.loaders)} loaders {many.mb_per_s:.0f} "
                         f"MB/s, p95 {many.p95:.0f} us, p99 {many.p99:.0f} us. Seed: {paper004.FINDINGS['table2']}: "
                         f"{'**holds**' if holds else '**does not hold**'} (p95 within 1.5x and p99 growing).")
    answer = fed(feeds)
    if len(answer):
        lines.append("- **Accelerators fed** at >= {:.0%} utilisation ({:.0f} img/s each, batch {}): ".format(
            config["utilisation"], config["accelerator_images_per_s"], config["feed_batch"])
            + "; ".join(f"{r.system} {r.encoding}: {r.accelerators_fed} (rate predicted {r.predicted:.1f}; probes "
                        f"{r.probes})" for r in answer.itertuples())
            + f". Seed: {paper004.FINDINGS['feeds']} (computed, not run).")
    return Findings("Cassandra loader: " + "; ".join(headline), "\n".join(lines))


def figure(batches: pd.DataFrame, latency: pd.DataFrame):
    """Fig 2 (MB/s vs batch size per encoding, ours per system and the seed's Cassandra) and Table 2's percentiles."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    t1 = table1(batches)
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8))
    colors = plots.palette(sorted(t1.system.unique()))
    for ax, encoding in zip(axes[:2], ("jpeg", "raw")):
        part = t1[t1.encoding == encoding]
        for system, g in part.groupby("system"):
            ax.errorbar(g.batch_size, g.images_per_s, yerr=g.images_per_s_ci.fillna(0), marker="o", capsize=3,
                        label=system, color=colors[system])
        seed = paper004.TABLE1[paper004.TABLE1.image_kb == (20 if encoding == "jpeg" else 150)]
        ax.plot(seed.batch_size, seed.images_per_s, **plots.REFERENCE_STYLE, label="paper: Cassandra, 10 GbE")
        plots.log2_x(ax, sorted(set(part.batch_size) | set(seed.batch_size)))
        ax.set_yscale("log")
        ax.set(title=f"short-circuited loader, {encoding}", xlabel="batch size", ylabel="images / s")
        ax.legend(fontsize=7)
    if len(latency):
        pct = ["p50", "p75", "p95", "p98", "p99"]
        for (encoding, loaders), g in latency.groupby(["encoding", "loaders"]):
            axes[2].plot(pct, g[pct].iloc[0].to_numpy(), marker="o", label=f"{encoding}, {loaders} loader(s)")
        for r in paper004.TABLE2.itertuples():
            axes[2].plot(pct, [getattr(r, p) for p in pct], **plots.REFERENCE_STYLE)
        axes[2].set_yscale("log")
        axes[2].set(title="Cassandra read latency (nodetool); dashed: paper", ylabel="microseconds")
        axes[2].legend(fontsize=7)
    plots.footnote(fig, f"Ours: this VM, server and loader sharing its cores. Seed: {paper004.MACHINE}.")
    fig.tight_layout()
    return fig
