"""Seed 001's notebooks as a user runs them: papermill at smoke scale, real stores and servers."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from storebench.data import corpora, datasets
from storebench.pipeline import notebooks
from storebench.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("default_ports_free")]


@pytest.fixture(scope="module")
def prepared_seed001(tmp_path_factory):
    """CIFAR-10 and the two corpora prepared into a temporary directory (raw files from `make data`)."""
    import os

    out = tmp_path_factory.mktemp("prepared001")
    datasets.prepare("cifar10", out_dir=out)
    for name in ("sentiment140", "fb15k237"):
        corpora.prepare(name, out_dir=out)
    saved = os.environ.get("STOREBENCH_PREPARED")
    os.environ["STOREBENCH_PREPARED"] = str(out)
    yield out
    if saved is None:
        os.environ.pop("STOREBENCH_PREPARED", None)
    else:
        os.environ["STOREBENCH_PREPARED"] = saved


def smoke(section: str) -> dict:
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    return {**params[section], **params["presets"]["smoke"].get(section, {})}


def check_seed001_report(out: Path, name: str) -> pd.DataFrame:
    rows = pd.read_csv(out / f"{name}.csv")
    assert len(rows) and rows.verified.all() and (rows.scale == "smoke").all()
    assert rows.system_version.notna().all() and rows.git_rev.notna().all() and (rows.cpus > 0).all()
    assert (out / f"{name}.png").stat().st_size > 10_000
    recorded = json.loads((out / f"{name}.findings.json").read_text())
    assert recorded["paper"] == "ml_storage_study" and "paper" in recorded["headline"]
    page = (out / f"{name}.html").read_text()
    assert "Findings" in page and "Traceback" not in page and "seed statement" in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page
    return rows


def test_dataloaders_then_scalability_and_resources_at_smoke_scale(prepared_seed001, tmp_path):
    notebooks.run("dataloaders", "smoke", out_dir=tmp_path, progress=False)
    rows = check_seed001_report(tmp_path, "dataloaders")
    config = smoke("dataloaders")
    assert set(rows.workload) == set(config["workloads"]) and set(rows.system) == set(config["systems"])
    assert set(rows.loader) == {"map", "iterable"} and set(rows.workers) == set(config["workers"])
    assert (rows.rows_per_second > 0).all()
    for workload, n in config["rows"].items():
        assert (rows[rows.workload == workload].n_rows == n).all()  # every row of the dataset, every epoch
    writes = pd.read_csv(tmp_path / "dataloaders_write.csv")
    assert (writes.seconds > 0).all() and set(writes.system) == set(config["systems"])
    assert set(writes[writes.system == "rocksdb"].rows_per_key) == set(config["rows_per_key"])
    best = pd.read_csv(tmp_path / "dataloaders_best.csv")
    assert len(best) == len(rows.groupby(["workload", "system"]))
    overhead = pd.read_csv(tmp_path / "dataloaders_overhead.csv")
    assert {"localfs", "rocksdb"} <= set(overhead.system) and (overhead.loader_vs_bare > 0).all()
    page = (tmp_path / "dataloaders.html").read_text()
    assert "seed Table 1" in page and "CIFAR-100" in page and "Loader cost" in page

    notebooks.run("scalability", "smoke", out_dir=tmp_path, progress=False,
                  parameters={"overrides": {"best_configs": str(tmp_path / "dataloaders_best.csv")}})
    scaled = check_seed001_report(tmp_path, "scalability")
    config = smoke("scalability")
    assert set(scaled.factor) == set(sum(config["factors"].values(), []))
    assert scaled.config_source.str.contains("dataloaders_best.csv").all()
    rocks = scaled[scaled.system == "rocksdb"]
    assert set(rocks.block_cache_bytes.fillna(-1)) == {-1, 1 << 20}  # the default and 1 MiB, recorded
    base = {w: n for w, n in config["base_rows"].items()}
    assert all(r.n_rows == base[r.workload] * r.factor for r in scaled.itertuples())

    notebooks.run("resources", "smoke", out_dir=tmp_path, progress=False,
                  parameters={"overrides": {"best_configs": str(tmp_path / "dataloaders_best.csv")}})
    used = check_seed001_report(tmp_path, "resources")
    assert set(used.system) == set(smoke("resources")["systems"])
    assert set(used[used.system == "redis"].group) >= {"client", "server"}  # the server's processes sampled
    timeline = pd.read_csv(tmp_path / "resources_timeline.csv")
    assert (timeline.rss_bytes >= 0).all() and len(timeline) > len(used)
