"""Findings as data, and the index built from them alone."""
import math

import pytest

from storebench.report import findings, index
from storebench.report.findings import Findings, Metric


def test_a_ratio_carries_its_own_asymmetric_ci_and_knows_when_it_is_noise():
    clear = findings.ratio("redis", "k=256 vs k=1", 2.0, 0.1, 0.5, 0.05)
    assert clear.value == pytest.approx(4.0)
    spread = math.hypot(0.05, 0.1)
    assert clear.ci_low == pytest.approx(4.0 * math.exp(-spread)) and clear.ci_high == pytest.approx(4.0 * math.exp(spread))
    assert clear.ci_high - clear.value > clear.value - clear.ci_low > 0  # asymmetric, positive
    assert not clear.within_noise
    assert findings.ratio("x", "c", 1.0, 0.2, 0.95, 0.1).within_noise
    assert Metric("redis", "network share", 0.5, 0.58, 0.0, "%").within_noise  # an old file's half-width
    old = Metric("redis", "network share", 0.38, 1.39, 0.0, "%")
    assert 0.0 <= old.ci_low and old.ci_high <= 1.0  # a share stays in [0, 100%]
    assert not Metric("ceph", "network share", 0.10, 0.05, 0.0, "%").within_noise
    assert not Metric("x", "space", 1.2, None, 1.0, "x").within_noise  # no CI: shown as measured
    one_repeat = findings.ratio("x", "c", 2.0, float("nan"), 1.0, 0.1)
    assert one_repeat.ci_low is None and "no CI" in one_repeat.text() and "±" not in one_repeat.text()
    assert findings.judge_metric("S", "faster", "m", one_repeat, findings.above(1.0)).verdict == "inconclusive"


def test_numbers_have_three_significant_digits():
    assert findings.sig3(1091.44) == "1,090" and findings.sig3(0.002483) == "0.00248"
    assert findings.sig3(22.41) == "22.4" and findings.sig3(0.38, "%") == "38.0%"
    assert findings.ratio("a", "c", 22.41, 2.0, 1.0, 0.1).text().startswith("22.4x [")


def test_unknown_paper_is_refused():
    from storebench.core.experiment import Experiment

    with pytest.raises(ValueError, match="unknown paper 'seed999'"):
        Experiment("exp", "seed999", "Sec 1", "?")


def test_verdicts_follow_the_interval_rules():
    above, below, within = findings.above(1.0), findings.below(1.1), findings.within(0.9, 1.1)
    assert findings.judge("S", "faster", "m", 1.5, 0.2, above).verdict == "holds"
    assert findings.judge("S", "faster", "m", 0.5, 0.2, above).verdict == "does not hold"
    straddles = findings.judge("S", "faster", "m", 1.1, 0.2, above)
    assert straddles.verdict == "inconclusive" and straddles.ci_low == pytest.approx(0.9)
    assert findings.judge("S", "< 10%", "m", 1.05, 0.01, below).verdict == "holds"
    assert findings.judge("S", "same", "m", 1.0, 0.05, within).verdict == "holds"
    assert findings.judge("S", "same", "m", 1.3, 0.05, within).verdict == "does not hold"
    one_repeat = findings.judge("S", "faster", "m", 3.0, float("nan"), above)
    assert one_repeat.verdict == "inconclusive" and "no confidence interval" in one_repeat.why
    assert findings.not_comparable("S", "x", "m", "2 cores").verdict == "not comparable"
    with pytest.raises(ValueError, match="verdict"):
        findings.Claim("S", "x", "m", 1, 0, 2, "x", "r", "probably")


def test_the_findings_file_is_strict_json_and_the_index_counts_claims_per_paper(tmp_path):
    from storebench.core.experiment import Experiment

    declared = Experiment("granularity", "dl_storage_benchmarking", "Sec 5.3", "which granularity?")
    claims = (findings.judge("Sec 5.3", "halves", "m", 2.0, 0.1, findings.above(1.5)),
              findings.judge("Sec 5.3", "< 10%", "m", 1.2, float("nan"), findings.below(1.1)))
    made = Findings("Coarser objects help.", "text", (Metric("x", "c", 1.0, float("nan"), 1.0, "x"),), claims)
    path = findings.write(tmp_path, declared, made, {"run_id": "r1", "scale": "smoke"})
    assert "NaN" not in path.read_text()
    recorded = findings.read(path)
    assert recorded.verdict_counts == {"holds": 1, "does not hold": 0, "inconclusive": 1, "not comparable": 0}
    assert recorded.run["run_id"] == "r1"
    (tmp_path / "granularity.html").write_text("<html></html>")
    page = index.build(tmp_path).read_text()
    assert "2 claims of the paper judged" in page and "<b>1</b> holds" in page and "<b>1</b> inconclusive" in page
    assert "<b>Measured</b> at scale <code>smoke</code>" in page  # what the results are, from the runs themselves


