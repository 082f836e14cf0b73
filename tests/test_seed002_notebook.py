"""Seed 002's experiment as the pipeline runs it: the measurement at smoke scale (real MinIO in a namespace,
Toxiproxy, memory cgroups), then the report notebook on the recorded tables; the report holds verified rows,
the seed's numbers and the findings with their claims."""
import json
import re

import pytest

from storebench.pipeline import notebooks, run
from storebench.report.findings import VERDICTS

# Tier markers are per test: `slow` on each test that needs it, none on the pure ones.


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_layouts_at_smoke_scale(tmp_path):
    results = tmp_path / "results"
    tables = run.measure("layouts", "smoke", results_root=results, progress=False)
    rows = tables["layouts"]
    layouts = {"L1-objects", "L2-tar", "L3-parquet", "L3-parquet-sorted", "L4-lance"}
    assert set(rows.layout) == layouts and (rows.scale == "smoke").all()
    ok = rows[rows.status == "ok"]
    assert len(ok) and (ok.seconds > 0).all() and (ok.bytes_down >= ok.image_bytes).all()
    assert rows.net_rtt_ms.min() > 300 and (rows.net_time_scale == 20).all()  # 20 ms x 20 reached the client
    assert set(rows.memory_tier) == {"unlimited", "footprint", "2x footprint"}
    assert (rows.status[rows.memory_tier == "unlimited"] == "ok").all()
    limited = rows[rows.memory_tier == "2x footprint"]  # a fresh client per query, limited to 2x its footprint
    assert len(limited) == 5 * 3 and (limited.memory_limit_bytes == (2 * limited.footprint_bytes).astype(int)).all()
    assert (rows[rows.memory_tier == "footprint"].peak_bytes > 30 * 2**20).all()  # the whole client is charged
    assert rows.git_rev.notna().all() and rows.server_version.notna().all()
    written = tables["layouts_write"]
    assert set(written.layout) == layouts and (written.stored_bytes > 0.95 * 109_576_417).all()
    counts = tables["layouts_counts"]
    assert counts.set_index("query").loc["Q8", "images"] == 181 and counts.seed_mini_images.notna().all()
    reads = tables["layouts_rowgroups"].set_index(["layout", "query"])
    assert reads.loc[("L3-parquet-sorted", "Q1"), "row_groups_not_excluded"] == 1  # sorted by label: one row group
    notebooks.run("layouts", out_dir=tmp_path, results_dir=results, progress=False)
    recorded = json.loads((tmp_path / "layouts.findings.json").read_text())
    assert recorded["paper"] == "layoutbench" and "L1/L2" in recorded["headline"]
    assert recorded["claims"] and all(c["verdict"] in VERDICTS for c in recorded["claims"])
    page = (tmp_path / "layouts.html").read_text()
    assert "Finding 1" in page and "Traceback" not in page and "did not finish" in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page
