"""Embedding tables held in a store, updated batch by batch (seed 001 Sec 5.10 and Sec 6).

A training step looks up the embeddings of its batch's keys, computes new ones and writes
them back: read -> update -> write, once per batch. ``EmbeddingTable`` is the one small
interface (a table of ``n_keys`` float32 vectors of length ``dim``, keys ``0 .. n_keys-1``);
each implementation speaks to one system and knows nothing about timing or key choice:

- ``rocksdb``: one entry per key (8-byte big-endian id -> the vector's float32 bytes); a read
  is one MultiGet, a write one WriteBatch;
- ``tiledb``: a sparse array, by default one cell per key holding the whole vector, or 2-D
  (key, dim) with one cell per float (why sparse, not dense: ``TileDBTable``);
- ``tensorstore``: a zarr float32 array (n_keys, dim) on the file driver, chunked along keys,
  read and written by outer indexing with the key array;
- ``localfs``: one raw float32 file per key (the ext4 baseline), read and rewritten in place.

Durability is a setting of every table (``durability``: ``none`` or ``fsync``; None: the
system's own default, which differs: RocksDB and localfs do not sync, TileDB and TensorStore
do). ``fsync``: a batch's write is on disk when ``write`` returns (RocksDB syncs its WAL per
WriteBatch, TileDB fsyncs the fragment's files, TensorStore each chunk file, localfs
fdatasyncs each file). ``none``: nothing is forced to disk (RocksDB's and TensorStore's own
switches, localfs skips its fdatasync); TileDB has no switch, so its ``none`` needs a process
with fsync turned off (storebench.testbed.durability) and refuses to run in any other.

``run_updates`` drives a table through a key stream (storebench.data.keystreams) and times the
three phases per batch; ``reference_updates`` computes the same final table in memory with
numpy. The update is deterministic float32 arithmetic, so a correct store ends bit-identical
to the reference, and ``verify`` says so or raises.
"""
from __future__ import annotations

import os
import shutil
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Callable, ClassVar

import numpy as np
import pandas as pd

from storebench.data.keystreams import batches
from storebench.stores.readers import VerificationError
from storebench.stores.base import package_version
from storebench.stores.tiledb import FreshContexts, _context
from storebench.testbed import durability as durability_

Update = Callable[[np.ndarray, np.ndarray, int], np.ndarray]
BATCH_COLUMNS = ["step", "draws", "keys_read", "keys_written", "read_ns", "update_ns", "write_ns"]
SPARSE_FRACTION = 0.1  # share of a batch's keys written back under sparse updates (default)


