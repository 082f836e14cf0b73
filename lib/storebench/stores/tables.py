"""Array-native row layouts: a workload's columns stored as arrays indexed by row (seed 001 Sec 3.4).

- ``tiledb-attrs``: one dense 1-D TileDB array over rows with one attribute per column (tweet
  text as a variable-length attribute + label; head, relation, tail), the seed's TileDB layout.
  Images are a 4-D dense array (row, y, x, channel) + a label array (TileDB attributes hold one
  value per cell, or a variable-length run: a fixed 3,072-byte image has no attribute type), as
  ``storebench.stores.tiledb.TileDBArrayStore`` stores them.
- ``tensorstore-zarr``: one zarr array per numeric column (images (n, 32, 32, 3) uint8 chunked
  along rows, labels, triples (n, 3) int32), the seed's TensorStore array-driver layout; chunk
  extent along rows is a parameter and is recorded. TensorStore's array drivers hold numbers
  only, so text has no array layout there (the seed used the kvstore for text).

A table reads ``rows`` (any order) in one request; nothing here times or verifies itself.
"""
from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from pathlib import Path
from typing import ClassVar

import numpy as np

from storebench.data.samples import RaggedBytes
from storebench.data.samples import Samples
from storebench.stores.base import Store, package_version
from storebench.stores.tiledb import FreshContexts, _context


class TableNotSupported(Exception):
    """The layout cannot hold this workload (e.g. text in a numeric array driver)."""


class RowTable(ABC):
    name: ClassVar[str]
    modalities: ClassVar[tuple[str, ...]]
    client_package: ClassVar[str]

    def __init__(self, root, chunk_rows: int = 64):
        self.root, self.chunk_rows = Path(root), int(chunk_rows)
        if self.chunk_rows < 1:
            raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")

    @abstractmethod
    def write(self, samples: Samples) -> None:
        """Replace the table with ``samples``."""

    @abstractmethod
    def read(self, rows: np.ndarray) -> dict:
        """Columns of ``rows`` (any order, in that order); ``IndexError`` out of range."""

    def read_range(self, start: int, stop: int) -> dict:
        return self.read(np.arange(start, stop))

    def clear(self) -> None:
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def close(self) -> None:
        pass

    def layout(self) -> str:
        return f"{self.chunk_rows} rows per tile/chunk"

    @classmethod
    def write_variants(cls) -> list[dict]:
        """Constructor options of each way this layout can be written, the default last."""
        return [{}]

    @abstractmethod
    def write_method(self) -> str:
        """How ``write`` writes, as the write-cost rows give it."""

    files = Store.files
    disk_usage = Store.disk_usage
    flush = Store.flush

    def check_modality(self, modality: str) -> None:
        if modality not in self.modalities:
            raise TableNotSupported(f"{self.name} holds {', '.join(self.modalities)} rows, not {modality}")


