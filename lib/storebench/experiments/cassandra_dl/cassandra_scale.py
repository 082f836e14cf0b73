"""Seed 004 at scale: a ring that grows and shrinks under load (Sec 5.4) and data-parallel ranks
(Sec 6, Tables 3-4, Fig 3).

- **ring**: a Cassandra node on 127.0.0.1 holds the images (keyspace with ``replication_factor``,
  reads at ``consistency``); ``ring_loaders`` loaders (threads, each its own prefetching loader and
  connections) read it continuously; a second node on 127.0.0.2 joins (bootstrap streams its token
  ranges), then leaves (decommission streams them back). Per second: images and bytes read; every
  blob verified; every failed batch counted and the loader restarted (none is ever silently lost).
- **ranks**: ``torchrun`` with N gloo ranks on this machine (storebench.experiments.cassandra_dl.ranks), each reading its own
  training split i and validation split N+i from the same node, emulated compute per batch (the
  seed's per-batch times, recorded) and a real all-reduce of a ResNet-50-sized gradient per
  training step. Train and validation images/s vs ranks, the seed's Tables 3-4 beside.
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
from storebench.experiments.cassandra_dl import published as paper004, ranks
from storebench.data import splits as sp
from storebench.core.config import choices, positive
from storebench.loaders.prefetch import CassandraBlobs, Catalog, LoaderError, PrefetchLoader
from storebench.paths import scratch_dir
from storebench.core.results import machine
from storebench.experiments.cassandra_dl.ring import FIRST, SECOND, Ring
from storebench.stores.base import package_version

EXPERIMENT = "cassandra_scale"
SEED = "004"
KEYSPACE = "seed004_scale"

SCHEMA = {
    "encoding": (str, choices(imagesets.ENCODINGS)),
    "images": (int, positive),
    "originals": (int, positive),
    "in_flight": (int, positive),
    "depth": (int, positive),
    "batch_size": (int, positive),
    "replication_factor": (int, lambda v: None if v in (1, 2) else "must be 1 or 2 (a ring of two nodes)"),
    "consistency": (str, choices({"ONE", "QUORUM", "ALL"})),
    "ring": (bool, None),
    "ring_loaders": (int, positive),
    "ring_phases_s": (dict, lambda v: None if set(v) == {"before", "joined", "after"} and all(
        isinstance(x, (int, float)) and x >= 0 for x in v.values()) else "must map before, joined, after to seconds"),
    "ranks": (list[int], lambda v: None if all(r >= 1 for r in v) else "values must be >= 1"),
    "train_share": (float, lambda v: None if 0 < v < 1 else "must be in (0, 1)"),
    "train_seconds_per_batch": (float, lambda v: None if v >= 0 else "must be >= 0"),
    "val_seconds_per_batch": (float, lambda v: None if v >= 0 else "must be >= 0"),
    "gradient_elements": (int, positive),
}


@dataclass
class ScaleRun:
    config: dict
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    failures: list[dict] = field(default_factory=list)
    ranks: pd.DataFrame = field(default_factory=pd.DataFrame)
    notes: list[str] = field(default_factory=list)

    def save(self, out_dir: Path) -> None:
        for frame, name in ((self.timeline, f"{EXPERIMENT}_timeline"), (self.events, f"{EXPERIMENT}_events"),
                            (self.ranks, f"{EXPERIMENT}_ranks"), (pd.DataFrame(self.failures), f"{EXPERIMENT}_failures")):
            frame.assign(**machine(), scale=self.config["scale"]).to_csv(Path(out_dir) / f"{name}.csv", index=False)


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


def ring_summary(timeline: pd.DataFrame, events: pd.DataFrame, failures: list) -> dict:
    """Baseline (median img/s before the join), the lowest second during join and leave relative
    to it, and seconds after each event until the rate is back to 90% of the baseline."""
    at = dict(zip(events.event, events.t_s))
    rate = timeline.set_index("t_s").images
    baseline = float(rate[(rate.index >= 1) & (rate.index < at["join starts"])].median())

    def dip(start, end):
        window = rate[(rate.index >= int(start)) & (rate.index <= int(end))]
        return float(window.min() / baseline) if len(window) and baseline else float("nan")

    def recovery(after):
        later = rate[rate.index > after]
        back = later[later >= 0.9 * baseline]
        return float(back.index[0] - after) if len(back) else float("nan")

    return {"baseline_images_per_s": baseline,
            "join_seconds": at["join done (both Up/Normal)"] - at["join starts"],
            "leave_seconds": at["leave done"] - at["leave starts"],
            "lowest_during_join": dip(at["join starts"], at["join done (both Up/Normal)"]),
            "lowest_during_leave": dip(at["leave starts"], at["leave done"]),
            "recovery_after_join_s": recovery(at["join done (both Up/Normal)"]),
            "recovery_after_leave_s": recovery(at["leave done"]),
            "failed_batches": len(failures), "wrong_blobs": 0}


# ------------------------------------------------------------------ data-parallel ranks
def data_parallel(endpoint: dict, config: dict, work: Path) -> list[dict]:
    out = []
    for n in config["ranks"]:
        share = config["train_share"]
        with cm.session_for(endpoint) as session:
            splits = sp.make_splits(sp.CassandraMetadata(session, KEYSPACE), [share / n] * n + [(1 - share) / n] * n,
                                    group_by=["original"], label="kind", seed=config["seed"])
        path = splits.save(work / f"splits-{n}.json")
        spec = {"endpoint": endpoint, "keyspace": KEYSPACE, "splits": str(path), "in_flight": config["in_flight"],
                "depth": config["depth"], "batch_size": config["batch_size"],
                "train_seconds_per_batch": config["train_seconds_per_batch"],
                "val_seconds_per_batch": config["val_seconds_per_batch"],
                "gradient_elements": config["gradient_elements"]}
        spec_path = work / f"ddp-{n}.json"
        spec_path.write_text(json.dumps(spec))
        results = ranks.launch("storebench.experiments.cassandra_dl.ddp_rank", ["--spec", str(spec_path)], nproc=n,
                               out_dir=work / f"ranks-{n}")
        for phase in ("train", "val"):
            parts = [r[phase] for r in results]
            seconds = max(p["seconds"] for p in parts)
            images, nbytes = sum(p["images"] for p in parts), sum(p["bytes"] for p in parts)
            out.append({"ranks": n, "phase": phase, "images": images, "bytes": nbytes, "seconds": seconds,
                        "images_per_s": images / seconds, "mb_per_s": nbytes / seconds / 1e6,
                        "allreduce_share": float(np.mean([p["allreduce_seconds"] / p["seconds"] for p in parts]))})
    return out


# ------------------------------------------------------------------ the run
def run(config: dict, out_dir: Path | None = None, progress: bool = True) -> ScaleRun:
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
            result.notes.append("ring: not run at this scale (ring: false); `-p overrides '{ring: true}'` runs it")
        rows = data_parallel(endpoint, config, work)
    result.ranks = pd.DataFrame(rows).assign(system="cassandra", system_version=version,
                                             client_version=package_version("cassandra-driver"),
                                             torch_version=package_version("torch"))
    if out_dir is not None:
        result.save(out_dir)
    return result


def tables_3_4(ranks_frame: pd.DataFrame, encoding: str) -> pd.DataFrame:
    """Ours (ranks on one node) beside the seed's rows of the same total rank count."""
    seed = (paper004.TABLE3 if encoding == "jpeg" else paper004.TABLE4).assign(
        ranks=lambda f: f.nodes * f.ranks_per_node)
    seed = seed.groupby("ranks").first().reset_index()
    ours = ranks_frame.pivot_table(index="ranks", columns="phase", values=["images_per_s", "mb_per_s"])
    ours.columns = [f"{phase}_{what}" for what, phase in ours.columns]
    return ours.reset_index().merge(seed[["ranks", "nodes", "ranks_per_node", "train_images_per_s",
                                          "val_images_per_s"]].rename(columns={"train_images_per_s": "seed_train_images_per_s",
                                                                               "val_images_per_s": "seed_val_images_per_s"}),
                                    on="ranks", how="left")


