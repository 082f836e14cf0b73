"""TileDB, in two layouts.

- ``tiledb``: bytes per cell: a sparse 1-D array keyed by object index with one variable-
  length bytes attribute (the encoded object), read by point multi-index.
- ``tiledb-array``: array-native: a dense uint8 image array (sample, row, col[, channel])
  and a dense uint8 label array in one directory, read by index or slice; ``samples_per_chunk``
  samples per tile along the sample axis.
"""
from __future__ import annotations

import shutil
import threading

import numpy as np
import tiledb

from storebench.stores.base import ArrayStore, Capabilities, Store, check_key

_MAX_KEY = 2**40
TILE_SAMPLES = 64  # samples per data tile the bytes layout aims at, whatever the samples per cell
# TileDB 2.30 (TileDB-Py 0.36) keeps 14-25 KB of every query in its context until the context is freed
# (measured here: 60 k reads held 0.85 GB, 1 k writes 19 MB; TileDB-Py issue #2194): an epoch of 2.7 M requests
# would hold tens of GB. A reader swaps in a fresh context every this many queries (~10 s of point reads
# here; a swap costs ~1 ms and empties the 10 MiB read-ahead cache, which refills within a read or two).
QUERIES_PER_CONTEXT = 10_000
# TileDB calls malloc_trim when a query ends (``sm.mem.malloc_trim``, on by default). Once a renewal has freed
# the old context's memory amid what the caller still holds (the timed loop keeps every answer until its pass
# ends), each trim walks and returns those freed pages and the next query faults them back: a point read went
# from 1.6 to 21-29 ms here (TileDB 2.30, 60,000 x 28 x 28 array, reads past the 10,000th). Off, reads stay at
# 1.4-1.6 ms across renewals and memory is reused.
# TileDB 2.30's sparse global-order reader merges tiles ahead of a query by default
# (``sm.query.sparse_global_order.preprocess_tile_merge``, 32768): with it on, reads of a sparse array corrupted
# the heap, rarely, then crashed ("free(): invalid pointer", "corrupted size vs. prev_size", segfaults in TileDB's
# threads). Measured here (Intel Xeon family 6 model 207, 2 cores; 8 threads x 400 point reads of the bytes store,
# fresh each round; runs of 60 rounds): on, 7 of 8 runs crashed; off (0), 0 of 18. A CI run crashed on it; a
# bare TileDB-Py loop crashed with it on too, single-threaded, and serialising the queries did not stop it. Off,
# 16-key point reads of 60,000 keys were 6% faster (1.85 vs 1.96 ms, medians of 6 alternated reps, one run).
# Every context of the suite sets both; client_config says so.
CONTEXT_CONFIG = {"sm.mem.malloc_trim": "false", "sm.query.sparse_global_order.preprocess_tile_merge": "0"}


def _version() -> str:
    return "TileDB {}.{}.{}".format(*tiledb.libtiledb.version())


def _context(read_ahead_cache_bytes: int | None = None) -> "tiledb.Ctx":
    """A TileDB context with CONTEXT_CONFIG. TileDB 2.30 has no tile cache any more (``sm.tile_cache_size``,
    10 MB by default in the seed's day, is gone); its one cache is the VFS read-ahead cache
    (``vfs.read_ahead_cache_size``, 10 MiB by default), which ``read_ahead_cache_bytes`` sets."""
    config = dict(CONTEXT_CONFIG)
    if read_ahead_cache_bytes is not None:
        if read_ahead_cache_bytes < 0:
            raise ValueError(f"read_ahead_cache_bytes must be >= 0, got {read_ahead_cache_bytes}")
        config["vfs.read_ahead_cache_size"] = str(int(read_ahead_cache_bytes))
    return tiledb.Ctx(tiledb.Config(config))


def context_config_summary() -> str:
    return ", ".join(f"{key}={value}" for key, value in CONTEXT_CONFIG.items())


class FreshContexts:
    """Mixin for a TileDB reader: ``_counted()`` before each query (a write too, where the reader
    writes) calls ``_renew()`` every QUERIES_PER_CONTEXT of them. ``_renew`` opens new read handles in a
    new context and drops the old ones unclosed, so a read in flight on another thread finishes on them;
    their memory goes with them."""

    _queries = 0

    def _counted(self) -> None:
        self._queries += 1
        if self._queries >= QUERIES_PER_CONTEXT:
            self._queries = 0
            self._renew()

    def _renew(self) -> None:
        raise NotImplementedError


