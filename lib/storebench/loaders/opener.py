"""Opening a store again in whichever process reads it (DataLoader workers included).

Stores hold sockets and file handles that must not cross ``fork`` (a forked child that shuts
down an inherited Redis socket breaks the parent's connection; RocksDB allows one read-write
handle per directory). A dataset therefore carries a picklable :class:`StoreOpener` and opens
its store lazily in the process that uses it, again after a fork (pid check), and never pickles
the handle (``spawn`` workers, needed for TileDB and TensorStore, receive only the opener).
"""
from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from storebench.stores import Store, get_store_class
from storebench.stores.base import ServerStore

# Libraries whose threads forbid fork: after a TileDB context, a fork may deadlock (SERVICES.md);
# TensorStore aborts a forked child outright. Their workers are forked from a forkserver: a clean
# interpreter that has imported torch and storebench once (no TileDB or TensorStore state), so a
# worker starts in ~0.1 s instead of the seconds a spawned one spends importing torch. obstore's
# Rust runtime (its threads) does not survive a fork either: a forked worker's first GET waits forever.
CLEAN_START_SYSTEMS = {"tiledb", "tiledb-array", "tiledb-attrs", "tensorstore", "tensorstore-zarr",
                       "minio-obstore", "rgw-obstore"}
SPAWN_SYSTEMS = CLEAN_START_SYSTEMS  # the name seed 003's training used
FORKSERVER_PRELOAD = ["numpy", "torch", "storebench.loaders"]

# A forked worker inherits its parent's garbage: a TileDB context dropped in a reference cycle and collected
# in the child waits forever on the parent's thread pool (tiledb_ctx_free -> ThreadPool::shutdown; seen as a
# hung test), so a forked child never collects what it inherited (its own garbage it collects as usual).
os.register_at_fork(after_in_child=gc.freeze)


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


class ProcessLocalStore:
    """The store of the current process, opened on first use and again after a fork."""

    def __init__(self, store_or_opener):
        if isinstance(store_or_opener, StoreOpener):
            self.opener, self._store, self._pid = store_or_opener, None, None
        else:  # an open store: used in this process; other processes open their own from the opener
            self.opener, self._store, self._pid = StoreOpener.of(store_or_opener), store_or_opener, os.getpid()

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

    from storebench.stores.rocksdb import RocksDBStore

    class ReadOnlyRocksDBStore(RocksDBStore):
        def __init__(self, root, **options):  # no mkdir, no create-if-missing
            self.root = Path(root)
            self._configure(**options)
            self._open()

        def _open(self):
            self.db = rocksdict.Rdict(str(self.root), self._options(),
                                      access_type=rocksdict.AccessType.read_only())

        def put_many(self, items):
            raise PermissionError("a loader's RocksDB handle is read-only")

    return ReadOnlyRocksDBStore


def start_method(system: str) -> str | None:
    """Worker start method for ``system``: ``forkserver`` for TileDB and TensorStore, else the platform default (fork)."""
    return "forkserver" if system in CLEAN_START_SYSTEMS else None


def worker_context(method: str | None):
    """The multiprocessing context for DataLoader workers started by ``method`` (None: the default)."""
    import multiprocessing

    if method is None:
        return None
    if method == "forkserver":
        multiprocessing.set_forkserver_preload(FORKSERVER_PRELOAD)  # used when the server first starts
    return multiprocessing.get_context(method)
