"""Tables a notebook shows: results by workload, and who measured what with which versions.
(Findings are storebench.report.findings; the index is storebench.report.index.)"""
from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd


def readable(value: float) -> str:
    """A number as a reader takes it in: whole numbers as integers with thousands separators,
    otherwise 3 significant digits (no scientific notation): 130,740; 2,810; 12.3; 0.00123."""
    if not np.isfinite(value):
        return str(value)
    if value == int(value):
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{float(f'{value:.3g}'):,.0f}"
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")


def show_tables_whole() -> None:
    """pandas display settings for reports: every row, column and character (no "..."), numbers
    via ``readable`` (what a table not shown through ``html`` still gets)."""
    pd.set_option("display.max_rows", None)
    pd.set_option("display.max_columns", None)
    pd.set_option("display.max_colwidth", None)
    pd.set_option("display.width", None)
    pd.set_option("display.float_format", readable)


def workload_label(access: str, k: int) -> str:
    return "full" if access == "full" else f"{'seq' if access == 'sequential' else 'rand'}-{k}"


def wide_table(summary: pd.DataFrame) -> pd.DataFrame:
    """system x location rows, one column per workload, cells 'mean ± ci95' seconds."""
    frame = summary.copy()
    frame["workload"] = [workload_label(a, k) for a, k in zip(frame.access, frame.samples_per_request)]
    frame["cell"] = [f"{m:.4g} ± {c:.2g}" if pd.notna(c) else f"{m:.4g}" for m, c in zip(frame["mean"], frame.ci95)]
    order = list(dict.fromkeys(frame.workload))
    table = frame.pivot_table(index=["system", "system_version", "location"], columns="workload", values="cell",
                              aggfunc="first", sort=False)
    return table[[c for c in order if c in table.columns]].fillna("n/a")


def provenance(rows: pd.DataFrame) -> pd.DataFrame:
    """Who measured what with which versions: one row per system, plus the machine."""
    columns = ["system", "system_version", "client_version"]
    table = rows[columns].drop_duplicates().reset_index(drop=True)
    first = rows.iloc[0]
    for key in ("host", "cpus", "memory_bytes", "python", "git_rev", "scale", "n_samples"):
        table[key] = first[key]
    table["repeats"] = int(rows.repeat.max()) + 1
    return table


def number(value, spec: str, suffix: str = "") -> str:
    """A figure for a findings table; 'n/a' for what was not measured at this scale."""
    return "n/a (not measured at this scale)" if value is None or pd.isna(value) else f"{value:{spec}}{suffix}"


# --- Tables as a report shows them -------------------------------------------------------------

LONG_ROWS = 25  # a longer (or wider) table is also written as a CSV beside the report
WIDE_COLUMNS = 12
SHOWN_ROWS = 10  # the rows of a long table shown before its "all rows" fold
MISSING = "–"
HEADER_UNITS = [  # (column-name pattern, header with its unit); the first match wins
    (r"^ci95$", "± 95% CI"),
    (r"^(.+)_ci95$", r"\1 ± 95% CI"),
    (r"^seconds$", "time (s)"),
    (r"^(.+)_us_per_(\w+)$", r"\1 (µs/\2)"),
    (r"^(.+)_(s|sec|seconds)$", r"\1 (s)"),
    (r"^(.+)_ms$", r"\1 (ms)"),
    (r"^(.+)_us$", r"\1 (µs)"),
    (r"^(.+)_mib$", r"\1 (MiB)"),
    (r"^(.+)_(pct|percent)$", r"\1 (%)"),
    (r"^(.+)_bytes$", r"\1"),  # sizes carry their unit in the cell (kB, MB, GB)
    (r"^(.+)_mbit$", r"\1 (Mbit/s)"),
    (r"^index$", ""),  # an unnamed index shown as a column
]
RATES = [(r"_per_s(ec|econd)?(?=_|$)", "/s"), (r"(^|_)mbps(?=_|$)", r"\1MB/s"), (r"(^|_)mb(?=_|/|$)", r"\1MB"),
         (r"(^|_)kb(?=_|/|$)", r"\1kB"), (r"(^|_)gb(?=_|/|$)", r"\1GB")]  # words inside a name
# Columns that say where a row was measured: the machine card has them, a table shows them only if they vary.
MACHINE_COLUMNS = ("host", "cpus", "memory_bytes", "python", "git_rev", "scale", "run_id")
SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?e[+-]\d+")


def header(column) -> str:
    """A column name as a header with its unit: ``loader_rows_per_second`` -> "loader rows/s",
    ``t_median_s`` -> "t median (s)", ``ci95`` -> "± 95% CI". A name with spaces is kept."""
    name = str(column)
    if " " in name or name != name.lower():
        return name
    for pattern, replacement in RATES:
        name = re.sub(pattern, replacement, name)
    for pattern, replacement in HEADER_UNITS:
        if re.match(pattern, name):
            return re.sub(pattern, replacement, name).replace("_", " ")
    return name.replace("_", " ")