def test_index_has_a_section_per_seed_marks_noise_and_lists_unrecorded_reports(tmp_path):
    metrics = (Metric("redis", "network share, veth (breakdown)", 0.5, 0.58, 0.0, "%"),
               findings.ratio("ceph", "network share, veth (breakdown)", 1.3, 0.01, 1.0, 0.01))
    from storebench.core.experiment import Experiment

    findings.write(tmp_path, Experiment("breakdown", "dl_storage_benchmarking", "Fig 3", "?"),
                   Findings("Cassandra's network share is small; the paper saw 10%.", "text", metrics), {})
    findings.write(tmp_path, Experiment("loaders", "ml_storage_study", "Table 1", "?"),
                   Findings("RocksDB loads fastest.", "text"), {})
    for name in ("breakdown", "loaders", "orphan"):
        (tmp_path / f"{name}.html").write_text("<html></html>")
    page = index.build(tmp_path).read_text()
    assert page.index("Peng Cheng and Haryadi S. Gunawi") < page.index("Britto")  # papers in their order
    assert 'class="noise"' in page and "50.0%<br><small>[0%, 100%]</small><br><small>(within noise)</small>" in page
    assert "<td>1.30x<br><small>[1.28x, 1.32x]</small></td>" in page and "±" not in page
    assert 'href="breakdown.html"' in page and 'href="loaders.html"' in page
    assert "Reports without recorded findings" in page and 'href="orphan.html"' in page


def test_the_overview_keeps_every_figure_on_the_page_however_many_there_are():
    def recorded(systems, figures):
        metrics = tuple(findings.ratio(s, f"figure {f}", 1.5, 0.01, 1.0, 0.01) for s in systems for f in figures)
        return [findings.Recorded("x", "dl_storage_benchmarking", "?", metrics, (), {})]

    few_systems = index.overview_table(recorded(["cassandra", "redis"], range(13)))
    assert few_systems.count("<table>") == 1 and few_systems.count("<tr>") == 14  # a row per figure
    assert "<td class='figure'>figure 12 (ratio)</td>" in few_systems and "class='columns'" not in few_systems
    many_systems = index.overview_table(recorded([f"s{i}" for i in range(10)], range(18)))
    assert many_systems.count("<table>") == 3  # 18 lettered figures in tables of 6, every system in each
    assert all(many_systems.count(f"<td>s{i}</td>") == 3 for i in range(10))
    assert "<li><b>R</b>: figure 17</li>" in many_systems and many_systems.count("<th title=") == 18
    sparse = recorded(["cassandra"], range(18)) + recorded([f"s{i}" for i in range(9)], [0])
    assert index.overview_table(sparse).count("<td>s3</td>") == 1  # only in the table with its figure


def test_the_index_presents_the_reference_results_first_with_preset_data_when_and_how_long(tmp_path):
    from storebench.core.experiment import Experiment

    reference = tmp_path / "reference"
    reference.mkdir()
    claim = findings.judge("Sec 5.4", "no interruption", "failed batches", 0.0, (0.0, 0.0), findings.below(0.5))
    run = {"run_id": "r1", "scale": "reference", "started_utc": "2026-11-26T00:41:55+00:00", "duration_s": 1347.6,
           "settings": {"images": 12000, "repeats": 5}, "parts": {"a": {}, "b": {}}}
    findings.write(reference, Experiment("cassandra_scale", "cassandra_dl", "Sec 5.4", "?", data="{images:,} images"),
                   Findings("The ring held.", "text", claims=(claim,)), run)
    (reference / "cassandra_scale.html").write_text("<html></html>")
    findings.write(tmp_path, Experiment("location", "dl_storage_benchmarking", "Fig 2", "?"),
                   Findings("Memory is faster.", "text"), {"scale": "small"})
    (tmp_path / "location.html").write_text("<html></html>")
    page = index.build(tmp_path).read_text()
    assert page.index("The reference results") < page.index("The quick check")
    row = page[page.index("href='reference/cassandra_scale.html'"):]
    row = row[:row.index("</tr>")]
    assert "reference" in row and "12,000 images" in row and "2026-11-26 00:41" in row and "22.5 min (2 parts)" in row
    assert "1 holds" in row
    assert "not measured at the reference preset yet (quick check: <a href='location.html'>" in page
    assert "<td>1 of 2</td>" in page  # the Cassandra paper: one of its two experiments measured


