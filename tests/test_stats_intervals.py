"""Intervals that respect their definition (storebench.core.stats) and the verdict rules applied to
them (storebench.report.findings.Rule): pure, fast, no server."""
import numpy as np
import pytest

from storebench.core import stats
from storebench.report import findings
from storebench.report.findings import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE, NOT_COMPARABLE


def test_bootstrap_ratio_ci_covers_the_true_ratio_and_is_asymmetric():
    rng = np.random.default_rng(7)
    true_ratio = 3.0
    covered = 0
    for _ in range(40):
        num = rng.lognormal(np.log(3.0), 0.3, 10)
        den = rng.lognormal(0.0, 0.3, 10)
        truth = true_ratio * 1.0  # means of the same lognormal shape: the ratio of the means is 3
        value, low, high = stats.ratio_interval(num, den)
        assert 0 < low < value < high
        covered += low <= truth <= high
    assert covered >= 32  # ~95% nominal; the percentile bootstrap under-covers a little at n = 10
    value, low, high = stats.ratio_interval(rng.lognormal(1.0, 0.6, 8), rng.lognormal(0.0, 0.6, 8))
    assert high - value > value - low  # a ratio's interval is skewed to the right


def test_bootstrap_is_reproducible_with_its_fixed_seed():
    rng = np.random.default_rng(1)
    a, b = rng.normal(10, 1, 6), rng.normal(5, 1, 6)
    assert stats.ratio_interval(a, b) == stats.ratio_interval(a, b)


def test_few_repeats_give_a_positive_log_scale_interval_and_one_repeat_none():
    value, low, high = stats.ratio_interval([1.0, 3.0], [1.0, 1.2])
    assert 0 < low < value < high
    value, low, high = stats.ratio_interval([2.0], [1.0, 1.1])
    assert value == pytest.approx(2 / 1.05) and np.isnan(low) and np.isnan(high)


@pytest.mark.parametrize("n", [2, 3, 6])
def test_a_share_ci_stays_within_0_and_1(n):
    rng = np.random.default_rng(n)
    hop, same = rng.normal(10, 3, n), rng.normal(9.8, 3, n)  # network share near 0, noisy
    value, low, high = stats.bounded_interval(lambda h, s: (h - s) / h, (hop, same))
    assert 0.0 <= low <= value <= high <= 1.0
    value, low, high = stats.share_interval(0.2, 2.0, 1.0, 0.5)
    assert 0.0 <= low <= value <= high <= 1.0


@pytest.mark.parametrize("rule, low, high, expected", [
    (findings.above(1.0), 1.1, 2.0, HOLDS),
    (findings.above(1.0), 0.2, 0.9, DOES_NOT_HOLD),
    (findings.above(1.0), 0.8, 1.3, INCONCLUSIVE),
    (findings.above(5.0), 2.0, 9.0, INCONCLUSIVE),  # beyond the claim's margin, not just no effect
    (findings.below(1.0), 0.5, 0.9, HOLDS),
    (findings.below(1.0), 1.1, 1.5, DOES_NOT_HOLD),
    (findings.within(0.8, 1.25), 0.9, 1.1, HOLDS),  # equivalence: the CI inside the band
    (findings.within(0.8, 1.25), 0.9, 1.4, INCONCLUSIVE),  # the estimate inside is not enough
    (findings.within(0.8, 1.25), 1.3, 2.0, DOES_NOT_HOLD),
    (findings.above(1.0), None, None, INCONCLUSIVE),  # no CI: never a verdict from a point
])
def test_verdict_rules_on_constructed_intervals(rule, low, high, expected):
    assert rule.judge(low, high)[0] == expected
    claim = findings.judge("S", "claim", "m", 1.0, (low, high), rule)
    assert claim.verdict == expected and claim.test == rule.spec()


def test_not_comparable_needs_a_reason_and_a_verdict_must_follow_its_rule():
    assert findings.not_comparable("S", "x", "m", "2 cores").verdict == NOT_COMPARABLE
    with pytest.raises(ValueError, match="reason"):
        findings.Claim("S", "x", "m", None, None, None, "", "", NOT_COMPARABLE, "")
    with pytest.raises(ValueError, match="its rule gives"):
        findings.Claim("S", "x", "m", 1.5, 0.8, 2.0, "x", "r", HOLDS, "", findings.above(1.0).spec())


def test_a_claim_that_does_not_hold_carries_its_known_cause_and_what_would_settle_it():
    unmet = findings.Unmet("the machine", "two cores shared by client and server", "a two-host run")
    failed = findings.judge("S", "x", "m", 0.5, (0.4, 0.6), findings.above(1.0), unmet=unmet)
    assert (failed.verdict, failed.cause, failed.why, failed.settle) == (
        DOES_NOT_HOLD, "the machine", "two cores shared by client and server", "a two-host run")
    assert failed.explanation().startswith("Cause: the machine. Two cores") and "Would settle it: a two-host" in \
        failed.explanation()
    held = findings.judge("S", "x", "m", 1.5, (1.2, 1.8), findings.above(1.0), unmet=unmet)
    assert held.verdict == HOLDS and not held.cause and not held.settle  # kept only when it does not hold
    assert "cause" not in findings.claim_record(held)  # a record without a cause reads as before the field
    with pytest.raises(ValueError, match="cause"):
        findings.Unmet("the weather", "x", "y")
    with pytest.raises(ValueError, match="does not hold"):
        findings.Claim("S", "x", "m", 1.5, 1.2, 1.8, "x", "r", HOLDS, "", None, "the machine", "y")


def test_every_report_prints_the_rules():
    made = findings.Findings("h", "text", (), (findings.not_comparable("S", "x", "m", "why"),))
    assert findings.RULES_HEADING in made.markdown and findings.RULES[0] in made.markdown
