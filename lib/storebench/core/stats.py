"""Statistics over repeats, pure (no clock, no server): what analyses use on recorded tables.

- ``mean_ci``: a mean with the half-width of its Student-t 95% confidence interval.
- ``ratio_interval``, ``bounded_interval``: the 95% CI of a figure derived from two or more means (a
  ratio, a share), taken from the derived figure's own distribution, so it respects the figure's
  definition: a ratio of positive means stays positive (and its interval is asymmetric), a share
  stays in [0, 1]. With at least ``MIN_BOOTSTRAP`` repeats on every side it is the percentile
  bootstrap (``RESAMPLES`` resamples, fixed ``SEED``, each side's repeats resampled independently);
  with fewer the bootstrap under-covers, so it is each mean's t-interval carried to the figure (on
  the log scale for a ratio, clipped to the bounds for a share). A figure from one repeat has no CI.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from storebench.core.rows import KEY_COLUMNS

CONFIDENCE = 0.95
MIN_BOOTSTRAP = 5  # repeats a side for the percentile bootstrap (the adaptive-repeats minimum)
RESAMPLES = 10_000
SEED = 0
NAN = float("nan")

METHOD_TEXT = (f"95% CI of a derived figure (ratio, share): percentile bootstrap ({RESAMPLES:,} resamples, seed "
               f"{SEED}, each side's repeats resampled independently) when every side has at least {MIN_BOOTSTRAP} "
               "repeats; with 2 to 4 repeats, each mean's Student-t interval carried to the figure (on the log "
               "scale for a ratio, so it stays positive and is asymmetric; clipped to [0, 100%] for a share); "
               "with one repeat, no CI.")


def mean_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float, int]:
    """Mean and the half-width of its Student-t confidence interval; (mean, half, n)."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    n = len(values)
    mean = float(values.mean()) if n else NAN
    if n < 2:
        return mean, NAN, n
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1) * values.std(ddof=1) / np.sqrt(n))
    return mean, half, n


def summarize(rows: pd.DataFrame, value: str = "seconds", by=KEY_COLUMNS) -> pd.DataFrame:
    """Mean and 95% CI half-width of ``value`` over repeats, one row per configuration; ``values``
    keeps the repeats themselves (for the bootstrap of a figure derived from several means)."""
    by = [c for c in by if c in rows.columns]
    out = []
    for key, group in rows.groupby(by, sort=False, dropna=False):
        mean, half, n = mean_ci(group[value])
        out.append({**dict(zip(by, key)), "mean": mean, "ci95": half, "repeats": n,
                    "system_version": group.system_version.iloc[0],
                    "values": tuple(float(v) for v in group[value] if pd.notna(v))})
    return pd.DataFrame(out)


# --- intervals of derived figures ---------------------------------------------------------------

def _clean(values) -> np.ndarray:
    values = np.asarray(values if values is not None else (), dtype=float).ravel()
    return values[~np.isnan(values)]


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float, np.floating, np.integer)) and math.isfinite(float(x))


