"""PyTorch datasets over any store of the registry (seed 003 Sec 5.5 and its future work).

- :class:`StoreMapDataset`: map-style, ``__getitem__(i)`` does ONE ``store.get`` per sample,
  as the paper's ``RedisMnist`` did with HGET. The DataLoader then issues concurrent random
  single reads (one per sample), which the paper names as the weakness.
- :class:`BatchedStoreMapDataset`: the same plus ``__getitems__(indices)``, the batched fetch
  hook the DataLoader's map fetcher calls (PyTorch >= 2.2) instead of ``__getitem__`` once per
  index: ONE ``store.get_many`` for the whole batch, the system's native multi-read (HMGET,
  MultiGet, ``$in``, ...). This is the paper's stated future work.

Both verify every object they receive against the CRC-32 recorded at ingest
(:class:`~storebench.readers.ObjectReader` has them) and raise
:class:`~storebench.readers.VerificationError` on a mismatch, then decode to tensors
(image float32 normalised, shape (1, H, W); label int64) that the default collate stacks.

Stores hold sockets and file handles that must not cross ``fork`` (a forked child that
shuts down an inherited Redis socket breaks the parent's connection; RocksDB allows one
read-write handle per directory). A dataset therefore carries a picklable
:class:`StoreOpener` and opens its store lazily in whichever process uses it first, again
after a fork (pid check), and never pickles the handle (``spawn`` workers, needed for
TileDB, receive only the opener).
"""
from __future__ import annotations

import os
import sys
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from .formats import Format, get_format
from .readers import ObjectReader, VerificationError
from .stores import Store, get_store_class
from .stores.base import ServerStore

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # the usual MNIST normalisation constants
LOADERS = ("per-sample", "batched")  # __getitem__ only / __getitems__ (one get_many per batch)
# Libraries whose threads forbid fork: after a TileDB context, a fork may deadlock (SERVICES.md);
# TensorStore aborts a forked child outright. Their workers are spawned.
SPAWN_SYSTEMS = {"tiledb", "tiledb-array", "tensorstore", "tensorstore-zarr"}


# ------------------------------------------------------------------------------- opening
@dataclass(frozen=True)
class StoreOpener:
    """How to open a store again in another process: picklable (class by reference)."""

    store_class: type
    root: str | None = None  # embedded stores
    endpoint: dict | None = None  # server stores (external or started by storebench)
    namespace: str = "storebench"
    options: dict = field(default_factory=dict)
    read_only: bool = True  # workers only read: embedded stores with a lock open read-only

    @classmethod
    def of(cls, store: Store, read_only: bool = True, **options) -> "StoreOpener":
        """The opener of an open ``store``; ``options`` are its constructor options, if any."""
        if isinstance(store, ServerStore):
            return cls(type(store), endpoint=dict(store.endpoint), namespace=store.namespace,
                       options=options, read_only=read_only)
        return cls(type(store), root=str(store.root), options=options, read_only=read_only)

    @classmethod
    def for_system(cls, system: str, **kwargs) -> "StoreOpener":
        return cls(get_store_class(system), **kwargs)

    def open(self) -> Store:
        store_class = _read_only_variant(self.store_class) if self.read_only else self.store_class
        if self.endpoint is not None:
            return store_class(self.endpoint, namespace=self.namespace, **self.options)
        return store_class(self.root, **self.options)


def _read_only_variant(store_class: type) -> type:
    """The class a loader opens for ``store_class``: RocksDB allows one read-write handle per
    directory (its LOCK file, even within one process), so while the ingesting handle stays
    open, loaders open the DB read-only. Every other store opens as it is."""
    rocksdb = sys.modules.get("storebench.stores.rocksdb")
    if rocksdb is not None and store_class is rocksdb.RocksDBStore:
        return _read_only_rocksdb()
    return store_class


@lru_cache(maxsize=1)
def _read_only_rocksdb() -> type:
    import rocksdict

    from .stores.rocksdb import RocksDBStore

    class ReadOnlyRocksDBStore(RocksDBStore):
        def __init__(self, root):  # no mkdir, no create-if-missing
            self.root = Path(root)
            self._open()

        def _open(self):
            self.db = rocksdict.Rdict(str(self.root), rocksdict.Options(raw_mode=True),
                                      access_type=rocksdict.AccessType.read_only())

        def put_many(self, items):
            raise PermissionError("a loader's RocksDB handle is read-only")

    return ReadOnlyRocksDBStore


def start_method(system: str) -> str | None:
    """Worker start method for ``system``: ``spawn`` for TileDB and TensorStore, else the platform default."""
    return "spawn" if system in SPAWN_SYSTEMS else None