def findings(result: ScaleRun, config: dict):
    from storebench.report.findings import Findings

    lines, headline = [], []
    if not result.timeline.empty:
        s = ring_summary(result.timeline, result.events, result.failures)
        lines.append(f"- **Ring scale-up/down under load** (RF {config['replication_factor']}, CL "
                     f"{config['consistency']}, {config['ring_loaders']} loaders): baseline "
                     f"{s['baseline_images_per_s']:,.0f} img/s; the join took {s['join_seconds']:.0f} s, the lowest second "
                     f"during it {s['lowest_during_join']:.0%} of the baseline, back to 90% {s['recovery_after_join_s']:.0f} s "
                     f"after; the leave took {s['leave_seconds']:.0f} s (lowest {s['lowest_during_leave']:.0%}, back "
                     f"{s['recovery_after_leave_s']:.0f} s after). Failed batches: {s['failed_batches']}; wrong blobs: 0 "
                     f"(every blob checked). Seed: {paper004.FINDINGS['scale']}: "
                     f"{'**holds**' if s['failed_batches'] == 0 else '**does not hold**'} (no failed request), "
                     "throughput dips while data streams on this shared 2-core machine.")
        headline.append(f"ring join/leave under load with {s['failed_batches']} failed batches")
    else:
        lines.append("- **Ring scale-up/down**: not run at this scale (see the note above).")
    if not result.ranks.empty:
        val = result.ranks[result.ranks.phase == "val"].set_index("ranks").images_per_s
        train = result.ranks[result.ranks.phase == "train"].set_index("ranks").images_per_s
        if len(val) > 1:
            lo, hi = val.index.min(), val.index.max()
            scale_val, scale_train = val[hi] / val[lo], train[hi] / train[lo]
            lines.append(f"- **Data-parallel ranks** ({lo} -> {hi} ranks on this machine): validation "
                         f"{val[lo]:,.0f} -> {val[hi]:,.0f} img/s ({scale_val:.2f}x for {hi / lo:.0f}x ranks), training "
                         f"{train[lo]:,.0f} -> {train[hi]:,.0f} img/s ({scale_train:.2f}x; a "
                         f"{config['gradient_elements'] * 4 / 1e6:.0f} MB all-reduce per step). Seed: "
                         f"{paper004.FINDINGS['training']}: validation scaling "
                         f"{'**holds**' if scale_val >= 0.8 * hi / lo else '**does not hold**'} here (>= 80% of linear).")
            headline.append(f"validation {scale_val:.2f}x with {hi // lo}x ranks")
        else:
            lines.append(f"- **Data-parallel ranks**: {int(val.index[0])} rank(s) only: validation {val.iloc[0]:,.0f} img/s, "
                         f"training {train.iloc[0]:,.0f} img/s.")
    return Findings("Cassandra at scale: " + ("; ".join(headline) or "see report"), "\n".join(lines))


