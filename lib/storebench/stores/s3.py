"""S3: one object per key in a bucket, on MinIO or Ceph RGW, through one of two clients.

S3 has no multi-object read, so a batch is parallel GETs (``parallel`` requests in flight;
the seed fetched one object at a time). The client is part of what an S3 number measures:
on a small machine its CPU per GET decides the rate, so each server is registered with two
clients, each in the configuration its maintainers recommend for speed:
``minio``/``rgw`` (minio-py, the paper's client) and ``minio-obstore``/``rgw-obstore``
(obstore: Python bindings of Rust's object_store). Buckets are made with minio-py either way
(obstore has no bucket API).
"""
from __future__ import annotations

import io
import re
from datetime import timedelta
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import ClassVar

import urllib3
from minio import Minio
from minio.error import InvalidResponseError, S3Error, ServerError

from storebench.stores.base import Capabilities, DiskUsage, ServerStore, StoreConnectionError, check_key, package_version


def _name(key) -> str:
    return f"{check_key(key):012d}"


def minio_client(endpoint: dict, parallel: int) -> Minio:
    pool = urllib3.PoolManager(maxsize=parallel, timeout=urllib3.Timeout(connect=5, read=60),
                               retries=urllib3.Retry(total=0))
    return Minio(f"{endpoint['host']}:{endpoint['port']}", access_key=endpoint["access_key"],
                 secret_key=endpoint["secret_key"], secure=endpoint.get("secure", False),
                 region=endpoint.get("region", "us-east-1"), http_client=pool)


class MinioPyClient:
    """minio-py: urllib3 connection pool of ``parallel``, one blocking call per object."""

    package = "minio"

    def __init__(self, endpoint: dict, bucket: str, parallel: int, admin: Minio):
        self.client, self.bucket, self.parallel = admin, bucket, parallel

    def put(self, name: str, value: bytes) -> None:
        self.client.put_object(self.bucket, name, io.BytesIO(value), len(value))

    def get(self, name: str) -> bytes:
        try:
            response = self.client.get_object(self.bucket, name)
        except S3Error as error:
            if error.code == "NoSuchKey":
                raise KeyError(name) from None
            raise
        try:
            return response.read()
        finally:
            response.close()
            response.release_conn()

    def names(self) -> list[str]:
        return [o.object_name for o in self.client.list_objects(self.bucket)]

    def delete(self, names: list[str]) -> None:
        from minio.deleteobjects import DeleteObject

        for error in self.client.remove_objects(self.bucket, [DeleteObject(n) for n in names]):
            raise RuntimeError(f"S3 (minio-py): could not delete {error.name}: {error.message}")

    def describe(self) -> str:
        return (f"minio-py {package_version('minio')}: urllib3 pool of {self.parallel} connections, "
                f"{self.parallel} threads in flight")


class ObstoreClient:
    """obstore's sync API, called from the store's ``parallel`` threads.

    Measured here (RGW, 2 cores, 1 KiB objects, batches of 256, 16 in flight): the sync API in
    16 threads reached 1.0-1.1x the objects/s of its asyncio API (16 tasks in flight) at 0.2 vs
    0.37 ms of client CPU per GET: each sync call releases the GIL while the Rust runtime does
    the request, and no Python event loop has to run (SERVICES.md found the same on MinIO).
    """

    package = "obstore"

    def __init__(self, endpoint: dict, bucket: str, parallel: int, admin: Minio):
        from obstore.store import S3Store as ObjectStore

        scheme = "https" if endpoint.get("secure", False) else "http"
        self.parallel = parallel
        self.store = ObjectStore(
            bucket, endpoint=f"{scheme}://{endpoint['host']}:{endpoint['port']}",
            access_key_id=endpoint["access_key"], secret_access_key=endpoint["secret_key"],
            region=endpoint.get("region", "us-east-1"), virtual_hosted_style_request=False,
            client_options={"allow_http": scheme == "http", "pool_max_idle_per_host": str(parallel),
                            "connect_timeout": "5s", "timeout": "60s"},
            retry_config={"max_retries": 0, "retry_timeout": timedelta(seconds=60)})  # as minio-py's: no retries

    def put(self, name: str, value: bytes) -> None:
        import obstore

        obstore.put(self.store, name, value)

    def get(self, name: str) -> bytes:
        import obstore
        from obstore.exceptions import NotFoundError

        try:
            return obstore.get(self.store, name).bytes().to_bytes()
        except (FileNotFoundError, NotFoundError):  # obstore raises either, by version
            raise KeyError(name) from None

    def names(self) -> list[str]:
        import obstore

        return [meta["path"] for chunk in obstore.list(self.store) for meta in chunk]

    def delete(self, names: list[str]) -> None:
        import obstore

        for i in range(0, len(names), 1000):
            obstore.delete(self.store, names[i:i + 1000])

    def describe(self) -> str:
        return (f"obstore {package_version('obstore')} (Rust object_store): sync API, "
                f"{self.parallel} threads in flight")


