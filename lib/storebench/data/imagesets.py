"""Seed 004's images, made from the real ImageNet sample (storebench.data.imagenet): each JPEG decoded,
its shorter side resized to 224 and centre-cropped to 224x224 RGB (greyscale converted), then
stored in one of two encodings:

- ``jpeg``: JPEG quality 90 (the seed's compressed case, ~20 kB in the seed);
- ``raw``: the uncompressed pixels as raw uint8 (H, W, C) bytes, 150,528 B each. The seed stored
  uncompressed TIFF (~150 kB); this is the same payload without the TIFF header, not a TIFF file.

``image_set(n, encoding)`` replicates the originals under new UUIDs (drawn from a seeded RNG, so
the same arguments give the same UUIDs) to ``n`` samples; copies share their original's bytes
object, so a large set costs the memory of the originals only. Per sample: ``original`` (the real
image: its copies form a group that never spans two splits), ``label`` (ImageNet class index),
``synset``, ``kind`` (``animal`` for classes 0-397, ``object`` for 398-999: ImageNet-1k's classes
are ordered so; a coarse binary label like the seed's normal/tumour), ``key`` (the integer key
the sample has in every store of the registry) and ``checksum`` (CRC-32 of the stored bytes).
"""
from __future__ import annotations

import io
import uuid
import zlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
from PIL import Image

from storebench.data.datasets import imagenet
from storebench.paths import DATA_DIR

SIZE = 224
JPEG_QUALITY = 90
ENCODINGS = ("jpeg", "raw")
RAW_BYTES = SIZE * SIZE * 3
FIRST_OBJECT_CLASS = 398  # ImageNet-1k: classes 0-397 are animals, 398-999 objects
COLUMNS = ["key", "id", "original", "copy", "label", "synset", "kind", "filename", "bytes", "checksum"]


def checksum(blob: bytes) -> int:
    return zlib.crc32(blob)


def centre_crop(jpeg: bytes, size: int = SIZE) -> np.ndarray:
    """uint8 (size, size, 3): shorter side resized to ``size``, then the centre square."""
    with Image.open(io.BytesIO(jpeg)) as img:
        img.draft("RGB", (size, size))  # JPEG DCT scaling: decode at >= size, much faster
        img = img.convert("RGB")
        w, h = img.size
        scale = size / min(w, h)
        w, h = max(size, round(w * scale)), max(size, round(h * scale))
        img = img.resize((w, h), Image.Resampling.BICUBIC)
        left, top = (w - size) // 2, (h - size) // 2
        return np.asarray(img.crop((left, top, left + size, top + size)))


def encode(pixels: np.ndarray, encoding: str) -> bytes:
    if encoding == "jpeg":
        out = io.BytesIO()
        Image.fromarray(pixels).save(out, "JPEG", quality=JPEG_QUALITY)
        return out.getvalue()
    if encoding == "raw":
        return np.ascontiguousarray(pixels, dtype=np.uint8).tobytes()
    raise ValueError(f"unknown encoding {encoding!r}; valid: {', '.join(ENCODINGS)}")


def decode(blob: bytes, encoding: str) -> np.ndarray:
    """uint8 (224, 224, 3) pixels of a stored blob."""
    if encoding == "raw":
        return np.frombuffer(blob, dtype=np.uint8).reshape(SIZE, SIZE, 3)
    with Image.open(io.BytesIO(blob)) as img:
        return np.asarray(img.convert("RGB"))


def decode_batch(blobs: list[bytes], encoding: str) -> np.ndarray:
    """uint8 (B, 224, 224, 3)."""
    out = np.empty((len(blobs), SIZE, SIZE, 3), dtype=np.uint8)
    for i, blob in enumerate(blobs):
        out[i] = decode(blob, encoding)
    return out


@lru_cache(maxsize=4)
def originals(encoding: str, n_originals: int | None = None, data_dir: Path = DATA_DIR) -> tuple[pd.DataFrame, tuple]:
    """``n_originals`` real images (all 1,000 if None; else evenly spaced over the class indices, so
    a small set has animals and objects) as (metadata frame, tuple of encoded blobs) in class-index
    order. Cached per process: decoding 1,000 JPEGs takes seconds."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; valid: {', '.join(ENCODINGS)}")
    table = imagenet.manifest(data_dir).sort_values("class_index").reset_index(drop=True)
    if n_originals is not None:
        if not 1 <= n_originals <= len(table):
            raise ValueError(f"n_originals must be in 1..{len(table)}, got {n_originals}")
        table = table.iloc[np.unique(np.linspace(0, len(table) - 1, n_originals).round().astype(int))]
    wanted = set(table["filename"])
    blobs = {name: encode(centre_crop(data), encoding) for name, data in imagenet.images(data_dir) if name in wanted}
    meta = pd.DataFrame({
        "original": np.arange(len(table)),
        "label": table["class_index"].to_numpy(),
        "synset": table["synset"].to_numpy(),
        "kind": np.where(table["class_index"] < FIRST_OBJECT_CLASS, "animal", "object"),
        "filename": table["filename"].to_numpy(),
    })
    return meta, tuple(blobs[name] for name in table["filename"])


@dataclass
class ImageSet:
    """``n`` samples: ``table`` (one row per sample, columns COLUMNS, row i has key i) and
    ``blobs`` (bytes of key i; copies of one original are the same object)."""

    encoding: str
    table: pd.DataFrame
    blobs: list[bytes]
    seed: int

    def __len__(self) -> int:
        return len(self.blobs)

    def items(self) -> Iterator[tuple[int, bytes]]:
        """``(key, bytes)`` for Store.put_many."""
        return iter(enumerate(self.blobs))

    @property
    def nbytes(self) -> int:
        return int(self.table["bytes"].sum())

    def describe(self) -> str:
        n_orig = self.table["original"].nunique()
        return (f"{len(self):,} samples ({self.encoding}, mean {self.table['bytes'].mean() / 1e3:.1f} kB): "
                f"{n_orig} real ImageNet images x ~{len(self) / n_orig:.1f} copies under new UUIDs (seed {self.seed})")


def image_set(n_samples: int, encoding: str = "jpeg", seed: int = 0, n_originals: int | None = None,
              data_dir: Path = DATA_DIR) -> ImageSet:
    """``n_samples`` samples: sample i is a copy of original ``i mod n_originals`` (every original
    gets the same number of copies, +-1), under a UUID from ``numpy.random.default_rng(seed)``."""
    if n_samples < 1:
        raise ValueError(f"n_samples must be >= 1, got {n_samples}")
    meta, blobs = originals(encoding, n_originals, data_dir)
    which = np.arange(n_samples) % len(meta)
    rng = np.random.default_rng(seed)
    raw = rng.bytes(16 * n_samples)  # prefix-stable: a smaller set's UUIDs are a larger one's first
    ids = [uuid.UUID(bytes=raw[i:i + 16], version=4) for i in range(0, len(raw), 16)]
    sizes = np.array([len(b) for b in blobs])
    sums = np.array([checksum(b) for b in blobs], dtype=np.int64)
    table = meta.iloc[which].reset_index(drop=True)
    table.insert(0, "key", np.arange(n_samples))
    table.insert(1, "id", ids)
    table.insert(3, "copy", np.arange(n_samples) // len(meta))
    table["bytes"], table["checksum"] = sizes[which], sums[which]
    return ImageSet(encoding, table[COLUMNS], [blobs[i] for i in which], seed)
