"""Calibration analysis: each of storebench's clients as a ratio of its reference (its system's native
tool, or for a layout's reader the library its users would read it with: webdataset, Lance's take), from
the interleaved rounds of one run (pure: the recorded tables in, findings and figures out).

The targets are the suite's own (issue 22), judged by the same interval rules as the papers' claims:
a client meets its target when the 95% CI of ours / reference lies above it.
"""
from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from storebench.core import stats
from storebench.core.experiment import ResultTables
from storebench.experiments.ml_storage_study.dataloaders.analysis import LOADER_TARGET
from storebench.report import findings as f
from storebench.report.plots import system_style

REFERENCE = "storebench target (issue 22)"
# (system, a word of our client's label, value bytes or None for every size) -> the target ratio; the first
# that matches counts (the L2 reader's label names obstore too)
TARGETS = [("minio", "L2-tar", None, 1.2), ("minio", "L4-lance", None, 1.0),
           ("minio", "obstore", None, 0.9), ("redis", "redis-py", None, 0.8), ("rocksdb", "rocksdict", None, 0.9),
           ("ceph", "python-rados", None, 0.9)]


def ratios(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per comparison and client of ours: our rate / the reference's, with a bootstrap 95% CI
    over the rounds; MB/s where the bytes were counted; CPU per operation of both clients and of the
    server; the highest load average."""
    out = []
    keys = ["system", "operation", "value_bytes", "concurrency", "unit"]
    rows = rows if "mb_per_s" in rows else rows.assign(mb_per_s=np.nan)  # tables recorded before it
    for key, group in rows.groupby(keys, sort=False):
        native = group[group.client_kind != "storebench"]
        if native.empty:
            continue
        for client, ours in group[group.client_kind == "storebench"].groupby("client", sort=False):
            value, low, high = stats.ratio_interval(ours.ops_per_s.to_numpy(), native.ops_per_s.to_numpy())
            out.append({**dict(zip(keys, key)), "client": client, "tool": native.client.iloc[0],
                        "ours_per_s": ours.ops_per_s.mean(), "tool_per_s": native.ops_per_s.mean(),
                        "ratio": value, "ratio_low": low, "ratio_high": high, "rounds": len(ours),
                        "ours_mb_per_s": ours.mb_per_s.mean(), "tool_mb_per_s": native.mb_per_s.mean(),
                        "ours_client_cpu_us": ours.client_cpu_us_per_op.mean(),
                        "tool_client_cpu_us": native.client_cpu_us_per_op.mean(),
                        "ours_server_cpu_us": ours.server_cpu_us_per_op.mean(),
                        "tool_server_cpu_us": native.server_cpu_us_per_op.mean(),
                        "load_1min_max": group.load_1min.max()})
    return pd.DataFrame(out)


def label(r) -> str:
    if r.unit == "images/s":  # a layout's reader: JPEGs of every size, each client at its own concurrency
        return f"{r.system} {r.operation}, JPEGs of {r.value_bytes / 1000:.0f} KB on average"
    size = f"{r.value_bytes / 1024:g} KiB" if r.value_bytes % 1024 == 0 else f"{r.value_bytes:,} B"
    return f"{r.system} {r.operation}, {size}, {r.concurrency} in flight"


def short(client: str) -> str:
    """A client's name without its configuration: ``storebench L2-tar``, ``redis-py 7.1.0 + hiredis``."""
    return client.split(":")[0].split(" (")[0].split(",")[0]


def target_of(r) -> float | None:
    for system, word, size, target in TARGETS:
        if r.system == system and word in r.client and (size is None or size == r.value_bytes):
            return target
    return None


def metrics(table: pd.DataFrame) -> list[f.Metric]:
    return [f.Metric(r.system, f"{short(r.client)} / {short(r.tool)}, {label(r)}", r.ratio,
                     ci_low=r.ratio_low, ci_high=r.ratio_high, why="" if np.isfinite(r.ratio_low) else "one round: no CI")
            for r in table.itertuples()]


# Why a target may not be met (kept on a claim only when it does not hold).
CLIENT_COST = f.Cause(f.UNKNOWN, "storebench's client makes its calls as the experiments do (Python, reads verified "
                      "against what was written), the tool its own way (native code, its own pipelining); which part "
                      "of the difference is which is not measured", "a profile of both at this configuration")
LOADER_COST = f.Cause(f.UNKNOWN, "the loader adds batching, collation and (with workers) inter-process copies to the "
                      "same store calls", "a profile of the loader at this configuration")


def claims(table: pd.DataFrame) -> list[f.Claim]:
    out = []
    for r, m in zip(table.itertuples(), metrics(table)):
        target = target_of(r)
        if target is None:
            continue
        statement = f"{r.system}: {short(r.client)} reaches at least {target:g}x {short(r.tool)} ({label(r)})."
        out.append(f.judge_metric(REFERENCE, statement, m.column, m, f.above(target), cause=CLIENT_COST))
    return out


def loader_ratios(overheads: pd.DataFrame | None) -> pd.DataFrame:
    """Loader vs a bare loop of the same store calls, from the dataloaders run's rounds: rows/s of the loader
    / of the bare loop (= bare seconds / loader seconds) with a bootstrap 95% CI over the rounds (no CI
    from a table that kept only the medians)."""
    if overheads is None or overheads.empty:
        return pd.DataFrame()
    out = []
    for r in overheads.itertuples():
        rounds = [_rounds(getattr(r, c, None)) for c in ("bare_round_seconds", "loader_round_seconds")]
        value, low, high = (stats.ratio_interval(*rounds) if all(len(x) for x in rounds)
                            else (r.loader_vs_bare, np.nan, np.nan))
        out.append({"workload": r.workload, "system": r.system, "loader": r.loader, "layout": r.layout,
                    "batch_size": r.batch_size, "loader_rows_per_s": r.loader_rows_per_second,
                    "bare_rows_per_s": r.bare_rows_per_second, "ratio": value, "ratio_low": low, "ratio_high": high,
                    "rounds": len(rounds[1]) or r.rounds})
    return pd.DataFrame(out)


def _rounds(cell) -> np.ndarray:
    if not isinstance(cell, str) or not cell:
        return np.array([])
    return np.array([float(x) for x in cell.split(";")])


def loader_claims(loaders: pd.DataFrame) -> list[f.Claim]:
    return [f.judge(REFERENCE, f"{r.system} {r.loader} loader: at least {LOADER_TARGET:g}x a bare loop of the same "
                               f"calls ({r.workload}, {r.layout}, batch {r.batch_size}).",
                    f"loader / bare loop rows/s, {r.system} {r.loader}, {r.workload}", r.ratio,
                    (r.ratio_low, r.ratio_high), f.above(LOADER_TARGET), cause=LOADER_COST)
            for r in loaders.itertuples()]


def analyse(tables: ResultTables) -> f.Findings:
    table = ratios(tables["calibration"])
    made = claims(table) + loader_claims(loader_ratios(tables.get("loaders")))
    if table.empty:
        return f.Findings("No comparison was measured (see the tools table).", "", (), tuple(made))
    worst = table.loc[table.ratio.idxmin()]
    headline = (f"Ours / reference, {len(table)} comparisons: {table.ratio.min():.2f}x ({label(worst)}, "
                f"{short(worst.client)}) to {table.ratio.max():.2f}x; load average up to "
                f"{table.load_1min_max.max():.1f} on {tables.manifest.get('machine', {}).get('cores', '?')} cores")
    lines = [f"- **{label(r)}**: {r.client} at {f.sig3(r.ours_per_s)} {r.unit}{_mb(r.ours_mb_per_s)}, {r.tool} at "
             f"{f.sig3(r.tool_per_s)}{_mb(r.tool_mb_per_s)}: "
             f"{f.interval_text(r.ratio, r.ratio_low, r.ratio_high, 'x')}; client CPU "
             f"{f.sig3(r.ours_client_cpu_us)} vs {f.sig3(r.tool_client_cpu_us)} µs per operation."
             for r in table.itertuples()]
    return f.Findings(headline, "\n".join(lines), tuple(metrics(table)), tuple(made))


def _mb(rate: float) -> str:
    return f" ({f.sig3(rate)} MB/s)" if np.isfinite(rate) else ""


def figures(tables: ResultTables) -> dict[str, plt.Figure]:
    table = ratios(tables["calibration"])
    if table.empty:
        return {}
    table = table.assign(what=[f"{textwrap.fill(label(r), 64)}\n{short(r.client)}" for r in table.itertuples()])
    fig, ax = plt.subplots(figsize=(9, 0.2 * sum(w.count("\n") + 1 for w in table.what) + 1.5))
    y = np.arange(len(table))
    errors = np.array([table.ratio - table.ratio_low, table.ratio_high - table.ratio]).clip(min=0)
    ax.barh(y, table.ratio, xerr=np.nan_to_num(errors), color=[system_style(s)["color"] for s in table.system], capsize=3)
    ax.axvline(1.0, color="black", lw=1)
    for r, yy in zip(table.itertuples(), y):
        target = target_of(r)
        if target is not None:
            ax.plot([target, target], [yy - 0.4, yy + 0.4], color="black", ls="--", lw=1)
    ax.set_yticks(y, table.what, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ours / reference (rate; 1 = the native tool's or reference library's rate; dashed: target)")
    ax.set_title("How close does each storebench client come to its system's own tool or reference library?")
    fig.tight_layout()
    return {"ratios": fig}
