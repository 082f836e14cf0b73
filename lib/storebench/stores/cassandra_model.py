"""Seed 004's data model in Cassandra (its Sec 3.2-3.3), for the images of storebench.data.imagesets:

    metadata_by_nat   PRIMARY KEY ((original, label), copy): the natural keys (the real image
                      and its class) as partition key, so split creation can list partitions and
                      read the UUIDs of each; plus synset, kind, id (the sample's UUID), key, checksum
    data_by_uuid      PRIMARY KEY (id): label, data (the image blob), checksum; the only table
                      training reads, one single-row partition per image
    metadata_by_uuid  PRIMARY KEY (id): every field of metadata_by_nat (the seed's optional,
                      denormalised table: traces a sample back to its original)

``key`` is the integer key the same sample has in the other stores of the registry; ``checksum``
the CRC-32 of the blob, recorded at ingest. Ingest is :class:`ConcurrentWrites`: many writes in flight
on the driver's async API, bounded in count AND in bytes (the driver raises ConnectionBusy when too
many large requests queue on one connection).
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

import pandas as pd
from cassandra import ConsistencyLevel

from storebench.data.imagesets import ImageSet
from storebench.core.progress import tqdm
from storebench.stores.cassandra_session import connect, where

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


class ConcurrentWrites:
    """Requests from an iterator of ``(statement, params, nbytes)``, at most ``requests`` of them and
    (unless one alone is larger) ``max_bytes`` of payload in flight. As the driver's
    execute_concurrent does, each completion callback (on the driver's I/O thread) issues the next
    request: no thread hand-off per request. ``run()`` returns when all are acknowledged and raises
    the first failure, naming ``where``."""

    def __init__(self, session, items, requests: int = 64, max_bytes: int = 32 << 20, where: str = "cassandra",
                 on_done=None, stall_timeout: float = 120.0):
        self.session, self.items, self.requests, self.max_bytes = session, iter(items), requests, max_bytes
        self.where, self.on_done, self.stall_timeout = where, on_done, stall_timeout
        self.lock, self.finished = threading.Lock(), threading.Event()
        self.active = self.bytes = self.completed = 0
        self.peeked, self.exhausted, self.error = None, False, None

    def run(self) -> int:
        self._pump()
        seen = -1
        while not self.finished.wait(self.stall_timeout):
            if self.completed == seen:
                self._stop(TimeoutError(f"{self.where}: no write acknowledged in {self.stall_timeout:.0f} s "
                                        f"({self.active} in flight)"))
            seen = self.completed
        if self.error is not None:
            raise self.error
        return self.completed

    def _pump(self) -> None:
        while True:
            with self.lock:
                if self.error is not None:  # stop issuing; done once the last in flight is back
                    if self.active == 0:
                        self.finished.set()
                    return
                if self.active >= self.requests:
                    return
                if self.peeked is None:
                    try:
                        self.peeked = next(self.items)
                    except StopIteration:
                        self.exhausted = True
                    except BaseException as error:  # noqa: BLE001 - the iterator's own failure
                        self.error = error
                    if self.peeked is None:
                        if self.active == 0:
                            self.finished.set()
                        return
                statement, params, nbytes = self.peeked
                if self.active and self.bytes + nbytes > self.max_bytes:
                    return
                self.peeked = None
                self.active += 1
                self.bytes += nbytes
            try:
                future = self.session.execute_async(statement, params)
            except Exception as error:  # noqa: BLE001 - e.g. the session was shut down
                self._failed(error, nbytes)
                return
            future.add_callbacks(self._done, self._failed, callback_args=(nbytes,), errback_args=(nbytes,))

    def _done(self, _rows, nbytes) -> None:
        with self.lock:
            self.active -= 1
            self.bytes -= nbytes
            self.completed += 1
        if self.on_done is not None:
            self.on_done()
        self._pump()

    def _failed(self, error, nbytes) -> None:
        with self.lock:
            self.active -= 1
            self.bytes -= nbytes
        self._stop(RuntimeError(f"{self.where}: write failed: {type(error).__name__}: {error}"))
        self._pump()

    def _stop(self, error) -> None:
        with self.lock:
            if self.error is None:
                self.error = error
            if self.active == 0 or isinstance(error, TimeoutError):
                self.finished.set()


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
    table = images.table
    rows = list(zip(*(table[c].tolist() for c in META_COLUMNS)))

    def requests_():
        for row, blob in zip(rows, images.blobs):
            for statement in statements:
                yield statement, row, 0
            yield data, (row[0], row[3], blob, row[8]), len(blob)  # id, label, data, checksum

    per_sample = len(statements) + 1
    bar = tqdm(total=len(images), desc=f"ingest {keyspace}", unit="img", disable=not progress)
    counter = [0]

    def tick():  # on the driver's I/O thread: count writes, move the bar every 50 samples
        counter[0] += 1
        if counter[0] % (per_sample * 50) == 0:
            bar.update(50)

    start = time.perf_counter()
    with bar:
        ConcurrentWrites(session, requests_(), requests, max_bytes, where_, on_done=tick).run()
        bar.update(len(images) - bar.n)
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
