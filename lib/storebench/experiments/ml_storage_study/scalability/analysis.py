"""Analyse input scalability (seed 001 Sec 5.9, Fig 12) from the recorded ``scalability`` table (one row per
epoch: workload x factor x store x cache setting x repeat): read and write time per input size, their growth
from the smallest to the largest input, the figure, and the seed's statements judged as claims."""
from __future__ import annotations

import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci
from storebench.experiments.ml_storage_study import published as paper001
from storebench.experiments.ml_storage_study.dataloaders.analysis import size_text
from storebench.report.findings import (PAPER_SETUP, UNKNOWN, Cause, Findings, interval_text, Metric, above, judge,
                                        judge_metric, not_comparable, ratio, within)

PAPER = {"text_base_mb": 228, "graph_base_mb": 21, "largest_gb": 1.0,
         "graph_read": "TileDB and TensorStore scale really well (similar time at every size, even over 1 GB); "
                       "ext4 and RocksDB read time grows steadily, RocksDB worse than ext4",
         "write": "write time grows with input size for every store, TileDB the slowest"}
FLAT = (0.8, 1.25)  # a read-time ratio inside: "similar time at every size"
KEYS = ["workload", "system", "cache_setting", "factor"]


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    for key, group in rows.groupby(KEYS, sort=False):
        read, read_ci, n = mean_ci(group.read_seconds)
        write, write_ci, _ = mean_ci(_writes(group))
        out.append({**dict(zip(KEYS, key)), "dataset": group.dataset.iloc[0], "n_rows": group.n_rows.iloc[0],
                    "dataset_mb": group.dataset_bytes.iloc[0] / 1e6,
                    "read_mean": read, "read_ci95": read_ci, "write_mean": write, "write_ci95": write_ci,
                    "repeats": n, "config": paper001.config_text(group.iloc[0].to_dict())})
    return pd.DataFrame(out)


def _writes(group: pd.DataFrame) -> list[float]:
    """A cell's timed writes: all of them (``write_repeats_seconds``), else (a run before it was recorded) the
    write paired with each read row."""
    if "write_repeats_seconds" in group and group.write_repeats_seconds.notna().any():
        return [float(v) for v in str(group.write_repeats_seconds.dropna().iloc[0]).split(";")]
    return list(group.write_seconds)


def _growth_ci(what: str, hi, lo) -> dict:
    """The 95% CI of hi / lo (``<what>_growth_low``, ``_high``; NaN from one repeat), on the log scale."""
    m = ratio("", "", hi[f"{what}_mean"], hi[f"{what}_ci95"], lo[f"{what}_mean"], lo[f"{what}_ci95"])
    return {f"{what}_growth_low": m.ci_low if m.has_ci else float("nan"),
            f"{what}_growth_high": m.ci_high if m.has_ci else float("nan")}


