"""One type for samples of any modality: named columns of equal length, row i being sample i.

A column is either an array whose first axis is the row (images (n, H, W, C) uint8, labels (n,),
triples (n, 3) int32) or :class:`~RaggedBytes` (variable-length bytes such as
tweets: one buffer plus offsets). Seed 001's three workloads:

| workload | dataset | columns |
|---|---|---|
| ``text`` | Sentiment140 sample (100,000 tweets) | ``text`` (RaggedBytes), ``label`` (uint8, 1 = positive) |
| ``image`` | CIFAR-10 (60,000; the seed used CIFAR-100, not obtainable offline) | ``image`` (n, 32, 32, 3) uint8, ``label`` uint8 |
| ``graph`` | FB15k-237 training triples (272,115) | ``triple`` (n, 3) int32: head, relation, tail ids |

The image experiments of seed 003 keep their :class:`~storebench.data.datasets.Dataset` (images +
labels); ``Samples.from_images`` views one as samples. ``row_fingerprints`` gives each row a 64-bit
fingerprint computed with array operations, so a loader verifies every row it delivers against
what was written without a per-row Python loop.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RaggedBytes:
    """Variable-length byte strings: sample i is ``data[offsets[i]:offsets[i + 1]]``."""
    data: np.ndarray  # uint8
    offsets: np.ndarray  # int64, len(samples) + 1, offsets[0] == 0

    @classmethod
    def from_list(cls, items: list[bytes]) -> "RaggedBytes":
        lengths = np.fromiter((len(b) for b in items), dtype=np.int64, count=len(items))
        offsets = np.zeros(len(items) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(np.frombuffer(b"".join(items), dtype=np.uint8).copy(), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> bytes:
        return self.data[self.offsets[i]:self.offsets[i + 1]].tobytes()

    def take(self, indices) -> "RaggedBytes":
        from storebench.data.samples import take_ragged

        return take_ragged(self, np.asarray(indices, dtype=np.int64))

    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


Column = "np.ndarray | RaggedBytes"
WORKLOADS = {"text": "sentiment140", "image": "cifar10", "graph": "fb15k237"}  # workload -> dataset
MODALITIES = tuple(WORKLOADS)


@dataclass(frozen=True)
class Samples:
    name: str  # the dataset (with its scale factor, e.g. "fb15k237x10")
    modality: str  # "text" | "image" | "graph"
    columns: dict  # column name -> np.ndarray (rows on axis 0) | RaggedBytes
    synthetic: bool = False  # made up for unit tests: never reported

    def __post_init__(self):
        if self.modality not in MODALITIES:
            raise ValueError(f"unknown modality {self.modality!r}; valid: {', '.join(MODALITIES)}")
        lengths = {name: len(column) for name, column in self.columns.items()}
        if len(set(lengths.values())) != 1:
            raise ValueError(f"{self.name}: columns differ in length: {lengths}")

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    @property
    def nbytes(self) -> int:
        return sum(c.data.nbytes + c.offsets.nbytes if isinstance(c, RaggedBytes) else c.nbytes
                   for c in self.columns.values())

    def head(self, n: int) -> "Samples":
        if not 1 <= n <= len(self):
            raise ValueError(f"{self.name} has {len(self)} rows, {n} requested")
        return self.take(np.arange(n))

    def take(self, rows) -> "Samples":
        return Samples(self.name, self.modality, take_columns(self.columns, np.asarray(rows, dtype=np.int64)),
                       self.synthetic)

    def scaled(self, factor: int) -> "Samples":
        """The dataset concatenated with itself ``factor`` times (the seed's x1..x50 inputs)."""
        if factor == 1:
            return self
        return Samples(f"{self.name}x{factor}", self.modality, scale_by_concatenation(self.columns, factor),
                       self.synthetic)

    @classmethod
    def from_images(cls, dataset) -> "Samples":
        """A seed 003 image Dataset as samples (no copy)."""
        return cls(dataset.name, "image", {"image": dataset.images, "label": dataset.labels}, dataset.synthetic)


# ------------------------------------------------------------------------------- columns
def take_columns(columns: dict, rows: np.ndarray) -> dict:
    return {name: take_ragged(c, rows) if isinstance(c, RaggedBytes) else c[rows] for name, c in columns.items()}


def take_ragged(column: RaggedBytes, rows: np.ndarray) -> RaggedBytes:
    """Rows ``rows`` of ``column`` (any order, repeats allowed), gathered with array operations."""
    starts, lengths = column.offsets[rows], column.lengths()[rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    positions = np.arange(offsets[-1], dtype=np.int64) - np.repeat(offsets[:-1] - starts, lengths)
    return RaggedBytes(column.data[positions], offsets)


def scale_by_concatenation(columns: dict[str, np.ndarray | RaggedBytes], factor: int) -> dict:
    """Each column repeated ``factor`` times end to end (the seed's x1..x50 inputs): the same
    samples, ``factor`` times as many rows."""
    if not isinstance(factor, (int, np.integer)) or factor < 1:
        raise ValueError(f"scale factor must be an integer >= 1, got {factor!r}")
    out = {}
    for name, column in columns.items():
        if isinstance(column, RaggedBytes):
            lengths = np.tile(column.lengths(), factor)
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            out[name] = RaggedBytes(np.tile(column.data, factor), offsets)
        else:
            out[name] = np.concatenate([column] * factor)
    return out


def concat_columns(parts: list[dict]) -> dict:
    """Rows of ``parts`` end to end (same column names)."""
    if len(parts) == 1:
        return parts[0]
    out = {}
    for name, first in parts[0].items():
        if isinstance(first, RaggedBytes):
            lengths = np.concatenate([p[name].lengths() for p in parts])
            offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
            np.cumsum(lengths, out=offsets[1:])
            out[name] = RaggedBytes(np.concatenate([p[name].data for p in parts]), offsets)
        else:
            out[name] = np.concatenate([p[name] for p in parts])
    return out


def slice_columns(columns: dict, start: int, stop: int) -> dict:
    out = {}
    for name, c in columns.items():
        if isinstance(c, RaggedBytes):
            out[name] = RaggedBytes(c.data[c.offsets[start]:c.offsets[stop]], c.offsets[start:stop + 1] - c.offsets[start])
        else:
            out[name] = c[start:stop]
    return out


def n_rows(columns: dict) -> int:
    return len(next(iter(columns.values())))


# ------------------------------------------------------------------------------- verification
_WEIGHTS = np.random.default_rng(0x5EED001).integers(1, 2**63, size=1 << 16, dtype=np.uint64) | np.uint64(1)


def row_fingerprints(columns: dict) -> np.ndarray:
    """A uint64 per row: sum over the row's bytes of byte x position weight (random odd 64-bit
    weights, arithmetic mod 2^64), combined over columns. Equal rows give equal fingerprints; a
    changed, moved or truncated byte changes it with probability ~1 - 2^-63."""
    total = None
    for i, (name, column) in enumerate(sorted(columns.items())):
        fp = _ragged_fingerprints(column) if isinstance(column, RaggedBytes) else _fixed_fingerprints(column)
        fp = fp * _WEIGHTS[-(i + 1)]
        total = fp if total is None else total + fp
    return total


def _fixed_fingerprints(column: np.ndarray) -> np.ndarray:
    """Rows as little-endian 64-bit words (the tail bytes apart), each word times its weight."""
    rows = np.ascontiguousarray(column).reshape(len(column), -1).view(np.uint8).reshape(len(column), -1)
    width = rows.shape[1]
    words = width // 8
    if words + (width - 8 * words) > len(_WEIGHTS):
        raise ValueError(f"rows of {width} bytes are wider than the fingerprint's {8 * len(_WEIGHTS)}")
    fp = np.zeros(len(column), np.uint64)
    if words:
        fp += np.ascontiguousarray(rows[:, :8 * words]).view("<u8") @ _WEIGHTS[:words]
    if width > 8 * words:
        fp += rows[:, 8 * words:].astype(np.uint64) @ _WEIGHTS[words:words + width - 8 * words]
    return fp


_CHUNK_BYTES = 1 << 24  # ragged rows are fingerprinted this many bytes at a time (24 bytes of work arrays per byte)


def _ragged_fingerprints(column: RaggedBytes) -> np.ndarray:
    """Rows in chunks of about ``_CHUNK_BYTES`` (a row's fingerprint depends on its own bytes only), so 2.7 M
    tweets need ~0.4 GB of work arrays, not 5 GB."""
    lengths = column.lengths()
    if len(lengths) and lengths.max() > len(_WEIGHTS):
        raise ValueError(f"a row of {lengths.max()} bytes is longer than the fingerprint's {len(_WEIGHTS)}")
    offsets, out, start = column.offsets, np.empty(len(lengths), dtype=np.uint64), 0
    while start < len(lengths):
        stop = int(np.searchsorted(offsets, offsets[start] + _CHUNK_BYTES, side="right")) - 1
        stop = min(max(stop, start + 1), len(lengths))
        out[start:stop] = _ragged_chunk(column.data[offsets[start] - offsets[0]:offsets[stop] - offsets[0]],
                                        offsets[start:stop + 1] - offsets[start], lengths[start:stop])
        start = stop
    return out


def _ragged_chunk(data: np.ndarray, offsets: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Fingerprints of the rows of ``data`` (offsets from 0)."""
    position = np.arange(len(data), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    products = data.astype(np.uint64) * _WEIGHTS[position]
    prefix = np.zeros(len(products) + 1, dtype=np.uint64)
    np.cumsum(products, out=prefix[1:])
    return (prefix[offsets[1:]] - prefix[offsets[:-1]]) + lengths.astype(np.uint64)


# ------------------------------------------------------------------------------- loading
def load(workload: str, n_rows: int | None = None, prepared_dir=None) -> Samples:
    """The prepared dataset of ``workload`` (first ``n_rows`` rows if given)."""
    from storebench.data import datasets
    from storebench.data.datasets import corpora

    if workload not in WORKLOADS:
        raise ValueError(f"unknown workload {workload!r}; valid workloads: {', '.join(WORKLOADS)}")
    if workload == "image":
        samples = Samples.from_images(datasets.load(WORKLOADS[workload], prepared_dir=prepared_dir))
    else:
        samples = corpora.load_prepared(WORKLOADS[workload], prepared_dir)
    return samples.head(n_rows) if n_rows else samples


def synthetic(modality: str, n: int, seed: int = 0) -> Samples:
    """Random rows shaped like a workload's, for unit tests only (never for reported results)."""
    rng = np.random.default_rng(seed)
    if modality == "image":
        columns = {"image": rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8),
                   "label": rng.integers(0, 10, n, dtype=np.uint8)}
    elif modality == "text":
        texts = [rng.integers(32, 127, rng.integers(0, 140), dtype=np.uint8).tobytes() for _ in range(n)]
        columns = {"text": RaggedBytes.from_list(texts), "label": rng.integers(0, 2, n, dtype=np.uint8)}
    else:
        columns = {"triple": rng.integers(0, 14_541, (n, 3), dtype=np.int32)}
    return Samples(f"synthetic-{modality}", modality, columns, synthetic=True)
