"""Analyse CPU and memory of the loaders (seed 001 Sec 5.11, Figs 16-21) from the recorded tables:
``resources`` (per workload, store and process group: client, workers, server) and ``resources_timeline``
(every sample). 100% CPU is one core; the cores of the measuring machine come from the rows (``cpus``).
Memory is shown both ways: RSS (resident) and VSZ (virtual, what the seed plotted)."""
from __future__ import annotations

import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci
from storebench.experiments.ml_storage_study import published as paper001
from storebench.report.findings import UNKNOWN, Cause, Claim, Findings, below, judge, not_comparable

PAPER = {"text_graph": "text and graph: ext4 and TensorStore stay below 1,000% aggregate CPU; TileDB (and ext4) "
                       "spike in intervals (workers); TensorStore starts high, then drops to ext4's level",
         "image": "image: TensorStore and TileDB exceed 3,000% aggregate CPU",
         "memory": "TensorStore's virtual memory is almost constant for every workload"}
CONSTANT = 0.2  # "almost constant": range within 20% of its peak
GROUPS = ("client", "workers", "server")
MIB = 2**20


def _timeline(timeline: pd.DataFrame) -> pd.DataFrame:
    """The timeline with a ``vms_bytes`` column (timelines recorded before VSZ was sampled: NaN)."""
    return timeline if "vms_bytes" in timeline or timeline.empty else timeline.assign(vms_bytes=float("nan"))


