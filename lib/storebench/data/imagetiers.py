"""Seed 002's image tiers, made from the real ImageNet sample (storebench.data.datasets.imagenet).

A tier holds ``copies`` images of every one of the 1,000 real classes (x1: 1, mini: 13 as the seed's
1% of ImageNet-1k, medium: 130), class-major (key = class position x copies + copy, so a class's
images are adjacent as in ImageNet's class folders). Copy 0 is the real JPEG, byte for byte. Copy
k >= 1 is the same photo re-encoded: resized by a factor drawn from a log-normal (sigma
``SCALE_SIGMA``, clipped to ``SCALE_RANGE``; the aspect ratio kept to the pixel, see
``scaled_size``) and saved as JPEG at a quality drawn from ``QUALITIES`` (4:4:4 chroma: the
originals' own quality is ~96-99, so quality 97 keeps a photo's size). So, as in the seed's random 1%
of ImageNet, the images of one class differ in size and resolution, and a query that filters a class
by size (Q9-Q11) selects part of it; a tier of exact replicas selects all of a class or none. The
metadata of every image (bytes, width, height, SHA-256) is measured from the bytes stored.

The parameters were chosen once so that the mini tier resembles the seed's: 13,000 images, 1.39 GB
(the seed's mini: 12,756 images, 1.39 GB); the queries' thresholds are set against it
(storebench.layouts.queries). Draws are seeded per (image, copy): a tier is the same on every run
and machine with the same Pillow (pinned in env/requirements).

``image_tier(name)`` builds a tier once into a cache folder (one file per image, written in
parallel) and returns its metadata and a reader of each image's bytes.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import multiprocessing
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from storebench.data.datasets import imagenet
from storebench.paths import DATA_DIR, work_dir

VERSION = 1  # bump when the transform (or its parameters) changes: a cached tier of another version is rebuilt
SCALE_SIGMA = 0.35
SCALE_RANGE = (0.5, 2.0)
QUALITIES = (88, 97)  # inclusive
SEED = 2002
COLUMNS = ["key", "filename", "label", "bytes", "width", "height", "sha256", "original", "copy", "scale", "quality"]


def tier_copies(tier: str) -> int:
    return imagenet.tier_copies(tier)


def draws(image_index: int, copies: int) -> list[tuple[float, int]]:
    """(scale, quality) of copies 1..copies-1 of the real image at ``image_index`` (class position)."""
    rng = np.random.default_rng([SEED, image_index])
    out = []
    for _ in range(1, copies):
        scale = float(np.clip(math.exp(rng.normal(0.0, SCALE_SIGMA)), *SCALE_RANGE))
        out.append((scale, int(rng.integers(QUALITIES[0], QUALITIES[1] + 1))))
    return out


def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """``(width, height) x scale`` in whole pixels with the aspect ratio kept as exactly as pixels
    allow: of the widths within 2% of the target, the one whose rounded height gives the ratio
    closest to the original's (so a 500x333 photo stays just wider than 3:2, a 3:2 one exactly 3:2)."""
    if width < 1 or height < 1 or scale <= 0:
        raise ValueError(f"need a positive size and scale, got {width}x{height} x {scale}")
    target, ratio = width * scale, width / height
    best = None
    for w in range(max(1, math.floor(target * 0.98)), max(1, math.ceil(target * 1.02)) + 1):
        h = max(1, round(w * height / width))
        score = (abs(w / h - ratio), abs(w - target))
        if best is None or score < best[0]:
            best = (score, (w, h))
    return best[1]


def variant(jpeg: bytes, scale: float, quality: int) -> tuple[bytes, int, int]:
    """The real ``jpeg`` resized by ``scale`` and saved at ``quality``: (bytes, width, height)."""
    from PIL import Image

    with Image.open(io.BytesIO(jpeg)) as img:
        img = img.convert("RGB") if img.mode not in ("RGB", "L") else img
        size = scaled_size(img.width, img.height, scale)
        out = io.BytesIO()
        img.resize(size, Image.Resampling.BICUBIC).save(out, "JPEG", quality=quality, subsampling=0)
    return out.getvalue(), size[0], size[1]


