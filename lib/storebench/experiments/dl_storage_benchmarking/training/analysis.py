"""Analyse training (Cheng & Gunawi, Sec 5.5, Fig 8) from its recorded table: epoch time, data wait and
utilisation per configuration, remote vs local, batched vs per-sample, and the paper's statements judged."""
from __future__ import annotations

import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci
from storebench.experiments.dl_storage_benchmarking.published import SEED_003_MACHINE
from storebench.report.findings import Findings, Cause, above, judge, judge_metric, not_comparable, ratio, within

CONFIG_KEYS = ["system", "location", "samples_per_object", "loader", "batch_size", "workers", "emulated_compute_s"]
# Seed 003 Sec 5.5 gives no table for Fig 8; its text gives these (their hardware: Emulab d430,
# 1 GbE, Redis on another node; LeNet-5 on the CPU, full MNIST).
PAPER = {"remote_vs_local_large_batch": (1.2, 3.4), "small_batches": (1, 4), "similar_at_small_batches": True}
SIMILAR = (0.8, 1.25)  # "similar": within 20% either way
LOCAL, REMOTE = "localfs", "redis"


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI half-width over repeats of time, data wait and utilisation, per configuration."""
    out = []
    for key, group in rows.groupby(CONFIG_KEYS, sort=False):
        row = dict(zip(CONFIG_KEYS, key))
        for column, name in (("epoch_seconds", "epoch"), ("data_wait_seconds", "wait"),
                             ("compute_seconds", "compute"), ("utilisation", "utilisation")):
            mean, half, n = mean_ci(group[column])
            row[f"{name}_mean"], row[f"{name}_ci95"] = mean, half
        row["repeats"] = n
        row["final_loss"] = float(group.final_loss.mean())
        row["system_version"] = group.system_version.iloc[0]
        row["has_server"] = bool(group.has_server.iloc[0]) if "has_server" in group else row["system"] != LOCAL
        out.append(row)
    return pd.DataFrame(out)


def table(summary: pd.DataFrame, value: str = "epoch") -> pd.DataFrame:
    """(system, loader, workers) x batch size, cells 'mean ± ci95'."""
    frame = summary.copy()
    frame["cell"] = [f"{m:.3g} ± {c:.2g}" if pd.notna(c) else f"{m:.3g}"
                     for m, c in zip(frame[f"{value}_mean"], frame[f"{value}_ci95"])]
    wide = frame.pivot_table(index=["emulated_compute_s", "system", "loader", "workers"], columns="batch_size",
                             values="cell", aggfunc="first", sort=False)
    return wide[sorted(wide.columns)]  # batch sizes in order, whichever system measured which first


def ratios(summary: pd.DataFrame, local: str = LOCAL, remote: str = REMOTE) -> pd.DataFrame:
    """Per (emulated compute, loader, batch, workers): remote/local epoch time; all within one run. Rows
    in batch order within each loader and worker count (parts may have measured the batches in any order)."""
    keys = CONFIG_KEYS[3:] + ["system"]  # loader, batch_size, workers, emulated_compute_s, system
    s = summary.drop_duplicates(keys).set_index(keys)["epoch_mean"]
    present = set(s.index)
    out = []
    for (c, loader, b, w), _ in summary.groupby(["emulated_compute_s", "loader", "batch_size", "workers"], sort=False):
        row = {"emulated_compute_s": c, "loader": loader, "batch_size": b, "workers": w}
        if (loader, b, w, c, local) in present and (loader, b, w, c, remote) in present:
            row["remote_vs_local"] = s[(loader, b, w, c, remote)] / s[(loader, b, w, c, local)]
        out.append(row)
    return pd.DataFrame(out).sort_values(["emulated_compute_s", "loader", "workers", "batch_size"], ignore_index=True)


def batched_speedup(summary: pd.DataFrame) -> pd.DataFrame:
    """Per system, batch size, workers, compute: per-sample time / batched time (>1: batched faster)."""
    keys = ["emulated_compute_s", "system", "batch_size", "workers"]
    wide = summary.pivot_table(index=keys, columns="loader", values="epoch_mean").reset_index()
    if {"per-sample", "batched"} <= set(wide.columns):
        wide["batched_speedup"] = wide["per-sample"] / wide["batched"]
    return wide


def _span(values: pd.Series, spec: str, suffix: str = "") -> str:
    values = values.dropna()
    if values.empty:
        return "n/a (one step per epoch at this scale)"
    lo, hi = values.min(), values.max()
    return f"{lo:{spec}}{suffix}" if f"{lo:{spec}}" == f"{hi:{spec}}" else f"{lo:{spec}}-{hi:{spec}}{suffix}"


# ------------------------------------------------------------------------------- figure
def figure(summary: pd.DataFrame):
    """Fig 8 layout: epoch time vs batch size per system (one line per workers; solid per-sample,
    dashed batched), then remote/local ratio and utilisation."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    real = summary[summary.emulated_compute_s == 0]
    served = summary.drop_duplicates("system").set_index("system").has_server
    systems = sorted(dict.fromkeys(summary.system), key=lambda s: bool(served[s]))  # local first, as in Fig 8
    workers = sorted(summary.workers.unique())
    colors = plots.palette(workers)
    styles = {"per-sample": "-", "batched": "--"}
    batch = sorted(summary.batch_size.unique())
    columns = min(max(len(systems), 2), 3)
    rows = -(-len(systems) // columns)
    fig, axes = plt.subplots(rows + 1, columns, figsize=(4.8 * columns, 4.25 * (rows + 1)), squeeze=False)
    system_axes = axes[:rows].ravel()
    shared_y = (real.epoch_mean.min() * 0.8, (real.epoch_mean + real.epoch_ci95.fillna(0)).max() * 1.2) \
        if len(real) else None
    for ax, system in zip(system_axes, systems):
        group = real[real.system == system]
        for (loader, w), g in group.groupby(["loader", "workers"], sort=False):
            g = g.sort_values("batch_size")
            ax.errorbar(g.batch_size, g.epoch_mean, yerr=plots.errorbars(g.epoch_mean, g.epoch_ci95), capsize=3,
                        marker=plots.marker(system), linestyle=styles.get(loader, ":"), color=colors[w],
                        label=f"{w} workers, {loader}")
            plots._cut_marks(ax, g.batch_size, g.epoch_mean, g.epoch_ci95, colors[w])
        ax.set_yscale("log")  # after the error bars (see plots.lines_with_ci)
        plots.ticks_at(ax, sorted(group.batch_size.unique()) or batch, log=True)
        if shared_y:
            ax.set_ylim(min(shared_y[0], ax.get_ylim()[0]), shared_y[1])
        where = group.location.iloc[0] if len(group) else ""
        ax.set(title=f"{system} (data {where})", xlabel="batch size (samples)", ylabel="epoch time (s, log)")
    for extra in system_axes[len(systems):]:
        extra.axis("off")
    ratio_ = ratios(real)
    ax = axes[rows][0]
    if "remote_vs_local" in ratio_:
        for (loader, w), g in ratio_.dropna(subset=["remote_vs_local"]).groupby(["loader", "workers"], sort=False):
            ax.plot(g.batch_size, g.remote_vs_local, marker="o", linestyle=styles.get(loader, ":"), color=colors[w],
                    label=f"{w} workers, {loader}")
        lo, hi = PAPER["remote_vs_local_large_batch"]
        big = [b for b in batch if b >= 16] or batch
        ax.fill_between([min(big), max(big)], lo, hi, color="0.85", zorder=0,
                        label=f"paper: {lo}-{hi}x as batches grow (their LAN)")
        ax.axhline(1, color="0.5", linewidth=0.8)
        plots.ticks_at(ax, sorted(set(ratio_.batch_size.dropna())), log=True)
        ax.set(title="remote (redis) / local (localfs) epoch time", xlabel="batch size (samples)",
               ylabel="time ratio (x)")
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    else:
        ax.axis("off")
    ax = axes[rows][1]
    util = summary[summary.system.isin([LOCAL, REMOTE])].copy()  # the paper's pair; every system: the table
    util["setting"] = [f"{s}, {lo}" + (f", {c * 1e3:g} ms/batch emulated" if c else "")
                       for s, lo, c in zip(util.system, util.loader, util.emulated_compute_s)]
    top = util[util.workers == max(workers)]
    for (setting, system, loader, emulated), g in top.groupby(["setting", "system", "loader", "emulated_compute_s"],
                                                              sort=False):
        g = g.sort_values("batch_size")
        st = plots.system_style(system)
        ax.errorbar(g.batch_size, g.utilisation_mean, yerr=g.utilisation_ci95.fillna(0), capsize=3,
                    marker=st["marker"], color=st["color"], linestyle=styles.get(loader, ":"),
                    markerfacecolor="white" if emulated else st["color"], label=setting)
    plots.ticks_at(ax, sorted(top.batch_size.unique()) or batch, log=True)
    ax.set_ylim(0, 1.05)
    ax.set(title=f"utilisation (compute / time, step 0 excluded), {max(workers)} workers",
           xlabel="batch size (samples)", ylabel="utilisation (1 = never waits for data)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    for extra in axes[rows][2:]:
        extra.axis("off")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors[w], marker="o") for w in workers] + \
        [Line2D([], [], color="0.3", linestyle=styles[k]) for k in styles]
    plots.legend_outside(fig, handles, [f"{w} DataLoader workers" for w in workers]
                         + ["per-sample __getitem__", "batched __getitems__"])
    plots.question(fig, "How long is an end-to-end training epoch (LeNet-5) from each store, and does remote "
                        "storage slow it down as in the paper?")
    fig.tight_layout()
    versions = "; ".join(f"{s}: {v}" for s, v in summary.groupby("system", sort=False).system_version.first().items())
    plots.footnote(fig, f"Ours: mean of the repeats, error bars 95% CI; solid = per-sample __getitem__ (one get per "
                        f"sample, the paper's RedisMnist), dashed = batched __getitems__ (one multi-read per batch). "
                        f"Versions: {versions}. Shaded: seed 003 Sec 5.5 text ({SEED_003_MACHINE}). Utilisation: open "
                        f"markers = with emulated compute per batch.")
    return fig


