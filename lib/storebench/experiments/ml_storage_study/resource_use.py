"""CPU and memory of the loaders (seed 001 Sec 5.11, Figs 16-21): epochs of each store's best loader
configuration per workload (repeated until ``min_seconds`` have passed), with CPU% and RSS of the whole process tree sampled in the
background (storebench.testbed.resources: the client process, its DataLoader workers, and the server's
processes for server stores) every ``interval_s``.

Loader configurations come from ``reports/dataloaders_best.csv`` (else the seed's Table 1, W
capped), as in the scalability experiment. 100% CPU is one core; this machine has 2 (the seed: 20,
so its "aggregate" figures reach 3,000%).
"""
from __future__ import annotations

import os

import pandas as pd

from storebench.experiments.ml_storage_study import published as paper001
from storebench.data import samples as sample_data
from storebench.core.config import choices
from storebench.loaders import rows as rowloaders
from storebench.loaders.opener import StoreOpener, start_method
from storebench.testbed.locations import store_root
from storebench.core.progress import tqdm
from storebench.testbed.resources import ResourceSampler
from storebench.core.results import machine
from storebench.data.rowformats import KeyLayout, row_format
from storebench.data.samples import WORKLOADS, row_fingerprints
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system
from storebench.stores.tables import TABLES
from storebench.experiments.common import Run, Skipped
from storebench.experiments.ml_storage_study.dataloaders import LOADER_SYSTEMS, LOCATION, loader_dataset, write_objects
from storebench.experiments.ml_storage_study.scalability import loader_configs

EXPERIMENT = "resources"
SEED = "001"
PAPER = {"text_graph": "text and graph: ext4 and TensorStore stay below 1,000% aggregate CPU; TileDB (and ext4) "
                       "spike in intervals (workers); TensorStore starts high, then drops to ext4's level",
         "image": "image: TensorStore and TileDB exceed 3,000% aggregate CPU",
         "memory": "TensorStore's virtual memory is almost constant for every workload"}


def _rows(value):
    bad = {k: v for k, v in value.items() if k not in WORKLOADS or not isinstance(v, int) or v < 1}
    return f"must map workloads to row counts >= 1; bad: {bad}" if bad else None


def _interval(value):
    return None if isinstance(value, (int, float)) and value > 0 else "must be a number of seconds > 0"


SCHEMA = {
    "workloads": (list[str], choices(WORKLOADS)),
    "rows": (dict, _rows),
    "systems": (list[str], choices(LOADER_SYSTEMS)),
    "best_configs": (str, None),
    "max_workers": (int, None),
    "interval_s": (float, _interval),
    "min_seconds": (float, _interval),  # epochs are repeated inside the sampler until this long
    "chunk_rows": (int, None),
}


def run(config: dict, out_dir=None, progress: bool = True, services: ServicePool | None = None) -> Run:
    from storebench.experiments.ml_storage_study.dataloaders import EpochRows

    result = Run(EpochRows())
    result.samples = []
    configs, source = loader_configs(config, out_dir)
    result.notes.append(f"loader configurations from {source}")
    pool = services or ServicePool(config["endpoints"])
    systems = sorted(config["systems"], key=lambda s: (start_method(s) is not None, s))
    try:
        for workload in config["workloads"]:
            samples = sample_data.load(workload, config["rows"][workload])
            fingerprints = row_fingerprints(samples.columns)
            for system in tqdm(systems, desc=f"{EXPERIMENT} {workload}", disable=not progress, leave=False):
                point = configs.get((workload, system))
                if point is None or (system in TABLES and samples.modality not in TABLES[system].modalities):
                    result.skipped.append(Skipped(system, LOCATION, workload, "no loader configuration for it"
                                                  if point is None else f"{system} holds no {workload} rows"))
                    continue
                _sample_one(result, config, workload, samples, fingerprints, system, point, pool, source)
    finally:
        if services is None:
            pool.close()
    return result


