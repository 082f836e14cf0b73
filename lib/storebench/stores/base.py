"""The one small interface every storage system is spoken to through.

Like a YCSB binding, a store knows how to talk to its system and nothing about timing,
key choice or verification. Keys are non-negative integers (object indices); values are
bytes. ``get_many`` must use the system's native multi-read where it has one, and
``capabilities`` must say honestly whether it does.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Iterable, Iterator, Sequence

import numpy as np

from storebench.core.provenance import package_version  # noqa: F401 (stores name their client's version)


@dataclass(frozen=True)
class Capabilities:
    native_multi_get: bool  # get_many is one native batched call, not a client-side loop
    full_scan: bool  # scan() streams the whole store in one request/cursor
    in_memory_only: bool  # the system keeps data only in RAM (no disk location)
    array_native: bool = False  # stores decoded tensors, read by index (see ArrayStore)
    has_server: bool = False  # a networked server (see storebench.services)
    concurrent_multi_get: bool = False  # no multi-read in the system: get_many overlaps single reads


@dataclass(frozen=True)
class DiskUsage:
    bytes: int
    how: str  # which accounting produced the figure, e.g. "du of data dir"


class Store(ABC):
    """Bytes by integer key."""

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    client_package: ClassVar[str]  # the Python distribution whose version is the client version

    def __init__(self, root: Path):
        self.root = Path(root)

    # --- writing -----------------------------------------------------------------------
    @abstractmethod
    def put_many(self, items: Iterable[tuple[int, bytes]]) -> None:
        """Store every ``(key, value)``; overwrites existing keys."""

    # --- reading -----------------------------------------------------------------------
    @abstractmethod
    def get(self, key: int) -> bytes:
        """The value of ``key``; ``KeyError`` if absent."""

    def get_many(self, keys: Sequence[int]) -> list[bytes]:
        """Values in the order of ``keys``; ``KeyError`` if any is absent."""
        return [self.get(k) for k in keys]

    @abstractmethod
    def scan(self) -> Iterator[tuple[int, bytes]]:
        """Every ``(key, value)`` in key order."""

    # --- housekeeping ------------------------------------------------------------------
    @abstractmethod
    def clear(self) -> None:
        """Remove every object (the store stays usable)."""

    def flush(self) -> None:
        """Make written data durable on disk, so page-cache eviction has an effect."""

    def files(self) -> list[Path]:
        """Files holding the data (for page-cache eviction and residency checks)."""
        return [p for p in self.root.rglob("*") if p.is_file()] if self.root.exists() else []

    def disk_usage(self) -> DiskUsage:
        self.flush()
        return DiskUsage(sum(_allocated(p) for p in self.files()), "allocated blocks of the store's files")

    def reopen(self) -> None:
        """Close and open again, dropping in-process caches (for cold reads)."""

    def close(self) -> None:
        pass

    def system_version(self) -> str:
        return f"{self.name} {package_version(self.client_package)}"

    def client_config(self) -> str:
        """How the client library is set up, checked on the running client (e.g. which C
        extensions it really uses): stores whose client has speed options say which are on."""
        return f"{self.client_package} {package_version(self.client_package)}, as installed"

    @classmethod
    def layout_for(cls, samples_per_object: int) -> dict:
        """Options that make the system's own unit of reading follow ``samples_per_object`` (the
        granularity experiment opens the store with them): {} where one object is already that unit."""
        return {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class StoreConnectionError(ConnectionError):
    """Cannot reach or log in to a storage system; the message names it and the endpoint."""


class ServerStore(Store):
    """A store whose data lives in a networked server (local or external endpoint).

    ``endpoint`` is what storebench.services gives (or what params.yaml names for an external
    system). ``service`` is the LocalService when storebench started the server itself: only
    then can it flush the server's files and evict them from the page cache.
    """

    service: ClassVar[str]  # name in storebench.services.LOCAL_SERVICES

    def __new__(cls, *args, **kwargs):
        store = super().__new__(cls)
        store._opened_with = (args, kwargs)  # for reconnect()
        return store

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None):
        self.endpoint, self.namespace, self.local = endpoint, namespace, service
        self.root = Path(service.data_dir) if service is not None else None

    def reconnect(self) -> None:
        """After ``close()``: a new client, opened as the first one was (e.g. the server restarted)."""
        args, kwargs = self._opened_with
        self.__init__(*args, **kwargs)

    def files(self):
        if self.root is None:
            raise NotImplementedError(f"{self.name}: the files of an external server cannot be evicted from here")
        return super().files()

    def _all_found(self, keys, values):
        for key, value in zip(keys, values):
            if value is None:
                raise KeyError(key)
        return values


class ArrayStore(ABC):
    """A store of decoded tensors read by sample index (TileDB/TensorStore array layouts).

    The sample axis is cut into chunks (TileDB tiles, zarr chunks) of ``samples_per_chunk`` samples, the
    unit the store reads and writes: a read of one sample fetches its whole chunk. It is the array
    layouts' samples per object (``layout_for``)."""

    name: ClassVar[str]
    capabilities: ClassVar[Capabilities]
    client_package: ClassVar[str]

    def __init__(self, root: Path, samples_per_chunk: int = 64):
        self.root = Path(root)
        if int(samples_per_chunk) < 1:
            raise ValueError(f"samples_per_chunk must be >= 1, got {samples_per_chunk}")
        self.samples_per_chunk = int(samples_per_chunk)

    @classmethod
    def layout_for(cls, samples_per_object: int) -> dict:
        return {"samples_per_chunk": samples_per_object}

    @abstractmethod
    def write(self, images: np.ndarray, labels: np.ndarray) -> None:
        """Replace the stored dataset with these arrays."""

    @abstractmethod
    def read(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Images and labels at ``indices`` (any order); ``IndexError`` out of range."""

    @abstractmethod
    def read_all(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole dataset in one request."""

    @abstractmethod
    def clear(self) -> None: ...

    def client_config(self) -> str:
        return (f"{self.client_package} {package_version(self.client_package)}, as installed; "
                f"{self.samples_per_chunk} samples per {self.chunk_name}")

    chunk_name: ClassVar[str] = "chunk"  # what the system calls its unit along the sample axis
    files = Store.files
    disk_usage = Store.disk_usage
    flush = Store.flush
    reopen = Store.reopen
    close = Store.close
    system_version = Store.system_version
    __enter__ = Store.__enter__
    __exit__ = Store.__exit__


def _allocated(path: Path) -> int:
    try:
        return os.stat(path).st_blocks * 512
    except FileNotFoundError:  # files may vanish during compaction
        return 0


def check_key(key) -> int:
    key = int(key)
    if key < 0:
        raise KeyError(key)
    return key


def check_keys(keys) -> list[int]:
    """``check_key`` for a batch, in one pass (per-key calls cost a tenth of a Redis HMGET's time)."""
    keys = list(map(int, keys))
    if keys and min(keys) < 0:
        raise KeyError(min(keys))
    return keys
