"""Findings as data, and the index built from them alone."""
import math

import pytest

from storebench.report import findings, index
from storebench.report.findings import Findings, Metric


def test_a_ratio_carries_its_propagated_ci_and_knows_when_it_is_noise():
    clear = findings.ratio("redis", "k=256 vs k=1", 2.0, 0.1, 0.5, 0.05)
    assert clear.value == pytest.approx(4.0)
    assert clear.ci95 == pytest.approx(4.0 * math.hypot(0.05, 0.1))
    assert not clear.within_noise
    assert findings.ratio("x", "c", 1.0, 0.2, 0.95, 0.1).within_noise
    assert Metric("redis", "network share", 0.5, 0.58, 0.0, "%").within_noise
    assert not Metric("ceph", "network share", 0.10, 0.05, 0.0, "%").within_noise
    assert not Metric("x", "space", 1.2, None, 1.0, "x").within_noise  # no CI: shown as measured


def test_unknown_seed_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown seed"):
        Findings("h", "m").save(tmp_path, "exp", "999")


def test_index_has_a_section_per_seed_marks_noise_and_lists_unrecorded_reports(tmp_path):
    metrics = (Metric("redis", "network share, veth (breakdown)", 0.5, 0.58, 0.0, "%"),
               findings.ratio("ceph", "network share, veth (breakdown)", 1.3, 0.01, 1.0, 0.01))
    Findings("Cassandra's network share is small; the paper saw 10%.", "text", metrics).save(tmp_path, "breakdown", "003")
    Findings("RocksDB loads fastest.", "text").save(tmp_path, "loaders", "001")
    for name in ("breakdown", "loaders", "orphan"):
        (tmp_path / f"{name}.html").write_text("<html></html>")
    page = index.build(tmp_path).read_text()
    assert page.index("Cheng &amp; Gunawi") < page.index("Britto")  # seeds in their order
    assert 'class="noise"' in page and "50.0% ± 58% (within noise)" in page
    assert "<td>1.30x ± 0.02</td>" in page
    assert 'href="breakdown.html"' in page and 'href="loaders.html"' in page
    assert "Reports without recorded findings" in page and 'href="orphan.html"' in page
