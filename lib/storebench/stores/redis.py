"""Redis, in the seed's layout: one hash per dataset, a field per object.

``get_many`` is HMGET (the seed's batch read, Table 3). Alternatives, for comparison:
``read="pipeline"`` sends one HGET per key in one pipeline (one round trip, per-key
commands), and ``layout="keys"`` stores plain keys read with MGET (no hash: each object is a
top-level key, which Redis Cluster could spread across shards; a hash cannot be split).

``parser``: how redis-py parses replies. "default" is what redis-py picks: the hiredis C parser
when the ``hiredis`` package is installed (redis-py's recommendation for speed; env/requirements.in
installs it), else its pure-Python parser; "hiredis" and "python" force one (for the comparison
in storebench.experiments.dl_storage_benchmarking.clients).

Reads (HMGET, MGET) go over a connection the store holds for each thread (and process), with
redis-py's ``send_command`` and ``read_response``: ``Redis.hmget`` takes a connection from the pool
and gives it back on every call, which cost a third of the rate at Redis's speed (0.70x
``redis-benchmark`` for one-field HMGETs over one connection, 0.99x without it: the calibration
report). One handle is thread-safe: each reading thread gets its own connection.
"""
from __future__ import annotations

import os
import threading

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis._parsers import _HiredisParser, _RESP2Parser
from redis.utils import HIREDIS_AVAILABLE

from storebench.stores.base import (Capabilities, DiskUsage, ServerStore, StoreConnectionError, check_key, check_keys,
                                    package_version)

PARSERS = {"hiredis": _HiredisParser, "python": _RESP2Parser}


class RedisStore(ServerStore):
    name = "redis"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=True, has_server=True)
    client_package = "redis"
    service = "redis"

    def __init__(self, endpoint: dict, namespace: str = "storebench", read: str = "hmget", layout: str = "hash",
                 service=None, timeout: float = 60.0, parser: str = "default"):
        super().__init__(endpoint, namespace, service)
        if read not in ("hmget", "pipeline") or layout not in ("hash", "keys"):
            raise ValueError("RedisStore: read must be 'hmget' or 'pipeline', layout 'hash' or 'keys'")
        if parser not in ("default", *PARSERS):
            raise ValueError(f"RedisStore: parser must be 'default', 'hiredis' or 'python', got {parser!r}")
        if parser == "hiredis" and not HIREDIS_AVAILABLE:
            raise ValueError("RedisStore: parser 'hiredis' needs the hiredis package (env/requirements.in)")
        self.read, self.layout, self.timeout = read, layout, timeout
        self._local, self._readers, self._readers_lock = threading.local(), [], threading.Lock()
        # Each request gives up after ``timeout`` s, and is not retried: a retry would hide the fault.
        options = dict(socket_timeout=timeout, socket_connect_timeout=min(timeout, 10.0), retry=Retry(NoBackoff(), 0))
        self.client = redis.Redis.from_url(endpoint["url"], **options) if "url" in endpoint else redis.Redis(
            host=endpoint["host"], port=endpoint["port"], password=endpoint.get("password"), **options)
        if parser in PARSERS:  # before the first connection is made
            self.client.connection_pool.connection_kwargs["parser_class"] = PARSERS[parser]
        try:
            self.client.ping()  # fail here, clearly, on a wrong password or a dead server
        except redis.AuthenticationError as error:
            raise StoreConnectionError(f"redis at {self._where()}: authentication failed ({error}); "
                                       "check the password in the endpoint") from None
        except redis.ConnectionError as error:
            raise StoreConnectionError(f"redis at {self._where()}: cannot connect ({error})") from None

    def _where(self) -> str:
        ep = self.endpoint
        return ep.get("url", "").split("@")[-1] or f"{ep.get('host')}:{ep.get('port')}"

    def _field(self, key) -> str:
        return str(check_key(key))

    def _plain(self, key) -> str:
        return f"{self.namespace}:{check_key(key)}"

    def put_many(self, items):
        pipe = self.client.pipeline(transaction=False)
        for i, (key, value) in enumerate(items, 1):
            if self.layout == "hash":
                pipe.hset(self.namespace, self._field(key), value)
            else:
                pipe.set(self._plain(key), value)
            if i % 1000 == 0:
                pipe.execute()
        pipe.execute()

    def get(self, key):
        value = (self.client.hget(self.namespace, self._field(key)) if self.layout == "hash"
                 else self.client.get(self._plain(key)))
        if value is None:
            raise KeyError(key)
        return value

    def get_many(self, keys):
        if self.layout == "keys":
            values = self._command("MGET", *[f"{self.namespace}:{k}" for k in check_keys(keys)])
        elif self.read == "pipeline":
            pipe = self.client.pipeline(transaction=False)
            for k in keys:
                pipe.hget(self.namespace, self._field(k))
            values = pipe.execute()
        else:
            values = self._command("HMGET", self.namespace, *map(str, check_keys(keys)))
        return self._all_found(keys, values)

    def _command(self, *args):
        """One command on this thread's read connection (a new one in a new thread or forked worker)."""
        reader = self._thread_reader()
        try:
            reader.send_command(*args)
            return reader.read_response()
        except BaseException:
            reader.disconnect()  # a half-read reply would answer the next command
            raise

    def _thread_reader(self):
        pid = os.getpid()
        if getattr(self._local, "pid", None) != pid:
            self._local.reader, self._local.pid = self.client.connection_pool.make_connection(), pid
            with self._readers_lock:
                self._readers.append((pid, self._local.reader))
        return self._local.reader

    def scan(self):
        if self.layout == "hash":
            everything = self.client.hgetall(self.namespace)  # the seed's "full set" request
            for key in sorted(int(f) for f in everything):
                yield key, everything[str(key).encode()]
        else:
            keys = sorted(int(k.rsplit(b":", 1)[1]) for k in self.client.scan_iter(f"{self.namespace}:*"))
            yield from zip(keys, self.get_many(keys)) if keys else ()

    def clear(self):
        if self.layout == "hash":
            self.client.delete(self.namespace)
        else:
            for chunk in _chunks(list(self.client.scan_iter(f"{self.namespace}:*")), 1000):
                self.client.delete(*chunk)

    def disk_usage(self):
        if self.layout == "hash":
            used = self.client.memory_usage(self.namespace, samples=0) or 0
            return DiskUsage(int(used), "Redis MEMORY USAGE of the dataset's hash (RAM; Redis keeps data in memory)")
        used = sum(self.client.memory_usage(k, samples=0) or 0 for k in self.client.scan_iter(f"{self.namespace}:*"))
        return DiskUsage(int(used), "sum of Redis MEMORY USAGE over the dataset's keys (RAM)")

    def close(self):
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for pid, reader in readers:
            if pid == os.getpid():  # a forked worker's copies are its own to close
                reader.disconnect()
        self._local = threading.local()
        self.client.close()

    def client_config(self):
        connection = self.client.connection_pool.get_connection()
        try:
            parser = type(connection._parser)
        finally:
            self.client.connection_pool.release(connection)
        how = (f"hiredis {package_version('hiredis')} C reply parser" if parser is _HiredisParser
               else f"pure-Python reply parser ({parser.__name__})")
        return f"redis-py {package_version('redis')} + {how}"

    def system_version(self):
        return f"Redis {self.client.info('server')['redis_version']}"


def _chunks(items, size):
    for i in range(0, len(items), size):
        yield items[i:i + size]
