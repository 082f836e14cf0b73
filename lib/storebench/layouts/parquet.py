"""L3: the JPEG bytes as a BLOB column of Parquet files, beside the metadata columns, queried by
DuckDB directly on S3 (its httpfs extension). There is no client index: DuckDB reads the files'
footers and prunes row groups by their min/max statistics. Files are written in class order (key
order), so a filter on ``label`` can skip row groups; the image column is stored as is (JPEG does
not compress, and dictionary encoding would keep each distinct image of the replicated tier once
per row group, a saving real data would not get)."""
from __future__ import annotations

from pathlib import Path

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
    description = "Parquet files, JPEG bytes as a BLOB column beside the metadata; DuckDB (httpfs) on S3"

    def __init__(self, place, index_dir, parallel: int = 16, file_bytes: int = 62_000_000,
                 row_group_rows: int = 128, duckdb_threads: int = 2):
        super().__init__(place, index_dir, parallel)
        if file_bytes < 1 or row_group_rows < 1 or duckdb_threads < 1:
            raise ValueError("file_bytes, row_group_rows and duckdb_threads must be >= 1")
        self.file_bytes, self.row_group_rows, self.duckdb_threads = file_bytes, row_group_rows, duckdb_threads

    def write(self, meta, image) -> Written:
        import io

        import obstore
        import pyarrow as pa
        import pyarrow.parquet as pq

        store = self.place.object_store(self.parallel)
        files, stored, start = 0, 0, 0
        sizes = meta["bytes"].to_numpy()
        while start < len(meta):
            end = start + max(1, int((sizes[start:].cumsum() < self.file_bytes).sum()))
            part = meta.iloc[start:end]
            table = pa.table({**{c: part[c].to_numpy() for c in ("key", *COLUMNS)},
                              "image": pa.array([image(f) for f in part.filename], type=pa.binary())})
            buffer = io.BytesIO()
            pq.write_table(table, buffer, row_group_size=self.row_group_rows, use_dictionary=["label"],
                           compression={"key": "snappy", "label": "snappy", "bytes": "snappy", "width": "snappy",
                                        "height": "snappy", "image": "none"})
            obstore.put(store, self.place.key(f"part-{files:05d}.parquet"), buffer.getvalue())
            stored += buffer.tell()
            files, start = files + 1, end
        return Written(objects=files, stored_bytes=stored, index_bytes=0,
                       details={"file_bytes": self.file_bytes, "row_group_rows": self.row_group_rows})

    def connect(self):
        """A fresh in-memory DuckDB with httpfs and an S3 secret for this place (no cache carried)."""
        import duckdb

        con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False,
                                     "threads": self.duckdb_threads})
        con.execute(f"LOAD '{httpfs_extension()}'")
        con.execute("SET enable_external_file_cache = false")
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
