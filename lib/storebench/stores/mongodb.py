"""The MongoDB wire protocol: one document per object, the bytes in a binary field.

``get_many`` is ``find({"_id": {"$in": keys}})`` (the seed's batch read, Table 3). Locally the
server is FerretDB (MongoDB API over SQLite), because no real mongod is obtainable offline;
results say so ("MongoDB API (FerretDB ..., SQLite)"). An endpoint URI to a real mongod works
unchanged and is then reported as MongoDB.

``_id`` is the key as a 12-digit string: FerretDB 1.24's SQLite backend answers every query
with a full table scan (its plans show ``SCAN``, indexes or not), and comparing strings in that
scan is ~10x cheaper than comparing numbers. A real mongod uses its ``_id`` index either way.
"""
from __future__ import annotations

import pymongo
import pymongo.errors
from bson import Binary

from .base import Capabilities, DiskUsage, ServerStore, StoreConnectionError, check_key


def _id(key) -> str:
    return f"{check_key(key):012d}"


class MongoDBStore(ServerStore):
    name = "mongodb-api"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=False, has_server=True)
    client_package = "pymongo"
    service = "mongodb-ferretdb"

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None):
        super().__init__(endpoint, namespace, service)
        self.client = pymongo.MongoClient(endpoint["uri"], serverSelectionTimeoutMS=10_000)
        self.db = self.client[endpoint.get("database", "storebench")]
        self.collection = self.db[namespace]
        try:
            self.client.admin.command("ping")
        except pymongo.errors.OperationFailure as error:
            raise StoreConnectionError(f"{self.name} at {endpoint['uri'].split('@')[-1]}: authentication failed "
                                       f"({error}); check the credentials in the URI") from None
        except pymongo.errors.ConnectionFailure as error:
            raise StoreConnectionError(f"{self.name} at {endpoint['uri'].split('@')[-1]}: cannot connect ({error})") from None

    def put_many(self, items):
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

    def disk_usage(self):
        """collStats of this collection: pages it holds plus its indexes (the SQLite file itself
        never shrinks after a drop, so its size would count earlier datasets too)."""
        stats = self.db.command("collStats", self.namespace)
        total = stats.get("totalSize", stats.get("storageSize", 0) + stats.get("totalIndexSize", 0))
        return DiskUsage(int(total), "collStats totalSize (collection storage + indexes)")

    def close(self):
        self.client.close()

    def system_version(self):
        info = self.client.admin.command("buildInfo")
        ferret = info.get("ferretdbVersion") or (info.get("ferretdb") or {}).get("version")
        if ferret:
            backend = "SQLite" if self.local is not None or "sqlite" in str(info).lower() else "unknown backend"
            return f"MongoDB API (FerretDB {ferret}, {backend})"
        return f"MongoDB {info.get('version')}"
