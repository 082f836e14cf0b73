"""The calibration: storebench's clients beside each system's own tool on a real server (Redis with
redis-benchmark, RocksDB with db_bench, MinIO with the minio-go loop, Ceph with rados bench) and the
layout readers beside webdataset and Lance's take on MinIO, then the report notebook on the recorded
tables; and the ratio analysis on known rows."""
import json
import signal

import numpy as np
import pandas as pd
import pytest

from storebench.core.experiment import ResultTables
from storebench.core.settings import ParamsError
from storebench.experiments.harness.calibration import analysis, measure, memory, native, readers
from storebench.layouts import S3Place
from storebench.layouts.lance import LanceDataset
from storebench.layouts.tarshards import TarShards
from storebench.pipeline import notebooks, run

# Tier markers are per test: `slow` on each test that needs it, none on the pure ones.


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_redis_and_rocksdb_beside_their_tools_at_smoke_scale(prepared_seed001, tmp_path):
    results = tmp_path / "results"
    tables = run.measure("calibration", "smoke", results_root=results, progress=False)
    rows = tables["calibration"]
    assert set(rows.system) == {"redis", "rocksdb"}
    assert set(rows.client_kind) == {"storebench", "native tool"}
    assert (rows.ops_per_s > 0).all() and (rows.client_cpu_us_per_op > 0).all() and rows.load_1min.notna().all()
    assert rows.groupby(["system", "operation", "client"]).size().eq(2).all()  # 2 rounds at smoke, warm-up dropped
    assert rows[rows.system == "redis"].server_cpu_us_per_op.notna().all()
    tools = tables["tools"]
    assert set(tools.status) >= {"ran"} and tools.tool.str.contains("cassandra-stress").any()
    notebooks.run("calibration", out_dir=tmp_path, results_dir=results, progress=False)
    recorded = json.loads((tmp_path / "calibration.findings.json").read_text())
    assert recorded["paper"] == "harness" and recorded["metrics"] and recorded["claims"]
    page = (tmp_path / "calibration.html").read_text()
    assert "redis-benchmark" in page and "db_bench" in page and "Traceback" not in page
    assert set(tables["client_memory"].reader) == {"tiledb-attrs"} and "tiledb-attrs, memory</strong>: over 500 queries" in page


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_s3_and_rados_beside_their_tools(tmp_path):
    tables = run.measure("calibration", "smoke", results_root=tmp_path, progress=False,
                         overrides={"pairs": ["s3", "rados"], "s3_object_bytes": [1024], "memory_readers": []})
    rows = tables["calibration"]
    clients = rows.groupby("system").client.unique()
    assert len(clients["minio"]) == 3 and any("obstore" in c for c in clients["minio"])
    assert any(c.startswith("rados bench") for c in clients["ceph"])
    assert (rows.ops_per_s > 0).all()


def test_a_missing_tool_is_named_with_what_installs_it(monkeypatch):
    monkeypatch.setattr(native.shutil, "which", lambda _name: None)
    monkeypatch.setattr(native, "cache_dir", lambda: __import__("pathlib").Path("/nonexistent"))
    with pytest.raises(native.ToolMissing, match="db_bench is not installed .*rocksdb-tools"):
        native.find("db_bench", "Debian rocksdb-tools")


def passes(system, client, kind, rates):
    return [{"system": system, "operation": "GET", "value_bytes": 1024, "concurrency": 16, "unit": "GETs/s",
             "client": client, "client_kind": kind, "round": i, "ops": 100, "seconds": 100 / r, "ops_per_s": r,
             "client_cpu_us_per_op": 10.0, "server_cpu_us_per_op": 5.0, "load_1min": 1.0}
            for i, r in enumerate(rates)]


def test_ratios_and_verdicts_from_the_rounds():
    rows = pd.DataFrame(passes("minio", "obstore x", "storebench", [950, 960, 940, 955, 945])
                        + passes("minio", "minio-py y", "storebench", [400, 410, 390, 405, 395])
                        + passes("minio", "storebench-s3get", "native tool", [1000, 1010, 990, 1005, 995]))
    table = analysis.ratios(rows)
    fast = table[table.client == "obstore x"].iloc[0]
    assert fast.ratio == pytest.approx(0.95, abs=0.01) and fast.ratio_low < 0.95 < fast.ratio_high
    claims = analysis.claims(table)
    assert len(claims) == 1 and claims[0].verdict == "holds"  # only obstore has a target; its CI is above 0.9
    slow = table[table.client == "minio-py y"].iloc[0]
    assert slow.ratio == pytest.approx(0.4, abs=0.01)


