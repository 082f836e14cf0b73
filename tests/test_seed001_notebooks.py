"""Seed 001's experiments as the pipeline runs them: measure at smoke scale (real stores and servers), then the
report notebook by papermill from the recorded tables. dataloaders runs first (the first test): scalability and resources read
its best configurations from the same results root (alone, they fall back to the seed's Table 1)."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from storebench.pipeline import notebooks, run
from storebench.paths import ROOT

# Tier markers are per test: `slow` on each test that needs it, none on the pure ones.


def smoke(section: str) -> dict:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    return {**params[section], **params["presets"]["smoke"].get(section, {})}


@pytest.fixture(scope="module")
def results_root(tmp_path_factory):
    return tmp_path_factory.mktemp("results001")


def measured(name: str, results_root: Path, out: Path, **overrides) -> dict:
    """Measure ``name`` at smoke scale, render its report; returns its recorded tables."""
    run.measure(name, "smoke", results_root=results_root, overrides=overrides or None, progress=False)
    notebooks.run(name, out_dir=out, results_dir=results_root, progress=False)
    tables = {p.stem: pd.read_csv(p) for p in (results_root / name).glob("*.csv") if p.stat().st_size}
    manifest = json.loads((results_root / name / "manifest.json").read_text())
    assert manifest["scale"] == "smoke" and manifest["git_rev"]
    recorded = json.loads((out / f"{name}.findings.json").read_text())
    assert recorded["paper"] == "ml_storage_study" and "paper" in recorded["headline"] and recorded["claims"]
    assert all(c["verdict"] in ("holds", "does not hold", "inconclusive", "not comparable") for c in recorded["claims"])
    page = (out / f"{name}.html").read_text()
    assert "Findings" in page and "Traceback" not in page and "Provenance" in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page
    figures = sorted((out / "figures" / name).glob("*.png"))  # report.save_figures: figures/<name>/<i>-<key>.png
    assert figures and figures[0].stat().st_size > 10_000
    return tables


def check_rows(rows: pd.DataFrame) -> pd.DataFrame:
    assert len(rows) and rows.verified.all() and (rows.scale == "smoke").all()
    assert rows.system_version.notna().all() and rows.git_rev.notna().all() and (rows.cpus > 0).all()
    return rows


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_dataloaders_at_smoke_scale(prepared_seed001, results_root, tmp_path):
    tables = measured("dataloaders", results_root, tmp_path)
    rows = check_rows(tables["dataloaders"])
    config = smoke("dataloaders")
    assert set(rows.workload) == set(config["workloads"]) and set(rows.system) == set(config["systems"])
    assert set(rows.loader) == {"map", "iterable"} and set(rows.workers) == set(config["workers"])
    assert (rows.rows_per_second > 0).all()
    confirmed = rows[rows.phase == "confirm"].groupby(["workload", "system", "layout"]).size()
    assert len(confirmed) == len(rows.groupby(["workload", "system", "layout"]))  # each one's best, measured again
    for workload, n in config["rows"].items():
        assert (rows[rows.workload == workload].n_rows == n).all()  # every row of the dataset, every epoch
    writes = tables["dataloaders_write"]
    assert (writes.seconds > 0).all() and set(writes.system) == set(config["systems"])
    assert set(writes[writes.system == "rocksdb"].rows_per_key) == set(config["rows_per_key"])
    assert {m.split(":")[0] for m in writes[writes.system == "tiledb-attrs"].write_method} == {"global order",
                                                                                               "row-major"}
    best = tables["dataloaders_best"]  # scalability and resources read it from this results root
    assert len(best) == len(rows.groupby(["workload", "system"]))
    overhead = tables["dataloaders_overhead"]
    assert {"localfs", "rocksdb"} <= set(overhead.system) and (overhead.loader_vs_bare > 0).all()
    page = (tmp_path / "dataloaders.html").read_text()
    assert "Table 1, ours beside the seed" in page and "CIFAR-100" in page and "Loader cost" in page
    recorded = json.loads((tmp_path / "dataloaders.findings.json").read_text())
    workers = [c for c in recorded["claims"] if "workers" in c["metric"]]
    assert any(c["verdict"] == "not comparable" and "2 cores" in c["why"] for c in workers)  # the knee's place
    assert any(c["verdict"] != "not comparable" for c in workers)  # the trend up to this machine's cores: judged
    data = tables["dataloaders_data"]  # what was measured: rows and bytes per workload
    assert dict(zip(data.workload, data.n_rows)) == config["rows"] and (data.dataset_bytes > 0).all()


@pytest.mark.slow
def test_dataloaders_measures_a_single_configuration_once(prepared_seed001, tmp_path):
    """A part of one configuration (graph-tiledb-pf1, text-tiledb-pf16) picks no best from others, so its
    figure is not measured again (``phase`` confirm), as a best picked from several is."""
    one = dict(workloads=["graph"], systems=["tiledb-attrs"], loaders=["iterable"], prefetch=[128], workers=[0],
               writes_measured=False, overhead_systems=[])
    run.measure("dataloaders", "smoke", results_root=tmp_path, overrides=one, progress=False)
    rows = pd.read_csv(tmp_path / "dataloaders" / "dataloaders.csv")
    assert set(rows.phase) == {"select"} and rows[["prefetch", "batch_size", "workers"]].drop_duplicates().shape[0] == 1
    best = pd.read_csv(tmp_path / "dataloaders" / "dataloaders_best.csv")
    assert len(best) == 1 and not best.confirmed.any() and best["mean"].iloc[0] == best.selected_mean.iloc[0]


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_scalability_at_smoke_scale(prepared_seed001, results_root, tmp_path):
    tables = measured("scalability", results_root, tmp_path)
    scaled = check_rows(tables["scalability"])
    config = smoke("scalability")
    assert set(scaled.factor) == set(sum(config["factors"].values(), []))
    if (results_root / "dataloaders" / "dataloaders_best.csv").exists():  # else the seed's Table 1 (RocksDB only)
        assert scaled.config_source.str.contains("dataloaders_best.csv").all()
    rocks = scaled[scaled.system == "rocksdb"]
    assert set(rocks.block_cache_bytes.fillna(-1)) == {-1, 1 << 20}  # the default and 1 MiB, recorded
    base = {w: n for w, n in config["base_rows"].items()}
    assert all(r.n_rows == base[r.workload] * r.factor for r in scaled.itertuples())
    tiledb_rows = scaled[scaled.system == "tiledb-attrs"]
    assert len(tiledb_rows) and tiledb_rows.write_method.str.startswith("global order").all()


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_resources_at_smoke_scale(prepared_seed001, results_root, tmp_path):
    tables = measured("resources", results_root, tmp_path)
    used = check_rows(tables["resources"])
    if (results_root / "dataloaders" / "dataloaders_best.csv").exists():  # else the seed's Table 1 (RocksDB only)
        assert set(used.system) == set(smoke("resources")["systems"])
        assert set(used[used.system == "redis"].group) >= {"client", "server"}  # the server's processes sampled
    timeline = tables["resources_timeline"]
    assert (timeline.rss_bytes >= 0).all() and len(timeline) > len(used)


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_embeddings_at_smoke_scale(results_root, tmp_path):
    tables = measured("embeddings", results_root, tmp_path)
    rows = check_rows(tables["embeddings"])
    config = smoke("embeddings")
    assert set(rows.table) == set(config["tables"]) and set(rows.stream) == set(config["streams"])
    assert set(tables["embeddings_provenance"].table) == set(config["tables"])
    assert all((results_root / "raw" / "embeddings" / f"{t}.parquet").exists() for t in config["tables"])