class ThreadHandles:
    """Read handles of one store, a set per reader thread, opened on a thread's first query.

    TileDB 2.30 (TileDB-Py 0.36) corrupts its heap, rarely, when threads query one shared array handle
    (measured on an earlier machine: 8 threads x 400 point reads on a freshly opened handle aborted with
    "corrupted size vs. prev_size" in 2 of 300 rounds; 0 of 300 with a handle per thread), so no two threads
    share one. (On this machine a handle per thread still crashed, until CONTEXT_CONFIG turned off the sparse
    reader's tile merge.) ``renew``
    drops every set unclosed (a read in flight finishes on its own; its thread opens a new set on its next
    query); ``close`` closes them; a thread that has ended has its set closed when another thread opens one."""

    def __init__(self, open_set):
        self._open_set = open_set  # () -> tuple of read handles
        self._lock = threading.Lock()
        self._by_thread: dict[int, tuple] = {}

    def current(self) -> tuple:
        handles = self._by_thread.get(threading.get_ident())
        if handles is None:
            with self._lock:
                self._close_finished_threads()
                handles = self._by_thread[threading.get_ident()] = self._open_set()
        return handles

    def renew(self) -> None:
        with self._lock:
            self._by_thread = {}

    def close(self) -> None:
        with self._lock:
            by_thread, self._by_thread = self._by_thread, {}
        for handles in by_thread.values():
            _close_all(handles)

    def _close_finished_threads(self) -> None:
        alive = {thread.ident for thread in threading.enumerate()}
        for ident in [i for i in self._by_thread if i not in alive]:
            _close_all(self._by_thread.pop(ident))


def _close_all(handles) -> None:
    for handle in handles:
        handle.close()


def _consolidate(uri: str, ctx) -> None:
    tiledb.consolidate(uri, ctx=ctx)
    tiledb.vacuum(uri, ctx=ctx)