# ------------------------------------------------------------------------------- decoding
def to_tensors(image: np.ndarray, label: int) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 (H, W[, C]) image -> float32 (C, H, W) normalised; label -> int64 scalar."""
    x = torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0)
    x = x.unsqueeze(0) if x.ndim == 2 else x.permute(2, 0, 1)
    return (x - MNIST_MEAN) / MNIST_STD, torch.tensor(int(label), dtype=torch.int64)


# ------------------------------------------------------------------------------- datasets
class StoreMapDataset(torch.utils.data.Dataset):
    """Map-style dataset: sample ``i`` is read with ONE ``store.get`` of its object."""

    loader = "per-sample"

    def __init__(self, store: Store | StoreOpener, fmt: Format | str, samples_per_object: int, n_samples: int,
                 checksums: np.ndarray):
        if isinstance(store, StoreOpener):
            self.opener, self._store, self._pid = store, None, None
        else:  # an open store: used in this process; other processes open their own from the opener
            self.opener, self._store, self._pid = StoreOpener.of(store), store, os.getpid()
        self.format = get_format(fmt) if isinstance(fmt, str) else fmt
        self.samples_per_object, self.n_samples = int(samples_per_object), int(n_samples)
        self.checksums = np.asarray(checksums, dtype=np.uint32)

    @classmethod
    def from_reader(cls, reader: ObjectReader, opener: StoreOpener | None = None) -> "StoreMapDataset":
        """Over the objects ``reader`` ingested (its CRC-32s); ``opener`` defaults to the reader's store."""
        return cls(opener or StoreOpener.of(reader.store), reader.format, reader.samples_per_object,
                   reader.n_samples, reader.checksums)

    # -- the store of this process -------------------------------------------------------
    @property
    def store(self) -> Store:
        if self._store is None or self._pid != os.getpid():
            # After fork the inherited handle belongs to the parent: drop it without closing
            # (closing would shut down the parent's socket), open our own.
            self._store, self._pid = self.opener.open(), os.getpid()
        return self._store

    def close(self) -> None:
        if self._store is not None and self._pid == os.getpid():
            self._store.close()
        self._store = None

    def __getstate__(self):  # spawn workers get the opener, never the handle
        state = dict(self.__dict__)
        state["_store"], state["_pid"] = None, None
        return state

    # -- reading -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n_samples

    def _check(self, key: int, value: bytes) -> bytes:
        if zlib.crc32(value) != self.checksums[key]:
            raise VerificationError(f"{self.opener.store_class.name}: object {key} differs from what was "
                                    f"written (CRC-32 mismatch, {len(value)} bytes)")
        return value

    def _sample(self, index: int, samples) -> tuple[torch.Tensor, torch.Tensor]:
        image, label = samples[index % self.samples_per_object]
        return to_tensors(image, label)

    def __getitem__(self, index):
        index = int(index)
        if not 0 <= index < self.n_samples:
            raise IndexError(index)
        key = index // self.samples_per_object
        return self._sample(index, self.format.decode(self._check(key, self.store.get(key))))


class BatchedStoreMapDataset(StoreMapDataset):
    """Map-style dataset whose batches are ONE ``store.get_many`` (``__getitems__``)."""

    loader = "batched"

    def __getitems__(self, indices):
        indices = [int(i) for i in indices]
        if any(not 0 <= i < self.n_samples for i in indices):
            raise IndexError([i for i in indices if not 0 <= i < self.n_samples])
        keys = list(dict.fromkeys(i // self.samples_per_object for i in indices))  # each object once
        values = self.store.get_many(keys)
        if len(values) != len(keys):
            raise VerificationError(f"{self.opener.store_class.name}: asked for {len(keys)} objects, "
                                    f"got {len(values)}")
        decoded = {key: self.format.decode(self._check(key, value)) for key, value in zip(keys, values)}
        return [self._sample(i, decoded[i // self.samples_per_object]) for i in indices]


DATASETS = {cls.loader: cls for cls in (StoreMapDataset, BatchedStoreMapDataset)}


def make_dataset(loader: str, reader: ObjectReader, opener: StoreOpener | None = None) -> StoreMapDataset:
    """The dataset for ``loader`` ('per-sample' or 'batched') over what ``reader`` ingested."""
    try:
        cls = DATASETS[loader]
    except KeyError:
        raise ValueError(f"unknown loader {loader!r}; valid: {', '.join(LOADERS)}") from None
    return cls.from_reader(reader, opener)


def data_loader(dataset: StoreMapDataset, batch_sampler, workers: int, start_method: str | None = None,
                **kwargs) -> torch.utils.data.DataLoader:
    """A DataLoader over ``dataset`` with a fixed batch plan (list of index lists)."""
    extra = {}
    if workers:
        extra["persistent_workers"] = False
        if start_method:
            import multiprocessing

            extra["multiprocessing_context"] = multiprocessing.get_context(start_method)
    return torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler, num_workers=workers, **extra,
                                       **kwargs)


def batch_plan(n_samples: int, epoch_samples: int, batch_size: int, seed: int) -> list[list[int]]:
    """Shuffled batches of one epoch (fixed seed): every sample at most once per pass over
    the dataset, ``epoch_samples`` in all (several passes if it exceeds ``n_samples``)."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(n_samples) for _ in range(-(-epoch_samples // n_samples))])
    order = order[:epoch_samples].tolist()
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