# ------------------------------------------------------------------------------- the contract
def analyse(tables: ResultTables) -> Findings:
    table_ = summary(tables["training"])
    return findings(table_, claims(table_))


def figures(tables: ResultTables) -> dict:
    return {"epoch_time": figure(summary(tables["training"]))}


def _epoch(summary: pd.DataFrame, system: str, loader: str, batch: int, workers: int):
    """(mean, ci95) of the epoch time of one real-step configuration, or None."""
    at = summary[(summary.emulated_compute_s == 0) & (summary.system == system) & (summary.loader == loader)
                 & (summary.batch_size == batch) & (summary.workers == workers)]
    return (at.epoch_mean.iloc[0], at.epoch_ci95.iloc[0]) if len(at) else None


def _remote_vs_local(summary: pd.DataFrame, batch: int, workers: int):
    remote, local = _epoch(summary, REMOTE, "per-sample", batch, workers), _epoch(summary, LOCAL, "per-sample",
                                                                                   batch, workers)
    if remote is None or local is None:
        return None
    return ratio(REMOTE, f"{REMOTE} / {LOCAL} epoch time, per-sample, batch {batch}, {workers} workers", *remote,
                 *local)


# Why a statement may not hold here (storebench.report.findings.Cause)
TWO_HOSTS = "Redis on another host over a 1 GbE LAN, as in the paper (docs/two-hosts.md)"
HIDDEN_CAUSE = Cause(
    "the machine", "the training step, the loader and the Redis server share two cores here, so loading competes "
    "with the step for CPU instead of overlapping with it, even at small batches.",
    "the same grid on a machine with cores to spare for the loader and the server (or " + TWO_HOSTS + ")")
