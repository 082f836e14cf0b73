"""The MongoDB wire protocol: one document per object, the bytes in a binary field.

Two batch reads, registered as two systems (as for Cassandra):
- ``mongodb-api``: ``find({"_id": {"$in": keys}})``, one request (the seed's batch read, Table 3);
- ``mongodb-api-concurrent``: one ``find_one({"_id": key})`` per key, ``parallel`` of them in
  flight over pymongo's connection pool.
Locally the server is FerretDB v1 (MongoDB API over SQLite), because no real mongod is
obtainable offline; results say so ("MongoDB API (FerretDB v1.24.0, SQLite 3.46.0 backend)"). An
endpoint URI to a real mongod works unchanged and is then reported as MongoDB.

Why both: FerretDB 1.24 reads no query from its ``_id`` index (a real mongod reads both from it).
``$in`` is not pushed down to the backend at all: every request reads and decodes the whole
collection in FerretDB. A filter that is one ``_id`` equality on a string or ObjectID is pushed
down, but still scans: on SQLite its ``WHERE _ferretdb_sjson->'$._id' = ?`` does not match the
index expression ``_ferretdb_sjson->"_id"`` (EXPLAIN: SCAN), on PostgreSQL it becomes
``_jsonb->'_id' @> $1``, which the btree index cannot serve (Seq Scan). That scan runs inside the
database and is ~25x cheaper per request than an ``$in`` at 1,000 documents; both grow with the
collection. ``_id`` is the key as a 12-digit string (the pushed-down form; string comparison is
also cheaper than numbers in the scans).

So that a lookup is an index read, as on mongod, a store on a local FerretDB (``lookup_index``, on
by default) adds the index its pushed-down filter matches, ``_ferretdb_sjson->'$._id'``, to the
collection's SQLite table when it creates the collection (SQLite keeps it up to date on every write;
dropping the collection drops it). Without it, every ``find_one`` and every upsert scans the table:
at 60,000 documents an ingest took hours and one lookup ~0.25 s here; with it a lookup takes about a
millisecond at any size. The system version says so ("..., _id lookup index added"). ``$in`` is not
helped (it never reaches SQLite) and stays a scan of the whole collection per request. An external
endpoint is used as it is.
"""
from __future__ import annotations

import re
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pymongo
import pymongo.errors
from bson import Binary

from storebench.stores.base import Capabilities, DiskUsage, ServerStore, StoreConnectionError, check_key


def _id(key) -> str:
    return f"{check_key(key):012d}"


