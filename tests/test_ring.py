"""A real two-node Cassandra ring on this machine: the second node joins (bootstrap) and leaves
(decommission) while every row written stays readable and intact; no JVM is left behind."""
import os
import uuid

import psutil
import pytest
from cassandra.cluster import Cluster
from cassandra.concurrent import execute_concurrent_with_args

from storebench.experiments.cassandra_dl.ring import FIRST, SECOND, Ring

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.


def cassandra_jvms() -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"]) if "org.apache.cassandra.service.CassandraDaemon"
            in (p.info["cmdline"] or [])]


def read_all(session, rows: dict) -> bool:
    select = session.prepare("SELECT v FROM ringtest.d WHERE id = ?")
    results = execute_concurrent_with_args(session, select, [(k,) for k in rows], concurrency=64)
    return all(r.success and r.result_or_exc.one().v == rows[k] for r, k in zip(results, rows))


@pytest.mark.server
@pytest.mark.usefixtures("default_ports_free")
def test_a_node_joins_and_leaves_with_every_row_intact(tmp_path):
    before = cassandra_jvms()
    with Ring(tmp_path / "ring") as ring:
        cluster = Cluster([FIRST], port=ring.first.port, protocol_version=5)  # moved by STOREBENCH_PORT_OFFSET
        session = cluster.connect()
        session.execute("CREATE KEYSPACE ringtest WITH replication = {'class': 'SimpleStrategy', "
                        "'replication_factor': 1}")
        session.execute("CREATE TABLE ringtest.d (id uuid PRIMARY KEY, v blob)")
        rows = {uuid.uuid4(): os.urandom(1000) for _ in range(500)}
        insert = session.prepare("INSERT INTO ringtest.d (id, v) VALUES (?, ?)")
        execute_concurrent_with_args(session, insert, list(rows.items()), concurrency=64)
        ring.join()
        assert ring.status() == {FIRST: "UN", SECOND: "UN"} and read_all(session, rows)
        owned = ring.first.nodetool("status", "ringtest")
        assert owned.count("%") >= 2   # both nodes own a share of the keyspace's ranges
        ring.leave()
        assert ring.status() == {FIRST: "UN"} and read_all(session, rows)
        cluster.shutdown()
    assert cassandra_jvms() == before


def test_table_histograms_are_parsed_to_read_latency_percentiles():
    from storebench.services.cassandra import parse_table_histograms

    text = """ks/t histograms
Percentile      Read Latency     Write Latency          SSTables    Partition Size        Cell Count
50%                    86.00             50.00              0.00               NaN               NaN
95%                   310.00            179.00              0.00               NaN               NaN
99%                 17084.00           8239.00              0.00               NaN               NaN
Min                    25.00             21.00              0.00               NaN               NaN
Max                 73457.00          35425.00              0.00               NaN               NaN
"""
    assert parse_table_histograms(text) == {"p50": 86.0, "p95": 310.0, "p99": 17084.0, "min": 25.0, "max": 73457.0}
    with pytest.raises(ValueError, match="no read latency percentiles"):
        parse_table_histograms("nodetool: Unknown keyspace/table ks.t")