@dataclass
class ImageTier:
    """A tier's metadata (one row per image, columns COLUMNS, row i has key i) and its image files."""
    name: str
    copies: int
    meta: pd.DataFrame
    folder: Path

    def image(self, filename: str) -> bytes:
        """The bytes of the image stored as ``filename`` (a row's ``filename``)."""
        return (self.folder / filename).read_bytes()

    @property
    def nbytes(self) -> int:
        return int(self.meta["bytes"].sum())

    def describe(self) -> str:
        if self.copies == 1:
            return f"{self.name}: the {len(self.meta):,} real ImageNet JPEGs, {self.nbytes / 1e9:.2f} GB"
        return (f"{self.name}: {len(self.meta):,} images, {self.nbytes / 1e9:.2f} GB: the 1,000 real ImageNet JPEGs, "
                f"each with {self.copies - 1} re-encoded cop{'y' if self.copies == 2 else 'ies'}")


def _params() -> dict:
    return {"version": VERSION, "scale_sigma": SCALE_SIGMA, "scale_range": list(SCALE_RANGE),
            "qualities": list(QUALITIES), "seed": SEED}


def _make_class(job: tuple) -> list[dict]:
    """Every copy of one real image, written into ``folder``; their metadata rows."""
    index, row, jpeg, copies, folder = job
    rows = []
    for copy, (scale, quality) in enumerate([(1.0, None)] + draws(index, copies)):
        if copy == 0:
            data, width, height = jpeg, int(row["width"]), int(row["height"])
        else:
            data, width, height = variant(jpeg, scale, quality)
        key = index * copies + copy
        filename = f"{key:09d}.jpg"
        (Path(folder) / filename).write_bytes(data)
        rows.append({"key": key, "filename": filename, "label": row["label"], "bytes": len(data), "width": width,
                     "height": height, "sha256": hashlib.sha256(data).hexdigest(), "original": row["filename"],
                     "copy": copy, "scale": scale, "quality": quality})
    return rows


def cache_root() -> Path:
    return work_dir() / "image-tiers"


def image_tier(tier: str, cache: Path | None = None, data_dir: Path = DATA_DIR, workers: int = 2,
               progress: bool = False) -> ImageTier:
    """The tier ``tier`` (imagenet.TIERS), built into ``cache`` (default ``<work>/image-tiers``) unless a
    build of this version is there already (its files checked by size)."""
    copies = tier_copies(tier)
    folder = Path(cache or cache_root()) / f"{tier}-v{VERSION}"
    meta_path = folder / "meta.parquet"
    if meta_path.exists():
        meta = pd.read_parquet(meta_path)
        if all((folder / f).stat().st_size == n if (folder / f).exists() else False
               for f, n in zip(meta.filename, meta["bytes"])):
            return ImageTier(tier, copies, meta, folder)
    return _build(tier, copies, folder, data_dir, workers, progress)


def _build(tier: str, copies: int, folder: Path, data_dir: Path, workers: int, progress: bool) -> ImageTier:
    from storebench.core.progress import tqdm

    table = imagenet.manifest(data_dir).sort_values("class_index").reset_index(drop=True)
    table = table.assign(label=table["label"].str.replace(" ", "_"))
    jpegs = dict(imagenet.images(data_dir))
    building = folder.with_name(folder.name + f".building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    jobs = [(i, row, jpegs[row["filename"]], copies, str(building)) for i, row in enumerate(table.to_dict("records"))]
    rows = []
    with tqdm(total=len(jobs) * copies, desc=f"image tier {tier}", unit="img", disable=not progress) as bar:
        if copies == 1 or workers <= 1:
            results = map(_make_class, jobs)
        else:
            pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))  # no fork of threads
            results = pool.map(_make_class, jobs, chunksize=8)
        for made in results:
            rows += made
            bar.update(len(made))
        if copies > 1 and workers > 1:
            pool.shutdown()
    meta = pd.DataFrame(rows, columns=COLUMNS).sort_values("key").reset_index(drop=True)
    meta.to_parquet(building / "meta.parquet")
    (building / "params.json").write_text(json.dumps(_params()))
    shutil.rmtree(folder, ignore_errors=True)
    building.rename(folder)
    return ImageTier(tier, copies, meta, folder)
