"""Each store's best loader configuration: the mean epoch time per configuration and the fastest one
per workload and store. Part of the measurement (its ``dataloaders_best`` table is what scalability and
resources run with) and read by the analysis."""
from __future__ import annotations

import numpy as np
import pandas as pd

from storebench.core.stats import mean_ci

BASELINE = "localfs"  # the seed's ext4 baseline
CONFIG_KEYS = ["workload", "system", "loader", "rows_per_key", "batch_size", "prefetch", "workers"]


CONFIRM_FIGURES = ["mean", "ci95", "rows_per_second", "repeats"]


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean epoch time and 95% CI per configuration, from its selection repeats (NaN prefetch for map-style
    kept as a key); ``confirm_*``: the same from the fresh repeats of a configuration picked as best."""
    if rows.empty:
        return pd.DataFrame(columns=CONFIG_KEYS + CONFIRM_FIGURES + [f"confirm_{f}" for f in CONFIRM_FIGURES])
    phase = rows["phase"].fillna("select") if "phase" in rows else pd.Series("select", index=rows.index)
    frame = _per_config(rows[phase == "select"])
    confirmed = _per_config(rows[phase == "confirm"])
    if not confirmed.empty:
        confirm = confirmed[CONFIG_KEYS + CONFIRM_FIGURES].rename(columns={f: f"confirm_{f}" for f in CONFIRM_FIGURES})
        frame = frame.merge(confirm, on=CONFIG_KEYS, how="left")
    else:
        frame = frame.assign(**{f"confirm_{f}": np.nan for f in CONFIRM_FIGURES})
    frame["prefetch"] = frame.prefetch.replace(0, np.nan)
    return frame


def _per_config(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    keyed = rows.assign(prefetch=rows.prefetch.fillna(0))
    for key, group in keyed.groupby(CONFIG_KEYS, sort=False):
        mean, half, n = mean_ci(group.seconds)
        out.append({**dict(zip(CONFIG_KEYS, key)), "layout": group.layout.iloc[0], "mean": mean, "ci95": half,
                    "rows_per_second": group.n_rows.iloc[0] / mean, "repeats": n,
                    "system_version": group.system_version.iloc[0]})
    return pd.DataFrame(out, columns=CONFIG_KEYS + ["layout", "mean", "ci95", "rows_per_second", "repeats",
                                                    "system_version"])


def best_configs(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload and system, the fastest configuration, picked on its selection repeats (lowest mean
    epoch time); its figures are those of its confirmatory repeats where it has them (``confirmed``),
    ``selected_mean`` the figure it was picked on."""
    if summary.empty:
        return summary
    best = summary.loc[summary.groupby(["workload", "system"], sort=False)["mean"].idxmin()].reset_index(drop=True)
    best["selected_mean"] = best["mean"]
    best["confirmed"] = best["confirm_mean"].notna()
    for figure in CONFIRM_FIGURES:
        best.loc[best.confirmed, figure] = best.loc[best.confirmed, f"confirm_{figure}"]
    return best.drop(columns=[f"confirm_{f}" for f in CONFIRM_FIGURES])
