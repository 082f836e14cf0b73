"""Apache Cassandra: one row per object in ``(id bigint PRIMARY KEY, value blob)``.

Two batch reads, which behave very differently and are registered as two systems:
- ``cassandra``: ``SELECT ... WHERE id IN ?`` (the seed's, Table 3): one request, but the
  coordinator fans it out to each partition and answers when the slowest is done;
- ``cassandra-async``: one prepared single-partition SELECT per key, all in flight at once
  (``execute_concurrent``), the approach the driver's authors recommend.
The table's compression setting is part of the system version string.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

from cassandra.cluster import NoHostAvailable
from cassandra.concurrent import execute_concurrent_with_args

from storebench.stores.cassandra_session import connect
from storebench.stores.base import Capabilities, DiskUsage, ServerStore, check_key, package_version


class CassandraStore(ServerStore):
    name = "cassandra"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=False, has_server=True)
    client_package = "cassandra-driver"
    service = "cassandra"
    concurrency = 0  # 0: WHERE id IN ?; >0: that many single-key reads in flight

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None,
                 compression: str = "LZ4Compressor", keyspace: str = "storebench"):
        super().__init__(endpoint, namespace, service)
        self.table, self.keyspace, self.compression = namespace.replace("-", "_"), keyspace, compression
        self.cluster, self.session = connect(endpoint)
        self._create()

    def _create(self):
        self.session.execute(f"CREATE KEYSPACE IF NOT EXISTS {self.keyspace} WITH replication = "
                             "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        compression = f"{{'class': '{self.compression}'}}" if self.compression else "{'enabled': 'false'}"
        self.session.execute(f"CREATE TABLE IF NOT EXISTS {self.keyspace}.{self.table} "
                             f"(id bigint PRIMARY KEY, value blob) WITH compression = {compression}")
        q = f"{self.keyspace}.{self.table}"
        self.insert = self.session.prepare(f"INSERT INTO {q} (id, value) VALUES (?, ?)")
        self.select_one = self.session.prepare(f"SELECT value FROM {q} WHERE id = ?")
        self.select_in = self.session.prepare(f"SELECT id, value FROM {q} WHERE id IN ?")
        self.select_all = f"SELECT id, value FROM {q}"

    def put_many(self, items):
        """Writes in flight bounded in count (64) and in bytes (4 MiB): the driver refuses a request while its
        connection's socket is full (ConnectionBusy), which 512 objects of 256 MNIST samples (118 MB) at once
        did; should it still happen, the batch is written again after a pause (INSERTs overwrite)."""
        from storebench.stores.cassandra_model import ConcurrentWrites

        rows = [(check_key(k), v) for k, v in items]
        for attempt in range(5):
            try:
                with self._node_answers():
                    ConcurrentWrites(self.session, ((self.insert, row, len(row[1])) for row in rows), requests=64,
                                     max_bytes=4 << 20, where=self.name).run()
                return
            except RuntimeError as error:
                if "ConnectionBusy" not in str(error) or attempt == 4:
                    raise
                time.sleep(0.5 * 2 ** attempt)

    @contextmanager
    def _node_answers(self):
        """The driver's NoHostAvailable (often with no detail: it had already marked the node down) as
        a ConnectionError that says which node was lost."""
        try:
            yield
        except NoHostAvailable as error:
            nodes = ", ".join(self.endpoint.get("contact_points", [])) or self.endpoint.get("host", "?")
            detail = "; ".join(f"{host}: {why}" for host, why in error.errors.items()) or "the driver marked it down"
            raise ConnectionError(f"cassandra at {nodes}:{self.endpoint.get('port', '?')}: no node answered; the "
                                  f"connection to the node was lost, reset or refused ({detail})") from None

    def get(self, key):
        with self._node_answers():
            row = self.session.execute(self.select_one, (check_key(key),)).one()
        if row is None:
            raise KeyError(key)
        return row.value

    def get_many(self, keys):
        ids = [check_key(k) for k in keys]
        with self._node_answers():
            values = self._read(ids)
        return self._all_found(keys, values)

    def _read(self, ids: list[int]) -> list:
        if self.concurrency:
            results = execute_concurrent_with_args(self.session, self.select_one, [(i,) for i in ids],
                                                   concurrency=self.concurrency, raise_on_first_error=True)
            rows = [result.one() for _, result in results]
            return [row.value if row is not None else None for row in rows]
        found = {row.id: row.value for row in self.session.execute(self.select_in, (ids,))}
        return [found.get(i) for i in ids]

    def scan(self):
        with self._node_answers():
            rows = {row.id: row.value for row in self.session.execute(self.select_all)}  # token order -> sort
        for key in sorted(rows):
            yield key, rows[key]

    def clear(self):
        self.session.execute(f"TRUNCATE {self.keyspace}.{self.table}")

    def flush(self):
        if self.local is not None:
            self.local.nodetool("flush", self.keyspace, self.table)

    def files(self):
        return [p for p in super().files() if f"/{self.keyspace}/" in str(p)]

    def disk_usage(self):
        if self.local is None:
            raise NotImplementedError("cassandra: disk usage of an external cluster needs nodetool on its nodes")
        self.flush()
        stats = self.local.nodetool("tablestats", f"{self.keyspace}.{self.table}")
        for line in stats.splitlines():
            if "Space used (live):" in line:
                return DiskUsage(int(line.split(":")[1].strip()),
                                 f"nodetool tablestats 'Space used (live)' after flush; compression {self.compression or 'off'}")
        raise RuntimeError(f"cassandra: no 'Space used (live)' in nodetool tablestats:\n{stats}")

    def close(self):
        self.cluster.shutdown()

    def client_config(self):
        """The driver's C extensions in use (its wheel ships them: libev reactor, Cython core, cmurmur3)."""
        import types

        import cassandra.cluster
        import cassandra.metadata
        from cassandra import protocol

        compiled = cassandra.cluster.__file__.endswith(".so")
        c_murmur = isinstance(cassandra.metadata.murmur3, types.BuiltinFunctionType)
        return (f"cassandra-driver {package_version('cassandra-driver')}: {self.cluster.connection_class.__name__} "
                f"reactor, C extensions: {'Cython-compiled core' if compiled else 'none (pure Python)'}, "
                f"{'Cython' if getattr(protocol, 'HAVE_CYTHON', False) else 'Python'} row parser, "
                f"murmur3 {'cmurmur3 (C)' if c_murmur else 'pure Python'}")

    def system_version(self):
        release = self.session.execute("SELECT release_version FROM system.local").one().release_version
        return f"Cassandra {release} (compression {self.compression or 'off'})"


class CassandraAsyncStore(CassandraStore):
    name = "cassandra-async"
    concurrency = 64
