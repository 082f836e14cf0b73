"""Every committed findings file (quick check, paper and reference): each claim has a verdict of the allowed
set, a CI or a stated reason, and the verdict its rule gives its interval; each "does not hold" says its cause
and what would settle it; the index has a section per paper."""
from pathlib import Path

import pytest

from storebench.core.experiment import PAPERS
from storebench.paths import REPORTS_DIR
from storebench.report import findings, index

FILES = sorted(REPORTS_DIR.glob("*.findings.json")) + sorted(REPORTS_DIR.glob("*/*.findings.json"))


def test_there_are_committed_findings():
    assert FILES


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(REPORTS_DIR)))
def test_each_claim_has_an_interval_or_a_reason_and_the_verdict_of_its_rule(path: Path):
    recorded = findings.read(path)
    for claim in recorded.claims:
        assert claim.verdict in findings.VERDICTS
        has_ci = claim.ci_low is not None and claim.ci_high is not None
        assert has_ci or claim.why, f"{claim.statement}: neither a CI nor a reason"
        if claim.verdict == findings.DOES_NOT_HOLD:
            assert claim.cause in findings.CAUSES and claim.settle, f"{claim.statement}: no cause or way to settle it"
        if claim.verdict == findings.NOT_COMPARABLE:
            continue
        assert claim.test is not None, f"{claim.statement}: its rule is not recorded as data"
        assert findings.Rule(**claim.test).judge(claim.ci_low, claim.ci_high)[0] == claim.verdict
        if has_ci:
            assert claim.ci_low <= claim.ci_high
            if claim.unit == "%":
                assert 0.0 <= claim.ci_low and claim.ci_high <= 1.0
    for metric in recorded.metrics:
        assert "±" not in metric.text()
        if metric.has_ci:
            assert metric.ci_low <= metric.value <= metric.ci_high
            if metric.unit == "%":
                assert 0.0 <= metric.ci_low and metric.ci_high <= 1.0
            if metric.unit == "x":
                assert metric.ci_low > 0


def test_the_index_has_a_section_per_paper_and_prints_the_rules(tmp_path):
    import shutil

    for path in FILES:
        target = tmp_path / path.relative_to(REPORTS_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    page = index.build(tmp_path).read_text()
    for paper in PAPERS:
        assert f'id="{paper}"' in page
    assert findings.RULES[0].split('"')[0] in page
    assert "±" not in page
