"""Embedding tables on the real systems (RocksDB, TileDB, TensorStore, local files), the update loop
against its in-memory reference, verification failures, the experiment's parameter checks and a
tiny run of the whole experiment."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from storebench.core import settings as config
from storebench.stores import embeddings as E
from storebench.data import keystreams
from storebench.core.experiment import ResultsDir, ResultTables
from storebench.experiments.ml_storage_study.embeddings import analysis, measure as em
from storebench.report import notebook as report_notebook
from storebench.stores.readers import VerificationError

TABLES = list(E.EMBEDDING_TABLES)
# every table with its defaults, plus the non-default settings an experiment can choose
VARIANTS = [(name, {}) for name in TABLES] + [
    ("tiledb", {"tiledb_layout": "2d", "tile_keys": 16}),
    ("rocksdb", {"durability": "fsync", "block_cache_bytes": 1 << 20}),
    ("tensorstore", {"durability": "none", "cache_pool_bytes": 1 << 20, "chunk_keys": 8}),
    ("localfs", {"durability": "fsync"}),
]


def make(name, root, n=300, dim=24, seed=0, **options):
    initial = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    table = E.make_table(name, root, **options)
    table.create(n, dim, initial)
    return table, initial


@pytest.mark.parametrize("name,options", VARIANTS, ids=lambda v: str(v) if isinstance(v, str) else "-".join(v))
def test_a_table_round_trips_scattered_keys(name, options, tmp_path):
    rng = np.random.default_rng(1)
    table, initial = make(name, tmp_path / name, **options)
    with table:
        keys = rng.permutation(300)[:50]  # scattered and unsorted
        assert np.array_equal(table.read(keys), initial[keys])
        new = rng.standard_normal((50, 24), dtype=np.float32)
        table.write(keys, new)
        expected = initial.copy()
        expected[keys] = new
        assert np.array_equal(table.read(keys[::-1]), new[::-1])
        assert np.array_equal(table.read_all(), expected)
        assert table.disk_usage() > 0 and table.files()
        assert set(options) <= set(table.settings())


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("dense", [True, False], ids=["dense", "sparse"])
def test_run_updates_leaves_the_reference_table(name, dense, tmp_path):
    keys = keystreams.key_stream("zipf", 200, 1000, seed=3).keys
    table, initial = make(name, tmp_path / name, n=200, dim=16)
    with table:
        timings = E.run_updates(table, keys, 64, dense=dense, sparse_fraction=0.25)
        reference = E.reference_updates(initial, keys, 64, dense=dense, sparse_fraction=0.25)
        E.verify(table, reference)
    distinct = [len(np.unique(b)) for b in keystreams.batches(keys, 64)]
    assert len(timings) == len(distinct) == 16
    assert timings.keys_read.tolist() == distinct
    assert (timings[["read_ns", "update_ns", "write_ns"]] > 0).all().all()
    if dense:
        assert timings.keys_written.tolist() == distinct
    else:
        assert 0 < timings.keys_written.sum() < 0.5 * timings.keys_read.sum()
    assert not np.array_equal(reference, initial)


def test_durability_is_each_tables_setting_and_tiledb_cannot_skip_fsync_alone(tmp_path):
    """TileDB has no setting to skip its fsyncs: durability 'none' needs a process with fsync off (the experiment
    starts one); every table records its durability and how it gets it."""
    assert {name: E.make_table(name, tmp_path / name).durability for name in TABLES} == {
        "rocksdb": "none", "tiledb": "fsync", "tensorstore": "fsync", "localfs": "none"}  # the systems' defaults
    table = E.make_table("tiledb", tmp_path / "t", durability="none")
    with pytest.raises(RuntimeError, match="tiledb has no setting to skip its fsyncs.*LD_PRELOAD=libeatmydata"):
        table.create(4, 2, np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError, match="unknown durability 'weekly'; valid: none, fsync"):
        E.make_table("rocksdb", tmp_path / "r", durability="weekly")
    rocks, _ = make("rocksdb", tmp_path / "r", n=8, dim=2, durability="fsync")
    with rocks:
        assert rocks.settings()["durability"] == "fsync" and "synced per WriteBatch" in rocks.settings()["durable_how"]


def test_sparse_selection_is_deterministic_and_takes_about_the_fraction():
    keys = np.arange(100_000, dtype=np.int64)
    chosen = E.sparse_selection(keys, 3, 0.1)
    assert abs(chosen.mean() - 0.1) < 0.01
    assert np.array_equal(chosen, E.sparse_selection(keys, 3, 0.1))
    assert not np.array_equal(chosen, E.sparse_selection(keys, 4, 0.1))


@pytest.mark.parametrize("name", TABLES)
def test_a_value_changed_behind_the_experiments_back_fails_verification(name, tmp_path):
    keys = keystreams.key_stream("power-law", 100, 400, seed=5).keys
    table, initial = make(name, tmp_path / name, n=100, dim=16)
    with table:
        E.run_updates(table, keys, 32)
        reference = E.reference_updates(initial, keys, 32)
        E.verify(table, reference)
        table.write(np.array([7]), reference[[7]] + np.float32(1))
        with pytest.raises(VerificationError, match=f"{name}: 1 of 100 embedding rows differ"):
            E.verify(table, reference)


def test_the_experiment_verifies_every_run(tmp_path):
    settings = em_config(tmp_path)
    point = em.plan(settings)[0][0]
    work = em.workload("power-law", point, settings)
    row, per_batch = em.measure_one("rocksdb", work, settings, 0, ["dataset_size"])
    assert row["verified"] and len(per_batch) == row["n_batches"]
    wrong = dataclasses.replace(work, reference=work.reference + np.float32(1))
    with pytest.raises(VerificationError, match="rocksdb: .* differ .*rocksdb_power-law"):
        em.measure_one("rocksdb", wrong, settings, 0, ["dataset_size"])


def test_bad_table_input_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown embedding table 'redis'; valid: rocksdb, tiledb, tensorstore"):
        E.make_table("redis", tmp_path)
    table, _ = make("rocksdb", tmp_path / "t", n=10, dim=4)
    with table:
        with pytest.raises(IndexError, match="keys must be in 0 .. 9"):
            table.read(np.array([3, 10]))
        with pytest.raises(ValueError, match=r"float32 array of shape \(2, 4\)"):
            table.write(np.array([1, 2]), np.zeros((2, 4), dtype=np.float64))
    with pytest.raises(FileExistsError, match="not empty"):
        make("localfs", tmp_path / "t", n=10, dim=4)
    with pytest.raises(ValueError, match="sparse_fraction must be in"):
        E.run_updates(table, np.arange(4), 2, dense=False, sparse_fraction=0)


# ------------------------------------------------------------------------------- the experiment
TINY = {
    "tables": ["rocksdb", "tiledb", "tensorstore", "localfs"],
    "streams": ["zipf", "power-law"],
    "sweeps": ["dataset_size", "embedding_size", "batch_size", "update", "locality"],
    "dataset_sizes": [128, 256], "embedding_sizes": [8, 32], "batch_sizes": [32, 128],
    "updates": ["dense", "sparse"], "locality": ["shuffled", "clustered"],
    "fixed": {"dataset_size": 256, "table_rows": 64, "embedding_size": 8, "batch_size": 32},
    "sparse_fraction": 0.25, "zipf_exponent": 1.1, "power_law_alpha": 2.1,
}


def params(**section) -> dict:
    return {"scale": "smoke", "seed": 7, "presets": {"smoke": {"n_samples": 1, "repeats": 2}, "small": {}, "paper": {}},
            "embeddings": {**TINY, **section}}


def em_config(tmp_path, overrides=None, **section) -> em.Settings:
    return config.load(em.Settings, "embeddings", "smoke", params(**section),
                       {"store_dir": str(tmp_path / "stores"), **(overrides or {})})


@pytest.mark.parametrize("overrides,message", [
    ({"batch_sizes": [0, 64]}, r"override batch_sizes\[0\] = 0: Input should be greater than or equal to 1"),
    ({"batch_sizes": [-16]}, r"override batch_sizes\[0\] = -16: Input should be greater than or equal to 1"),
    ({"tables": ["rocksdb", "cassandra"]}, r"override tables\[1\] = 'cassandra': unknown embedding table 'cassandra'; valid: "),
    ({"streams": ["uniform"]}, r"override streams\[0\] = 'uniform': unknown key stream 'uniform'"),
    ({"sparse_fraction": 1.5}, "override sparse_fraction = 1.5: Input should be less than or equal to 1"),
    ({"power_law_alpha": 1}, "override power_law_alpha = 1: Input should be greater than 1"),
])
def test_bad_overrides_name_their_key(tmp_path, overrides, message):
    with pytest.raises(config.ParamsError, match=message):
        em_config(tmp_path, overrides)


@pytest.mark.parametrize("fixed,message", [
    ({**TINY["fixed"], "batch_size": 0}, r"embeddings.fixed.batch_size = 0: Input should be greater than or equal to 1"),
    ({"dataset_size": 256, "table_rows": 64, "embedding_size": 8}, r"embeddings.fixed.batch_size is missing"),
    ({**TINY["fixed"], "update": "partial"}, r"embeddings.fixed.update = 'partial': Input should be 'dense' or 'sparse'"),
])
def test_a_bad_fixed_point_names_its_params_path(tmp_path, fixed, message):
    with pytest.raises(config.ParamsError, match=message):
        em_config(tmp_path, fixed=fixed)


def test_a_sweep_without_values_is_refused(tmp_path):
    settings = em_config(tmp_path, {"sweeps": ["table_size"]})
    with pytest.raises(ValueError, match="sweep 'table_size' needs embeddings.table_sizes"):
        em.plan(settings)


def test_the_fixed_point_is_measured_once_for_every_sweep(tmp_path):
    plan = em.plan(em_config(tmp_path))
    assert len(plan) == 6  # the fixed point + one other value per sweep
    shared = [(point, sweeps) for point, sweeps in plan if len(sweeps) > 1]
    assert shared == [(em.Point(256, 64, 8, 32), TINY["sweeps"])]


def test_a_tiny_run_records_verified_rows_raw_timings_and_findings(tmp_path):
    settings = em_config(tmp_path, {"streams": ["zipf"]})  # power-law: test_the_experiment_verifies_every_run
    out = ResultsDir(tmp_path / "out")
    em.measure(settings, out, progress=False)
    rows = pd.read_csv(out.path / "embeddings.csv")
    assert len(rows) == 2 * 2 * 6 * 4  # durabilities x repeats x configurations x tables
    assert rows.verified.all() and set(rows.table) == set(TINY["tables"])
    # each durability ran in its own process: none with fsync off for the whole process (TileDB too), fsync without
    assert set(rows.durability) == {"none", "fsync"}
    assert rows[rows.durability == "none"].fsync_in_process.str.startswith("fsync turned off").all()
    assert (rows[rows.durability == "fsync"].fsync_in_process == "fsync reaches the disk").all()
    assert (rows.total_seconds >= rows.read_seconds + rows.write_seconds).all()
    assert {"host", "git_rev", "params_hash", "system_version", "key_stream", "hottest_1pct_share",
            "table_layout"} <= set(rows.columns)
    provenance = pd.read_csv(out.path / "embeddings_provenance.csv")
    assert set(provenance.table) == set(TINY["tables"]) and len(provenance) == 2 * 4
    for name in TINY["tables"]:
        raw = pd.read_parquet(out.raw_dir / f"{name}.parquet")
        assert raw.groupby(["run_id", "repeat"]).ngroups == 2 * 2 * 6
        assert len(raw) == rows[rows.table == name].n_batches.sum()
    assert not any((tmp_path / "stores").iterdir())  # every table removed after its run

    summary = analysis.summary(rows)
    assert (summary.repeats == 2).all() and summary.total_ci95.notna().all()
    slopes = analysis.slopes(summary)
    assert len(slopes) == 2 * 4 and slopes.per_doubling.notna().all()
    costs = analysis.costs(rows)  # fixed per batch, per key, per KiB: none below zero
    assert len(costs) == 2 * 4 and (costs[["per_batch_ms", "per_key_us", "per_kib_us"]] >= 0).all().all()
    found = analysis.analyse(ResultTables({"embeddings": rows}, {}))
    assert "paper:" in found.headline and "Where the time goes" in found.markdown
    assert any(m.column == "time at embedding 32 / at 8, zipf, durability fsync (embeddings)" for m in found.metrics)
    assert {c.reference for c in found.claims} == {"Sec 5.10, Fig 13", "Sec 5.10, Fig 14", "Sec 5.10, Fig 15"}
    for scope in ("zipf, no fsync", "zipf, fsync per batch"):
        batch = [c for c in found.claims if c.statement.startswith(f"{scope}: batch size, tiledb")]
        assert len(batch) == 1 and batch[0].ci_low is not None  # two repeats: an interval
    assert all(c.cause == "the paper's setup" and c.cause_detail and c.settle
               for c in found.claims if c.verdict == "does not hold")
    assert len(analysis.figure(summary).axes) == 4 * 4  # 3 sweeps + future work x 2 durabilities x zipf


def test_claims_without_repeats_are_inconclusive_not_judged():
    rows = pd.DataFrame([{"table": t, "stream": "zipf", "dataset_size": 64, "table_rows": 8, "embedding_size": e,
                          "batch_size": 8, "update": "dense", "locality": "shuffled", "sweep": "embedding_size",
                          "stands_for": "text", "repeat": 0, "total_seconds": s, "read_seconds": s / 2,
                          "update_seconds": 0.0, "write_seconds": s / 2, "keys_read": 64, "keys_written": 64,
                          "n_batches": 8, "table_files": 1, "system_version": "x"}
                         for t, e, s in [("rocksdb", 8, 1.0), ("rocksdb", 32, 2.0), ("tiledb", 8, 1.0),
                                         ("tiledb", 32, 1.0)]])
    found = analysis.analyse(ResultTables({"embeddings": rows}, {}))
    grows = next(c for c in found.claims
                 if c.statement == "zipf, each system's default durability: rocksdb's total time grows as the embedding "
                                   "grows.")
    assert grows.value == pytest.approx(2.0) and grows.verdict == "inconclusive"
    assert any(c.verdict == "not comparable" for c in found.claims)  # no batch sweep, no dataset sweep


def _dataset_sweep_rows(seconds_of_size, repeats=5):
    """Rows of one store's dataset-size sweep: ``seconds_of_size(size)`` plus a +-1% jitter per repeat."""
    jitter = np.linspace(-0.01, 0.01, repeats)
    return pd.DataFrame([{"table": "rocksdb", "stream": "zipf", "durability": "none", "dataset_size": size,
                          "table_rows": 64, "embedding_size": 8, "batch_size": 8, "update": "dense",
                          "locality": "shuffled", "sweep": "dataset_size", "stands_for": "text", "repeat": r,
                          "total_seconds": seconds_of_size(size) * (1 + jitter[r]), "read_seconds": 0.0,
                          "update_seconds": 0.0, "write_seconds": 0.0, "keys_read": size, "keys_written": size,
                          "n_batches": size // 8, "table_files": 1, "system_version": "x"}
                         for size in (1024, 2048, 4096, 8192) for r in range(repeats)])


@pytest.mark.parametrize("seconds_of_size, verdict", [(lambda n: 0.5 + n / 1000, "holds"),
                                                      (lambda n: (n / 1000) ** 3, "does not hold")])
def test_linear_growth_with_dataset_size_is_judged_from_a_ci_over_repeats(seconds_of_size, verdict):
    found = analysis.analyse(ResultTables({"embeddings": _dataset_sweep_rows(seconds_of_size)}, {}))
    linear = next(c for c in found.claims if "grows linearly with dataset size" in c.statement)
    assert linear.ci_low is not None and linear.ci_low <= linear.ci_high
    assert linear.verdict == verdict
    assert (linear.cause == "the paper's setup" and linear.settle) if verdict == "does not hold" else not linear.cause


def test_linear_growth_from_one_repeat_a_size_has_no_ci():
    found = analysis.analyse(ResultTables({"embeddings": _dataset_sweep_rows(lambda n: n / 1000, repeats=1)}, {}))
    linear = next(c for c in found.claims if "grows linearly with dataset size" in c.statement)
    assert linear.ci_low is None and linear.verdict == "inconclusive"


def test_the_report_says_what_a_run_read_not_the_presets_sample_count(tmp_path):
    settings = em_config(tmp_path).model_dump()
    said = report_notebook.measured({"settings": settings}, report_notebook.declared("embeddings").data)
    assert "tables of 64 float32 embeddings of [8, 32] floats; [128, 256] keys drawn a run" in said
    assert "batch 32)" in said and f"{settings['n_samples']:,} samples" not in said