def bootstrap(statistic: Callable[..., np.ndarray], samples: Sequence, confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """Percentile bootstrap interval of ``statistic(*means)``: each sample's repeats resampled with
    replacement independently of the others; ``statistic`` takes one array of resampled means per
    sample (vectorised). (low, high)."""
    rng = np.random.default_rng(seed)
    means = []
    for values in samples:
        values = _clean(values)
        picks = rng.integers(0, len(values), size=(resamples, len(values)))
        means.append(values[picks].mean(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        drawn = np.asarray(statistic(*means), dtype=float)
    drawn = drawn[~np.isnan(drawn)]
    if not len(drawn):
        return NAN, NAN
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(drawn, [tail, 100 - tail])
    return float(low), float(high)


def ratio_interval(numerator, denominator, confidence: float = CONFIDENCE, *, seed: int = SEED
                   ) -> tuple[float, float, float]:
    """mean(numerator) / mean(denominator) of two independent sets of repeats (positive values, e.g.
    times or rates), with its 95% CI: (value, low, high); low and high are NaN from one repeat."""
    num, den = _clean(numerator), _clean(denominator)
    if not len(num) or not len(den) or den.mean() == 0:
        return NAN, NAN, NAN
    value = float(num.mean() / den.mean())
    if min(len(num), len(den)) < 2:
        return value, NAN, NAN
    if min(len(num), len(den)) >= MIN_BOOTSTRAP:
        low, high = bootstrap(np.divide, (num, den), confidence, seed=seed)
        return value, low, high
    (m1, h1, _), (m2, h2, _) = mean_ci(num, confidence), mean_ci(den, confidence)
    low, high = log_ratio_interval(value, m1, h1, m2, h2)
    return value, low, high


def product_interval(samples: Sequence, exponents: Sequence[float], confidence: float = CONFIDENCE, *,
                     seed: int = SEED) -> tuple[float, float, float]:
    """prod(mean_i ** exponent_i) of independent sets of positive repeats (a ratio: exponents (1, -1);
    a ratio of speed-ups sharing a middle term: (1, -2, 1)), with its 95% CI: bootstrap with
    >= MIN_BOOTSTRAP repeats a side, else the means' t-intervals on the log scale."""
    samples = [_clean(s) for s in samples]
    if any(not len(s) or s.mean() <= 0 for s in samples):
        return NAN, NAN, NAN
    value = float(np.prod([s.mean() ** e for s, e in zip(samples, exponents)]))
    n = min(len(s) for s in samples)
    if n < 2:
        return value, NAN, NAN
    if n >= MIN_BOOTSTRAP:
        low, high = bootstrap(lambda *means: np.prod([m ** e for m, e in zip(means, exponents)], axis=0), samples,
                              confidence, seed=seed)
        return value, low, high
    spread = math.sqrt(sum((e * h / m) ** 2 for (m, h, _), e in zip((mean_ci(s, confidence) for s in samples),
                                                                     exponents)))
    return value, float(value * math.exp(-spread)), float(value * math.exp(spread))


def log_ratio_interval(value: float, numerator: float, numerator_ci: float, denominator: float,
                       denominator_ci: float) -> tuple[float, float]:
    """The CI of a ratio of two independent positive means from their CI half-widths, on the log
    scale: value x exp(-+ sqrt((h1/m1)^2 + (h2/m2)^2)). Positive and asymmetric; NaN without both CIs."""
    if not all(_finite(x) for x in (value, numerator, numerator_ci, denominator, denominator_ci)):
        return NAN, NAN
    if numerator <= 0 or denominator <= 0 or value <= 0:
        return NAN, NAN
    spread = math.hypot(numerator_ci / numerator, denominator_ci / denominator)
    return float(value * math.exp(-spread)), float(value * math.exp(spread))


def log_interval(value: float, low: float, high: float, power: float) -> tuple[float, float, float]:
    """(value, low, high) of a positive figure raised to ``power`` (e.g. a per-doubling factor from an
    end-to-end ratio): monotone, so the interval's ends map to the new interval's ends."""
    if not _finite(value) or value <= 0:
        return NAN, NAN, NAN
    ends = sorted(x ** power for x in (low, high)) if _finite(low) and _finite(high) and low > 0 else [NAN, NAN]
    return float(value ** power), float(ends[0]), float(ends[1])


def bounded_interval(statistic: Callable[..., np.ndarray], samples: Sequence, bounds=(0.0, 1.0),
                     confidence: float = CONFIDENCE, *, seed: int = SEED) -> tuple[float, float, float]:
    """``statistic`` of the samples' means (e.g. a share of a time), kept within ``bounds`` (value and
    CI both), with its 95% CI: (value, low, high). Bootstrap with >= MIN_BOOTSTRAP repeats a side;
    with fewer, a first-order interval from the means' t-intervals (numerical derivative), clipped."""
    samples = [_clean(s) for s in samples]
    if any(not len(s) for s in samples):
        return NAN, NAN, NAN
    means = [float(s.mean()) for s in samples]
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(statistic(*[np.asarray([m]) for m in means])[0])
    lo, hi = bounds
    clip = lambda x: float(min(max(x, lo), hi))  # noqa: E731
    if math.isnan(value):
        return NAN, NAN, NAN
    n = min(len(s) for s in samples)
    if n < 2:
        return clip(value), NAN, NAN
    if n >= MIN_BOOTSTRAP:
        low, high = bootstrap(statistic, samples, confidence, seed=seed)
    else:
        halves = [mean_ci(s, confidence)[1] for s in samples]
        spread = 0.0
        for i, (m, h) in enumerate(zip(means, halves)):
            step = max(abs(m) * 1e-6, 1e-12)
            moved = [np.asarray([x + (step if j == i else 0.0)]) for j, x in enumerate(means)]
            with np.errstate(divide="ignore", invalid="ignore"):
                slope = (float(statistic(*moved)[0]) - value) / step
            spread += (slope * h) ** 2
        low, high = value - math.sqrt(spread), value + math.sqrt(spread)
    return clip(value), clip(low), clip(high)


def share_interval(part_mean: float, part_ci: float, whole_mean: float, whole_ci: float
                   ) -> tuple[float, float, float]:
    """part / whole as a share in [0, 1] from the two means and their CI half-widths (first order),
    clipped: for shares recorded without their repeats."""
    if not (_finite(part_mean) and _finite(whole_mean)) or whole_mean == 0:
        return NAN, NAN, NAN
    value = part_mean / whole_mean
    clip = lambda x: float(min(max(x, 0.0), 1.0))  # noqa: E731
    if not (_finite(part_ci) and _finite(whole_ci)):
        return clip(value), NAN, NAN
    spread = math.hypot(part_ci / whole_mean, value * whole_ci / whole_mean)
    return clip(value), clip(value - spread), clip(value + spread)
