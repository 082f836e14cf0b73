"""Statistics over repeats: mean with a 95% confidence interval, per configuration. Pure (no clock,
no server): what analyses use on recorded tables."""
from __future__ import annotations

import numpy as np
import pandas as pd

from storebench.core.rows import KEY_COLUMNS


def mean_ci(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and the half-width of its Student-t confidence interval; (mean, half, n)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    n = len(values)
    mean = float(values.mean()) if n else float("nan")
    if n < 2:
        return mean, float("nan"), n
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1) * values.std(ddof=1) / np.sqrt(n))
    return mean, half, n


def summarize(rows: pd.DataFrame, value: str = "seconds", by=KEY_COLUMNS) -> pd.DataFrame:
    """Mean and 95% CI half-width of ``value`` over repeats, one row per configuration."""
    by = [c for c in by if c in rows.columns]
    out = []
    for key, group in rows.groupby(by, sort=False, dropna=False):
        mean, half, n = mean_ci(group[value])
        out.append({**dict(zip(by, key)), "mean": mean, "ci95": half, "repeats": n,
                    "system_version": group.system_version.iloc[0]})
    return pd.DataFrame(out)
