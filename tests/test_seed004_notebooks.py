"""Seed 004's notebooks as a user runs them: papermill at smoke scale on a real Cassandra (and localfs),
a real 2-rank torchrun run; the reports hold verified rows, the seed's tables and the findings."""
import json
import re

import pandas as pd
import pytest

from storebench.pipeline import notebooks
from storebench.experiments.cassandra_dl import ranks

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("default_ports_free")]


def check_report(out, name: str) -> None:
    recorded = json.loads((out / f"{name}.findings.json").read_text())
    assert recorded["paper"] == "cassandra_dl"
    page = (out / f"{name}.html").read_text()
    assert "Findings" in page and "Traceback" not in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page


def test_cassandra_loader_notebook_at_smoke_scale(tmp_path):
    notebooks.run("cassandra_loader", "smoke", out_dir=tmp_path, progress=False)
    rows = pd.read_csv(tmp_path / "cassandra_loader.csv")
    assert set(rows.system) == {"cassandra", "localfs"} and set(rows.encoding) == {"jpeg", "raw"}
    assert (rows.images == 100).all() and (rows.images_per_s > 0).all() and rows.git_rev.notna().all()
    latency = pd.read_csv(tmp_path / "cassandra_loader_latency.csv")
    assert set(latency.loaders) == {1, 2} and (latency.p50 > 0).all() and (latency.mb_per_s > 0).all()
    feeds = pd.read_csv(tmp_path / "cassandra_loader_feeds.csv")
    assert set(feeds.system) == {"cassandra", "localfs"} and (feeds.utilisation_mean > 0).all()
    check_report(tmp_path, "cassandra_loader")


def test_cassandra_scale_notebook_runs_two_ranks_at_smoke_scale(tmp_path):
    notebooks.run("cassandra_scale", "smoke", out_dir=tmp_path, progress=False)
    ranks_rows = pd.read_csv(tmp_path / "cassandra_scale_ranks.csv")
    assert set(ranks_rows.ranks) == {2} and set(ranks_rows.phase) == {"train", "val"}
    assert (ranks_rows.images > 0).all() and (ranks_rows.allreduce_share > 0).all()
    check_report(tmp_path, "cassandra_scale")
    assert "not run at this scale" in (tmp_path / "cassandra_scale.html").read_text()


def test_rank_launcher_refuses_impossible_layouts(tmp_path):
    with pytest.raises(ValueError, match="node_rank"):
        ranks.launch("storebench.experiments.cassandra_dl.ddp_rank", [], nproc=2, out_dir=tmp_path, nnodes=2, node_rank=2)
