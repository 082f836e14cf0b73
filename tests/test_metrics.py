"""Each experiment's headline figures are DVC metrics and a DVC plot, and `dvc metrics diff` shows
what changed between two committed runs."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml

from storebench.paths import ROOT
from storebench.pipeline import deps as pipeline
from storebench.report import metrics

REPORTS = ROOT / "reports"


def claim(statement, value, low=None, high=None, verdict="holds", unit="x"):
    return {"statement": statement, "metric": "a / b", "value": value, "ci_low": low, "ci_high": high,
            "unit": unit, "verdict": verdict}


def record(*claims, experiment="format"):
    return {"experiment": experiment, "claims": list(claims), "run": {"run_id": "r1", "scale": "small", "repeats": 5}}


def test_metrics_are_numbers_keyed_by_the_claim_with_its_interval_and_the_verdict_counts():
    made = metrics.metrics(record(claim("Pickle is 2x faster than raw.", 2.5, 2.1, 3.0),
                                  claim("Pickle is 2x faster than raw.", 1.5, verdict="inconclusive"),
                                  claim("Not testable here", None, verdict="not comparable", unit="")))
    assert made["claims"] == {"holds": 1, "does_not_hold": 0, "inconclusive": 1, "not_comparable": 1, "total": 3}
    assert made["figures"] == {"pickle_is_2x_faster_than_raw": {"value": 2.5, "low": 2.1, "high": 3.0},
                               "pickle_is_2x_faster_than_raw_2": {"value": 1.5}}
    assert made["run"] == {"repeats": 5}  # strings (run id, scale) stay in the findings file


def test_claims_worded_apart_by_punctuation_only_are_refused():
    with pytest.raises(ValueError, match="same metric key"):
        metrics.metrics(record(claim("A is fast", 1.0), claim("A: is fast", 2.0)))


def test_the_plot_table_has_the_ratios_and_shares_only():
    rows = metrics.plot_rows(record(claim("ratio", 2.0), claim("share", 0.1, unit="%"),
                                    claim("count", 3.0, unit="batches"), claim("none", None, unit="")))
    assert rows == [{"claim": "ratio", "value": 2.0}, {"claim": "share", "value": 0.1}]


def test_committed_metrics_are_what_the_report_stage_writes(tmp_path):
    for findings_path in sorted(REPORTS.glob("*.findings.json")):
        made, plot = metrics.write(tmp_path, findings_path)
        name = findings_path.name.removesuffix(".findings.json")
        assert made.read_text() == metrics.metrics_path(REPORTS, name).read_text(), "python -m storebench.report.metrics"
        assert plot.read_text() == metrics.plot_path(REPORTS, name).read_text()


def test_every_report_stage_declares_its_metrics_and_plot():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    reports = [name for name in stages if name.startswith("report_")]
    for name in reports:
        experiment = name.removeprefix("report_")
        assert stages[name]["metrics"] == [{f"reports/metrics/{experiment}.json": {"cache": False}}]
        (plot, flags), = stages[name]["plots"][0].items()
        assert plot == f"reports/metrics/{experiment}_plot.csv" and flags["cache"] is False
        assert (flags["x"], flags["y"]) == ("value", "claim")


def test_a_report_stage_without_its_metrics_is_reported(tmp_path):
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    del doc["stages"]["report_format"]["metrics"]
    changed = tmp_path / "dvc.yaml"
    changed.write_text(yaml.safe_dump(doc, sort_keys=False))
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    problems = pipeline.check(changed)
    assert list(problems) == ["report_format"]
    assert problems["report_format"]["missing"][0].startswith('metrics {"reports/metrics/format.json"')


def dvc(repo, *args) -> str:
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    done = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def git(repo, *args) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_dvc_metrics_diff_shows_the_figure_that_changed_between_two_committed_runs(tmp_path):
    pytest.importorskip("dvc")
    repo, findings_path = tmp_path / "repo", REPORTS / "format.findings.json"
    (repo / "reports").mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "test@example.org")
    git(repo, "config", "user.name", "test")
    dvc(repo, "init", "-q")
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["report_format"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"report_format": {
        "cmd": "true", "metrics": stage["metrics"], "plots": stage["plots"]}}}))  # as declared in the pipeline
    first = json.loads(findings_path.read_text())
    changed = next(c for c in first["claims"] if c["ci_low"] is not None)
    for value in (changed["value"], changed["value"] * 2):
        run = {**first, "claims": [{**c, "value": value} if c is changed else c for c in first["claims"]]}
        (repo / "findings.json").write_text(json.dumps(run))
        metrics.write(repo / "reports", repo / "findings.json")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"run with {value}")

    diff = json.loads(dvc(repo, "metrics", "diff", "HEAD~1", "HEAD", "--json"))["reports/metrics/format.json"]
    key = f"figures.{metrics.slug(changed['statement'].rstrip('.'))}.value"
    assert diff == {key: {"old": changed["value"], "new": changed["value"] * 2, "diff": changed["value"]}}
    (plot,) = json.loads(dvc(repo, "plots", "diff", "HEAD~1", "HEAD", "--json"))["data"]["reports/metrics/format_plot.csv"]
    bars = [(row["rev"], float(row["value"])) for row in plot["content"]["data"]["values"]
            if row["claim"] == changed["statement"].rstrip(".")]
    assert sorted(plot["revisions"]) == ["HEAD", "HEAD~1"] and sorted(bars) == [
        ("HEAD", changed["value"] * 2), ("HEAD~1", changed["value"])]
