"""The location report's note on a warm disk against tmpfs: it names exactly the pairs where the warm disk
was faster, and says nothing when none was."""
import pandas as pd

from storebench.experiments.dl_storage_benchmarking.location.analysis import (
    MALLOC_TRIM_OFF, QUERIES_PER_CONTEXT, _warm_disk_vs_tmpfs, ratios, samples_read, tiledb_context_renewal)
from storebench.stores import tiledb as tiledb_store


def summary(memory_s: float, warm_s: float) -> pd.DataFrame:
    return pd.DataFrame({"dataset": "mnist", "system": ["ceph", "ceph", "redis"], "access": "sequential",
                         "location": ["memory", "disk-warm", "memory"], "mean": [memory_s, warm_s, 0.1]})


def test_names_the_pairs_where_a_warm_disk_beat_tmpfs():
    note = _warm_disk_vs_tmpfs(ratios(summary(memory_s=2.0, warm_s=1.0)))
    assert "for 1 of 1 system/dataset pairs" in note and "ceph mnist 0.50" in note and "redis" not in note


def test_says_nothing_when_memory_was_faster():
    assert _warm_disk_vs_tmpfs(ratios(summary(memory_s=1.0, warm_s=2.0))) == ""


def test_the_headline_counts_each_datasets_samples():
    rows = pd.DataFrame({"dataset": ["cifar10", "mnist", "cifar10"], "n_samples": [50_000, 60_000, 50_000]})
    assert samples_read(rows) == "50,000 cifar10 / 60,000 mnist samples"


def test_the_flag_uses_the_stores_renewal_interval_and_config():
    assert QUERIES_PER_CONTEXT == tiledb_store.QUERIES_PER_CONTEXT
    assert MALLOC_TRIM_OFF in tiledb_store.context_config_summary().split(", ")


def test_tiledb_passes_that_renewed_the_context_before_the_fix_are_flagged_and_others_are_not():
    def rows(n_requests, config="tiledb 0.36.1, as installed; 64 samples per tile"):
        return pd.DataFrame({"system": ["tiledb-array", "redis"], "n_requests": [n_requests, 10**6],
                             "client_config": [config, "redis"], "dataset": ["mnist"] * 2,
                             "location": ["memory", "disk-warm"]})
    flag = tiledb_context_renewal(rows(QUERIES_PER_CONTEXT + 1))
    assert "(tiledb-array: mnist memory)" in flag and "redis" not in flag
    assert tiledb_context_renewal(rows(QUERIES_PER_CONTEXT)) == ""
    assert tiledb_context_renewal(rows(QUERIES_PER_CONTEXT + 1, f"tiledb 0.36.1; {MALLOC_TRIM_OFF}")) == ""
