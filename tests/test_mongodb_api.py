"""The MongoDB API's two batch reads on real FerretDB, and the statement the report makes
about them (FerretDB's `$in` is a table scan; single finds use the `_id` index)."""
import re

import pytest

from storebench.experiments.dl_storage_benchmarking.access_pattern import analysis as ap
from storebench.pipeline import run
from storebench.stores import get_store_class

from conftest import value_for

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.


@pytest.mark.server
@pytest.mark.parametrize("name", ["mongodb-api", "mongodb-api-concurrent"])
def test_version_names_the_backend(name, servers):
    svc = servers.get("mongodb-ferretdb")
    with get_store_class(name)(svc.endpoint(), namespace=f"version-{name}", service=svc) as store:
        assert re.fullmatch(r"MongoDB API \(FerretDB v1\.\d+\.\d+, SQLite( \d[\d.]*)? backend, _id lookup index added\)",
                            store.system_version())
    assert svc.version().endswith("(SQLite backend)")


@pytest.mark.server
def test_concurrent_batch_is_single_finds_in_flight(servers):
    svc = servers.get("mongodb-ferretdb")
    store = get_store_class("mongodb-api-concurrent")(svc.endpoint(), namespace="concurrent", service=svc, parallel=4)
    try:
        store.put_many((k, value_for(k)) for k in range(40))
        keys = [39, 0, 7, 7, 21]
        assert store.get_many(keys) == [value_for(k) for k in keys]
        assert store.pool._max_workers == 4
    finally:
        store.clear()
        store.close()


@pytest.mark.server
def test_in_statement_is_computed_from_the_rows(prepared_mnist, servers, tmp_path):
    svc = servers.get("mongodb-ferretdb")
    tables = run.measure("access_pattern", "smoke", results_root=tmp_path, progress=False, overrides={
        "systems": ["mongodb-api", "mongodb-api-concurrent"], "locations": ["disk-warm"],
        "endpoints": {"mongodb-ferretdb": {k: v for k, v in svc.endpoint().items() if k != "system"}}})
    settings, rows = tables.settings, tables["access_pattern"]
    text = ap.mongodb_in_statement(rows)

    k_hi = max(settings["samples_per_request"])
    single = ap.per_request_seconds(rows, "mongodb-api", 1, "disk-warm")
    in_hi = ap.per_request_seconds(rows, "mongodb-api", k_hi, "disk-warm")
    speed = ap.speedups(ap.summary(rows)).set_index("system")[f"speedup_k{k_hi}"]
    assert re.search(r"FerretDB v1\.\d+\.\d+, SQLite [\d.]+ backend", text)
    assert "table scan" in text and "`mongodb-api-concurrent`" in text
    assert f"{single * 1e3:.2f} ms" in text and f"{in_hi * 1e3:.1f} ms for {k_hi}" in text
    assert f"k={k_hi} is {speed['mongodb-api']:.1f}x faster than k=1 (one scan" in text
    assert f"one lookup per key as in mongod) it is {speed['mongodb-api-concurrent']:.1f}x." in text
    assert ap.mongodb_in_statement(rows[rows.system != "mongodb-api"]) == ""
    assert text in ap.analyse(tables).markdown


@pytest.mark.server
def test_lookup_index_serves_the_filter_ferretdb_pushes_down(servers):
    """The index the store adds to FerretDB's SQLite table matches the `_id` filter FerretDB sends to SQLite
    (an index search, not a scan); upserts go through it; an external endpoint is left as it is."""
    import sqlite3
    from contextlib import closing

    svc = servers.get("mongodb-ferretdb")
    store = get_store_class("mongodb-api")(svc.endpoint(), namespace="lookup", service=svc)
    try:
        store.put_many((k, value_for(k)) for k in range(20))
        store.put_many([(3, b"new")])
        assert store.get(3) == b"new" and store.get_many([19, 0]) == [value_for(19), value_for(0)]
        with closing(sqlite3.connect(store._sqlite_file())) as db:
            table = db.execute("SELECT table_name FROM _ferretdb_collections WHERE name = 'lookup'").fetchone()[0]
            plan = db.execute(f"""EXPLAIN QUERY PLAN SELECT _ferretdb_sjson FROM "{table}"
                                  WHERE _ferretdb_sjson->'$._id' = '000000000003'""").fetchall()
        assert "USING INDEX" in str(plan), plan
    finally:
        store.clear()
        store.close()
    external = get_store_class("mongodb-api")(svc.endpoint(), namespace="lookup")
    try:
        assert not external.lookup_index and "lookup index" not in external.system_version()
    finally:
        external.close()