def _sample_one(result, config, workload, samples, fingerprints, system, point, pool, source) -> None:
    point = type(point)(point.loader, min(point.rows_per_key, len(samples)), point.batch_size, point.prefetch,
                        point.workers)
    with _loaded(config, workload, samples, system, point, pool) as (data_source, server_pids, version, client):
        dataset, batches = loader_dataset(data_source, samples.modality, fingerprints, point)
        rowloaders.run_epoch(rowloaders.row_loader(dataset, 0, batches=batches))  # warm-up, verifies every row
        label = f"{workload}/{system}"
        epochs = []
        with ResourceSampler(config.get("interval_s", 0.1), extra_pids=server_pids, label=label) as sampler:
            while not epochs or sum(e.seconds for e in epochs) < config.get("min_seconds", 3.0):
                dataset, batches = loader_dataset(data_source, samples.modality, fingerprints, point)
                loader = rowloaders.row_loader(dataset, point.workers, start_method(system), batches)
                epochs.append(rowloaders.run_epoch(loader))
        data_source.close()
    fields = {"workload": workload, "system": system, "config": paper001.config_text(vars(point)),
              "config_source": source, "epochs": len(epochs),
              "epoch_seconds": sum(e.seconds for e in epochs) / len(epochs), "n_rows": epochs[0].rows}
    result.samples.append(sampler.samples.assign(**fields))
    for summary in sampler.summary().to_dict("records"):
        result.writer.rows.append({"experiment": EXPERIMENT, **fields, **summary, "verified": True,
                                   "system_version": version, "client_version": client, **machine(),
                                   "scale": config["scale"], "load_avg_1m": os.getloadavg()[0]})


class _loaded:
    """The workload written into ``system`` (untimed); yields (source, server PIDs, versions); cleans up."""

    def __init__(self, config, workload, samples, system, point, pool):
        self.args = config, workload, samples, system, point, pool

    def __enter__(self):
        config, workload, samples, system, point, pool = self.args
        if system in TABLES:
            cls = TABLES[system]
            self.table = cls(store_root(f"{system}-{workload}-res", LOCATION), chunk_rows=config.get("chunk_rows", 64))
            self.table.write(samples)
            self.table.close()
            source = rowloaders.TableRows(rowloaders.TableOpener(cls, str(self.table.root),
                                                                 {"chunk_rows": self.table.chunk_rows}), len(samples))
            return source, [], self.table.system_version(), f"{cls.client_package} {package_version(cls.client_package)}"
        self.table = None
        self.context = open_system(system, "memory" if system == "redis" else LOCATION, pool)
        self.store = store = self.context.__enter__()
        layout = KeyLayout(len(samples), point.rows_per_key)
        store.clear()
        write_objects(store, samples, layout, 1)
        pids = store.local.pids() if getattr(store, "local", None) is not None else []
        return (rowloaders.StoreRows(StoreOpener.of(store), layout, row_format(samples)), pids, store.system_version(),
                f"{store.client_package} {package_version(store.client_package)}")

    def __exit__(self, *exc):
        if self.table is not None:
            self.table.clear()
            return
        try:
            self.store.clear()
        finally:
            self.context.__exit__(*exc)


