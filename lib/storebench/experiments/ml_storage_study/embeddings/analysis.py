"""Analyse embedding updates (seed 001, Sec 5.10, Figs 13-15, and its Sec 6 future work) from the recorded
``embeddings`` table (one row per run: table x stream x configuration x repeat): summaries over repeats,
slopes and ratios per sweep, the figure, and the seed's statements judged as claims."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from storebench.experiments.ml_storage_study.embeddings import STREAM_STANDS_FOR, UPDATES, LOCALITIES, SWEEPS, CONFIG_KEYS
from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci
from storebench.report.findings import (Findings, Metric, above, judge, judge_metric, not_comparable,
                                        power, ratio, within)

EXPERIMENT = "embeddings"
SEED_SWEEPS = ("dataset_size", "embedding_size", "batch_size")  # Figs 13, 14, 15
PAPER_TABLES = ("rocksdb", "tiledb", "tensorstore")
# Bands for reading our numbers against the seed's words (stated in the findings).
FLAT = (0.8, 1.25)  # a ratio inside: "no change" / "no impact" / "similar"
HALVING = (1.6, 2.5)  # time(b) / time(2b) inside: "halves with each doubling"
LINEAR_R2 = 0.95

PAPER = {
    "source": "seed 001 (Britto, Patel & Mukherjee), Sec 5.10, Figs 13-15; future work Sec 6",
    "setup": "keys of a generated Zipf (text) or power-law (graph) dataset; per batch an iterable-style PyTorch "
             "DataLoader (no workers) reads the batch from a file, the embeddings are fetched from the DB, "
             "recomputed and written back; two of dataset size, embedding size and batch size fixed, one varied",
    "dataset_size": "the total time of every store grows linearly with dataset size (no DataLoader workers, so "
                    "fetch time grows linearly); the stores show no significant difference (Fig 13)",
    "embedding_size": {"rocksdb": "grows", "tiledb": "stays flat", "tensorstore": "stays flat"},
    "batch_size": {"rocksdb": "no impact (2 values by multi-get twice = 4 values once)",
                   "tiledb": "halves with each doubling of the batch", "tensorstore": "halves with each doubling"},
    "batch_1024": "at batch_size=1024 TileDB is almost the same as RocksDB, TensorStore slightly above TileDB",
    "numbers": "none: Figs 13-15 are plots without tables or axis values in the text",
    "caches": "RocksDB block cache 50 MB, TileDB tile cache 10 MB, not varied (Sec 5.9)",
    "future_work": "how performance varies with update patterns: sparse vs dense updates, locality of updates (Sec 6)",
}


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean and 95% CI half-width over repeats of total / read / update / write seconds."""
    out = []
    for key, group in rows.groupby(CONFIG_KEYS, sort=False):
        row = dict(zip(CONFIG_KEYS, key))
        for phase in ("total", "read", "update", "write"):
            mean, half, n = mean_ci(group[f"{phase}_seconds"])
            row[f"{phase}_mean"], row[f"{phase}_ci95"] = mean, half
        row.update(repeats=n, sweep=group.sweep.iloc[0], stands_for=group.stands_for.iloc[0],
                   keys_read=int(group.keys_read.iloc[0]), keys_written=int(group.keys_written.iloc[0]),
                   n_batches=int(group.n_batches.iloc[0]), table_files=float(group.table_files.mean()),
                   system_version=group.system_version.iloc[0])
        out.append(row)
    return pd.DataFrame(out)


def in_sweep(summary: pd.DataFrame, sweep: str) -> pd.DataFrame:
    """The configurations of one sweep (the fixed point belongs to every sweep)."""
    return summary[summary.sweep.str.split(",").map(lambda sweeps: sweep in sweeps)]