class S3Store(ServerStore):
    """The bucket ``sb-<namespace>`` on an S3 server, read through ``client_class``."""

    capabilities = Capabilities(native_multi_get=False, full_scan=False, in_memory_only=False,
                                concurrent_multi_get=True, has_server=True)
    client_class: ClassVar[type] = MinioPyClient
    server_name: ClassVar[str] = "S3"

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None, parallel: int = 16):
        super().__init__(endpoint, namespace, service)
        self.bucket = "sb-" + re.sub(r"[^a-z0-9-]", "-", namespace.lower())  # S3 names: 3-63 chars, [a-z0-9-]
        self.parallel = parallel
        self.admin = minio_client(endpoint, parallel)
        self._make_bucket()
        self.client = self.client_class(endpoint, self.bucket, parallel, self.admin)
        self.pool = ThreadPoolExecutor(parallel, thread_name_prefix="s3-get")

    def _make_bucket(self) -> None:
        where = f"{self.name} at {self.endpoint['host']}:{self.endpoint['port']}"
        try:
            if not self.admin.bucket_exists(self.bucket):  # also proves the credentials work
                self.admin.make_bucket(self.bucket)
        except S3Error as error:
            if error.code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"):
                raise StoreConnectionError(f"{where}: authentication failed ({error.code}); "
                                           "check access_key/secret_key") from None
            raise StoreConnectionError(f"{where}: cannot use bucket {self.bucket} ({error.code}: {error.message})") \
                from error
        except urllib3.exceptions.HTTPError as error:
            raise StoreConnectionError(f"{where}: cannot connect ({error})") from None

    def put_many(self, items):
        list(self.pool.map(lambda item: self.client.put(_name(item[0]), item[1]), list(items)))

    def get(self, key):
        try:
            return self.client.get(_name(key))
        except KeyError:
            raise KeyError(key) from None
        except (InvalidResponseError, ServerError, S3Error) as error:
            # a 503 from a server shutting down, or its S3 error code for the GET in flight (MinIO answers
            # ClientDisconnected as it stops): named with the server, which the client's own error leaves out
            raise ConnectionError(f"{self.name} at {self.endpoint['host']}:{self.endpoint['port']}: the server "
                                  f"failed the request ({type(error).__name__}: {error})") from error

    def get_many(self, keys):
        return list(self.pool.map(self.get, keys))

    def scan(self):
        keys = sorted(int(name) for name in self.client.names())
        yield from zip(keys, self.get_many(keys))

    def clear(self):
        self.client.delete(self.client.names())

    def disk_usage(self):
        total = sum(o.size for o in self.admin.list_objects(self.bucket))
        return DiskUsage(total, "sum of object sizes from S3 ListObjects")

    def close(self):
        self.pool.shutdown()

    def client_config(self) -> str:
        return self.client.describe()

    def system_version(self):
        if self.local is not None:
            return f"{self.server_name} {self.local.version()}"
        return "S3 endpoint (version not reported by S3)"


class MinioStore(S3Store):
    name = "minio"
    client_package = "minio"
    service = "minio"
    server_name = "MinIO"

    def files(self):
        return [p for p in (self.root / self.bucket).rglob("*") if p.is_file()] if self.root is not None else super().files()

    def disk_usage(self):
        if self.root is not None:
            return DiskUsage(sum(p.stat().st_blocks * 512 for p in self.files()),
                             "allocated blocks of the bucket's directory in MinIO's data dir (objects + xl.meta)")
        return super().disk_usage()


class MinioObstoreStore(MinioStore):
    name = "minio-obstore"
    client_package = "obstore"
    client_class = ObstoreClient


class RgwStore(S3Store):
    name = "rgw"
    client_package = "minio"
    service = "rgw"
    server_name = "Ceph RGW"

    def files(self):
        """The files of RGW's Ceph cluster (bluestore's block file at disk): what page-cache eviction needs."""
        if self.local is None:
            return super().files()
        return [p for p in Path(self.local.ceph.data_dir).rglob("*") if p.is_file()]

    def disk_usage(self):
        if self.local is not None:
            return DiskUsage(self.local.bucket_usage(self.bucket),
                             "RGW bucket stats size_actual (object sizes rounded up to 4 KiB; radosgw-admin)")
        return super().disk_usage()


class RgwObstoreStore(RgwStore):
    name = "rgw-obstore"
    client_package = "obstore"
    client_class = ObstoreClient
