"""One small interface for a dataset layout on S3 (seed 002): write a tier of images, answer a
query. A layout knows how its bytes are arranged and how to find a query's images; it does not time
itself, pick queries or count bytes (storebench.testbed.wiretap counts them at the client, for every layout
alike).

A query builds every client afresh (new HTTP pools, a new DuckDB database, a new Lance dataset
handle, the client index read again from its file): a cold client, as the seed's runs, with
nothing cached between queries or repeats.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Iterator

import pandas as pd

from storebench.layouts.queries import Query


@dataclass(frozen=True)
class S3Place:
    """A bucket and key prefix on an S3 endpoint (a storebench endpoint dict: host, port, keys)."""
    endpoint: dict
    bucket: str
    prefix: str

    @property
    def http_url(self) -> str:
        return f"http://{self.endpoint['host']}:{self.endpoint['port']}"

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def url(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"

    def via(self, endpoint: dict) -> "S3Place":
        """The same bucket and prefix reached through another endpoint (a profile, a wiretap)."""
        return S3Place(endpoint, self.bucket, self.prefix)

    def object_store(self, parallel: int = 16):
        from obstore.store import S3Store

        return S3Store(self.bucket, endpoint=self.http_url, access_key_id=self.endpoint["access_key"],
                       secret_access_key=self.endpoint["secret_key"],
                       region=self.endpoint.get("region", "us-east-1"), virtual_hosted_style_request=False,
                       client_options={"allow_http": True, "pool_max_idle_per_host": str(parallel),
                                       "connect_timeout": "5s", "timeout": "120s"},
                       retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=120)})


@dataclass
class Written:
    """What a layout put where (the seed's Table 1): objects and bytes on the server, the client
    index's size, and the layout's own parameters (shard size, row-group rows, ...)."""
    objects: int
    stored_bytes: int
    index_bytes: int
    details: dict = field(default_factory=dict)


class Layout(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    # The memory of the machine the client runs on, where it is a memory tier's limit (None: this one's): an
    # engine that sizes itself by the machine's memory (DuckDB: 80% of it) is told, as it would see it on an
    # instance of that size (a cgroup v1 limit is invisible to it).
    machine_memory_bytes: int | None = None

    def __init__(self, place: S3Place, index_dir: Path, parallel: int = 16):
        self.place, self.index_dir, self.parallel = place, Path(index_dir), parallel

    @abstractmethod
    def write(self, meta: pd.DataFrame, image: Callable[[str], bytes]) -> Written:
        """Store every row of ``meta`` (key, label, bytes, width, height, filename) with the image
        bytes ``image(filename)``."""

    @abstractmethod
    def query(self, query: Query, copies: int) -> Iterator[tuple[int, bytes]]:
        """The query's images as ``(key, JPEG bytes)``, streamed as they arrive (a client need not
        hold a large answer in memory), read through ``self.place``."""

    def reading_from(self, place: S3Place) -> "Layout":
        """This layout (same index) read through another endpoint."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(self.__dict__, place=place)
        return clone

    @property
    def index_path(self) -> Path:
        return self.index_dir / f"{self.name}.index.parquet"


def put_objects(store, items: Iterable[tuple[str, bytes]], parallel: int) -> int:
    """PUT every ``(key, bytes)`` with ``parallel`` in flight; the bytes written."""
    import obstore

    def put(item):
        obstore.put(store, item[0], item[1])
        return len(item[1])

    with ThreadPoolExecutor(parallel) as pool:
        return sum(pool.map(put, items))


def read_index(path: Path, columns=None) -> pd.DataFrame:
    import pyarrow.parquet as pq

    return pq.read_table(path, columns=columns).to_pandas()


def write_index(table: pd.DataFrame, path: Path) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
    return path.stat().st_size