def _sorted_request(rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.asarray(rows, dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= n):
        raise IndexError(f"row index out of range (0..{n - 1})")
    return np.unique(rows, return_inverse=True)


class TileDBTable(FreshContexts, RowTable):
    """``write_order``: ``global`` (default) submits the rows in TileDB's global order, a slab of whole
    tiles per submission, into one fragment; ``row-major`` is TileDB-Py's slice assignment (``A[:] = ...``,
    one row-major write), which for a variable-length attribute grows about quadratically with the rows
    in TileDB 2.30 (its dense tiler rebuilds offsets per tile: 3.2 M text rows take ~100 s, against ~3 s
    in global order). Both leave the same tiles on disk; the domain is padded to whole tiles, because a
    global-order write must cover whole tiles, and the row count is kept in the array's metadata."""

    name = "tiledb-attrs"
    modalities = ("text", "graph", "image")
    client_package = "tiledb"
    WRITE_ORDERS = ("global", "row-major")
    SLAB_ROWS = 65_536  # rows per global-order submission (rounded down to whole tiles)

    def __init__(self, root, chunk_rows: int = 64, read_ahead_cache_bytes: int | None = None,
                 write_order: str = "global"):
        super().__init__(root, chunk_rows)
        if write_order not in self.WRITE_ORDERS:
            raise ValueError(f"write_order must be one of {', '.join(self.WRITE_ORDERS)}, got {write_order!r}")
        self.read_ahead_cache_bytes = read_ahead_cache_bytes
        self.write_order = write_order
        self.ctx = _context(read_ahead_cache_bytes)  # TileDB's one cache (see storebench.stores.tiledb)
        self.arrays: dict[str, object] = {}
        self.n = 0

    @classmethod
    def write_variants(cls):
        return [{"write_order": order} for order in reversed(cls.WRITE_ORDERS)]

    def write_method(self) -> str:
        if self.write_order == "global":
            return "global order: one fragment per column array, written in slabs of whole tiles"
        return "row-major: one write per column array (TileDB-Py's slice assignment, A[:] = values)"

    def write(self, samples):
        import tiledb

        self.check_modality(samples.modality)
        self.clear()
        self.root.mkdir(parents=True, exist_ok=True)
        n = len(samples)
        tile = min(self.chunk_rows, n)
        padded = -(-n // tile) * tile
        for uri, columns in self._arrays_of(samples).items():
            first = next(iter(columns.values()))
            dims = [tiledb.Dim(name="row", domain=(0, padded - 1), tile=tile, dtype=np.uint64)]
            if not isinstance(first, RaggedBytes):
                dims += [tiledb.Dim(name=f"d{i}", domain=(0, e - 1), tile=e, dtype=np.uint64)
                         for i, e in enumerate(first.shape[1:])]
            attrs = [tiledb.Attr(name=k, dtype=bytes, var=True) if isinstance(c, RaggedBytes)
                     else tiledb.Attr(name=k, dtype=c.dtype) for k, c in columns.items()]
            path = str(self.root / uri)
            tiledb.Array.create(path, tiledb.ArraySchema(domain=tiledb.Domain(*dims), attrs=attrs), ctx=self.ctx)
            with tiledb.open(path, "w", ctx=self.ctx) as array:
                if self.write_order == "global":
                    _write_global_order(array, columns, n, padded, tile, self.SLAB_ROWS)
                else:
                    array[0:n] = {k: _tiledb_values(c) for k, c in columns.items()}
                array.meta["rows"] = n
        self._open()

    def _arrays_of(self, samples) -> dict[str, dict]:
        c = samples.columns
        if samples.modality == "image":
            return {"images": {"image": c["image"]}, "labels": {"label": c["label"]}}
        if samples.modality == "graph":
            t = c["triple"]
            return {"rows": {"head": t[:, 0].copy(), "relation": t[:, 1].copy(), "tail": t[:, 2].copy()}}
        return {"rows": dict(c)}

    def _open(self):
        import tiledb

        self.arrays = {p.name: tiledb.open(str(p), "r", ctx=self.ctx) for p in sorted(self.root.iterdir())
                       if p.is_dir()}
        self.n = int(next(iter(self.arrays.values())).meta["rows"])

    def _renew(self):
        self.ctx = _context(self.read_ahead_cache_bytes)
        self._open()

    def read(self, rows):
        points, back = _sorted_request(rows, self.n)
        ranges = _runs(points)
        self._counted()
        out = {}
        for uri, array in self.arrays.items():
            got = array.multi_index[ranges]
            for name, values in got.items():
                if name in ("row", "d0", "d1", "d2"):
                    continue
                out[name] = _from_tiledb(values)
        if "head" in out:
            out = {"triple": np.stack([out.pop("head"), out.pop("relation"), out.pop("tail")], axis=1)}
        return {k: (v.take(back) if isinstance(v, RaggedBytes) else v[back]) for k, v in out.items()}

    def read_range(self, start, stop):
        if not 0 <= start < stop <= self.n:
            raise IndexError(f"rows {start}..{stop} out of range (0..{self.n})")
        self._counted()
        out = {}
        for array in self.arrays.values():
            for name, values in array[start:stop].items():
                out[name] = _from_tiledb(values)
        if "head" in out:
            out = {"triple": np.stack([out.pop("head"), out.pop("relation"), out.pop("tail")], axis=1)}
        return out

    def close(self):
        for array in self.arrays.values():
            array.close()
        self.arrays = {}

    def system_version(self):
        import tiledb

        return "TileDB {}.{}.{}".format(*tiledb.libtiledb.version()) + " (dense, one attribute per column)"


def _runs(points: np.ndarray) -> list:
    """Sorted row indices as TileDB ranges: consecutive runs become one slice (fewer ranges, one request)."""
    if not len(points):
        return []
    breaks = np.flatnonzero(np.diff(points) != 1) + 1
    return [int(run[0]) if len(run) == 1 else slice(int(run[0]), int(run[-1]))  # multi_index slices are inclusive
            for run in np.split(points, breaks)]


def _write_global_order(array, columns: dict, n: int, padded: int, tile: int, slab_rows: int) -> None:
    """``columns`` (rows 0..n-1) into the open dense ``array`` over rows 0..padded-1 in TileDB's global
    order (row tiles in order; within a tile, C order, the only order a tile spanning every other dimension
    has), a slab of whole tiles per submission; the padding rows hold empty values."""
    import tiledb.libtiledb as lt

    ctx = lt.Context(array.ctx)
    query = lt.Query(ctx, array.array, lt.QueryType.WRITE)
    query.layout = lt.LayoutType.GLOBAL_ORDER
    subarray = lt.Subarray(ctx, array.array)
    first = next(iter(columns.values()))
    for dim, extent in enumerate((padded, *getattr(first, "shape", (n,))[1:])):
        subarray._add_dim_range(dim, (0, extent - 1))
    query.set_subarray(subarray)
    slab = max(tile, slab_rows // tile * tile)
    for start in range(0, padded, slab):
        stop = min(padded, start + slab)
        held = []  # the query keeps raw pointers: every buffer must outlive the submission
        for name, column in columns.items():
            if isinstance(column, RaggedBytes):
                data, offsets = _ragged_slab(column, start, stop)
                query.set_data_buffer(name, data, data.nbytes)
                query.set_offsets_buffer(name, offsets, len(offsets))
                held += [data, offsets]
            else:
                values = _padded_slab(column, start, stop)
                query.set_data_buffer(name, values, values.size)
                held.append(values)
        query._submit()
    query.finalize()


def _ragged_slab(column: RaggedBytes, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows start..stop-1 of ``column`` as TileDB's data and offsets buffers; rows past the end are empty."""
    bounds = column.offsets[min(start, len(column)):min(stop, len(column)) + 1]
    offsets = np.full(stop - start, bounds[-1] - bounds[0], dtype=np.uint64)
    offsets[:len(bounds) - 1] = bounds[:-1] - bounds[0]
    return column.data[bounds[0]:bounds[-1]], offsets


def _padded_slab(column: np.ndarray, start: int, stop: int) -> np.ndarray:
    values = np.ascontiguousarray(column[start:stop])
    if len(values) == stop - start:
        return values
    padded = np.zeros((stop - start, *column.shape[1:]), dtype=column.dtype)
    padded[:len(values)] = values
    return padded


def _tiledb_values(column):
    if isinstance(column, RaggedBytes):
        return np.array([column[i] for i in range(len(column))] + [None], dtype=object)[:-1]
    return np.ascontiguousarray(column)


def _from_tiledb(values):
    if values.dtype == object:
        return RaggedBytes.from_list([bytes(v) for v in values])
    return values


class TensorStoreTable(RowTable):
    name = "tensorstore-zarr"
    modalities = ("image", "graph")
    client_package = "tensorstore"

    def __init__(self, root, chunk_rows: int = 64):
        super().__init__(root, chunk_rows)
        self.arrays: dict[str, object] = {}

    def _spec(self, name, **extra):
        return {"driver": "zarr", "kvstore": {"driver": "file", "path": str(self.root / name)}, **extra}

    def write(self, samples):
        import tensorstore as ts

        self.check_modality(samples.modality)
        self.clear()
        self.root.mkdir(parents=True, exist_ok=True)
        futures = []
        for name, column in samples.columns.items():
            chunks = [min(self.chunk_rows, len(column)), *column.shape[1:]]
            array = ts.open(self._spec(name, metadata={"shape": list(column.shape), "dtype": column.dtype.str,
                                                       "compressor": None, "chunks": chunks}), create=True).result()
            futures.append(array.write(np.ascontiguousarray(column)))  # async: columns written concurrently
        for future in futures:
            future.result()
        self._open(list(samples.columns))

    def _open(self, names=None):
        import tensorstore as ts

        names = names or sorted(p.name for p in self.root.iterdir() if (p / ".zarray").exists())
        self.arrays = {name: ts.open(self._spec(name), open=True).result() for name in names}

    def read(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        n = next(iter(self.arrays.values())).shape[0]
        if len(rows) and (rows.min() < 0 or rows.max() >= n):
            raise IndexError(f"row index out of range (0..{n - 1})")
        futures = {name: array[rows].read() for name, array in self.arrays.items()}
        return {name: future.result() for name, future in futures.items()}

    def read_range(self, start, stop):
        futures = {name: array[start:stop].read() for name, array in self.arrays.items()}
        return {name: future.result() for name, future in futures.items()}

    def close(self):
        self.arrays = {}

    def write_method(self) -> str:
        return "all columns written concurrently (async futures)"

    def system_version(self):
        return f"TensorStore {package_version('tensorstore')} (zarr v2, uncompressed, one array per column)"


TABLES = {cls.name: cls for cls in (TileDBTable, TensorStoreTable)}


def get_table_class(name: str) -> type[RowTable]:
    try:
        return TABLES[name]
    except KeyError:
        raise ValueError(f"unknown table layout {name!r}; valid: {', '.join(TABLES)}") from None