# ------------------------------------------------------------------------------- analysis
def timelines(samples: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(samples, ignore_index=True) if samples else pd.DataFrame()


def totals(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per tick, the tree's total CPU% and RSS (client + workers + server)."""
    keys = ["workload", "system", "t_s"]
    return timeline.groupby(keys, sort=False).agg(cpu_percent=("cpu_percent", "sum"),
                                                  rss_bytes=("rss_bytes", "sum")).reset_index()


def figure(timeline: pd.DataFrame):
    """Figs 16-21: aggregate CPU% (top) and RSS (bottom) over the epoch, one column per workload."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    total = totals(timeline)
    workloads = list(dict.fromkeys(total.workload))
    fig, axes = plt.subplots(2, len(workloads), figsize=(5.6 * len(workloads), 8), squeeze=False)
    colors = plots.palette(sorted(set(total.system)))
    for col, workload in enumerate(workloads):
        for system, g in total[total.workload == workload].groupby("system", sort=False):
            axes[0][col].plot(g.t_s, g.cpu_percent, label=system, color=colors[system])
            axes[1][col].plot(g.t_s, g.rss_bytes / 2**20, label=system, color=colors[system])
        axes[0][col].axhline(100 * (os.cpu_count() or 1), color="0.5", linestyle=":", linewidth=1,
                             label=f"{os.cpu_count()} cores")
        axes[0][col].set(title=f"{workload}: aggregate CPU (client + workers + server)", xlabel="time in epoch (s)",
                         ylabel="CPU % (100 = one core)")
        axes[1][col].set(title=f"{workload}: resident memory of the tree", xlabel="time in epoch (s)",
                         ylabel="RSS (MiB)")
        axes[0][col].legend(fontsize=7)
    plots.footnote(fig, "Ours: epochs of each store's best loader configuration, sampled every tick; RSS sums the "
                        "processes (pages forked workers share count once per process: an upper bound). "
                        f"Seed: {paper001.MACHINE}.")
    fig.tight_layout()
    return fig


def findings(rows: pd.DataFrame, timeline: pd.DataFrame):
    from storebench.report.findings import Findings

    total = totals(timeline)
    peak = total.groupby(["workload", "system"], sort=False).agg(peak_cpu=("cpu_percent", "max"),
                                                                 mean_cpu=("cpu_percent", "mean"),
                                                                 peak_rss=("rss_bytes", "max")).reset_index()
    lines = ["| workload | store | config | epoch (s) | mean CPU % | peak CPU % | peak RSS (MiB) |",
             "|---|---|---|---|---|---|---|"]
    configs = rows.drop_duplicates(["workload", "system"]).set_index(["workload", "system"])
    for r in peak.itertuples():
        c = configs.loc[(r.workload, r.system)]
        lines.append(f"| {r.workload} | {r.system} | {c.config} | {c.epoch_seconds:.3g} | {r.mean_cpu:.0f} | "
                     f"{r.peak_cpu:.0f} | {r.peak_rss / 2**20:.0f} |")
    cores = 100 * (os.cpu_count() or 1)
    checks = []
    for workload in ("text", "graph"):
        part = peak[(peak.workload == workload) & peak.system.isin(["localfs", "tensorstore"])]
        if len(part):
            checks.append(f"| {workload}: ext4 and TensorStore below 1,000% | peak {part.peak_cpu.max():.0f}% "
                          f"(at most {cores}% exists here) | not comparable (2 cores; holds trivially) |")
    image = peak[(peak.workload == "image") & peak.system.str.startswith(("tiledb", "tensorstore"))]
    if len(image):
        checks.append(f"| image: TensorStore and TileDB over 3,000% | peak {image.peak_cpu.max():.0f}% of {cores}% "
                      f"possible | not comparable (2 cores) |")
    ts = total[total.system.str.startswith("tensorstore")]
    if len(ts):
        spread = ts.groupby(["workload", "system"]).rss_bytes.agg(lambda x: (x.max() - x.min()) / max(x.max(), 1))
        checks.append(f"| TensorStore memory almost constant | RSS range / peak: {spread.min():.0%}-{spread.max():.0%}"
                      f" (we sample RSS, the seed plotted virtual memory) | {'holds' if spread.max() < 0.2 else 'does not hold'} |")
    text = "\n".join([f"**Paper (seed 001, Sec 5.11, Figs 16-21):** {PAPER['text_graph']}. {PAPER['image']}. "
                      f"{PAPER['memory']}. ({paper001.MACHINE})", "",
                      f"**Ours** (2 cores: 100% is one core, {cores}% the machine):", "", *lines, "",
                      "| seed statement | ours | verdict |", "|---|---|---|", *checks])
    top = peak.loc[peak.peak_cpu.idxmax()] if len(peak) else None
    headline = ("resources: " + (f"highest aggregate CPU {top.peak_cpu:.0f}% ({top.system}, {top.workload}) of "
                                 f"{cores}% on this machine" if top is not None else "nothing measured")
                + " (paper: TensorStore/TileDB over 3,000% on 20 cores for images)")
    return Findings(headline, text)
