"""Key streams draw from the distributions their docstrings define, deterministically."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from storebench.data import keystreams as ks


def chi_square_z(counts: np.ndarray, pmf: np.ndarray) -> float:
    """Pearson's chi-square of ``counts`` against ``pmf``, as standard deviations above its mean
    under the null (df = cells - 1); about N(0, 1) when the draws follow ``pmf``."""
    expected = counts.sum() * pmf
    chi2 = ((counts - expected) ** 2 / expected).sum()
    df = len(counts) - 1
    return (chi2 - df) / np.sqrt(2 * df)


def test_zipf_rank_frequencies_follow_the_target_pmf():
    keys = ks.zipf_keys(1000, 200_000, exponent=1.1, seed=7, clustered=True)
    counts = np.bincount(keys, minlength=1000)
    assert abs(chi_square_z(counts, ks.zipf_pmf(1000, 1.1))) < 4


@pytest.mark.parametrize("wrong_exponent", [1.0, 1.2])
def test_the_zipf_check_rejects_a_wrong_exponent(wrong_exponent):
    keys = ks.zipf_keys(1000, 200_000, exponent=1.1, seed=7, clustered=True)
    counts = np.bincount(keys, minlength=1000)
    assert chi_square_z(counts, ks.zipf_pmf(1000, wrong_exponent)) > 20


def test_zipf_pmf_is_the_bounded_zipf_law():
    pmf = ks.zipf_pmf(4, exponent=2.0)
    expected = np.array([1, 1 / 4, 1 / 9, 1 / 16])
    np.testing.assert_allclose(pmf, expected / expected.sum())


def binned_weights(weights: np.ndarray, top: int) -> np.ndarray:
    """Counts of weight 1, 2, ..., top-1, and >= top."""
    return np.bincount(np.minimum(weights, top), minlength=top + 1)[1:]


def zeta_pmf_binned(alpha: float, top: int) -> np.ndarray:
    """P(w = 1 .. top-1) and P(w >= top) of the discrete power law d^-alpha / zeta(alpha)."""
    head = np.arange(1, top, dtype=np.float64) ** -alpha / special.zeta(alpha)
    return np.append(head, 1 - head.sum())


def test_power_law_weights_follow_the_discrete_power_law():
    weights = ks.power_law_weights(200_000, alpha=2.1, seed=3)
    assert weights.min() == 1 and np.all(np.diff(weights) <= 0)  # hottest rank first
    assert abs(chi_square_z(binned_weights(weights, 30), zeta_pmf_binned(2.1, 30))) < 4
    for wrong_alpha in (1.9, 2.3):  # the same check can fail
        assert chi_square_z(binned_weights(weights, 30), zeta_pmf_binned(wrong_alpha, 30)) > 20


def test_power_law_tail_falls_with_exponent_alpha_minus_one():
    weights = ks.power_law_weights(200_000, alpha=2.1, seed=3)
    degrees = np.unique(np.geomspace(10, 1000, 15).astype(int))
    ccdf = np.array([(weights >= d).mean() for d in degrees])
    slope = np.polyfit(np.log(degrees), np.log(ccdf), 1)[0]
    assert slope == pytest.approx(-(2.1 - 1), abs=0.1)


def test_power_law_draws_are_proportional_to_key_weights():
    weights = ks.power_law_weights(500, alpha=2.1, seed=11).astype(float)
    keys = ks.power_law_keys(500, 300_000, alpha=2.1, seed=11, clustered=True)
    counts = np.bincount(keys, minlength=500)
    assert abs(chi_square_z(counts, weights / weights.sum())) < 4
    for not_proportional in (weights ** 0.95, weights ** 1.05, weights + 1):  # the same check can fail
        assert chi_square_z(counts, not_proportional / not_proportional.sum()) > 20


@pytest.mark.parametrize("name, params", [("zipf", {"exponent": 1.1}), ("power-law", {"alpha": 2.1})])
def test_key_pmf_matches_the_draws_for_shuffled_keys(name, params):
    stream = ks.key_stream(name, 300, 200_000, seed=5, **params)
    counts = np.bincount(stream.keys, minlength=300)
    assert abs(chi_square_z(counts, ks.key_pmf(name, 300, seed=5, **params))) < 4


@pytest.mark.parametrize("name", ks.STREAMS)
def test_clustered_and_shuffled_share_frequencies_but_not_key_identities(name):
    clustered = ks.key_stream(name, 1000, 50_000, seed=2, clustered=True).keys
    shuffled = ks.key_stream(name, 1000, 50_000, seed=2).keys
    clustered_counts = np.bincount(clustered, minlength=1000)
    shuffled_counts = np.bincount(shuffled, minlength=1000)
    np.testing.assert_array_equal(np.sort(clustered_counts), np.sort(shuffled_counts))
    assert not np.array_equal(clustered_counts, shuffled_counts)
    hottest_10 = np.argsort(shuffled_counts)[::-1][:10]
    assert np.ptp(hottest_10) > 100  # scattered over the key space, not adjacent
    assert set(np.argsort(clustered_counts)[::-1][:3]) <= set(range(10))  # hot keys first


@pytest.mark.parametrize("name", ks.STREAMS)
def test_streams_are_deterministic_per_seed(name):
    first = ks.key_stream(name, 10_000, 20_000, seed=42).keys
    np.testing.assert_array_equal(first, ks.key_stream(name, 10_000, 20_000, seed=42).keys)
    assert not np.array_equal(first, ks.key_stream(name, 10_000, 20_000, seed=43).keys)
    assert first.dtype == np.int64 and first.min() >= 0 and first.max() < 10_000


def test_large_streams_are_fast_enough():
    keys = ks.zipf_keys(10**6, 10**6, seed=1)
    assert len(keys) == 10**6 and keys.max() < 10**6


def test_zero_draws_give_an_empty_stream():
    stream = ks.key_stream("zipf", 10, 0)
    assert len(stream.keys) == 0 and stream.describe()["n_draws"] == 0


def test_describe_records_parameters():
    row = ks.key_stream("power-law", 100, 1000, seed=9, alpha=2.5).describe()
    assert row["key_stream"] == "power-law" and row["n_keys"] == 100 and row["n_draws"] == 1000
    assert row["seed"] == 9 and row["alpha"] == 2.5 and row["clustered"] is False
    assert 0 < row["hottest_1pct_share"] <= 1 and 0 < row["distinct_keys_drawn"] <= 100


@pytest.mark.parametrize("call, message", [
    (lambda: ks.zipf_keys(0, 10), "n_keys must be >= 1, got 0"),
    (lambda: ks.zipf_keys(10, -1), "n_draws must be >= 0, got -1"),
    (lambda: ks.zipf_keys(10.5, 10), "n_keys must be an integer"),
    (lambda: ks.zipf_keys(10, 10, exponent=0), "exponent must be a finite number > 0, got 0"),
    (lambda: ks.zipf_keys(10, 10, exponent=float("nan")), "exponent must be a finite number > 0"),
    (lambda: ks.power_law_keys(10, 10, alpha=1.0), "alpha must be a finite number > 1, got 1.0"),
    (lambda: ks.power_law_keys(0, 10), "n_keys must be >= 1"),
    (lambda: ks.key_stream("uniform", 10, 10), "unknown key stream 'uniform'; valid: zipf, power-law"),
    (lambda: ks.key_pmf("uniform", 10), "valid: zipf, power-law"),
    (lambda: ks.batches(np.arange(3), 0), "batch_size must be >= 1, got 0"),
])
def test_invalid_arguments_are_rejected_with_a_clear_message(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        call()


@pytest.mark.parametrize("n, batch_size", [(10, 3), (9, 3), (2, 5), (0, 4), (7, 1)])
def test_batches_cover_every_draw_once_in_order(n, batch_size):
    keys = ks.zipf_keys(50, n, seed=1)
    chunks = list(ks.batches(keys, batch_size))
    assert all(len(c) == batch_size for c in chunks[:-1])
    assert not chunks or 1 <= len(chunks[-1]) <= batch_size
    np.testing.assert_array_equal(np.concatenate(chunks) if chunks else keys[:0], keys)