def growth(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload, store and cache: time at the largest input / at the smallest, beside the size ratio
    (1 = flat, as the seed says of TileDB/TensorStore on graphs; = size ratio: linear)."""
    out = []
    for key, group in summary.groupby(["workload", "system", "cache_setting"], sort=False):
        lo, hi = group.loc[group.factor.idxmin()], group.loc[group.factor.idxmax()]
        if hi.factor == lo.factor:
            continue
        out.append({**dict(zip(["workload", "system", "cache_setting"], key)),
                    "factors": f"x{lo.factor} -> x{hi.factor}", "size_ratio": hi.factor / lo.factor,
                    "read_growth": hi.read_mean / lo.read_mean, "write_growth": hi.write_mean / lo.write_mean,
                    **_growth_ci("read", hi, lo), **_growth_ci("write", hi, lo),
                    "largest_read_s": hi.read_mean, "largest_write_s": hi.write_mean})
    return pd.DataFrame(out)


def figure(summary: pd.DataFrame):
    """Fig 12: read (left) and write (right) time vs input size, one row per workload."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    workloads = list(dict.fromkeys(summary.workload))
    fig, axes = plt.subplots(len(workloads), 2, figsize=(12, 4.5 * len(workloads)), squeeze=False)
    colors = plots.palette(sorted(set(summary.system)))
    for row, workload in enumerate(workloads):
        part = summary[summary.workload == workload]
        for col, (what, label) in enumerate((("read", "loader time, whole dataset (s, log)"),
                                             ("write", "conversion into the store (s, log)"))):
            ax = axes[row][col]
            for (system, cache), g in part.groupby(["system", "cache_setting"], sort=False):
                g = g.sort_values("factor")
                style = "--" if "default" not in cache and "no cache" not in cache else "-"
                mean, ci = g[f"{what}_mean"], g[f"{what}_ci95"].fillna(0)
                ax.errorbar(g.factor, mean, yerr=plots.errorbars(mean, ci), marker=plots.marker(system), capsize=3,
                            linestyle=style, color=colors[system],
                            label=system + ("" if "no cache" in cache else f", {cache.split(' cache ')[-1]} cache"))
                plots._cut_marks(ax, g.factor, mean, ci, colors[system])
            ax.set_yscale("log")  # after the error bars (see plots.lines_with_ci)
            plots.ticks_at(ax, sorted(part.factor.unique()), log=True)
            ax.set(title=f"{workload}: {what} time vs input size", xlabel="input size (x the base dataset)",
                   ylabel=label)
    handles, labels = axes[0][0].get_legend_handles_labels()
    plots.legend_outside(fig, handles, labels, title="store, cache")
    plots.question(fig, "Do read and write times grow in proportion to the input size, per store? (Fig 12)")
    fig.tight_layout()
    plots.footnote(fig, f"Ours: mean of the repeats, error bars 95% CI, every row verified; dashed: a non-default "
                        f"cache size. The seed publishes no values ({paper001.MACHINE}).")
    return fig


def findings(summary: pd.DataFrame, claims: tuple = ()) -> Findings:
    g = growth(summary)
    default = g[g.cache_setting.str.contains("default|no cache")]
    lines = ["| workload | store | cache | sizes | size ratio | read time ratio (95% CI) | write time ratio (95% CI) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.workload} | {r.system} | {r.cache_setting} | {r.factors} | {r.size_ratio:g} | "
              f"{interval_text(r.read_growth, r.read_growth_low, r.read_growth_high)} | "
              f"{interval_text(r.write_growth, r.write_growth_low, r.write_growth_high)} |" for r in g.itertuples()]
    caches = _cache_effect(summary)
    text = "\n".join([
        f"**Paper (seed 001, Sec 5.9, Fig 12):** text {PAPER['text_base_mb']} MB up to x10, graph "
        f"{PAPER['graph_base_mb']} MB up to x50 (~1 GB). {PAPER['graph_read']}; {PAPER['write']}. Caches not varied "
        "(RocksDB 50 MB, TileDB 10 MB).", "", *data_lines(summary), "",
        "**Ours** (base sizes and factors of this scale preset; the stores' caches varied):", "", *lines, "",
        *caches])
    metrics = tuple(Metric(r.system, f"read time x{r.size_ratio:g} input / x1, {r.workload} (scalability)",
                           float(r.read_growth), None, 1.0, "x", r.read_growth_low, r.read_growth_high)
                    for r in default.itertuples())
    headline = ("scalability: read time at the largest input / the smallest: " + ", ".join(
        f"{r.system} {r.workload} x{r.read_growth:.1f}" for r in default.itertuples())
        + " (paper: TileDB/TensorStore flat on graphs, ext4/RocksDB growing)")
    return Findings(headline, text, metrics, claims)


def data_lines(summary: pd.DataFrame) -> list[str]:
    """The inputs measured per workload and factor: rows and bytes, beside the seed's size at that factor."""
    lines = ["**Data** (each input read whole every epoch; bytes: the rows' columns in memory):", "",
             "| workload | input | rows | bytes | the seed's at this factor |", "|---|---|---|---|---|"]
    sizes = summary.drop_duplicates(["workload", "factor"]).sort_values(["workload", "factor"], kind="stable")
    for r in sizes.itertuples():
        seed_mb = PAPER.get(f"{r.workload}_base_mb")
        seed = f"{seed_mb * r.factor:,.0f} MB" if seed_mb else "-"
        lines.append(f"| {r.workload} | x{int(r.factor)}: {r.dataset} | {int(r.n_rows):,} | "
                     f"{size_text(r.dataset_mb * 1e6)} | {seed} |")
    return lines + ["", "An input at factor x is the x1 input concatenated x times (the seed's way). The x1 text "
                    "input is the Sentiment140 sample (100,000 tweets) concatenated to about the seed's 228 MB at the "
                    "paper's size; graph rows are three int32 ids (the seed's 21 MB is the text file of the same "
                    "triples)."]


def _cache_effect(summary: pd.DataFrame) -> list[str]:
    varied = summary.groupby(["workload", "system", "factor"]).cache_setting.nunique()
    if not (varied > 1).any():
        return ["Cache sizes: one setting per store at this scale."]
    lines = ["**Cache size** (read time at the largest input, per setting):", "", "| workload | store | setting | read (s) |",
             "|---|---|---|---|"]
    top = summary.loc[summary.groupby(["workload", "system", "cache_setting"]).factor.idxmax()]
    for r in top.itertuples():
        if varied.get((r.workload, r.system, r.factor), 1) > 1:
            lines.append(f"| {r.workload} | {r.system} | {r.cache_setting} | {r.read_mean:.3g} ± {r.read_ci95:.2g} |")
    return lines


# ------------------------------------------------------------------------------- the contract
FLAT_READERS = ("tiledb-attrs", "tensorstore")  # the seed's TileDB and TensorStore layouts for graphs
GROWING_READERS = ("localfs", "rocksdb")


def analyse(tables: ResultTables) -> Findings:
    table = summary(tables["scalability"])
    return findings(table, claims(table))


def figures(tables: ResultTables) -> dict:
    return {"read_write_time": figure(summary(tables["scalability"]))}


def default_growth(summary: pd.DataFrame) -> pd.DataFrame:
    """growth() at each store's default cache (the seed did not vary the caches)."""
    g = growth(summary)
    return g[g.cache_setting.str.contains("default|no cache")] if len(g) else g


def claims(summary: pd.DataFrame) -> tuple:
    g = default_growth(summary)
    ref, made = "Sec 5.9, Fig 12", []
    graph = g[g.workload == "graph"] if len(g) else g
    for system in (*FLAT_READERS, *GROWING_READERS):
        flat = system in FLAT_READERS
        part = graph[graph.system == system] if len(graph) else graph
        statement = (f"graph: {system} reads in similar time at every input size." if flat else
                     f"graph: {system}'s read time grows steadily with the input.")
        if not len(part):
            if system in set(summary.system):
                made.append(not_comparable(ref, statement, "read time, largest / smallest input",
                                           "one input size of graph measured at this scale"))
            continue
        r = part.iloc[0]
        made.append(judge(ref, statement, f"{system} read time x{r.size_ratio:g} input / x1, graph",
                          r.read_growth, (r.read_growth_low, r.read_growth_high),
                          within(*FLAT) if flat else above(FLAT[1]), cause=CAUSES["flat" if flat else "growing"]))
    for r in (g.itertuples() if len(g) else ()):
        if r.system not in SEED_STORES:
            continue
        made.append(judge(ref, f"{r.workload}: {r.system}'s write time grows with the input.",
                          f"{r.system} write time x{r.size_ratio:g} input / x1, {r.workload}", r.write_growth,
                          (r.write_growth_low, r.write_growth_high), above(1.0), cause=CAUSES["write_grows"]))
    made += _slowest_writer(summary)
    return tuple(made)


SEED_STORES = ("rocksdb", "tiledb-attrs", "tensorstore", "tensorstore-zarr")  # the seed's "DBs" (ext4: its baseline)
CAUSES = {  # why a statement may not hold here (kept on the claim only when it does not)
    "flat": Cause(PAPER_SETUP, "likely: an epoch reads every row, so its time grows with the rows here; a time flat "
                  "over x50 the rows means the seed's reads did not grow with its input (a fixed cost dominating, or "
                  "rows not all read)", "the seed's per-size times (its Fig 12 gives no values) and its loader code"),
    "growing": Cause(UNKNOWN, "the loader reads every row each epoch, so its time should grow with the input",
                     "the same sizes on another machine, or a profile of the loader at the largest input"),
    "write_grows": Cause(UNKNOWN, "writing more rows should take longer", "the write at more sizes, repeated"),
    "tiledb_slowest": Cause(UNKNOWN, "TileDB writes each column as one fragment here, in TileDB's own threads",
                            "the seed's write times (its Fig 12 gives no values) and its TileDB write code"),
}


def _slowest_writer(summary: pd.DataFrame) -> list:
    """TileDB / the slowest other of the seed's stores ("all the DBs": ext4 is its baseline, not a DB), write
    time at the largest input (default caches)."""
    ref, out = "Sec 5.9, Fig 12", []
    default = summary[summary.cache_setting.str.contains("default|no cache") & summary.system.isin(SEED_STORES)]
    for workload, part in default.groupby("workload", sort=False):
        top = part[part.factor == part.factor.max()]
        tiledb, others = top[top.system.str.startswith("tiledb")], top[~top.system.str.startswith("tiledb")]
        statement = f"{workload}: TileDB writes slowest at the largest input."
        if not len(tiledb) or not len(others):
            out.append(not_comparable(ref, statement, "TileDB / slowest other store, write time",
                                      "TileDB and another store not both measured"))
            continue
        t, o = tiledb.loc[tiledb.write_mean.idxmax()], others.loc[others.write_mean.idxmax()]
        m = ratio("", "", t.write_mean, t.write_ci95, o.write_mean, o.write_ci95)
        out.append(judge_metric(ref, statement, f"{t.system} / slowest other DB ({o.system}) write time at "
                                f"x{int(t.factor)}", m, above(1.0), cause=CAUSES["tiledb_slowest"]))
    return out


def versions(rows: pd.DataFrame) -> pd.DataFrame:
    columns = ["system", "system_version", "client_version", "host", "cpus", "git_rev", "scale"]
    return rows[[c for c in columns if c in rows]].drop_duplicates()
