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
    if rows is None or rows.empty:  # a measurement of the readers' memory only
        return pd.DataFrame(out)
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


MEMORY_REFERENCE = "storebench target (TileDB's per-query memory, TileDB-Py #2194)"
KEPT_TARGET_KIB = 1.0  # per query: what may stay after each renewal (one context keeps ~15-25 KiB here)
RENEWAL_RATE_TARGET = 0.9  # the query rate with renewal / with one context
MEMORY_COST = f.Cause(f.UNKNOWN, "TileDB may keep memory outside the context too (its global state, the allocator's "
                      "free lists), which a renewal does not free", "a heap profile of a pass (e.g. memray) with renewal")


def memory_passes(table: pd.DataFrame) -> pd.DataFrame:
    """The ``client_memory`` table (see calibration.memory) as one row per pass. ``kept_kib_per_query``: the RSS that stays, per query, from just after the first
    renewal to just after the last (for one context: at the same query counts), so the memory a renewal
    frees does not count; ``peak_over_first_mib``: the highest RSS over that at the first renewal; the time
    per query (µs) over the same queries; ``processes_died``: processes that died before the one that ran the pass
    returned (0 in tables measured before that was recorded)."""
    out = []
    for (reader, mode, round_), g in table.groupby(["reader", "mode", "round"], sort=False):
        marks = g[g.queries_done % int(g.mark_every.iloc[0]) == 0].sort_values("queries_done")
        first, last = marks.iloc[0], marks.iloc[-1]
        n = last.queries_done - first.queries_done
        out.append({"reader": reader, "mode": mode, "round": round_, "renew_every": first.renew_every,
                    "queries": int(n), "rss_first_mib": first.rss_mib, "rss_last_mib": last.rss_mib,
                    "kept_kib_per_query": (last.rss_mib - first.rss_mib) * 1024 / n,
                    "peak_over_first_mib": g[g.queries_done >= first.queries_done].rss_mib.max() - first.rss_mib,
                    "us_per_query": 1e6 * (last.read_seconds - first.read_seconds) / n,
                    "processes_died": int(g.get("processes_died", pd.Series([0])).fillna(0).max())})
    return pd.DataFrame(out)


def memory_summary(table: pd.DataFrame | None) -> pd.DataFrame:
    """Per TileDB reader, from its passes (``memory_passes``): the memory kept per query and the peak
    over the first renewal, with renewal and with one context (means over the rounds, t 95% CI), and the
    query rate with renewal / with one context (bootstrap 95% CI)."""
    if table is None or table.empty:
        return pd.DataFrame()
    passes, out = memory_passes(table), []
    for reader, g in passes.groupby("reader", sort=False):
        renewed, one = g[g.renew_every.notna()], g[g.renew_every.isna()]  # one context: no renewal
        kept, kept_ci, rounds = stats.mean_ci(renewed.kept_kib_per_query)
        one_kept, one_ci, _ = stats.mean_ci(one.kept_kib_per_query)
        rate, low, high = stats.ratio_interval(one.us_per_query.to_numpy(), renewed.us_per_query.to_numpy())
        out.append({"reader": reader, "renew_every": int(renewed.renew_every.iloc[0]),
                    "queries": int(renewed.queries.iloc[0]), "rounds": rounds,
                    "kept_kib_per_query": kept, "kept_ci95": kept_ci,
                    "one_context_kept_kib_per_query": one_kept, "one_context_kept_ci95": one_ci,
                    "peak_mib": renewed.peak_over_first_mib.mean(),
                    "one_context_peak_mib": one.peak_over_first_mib.mean(),
                    "us_per_query": renewed.us_per_query.mean(), "one_context_us_per_query": one.us_per_query.mean(),
                    "rate_ratio": rate, "rate_ratio_low": low, "rate_ratio_high": high,
                    "processes_died": int(g.processes_died.sum())})
    return pd.DataFrame(out)


MEMORY_HEADERS = {"renew_every": "fresh context every (queries)", "queries": "queries compared",
                  "kept_kib_per_query": "kept (KiB/query), renewed", "kept_ci95": "± 95% CI",
                  "one_context_kept_kib_per_query": "kept (KiB/query), one context", "one_context_kept_ci95": "± 95% CI ",
                  "peak_mib": "peak (MiB), renewed", "one_context_peak_mib": "peak (MiB), one context",
                  "us_per_query": "µs/query, renewed", "one_context_us_per_query": "µs/query, one context",
                  "rate_ratio": "query rate, renewed / one context", "rate_ratio_low": "CI low",
                  "rate_ratio_high": "CI high", "processes_died": "pass processes died (run again)"}


def memory_table(summary: pd.DataFrame) -> pd.DataFrame:
    """``memory_summary`` as the report shows it (headers that say renewed or one context, and the unit)."""
    return summary.rename(columns=MEMORY_HEADERS)