class EmbeddingTable(ABC):
    """``n_keys`` float32 vectors of length ``dim`` under a directory ``root``.

    ``read`` and ``write`` take unique int64 keys in any order (callers de-duplicate a batch);
    values are float32 ``(len(keys), dim)`` in the order of ``keys``.
    """

    name: ClassVar[str]
    client_package: ClassVar[str]  # the Python distribution whose version is the client version
    options: ClassVar[tuple[str, ...]] = ()  # constructor keywords an experiment may set (recorded)
    default_durability: ClassVar[str] = "none"  # the system's own default
    can_skip_fsync: ClassVar[bool] = True  # False: durability "none" needs a process with fsync off
    durable_how: ClassVar[dict[str, str]] = {}  # durability -> how this table gets it (recorded)

    def __init__(self, root, durability: str | None = None):
        self.root = Path(root)
        self.n_keys = self.dim = 0
        self.durability = durability_.check(durability or self.default_durability)

    # --- the interface ---------------------------------------------------------------------
    def create(self, n_keys: int, dim: int, initial: np.ndarray) -> None:
        """Make the table under an empty or absent ``root`` holding ``initial`` (n_keys, dim)."""
        if n_keys < 1 or dim < 1:
            raise ValueError(f"{self.name}: n_keys and dim must be >= 1, got {n_keys} and {dim}")
        _check_values(self.name, initial, n_keys, dim)
        if self.root.exists() and any(self.root.iterdir()):
            raise FileExistsError(f"{self.name}: {self.root} is not empty; remove it before creating a table")
        self._check_durability()
        self.root.mkdir(parents=True, exist_ok=True)
        self.n_keys, self.dim = int(n_keys), int(dim)
        self._create(np.ascontiguousarray(initial))

    def read(self, keys: np.ndarray) -> np.ndarray:
        return self._read(self._checked_keys(keys))

    def write(self, keys: np.ndarray, values: np.ndarray) -> None:
        keys = self._checked_keys(keys)
        _check_values(self.name, values, len(keys), self.dim)
        self._write(keys, np.ascontiguousarray(values))

    @abstractmethod
    def read_all(self) -> np.ndarray:
        """The whole table, (n_keys, dim) float32, rows in key order."""

    def close(self) -> None:
        pass

    def system_version(self) -> str:
        return f"{self.name} {package_version(self.client_package)}"

    def settings(self) -> dict:
        """How the table is laid out, cached and made durable, for recording beside its results."""
        options = {option: getattr(self, option) for option in self.options}
        return {"table_layout": self.layout(), **{k: "default" if v is None else v for k, v in options.items()},
                "durability": self.durability, "durable_how": self.durable_how[self.durability],
                "fsync_in_process": durability_.mechanism()}

    def _check_durability(self) -> None:
        off = durability_.fsync_disabled()
        if self.durability == "fsync" and off:
            raise RuntimeError(f"{self.name}: durability 'fsync' asked, but this process runs with fsync turned off "
                               f"({durability_.LIBRARY} preloaded): start it without LD_PRELOAD")
        if self.durability == "none" and not self.can_skip_fsync and not off:
            raise RuntimeError(f"{self.name}: durability 'none' asked, but {self.name} has no setting to skip its "
                               f"fsyncs; run the process with fsync turned off (storebench.testbed.durability."
                               f"environment('none'): LD_PRELOAD={durability_.LIBRARY})")

    @abstractmethod
    def layout(self) -> str:
        """One line: how keys and vectors map onto the system."""

    def files(self) -> list[Path]:
        return [p for p in self.root.rglob("*") if p.is_file()] if self.root.exists() else []

    def disk_usage(self) -> int:
        """Allocated bytes of the table's files."""
        return sum(p.stat().st_blocks * 512 for p in self.files())

    # --- what an implementation provides ---------------------------------------------------
    @abstractmethod
    def _create(self, initial: np.ndarray) -> None: ...

    @abstractmethod
    def _read(self, keys: np.ndarray) -> np.ndarray: ...

    @abstractmethod
    def _write(self, keys: np.ndarray, values: np.ndarray) -> None: ...

    def _checked_keys(self, keys) -> np.ndarray:
        keys = np.asarray(keys)
        if keys.ndim != 1 or not np.issubdtype(keys.dtype, np.integer):
            raise ValueError(f"{self.name}: keys must be a 1-D integer array, got {keys.dtype} {keys.shape}")
        if len(keys) and (keys.min() < 0 or keys.max() >= self.n_keys):
            raise IndexError(f"{self.name}: keys must be in 0 .. {self.n_keys - 1}, got "
                             f"{keys.min()} .. {keys.max()}")
        return keys.astype(np.int64, copy=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _check_values(name: str, values: np.ndarray, rows: int, dim: int) -> None:
    if not isinstance(values, np.ndarray) or values.dtype != np.float32 or values.shape != (rows, dim):
        shape = getattr(values, "shape", None)
        raise ValueError(f"{name}: values must be a float32 array of shape ({rows}, {dim}), got "
                         f"{getattr(values, 'dtype', type(values).__name__)} {shape}")


# ------------------------------------------------------------------------------- RocksDB
class RocksDBTable(EmbeddingTable):
    """One RocksDB entry per key: 8-byte big-endian id (byte order = numeric order) -> the
    vector's ``dim`` float32 bytes. Reads are one MultiGet, writes one WriteBatch into the WAL
    and memtable. Durability ``fsync`` syncs the WAL at every batch (``WriteOptions.sync``);
    ``none`` (RocksDB's default) does not. ``block_cache_bytes`` sizes the LRU block cache
    (None: RocksDB's default, 32 MiB in the RocksDB rocksdict ships; the seed's text says 50 MB)."""

    name = "rocksdb"
    client_package = "rocksdict"
    options = ("block_cache_bytes",)
    durable_how = {"fsync": "WAL synced per WriteBatch (WriteOptions.sync = true)",
                   "none": "WAL written, not synced (WriteOptions.sync = false, RocksDB's default)"}

    def __init__(self, root, block_cache_bytes: int | None = None, durability: str | None = None):
        super().__init__(root, durability)
        if block_cache_bytes is not None and block_cache_bytes < 0:
            raise ValueError(f"block_cache_bytes must be >= 0, got {block_cache_bytes}")
        self.block_cache_bytes = block_cache_bytes
        self.db = None

    def layout(self) -> str:
        return "one entry per key: 8-byte big-endian key -> dim float32 bytes"

    def _create(self, initial):
        import rocksdict

        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        if self.block_cache_bytes is not None:
            table = rocksdict.BlockBasedOptions()
            table.set_block_cache(rocksdict.Cache(self.block_cache_bytes))
            options.set_block_based_table_factory(table)
        self.db = rocksdict.Rdict(str(self.root), options)
        write_options = rocksdict.WriteOptions()
        write_options.sync = self.durability == "fsync"
        self.db.set_write_options(write_options)
        for start in range(0, self.n_keys, 4096):
            rows = initial[start:start + 4096]
            self._write(np.arange(start, start + len(rows), dtype=np.int64), rows)
        self.db.flush()  # the loaded table sits in SST files, as one loaded before training would

    def _read(self, keys):
        values = self.db.get(_encode_keys(keys))  # RocksDB MultiGet
        if any(v is None for v in values):
            missing = [int(k) for k, v in zip(keys, values) if v is None]
            raise KeyError(f"rocksdb: keys {missing[:5]} not found")
        return np.frombuffer(b"".join(values), dtype=np.float32).reshape(len(keys), self.dim)

    def _write(self, keys, values):
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        raw, size = values.tobytes(), self.dim * 4
        for i, key in enumerate(_encode_keys(keys)):
            batch.put(key, raw[i * size:(i + 1) * size])
        self.db.write(batch)

    def read_all(self):
        return self._read(np.arange(self.n_keys, dtype=np.int64))

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None

    def system_version(self):
        return f"RocksDB via rocksdict {package_version('rocksdict')}"


def _encode_keys(keys: np.ndarray) -> list[bytes]:
    raw = keys.astype(">u8").tobytes()
    return [raw[i:i + 8] for i in range(0, len(raw), 8)]


# ------------------------------------------------------------------------------- TileDB
TILEDB_LAYOUTS = ("vector-cell", "2d")


class TileDBTable(FreshContexts, EmbeddingTable):
    """A sparse TileDB array of the embeddings, tiles of ``tile_keys`` keys, in one of two layouts:

    - ``vector-cell`` (default): 1-D, dimension ``key``, one cell per key whose fixed-size
      attribute ``vector`` holds the ``dim`` float32 values (cell_val_num = dim);
    - ``2d``: 2-D, dimensions ``key`` and ``dim`` (one tile spans the vector), attribute
      ``value`` float32: one cell per number, each with its two coordinates.

    Why sparse: a batch's keys are scattered over the key space, and a dense TileDB write
    covers one subarray (a box) entirely. Writing the batch's bounding box would overwrite the
    keys in between (or require reading them all first); writing each contiguous run of keys
    as its own subarray is correct but makes one fragment per run (hundreds per batch). A
    sparse write stores exactly the batch's cells, with coordinates, as ONE fragment per batch;
    with duplicates disallowed a read returns the newest value of each cell. Every write gets
    an explicit timestamp one above the last (the initial load is at 1), so "newest" is well
    defined even when two writes fall in the same millisecond. Fragments accumulate (one per
    batch, none consolidated during a run), as in a training job that does not consolidate.
    TileDB's POSIX VFS fsyncs every file of a fragment when it is written (no setting turns
    this off): durability ``fsync`` is its default, ``none`` needs a process with fsync off.

    TileDB 2.30 has no tile cache (``sm.tile_cache_size``, 10 MB in the seed's day, is gone);
    its one cache is the VFS read-ahead cache (``vfs.read_ahead_cache_size``, 10 MiB by
    default), which ``read_ahead_cache_bytes`` sets (None: the default).
    """

    name = "tiledb"
    client_package = "tiledb"
    options = ("tile_keys", "read_ahead_cache_bytes", "tiledb_layout")
    default_durability, can_skip_fsync = "fsync", False
    durable_how = {"fsync": "every file of each fragment fsynced (TileDB's POSIX VFS; it has no setting)",
                   "none": "fsync turned off for the client process (libeatmydata; TileDB has no setting)"}
    _LOAD_CELLS = 1 << 22  # numbers per write while loading the initial table (bounds memory)

    def __init__(self, root, tile_keys: int = 64, read_ahead_cache_bytes: int | None = None,
                 tiledb_layout: str = "vector-cell", durability: str | None = None):
        super().__init__(root, durability)
        if tile_keys < 1:
            raise ValueError(f"tile_keys must be >= 1, got {tile_keys}")
        if read_ahead_cache_bytes is not None and read_ahead_cache_bytes < 0:
            raise ValueError(f"read_ahead_cache_bytes must be >= 0, got {read_ahead_cache_bytes}")
        if tiledb_layout not in TILEDB_LAYOUTS:
            raise ValueError(f"unknown tiledb_layout {tiledb_layout!r}; valid: {', '.join(TILEDB_LAYOUTS)}")
        self.tile_keys, self.read_ahead_cache_bytes = tile_keys, read_ahead_cache_bytes
        self.tiledb_layout = tiledb_layout
        self.uri = str(self.root / "embeddings")
        self.reader = None
        self.timestamp = 0

    @property
    def _two_d(self) -> bool:
        return self.tiledb_layout == "2d"

    def layout(self) -> str:
        tile = min(self.tile_keys, self.n_keys)
        if self._two_d:
            return f"sparse 2-D (key, dim) float32, key tile {tile}, dim tile {self.dim}; one fragment per write"
        return f"sparse 1-D, one cell per key holding {self.dim} float32, key tile {tile}; one fragment per write"

    def _ctx(self):
        return _context(self.read_ahead_cache_bytes)

    def _renew(self):
        import tiledb

        self.ctx = self._ctx()
        self.reader = tiledb.open(self.uri, "r", ctx=self.ctx)

    def _schema(self):
        import tiledb

        tile = min(self.tile_keys, self.n_keys)
        key = tiledb.Dim("key", domain=(0, self.n_keys - 1), tile=tile, dtype=np.int64)
        if self._two_d:
            dims = [key, tiledb.Dim("dim", domain=(0, self.dim - 1), tile=self.dim, dtype=np.int64)]
            attr, capacity = tiledb.Attr("value", dtype=np.float32), tile * self.dim
        else:
            dims, attr, capacity = [key], tiledb.Attr("vector", dtype=self._cell_dtype()), tile
        return tiledb.ArraySchema(domain=tiledb.Domain(*dims), sparse=True, capacity=capacity, attrs=[attr],
                                  cell_order="row-major", tile_order="row-major", allows_duplicates=False)

    def _cell_dtype(self) -> np.dtype:
        """The attribute's numpy type: a record of ``dim`` float32 (TileDB-Py's fixed-size cells)."""
        return np.dtype([(f"v{i}", np.float32) for i in range(self.dim)]) if self.dim > 1 else np.dtype(np.float32)

    def _create(self, initial):
        import tiledb

        self.ctx = self._ctx()
        self.cell = None if self._two_d else self._cell_dtype()
        tiledb.Array.create(self.uri, self._schema(), ctx=self.ctx)
        rows = max(1, self._LOAD_CELLS // self.dim)
        for start in range(0, self.n_keys, rows):  # disjoint cells: one timestamp for all of them
            part = initial[start:start + rows]
            self._write_cells(np.arange(start, start + len(part), dtype=np.int64), part, timestamp=1)
        if self.n_keys > rows:
            tiledb.consolidate(self.uri, ctx=self.ctx)
            tiledb.vacuum(self.uri, ctx=self.ctx)
        self.timestamp = 1
        self.reader = tiledb.open(self.uri, "r", ctx=self.ctx)

    def _write_cells(self, keys, values, timestamp: int):
        import tiledb

        with tiledb.open(self.uri, "w", timestamp=timestamp, ctx=self.ctx) as array:
            if self._two_d:
                array[np.repeat(keys, self.dim), np.tile(np.arange(self.dim, dtype=np.int64), len(keys))] = \
                    values.reshape(-1)
            else:
                array[keys] = values.view(self.cell).reshape(-1)

    def _query(self, keys) -> tuple[np.ndarray, np.ndarray]:
        """(key of each row returned, in key order; values (rows, dim)) for ``keys``: a list of
        keys (one point range each) or an inclusive slice."""
        self._counted()
        if self._two_d:
            result = self.reader.query(attrs=["value"], dims=["key"], order="C").multi_index[keys, :]
            return result["key"][::self.dim], result["value"].reshape(-1, self.dim)
        result = self.reader.query(attrs=["vector"], dims=["key"], order="C").multi_index[keys]
        return result["key"], np.ascontiguousarray(result["vector"]).view(np.float32).reshape(-1, self.dim)

    def _read(self, keys):
        order = np.argsort(keys, kind="stable")
        ascending = keys[order]
        found, vectors = self._query(ascending.tolist())
        _check_found(found, ascending, vectors)
        values = np.empty((len(keys), self.dim), dtype=np.float32)
        values[order] = vectors  # back to the caller's order
        return values

    def _write(self, keys, values):
        self._counted()
        self.timestamp += 1
        self._write_cells(keys, values, self.timestamp)
        self.reader.reopen()  # the next read sees the new fragment

    def read_all(self):
        found, vectors = self._query(slice(0, self.n_keys - 1))
        _check_found(found, np.arange(self.n_keys), vectors)
        return vectors

    def fragments(self) -> int:
        import tiledb

        return len(tiledb.array_fragments(self.uri, ctx=self.ctx))

    def close(self):
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def system_version(self):
        import tiledb

        return "TileDB {}.{}.{}".format(*tiledb.libtiledb.version())


def _check_found(found: np.ndarray, expected: np.ndarray, vectors: np.ndarray) -> None:
    """The cells TileDB returned are exactly one per expected key (full vectors), in key order."""
    if len(found) != len(expected) or len(vectors) != len(expected) or not np.array_equal(found, expected):
        raise KeyError(f"tiledb: asked for {len(expected)} keys, got cells of {len(found)} "
                       f"(first asked: {expected[:5].tolist()})")


# ------------------------------------------------------------------------------- TensorStore
class TensorStoreTable(EmbeddingTable):
    """A zarr (v2, uncompressed) float32 array (n_keys, dim) on TensorStore's ``file`` driver,
    chunks (``chunk_keys``, dim). Reads and writes use outer indexing with the key array
    (``array.oindex[keys]``), one awaited future each; a write rewrites every chunk it touches.
    ``cache_pool_bytes`` is the context's cache pool (0, TensorStore's default: no caching).
    Durability is the context's ``file_io_sync``: ``fsync`` (TensorStore's default) fsyncs each
    chunk file written, ``none`` does not."""

    name = "tensorstore"
    client_package = "tensorstore"
    options = ("chunk_keys", "cache_pool_bytes")
    default_durability = "fsync"
    durable_how = {"fsync": "each chunk file written fsynced (file_io_sync = true, TensorStore's default)",
                   "none": "chunk files not synced (file_io_sync = false)"}

    def __init__(self, root, chunk_keys: int = 64, cache_pool_bytes: int = 0, durability: str | None = None):
        super().__init__(root, durability)
        if chunk_keys < 1:
            raise ValueError(f"chunk_keys must be >= 1, got {chunk_keys}")
        if cache_pool_bytes < 0:
            raise ValueError(f"cache_pool_bytes must be >= 0, got {cache_pool_bytes}")
        self.chunk_keys, self.cache_pool_bytes = chunk_keys, cache_pool_bytes
        self.array = None

    def layout(self) -> str:
        return f"zarr v2 (n_keys, dim) float32, chunks ({min(self.chunk_keys, self.n_keys)}, {self.dim}), uncompressed"

    def _create(self, initial):
        import tensorstore as ts

        spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(self.root / "embeddings")},
                "context": {"cache_pool": {"total_bytes_limit": int(self.cache_pool_bytes)},
                            "file_io_sync": self.durability == "fsync"},
                "metadata": {"shape": [self.n_keys, self.dim], "chunks": [min(self.chunk_keys, self.n_keys), self.dim],
                             "dtype": "<f4", "compressor": None}}
        self.array = ts.open(spec, create=True).result()
        self.array.write(initial).result()

    def _read(self, keys):
        return self.array.oindex[keys].read().result()

    def _write(self, keys, values):
        self.array.oindex[keys].write(values).result()

    def read_all(self):
        return self.array.read().result()

    def close(self):
        self.array = None

    def system_version(self):
        return f"TensorStore {package_version('tensorstore')} (zarr v2, file driver)"