def is_bytes(column) -> bool:
    words = re.split(r"[_ ]", str(column).lower())
    return "bytes" in words and "per" not in words


def size(value) -> str:
    """Bytes in decimal units, 3 significant digits: 512 B, 41 kB, 1.28 MB, 25.3 GB."""
    if value is None or pd.isna(value):
        return MISSING
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= scale:
            return f"{readable(float(f'{value / scale:.3g}'))} {unit}"
    return f"{readable(value)} B"


def cell(value) -> str:
    """One value as text: numbers via ``readable``, missing as a dash, no scientific notation."""
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return MISSING if pd.isna(value) else readable(float(value))
    if value is None or (not isinstance(value, (list, tuple, dict, np.ndarray)) and pd.isna(value)):
        return MISSING
    return readable_text(str(value))


def readable_text(text: str) -> str:
    """``text`` with every number in scientific notation written out (2e-05 -> 0.00002)."""
    return SCIENTIFIC.sub(lambda m: readable(float(m.group())), text)


def readable_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as strings a reader takes in: the index as columns, headers with units, counts as
    integers, sizes in kB/MB/GB, 3 significant digits, a dash where nothing was measured."""
    flat = frame.copy()
    if isinstance(flat.columns, pd.MultiIndex):
        flat.columns = [" ".join(header(p) for p in parts if str(p)) for parts in flat.columns]
    elif flat.columns.name and not all(isinstance(c, str) for c in flat.columns):
        flat.columns = [f"{header(flat.columns.name)} = {c}" for c in flat.columns]
    if not isinstance(flat.index, pd.RangeIndex) or flat.index.name:
        flat = flat.reset_index()
    flat = flat.drop(columns=[c for c in MACHINE_COLUMNS if c in flat.columns and flat[c].nunique(dropna=False) == 1
                              and len(flat) > 0])
    flat.columns = [str(c) for c in flat.columns]
    out = pd.DataFrame(index=flat.index)
    for i, column in enumerate(flat.columns):
        values = flat.iloc[:, i]
        out[header(column) if header(column) not in out.columns else f"{header(column)} ({i})"] = [
            size(v) if is_bytes(column) and _number(v) else cell(v) for v in values]
    return out


def _number(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "table"


class ReportTables:
    """The tables of one report: each shown readable; a long or wide one also written whole to
    ``<out_dir>/tables/<experiment>/<name>.csv`` (linked relative to the report)."""

    def __init__(self, experiment: str, out_dir: Path):
        self.experiment, self.out_dir, self.count = experiment, Path(out_dir), 0
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir(parents=True)

    @property
    def folder(self) -> Path:
        return self.out_dir / "tables" / self.experiment

    def html(self, frame, caption: str | None = None, name: str | None = None, csv: bool = False) -> str:
        """``frame`` (a DataFrame or a pandas Styler) as the HTML a report shows; ``csv`` writes it
        as CSV whatever its size."""
        if hasattr(frame, "data") and not isinstance(frame, pd.DataFrame):  # a Styler: its data and caption
            caption, frame = caption or frame.caption, frame.data
        self.count += 1
        shown = readable_frame(frame)
        name = name or (slug(caption) if caption else f"table-{self.count}")
        notes = ""
        if csv or len(shown) > LONG_ROWS or len(shown.columns) > WIDE_COLUMNS:
            link = self.write_csv(frame, name)
            notes = f"<p class='sb-note'>{len(shown):,} rows &times; {len(shown.columns)} columns; as CSV: " \
                    f"<a href='{link}'>{link}</a></p>"
        if len(shown) > LONG_ROWS:
            head = _table_html(shown.head(SHOWN_ROWS), caption)
            return (f"{head}{notes}<details><summary>all {len(shown):,} rows</summary>"
                    f"{_table_html(shown, caption)}</details>")
        return _table_html(shown, caption) + notes

    def write_csv(self, frame: pd.DataFrame, name: str) -> str:
        path = self.folder / f"{name}.csv"
        if path.exists():
            path = self.folder / f"{name}-{self.count}.csv"
        raw = frame if isinstance(frame.index, pd.RangeIndex) and not frame.index.name else frame.reset_index()
        raw.to_csv(path, index=False)
        return path.relative_to(self.out_dir).as_posix()


def _table_html(shown: pd.DataFrame, caption: str | None) -> str:
    body = shown.to_html(index=False, escape=True, border=0, classes="sb-table", na_rep=MISSING)
    if caption:
        body = body.replace(">", f"><caption>{html.escape(caption)}</caption>", 1)
    return f"<div class='sb-scroll'>{body}</div>"