def totals(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per tick, the tree's total CPU%, RSS and VSZ (client + workers + server)."""
    keys = ["workload", "system", "t_s"]
    if timeline.empty:
        return pd.DataFrame(columns=[*keys, "cpu_percent", "rss_bytes", "vms_bytes"])
    return _timeline(timeline).groupby(keys, sort=False).agg(
        cpu_percent=("cpu_percent", "sum"), rss_bytes=("rss_bytes", "sum"),
        vms_bytes=("vms_bytes", lambda v: v.sum(min_count=1))).reset_index()


def peaks(timeline: pd.DataFrame) -> pd.DataFrame:
    """Per workload and store: peak and mean aggregate CPU%, peak RSS and VSZ of the tree."""
    return totals(timeline).groupby(["workload", "system"], sort=False).agg(
        peak_cpu=("cpu_percent", "max"), mean_cpu=("cpu_percent", "mean"), peak_rss=("rss_bytes", "max"),
        peak_vms=("vms_bytes", "max")).reset_index()


def spread(timeline: pd.DataFrame, column: str = "vms_bytes") -> pd.Series:
    """Per TensorStore workload and layout: (max - min) / max of the tree's ``column`` (VSZ, or RSS) over the
    epochs; empty when ``column`` was not sampled."""
    total = totals(timeline)
    ts = total[total.system.str.startswith("tensorstore")].dropna(subset=[column])
    return ts.groupby(["workload", "system"])[column].agg(lambda x: (x.max() - x.min()) / max(x.max(), 1))


def rss_spread(timeline: pd.DataFrame) -> pd.Series:
    return spread(timeline, "rss_bytes")


def cores(rows: pd.DataFrame) -> int:
    return int(rows.cpus.max()) if "cpus" in rows and len(rows) else 1


def groups(rows: pd.DataFrame) -> pd.DataFrame:
    """The detailed table: per group (client, workers, server), mean and peak CPU%, peak RSS and VSZ."""
    columns = ["workload", "system", "config", "group", "mean_cpu_percent", "peak_cpu_percent", "peak_rss_bytes",
               "mean_rss_bytes", "peak_vms_bytes", "min_vms_bytes", "peak_n_processes", "epoch_seconds",
               "client_imported_rss_bytes", "client_warm_rss_bytes", "dataset", "dataset_bytes", "n_rows"]
    return rows[[c for c in columns if c in rows]]


def components(rows: pd.DataFrame) -> pd.DataFrame:
    """Per workload and store, one column set per component: mean CPU%, peak RSS and peak VSZ (MiB); and
    the client's RSS after its imports (before it opens the store): its share that is the interpreter's."""
    out = []
    for (workload, system), part in rows.groupby(["workload", "system"], sort=False):
        first = part.iloc[0]
        row = {"workload": workload, "system": system, "config": first.config,
               "epoch (s)": round(float(first.epoch_seconds), 3)}
        for group in GROUPS:
            g = part[part.group == group]
            if not len(g) or (group == "workers" and g.peak_n_processes.max() == 0):
                continue
            g = g.iloc[0]
            row[f"{group} CPU %"] = round(float(g.mean_cpu_percent))
            row[f"{group} RSS (MiB)"] = round(g.peak_rss_bytes / MIB)
            if "peak_vms_bytes" in g and pd.notna(g.peak_vms_bytes):
                row[f"{group} VSZ (MiB)"] = round(g.peak_vms_bytes / MIB)
        if "client_imported_rss_bytes" in first and pd.notna(first.client_imported_rss_bytes):
            row["client RSS after imports (MiB)"] = round(first.client_imported_rss_bytes / MIB)
        out.append(row)
    frame = pd.DataFrame(out)
    order = [c for c in frame.columns if not c.startswith(GROUPS)]
    order[4:4] = [c for g in GROUPS for c in frame.columns if c.startswith(f"{g} ")]
    return frame[order].astype({c: "Int64" for c in frame.columns if c.endswith(("%", "(MiB)"))})


def versions(rows: pd.DataFrame) -> pd.DataFrame:
    columns = ["system", "system_version", "client_version", "host", "cpus", "git_rev", "scale"]
    return rows[[c for c in columns if c in rows]].drop_duplicates()


def figure(timeline: pd.DataFrame, n_cores: int):
    """Figs 16-21: aggregate CPU% (top), RSS (middle) and VSZ (bottom, the seed's memory view) over the epoch,
    one column per workload."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    total = totals(timeline)
    workloads = list(dict.fromkeys(total.workload))
    memories = [("rss_bytes", "resident memory (RSS)")]
    if total.vms_bytes.notna().any():
        memories.append(("vms_bytes", "virtual memory (VSZ, the seed's view)"))
    n_rows = 1 + len(memories)
    fig, axes = plt.subplots(n_rows, max(len(workloads), 1), figsize=(5.6 * max(len(workloads), 1), 4 * n_rows),
                             squeeze=False)
    colors = plots.palette(sorted(set(total.system)))
    for col, workload in enumerate(workloads):
        for system, g in total[total.workload == workload].groupby("system", sort=False):
            every = max(len(g) // 8, 1)  # a few markers: the line is told apart by colour and marker
            style = dict(label=system, color=colors[system], linewidth=1.2, marker=plots.marker(system),
                         markevery=every, markersize=5)
            axes[0][col].plot(g.t_s, g.cpu_percent, **style)
            for row, (column, _) in enumerate(memories, 1):
                axes[row][col].plot(g.t_s, g[column] / MIB, **style)
        axes[0][col].axhline(100 * n_cores, color="0.5", linestyle=":", linewidth=1)
        axes[0][col].set_ylim(top=100 * n_cores * 1.1)
        axes[0][col].annotate(f"all {n_cores} cores busy", (0.01, 100 * n_cores), xycoords=("axes fraction", "data"),
                              fontsize=8, color="0.35", va="bottom")
        axes[0][col].set(title=f"{workload}: aggregate CPU (client + workers + server)", xlabel="time in epoch (s)",
                         ylabel="CPU % (100 = one core)")
        for row, (column, what) in enumerate(memories, 1):
            axes[row][col].set(title=f"{workload}: {what} of the tree", xlabel="time in epoch (s)",
                               ylabel=f"{'RSS' if column == 'rss_bytes' else 'VSZ'} (MiB)")
    plots.system_legend(fig, sorted(set(total.system)))
    plots.question(fig, "How much CPU and memory does each store's best loader use over an epoch? (Figs 16-21)")
    fig.tight_layout()
    fresh = "client_process" in timeline and (timeline.client_process == "fresh per store").all()
    how = ("each store's client in a fresh process of its own, sampled from outside every tick" if fresh else
           "every store read in turn by one long-lived client process, sampled every tick")
    plots.footnote(fig, f"Ours: epochs of each store's best loader configuration, {how}; RSS and VSZ sum the processes "
                        f"(pages forked workers share count once per process: an upper bound). Seed: {paper001.MACHINE}.")
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
               + (f" (our peak: {part.peak_cpu.max():.0f}%)" if len(part) else "; not measured at this scale")
               + "; a machine with at least 10 cores (the seed's had 20) would test it")
        made.append(not_comparable("Sec 5.11, Figs 16, 18", statement, f"peak aggregate CPU %, {workload}", why))
    image = peak[(peak.workload == "image") & peak.system.str.startswith(("tiledb", "tensorstore"))]
    made.append(not_comparable(
        "Sec 5.11, Fig 17", "image: TensorStore and TileDB reach over 3,000% aggregate CPU.",
        "peak aggregate CPU %, image", f"this machine has {n_cores} cores ({100 * n_cores}% at most; the seed 20)"
        + (f"; our peak {image.peak_cpu.max():.0f}%" if len(image) else "; not measured at this scale")
        + "; a machine with more than 30 cores would test it"))
    made.append(_memory_claim(timeline))
    return tuple(made)


def _memory_claim(timeline: pd.DataFrame) -> Claim:
    """The seed plotted virtual memory: judged on VSZ where it was sampled (RSS beside, in the metric's text),
    else on RSS (older tables), saying so."""
    ref, statement = "Sec 5.11, Figs 19-21", "TensorStore's memory use is almost constant for every workload."
    vsz, rss = spread(timeline, "vms_bytes"), rss_spread(timeline)
    shown, view = (vsz, "VSZ (the seed's virtual-memory view)") if len(vsz) else (rss, "RSS (VSZ not sampled)")
    if not len(shown):
        return not_comparable(ref, statement, "TensorStore memory range / peak", "TensorStore not measured at "
                              "this scale")
    value, ci, n = mean_ci(shown)
    beside = f"; RSS range / peak {rss.min():.0%}-{rss.max():.0%}" if len(vsz) and len(rss) else ""
    cause = Cause(UNKNOWN, f"TensorStore's {view.split(' ')[0]} moves by more than {CONSTANT:.0%} of its peak over "
                  "the epochs (its caches and thread pools grow with the reads), which the seed's 20-core run with up "
                  "to 32 workers may have hidden at its scale", "the seed's memory numbers (its Figs 19-21 give no "
                  "values) or its TensorStore context settings (cache pool, data-copy concurrency)")
    return judge(ref, statement, f"TensorStore {view} range / peak over the epochs, mean over {n} workload x "
                 f"layout{beside}", value, _share_ci(value, ci), below(CONSTANT), unit="%", cause=cause)


def findings(rows: pd.DataFrame, timeline: pd.DataFrame, claims: tuple = ()) -> Findings:
    peak = peaks(timeline)
    n_cores = 100 * cores(rows)
    lines = ["| workload | store | config | data | epoch (s) | mean CPU % | peak CPU % | peak RSS (MiB) | "
             "peak VSZ (MiB) |", "|---|---|---|---|---|---|---|---|---|"]
    configs = rows.drop_duplicates(["workload", "system"]).set_index(["workload", "system"])
    for r in peak.itertuples():
        c = configs.loc[(r.workload, r.system)]
        data = (f"{c.dataset}, {c.dataset_bytes / 1e6:.0f} MB" if "dataset_bytes" in configs and
                pd.notna(c.dataset_bytes) else f"{int(c.n_rows):,} rows")
        vms = f"{r.peak_vms / MIB:.0f}" if pd.notna(r.peak_vms) else "not sampled"
        lines.append(f"| {r.workload} | {r.system} | {c.config} | {data} | {c.epoch_seconds:.3g} | {r.mean_cpu:.0f} | "
                     f"{r.peak_cpu:.0f} | {r.peak_rss / MIB:.0f} | {vms} |")
    fresh = "client_process" in rows and (rows.client_process == "fresh per store").all()
    per_component = components(rows)
    component_lines = []
    if len(per_component):
        header = list(per_component.columns)
        component_lines = ["**Per component** (mean CPU %; peak RSS and VSZ in MiB; workers only where the "
                           "configuration has them, server only for server stores):", "",
                           "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                           *("| " + " | ".join("" if v is pd.NA or pd.isna(v) else str(v) for v in row) + " |"
                             for row in per_component.itertuples(index=False))]
    text = "\n".join([f"**Paper (seed 001, Sec 5.11, Figs 16-21):** {PAPER['text_graph']}. {PAPER['image']}. "
                      f"{PAPER['memory']}. ({paper001.MACHINE})", "",
                      f"**Ours** ({n_cores // 100} cores: 100% is one core, {n_cores}% the machine; "
                      + ("each store's client in a fresh process of its own, sampled from outside" if fresh else
                         "every store read from ONE long-lived client process, in turn: a store's client memory "
                         "includes what the stores before it left in that process")
                      + "):", "", *lines, "", *component_lines])
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
