"""One row per system of the ratios each experiment reports, read back from the committed result
tables (``reports/*.csv``) with the experiments' own functions: the overview on reports/index.html."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .experiments import access_pattern, breakdown, format as fmt, location, training

COLUMNS = {
    "random_k256_vs_k1": "random reads: k=256 vs k=1 speed-up (access_pattern)",
    "disk_cold_vs_memory": "disk-cold / memory time, sequential-1, MNIST (location)",
    "pickle_vs_raw_space": "pickle / raw PNG space (format)",
    "batched_vs_per_sample_b256": "batched vs per-sample loader speed-up, batch 256 (training)",
    "network_share": "network share of download time across the shaped hop (breakdown)",
}


def _read(reports: Path, name: str) -> pd.DataFrame | None:
    path = reports / f"{name}.csv"
    return pd.read_csv(path) if path.exists() else None


def _access_pattern(rows: pd.DataFrame) -> pd.Series:
    speed = access_pattern.speedups(access_pattern.summary(rows))
    speed = speed.sort_values("location", key=lambda loc: loc != "disk-warm")  # disk-warm first, where measured
    return speed.drop_duplicates("system").set_index("system").get("speedup_k256", pd.Series(dtype=float))


def _location(rows: pd.DataFrame) -> pd.Series:
    ratios = location.ratios(location.summary(rows))
    mnist = ratios[ratios.dataset == "mnist"].set_index("system")
    return mnist.get("disk-cold_vs_memory", pd.Series(dtype=float))


def _format(rows: pd.DataFrame, usage: pd.DataFrame) -> pd.Series:
    return fmt.ratios(fmt.summary(rows), usage).set_index("system").get("pickle_vs_raw_space", pd.Series(dtype=float))


def _training(rows: pd.DataFrame) -> pd.Series:
    summary = training.summary(rows)
    speed = training.batched_speedup(summary[summary.emulated_compute_s == 0])
    if "batched_speedup" not in speed:
        return pd.Series(dtype=float)
    at = speed[speed.batch_size == 256]
    return at[at.workers == at.workers.min()].set_index("system").batched_speedup


def _breakdown(rows: pd.DataFrame) -> pd.Series:
    parts = breakdown.breakdown(breakdown.summary(rows))
    if parts.empty:
        return pd.Series(dtype=float)
    return parts[parts.network == parts.network.iloc[-1]].drop_duplicates("system").set_index("system").network_share


def overview(reports: Path) -> pd.DataFrame:
    """system x ratio; NaN where an experiment did not measure that system."""
    reports = Path(reports)
    columns = {}
    readers = {"random_k256_vs_k1": ("access_pattern", _access_pattern), "disk_cold_vs_memory": ("location", _location),
               "batched_vs_per_sample_b256": ("training", _training), "network_share": ("breakdown", _breakdown)}
    for column, (name, read) in readers.items():
        rows = _read(reports, name)
        if rows is not None and len(rows):
            columns[column] = read(rows)
    rows, usage = _read(reports, "format"), _read(reports, "format_usage")
    if rows is not None and usage is not None:
        columns["pickle_vs_raw_space"] = _format(rows, usage)
    table = pd.DataFrame(columns)
    return table[[c for c in COLUMNS if c in table]]


def overview_html(reports: Path) -> str:
    table = overview(reports)
    if table.empty:
        return ""
    cells = table.copy().astype(object)
    for column in table:
        spec = ".1%" if column == "network_share" else ".2f"
        suffix = "" if column == "network_share" else "x"
        cells[column] = [f"{v:{spec}}{suffix}" if pd.notna(v) else "&ndash;" for v in table[column]]
    cells.columns = [COLUMNS[c] for c in table.columns]
    return cells.rename_axis("system").reset_index().to_html(escape=False, border=0, index=False)