class TileDBStore(FreshContexts, Store):
    name = "tiledb"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=False)
    client_package = "tiledb"

    def __init__(self, root, tile: int = TILE_SAMPLES, read_ahead_cache_bytes: int | None = None):
        super().__init__(root)
        self.tile = tile  # also the sparse tile capacity: a point read decodes one whole tile
        self.read_ahead_cache_bytes = read_ahead_cache_bytes
        self.ctx = _context(read_ahead_cache_bytes)
        self._handle_lock = threading.Lock()  # put_many from parallel writers (one fragment each) reopens
        self.uri = str(self.root / "objects")
        self._readers = ThreadHandles(lambda: (tiledb.open(self.uri, "r", ctx=self.ctx),))
        if not tiledb.array_exists(self.uri, ctx=self.ctx):
            self._create()

    def _create(self):
        self.root.mkdir(parents=True, exist_ok=True)
        dim = tiledb.Dim(name="key", domain=(0, _MAX_KEY), tile=self.tile, dtype=np.uint64)
        schema = tiledb.ArraySchema(domain=tiledb.Domain(dim), sparse=True, capacity=self.tile,
                                    attrs=[tiledb.Attr(name="value", dtype=bytes, var=True)])
        tiledb.Array.create(self.uri, schema, ctx=self.ctx)

    @property
    def array(self):
        """The calling thread's read handle."""
        return self._readers.current()[0]

    def put_many(self, items):
        items = list(items)
        if not items:
            return
        keys = np.array([check_key(k) for k, _ in items], dtype=np.uint64)
        values = np.array([v for _, v in items] + [None], dtype=object)[:-1]  # keep bytes objects
        with tiledb.open(self.uri, "w", ctx=self.ctx) as array:
            array[keys] = {"value": values}
        self.reopen()

    def _query(self, keys) -> dict[int, bytes]:
        self._counted()
        # a local holds the handle for the whole query: its indexer keeps only a weak reference, and a
        # renewal on another thread drops the store's
        array = self.array
        result = array.multi_index[[check_key(k) for k in keys]]
        return dict(zip(result["key"].tolist(), result["value"]))

    def get(self, key):
        found = self._query([key])
        if key not in found:
            raise KeyError(key)
        return found[key]

    def get_many(self, keys):
        found = self._query(keys)
        try:
            return [found[int(k)] for k in keys]
        except KeyError as missing:
            raise KeyError(missing.args[0]) from None

    def scan(self):
        result = self.array[:]
        order = np.argsort(result["key"], kind="stable")
        for i in order:
            yield int(result["key"][i]), result["value"][i]

    def clear(self):
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)
        self._create()

    def flush(self):
        self.close()
        _consolidate(self.uri, self.ctx)

    def reopen(self):
        with self._handle_lock:
            self._readers.close()
            self.ctx = _context(self.read_ahead_cache_bytes)

    def _renew(self):
        with self._handle_lock:
            self.ctx = _context(self.read_ahead_cache_bytes)
            self._readers.renew()

    def close(self):
        with self._handle_lock:
            self._readers.close()

    def system_version(self):
        return _version()

    def client_config(self):
        return f"{super().client_config()}; sparse, {self.tile} cells per tile; {context_config_summary()}"

    @classmethod
    def layout_for(cls, samples_per_object: int) -> dict:
        """A point read decodes a whole tile: with k samples per cell, a tile of 64 // k cells keeps the
        bytes a read decodes near 64 samples' (one cell per tile from 64 samples per cell on)."""
        return {"tile": max(1, TILE_SAMPLES // samples_per_object)}


class TileDBArrayStore(FreshContexts, ArrayStore):
    name = "tiledb-array"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=False, array_native=True)
    client_package = "tiledb"
    chunk_name = "tile"

    def __init__(self, root, samples_per_chunk: int = TILE_SAMPLES):
        super().__init__(root, samples_per_chunk)
        self.ctx = _context()
        self.images_uri = str(self.root / "images")
        self.labels_uri = str(self.root / "labels")
        self._readers = ThreadHandles(lambda: (tiledb.open(self.images_uri, "r", ctx=self.ctx),
                                               tiledb.open(self.labels_uri, "r", ctx=self.ctx)))
        self.n = None  # samples written; None before the first write
        if tiledb.array_exists(self.images_uri, ctx=self.ctx):
            self._open()

    def _open(self):
        labels = self._readers.current()[1]
        self.n = int(labels.schema.domain.dim(0).domain[1]) + 1

    @property
    def images(self):
        """The calling thread's read handle of the image array (None before the first write)."""
        return None if self.n is None else self._readers.current()[0]

    @property
    def labels(self):
        return None if self.n is None else self._readers.current()[1]

    def write(self, images, labels):
        self.clear()
        self.root.mkdir(parents=True, exist_ok=True)
        n = len(images)
        dims = [tiledb.Dim(name="sample", domain=(0, n - 1), tile=min(self.samples_per_chunk, n), dtype=np.uint64)]
        for axis, extent in zip(("row", "col", "channel"), images.shape[1:]):
            dims.append(tiledb.Dim(name=axis, domain=(0, extent - 1), tile=extent, dtype=np.uint64))
        tiledb.Array.create(self.images_uri, tiledb.ArraySchema(
            domain=tiledb.Domain(*dims), attrs=[tiledb.Attr(name="pixel", dtype=np.uint8)]), ctx=self.ctx)
        tiledb.Array.create(self.labels_uri, tiledb.ArraySchema(
            domain=tiledb.Domain(dims[0]), attrs=[tiledb.Attr(name="label", dtype=np.uint8)]), ctx=self.ctx)
        with tiledb.open(self.images_uri, "w", ctx=self.ctx) as array:
            array[:] = np.ascontiguousarray(images, dtype=np.uint8)
        with tiledb.open(self.labels_uri, "w", ctx=self.ctx) as array:
            array[:] = np.ascontiguousarray(labels, dtype=np.uint8)
        self._open()

    def read(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        if self.n is None or len(indices) and (indices.min() < 0 or indices.max() >= self.n):
            raise IndexError(f"sample index out of range for {self.name}")
        points, back = np.unique(indices, return_inverse=True)  # multi_index answers in ascending order
        self._counted()
        image_array, label_array = self._readers.current()  # held for the query (see TileDBStore._query)
        images = image_array.multi_index[points.tolist()]["pixel"]
        labels = label_array.multi_index[points.tolist()]["label"]
        return images[back], labels[back]

    def read_all(self):
        return self.images[:]["pixel"], self.labels[:]["label"]

    def clear(self):
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def reopen(self):
        self.close()
        self.ctx = _context()
        if tiledb.array_exists(self.images_uri, ctx=self.ctx):
            self._open()

    def _renew(self):
        self.ctx = _context()
        self._readers.renew()

    def client_config(self):
        return f"{super().client_config()}; {context_config_summary()}"

    def close(self):
        self._readers.close()
        self.n = None

    def system_version(self):
        return _version()