LOOPBACK_CAUSE = Cause(
    "the machine", "Redis is on loopback here: an HGET costs no LAN round trip, so remote loading is cheaper "
    "relative to local storage than in the paper.", TWO_HOSTS)
WORKERS_CAUSE = Cause(
    "the machine", "two cores: each loader worker competes with the training process and the Redis server for them, "
    "so workers add processes, not parallelism.",
    "the same grid on a machine with more cores than workers + 2 (training process and server)")


def claims(summary: pd.DataFrame) -> tuple:
    """The paper's Sec 5.5 statements, judged on the per-sample loader (theirs) with the real LeNet-5 step."""
    ref = "Sec 5.5, Fig 8"
    real = summary[(summary.emulated_compute_s == 0) & (summary.loader == "per-sample")]
    both = real[real.system == REMOTE].merge(real[real.system == LOCAL], on=["batch_size", "workers"])
    batches = sorted(both.batch_size.unique())
    workers = sorted(both.workers.unique())
    lo, hi = PAPER["remote_vs_local_large_batch"]
    made = []
    where = f"({REMOTE} on loopback here, on another node over 1 GbE in the paper)"

    statement = "At batch sizes 1 and 4 the training step hides loading: local storage and Redis are similar."
    small = [b for b in batches if b <= max(PAPER["small_batches"])]
    metric = _remote_vs_local(summary, small[0], workers[0]) if small else None
    if metric is None:
        made.append(not_comparable(ref, statement, f"{REMOTE} / {LOCAL} epoch time at batch <= 4",
                                   "no batch size <= 4 measured for both systems at this scale"))
    else:
        made.append(judge_metric(ref, statement, f"{metric.column} {where}", metric, within(*SIMILAR),
                                 cause=HIDDEN_CAUSE))

    statement = f"As the batch grows, loading from Redis takes {lo}-{hi}x the time of local storage."
    large = [b for b in batches if b >= 16]
    metric = _remote_vs_local(summary, large[-1], workers[0]) if large else None
    if metric is None:
        made.append(not_comparable(ref, statement, f"{REMOTE} / {LOCAL} epoch time at a large batch",
                                   "no batch size >= 16 measured for both systems at this scale"))
    else:
        made.append(judge_metric(ref, statement, f"{metric.column} {where}", metric, within(lo, hi),
                                 cause=LOOPBACK_CAUSE))

    statement = "Increasing the loading workers significantly helps remote loading."
    if large and len(workers) > 1:
        few = _epoch(summary, REMOTE, "per-sample", large[-1], workers[0])
        many = _epoch(summary, REMOTE, "per-sample", large[-1], workers[-1])
        metric = ratio(REMOTE, f"{REMOTE} epoch time with {workers[0]} / with {workers[-1]} workers, per-sample, "
                               f"batch {large[-1]}", *few, *many)
        made.append(judge_metric(ref, statement, metric.column, metric, above(1.0), cause=WORKERS_CAUSE))
    else:
        made.append(not_comparable(ref, statement, f"{REMOTE} epoch time, fewest / most workers",
                                   "one worker count or no large batch measured at this scale"))

    statement = "Even with more workers, loading remotely still takes much longer than locally."
    metric = _remote_vs_local(summary, large[-1], workers[-1]) if large and len(workers) > 1 else None
    if metric is None:
        made.append(not_comparable(ref, statement, f"{REMOTE} / {LOCAL} epoch time with the most workers",
                                   "one worker count or no large batch measured at this scale"))
    else:
        made.append(judge_metric(ref, statement, f"{metric.column} {where}", metric, above(1.0),
                                 cause=LOOPBACK_CAUSE))
    return tuple(made)