class MongoDBStore(ServerStore):
    name = "mongodb-api"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=False, has_server=True)
    client_package = "pymongo"
    service = "mongodb-ferretdb"

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None, timeout: float = 60.0,
                 lookup_index: bool = True):
        super().__init__(endpoint, namespace, service)
        # Each request gives up after ``timeout`` s (pymongo's NetworkTimeout), and is not retried: a
        # retry would hide the fault (pymongo retries a read once by default).
        self.client = pymongo.MongoClient(endpoint["uri"], serverSelectionTimeoutMS=int(1000 * min(timeout, 10.0)),
                                          socketTimeoutMS=int(1000 * timeout),
                                          connectTimeoutMS=int(1000 * min(timeout, 10.0)),
                                          retryReads=False, retryWrites=False)
        self.db = self.client[endpoint.get("database", "storebench")]
        self.collection = self.db[namespace]
        try:
            self.client.admin.command("ping")
        except pymongo.errors.OperationFailure as error:
            raise StoreConnectionError(f"{self.name} at {endpoint['uri'].split('@')[-1]}: authentication failed "
                                       f"({error}); check the credentials in the URI") from None
        except pymongo.errors.ConnectionFailure as error:
            raise StoreConnectionError(f"{self.name} at {endpoint['uri'].split('@')[-1]}: cannot connect ({error})") from None
        self.lookup_index = lookup_index and self._sqlite_file() is not None
        self._indexed = False

    # --- the _id lookup index on a local FerretDB/SQLite (see the module docstring) -----------------
    def _sqlite_file(self) -> Path | None:
        """The SQLite file of our database on the local FerretDB; None for an external server or another backend."""
        if self.local is None or getattr(self.local, "backend", None) != "SQLite":
            return None
        return Path(self.local.data_dir) / f"{self.db.name}.sqlite"

    def _ensure_lookup_index(self) -> None:
        if not self.lookup_index or self._indexed:
            return
        if self.namespace not in self.db.list_collection_names():
            self.db.create_collection(self.namespace)  # FerretDB makes the table now: index it before any write
        with closing(sqlite3.connect(self._sqlite_file(), timeout=60)) as db:
            found = db.execute("SELECT table_name FROM _ferretdb_collections WHERE name = ?", (self.namespace,)).fetchone()
            if found is None:
                raise RuntimeError(f"{self.name}: FerretDB's catalogue in {self._sqlite_file()} has no collection "
                                   f"{self.namespace!r} (another FerretDB version?); open the store with "
                                   "lookup_index=False to use FerretDB as it is")
            table = found[0].replace('"', '""')
            db.execute(f'CREATE INDEX IF NOT EXISTS "{table}_storebench_id" ON "{table}" (_ferretdb_sjson->\'$._id\')')
            db.commit()
        self._indexed = True

    def put_many(self, items):
        self._ensure_lookup_index()
        batch = [pymongo.ReplaceOne({"_id": _id(k)}, {"_id": _id(k), "v": Binary(v)}, upsert=True) for k, v in items]
        for i in range(0, len(batch), 500):
            self.collection.bulk_write(batch[i:i + 500], ordered=False)

    def get(self, key):
        doc = self.collection.find_one({"_id": _id(key)})
        if doc is None:
            raise KeyError(key)
        return bytes(doc["v"])

    def get_many(self, keys):
        ids = [_id(k) for k in keys]
        found = {d["_id"]: bytes(d["v"]) for d in self.collection.find({"_id": {"$in": ids}})}
        return self._all_found(keys, [found.get(i) for i in ids])

    def scan(self):
        for doc in self.collection.find().sort("_id", 1):
            yield int(doc["_id"]), bytes(doc["v"])

    def clear(self):
        self.collection.drop()
        self._indexed = False

    def disk_usage(self):
        """collStats of this collection: pages it holds plus its indexes (the SQLite file itself
        never shrinks after a drop, so its size would count earlier datasets too)."""
        stats = self.db.command("collStats", self.namespace)
        total = stats.get("totalSize", stats.get("storageSize", 0) + stats.get("totalIndexSize", 0))
        return DiskUsage(int(total), "collStats totalSize (collection storage + indexes)")

    def close(self):
        self.client.close()

    def client_config(self):
        import bson

        def yes(flag):
            return "yes" if flag else "NO (pure Python)"
        return (f"pymongo {pymongo.version}: C extensions: pymongo {yes(pymongo.has_c())}, "
                f"bson {yes(bson.has_c())}")

    def system_version(self):
        info = self.client.admin.command("buildInfo")
        ferret = info.get("ferretdbVersion") or (info.get("ferretdb") or {}).get("version")
        if ferret:
            added = ", _id lookup index added" if self.lookup_index else ""
            return f"MongoDB API (FerretDB {ferret}, {self._ferretdb_backend()} backend{added})"
        return f"MongoDB {info.get('version')}"

    def _ferretdb_backend(self) -> str:
        """'SQLite 3.46.0' from FerretDB's startup warning (there once it has opened its backend),
        else the backend the local service names."""
        for line in self.client.admin.command("getLog", "startupWarnings").get("log", []):
            found = re.search(r"Powered by FerretDB \S+ and (\w+) (\d[\w.]*\d)", str(line))
            if found:
                return f"{found[1]} {found[2]}"
        return self.endpoint.get("backend") or "unknown"


class MongoDBConcurrentStore(MongoDBStore):
    """A batch is ``parallel`` single ``find_one`` requests in flight at once (what a client does
    when ``$in`` is slow; each hits the ``_id`` index)."""

    name = "mongodb-api-concurrent"
    capabilities = Capabilities(native_multi_get=False, full_scan=True, in_memory_only=False,
                                concurrent_multi_get=True, has_server=True)

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None, parallel: int = 16,
                 timeout: float = 60.0, lookup_index: bool = True):
        super().__init__(endpoint, namespace, service, timeout, lookup_index)
        self.parallel = parallel
        self.pool = ThreadPoolExecutor(parallel, thread_name_prefix="mongo-find")

    def get_many(self, keys):
        return list(self.pool.map(self.get, keys))

    def close(self):
        self.pool.shutdown()
        super().close()
