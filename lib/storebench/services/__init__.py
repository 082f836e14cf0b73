"""Real servers run locally for the benchmarks: Redis, Cassandra, MinIO, FerretDB, Ceph, Ceph RGW.

    from storebench.services import local_service
    with local_service("redis", workdir, "memory") as svc:
        ep = svc.endpoint()        # host, port, password, ...

Install them first with ``env/servers/install-all.sh``. CLI:
``python -m storebench.services {start,stop,status,version} SYSTEM [--location memory|disk]``.
"""
from __future__ import annotations

from pathlib import Path

from storebench.paths import services_dir
from storebench.services.base import LocalService, ServiceError
from storebench.services.cassandra import CassandraService
from storebench.services.ceph import CephService
from storebench.services.ferretdb import FerretDBService
from storebench.services.minio import MinioService
from storebench.services.redis import RedisService
from storebench.services.rgw import RgwService
from storebench.services.toxiproxy import ToxiproxyAPI, ToxiproxyService

LOCAL_SERVICES: dict[str, type[LocalService]] = {
    "redis": RedisService,
    "cassandra": CassandraService,
    "minio": MinioService,
    "mongodb-ferretdb": FerretDBService,
    "ceph": CephService,
    "rgw": RgwService,  # S3 on its own Ceph
}

# Not storage systems: what sits between a client and a server (storebench.testbed.netprofiles).
NETWORK_SERVICES: dict[str, type[LocalService]] = {"toxiproxy": ToxiproxyService}

# Names also accepted by local_service() (and the CLI) for convenience.
ALIASES = {"ferretdb": "mongodb-ferretdb", "mongodb": "mongodb-ferretdb", "rados": "ceph", "s3": "minio", "radosgw": "rgw"}


def local_service(system: str, workdir: Path | str | None = None, location: str = "disk",
                  port: int | None = None, host: str = "127.0.0.1", netns: str | None = None) -> LocalService:
    """A (not yet started) LocalService for ``system``; ``workdir`` defaults to
    ``<repo>/work/services`` (``$STOREBENCH_WORK/services``). ``host``/``netns``: bind that
    address inside that network namespace (see storebench.testbed.netns) instead of 127.0.0.1 here."""
    name = ALIASES.get(system, system)
    known = {**LOCAL_SERVICES, **NETWORK_SERVICES}
    if name not in known:
        raise ValueError(f"unknown local service {system!r}; valid: {', '.join(known)}")
    workdir = Path(workdir) if workdir is not None else services_dir()
    return known[name](workdir, location, port, host=host, netns=netns)


__all__ = ["LOCAL_SERVICES", "NETWORK_SERVICES", "LocalService", "ServiceError", "local_service",
           "RedisService", "CassandraService", "MinioService", "FerretDBService", "CephService", "RgwService",
           "ToxiproxyAPI", "ToxiproxyService"]
