"""How samples become stored bytes: data formats and packing k samples per object.

A *sample* is ``(image: uint8 ndarray, label: int)``. An *object* is what a store
holds under one key: the encoding of one or more consecutive samples
(``samples_per_object``, the seed's "storage disaggregation granularity").

Formats (seed 003, Sec 4.3.4):
- ``raw``: each image PNG-encoded, as the image files of a dataset on disk are;
  the label travels in a one-byte prefix, as a class directory would carry it.
- ``pickle``: the Python list of ``(image, label)`` tuples, pickled.
- ``blob``: the raw ndarray bytes of each image, prefixed by its label byte.
"""
from __future__ import annotations

import io
import pickle
import struct
from abc import ABC, abstractmethod
from typing import ClassVar, Sequence

import numpy as np

Sample = tuple[np.ndarray, int]

_COUNT = struct.Struct("<I")
_BLOB_HEADER = struct.Struct("<IIII")  # count, height, width, channels
_RAW_RECORD = struct.Struct("<BI")  # label, png length


class Format(ABC):
    name: ClassVar[str]

    @abstractmethod
    def encode(self, samples: Sequence[Sample]) -> bytes:
        """Encode consecutive samples into one object."""

    @abstractmethod
    def decode(self, data: bytes) -> list[Sample]:
        """Inverse of :meth:`encode`."""


class PickleFormat(Format):
    name = "pickle"

    def encode(self, samples):
        return pickle.dumps([(np.ascontiguousarray(img), int(lbl)) for img, lbl in samples],
                            protocol=pickle.HIGHEST_PROTOCOL)

    def decode(self, data):
        return pickle.loads(data)


class BlobFormat(Format):
    name = "blob"

    def encode(self, samples):
        first = samples[0][0]
        h, w = first.shape[:2]
        c = first.shape[2] if first.ndim == 3 else 0
        parts = [_BLOB_HEADER.pack(len(samples), h, w, c)]
        for img, lbl in samples:
            parts.append(bytes([int(lbl)]))
            parts.append(np.ascontiguousarray(img, dtype=np.uint8).tobytes())
        return b"".join(parts)

    def decode(self, data):
        count, h, w, c = _BLOB_HEADER.unpack_from(data)
        shape = (h, w, c) if c else (h, w)
        size = h * w * max(c, 1)
        records = np.frombuffer(data, dtype=np.uint8, offset=_BLOB_HEADER.size).reshape(count, size + 1)
        return [(records[i, 1:].reshape(shape), int(records[i, 0])) for i in range(count)]


class RawFormat(Format):
    name = "raw"

    def encode(self, samples):
        from PIL import Image

        parts = [_COUNT.pack(len(samples))]
        for img, lbl in samples:
            buf = io.BytesIO()
            Image.fromarray(np.ascontiguousarray(img, dtype=np.uint8)).save(buf, format="PNG")
            png = buf.getvalue()
            parts.append(_RAW_RECORD.pack(int(lbl), len(png)))
            parts.append(png)
        return b"".join(parts)

    def decode(self, data):
        from PIL import Image

        (count,) = _COUNT.unpack_from(data)
        offset, samples = _COUNT.size, []
        for _ in range(count):
            lbl, length = _RAW_RECORD.unpack_from(data, offset)
            offset += _RAW_RECORD.size
            img = np.asarray(Image.open(io.BytesIO(data[offset:offset + length])))
            offset += length
            samples.append((img, lbl))
        return samples


FORMATS: dict[str, type[Format]] = {f.name: f for f in (RawFormat, PickleFormat, BlobFormat)}


def get_format(name: str) -> Format:
    try:
        return FORMATS[name]()
    except KeyError:
        raise ValueError(f"unknown format {name!r}; valid formats: {', '.join(sorted(FORMATS))}") from None


def n_objects(n_samples: int, samples_per_object: int) -> int:
    return -(-n_samples // samples_per_object)


def object_of(sample: int, samples_per_object: int) -> int:
    return sample // samples_per_object


def object_samples(obj: int, samples_per_object: int, n_samples: int) -> range:
    start = obj * samples_per_object
    return range(start, min(start + samples_per_object, n_samples))


def pack(images: np.ndarray, labels: np.ndarray, fmt: Format, samples_per_object: int):
    """Yield ``(object_key, encoded_bytes)`` for the dataset, ``samples_per_object`` per object."""
    if samples_per_object < 1:
        raise ValueError(f"samples_per_object must be >= 1, got {samples_per_object}")
    n = len(images)
    for obj in range(n_objects(n, samples_per_object)):
        idx = object_samples(obj, samples_per_object, n)
        yield obj, fmt.encode([(images[i], int(labels[i])) for i in idx])