# ------------------------------------------------------------------------------- local files
_FANOUT = 1000  # files per directory


class LocalFSTable(EmbeddingTable):
    """One raw float32 file per key (``<key // 1000>/<key>.f32``), read whole and overwritten in
    place (same size, no truncation): the ext4 baseline, one open/read/close per key. Durability
    ``fsync`` fdatasyncs each file written before closing it (an in-place overwrite of the same
    size changes no metadata that fdatasync must flush); ``none`` does not."""

    name = "localfs"
    client_package = "storebench"
    durable_how = {"fsync": "each file written fdatasynced before close",
                   "none": "files overwritten in place, not synced"}

    def layout(self) -> str:
        return f"one raw float32 file per key, {_FANOUT} files per directory, rewritten in place"

    def _path(self, key: int) -> str:
        return os.path.join(self.root, str(key // _FANOUT), f"{key}.f32")

    def _create(self, initial):
        for folder in range(0, (self.n_keys - 1) // _FANOUT + 1):
            os.makedirs(os.path.join(self.root, str(folder)), exist_ok=True)
        for key in range(self.n_keys):
            fd = os.open(self._path(key), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, initial[key].tobytes())
            finally:
                os.close(fd)

    def _read(self, keys):
        size, chunks = self.dim * 4, []
        for key in keys.tolist():
            fd = os.open(self._path(key), os.O_RDONLY)
            try:
                chunks.append(os.pread(fd, size, 0))
            finally:
                os.close(fd)
        return np.frombuffer(b"".join(chunks), dtype=np.float32).reshape(len(keys), self.dim)

    def _write(self, keys, values):
        raw, size, sync = values.tobytes(), self.dim * 4, self.durability == "fsync"
        for i, key in enumerate(keys.tolist()):
            fd = os.open(self._path(key), os.O_WRONLY)
            try:
                os.pwrite(fd, raw[i * size:(i + 1) * size], 0)
                if sync:
                    os.fdatasync(fd)
            finally:
                os.close(fd)

    def read_all(self):
        return self._read(np.arange(self.n_keys, dtype=np.int64))

    def system_version(self):
        from storebench.testbed.locations import filesystem_type

        return f"{filesystem_type(self.root)} (kernel {os.uname().release})"


EMBEDDING_TABLES: dict[str, type[EmbeddingTable]] = {
    table.name: table for table in (RocksDBTable, TileDBTable, TensorStoreTable, LocalFSTable)}


def make_table(name: str, root, durability: str | None = None, **options) -> EmbeddingTable:
    """The table ``name`` (see ``EMBEDDING_TABLES``) under ``root`` with ``durability`` (None: the
    system's default); ``options`` it does not take are ignored, so one settings mapping can serve
    every table."""
    if name not in EMBEDDING_TABLES:
        raise ValueError(f"unknown embedding table {name!r}; valid: {', '.join(EMBEDDING_TABLES)}")
    cls = EMBEDDING_TABLES[name]
    return cls(root, durability=durability, **{k: v for k, v in options.items() if k in cls.options and v is not None})


def remove_table(root) -> None:
    shutil.rmtree(root, ignore_errors=True)


# ------------------------------------------------------------------------------- the workload
def default_update(vectors: np.ndarray, keys: np.ndarray, step: int) -> np.ndarray:
    """new = 0.5 * v + signal(key, step, position): float32 element-wise arithmetic, the same bits
    wherever it runs, so the in-memory reference is exact. The signal depends on every position
    of the vector, so a misplaced row or column shows."""
    key_term = ((keys * 31 + step) % 17).astype(np.float32) * np.float32(0.0625)
    position_term = np.arange(vectors.shape[1], dtype=np.float32) * np.float32(1 / 1024)
    return vectors * np.float32(0.5) + key_term[:, None] + position_term[None, :]


def batch_keys(batch: np.ndarray) -> np.ndarray:
    """The distinct keys of a batch, in order of first appearance (a lookup deduplicates)."""
    _, first = np.unique(batch, return_index=True)
    return batch[np.sort(first)]


def sparse_selection(keys: np.ndarray, step: int, fraction: float) -> np.ndarray:
    """Boolean mask of the keys written back under sparse updates: about ``fraction`` of them,
    chosen by a hash of (key, step), so the choice is deterministic and differs per step."""
    step_mix = np.uint64(step * 0xBF58476D1CE4E5B9 % 2**64)  # in Python ints: numpy warns on scalar overflow
    mixed = keys.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + step_mix
    mixed ^= mixed >> np.uint64(31)
    mixed *= np.uint64(0x94D049BB133111EB)
    return (mixed >> np.uint64(40)).astype(np.float64) / float(1 << 24) < fraction


def _written(keys: np.ndarray, step: int, dense: bool, fraction: float) -> np.ndarray | slice:
    return slice(None) if dense else sparse_selection(keys, step, fraction)


def run_updates(table: EmbeddingTable, keys: np.ndarray, batch_size: int, update: Update = default_update,
                dense: bool = True, sparse_fraction: float = SPARSE_FRACTION) -> pd.DataFrame:
    """For each batch of ``keys`` (the stream, in order): read the batch's distinct keys, update
    them, write back every one (``dense``) or the ``sparse_fraction`` that ``sparse_selection``
    picks. Returns one row per batch (``BATCH_COLUMNS``), phases timed apart in ns; a batch
    whose selection is empty makes no write call (write_ns is then the time to decide that)."""
    _check_fraction(sparse_fraction)
    clock = time.perf_counter_ns
    rows = []
    for step, batch in enumerate(batches(keys, batch_size)):
        distinct = batch_keys(batch)
        start = clock()
        vectors = table.read(distinct)
        read_end = clock()
        new = update(vectors, distinct, step)
        chosen = _written(distinct, step, dense, sparse_fraction)
        written_keys, written_values = distinct[chosen], new[chosen]
        update_end = clock()
        if len(written_keys):
            table.write(written_keys, written_values)
        write_end = clock()
        rows.append((step, len(batch), len(distinct), len(written_keys), read_end - start, update_end - read_end,
                     write_end - update_end))
    return pd.DataFrame(rows, columns=BATCH_COLUMNS)


def reference_updates(initial: np.ndarray, keys: np.ndarray, batch_size: int, update: Update = default_update,
                      dense: bool = True, sparse_fraction: float = SPARSE_FRACTION) -> np.ndarray:
    """The table ``run_updates`` must leave, computed in memory from ``initial``."""
    _check_fraction(sparse_fraction)
    table = initial.copy()
    for step, batch in enumerate(batches(keys, batch_size)):
        distinct = batch_keys(batch)
        new = update(table[distinct], distinct, step)
        chosen = _written(distinct, step, dense, sparse_fraction)
        table[distinct[chosen]] = new[chosen]
    return table


def verify(table: EmbeddingTable, reference: np.ndarray, what: str = "") -> None:
    """The stored table equals ``reference`` bit for bit, or VerificationError naming the table."""
    stored, where = table.read_all(), f" ({what})" if what else ""
    if stored.shape != reference.shape:
        raise VerificationError(f"{table.name}: the table read back has shape {stored.shape}, the in-memory "
                                f"reference {reference.shape}{where}")
    if not np.array_equal(stored, reference):
        wrong = int(np.any(stored != reference, axis=1).sum())
        raise VerificationError(f"{table.name}: {wrong} of {len(reference)} embedding rows differ from the "
                                f"in-memory reference after the updates{where}")


def _check_fraction(fraction: float) -> None:
    if not 0 < fraction <= 1:
        raise ValueError(f"sparse_fraction must be in (0, 1], got {fraction!r}")
