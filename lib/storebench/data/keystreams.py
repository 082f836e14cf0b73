"""Skewed key streams for embedding workloads (seed 001 Sec 5.10).

"Text dataset follows zipf distribution and graph follows power law distribution": each
training batch reads the embeddings of its keys from a store, updates them and writes them
back, so how often each key recurs decides what caching and update locality can gain.

Both streams are i.i.d. draws from a fixed distribution over keys ``0 .. n_keys-1``:

- ``zipf``: a bounded Zipf law over ranks, P(rank r) = (r+1)^-exponent / H, r = 0 .. n_keys-1,
  H the normalising sum (word frequencies in text);
- ``power-law``: each key is a graph node whose weight (its degree) is drawn from the discrete
  power law P(w = d) = d^-alpha / zeta(alpha), d = 1, 2, ...; draws pick a key with
  probability proportional to its weight (an edge endpoint picked at random).

Ranks are keys ordered hottest first. With ``clustered=True`` rank r is key r (hot keys
adjacent: update locality); otherwise a seeded permutation scatters the ranks over the key
space. The two variants of one seed draw the same rank sequence, so they differ only in which
key each rank names.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class KeyStream:
    name: str
    n_keys: int
    keys: np.ndarray  # int64 key per draw, in draw order
    params: dict = field(default_factory=dict)  # the generator's parameters (seed, exponent, ...)

    def describe(self) -> dict:
        """Parameters and shape of the stream, flat, for recording beside a result row."""
        hot = max(1, self.n_keys // 100)
        counts = np.bincount(self.keys, minlength=self.n_keys)
        top = np.sort(counts)[::-1][:hot].sum()
        return {
            "key_stream": self.name,
            "n_keys": self.n_keys,
            "n_draws": len(self.keys),
            **self.params,
            "distinct_keys_drawn": int(np.count_nonzero(counts)),
            "hottest_1pct_share": float(top / len(self.keys)) if len(self.keys) else 0.0,
        }


def zipf_pmf(n_keys: int, exponent: float = 1.1) -> np.ndarray:
    """P(rank r) = (r+1)^-exponent / sum_j (j+1)^-exponent for r = 0 .. n_keys-1.

    Bounded, so any exponent > 0 gives a distribution (1 is Zipf's law for words); exponent
    <= 0 is rejected: 0 is uniform, below 0 the coldest ranks would be the most frequent.
    """
    _check_count("n_keys", n_keys, minimum=1)
    if not (math.isfinite(exponent) and exponent > 0):
        raise ValueError(f"zipf exponent must be a finite number > 0, got {exponent!r}")
    weights = np.arange(1, n_keys + 1, dtype=np.float64) ** -float(exponent)
    return weights / weights.sum()


def power_law_weights(n_keys: int, alpha: float = 2.1, seed: int = 0) -> np.ndarray:
    """Per-rank weights (int64, hottest first) of ``n_keys`` nodes of a power-law graph.

    Each weight is an independent draw from P(w = d) = d^-alpha / zeta(alpha), d = 1, 2, ...
    (numpy's ``Generator.zipf``; the minimum is 1 and the tail P(w >= d) falls as
    d^-(alpha-1)); they are then sorted in decreasing order. Weights are unbounded: for
    alpha <= 2 their mean is infinite and a handful of keys can take most draws. alpha must
    be > 1 (below, the distribution does not normalise).
    """
    _check_count("n_keys", n_keys, minimum=1)
    if not (math.isfinite(alpha) and alpha > 1):
        raise ValueError(f"power-law alpha must be a finite number > 1, got {alpha!r}")
    weight_rng, _, _ = _rngs(seed)
    return np.sort(weight_rng.zipf(alpha, size=n_keys))[::-1]


def zipf_keys(n_keys: int, n_draws: int, exponent: float = 1.1, seed: int = 0,
              clustered: bool = False) -> np.ndarray:
    """``n_draws`` keys (int64) drawn i.i.d. from the bounded Zipf law of ``zipf_pmf``."""
    _check_count("n_draws", n_draws, minimum=0)
    return _draw(zipf_pmf(n_keys, exponent), n_draws, seed, clustered)


def power_law_keys(n_keys: int, n_draws: int, alpha: float = 2.1, seed: int = 0,
                   clustered: bool = False) -> np.ndarray:
    """``n_draws`` keys (int64), each key drawn with probability weight / total weight.

    Weights are those of ``power_law_weights(n_keys, alpha, seed)``, hottest first by rank.
    """
    _check_count("n_draws", n_draws, minimum=0)
    return _draw(_power_law_pmf(n_keys, alpha, seed), n_draws, seed, clustered)


def _power_law_pmf(n_keys: int, alpha: float, seed: int) -> np.ndarray:
    weights = power_law_weights(n_keys, alpha, seed).astype(np.float64)  # float: int64 sums can overflow
    return weights / weights.sum()


STREAMS = {"zipf": zipf_keys, "power-law": power_law_keys}


def key_stream(name: str, n_keys: int, n_draws: int, seed: int = 0, clustered: bool = False,
               **params) -> KeyStream:
    """The stream ``name`` (see ``STREAMS``); ``params`` go to its generator (exponent, alpha)."""
    _check_name(name)
    keys = STREAMS[name](n_keys, n_draws, seed=seed, clustered=clustered, **params)
    return KeyStream(name, n_keys, keys, {"seed": seed, "clustered": clustered, **params})


def key_pmf(name: str, n_keys: int, seed: int = 0, clustered: bool = False, **params) -> np.ndarray:
    """P(key) for every key (indexed by key) in the stream ``key_stream`` draws with these arguments."""
    _check_name(name)
    rank_pmf = zipf_pmf(n_keys, **params) if name == "zipf" else _power_law_pmf(n_keys, seed=seed, **params)
    return rank_pmf[_rank_to_key(n_keys, seed, clustered).argsort()]


def batches(keys: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """Consecutive slices of ``batch_size`` keys (views, in order); the last may be shorter."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size!r}")  # now, not at the first next()
    return (keys[start:start + batch_size] for start in range(0, len(keys), batch_size))


def _draw(rank_pmf: np.ndarray, n_draws: int, seed: int, clustered: bool) -> np.ndarray:
    """i.i.d. ranks from ``rank_pmf`` mapped to keys.

    Sampled as multinomial counts per rank, expanded and shuffled: the same distribution
    as independent draws (given the counts, every order is equally likely), and about
    twice as fast as inverse-CDF search for 10^7 draws over 10^6 keys.
    """
    _, draw_rng, _ = _rngs(seed)
    counts = draw_rng.multinomial(n_draws, rank_pmf)
    ranks = np.repeat(np.arange(len(rank_pmf), dtype=np.int64), counts)
    draw_rng.shuffle(ranks)
    return _rank_to_key(len(rank_pmf), seed, clustered)[ranks]


def _rank_to_key(n_keys: int, seed: int, clustered: bool) -> np.ndarray:
    if clustered:
        return np.arange(n_keys, dtype=np.int64)
    _, _, permutation_rng = _rngs(seed)
    return permutation_rng.permutation(n_keys).astype(np.int64)


def _rngs(seed: int) -> list[np.random.Generator]:
    """Independent generators for weights, draws and the rank->key permutation, so that
    clustered and shuffled streams of one seed share weights and rank sequence."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3)]


def _check_name(name: str) -> None:
    if name not in STREAMS:
        raise ValueError(f"unknown key stream {name!r}; valid: {', '.join(STREAMS)}")


def _check_count(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