def table(summary: pd.DataFrame, sweep: str, value: str = "total") -> pd.DataFrame:
    """(stream, table) x swept value, cells 'mean ± ci95' seconds."""
    field = SWEEPS[sweep][0]
    frame = in_sweep(summary, sweep).copy()
    frame["cell"] = [f"{m:.3g} ± {c:.2g}" if pd.notna(c) else f"{m:.3g}"
                     for m, c in zip(frame[f"{value}_mean"], frame[f"{value}_ci95"])]
    return frame.pivot_table(index=["stream", "table"], columns=field, values="cell", aggfunc="first", sort=False)


def _series(summary: pd.DataFrame, sweep: str, table_: str, stream: str) -> pd.DataFrame:
    field = SWEEPS[sweep][0]
    frame = in_sweep(summary, sweep)
    return frame[(frame.table == table_) & (frame.stream == stream)].sort_values(field)


def _end_ratio(series: pd.DataFrame, first_over_last: bool = False):
    """time at the largest swept value / at the smallest (or the inverse) as a findings Metric-like
    (value, ci95) pair; None below two points."""
    if len(series) < 2:
        return None
    lo, hi = series.iloc[0], series.iloc[-1]
    num, den = (lo, hi) if first_over_last else (hi, lo)
    return ratio("", "", num.total_mean, num.total_ci95, den.total_mean, den.total_ci95)


def slopes(summary: pd.DataFrame) -> pd.DataFrame:
    """Per table and stream: the least-squares slope of total time vs embedding size (s per 1,000
    floats, 95% CI from the fit's standard error over the configurations' means; needs >= 3
    sizes), time at the largest / smallest embedding, time at the smallest / largest batch, the
    mean factor per batch doubling time(b) / time(2b) (geometric: (t_min / t_max) ^ (1 / log2(
    b_max / b_min)), with its 95% interval from the CI of the end ratio) and how many fewer keys the
    largest batch reads per draw (duplicates in a batch are read once), and for the dataset-size sweep the linear fit's R^2 and the time per drawn
    key at the largest size / at the smallest (1 = proportional)."""
    out = []
    for (name, stream), _ in summary.groupby(["table", "stream"], sort=False):
        row = {"table": name, "stream": stream}
        row.update(_embedding_slope(_series(summary, "embedding_size", name, stream)))
        row.update(_batch_effect(_series(summary, "batch_size", name, stream)))
        row.update(_dataset_fit(_series(summary, "dataset_size", name, stream)))
        out.append(row)
    return pd.DataFrame(out)


def _embedding_slope(series: pd.DataFrame) -> dict:
    from scipy import stats

    row = {"s_per_1000_dims": np.nan, "s_per_1000_dims_ci95": np.nan, "embedding_ratio": np.nan,
           "embedding_ratio_low": np.nan, "embedding_ratio_high": np.nan, "embedding_range": ""}
    if len(series) >= 2:
        fit = stats.linregress(series.embedding_size, series.total_mean)
        row["s_per_1000_dims"] = fit.slope * 1000
        if len(series) >= 3:
            row["s_per_1000_dims_ci95"] = stats.t.ppf(0.975, len(series) - 2) * fit.stderr * 1000
        end = _end_ratio(series)
        row.update(embedding_ratio=end.value, embedding_ratio_low=_nan(end.ci_low), embedding_ratio_high=_nan(end.ci_high),
                   embedding_range=f"{series.embedding_size.iloc[-1]} / {series.embedding_size.iloc[0]}")
    return row


def _batch_effect(series: pd.DataFrame) -> dict:
    row = {"batch_speedup": np.nan, "batch_speedup_low": np.nan, "batch_speedup_high": np.nan, "per_doubling": np.nan,
           "per_doubling_low": np.nan,
           "per_doubling_high": np.nan, "batch_range": "", "keys_read_ratio": np.nan}
    if len(series) >= 2:
        end = _end_ratio(series, first_over_last=True)
        root = 1 / math.log2(series.batch_size.iloc[-1] / series.batch_size.iloc[0])
        per = power(end, root)  # the end-to-end ratio's CI mapped (monotone), positive
        row.update(batch_speedup=end.value, batch_speedup_low=_nan(end.ci_low), batch_speedup_high=_nan(end.ci_high),
                   per_doubling=per.value, per_doubling_low=_nan(per.ci_low), per_doubling_high=_nan(per.ci_high),
                   batch_range=f"{series.batch_size.iloc[0]} / {series.batch_size.iloc[-1]}",
                   keys_read_ratio=series.keys_read.iloc[0] / series.keys_read.iloc[-1])
    return row