def figure(result: ScaleRun, config: dict):
    """The throughput timeline with the join and leave marked, and images/s vs ranks (ours, the seed's)."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    fig, axes = plt.subplots(1, 2, figsize=(15, 4.6))
    if not result.timeline.empty:
        axes[0].plot(result.timeline.t_s, result.timeline.images, drawstyle="steps-post", label="images / s")
        for event in result.events.itertuples():
            axes[0].axvline(event.t_s, color="0.4", linestyle=":", linewidth=1)
            axes[0].text(event.t_s, axes[0].get_ylim()[1] * 0.95, event.event, rotation=90, fontsize=7, va="top")
        for failure in result.failures:
            axes[0].axvline(failure["t_s"], color="red", linewidth=1)
        axes[0].set(title=f"reads while a node joins and leaves (RF {config['replication_factor']})",
                    xlabel="seconds", ylabel="images / s (all loaders)")
    else:
        axes[0].text(0.5, 0.5, "ring not run at this scale", ha="center", transform=axes[0].transAxes)
    if not result.ranks.empty:
        for phase, g in result.ranks.groupby("phase"):
            axes[1].plot(g.ranks, g.images_per_s, marker="o", label=f"ours, {phase}")
        seed = (paper004.TABLE3 if config["encoding"] == "jpeg" else paper004.TABLE4).assign(
            ranks=lambda f: f.nodes * f.ranks_per_node).groupby("ranks").first().reset_index()
        seed = seed[seed.ranks <= max(4, result.ranks.ranks.max())]
        axes[1].plot(seed.ranks, seed.train_images_per_s, **plots.REFERENCE_STYLE, label="paper: train")
        axes[1].plot(seed.ranks, seed.val_images_per_s, **{**plots.REFERENCE_STYLE, "marker": "+"}, label="paper: validation")
        axes[1].set(title="data-parallel ranks (torchrun, gloo)", xlabel="ranks", ylabel="images / s")
        axes[1].legend(fontsize=8)
    plots.footnote(fig, f"Ours: one 2-core VM (both nodes, loaders and ranks share it). Seed: {paper004.MACHINE}.")
    fig.tight_layout()
    return fig
