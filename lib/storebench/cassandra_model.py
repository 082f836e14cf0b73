"""Seed 004's data model in Cassandra (its Sec 3.2-3.3), for the images of storebench.imagesets:

    metadata_by_nat   PRIMARY KEY ((original, label), copy): the natural keys (the real image
                      and its class) as partition key, so split creation can list partitions and
                      read the UUIDs of each; plus synset, kind, id (the sample's UUID), key, checksum
    data_by_uuid      PRIMARY KEY (id): label, data (the image blob), checksum; the only table
                      training reads, one single-row partition per image
    metadata_by_uuid  PRIMARY KEY (id): every field of metadata_by_nat (the seed's optional,
                      denormalised table: traces a sample back to its original)

``key`` is the integer key the same sample has in the other stores of the registry; ``checksum``
the CRC-32 of the blob, recorded at ingest. Writes and reads go through :class:`AsyncWindow`:
many requests in flight on the driver's async API, bounded in count AND in bytes (the driver
raises ConnectionBusy when too many large requests queue on one connection).
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pandas as pd
from cassandra import ConsistencyLevel

from .imagesets import ImageSet
from .progress import tqdm
from .stores.cassandra import connect, where

TABLES = ("metadata_by_nat", "data_by_uuid", "metadata_by_uuid")
META_COLUMNS = ("id", "original", "copy", "label", "synset", "kind", "filename", "key", "checksum")
NATURAL_KEYS = ("original", "label")  # the partition key of metadata_by_nat


def keyspace_for(encoding: str, n_samples: int) -> str:
    return f"seed004_{encoding}_{n_samples}"


def consistency(name: str) -> int:
    try:
        return getattr(ConsistencyLevel, name.upper())
    except AttributeError:
        raise ValueError(f"unknown consistency level {name!r} (e.g. ONE, QUORUM, ALL)") from None


@contextmanager
def session_for(endpoint: dict, request_timeout: float = 60):
    """A driver session on ``endpoint``, shut down on exit."""
    cluster, session = connect(endpoint, request_timeout=request_timeout)
    try:
        yield session
    finally:
        cluster.shutdown()


def create_schema(session, keyspace: str, replication_factor: int = 1, compression: str | None = "LZ4Compressor",
                  drop: bool = False) -> None:
    """The keyspace (SimpleStrategy, ``replication_factor``) and the three tables. ``compression``
    of data_by_uuid: Cassandra's default LZ4 (None: off); metadata tables keep the default."""
    if drop:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)
    session.execute(f"CREATE KEYSPACE IF NOT EXISTS {keyspace} WITH replication = "
                    f"{{'class': 'SimpleStrategy', 'replication_factor': {int(replication_factor)}}}")
    meta = ("id uuid, original int, copy int, label int, synset text, kind text, filename text, key int, "
            "checksum bigint")
    session.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.metadata_by_nat ({meta}, "
                    f"PRIMARY KEY (({', '.join(NATURAL_KEYS)}), copy))")
    blob_compression = f"{{'class': '{compression}'}}" if compression else "{'enabled': 'false'}"
    session.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.data_by_uuid (id uuid, label int, data blob, "
                    f"checksum bigint, PRIMARY KEY (id)) WITH compression = {blob_compression}")
    session.execute(f"CREATE TABLE IF NOT EXISTS {keyspace}.metadata_by_uuid ({meta}, PRIMARY KEY (id))")


