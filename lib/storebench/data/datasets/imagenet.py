"""The real ImageNet-1k sample of the offline mirror: 1,000 original JPEGs (one per class), the
class list and the measured manifest (class, bytes, width, height, SHA-256 per file).

Seeds 002 (layout queries over image metadata) and 004 (a Cassandra image loader) both read it.
From the mirror, or where it lacks them the public route (``routes.py``): the tar is rebuilt from
the codeload tarball of EliSchwartz/imagenet-sample-images at the pinned commit, the class list
from the timm 1.0.31 wheel (PyPI), the manifest measured from both; every file pinned by SHA-256
(``python -m storebench.data.datasets fetch imagenet-sample``).

``manifest()`` is the metadata table, ``images()`` yields ``(filename, jpeg bytes)`` from the tar,
each checked against the manifest's SHA-256 as it is read.
"""
from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path
from typing import Iterator

import pandas as pd

from storebench.data.datasets.mirror import DatasetMissing, missing_hint
from storebench.data.datasets.obtain import obtain
from storebench.paths import DATA_DIR

NAME = "imagenet-sample"
FILES = {
    "imagenet-sample.tar": "d11cfac0be0caa8432cb70260d442da072996630ea5b9b1b49394295359f2f3b",
    "manifest.tsv": "3fddd43e2f801f0e242117ac5294e7f3cc6e31e5bdbe6d377372e9129e6c1785",
    "imagenet1k_classes.tsv": "d09df8ed8bd17ce403b3aedef4b6ccf020e8a5020546d6719c44f4f5275b284e",
}
N_IMAGES = 1000


def fetch(data_dir: Path = DATA_DIR, mirror: Path | None = None) -> Path:
    """The sample into ``data_dir/imagenet-sample``, from the mirror or the public route, each file checked."""
    return obtain(NAME, NAME, FILES, Path(data_dir), mirror)


def folder(data_dir: Path = DATA_DIR) -> Path:
    path = Path(data_dir) / NAME
    if not all((path / f).exists() for f in FILES):
        raise DatasetMissing(f"{NAME} is not in {path}. {missing_hint(NAME)}")
    return path


def manifest(data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """One row per image, in class-index order: filename, synset, class_index, bytes, width,
    height, mode, sha256, plus ``label`` (the synset's first WordNet lemma, e.g. 'streetcar') and
    ``lemmas`` (all of them, comma-separated)."""
    path = folder(data_dir)
    images = pd.read_csv(path / "manifest.tsv", sep="\t")
    classes = pd.read_csv(path / "imagenet1k_classes.tsv", sep="\t")
    classes["label"] = classes["lemmas"].str.split(",").str[0].str.strip()
    table = images.merge(classes[["synset", "label", "lemmas"]], on="synset", how="left", validate="one_to_one")
    if len(table) != N_IMAGES or table["label"].isna().any():
        raise ValueError(f"{path}: manifest and class list do not describe {N_IMAGES} images of known classes")
    return table


def images(data_dir: Path = DATA_DIR) -> Iterator[tuple[str, bytes]]:
    """``(filename, bytes)`` of every JPEG in tar order, each checked against the manifest."""
    path = folder(data_dir)
    digests = dict(zip(*pd.read_csv(path / "manifest.tsv", sep="\t")[["filename", "sha256"]].T.values))
    with tarfile.open(path / "imagenet-sample.tar") as tar:
        for member in tar:
            if not member.isfile():
                continue
            name = member.name.removeprefix("images/")
            data = tar.extractfile(member).read()
            if hashlib.sha256(data).hexdigest() != digests.get(name):
                raise ValueError(f"{path / 'imagenet-sample.tar'}: {member.name} does not match the manifest")
            yield name, data


# ------------------------------------------------------------------ replicated tiers (seed 002)
TIERS = {"x1": 1, "x2": 2, "mini": 13, "medium": 130}  # copies of each real image (the seed: 1% / 10% of ImageNet-1k)
SEED_TIER_IMAGES = {"mini": 12_756, "medium": 128_066, "full": 1_281_167}


def tier_copies(tier: str) -> int:
    if tier not in TIERS:
        raise ValueError(f"unknown tier {tier!r}; valid: {', '.join(TIERS)}")
    return TIERS[tier]


def tier_metadata(copies: int, data_dir: Path = DATA_DIR) -> pd.DataFrame:
    """Every real image ``copies`` times under new keys, class-major (key = image * copies + copy, so a
    class's images are adjacent as in ImageNet's class folders): key, filename (the real file whose
    bytes the key holds), label (first lemma, spaces as ``_``), bytes, width, height, sha256."""
    if not isinstance(copies, int) or copies < 1:
        raise ValueError(f"copies must be an integer >= 1, got {copies!r}")
    table = manifest(data_dir)
    table = table.assign(label=table["label"].str.replace(" ", "_"))
    meta = table.loc[table.index.repeat(copies), ["filename", "label", "bytes", "width", "height", "sha256"]]
    meta.insert(0, "key", range(len(meta)))
    return meta.reset_index(drop=True)
