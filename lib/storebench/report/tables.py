"""Tables a notebook shows: results by workload, and who measured what with which versions.
(Findings are storebench.report.findings; the index is storebench.report.index.)"""
from __future__ import annotations

import numpy as np
import pandas as pd


def readable(value: float) -> str:
    """A number as a reader takes it in: whole numbers as integers with thousands separators,
    otherwise 3 significant digits (no scientific notation): 130,740; 2,810; 12.3; 0.00123."""
    if not np.isfinite(value):
        return str(value)
    if value == int(value) or abs(value) >= 100:
        return f"{value:,.0f}"
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")


def show_tables_whole() -> None:
    """pandas display settings for reports: every row and column (no "..."), numbers via ``readable``."""
    pd.set_option("display.max_rows", None)
    pd.set_option("display.max_columns", None)
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