def memory_claims(summary: pd.DataFrame) -> list[f.Claim]:
    out = []
    for r in summary.itertuples():
        every = f"a fresh context every {r.renew_every:,} queries"
        out.append(f.judge(MEMORY_REFERENCE, f"{r.reader}: with {every}, at most {KEPT_TARGET_KIB:g} KiB stays per "
                                             f"query (one context: {f.sig3(r.one_context_kept_kib_per_query)} KiB).",
                           f"KiB kept per query, {r.reader}, {every}", r.kept_kib_per_query, r.kept_ci95,
                           f.below(KEPT_TARGET_KIB), unit="KiB", cause=MEMORY_COST))
        out.append(f.judge(MEMORY_REFERENCE, f"{r.reader}: {every} costs no speed: at least "
                                             f"{RENEWAL_RATE_TARGET:g}x the query rate of one context.",
                           f"queries/s, {every} / one context, {r.reader}", r.rate_ratio,
                           (r.rate_ratio_low, r.rate_ratio_high), f.above(RENEWAL_RATE_TARGET), cause=MEMORY_COST))
    return out


def memory_lines(summary: pd.DataFrame) -> list[str]:
    return [f"- **{r.reader}, memory**: over {r.queries:,} queries (from the first renewal to the last), with a fresh "
            f"context every {r.renew_every:,} queries {f.sig3(r.kept_kib_per_query)} KiB stays per query (peak +{f.sig3(r.peak_mib)} MiB); with one context "
            f"{f.sig3(r.one_context_kept_kib_per_query)} KiB (peak +{f.sig3(r.one_context_peak_mib)} MiB); query rate "
            f"{f.interval_text(r.rate_ratio, r.rate_ratio_low, r.rate_ratio_high, 'x')} of one context's "
            f"({f.sig3(r.us_per_query)} vs {f.sig3(r.one_context_us_per_query)} µs a query); {_crashed(r.processes_died)}."
            for r in summary.itertuples()]


def _crashed(died: int) -> str:
    if not died:
        return "no pass process crashed"
    return f"{died} pass process{'es' if died > 1 else ''} died (killed by a signal) and {'were' if died > 1 else 'was'} run again"


def analyse(tables: ResultTables) -> f.Findings:
    table = ratios(tables.get("calibration"))
    held = memory_summary(tables.get("client_memory"))
    made = claims(table) + loader_claims(loader_ratios(tables.get("loaders"))) + memory_claims(held)
    if table.empty:
        headline = ("No client was compared with a reference: only the TileDB readers' memory was measured."
                    if "tools" not in tables else "No comparison was measured (see the tools table).")
        return f.Findings(headline, "\n".join(memory_lines(held)), (), tuple(made))
    worst = table.loc[table.ratio.idxmin()]
    headline = (f"Ours / reference, {len(table)} comparisons: {table.ratio.min():.2f}x ({label(worst)}, "
                f"{short(worst.client)}) to {table.ratio.max():.2f}x; load average up to "
                f"{table.load_1min_max.max():.1f} on {tables.manifest.get('machine', {}).get('cores', '?')} cores")
    lines = [f"- **{label(r)}**: {r.client} at {f.sig3(r.ours_per_s)} {r.unit}{_mb(r.ours_mb_per_s)}, {r.tool} at "
             f"{f.sig3(r.tool_per_s)}{_mb(r.tool_mb_per_s)}: "
             f"{f.interval_text(r.ratio, r.ratio_low, r.ratio_high, 'x')}; client CPU "
             f"{f.sig3(r.ours_client_cpu_us)} vs {f.sig3(r.tool_client_cpu_us)} µs per operation."
             for r in table.itertuples()] + memory_lines(held)
    if not held.empty:
        headline += (f"; TileDB readers with fresh contexts keep {f.sig3(held.kept_kib_per_query.max())} KiB per query "
                     f"at most, with one context up to {f.sig3(held.one_context_kept_kib_per_query.max())} KiB")
    return f.Findings(headline, "\n".join(lines), tuple(metrics(table)), tuple(made))


def _mb(rate: float) -> str:
    return f" ({f.sig3(rate)} MB/s)" if np.isfinite(rate) else ""


def figures(tables: ResultTables) -> dict[str, plt.Figure]:
    made = {}
    table = ratios(tables.get("calibration"))
    if not table.empty:
        made["ratios"] = ratios_figure(table)
    if tables.get("client_memory") is not None and len(tables["client_memory"]):
        made["memory"] = memory_figure(tables["client_memory"])
    return made


def ratios_figure(table: pd.DataFrame) -> plt.Figure:
    """Each client of ours / its reference, with its CI and target."""
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
    return fig


def memory_figure(table: pd.DataFrame) -> plt.Figure:
    """RSS over the queries of each pass, per TileDB reader: renewal's saw-tooth beside one context's climb."""
    readers = list(dict.fromkeys(table.reader))
    fig, axes = plt.subplots(1, len(readers), figsize=(4 * len(readers) + 1, 3.6), squeeze=False, sharey=False)
    colours = {True: "#1a7f37", False: "#b35900"}  # renewed or not
    for ax, reader in zip(axes[0], readers):
        for (mode, _), g in table[table.reader == reader].groupby(["mode", "round"], sort=False):
            g = g.sort_values("queries_done")
            ax.plot(g.queries_done, g.rss_mib, color=colours[bool(g.renew_every.notna().any())], lw=1, alpha=0.8)
        ax.set_title(reader)
        ax.set_xlabel("queries made")
        ax.set_ylabel("process RSS (MiB)")
    every = table.renew_every.dropna()
    for renewed, colour in colours.items():
        name = f"fresh context every {int(every.iloc[0]):,} queries" if renewed and len(every) else "one context"
        axes[0][0].plot([], [], color=colour, label=name)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Does a TileDB reader's memory stay flat over many queries? (one line per pass, each in a new process)")
    fig.tight_layout()
    return fig
