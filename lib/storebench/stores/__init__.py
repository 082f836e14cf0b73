"""Storage systems behind one interface, found by name in a registry.

Add a system by writing a module with a ``Store``/``ArrayStore`` subclass and registering
it here (or by dotted path: ``get_store_class("mypkg.mod:MyStore")``).
"""
from __future__ import annotations

import importlib

from storebench.stores.base import ArrayStore, Capabilities, DiskUsage, Store

# name -> "module:Class"; imported lazily so a missing optional client does not break the rest
STORES: dict[str, str] = {
    "localfs": "storebench.stores.localfs:LocalFSStore",
    "rocksdb": "storebench.stores.rocksdb:RocksDBStore",
    "tiledb": "storebench.stores.tiledb:TileDBStore",
    "tiledb-array": "storebench.stores.tiledb:TileDBArrayStore",
    "tensorstore": "storebench.stores.tensorstore:TensorStoreKvStore",
    "tensorstore-zarr": "storebench.stores.tensorstore:TensorStoreZarrStore",
    "redis": "storebench.stores.redis:RedisStore",
    "mongodb-api": "storebench.stores.mongodb:MongoDBStore",
    "mongodb-api-concurrent": "storebench.stores.mongodb:MongoDBConcurrentStore",
    "cassandra": "storebench.stores.cassandra:CassandraStore",
    "cassandra-async": "storebench.stores.cassandra:CassandraAsyncStore",
    "minio": "storebench.stores.s3:MinioStore",  # S3 stores: server + client (minio-py or obstore)
    "minio-obstore": "storebench.stores.s3:MinioObstoreStore",
    "rgw": "storebench.stores.s3:RgwStore",
    "rgw-obstore": "storebench.stores.s3:RgwObstoreStore",
    "ceph": "storebench.stores.ceph:CephStore",
}


def get_store_class(name: str):
    target = STORES.get(name, name if ":" in name else None)
    if target is None:
        raise ValueError(f"unknown store {name!r}; valid stores: {', '.join(sorted(STORES))}")
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


def open_store(name: str, root, **options):
    return get_store_class(name)(root, **options)


__all__ = ["ArrayStore", "Capabilities", "DiskUsage", "STORES", "Store", "get_store_class", "open_store"]
