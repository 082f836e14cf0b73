"""S3 on MinIO (or any S3 endpoint): one object per key in a bucket.

S3 has no multi-object read, so a batch is parallel GETs over a connection pool sized for
them (``parallel`` requests in flight; the seed fetched one object at a time).
"""
from __future__ import annotations

import io
import re
from concurrent.futures import ThreadPoolExecutor

import urllib3
from minio import Minio
from minio.error import S3Error

from .base import Capabilities, DiskUsage, ServerStore, StoreConnectionError, check_key


def _name(key) -> str:
    return f"{check_key(key):012d}"


class MinioStore(ServerStore):
    name = "minio"
    capabilities = Capabilities(native_multi_get=False, full_scan=False, in_memory_only=False,
                                concurrent_multi_get=True, has_server=True)
    client_package = "minio"
    service = "minio"

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None, parallel: int = 16):
        super().__init__(endpoint, namespace, service)
        self.bucket = "sb-" + re.sub(r"[^a-z0-9-]", "-", namespace.lower())  # S3 names: 3-63 chars, [a-z0-9-]
        self.parallel = parallel
        pool = urllib3.PoolManager(maxsize=parallel, timeout=urllib3.Timeout(connect=5, read=60),
                                   retries=urllib3.Retry(total=0))
        self.client = Minio(f"{endpoint['host']}:{endpoint['port']}", access_key=endpoint["access_key"],
                            secret_key=endpoint["secret_key"], secure=endpoint.get("secure", False),
                            region=endpoint.get("region", "us-east-1"), http_client=pool)
        self.pool = ThreadPoolExecutor(parallel, thread_name_prefix="s3-get")
        try:
            if not self.client.bucket_exists(self.bucket):  # also proves the credentials work
                self.client.make_bucket(self.bucket)
        except S3Error as error:
            if error.code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"):
                raise StoreConnectionError(f"minio at {endpoint['host']}:{endpoint['port']}: authentication failed "
                                           f"({error.code}); check access_key/secret_key") from None
            raise
        except urllib3.exceptions.HTTPError as error:
            raise StoreConnectionError(f"minio at {endpoint['host']}:{endpoint['port']}: cannot connect ({error})") from None

    def put_many(self, items):
        def put(item):
            key, value = item
            self.client.put_object(self.bucket, _name(key), io.BytesIO(value), len(value))
        list(self.pool.map(put, list(items)))

    def get(self, key):
        try:
            response = self.client.get_object(self.bucket, _name(key))
        except S3Error as error:
            if error.code == "NoSuchKey":
                raise KeyError(key) from None
            raise
        try:
            return response.read()
        finally:
            response.close()
            response.release_conn()

    def get_many(self, keys):
        return list(self.pool.map(self.get, keys))

    def scan(self):
        keys = sorted(int(o.object_name) for o in self.client.list_objects(self.bucket))
        yield from zip(keys, self.get_many(keys))

    def clear(self):
        from minio.deleteobjects import DeleteObject

        names = [DeleteObject(o.object_name) for o in self.client.list_objects(self.bucket)]
        for error in self.client.remove_objects(self.bucket, names):
            raise RuntimeError(f"minio: could not delete {error.name}: {error.message}")

    def files(self):
        return [p for p in (self.root / self.bucket).rglob("*") if p.is_file()] if self.root is not None else super().files()

    def disk_usage(self):
        if self.root is not None:
            return DiskUsage(sum(p.stat().st_blocks * 512 for p in self.files()),
                             "allocated blocks of the bucket's directory in MinIO's data dir (objects + xl.meta)")
        total = sum(o.size for o in self.client.list_objects(self.bucket))
        return DiskUsage(total, "sum of object sizes from S3 ListObjects")

    def close(self):
        self.pool.shutdown()

    def system_version(self):
        if self.local is not None:
            return f"MinIO {self.local.version()}"
        return "S3 endpoint (version not reported by S3)"
