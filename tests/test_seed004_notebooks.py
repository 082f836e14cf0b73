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
    assert (rows.images > 0).all() and (rows.images_per_s > 0).all() and rows.git_rev.notna().all()
    assert (rows.seconds >= 0.2).all() and (rows.passes == 1).all()  # time-based passes of pass_seconds
    latency = tables["cassandra_loader_latency"]
    assert set(latency.loaders) == {1, 2} and (latency.p50 > 0).all() and (latency.mb_per_s > 0).all()
    feeds = tables["cassandra_loader_feeds"]
    assert set(feeds.system) == {"cassandra", "localfs"} and (feeds.utilisation_mean > 0).all()
    cold = tables["cassandra_loader_cold"]  # one whole epoch per encoding after a restart with the files evicted
    assert set(cold.system) == {"cassandra"} and sorted(cold.encoding) == ["jpeg", "raw"]
    assert (cold.location == "disk-cold").all() and (cold.images == 100).all() and (cold.batch_size == 32).all()
    assert (cold.server_restart_seconds > 0).all() and (cold.keyspace_bytes > 0).all()
    assert (cold.resident_fraction < 0.5).all(), cold.resident_fraction.tolist()
    notebooks.run("cassandra_loader", out_dir=tmp_path, results_dir=results, progress=False)
    recorded = check_report(tmp_path, "cassandra_loader")
    assert {m["system"] for m in recorded["metrics"]} == {"cassandra", "localfs"}
    assert "**Cold, jpeg**" in recorded["markdown"] and any("warm / cold" in m["column"] for m in recorded["metrics"])


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_cassandra_scale_runs_two_ranks_at_smoke_scale(tmp_path):
    results = tmp_path / "results"
    tables = run.measure("cassandra_scale", "smoke", results_root=results, progress=False)
    ranks_rows = tables["cassandra_scale_ranks"]
    assert set(ranks_rows.ranks) == {2} and set(ranks_rows.phase) == {"train", "val"}
    assert set(ranks_rows.step) == {"emulated", "loader-bound"}  # the seed's step and the loaders alone
    assert (ranks_rows.images > 0).all() and (ranks_rows.allreduce_share > 0).all()
    notebooks.run("cassandra_scale", out_dir=tmp_path, results_dir=results, progress=False)
    recorded = check_report(tmp_path, "cassandra_scale")
    assert {c["verdict"] for c in recorded["claims"]} == {"not comparable"}  # no ring, one rank count
    assert "not run at this scale" in (tmp_path / "cassandra_scale.html").read_text()


def test_saturation_is_where_more_loaders_stop_raising_the_mb_per_s():
    import pandas as pd

    from storebench.experiments.cassandra_dl.cassandra_loader.saturation import saturation

    runs = pd.DataFrame({"loaders": [1, 1, 2, 2, 4, 4], "mb_per_s": [100, 110, 190, 200, 205, 200]})
    found = saturation(runs, 0.1)
    assert (found.knee, found.saturated) == (2, 4) and "saturation at 2 loaders" in found.text()
    rising = saturation(runs[runs.loaders < 4], 0.1)
    assert rising.saturated is None and "no saturation reached" in rising.text()
    assert saturation(runs.assign(mb_per_s=100), 0.1).knee == 1  # one loader already saturates


def test_rank_launcher_refuses_impossible_layouts(tmp_path):
    with pytest.raises(ValueError, match="node_rank"):
        ranks.launch("storebench.experiments.cassandra_dl.ddp_rank", [], nproc=2, out_dir=tmp_path, nnodes=2, node_rank=2)