def test_loader_ratios_take_a_ci_over_the_recorded_rounds():
    overheads = pd.DataFrame([{"workload": "text", "system": "rocksdb", "loader": "map", "layout": "1 rows/key",
                               "batch_size": 1024, "loader_rows_per_second": 90.0, "bare_rows_per_second": 100.0,
                               "loader_vs_bare": 0.9, "rounds": 5, "loader_round_seconds": "1.1;1.12;1.09;1.11;1.1",
                               "bare_round_seconds": "1.0;1.01;0.99;1.0;1.0"}])
    loaders = analysis.loader_ratios(overheads)
    assert loaders.ratio.iloc[0] == pytest.approx(1.0 / 1.104, rel=0.01)
    assert np.isfinite(loaders.ratio_low.iloc[0]) and loaders.rounds.iloc[0] == 5
    assert analysis.loader_claims(loaders)[0].verdict in {"holds", "inconclusive", "does not hold"}


def test_findings_name_the_worst_comparison():
    rows = pd.DataFrame(passes("minio", "obstore x", "storebench", [500] * 5)
                        + passes("minio", "storebench-s3get", "native tool", [1000] * 5))
    found = analysis.analyse(ResultTables({"calibration": rows}, {"machine": {"cores": 2}}))
    assert "0.50x" in found.headline and "2 cores" in found.headline


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_layout_readers_beside_webdataset_and_lance_take(tmp_path):
    tables = run.measure("calibration", "smoke", results_root=tmp_path, progress=False,
                         overrides={"pairs": ["webdataset", "lance"], "memory_readers": []})
    rows = tables["calibration"]  # each pass's read was verified against what was written, or measure raised
    assert set(rows.unit) == {"images/s"} and (rows.ops_per_s > 0).all() and (rows.mb_per_s > 0).all()
    kinds = rows.groupby("operation").client_kind.unique()
    assert len(kinds) == 3 and all(set(k) == {"storebench", measure.REFERENCE_LIBRARY} for k in kinds)
    clients = set(rows.client)
    assert any(c.startswith("storebench L2-tar") for c in clients) and any(c.startswith("webdataset") for c in clients)
    assert any(c.startswith("storebench L4-lance") for c in clients) and any(" take: " in c for c in clients)
    assert rows[rows.operation.str.contains("whole set")].ops.eq(1000).all()
    table = analysis.ratios(rows)
    assert len(table) == 3 and (table.ratio > 0).all()
    targets = {c.statement.split(" reaches at least ")[1].split("x")[0] for c in analysis.claims(table)}
    assert targets == {"1.2", "1"}
    assert set(tables["tools"].status) == {"ran", *measure.NOT_AVAILABLE.values()}




@pytest.mark.server
@pytest.mark.filterwarnings("ignore:lance is not fork-safe")  # webdataset's curl pipe forks, and execs at once
def test_a_reader_that_returns_other_bytes_fails_its_pass(servers, tmp_path):
    full = readers.sample("x1")
    data = readers.Sample("x1", 1, full.meta.head(40), full.built)
    endpoint = servers.get("minio").endpoint()
    readers.empty_bucket(endpoint, "sb-test-calibration")
    tar = TarShards(S3Place(endpoint, "sb-test-calibration", "L2"), tmp_path, shard_bytes=1_000_000)
    shards = tar.write(data.meta, data.image).objects
    urls = readers.presigned_urls(tar.place, [tar.shard_name(s) for s in range(shards)])
    lance = LanceDataset(S3Place(endpoint, "sb-test-calibration", "L4"), tmp_path)
    lance.write(data.meta, data.image)
    query = readers.queries(["all"])[0]
    check = measure.expect_equal(data.expected(query), "test")
    offsets = readers.row_offsets(data.meta, query, 1)
    reads = {"ours L2": lambda: list(tar.query(query, 1)), "webdataset": lambda: readers.webdataset_read(urls),
             "ours L4": lambda: list(lance.query(query, 1)),
             "take": lambda: readers.lance_take(lance.uri, lance.storage_options(), offsets)}
    passes = measure.Passes("minio", "test", 1, 0, "images/s")
    for name, read in reads.items():
        passes.reference(name, 0, 40, read, check)  # as written
        corrupted = lambda read=read: [(k, v[:-1] + bytes([v[-1] ^ 1])) if i == 7 else (k, v)
                                       for i, (k, v) in enumerate(read())]
        with pytest.raises(AssertionError, match="other bytes than were written .first at 7"):
            passes.reference(name, 1, 40, corrupted, check)
    assert len(passes.rows) == 8 and shards > 1


@pytest.mark.slow
def test_one_tiledb_context_keeps_memory_per_query_and_fresh_contexts_do_not(prepared_seed001, tmp_path):
    """Each TileDB reader on real rows, each pass in its own process: one context's RSS climbs with the
    queries (TileDB-Py #2194), the suite's renewal frees it."""
    table = memory.run(list(memory.READERS), rows=2000, queries=3000, renew_every=500, rounds=1, root=tmp_path,
                       progress=False)
    assert set(table.reader) == set(memory.READERS) and set(table["mode"]) == {memory.RENEWED, memory.ONE_CONTEXT}
    assert table.groupby(["reader", "mode"]).size().eq(memory.PASS_SAMPLES).all()
    held = analysis.memory_summary(table).set_index("reader")
    assert (held.one_context_kept_kib_per_query > 5).all(), held.one_context_kept_kib_per_query
    assert (held.kept_kib_per_query < held.one_context_kept_kib_per_query / 4).all(), held.kept_kib_per_query
    assert not list(tmp_path.iterdir())  # each reader's arrays removed after its passes