def findings(summary: pd.DataFrame, claims: tuple = (), local: str = LOCAL, remote: str = REMOTE) -> Findings:
    """The paper's Sec 5.5 findings next to ours, in numbers."""
    real = summary[summary.emulated_compute_s == 0]
    ratio_ = ratios(real, local, remote)
    has_ratio = "remote_vs_local" in ratio_ and ratio_.remote_vs_local.notna().any()
    batch = sorted(real.batch_size.unique())
    large = [b for b in batch if b >= 64] or batch[-1:]
    small = [b for b in batch if b <= 4]
    lo, hi = PAPER["remote_vs_local_large_batch"]
    lines = []
    headline = (f"training: no local/remote pair measured (the paper saw a remote store take {lo}-{hi}x "
                f"the local time at large batches)")
    if has_ratio:
        per = ratio_[(ratio_.loader == "per-sample")].dropna(subset=["remote_vs_local"])
        big = per[per.batch_size.isin(large)]
        lines += ["| comparison | ours | paper |", "|---|---|---|",
                  f"| {remote} / {local} epoch time, per-sample loader, batch {', '.join(map(str, large))} | "
                  f"{big.remote_vs_local.min():.2f}-{big.remote_vs_local.max():.2f}x | {lo}-{hi}x |"]
        if small:
            sm = per[per.batch_size.isin(small)]
            lines.append(f"| same, batch {', '.join(map(str, small))} | {sm.remote_vs_local.min():.2f}-"
                         f"{sm.remote_vs_local.max():.2f}x | ~1x (\"similar\") |")
        bat = ratio_[(ratio_.loader == "batched")].dropna(subset=["remote_vs_local"])
        bat = bat[bat.batch_size.isin(large)]
        if len(bat):
            lines.append(f"| same, batched loader (one multi-read per batch) | {bat.remote_vs_local.min():.2f}-"
                         f"{bat.remote_vs_local.max():.2f}x | not measured (their future work) |")
        headline = (f"LeNet-5 epoch from {remote} vs {local}, batch >= {large[0]}: {big.remote_vs_local.min():.2f}-"
                    f"{big.remote_vs_local.max():.2f}x the time with per-sample reads (paper: {lo}-{hi}x)")
    wk = real[(real.system == remote) & (real.loader == "per-sample") & (real.batch_size == batch[-1])] \
        if batch else real.iloc[:0]
    if len(wk) > 1:
        w0 = wk[wk.workers == wk.workers.min()].epoch_mean.iloc[0]
        wn = wk[wk.workers == wk.workers.max()].epoch_mean.iloc[0]
        lines.append(f"| {remote}, per-sample, batch {batch[-1]}: epoch time with {wk.workers.min()} workers / with "
                     f"{wk.workers.max()} (>1: workers help) | {w0 / wn:.2f}x | \"significantly helps\" (no number) |")
    speed = batched_speedup(real)
    if "batched_speedup" in speed:
        at = speed[speed.batch_size == batch[-1]].dropna(subset=["batched_speedup"])  # both loaders measured
        for system, g in at.groupby("system", sort=False):
            lines.append(f"| {system}, batch {batch[-1]}: per-sample / batched `__getitems__` epoch time (>1: batched "
                         f"faster) | {_span(g.batched_speedup, '.2f', 'x')} (workers {', '.join(map(str, g.workers))}) "
                         f"| future work |")
        if len(at):
            r = at[at.system == remote] if (at.system == remote).any() else at
            headline += (f"; batched __getitems__ up to {r.batched_speedup.max():.1f}x faster at batch {batch[-1]} "
                         f"({r.system.iloc[0]})")
    util = summary[(summary.emulated_compute_s > 0) | (summary.batch_size == (batch[-1] if batch else None))]
    for (c, system, loader, b), g in util.groupby(["emulated_compute_s", "system", "loader", "batch_size"],
                                                  sort=False):
        what = f"{c * 1e3:g} ms/batch emulated compute" if c else "real LeNet-5 step"
        lines.append(f"| utilisation, {system}, {loader}, batch {b}, {what} | "
                     f"{_span(g.utilisation_mean, '.2f')} (workers "
                     f"{', '.join(map(str, g.workers))}) | not reported |")
    text = "\n".join([
        "**Paper (seed 003, Sec 5.5, Fig 8):** LeNet-5 on MNIST on the CPU, read per sample with HGET "
        "(`__getitem__`). At batch sizes 1 and 4 the training step hides loading and local vs Redis are similar; "
        f"as the batch grows I/O becomes the bottleneck and Redis takes {lo}-{hi}x the local time; more loader "
        "workers help remote loading a lot but it stays slower. Their Redis was on another node over 1 GbE.",
        "",
        "**Ours** (this machine; Redis on loopback on the same 2 cores as the training process and its workers, "
        "so there is no network round trip and workers compete with the server and the model for CPU):",
        "",
        *lines,
        "",
        "Ratios are within one run. Utilisation is DLIO/MLPerf Storage's: compute time / epoch time after the first "
        "step; 1.0 means the model never waited for data.",
    ])
    return Findings(headline, text, overview_metrics(summary), claims)


def overview_metrics(summary: pd.DataFrame, batch_size: int = 256) -> tuple:
    """Per system, batched vs per-sample epoch-time speed-up at ``batch_size`` (real LeNet-5 step),
    one column per worker count measured (fewest and most)."""
    real = summary[(summary.emulated_compute_s == 0) & (summary.batch_size == batch_size)]
    if real.empty or not {"per-sample", "batched"} <= set(real.loader):
        return ()
    metrics = []
    for workers in sorted({real.workers.min(), real.workers.max()}):
        at = real[real.workers == workers].set_index(["system", "loader"])
        column = f"batched / per-sample loader speed-up, batch {batch_size}, {workers} workers (training)"
        for system in dict.fromkeys(s for s, _ in at.index):
            if (system, "batched") in at.index and (system, "per-sample") in at.index:
                one, batched = at.loc[(system, "per-sample")], at.loc[(system, "batched")]
                metrics.append(ratio(system, column, one.epoch_mean, one.epoch_ci95, batched.epoch_mean,
                                     batched.epoch_ci95))
    return tuple(metrics)
