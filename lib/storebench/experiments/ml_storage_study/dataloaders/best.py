"""Each store's best loader configuration: the mean epoch time per configuration and the fastest one
per workload and store. Part of the measurement (its ``dataloaders_best`` table is what scalability and
resources run with) and read by the analysis."""
from __future__ import annotations

import numpy as np
import pandas as pd

from storebench.core.stats import mean_ci

BASELINE = "localfs"  # the seed's ext4 baseline
CONFIG_KEYS = ["workload", "system", "loader", "rows_per_key", "batch_size", "prefetch", "workers"]


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean epoch time and 95% CI per configuration (NaN prefetch for map-style kept as a key)."""
    if rows.empty:
        return pd.DataFrame(columns=CONFIG_KEYS + ["mean", "ci95", "rows_per_second", "repeats"])
    out = []
    keyed = rows.assign(prefetch=rows.prefetch.fillna(0))
    for key, group in keyed.groupby(CONFIG_KEYS, sort=False):
        mean, half, n = mean_ci(group.seconds)
        out.append({**dict(zip(CONFIG_KEYS, key)), "layout": group.layout.iloc[0], "mean": mean, "ci95": half,
                    "rows_per_second": group.n_rows.iloc[0] / mean, "repeats": n,
                    "system_version": group.system_version.iloc[0]})
    frame = pd.DataFrame(out)
    frame["prefetch"] = frame.prefetch.replace(0, np.nan)
    return frame


def best_configs(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload and system, the fastest configuration (lowest mean epoch time)."""
    if summary.empty:
        return summary
    best = summary.loc[summary.groupby(["workload", "system"], sort=False)["mean"].idxmin()]
    return best.reset_index(drop=True)
