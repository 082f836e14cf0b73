"""Seed 004's experiments as the pipeline runs them: the measurement at smoke scale on a real Cassandra (and
localfs), a real 2-rank torchrun run, then the report notebook on the recorded tables; the reports hold
verified rows, the seed's tables and the findings with their claims."""
import json
import re

import pytest

from storebench.pipeline import notebooks, run
from storebench.experiments.cassandra_dl import ranks
from storebench.report.findings import VERDICTS

# Tier markers are per test: `slow` on each test that needs it, none on the pure ones.


def check_report(out, name: str) -> dict:
    recorded = json.loads((out / f"{name}.findings.json").read_text())
    assert recorded["paper"] == "cassandra_dl" and recorded["claims"]
    assert all(c["verdict"] in VERDICTS for c in recorded["claims"])
    page = (out / f"{name}.html").read_text()
    assert "Findings" in page and "Traceback" not in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page
    return recorded


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_cassandra_loader_at_smoke_scale(tmp_path):
    results = tmp_path / "results"
    tables = run.measure("cassandra_loader", "smoke", results_root=results, progress=False)
    rows = tables["cassandra_loader"]
    assert set(rows.system) == {"cassandra", "localfs"} and set(rows.encoding) == {"jpeg", "raw"}
    assert (rows.images == 100).all() and (rows.images_per_s > 0).all() and rows.git_rev.notna().all()
    latency = tables["cassandra_loader_latency"]
    assert set(latency.loaders) == {1, 2} and (latency.p50 > 0).all() and (latency.mb_per_s > 0).all()
    feeds = tables["cassandra_loader_feeds"]
    assert set(feeds.system) == {"cassandra", "localfs"} and (feeds.utilisation_mean > 0).all()
    notebooks.run("cassandra_loader", out_dir=tmp_path, results_dir=results, progress=False)
    recorded = check_report(tmp_path, "cassandra_loader")
    assert {m["system"] for m in recorded["metrics"]} == {"cassandra", "localfs"}


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_cassandra_scale_runs_two_ranks_at_smoke_scale(tmp_path):
    results = tmp_path / "results"
    tables = run.measure("cassandra_scale", "smoke", results_root=results, progress=False)
    ranks_rows = tables["cassandra_scale_ranks"]
    assert set(ranks_rows.ranks) == {2} and set(ranks_rows.phase) == {"train", "val"}
    assert (ranks_rows.images > 0).all() and (ranks_rows.allreduce_share > 0).all()
    notebooks.run("cassandra_scale", out_dir=tmp_path, results_dir=results, progress=False)
    recorded = check_report(tmp_path, "cassandra_scale")
    assert {c["verdict"] for c in recorded["claims"]} == {"not comparable"}  # no ring, one rank count
    assert "not run at this scale" in (tmp_path / "cassandra_scale.html").read_text()


def test_rank_launcher_refuses_impossible_layouts(tmp_path):
    with pytest.raises(ValueError, match="node_rank"):
        ranks.launch("storebench.experiments.cassandra_dl.ddp_rank", [], nproc=2, out_dir=tmp_path, nnodes=2, node_rank=2)