class AsyncWindow:
    """Requests in flight on a driver session: at most ``requests`` of them and (unless a single
    request is larger) ``max_bytes`` of payload. ``submit`` blocks while the window is full; the
    first failure is raised by the next ``submit`` or by ``wait``, naming ``where``."""

    def __init__(self, session, requests: int = 64, max_bytes: int = 32 << 20, where: str = "cassandra",
                 stall_timeout: float = 120.0):
        self.session, self.requests, self.max_bytes, self.where = session, requests, max_bytes, where
        self.stall_timeout = stall_timeout
        self._cond = threading.Condition()
        self._count = self._bytes = 0
        self._error: BaseException | None = None

    def submit(self, statement, params, nbytes: int = 0, on_rows=None, on_error=None) -> None:
        with self._cond:
            self._wait_until(lambda: self._count < self.requests
                             and (self._count == 0 or self._bytes + nbytes <= self.max_bytes))
            self._count += 1
            self._bytes += nbytes
        try:
            future = self.session.execute_async(statement, params)
        except BaseException:
            self._release(nbytes)
            raise
        future.add_callbacks(self._done, self._failed, callback_args=(nbytes, on_rows),
                             errback_args=(nbytes, on_error))

    def wait(self) -> None:
        """Until nothing is in flight; raises the first failure."""
        with self._cond:
            self._wait_until(lambda: self._count == 0)

    def _wait_until(self, ready) -> None:
        deadline = time.monotonic() + self.stall_timeout
        while not ready() and self._error is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.where}: no request finished in {self.stall_timeout:.0f} s "
                                   f"({self._count} in flight)")
            self._cond.wait(min(left, 1.0))
        if self._error is not None:
            raise self._error

    def _release(self, nbytes: int) -> None:
        with self._cond:
            self._count -= 1
            self._bytes -= nbytes
            self._cond.notify_all()

    def _done(self, rows, nbytes, on_rows):
        try:
            if on_rows is not None:
                on_rows(rows)
        except BaseException as error:  # noqa: BLE001 - a failing consumer fails the window
            self._fail(error)
        self._release(nbytes)

    def _failed(self, error, nbytes, on_error):
        if on_error is not None:
            on_error(error)
        else:
            self._fail(RuntimeError(f"{self.where}: request failed: {type(error).__name__}: {error}"))
        self._release(nbytes)

    def _fail(self, error: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = error


def ingest(session, keyspace: str, images: ImageSet, requests: int = 64, max_bytes: int = 32 << 20,
           consistency_level: str = "ONE", progress: bool = True, where_: str = "cassandra") -> dict:
    """Write every sample into the three tables with parallel async writes; returns
    ``{samples, bytes, seconds}`` (first request to last acknowledgement)."""
    cl = consistency(consistency_level)
    cols = ", ".join(META_COLUMNS)
    marks = ", ".join("?" * len(META_COLUMNS))
    statements = []
    for table in ("metadata_by_nat", "metadata_by_uuid"):
        statements.append(session.prepare(f"INSERT INTO {keyspace}.{table} ({cols}) VALUES ({marks})"))
    data = session.prepare(f"INSERT INTO {keyspace}.data_by_uuid (id, label, data, checksum) VALUES (?, ?, ?, ?)")
    for statement in (*statements, data):
        statement.consistency_level = cl
    window = AsyncWindow(session, requests, max_bytes, where=where_)
    table = images.table
    rows = zip(*(table[c].tolist() for c in META_COLUMNS))
    bar = tqdm(total=len(images), desc=f"ingest {keyspace}", unit="img", disable=not progress)
    start = time.perf_counter()
    with bar:
        for row, blob in zip(rows, images.blobs):
            for statement in statements:
                window.submit(statement, row)
            uid, label, crc = row[0], row[3], row[8]
            window.submit(data, (uid, label, blob, crc), nbytes=len(blob))
            bar.update()
        window.wait()
    return {"samples": len(images), "bytes": images.nbytes, "seconds": time.perf_counter() - start}


def ingest_endpoint(endpoint: dict, keyspace: str, images: ImageSet, replication_factor: int = 1,
                    drop: bool = True, **options) -> dict:
    """Schema + ingest on an endpoint (storebench.services' or params.yaml's)."""
    with session_for(endpoint) as session:
        create_schema(session, keyspace, replication_factor, drop=drop)
        return ingest(session, keyspace, images, where_=where(endpoint), **options)


def read_metadata(session, keyspace: str, table: str = "metadata_by_uuid") -> pd.DataFrame:
    """The metadata of every sample (one full-table read), sorted by ``key``."""
    rows = session.execute(f"SELECT {', '.join(META_COLUMNS)} FROM {keyspace}.{table}", timeout=120)
    frame = pd.DataFrame(list(rows), columns=list(META_COLUMNS))
    return frame.sort_values("key").reset_index(drop=True)


def corrupt(session, keyspace: str, uid, data: bytes) -> None:
    """Overwrite one blob without touching its checksum (for tests of verification)."""
    session.execute(f"UPDATE {keyspace}.data_by_uuid SET data = %s WHERE id = %s", (data, uid))