def test_the_index_marks_a_reference_result_measured_before_its_inputs_changed(tmp_path):
    from storebench.core.experiment import Experiment
    from storebench.pipeline.reference import StageState

    reference = tmp_path / "reference"
    reference.mkdir()
    for name in ("cassandra_scale", "cassandra_loader"):
        findings.write(reference, Experiment(name, "cassandra_dl", "Sec 5", "?"), Findings("Ran.", "text"),
                       {"scale": "reference", "started_utc": "2026-11-26T00:41:55+00:00", "duration_s": 60})
        (reference / f"{name}.html").write_text("<html></html>")

    def measured(stage, experiment, part=None, changed=()):
        return StageState(stage, experiment, part, True, "2026-11-26T00:41", 60.0, "abcdef12", changed)

    stages = [measured("measure_cassandra_scale", "cassandra_scale", changed=("lib/storebench/stores/tiledb.py",)),
              measured("measure_cassandra_loader-a", "cassandra_loader", "a"),
              measured("measure_dataloaders-x", "dataloaders", "x", changed=("param dataloaders",)),
              StageState("measure_dataloaders-y", "dataloaders", "y", False, None, None, None, ())]
    page = index.build(tmp_path, stages).read_text()
    banner = page[page.index("<b>Stale:</b>"):page.index("</div>", page.index("<b>Stale:</b>"))]
    assert "cassandra scale</b>: measured before a change to stores/tiledb.py" in banner
    assert "cassandra loader" not in banner and "dataloaders" not in banner  # current, and not presented
    row = lambda name: page[page.index(f"href='reference/{name}.html'"):][:page[page.index(f"href='reference/{name}.html'"):].index("</tr>")]
    assert "<b>stale</b>" in row("cassandra_scale") and ">yes</td>" in row("cassandra_loader")
    assert "1 of 2 parts measured, 1 of them stale" in page
    assert "<b>Stale:</b>" not in index.build(tmp_path, stages[1:2]).read_text()


def test_the_index_marks_a_reference_result_whose_parts_were_redefined_since(tmp_path):
    """A presented report whose experiment has a part defined since (not measured yet) is not "current"."""
    from storebench.core.experiment import Experiment
    from storebench.pipeline.reference import StageState

    reference = tmp_path / "reference"
    reference.mkdir()
    findings.write(reference, Experiment("dataloaders", "ml_storage_study", "Sec 5", "?"), Findings("Ran.", "text"),
                   {"scale": "reference", "started_utc": "2026-11-26T00:41:55+00:00", "duration_s": 60})
    (reference / "dataloaders.html").write_text("<html></html>")
    stages = [StageState("measure_dataloaders-x", "dataloaders", "x", True, "2026-11-26T00:41", 60.0, "abcdef12", ()),
              StageState("measure_dataloaders-y", "dataloaders", "y", False, None, None, None, ())]
    page = index.build(tmp_path, stages).read_text()
    row = page[page.index("href='reference/dataloaders.html'"):]
    assert "<b>incomplete</b>" in row[:row.index("</tr>")]
    banner = page[page.index("<b>Stale:</b>"):page.index("</div>", page.index("<b>Stale:</b>"))]
    assert "dataloaders</b> (1 of 2 parts): defined since its report and not measured yet (y)" in banner
    assert "<b>Stale:</b>" not in index.build(tmp_path, stages[:1]).read_text()


def test_the_index_links_a_partial_report_and_counts_none_of_its_verdicts(tmp_path):
    """An experiment with some parts measured: its row links the partial report, and the per-paper counts
    leave its verdicts out (they are provisional until the last part lands)."""
    from storebench.core.experiment import Experiment
    from storebench.pipeline.reference import StageState

    partial = tmp_path / "reference" / "partial"
    partial.mkdir(parents=True)
    claim = findings.judge("Fig 4", "x", "ratio", 2.0, (1.9, 2.1), findings.above(1.5))
    findings.write(partial, Experiment("granularity", "dl_storage_benchmarking", "Fig 4", "?"),
                   Findings("Provisional.", "text", claims=(claim,)), {"scale": "reference", "parts": {"a": {}}})
    (partial / "granularity.html").write_text("<html></html>")
    stages = [StageState("measure_granularity-a", "granularity", "a", True, "2026-12-07T05:00", 60.0, "abcdef12", ()),
              StageState("measure_granularity-b", "granularity", "b", False, None, None, None, ())]
    page = index.build(tmp_path, stages).read_text()
    assert ("1 of 2 parts measured: <a href='reference/partial/granularity.html'>partial report</a>, its verdicts "
            "not counted (quick check:") in page
    assert "1 holds" not in page
    (partial / "granularity.html").unlink()
    assert "partial report" not in index.build(tmp_path, stages).read_text()