def _nan(x) -> float:
    return float("nan") if x is None else float(x)


def _interval(value: float, ci95: float) -> tuple[float, float]:
    """value ± ci95; the value alone when there is no CI (one repeat)."""
    return (value, value) if pd.isna(ci95) else (value - ci95, value + ci95)


def _dataset_fit(series: pd.DataFrame) -> dict:
    from scipy import stats

    row = {"dataset_r2": np.nan, "time_per_draw_ratio": np.nan}
    if len(series) >= 2:
        per_draw = series.total_mean / series.dataset_size
        row["time_per_draw_ratio"] = per_draw.iloc[-1] / per_draw.iloc[0]
    if len(series) >= 3:
        row["dataset_r2"] = stats.linregress(series.dataset_size, series.total_mean).rvalue ** 2
    return row


def figure(summary: pd.DataFrame):
    """Figs 13-15: rows dataset size, embedding size, batch size (and table size if measured),
    columns text (zipf) and graph (power-law); total time vs the swept value, one line per table,
    error bars 95% CI. Last row: dense vs sparse updates and shuffled vs clustered keys."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    line_sweeps = [s for s in ("dataset_size", "embedding_size", "batch_size", "table_size")
                   if len(in_sweep(summary, s))]
    bar_sweeps = [s for s in ("update", "locality") if len(in_sweep(summary, s))]
    streams = list(dict.fromkeys(summary.stream))
    colors = plots.palette(list(dict.fromkeys(summary.table)))
    n_rows = len(line_sweeps) + bool(bar_sweeps)
    fig, axes = plt.subplots(n_rows, max(len(streams), 2), figsize=(11, 3.6 * n_rows), squeeze=False)
    for row, sweep in zip(axes, line_sweeps):
        for ax, stream in zip(row, streams):
            _line_panel(ax, in_sweep(summary, sweep), sweep, stream, colors)
        for extra in row[len(streams):]:
            extra.axis("off")
    if bar_sweeps:
        for ax, sweep in zip(axes[-1], bar_sweeps):
            _bar_panel(ax, in_sweep(summary, sweep), sweep)
        for extra in axes[-1][len(bar_sweeps):]:
            extra.axis("off")
    plots.system_legend(fig, list(dict.fromkeys(summary.table)))
    plots.question(fig, "How does an embedding table's read-update-write time grow with dataset, embedding and "
                        "batch size, per store? (Figs 13-15)")
    fig.tight_layout()
    versions = "; ".join(f"{t}: {v}" for t, v in summary.groupby("table", sort=False).system_version.first().items())
    plots.footnote(fig, "Ours: total time of the read -> update -> write loop over the whole stream (table creation "
                        f"excluded), mean of {int(summary.repeats.max())} repeats, error bars 95% CI; every final "
                        f"table verified bit for bit. Versions: {versions}. The seed (001 Sec 5.10) gives plots only, "
                        "no numbers to overlay.")
    return fig


_LABELS = {"dataset_size": "dataset size (keys drawn)", "table_size": "table rows (distinct keys)",
           "embedding_size": "embedding size (float32 per key)", "batch_size": "batch size (keys drawn)"}


def _line_panel(ax, frame: pd.DataFrame, sweep: str, stream: str, colors: dict) -> None:
    from storebench.report import plots

    field = SWEEPS[sweep][0]
    part = frame[frame.stream == stream]
    plots.lines_with_ci(ax, part, field, "table", y="total_mean", err="total_ci95", colors=colors)
    plots.ticks_at(ax, sorted(part[field].unique()), log=True)  # the sweeps multiply: log x, ticked where measured
    ax.set(title=f"{STREAM_STANDS_FOR.get(stream, stream)} ({stream}): effect of {sweep.replace('_', ' ')}",
           xlabel=_LABELS[sweep], ylabel="total time (s, log)")


def _bar_panel(ax, frame: pd.DataFrame, sweep: str) -> None:
    from storebench.report import plots

    field = SWEEPS[sweep][0]
    bars = frame.assign(setting=[f"{STREAM_STANDS_FOR.get(s, s)}, {v}" for s, v in zip(frame.stream, frame[field])],
                        mean=frame.total_mean, ci95=frame.total_ci95)
    plots.grouped_bars(ax, bars, "table", "setting", log=True, legend=False)
    ax.legend(fontsize=8, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.1), frameon=False)
    what = "dense vs sparse updates" if sweep == "update" else "shuffled vs clustered hot keys"
    ax.set(title=f"future work (Sec 6): {what}", xlabel="", ylabel="total time (s, log)")


# ------------------------------------------------------------------------------- findings


def _fmt(values: dict[str, float], spec: str = ".2f", suffix: str = "x") -> str:
    return ", ".join(f"{k} {v:{spec}}{suffix}" for k, v in values.items() if pd.notna(v)) or "n/a"


def findings(summary: pd.DataFrame, claims: tuple = ()) -> Findings:
    """The seed's Sec 5.10 statements checked in our numbers: holds / does not hold / inconclusive /
    not comparable, each with the figures it rests on."""
    s = slopes(summary)
    streams = list(dict.fromkeys(summary.stream))
    lines = ["| past the seed (Sec 6 future work) and context | ours |", "|---|---|"]
    lines += _future_lines(summary, streams)
    text = "\n".join([
        f"**Paper ({PAPER['source']}):** {PAPER['setup']}. {PAPER['dataset_size']}. TileDB and TensorStore show no "
        "change as the embedding grows while RocksDB slows down (Fig 14). Batch size has no impact on RocksDB; "
        "each doubling about halves TileDB's and TensorStore's time; "
        f"{PAPER['batch_1024']} (Fig 15). They give {PAPER['numbers']}.",
        "",
        f"**Ours** (this machine, tables on local disk, page cache warm; `zipf` = text, `power-law` = graph). The "
        "stream is already in memory (no file-reading DataLoader: only the embedding read -> update -> write is "
        f"timed). How we read the seed's words: \"no change\"/\"no impact\"/\"similar\" = a ratio within "
        f"{FLAT[0]}-{FLAT[1]}x; \"grows\" = a ratio above {FLAT[1]}x; \"halves per doubling\" = time(b) / time(2b) "
        f"within {HALVING[0]}-{HALVING[1]}; \"linear\" = a least-squares R^2 >= {LINEAR_R2}. Verdicts by the rules "
        "below, from the 95% CIs (the same claims as at the top of the report).",
        "",
        *lines,
        "",
        "Durability differs by system and is each system's default: TileDB fsyncs every fragment file and "
        "TensorStore every chunk it writes (`file_io_sync`), RocksDB writes its WAL without fsync (`sync_writes`), "
        "localfs overwrites in place without fsync. TileDB gets one fragment per batch (never consolidated "
        "during a run), so its reads slow down as fragments accumulate: small batches mean more fragments.",
    ])
    return Findings(_headline(s, streams), text, _metrics(summary, s), claims)


def _per_table(s: pd.DataFrame, stream: str, column: str, tables=PAPER_TABLES) -> dict[str, float]:
    part = s[s.stream == stream].set_index("table")
    return {t: part.at[t, column] for t in tables if t in part.index}


def _within(value: float, band: tuple[float, float]) -> bool:
    return band[0] <= value <= band[1]


def _future_lines(summary, streams) -> list[str]:
    out = []
    for sweep, (a, b) in (("update", UPDATES), ("locality", LOCALITIES)):
        frame = in_sweep(summary, sweep)
        field = SWEEPS[sweep][0]
        for stream in streams:
            wide = frame[frame.stream == stream].pivot_table(index="table", columns=field, values="total_mean",
                                                             sort=False)
            if {a, b} <= set(wide.columns):
                what = "updates" if sweep == "update" else "hot keys"
                out.append(f"| {stream}: time with {a} / with {b} {what} (future work, Sec 6) | "
                           f"{_fmt((wide[a] / wide[b]).to_dict())} |")
    return out


def _headline(s: pd.DataFrame, streams: list[str]) -> str:
    stream = "zipf" if "zipf" in streams else streams[0]
    emb = _per_table(s, stream, "embedding_ratio")
    doubling = _per_table(s, stream, "per_doubling")
    ranges = s.embedding_range[s.embedding_range != ""]
    parts = []
    if any(pd.notna(v) for v in emb.values()) and len(ranges):
        parts.append(f"time at embedding {ranges.iloc[0]}: {_fmt(emb)}")
    if any(pd.notna(v) for v in doubling.values()):
        parts.append(f"time(batch b) / time(2b): {_fmt(doubling)}")
    ours = "; ".join(parts) or "no embedding or batch sweep measured"
    return (f"Embedding read-update-write, {STREAM_STANDS_FOR.get(stream, stream)} ({stream}) keys: {ours} "
            "(paper: RocksDB slows with embedding size, TileDB/TensorStore flat; each batch doubling halves "
            "TileDB/TensorStore time, no effect on RocksDB)")


def _metrics(summary: pd.DataFrame, s: pd.DataFrame) -> tuple:
    metrics = []
    for _, row in s.iterrows():
        if pd.notna(row.embedding_ratio):
            top, bottom = row.embedding_range.split(" / ")
            metrics.append(Metric(row.table, f"time at embedding {top} / at {bottom}, {row.stream} ({EXPERIMENT})",
                                  float(row.embedding_ratio), None, 1.0, "x", row.embedding_ratio_low,
                                  row.embedding_ratio_high))
        if pd.notna(row.batch_speedup):
            small, large = row.batch_range.split(" / ")
            metrics.append(Metric(row.table, f"time at batch {small} / at batch {large}, {row.stream} ({EXPERIMENT})",
                                  float(row.batch_speedup), None, 1.0, "x", row.batch_speedup_low,
                                  row.batch_speedup_high))
    return tuple(metrics)


# ------------------------------------------------------------------------------- the contract
def analyse(tables: ResultTables) -> Findings:
    table = summary(tables["embeddings"])
    return findings(table, claims(table))


def figures(tables: ResultTables) -> dict:
    return {"total_time": figure(summary(tables["embeddings"]))}


def claims(summary: pd.DataFrame) -> tuple:
    """The seed's Sec 5.10 statements judged on our numbers (bands FLAT, HALVING and LINEAR_R2 as in the
    findings text); the future-work sweeps have no statement of the paper to judge."""
    s = slopes(summary)
    streams = list(dict.fromkeys(summary.stream))
    made = []
    for stream in streams:
        made += _dataset_claims(summary, s, stream)
        made += _embedding_claims(s, stream)
        made += _batch_claims(summary, s, stream)
    return tuple(made)


def _dataset_claims(summary, s, stream) -> list:
    ref, made = "Sec 5.10, Fig 13", []
    statement = f"{stream} ({STREAM_STANDS_FOR.get(stream, stream)}): total time grows linearly with dataset size."
    r2 = {t: v for t, v in _per_table(s, stream, "dataset_r2").items() if pd.notna(v)}
    if r2:
        worst = min(r2, key=r2.get)
        made.append(judge(ref, statement, f"least-squares R^2 of total time vs dataset size, lowest of the stores "
                          f"({worst}; no CI: one fit over the sizes)", r2[worst], None, above(LINEAR_R2), unit=""))
    else:
        made.append(not_comparable(ref, statement, "R^2 of total time vs dataset size",
                                   "fewer than 3 dataset sizes measured at this scale"))
    statement = f"{stream}: no significant difference between the stores (RocksDB, TileDB, TensorStore)."
    sizes = in_sweep(summary, "dataset_size")
    largest = sizes[(sizes.stream == stream) & (sizes.dataset_size == sizes.dataset_size.max())]
    largest = largest[largest.table.isin(PAPER_TABLES)].sort_values("total_mean")
    if len(largest) >= 2:
        slow, fast = largest.iloc[-1], largest.iloc[0]
        spread = _ratio(slow, fast)
        made.append(judge_metric(ref, statement, f"slowest / fastest store at {int(fast.dataset_size)} keys drawn "
                          f"({slow.table} / {fast.table})", spread, within(*FLAT)))
    else:
        made.append(not_comparable(ref, statement, "slowest / fastest store", "fewer than two of the seed's stores "
                                   "measured in the dataset-size sweep"))
    return made


def _ratio(num, den) -> Metric:
    return ratio("", "", num.total_mean, num.total_ci95, den.total_mean, den.total_ci95)


def _embedding_claims(s, stream) -> list:
    made = []
    for name, expected in PAPER["embedding_size"].items():
        statement = f"{stream}: {name}'s total time {expected} as the embedding grows."
        row = s[(s.stream == stream) & (s.table == name)]
        if not len(row) or pd.isna(row.embedding_ratio.iloc[0]):
            made.append(not_comparable("Sec 5.10, Fig 14", statement, "time at largest / smallest embedding",
                                       f"{name} not measured in the embedding-size sweep"))
            continue
        r = row.iloc[0]
        rule = above(FLAT[1]) if expected == "grows" else within(*FLAT)
        made.append(judge("Sec 5.10, Fig 14", statement, f"{name} time at embedding {r.embedding_range}, {stream}",
                          r.embedding_ratio, (r.embedding_ratio_low, r.embedding_ratio_high), rule))
    return made


def _batch_claims(summary, s, stream) -> list:
    made = []
    for name, expected in PAPER["batch_size"].items():
        statement = f"{stream}: batch size, {name}: {expected}."
        row = s[(s.stream == stream) & (s.table == name)]
        if not len(row) or pd.isna(row.per_doubling.iloc[0]):
            made.append(not_comparable("Sec 5.10, Fig 15", statement, "time(b) / time(2b)",
                                       f"{name} not measured in the batch-size sweep"))
            continue
        r = row.iloc[0]
        band = FLAT if name == "rocksdb" else HALVING
        made.append(judge("Sec 5.10, Fig 15", statement, f"{name} time(b) / time(2b), geometric mean over batches "
                          f"{r.batch_range}, {stream}", r.per_doubling,
                          (r.per_doubling_low, r.per_doubling_high), within(*band)))
    batches = in_sweep(summary, "batch_size")
    ref = "Sec 5.10, Fig 15"
    first, second = (f"{stream}: at the largest batch TileDB is almost the same as RocksDB.",
                     f"{stream}: at the largest batch TensorStore is slightly above TileDB.")
    at = pd.DataFrame()
    if len(batches):
        top = int(batches.batch_size.max())
        at = batches[(batches.stream == stream) & (batches.batch_size == top)].set_index("table")
    if set(PAPER_TABLES) <= set(at.index):
        note = "" if top == 1024 else " (the seed's: 1024)"
        td_rd, ts_td = _ratio(at.loc["tiledb"], at.loc["rocksdb"]), _ratio(at.loc["tensorstore"], at.loc["tiledb"])
        made.append(judge_metric(ref, first, f"TileDB / RocksDB time at batch {top}{note}", td_rd,
                          within(*FLAT)))
        made.append(judge_metric(ref, second, f"TensorStore / TileDB time at batch {top}{note}", ts_td,
                          within(1.0, 1.5)))
    else:
        for statement in (first, second):
            made.append(not_comparable(ref, statement, "time ratio at the largest batch",
                                       "the seed's three stores not all measured in the batch-size sweep"))
    return made
