"""L3: the JPEG bytes as a BLOB column of Parquet files, beside the metadata columns, queried by
DuckDB directly on S3 (its httpfs extension). There is no client index: DuckDB reads the files'
footers and can skip a row group whose min/max statistics exclude the filter. Two row orders:

- ``L3-parquet``: class order (key order), as the seed built it: a row group of 128 rows holds about
  ten classes in ImageNet's synset order, so its label range (min..max, alphabetical) spans most of
  the alphabet and a filter on ``label`` can rarely skip it;
- ``L3-parquet-sorted``: the same rows sorted by label (then key): a row group's labels are a
  narrow alphabetical range, so an equality or IN filter on ``label`` reads one or two row groups.

``reads(meta, query)`` says, from the same row placement the writer uses, how many row groups (and
image bytes) hold a match and how many min/max pruning cannot exclude: beside the bytes a query
really moved, it tells whether DuckDB pruned as far as the statistics allow. The image column is
stored as is (JPEG does not compress, and dictionary encoding would keep each distinct image once
per row group, a saving real data would not get)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from storebench.layouts.queries import COLUMNS, Query
from storebench.layouts.base import Layout, Written


def httpfs_extension() -> Path:
    """httpfs from the ``duckdb-extension-httpfs`` package: DuckDB would download it at run time."""
    import duckdb
    import duckdb_extension_httpfs

    path = (Path(duckdb_extension_httpfs.__file__).parent / "extensions" / f"v{duckdb.__version__}"
            / "httpfs.duckdb_extension")
    if not path.exists():
        raise RuntimeError(f"no httpfs extension for duckdb {duckdb.__version__} at {path}: pin "
                           f"duckdb-extension-httpfs=={duckdb.__version__} (env/requirements.in)")
    return path


class ParquetBlobs(Layout):
    name = "L3-parquet"
    description = "Parquet files in class order, JPEG bytes as a BLOB column beside the metadata; DuckDB (httpfs) on S3"
    sort_by: tuple[str, ...] = ("key",)

    def __init__(self, place, index_dir, parallel: int = 16, file_bytes: int = 62_000_000,
                 row_group_rows: int = 128, duckdb_threads: int = 2):
        super().__init__(place, index_dir, parallel)
        if file_bytes < 1 or row_group_rows < 1 or duckdb_threads < 1:
            raise ValueError("file_bytes, row_group_rows and duckdb_threads must be >= 1")
        self.file_bytes, self.row_group_rows, self.duckdb_threads = file_bytes, row_group_rows, duckdb_threads

    def placement(self, meta: pd.DataFrame) -> pd.DataFrame:
        """``meta`` in the order written, with ``file`` and ``row_group`` (within its file) of each row:
        files cut at ``file_bytes`` of images, row groups of ``row_group_rows`` rows."""
        ordered = meta.sort_values(list(self.sort_by), kind="stable").reset_index(drop=True)
        sizes = ordered["bytes"].to_numpy()
        files = np.empty(len(ordered), dtype=np.int64)
        groups = np.empty(len(ordered), dtype=np.int64)
        file, start = 0, 0
        while start < len(ordered):
            end = start + max(1, int((sizes[start:].cumsum() < self.file_bytes).sum()))
            files[start:end] = file
            groups[start:end] = np.arange(end - start) // self.row_group_rows
            file, start = file + 1, end
        return ordered.assign(file=files, row_group=groups)

    def write(self, meta, image) -> Written:
        import io

        import obstore
        import pyarrow as pa
        import pyarrow.parquet as pq

        store = self.place.object_store(self.parallel)
        placed = self.placement(meta)
        stored = 0
        for file, part in placed.groupby("file", sort=True):
            table = pa.table({**{c: part[c].to_numpy() for c in ("key", *COLUMNS)},
                              "image": pa.array([image(f) for f in part.filename], type=pa.binary())})
            buffer = io.BytesIO()
            pq.write_table(table, buffer, row_group_size=self.row_group_rows, use_dictionary=["label"],
                           compression={"key": "snappy", "label": "snappy", "bytes": "snappy", "width": "snappy",
                                        "height": "snappy", "image": "none"})
            obstore.put(store, self.place.key(f"part-{file:05d}.parquet"), buffer.getvalue())
            stored += buffer.tell()
        files = int(placed["file"].max()) + 1 if len(placed) else 0
        return Written(objects=files, stored_bytes=stored, index_bytes=0,
                       details={"file_bytes": self.file_bytes, "row_group_rows": self.row_group_rows,
                                "sort_by": list(self.sort_by),
                                "row_groups": int(placed.groupby("file").row_group.nunique().sum()) if files else 0})

    def reads(self, meta: pd.DataFrame, query: Query, copies: int) -> dict:
        """What min/max statistics let a reader of ``query`` skip: row groups (and their image bytes)
        in all, holding a match, and not excluded by any condition's min/max (``label LIKE '%x'``
        and the aspect ratio, an expression, exclude nothing)."""
        placed = self.placement(meta)
        chosen = set(query.select(meta, copies).key)
        groups = placed.groupby(["file", "row_group"], sort=True)
        summary = groups.agg(image_bytes=("bytes", "sum"), rows=("key", "size"),
                             match=("key", lambda keys: bool(chosen.intersection(keys))))
        stats = groups[["key", *COLUMNS]].agg(["min", "max"])
        keep = np.ones(len(summary), dtype=bool)
        for condition in query.conditions:
            if condition.column in stats.columns.get_level_values(0):
                keep &= [condition.may_match(lo, hi) for lo, hi in zip(stats[(condition.column, "min")],
                                                                       stats[(condition.column, "max")])]
        return {"row_groups": len(summary), "row_groups_matching": int(summary["match"].sum()),
                "row_groups_not_excluded": int(keep.sum()), "image_bytes": int(summary.image_bytes.sum()),
                "image_bytes_matching": int(summary.image_bytes[summary["match"]].sum()),
                "image_bytes_not_excluded": int(summary.image_bytes[keep].sum())}

    def connect(self):
        """A fresh in-memory DuckDB with httpfs and an S3 secret for this place (no cache carried)."""
        import duckdb

        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                     "threads": self.duckdb_threads})
        con.execute(f"LOAD '{httpfs_extension()}'")
        con.execute("SET enable_external_file_cache = false")
        if self.machine_memory_bytes is not None:  # DuckDB's default: 80% of the machine's memory
            con.execute(f"SET memory_limit = '{int(0.8 * self.machine_memory_bytes) // 2**20}MiB'")
            con.execute(f"SET temp_directory = '{self.index_dir / 'duckdb-spill'}'")
        host = f"{self.place.endpoint['host']}:{self.place.endpoint['port']}"
        con.execute(f"CREATE SECRET (TYPE s3, KEY_ID '{self.place.endpoint['access_key']}', "
                    f"SECRET '{self.place.endpoint['secret_key']}', ENDPOINT '{host}', URL_STYLE 'path', "
                    f"USE_SSL false, REGION '{self.place.endpoint.get('region', 'us-east-1')}')")
        return con

    def sql(self, query: Query, copies: int) -> str:
        limit = query.limit(copies)
        return (f"SELECT key, image FROM read_parquet('{self.place.url('*.parquet')}') WHERE {query.where()} "
                f"ORDER BY key{f' LIMIT {limit}' if limit is not None else ''}")

    def query(self, query: Query, copies: int):
        con = self.connect()
        try:
            cursor = con.execute(self.sql(query, copies))
            while rows := cursor.fetchmany(256):
                for key, image in rows:
                    yield int(key), bytes(image)
        finally:
            con.close()


class SortedParquetBlobs(ParquetBlobs):
    name = "L3-parquet-sorted"
    description = ("Parquet files sorted by label (then key), JPEG bytes as a BLOB column; DuckDB (httpfs) on S3: "
                   "min/max statistics of label can prune row groups")
    sort_by = ("label", "key")
