"""Opening a system at a location: an embedded store in a directory, or a server store on an
endpoint that storebench starts itself (``local``) or that the user runs (external).

``endpoints`` (params.yaml) maps a service name to ``local`` or to an external endpoint:
    redis: redis://:PASSWORD@host:6379/0
    mongodb-ferretdb: mongodb://host:27017/         # any MongoDB-API server, e.g. a real mongod
    cassandra: {contact_points: [10.0.0.5], port: 9042, local_dc: dc1}
    minio: {host: s3.example, port: 443, secure: true, access_key: ..., secret_key: ...}
    ceph: {conffile: /etc/ceph/ceph.conf, keyring: /etc/ceph/ceph.client.admin.keyring, pool: bench}
Secrets may be given as ``${ENV_VAR}`` so they stay out of params.yaml.
"""
from __future__ import annotations

import os
import re
from contextlib import ExitStack, contextmanager
from pathlib import Path

from storebench.testbed.locations import COLD_LOCATIONS, check_location, store_root
from storebench.stores import get_store_class

SERVER_LOCATION = {"memory": "memory", "disk-warm": "disk", "disk-cold": "disk", "disk-cold-pagecache": "disk"}


class LocationNotSupported(Exception):
    pass


def service_location(location: str) -> str:
    return SERVER_LOCATION[check_location(location)]


def external_endpoint(service: str, spec) -> dict:
    """An endpoint dict for the store from a params.yaml value (URL string or mapping)."""
    if isinstance(spec, str):
        spec = _expand(spec)
        if service == "redis":
            return {"system": service, "url": spec}
        if service == "mongodb-ferretdb":
            return {"system": service, "uri": spec}
        raise ValueError(f"endpoint for {service} must be a mapping (see storebench.stores.systems), got {spec!r}")
    if not isinstance(spec, dict):
        raise ValueError(f"endpoint for {service} must be 'local', a URL or a mapping, got {spec!r}")
    return {"system": service, **{k: _expand(v) if isinstance(v, str) else v for k, v in spec.items()}}


def _expand(text: str) -> str:
    def lookup(match):
        name = match.group(1)
        if name not in os.environ:
            raise ValueError(f"endpoint refers to ${{{name}}}, which is not set in the environment")
        return os.environ[name]
    return re.sub(r"\$\{(\w+)\}", lookup, text)


def _release(svc) -> None:
    """Stop a pool's server; at location "memory" also free its data (tmpfs is RAM, and the pool's next
    start of it wipes the data anyway)."""
    if svc.location == "memory":
        svc.wipe()
    else:
        svc.stop()


class ServicePool:
    """Local servers started on demand, one per (service, location), stopped on close.
    With ``hop`` (a storebench.testbed.netns.NetworkHop) they run inside its namespace, bound to its
    server address, instead of on 127.0.0.1."""

    def __init__(self, endpoints: dict | None = None, workdir: Path | None = None, hop=None):
        self.endpoints = endpoints or {}
        self.workdir = workdir
        self.hop = hop
        self.running: dict[tuple[str, str], object] = {}
        self.stack = ExitStack()

    def endpoint(self, service: str, location: str):
        """(endpoint dict, LocalService or None) for ``service`` with data at ``location``."""
        spec = self.endpoints.get(service, "local")
        if spec != "local":
            return external_endpoint(service, spec), None
        from storebench.services import local_service

        where = service_location(location)
        for key, svc in list(self.running.items()):
            if key != (service, where):  # one server at a time: an idle one would disturb the others' timings
                _release(svc)
                del self.running[key]
        if (service, where) not in self.running:
            placed = {"host": self.hop.server_address, "netns": self.hop.namespace} if self.hop else {}
            svc = local_service(service, self.workdir, where, **placed)
            svc.wipe()  # experiments ingest afresh: never inherit a crashed or older run's server state
            self.stack.enter_context(svc)
            self.running[(service, where)] = svc
        svc = self.running[(service, where)]
        return svc.endpoint(), svc

    def close(self):
        self.stack.close()
        for svc in self.running.values():
            _release(svc)
        self.running.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@contextmanager
def open_system(system: str, location: str, services: ServicePool | None = None, namespace: str = "storebench",
                **options):
    """The store for ``system`` with its data at ``location``; closed (not emptied) afterwards."""
    cls = get_store_class(system)
    check_location(location)
    own = False
    if cls.capabilities.in_memory_only and location != "memory":
        raise LocationNotSupported(f"{system} keeps its data in memory only; it has no {location} location")
    if location == "disk-cold-pagecache" and not cls.capabilities.has_server:
        raise LocationNotSupported(f"{system}: disk-cold-pagecache is for servers (which keep their own caches); "
                                   "for an embedded store disk-cold already is exactly that (reopen + evict)")
    if not cls.capabilities.has_server:
        store = cls(store_root(system, location), **options)
    else:
        own = services is None
        services = services or ServicePool()
        try:
            endpoint, local = services.endpoint(cls.service, location)
            if local is None and location in COLD_LOCATIONS:
                raise LocationNotSupported(f"{system}: {location} needs the server's files on this machine "
                                           "(an external endpoint's page cache cannot be evicted from here)")
            store = cls(endpoint, namespace=namespace, service=local, **options)
        except BaseException:
            if own:
                services.close()
            raise
    try:
        yield store
    finally:
        store.close()
        if cls.capabilities.has_server and own:
            services.close()
