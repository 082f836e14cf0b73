"""How rows of a workload become the bytes a key-value store holds: R rows per key (seed 001 Sec 3.4).

Object ``k`` holds rows ``k*R .. k*R + R - 1`` (the last object may hold fewer). A batch of
objects is decoded at once: fixed-width rows (image: label byte + pixels; graph: three
little-endian int32) are one ``np.frombuffer`` over the joined objects; text objects carry a small
header (row count, row lengths, labels) and the batch becomes one byte buffer plus offsets.
No per-row Python work on the read path.
"""
from __future__ import annotations

import struct
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from storebench.data.samples import RaggedBytes, Samples, slice_columns

_COUNT = struct.Struct("<I")


class RowFormat(ABC):
    modality: str

    @abstractmethod
    def encode(self, columns: dict) -> bytes:
        """The rows of ``columns`` as one object."""

    @abstractmethod
    def decode_many(self, values: list[bytes]) -> dict:
        """The rows of ``values``' objects, end to end, as columns."""


class ImageRows(RowFormat):
    """label (1 byte) + pixels (H*W*C bytes) per row."""

    modality = "image"

    def __init__(self, shape: tuple[int, ...]):
        self.shape = tuple(shape)
        self.width = 1 + int(np.prod(self.shape))

    def encode(self, columns):
        rows = np.empty((len(columns["label"]), self.width), dtype=np.uint8)
        rows[:, 0] = columns["label"]
        rows[:, 1:] = columns["image"].reshape(len(rows), -1)
        return rows.tobytes()

    def decode_many(self, values):
        rows = np.frombuffer(b"".join(values), dtype=np.uint8).reshape(-1, self.width)
        # one copy makes the pixels contiguous: fingerprinted and handed to torch without another
        return {"image": np.ascontiguousarray(rows[:, 1:]).reshape(-1, *self.shape), "label": rows[:, 0]}


class GraphRows(RowFormat):
    """head, relation, tail as three little-endian int32 per row."""

    modality = "graph"

    def encode(self, columns):
        return np.ascontiguousarray(columns["triple"], dtype="<i4").tobytes()

    def decode_many(self, values):
        return {"triple": np.frombuffer(b"".join(values), dtype="<i4").reshape(-1, 3)}


class TextRows(RowFormat):
    """count (uint32), then each row's length (uint32) and label (uint8), then the row bytes."""

    modality = "text"

    def encode(self, columns):
        text, labels = columns["text"], columns["label"]
        lengths = text.lengths().astype("<u4")
        return b"".join((_COUNT.pack(len(lengths)), lengths.tobytes(),
                         np.asarray(labels, dtype=np.uint8).tobytes(), text.data.tobytes()))

    def decode_many(self, values):
        """All objects' headers and payloads gathered with array operations (no per-object loop)."""
        data = np.frombuffer(b"".join(values), dtype=np.uint8)
        sizes = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        starts = np.zeros(len(values), dtype=np.int64)
        np.cumsum(sizes[:-1], out=starts[1:])
        counts = _uint32_at(data, starts)
        row_object = np.repeat(np.arange(len(values)), counts)
        k = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        lengths = _uint32_at(data, starts[row_object] + 4 + 4 * k)
        labels = data[starts[row_object] + 4 + 4 * counts[row_object] + k]
        header_sizes = 4 + 5 * counts
        payload_sizes = sizes - header_sizes
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        if payload_sizes.sum() != offsets[-1]:
            raise ValueError(f"text objects hold {payload_sizes.sum()} payload bytes, their headers say {offsets[-1]}")
        is_payload = np.repeat(np.tile(np.array([False, True]), len(values)),
                               np.column_stack([header_sizes, payload_sizes]).ravel())
        return {"text": RaggedBytes(data[is_payload], offsets), "label": labels}


def _uint32_at(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Little-endian uint32 at each byte position of ``data``, as int64."""
    b = data[positions[:, None] + np.arange(4)].astype(np.int64)
    return b[:, 0] | b[:, 1] << 8 | b[:, 2] << 16 | b[:, 3] << 24


def row_format(samples: Samples) -> RowFormat:
    if samples.modality == "image":
        return ImageRows(samples.columns["image"].shape[1:])
    return {"text": TextRows, "graph": GraphRows}[samples.modality]()


@dataclass(frozen=True)
class KeyLayout:
    """Which rows each key holds: ``rows_per_key`` consecutive rows, ``n_rows`` in all."""
    n_rows: int
    rows_per_key: int

    def __post_init__(self):
        if self.rows_per_key < 1:
            raise ValueError(f"rows per key must be >= 1, got {self.rows_per_key}")
        if self.rows_per_key > self.n_rows:
            raise ValueError(f"rows per key ({self.rows_per_key}) is larger than the dataset ({self.n_rows} rows)")

    @property
    def n_keys(self) -> int:
        return -(-self.n_rows // self.rows_per_key)

    def keys_of(self, rows: np.ndarray) -> np.ndarray:
        """The distinct keys holding ``rows``, in first-needed order."""
        keys = np.asarray(rows, dtype=np.int64) // self.rows_per_key
        _, first = np.unique(keys, return_index=True)
        return keys[np.sort(first)]

    def rows_in_key(self, keys: np.ndarray) -> np.ndarray:
        return np.minimum(self.rows_per_key, self.n_rows - np.asarray(keys, dtype=np.int64) * self.rows_per_key)

    def positions(self, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Where each of ``rows`` sits in the decoded rows of ``keys`` (joined in that order)."""
        keys = np.asarray(keys, dtype=np.int64)
        starts = np.zeros(len(keys), dtype=np.int64)
        np.cumsum(self.rows_in_key(keys)[:-1], out=starts[1:])
        order = np.argsort(keys, kind="stable")
        rows = np.asarray(rows, dtype=np.int64)
        key_index = order[np.searchsorted(keys[order], rows // self.rows_per_key)]
        return starts[key_index] + rows % self.rows_per_key


def encode_objects(samples: Samples, layout: KeyLayout, fmt: RowFormat):
    """``(key, bytes)`` for every key of ``layout``, in key order."""
    for key in range(layout.n_keys):
        start = key * layout.rows_per_key
        yield key, fmt.encode(slice_columns(samples.columns, start, min(start + layout.rows_per_key, len(samples))))
