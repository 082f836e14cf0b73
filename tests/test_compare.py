"""Two runs side by side: figures as other / base with a CI, verdicts beside each other, from findings
directories or from a git revision of the committed reports."""
import pytest

from storebench.core.experiment import Experiment
from storebench.report import compare
from storebench.report import findings as f

EXPERIMENT = Experiment(name="location", paper="dl_storage_benchmarking", reference="Sec 5.1", question="q?")


def write(folder, value, low, high, share, verdict_rule):
    metrics = (f.Metric("redis", "speed-up", value, ci_low=low, ci_high=high),
               f.share("redis", "network share", share, share - 0.05, share + 0.05))
    claims = (f.judge("Sec 5.1", "Redis is faster.", "speed-up", value, (low, high), verdict_rule),)
    manifest = {"run_id": f"run-{value}", "scale": "small", "git_rev": "abc", "started_utc": "2026-11-25T10:00:00",
                "machine": {"host": "vm", "cores": 2}}
    folder.mkdir()
    f.write(folder, EXPERIMENT, f.Findings(f"headline {value}", "text", metrics, claims), manifest)
    return folder


def test_figures_as_ratios_and_verdicts_side_by_side(tmp_path):
    base = compare.load(str(write(tmp_path / "base", 2.0, 1.9, 2.1, 0.30, f.above(1.0))))
    other = compare.load(str(write(tmp_path / "other", 4.0, 3.8, 4.2, 0.50, f.above(5.0))))
    page = compare.render(base, other)
    assert "2.00x [" in page  # 4.0 / 2.0, with its interval
    assert "+20.0 pt" in page  # the share as a difference in points
    assert "1 verdict changed" in page and "holds" in page and "does not hold" in page
    kind, value, low, high = compare.change(base.recorded["location"].metrics[0], other.recorded["location"].metrics[0])
    assert kind == "ratio" and value == pytest.approx(2.0) and low < 2.0 < high


def test_unknown_inputs_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not a directory"):
        compare.load(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no \\*.findings.json"):
        compare.load(str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="git ls-tree"):
        compare.load("git:no-such-revision")
    folder = write(tmp_path / "one", 2.0, 1.9, 2.1, 0.3, f.above(1.0))
    with pytest.raises(ValueError, match="no findings for layouts"):
        compare.load(str(folder), ["layouts"])


def test_the_committed_results_against_themselves_change_nothing(tmp_path):
    out = compare.main(["git:HEAD", "git:HEAD", "--out", str(tmp_path / "c.html")])
    page = out.read_text()
    assert "Two runs side by side" in page and "verdicts changed" in page
    assert "<b>changed</b>" not in page
