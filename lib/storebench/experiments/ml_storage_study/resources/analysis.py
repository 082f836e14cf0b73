"""Analyse CPU and memory of the loaders (seed 001 Sec 5.11, Figs 16-21) from the recorded tables:
``resources`` (per workload, store and process group) and ``resources_timeline`` (every sample).
100% CPU is one core; the cores of the measuring machine come from the rows (``cpus``)."""
from __future__ import annotations

import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci
from storebench.experiments.ml_storage_study import published as paper001
from storebench.report.findings import Findings, below, judge, not_comparable

PAPER = {"text_graph": "text and graph: ext4 and TensorStore stay below 1,000% aggregate CPU; TileDB (and ext4) "
                       "spike in intervals (workers); TensorStore starts high, then drops to ext4's level",
         "image": "image: TensorStore and TileDB exceed 3,000% aggregate CPU",
         "memory": "TensorStore's virtual memory is almost constant for every workload"}
RSS_CONSTANT = 0.2  # "almost constant": RSS range within 20% of its peak


def totals(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per tick, the tree's total CPU% and RSS (client + workers + server)."""
    keys = ["workload", "system", "t_s"]
    if timeline.empty:
        return pd.DataFrame(columns=[*keys, "cpu_percent", "rss_bytes"])
    return timeline.groupby(keys, sort=False).agg(cpu_percent=("cpu_percent", "sum"),
                                                  rss_bytes=("rss_bytes", "sum")).reset_index()


def peaks(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per workload and store: peak and mean aggregate CPU%, peak RSS of the tree."""
    return totals(timeline).groupby(["workload", "system"], sort=False).agg(
        peak_cpu=("cpu_percent", "max"), mean_cpu=("cpu_percent", "mean"), peak_rss=("rss_bytes", "max")).reset_index()


def rss_spread(timeline: pd.DataFrame) -> pd.Series:
    """Per TensorStore workload and layout: (max RSS - min RSS) / max RSS of the tree over the epochs."""
    total = totals(timeline)
    ts = total[total.system.str.startswith("tensorstore")]
    return ts.groupby(["workload", "system"]).rss_bytes.agg(lambda x: (x.max() - x.min()) / max(x.max(), 1))


def cores(rows: pd.DataFrame) -> int:
    return int(rows.cpus.max()) if "cpus" in rows and len(rows) else 1


def groups(rows: pd.DataFrame) -> pd.DataFrame:
    """The detailed table: per group (client, workers, server), mean and peak CPU%, peak RSS."""
    columns = ["workload", "system", "config", "group", "mean_cpu_percent", "peak_cpu_percent", "peak_rss_bytes",
               "peak_n_processes", "epoch_seconds"]
    return rows[[c for c in columns if c in rows]]


def versions(rows: pd.DataFrame) -> pd.DataFrame:
    columns = ["system", "system_version", "client_version", "host", "cpus", "git_rev", "scale"]
    return rows[[c for c in columns if c in rows]].drop_duplicates()


def figure(timeline: pd.DataFrame, n_cores: int):
    """Figs 16-21: aggregate CPU% (top) and RSS (bottom) over the epoch, one column per workload."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    total = totals(timeline)
    workloads = list(dict.fromkeys(total.workload))
    fig, axes = plt.subplots(2, max(len(workloads), 1), figsize=(5.6 * max(len(workloads), 1), 8), squeeze=False)
    colors = plots.palette(sorted(set(total.system)))
    for col, workload in enumerate(workloads):
        for system, g in total[total.workload == workload].groupby("system", sort=False):
            every = max(len(g) // 8, 1)  # a few markers: the line is told apart by colour and marker
            axes[0][col].plot(g.t_s, g.cpu_percent, label=system, color=colors[system], linewidth=1.2,
                              marker=plots.marker(system), markevery=every, markersize=5)
            axes[1][col].plot(g.t_s, g.rss_bytes / 2**20, label=system, color=colors[system], linewidth=1.2,
                              marker=plots.marker(system), markevery=every, markersize=5)
        axes[0][col].axhline(100 * n_cores, color="0.5", linestyle=":", linewidth=1)
        axes[0][col].set_ylim(top=100 * n_cores * 1.1)
        axes[0][col].annotate(f"all {n_cores} cores busy", (0.01, 100 * n_cores), xycoords=("axes fraction", "data"),
                              fontsize=8, color="0.35", va="bottom")
        axes[0][col].set(title=f"{workload}: aggregate CPU (client + workers + server)", xlabel="time in epoch (s)",
                         ylabel="CPU % (100 = one core)")
        axes[1][col].set(title=f"{workload}: resident memory of the tree", xlabel="time in epoch (s)",
                         ylabel="RSS (MiB)")
    plots.system_legend(fig, sorted(set(total.system)))
    plots.question(fig, "How much CPU and memory does each store's best loader use over an epoch? (Figs 16-21)")
    fig.tight_layout()
    plots.footnote(fig, "Ours: epochs of each store's best loader configuration, sampled every tick; RSS sums the "
                        "processes (pages forked workers share count once per process: an upper bound). "
                        f"Seed: {paper001.MACHINE}.")
    return fig


def analyse(tables: ResultTables) -> Findings:
    rows, timeline = tables["resources"], tables["resources_timeline"]
    return findings(rows, timeline, claims(rows, timeline))


def figures(tables: ResultTables) -> dict:
    return {"cpu_memory": figure(tables["resources_timeline"], cores(tables["resources"]))}


def claims(rows: pd.DataFrame, timeline: pd.DataFrame) -> tuple:
    n_cores = cores(rows)
    peak = peaks(timeline)
    made = []
    for workload in ("text", "graph"):
        part = peak[(peak.workload == workload) & peak.system.isin(["localfs", "tensorstore", "tensorstore-zarr"])]
        statement = f"{workload}: ext4 and TensorStore stay below 1,000% aggregate CPU."
        why = (f"this machine has {n_cores} cores ({100 * n_cores}% at most): below 1,000% holds trivially"
               + (f" (our peak: {part.peak_cpu.max():.0f}%)" if len(part) else "; not measured at this scale"))
        made.append(not_comparable("Sec 5.11, Figs 16, 18", statement, f"peak aggregate CPU %, {workload}", why))
    image = peak[(peak.workload == "image") & peak.system.str.startswith(("tiledb", "tensorstore"))]
    made.append(not_comparable(
        "Sec 5.11, Fig 17", "image: TensorStore and TileDB reach over 3,000% aggregate CPU.",
        "peak aggregate CPU %, image", f"this machine has {n_cores} cores ({100 * n_cores}% at most; the seed 20)"
        + (f"; our peak {image.peak_cpu.max():.0f}%" if len(image) else "; not measured at this scale")))
    spread = rss_spread(timeline)
    statement = "TensorStore's memory use is almost constant for every workload."
    if len(spread):
        value, ci, n = mean_ci(spread)
        made.append(judge("Sec 5.11, Figs 19-21", statement,
                          f"TensorStore RSS range / peak, mean over {n} workload x layout (we sample RSS, the seed "
                          "plotted virtual memory)", value, _share_ci(value, ci), below(RSS_CONSTANT), unit="%"))
    else:
        made.append(not_comparable("Sec 5.11, Figs 19-21", statement, "TensorStore RSS range / peak",
                                   "TensorStore not measured at this scale"))
    return tuple(made)


def findings(rows: pd.DataFrame, timeline: pd.DataFrame, claims: tuple = ()) -> Findings:
    peak = peaks(timeline)
    n_cores = 100 * cores(rows)
    lines = ["| workload | store | config | epoch (s) | mean CPU % | peak CPU % | peak RSS (MiB) |",
             "|---|---|---|---|---|---|---|"]
    configs = rows.drop_duplicates(["workload", "system"]).set_index(["workload", "system"])
    for r in peak.itertuples():
        c = configs.loc[(r.workload, r.system)]
        lines.append(f"| {r.workload} | {r.system} | {c.config} | {c.epoch_seconds:.3g} | {r.mean_cpu:.0f} | "
                     f"{r.peak_cpu:.0f} | {r.peak_rss / 2**20:.0f} |")
    checks = []
    for workload in ("text", "graph"):
        part = peak[(peak.workload == workload) & peak.system.isin(["localfs", "tensorstore", "tensorstore-zarr"])]
        if len(part):
            checks.append(f"| {workload}: ext4 and TensorStore below 1,000% | peak {part.peak_cpu.max():.0f}% "
                          f"(at most {n_cores}% exists here) | not comparable ({n_cores // 100} cores; holds trivially) |")
    image = peak[(peak.workload == "image") & peak.system.str.startswith(("tiledb", "tensorstore"))]
    if len(image):
        checks.append(f"| image: TensorStore and TileDB over 3,000% | peak {image.peak_cpu.max():.0f}% of {n_cores}% "
                      f"possible | not comparable ({n_cores // 100} cores) |")
    spread = rss_spread(timeline)
    if len(spread):
        checks.append(f"| TensorStore memory almost constant | RSS range / peak: {spread.min():.0%}-{spread.max():.0%}"
                      f" (we sample RSS, the seed plotted virtual memory) | "
                      f"{'holds' if spread.max() < RSS_CONSTANT else 'does not hold'} |")
    text = "\n".join([f"**Paper (seed 001, Sec 5.11, Figs 16-21):** {PAPER['text_graph']}. {PAPER['image']}. "
                      f"{PAPER['memory']}. ({paper001.MACHINE})", "",
                      f"**Ours** ({n_cores // 100} cores: 100% is one core, {n_cores}% the machine):", "", *lines, "",
                      "| seed statement | ours | verdict |", "|---|---|---|", *checks])
    top = peak.loc[peak.peak_cpu.idxmax()] if len(peak) else None
    headline = ("resources: " + (f"highest aggregate CPU {top.peak_cpu:.0f}% ({top.system}, {top.workload}) of "
                                 f"{n_cores}% on this machine" if top is not None else "nothing measured")
                + " (paper: TensorStore/TileDB over 3,000% on 20 cores for images)")
    return Findings(headline, text, claims=claims)


def _share_ci(value: float, half: float) -> tuple:
    """A mean of shares (each in [0, 1]) with its t-interval, kept within [0, 1]; (None, None) without one."""
    if pd.isna(half):
        return None, None
    return max(value - half, 0.0), min(value + half, 1.0)