def test_a_pass_process_that_dies_is_run_again_then_named_not_waited_for():
    """A reader that crashes its process (TileDB does, rarely) must not hang the run, as a Pool's apply did."""
    assert memory.in_fresh_process(max, (3, 5)) == (5, 0)
    with pytest.raises(RuntimeError, match=f"raise_signal.* died in each of {memory.ATTEMPTS} fresh processes"):
        memory.in_fresh_process(signal.raise_signal, (signal.SIGKILL,))


def test_the_report_says_how_many_pass_processes_crashed_and_were_run_again():
    rows = [{"reader": "tiledb", "mode": mode, "renew_every": every, "mark_every": 10, "round": r, "queries_done": q,
             "rss_mib": 100 + q * growth, "read_seconds": q * 1e-3, "processes_died": died}
            for mode, every, growth in ((memory.RENEWED, 10, 0.0), (memory.ONE_CONTEXT, None, 0.02))
            for r, died in ((0, 0), (1, 1 if mode == memory.ONE_CONTEXT else 0)) for q in (10, 20, 30)]
    held = analysis.memory_summary(pd.DataFrame(rows))
    assert held.processes_died.tolist() == [1]
    assert "1 pass process died (killed by a signal) and was run again" in analysis.memory_lines(held)[0]
    assert "no pass process crashed" in analysis.memory_lines(held.assign(processes_died=0))[0]


def test_memory_settings_that_cannot_compare_renewals_are_refused(tmp_path):
    with pytest.raises(ValueError, match="at least 3 of them"):
        memory.run(["tiledb"], rows=100, queries=2000, renew_every=1000, rounds=1, root=tmp_path)
    with pytest.raises(ValueError, match="a multiple of memory_renew_every"):
        memory.run(["tiledb"], rows=100, queries=3500, renew_every=1000, rounds=1, root=tmp_path)
    with pytest.raises(ParamsError, match="at least 3 of them"):  # with the params, before any pair runs
        run.settings("calibration", "smoke", overrides={"memory_queries": 200})


def test_a_calibration_that_measures_nothing_is_refused_with_the_params():
    with pytest.raises(ParamsError, match="nothing to measure"):
        run.settings("calibration", "smoke", overrides={"pairs": [], "memory_readers": []})


def test_the_reference_parts_measure_every_pair_and_reader_of_the_whole_run_once():
    from storebench.core.settings import load_params, part_overrides

    params = load_params()
    whole = run.settings("calibration", "reference")
    parts = [run.settings("calibration", "reference", overrides=part_overrides(params, "calibration", name))
             for name in params["parts"]["calibration"]]
    pairs = [p for s in parts for p in s.pairs]
    readers = [r for s in parts for r in s.memory_readers]
    assert sorted(pairs) == sorted(whole.pairs) and sorted(readers) == sorted(whole.memory_readers)
    assert all(s.memory_rows == whole.memory_rows and s.memory_queries == whole.memory_queries for s in parts)


def test_a_part_of_the_pairs_and_a_part_of_the_memory_read_as_one_report():
    clients = ResultTables({"calibration": pd.DataFrame(passes("minio", "obstore x", "storebench", [500] * 5)
                                                        + passes("minio", "storebench-s3get", "native tool", [1000] * 5)),
                            "tools": pd.DataFrame([{"tool": "storebench-s3get", "version": "1", "status": "ran"}])},
                           {"machine": {"cores": 2}})
    rows = [{"reader": "tiledb", "mode": mode, "renew_every": every, "mark_every": 10, "round": 0, "queries_done": q,
             "rss_mib": 100 + q * growth, "read_seconds": q * 1e-3, "processes_died": 0}
            for mode, every, growth in ((memory.RENEWED, 10, 0.0), (memory.ONE_CONTEXT, None, 0.02)) for q in (10, 20, 30)]
    readers = ResultTables({"client_memory": pd.DataFrame(rows)}, {"machine": {"cores": 2}})
    alone = analysis.analyse(readers)
    assert alone.headline.startswith("No client was compared with a reference: only the TileDB readers' memory")
    assert analysis.figures(readers).keys() == {"memory"}
    both = analysis.analyse(ResultTables.merged({"clients": clients, "memory-tiledb": readers}))
    assert "0.50x" in both.headline and "TileDB readers with fresh contexts keep" in both.headline
    assert "tiledb, memory" in both.markdown
