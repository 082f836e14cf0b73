"""What an experiment found, as data: a one-line headline, the Findings text, per-system metrics for
the index's overview, and the paper's claims with their verdicts. ``analyse`` builds a ``Findings``;
the report stage writes it to ``reports/<experiment>.findings.json``; the HTML report and the index
are rendered from that file alone.

Verdicts come from intervals, by the rules below (stated once): a directional claim **holds** when
the 95% CI lies wholly on the claimed side of the threshold, **does not hold** when it lies wholly
on the other side, and is **inconclusive** otherwise; a "no difference" claim holds when the CI lies
inside the stated band. A claim this machine or this scale cannot judge is **not comparable**, with
the reason.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from storebench.core.experiment import PAPERS, Experiment

HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_COMPARABLE = "holds", "does not hold", "inconclusive", "not comparable"
VERDICTS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_COMPARABLE)
VERDICT_COLOURS = {HOLDS: "#1a7f37", DOES_NOT_HOLD: "#b42318", INCONCLUSIVE: "#9a6700", NOT_COMPARABLE: "#57606a"}


@dataclass(frozen=True)
class Metric:
    """One per-system figure for the overview: ``value`` with its 95% CI half-width (absolute, same
    unit), and ``no_effect``, the value that would mean "no difference" (1.0 for a ratio, 0 for a
    share). ``column`` names the figure AND the configuration it was measured in."""
    system: str
    column: str
    value: float
    ci95: float | None
    no_effect: float
    unit: str  # "x" (a ratio) or "%" (a share, value as a fraction)

    @property
    def within_noise(self) -> bool:
        """The 95% CI includes "no effect": the figure is not a finding."""
        return self.ci95 is not None and not math.isnan(self.ci95) and abs(self.value - self.no_effect) <= self.ci95

    def text(self) -> str:
        if self.unit == "%":
            value, ci = f"{self.value:.1%}", (f"{self.ci95:.0%}" if self.ci95 is not None else None)
        else:
            value, ci = f"{self.value:.2f}x", (f"{self.ci95:.2f}" if self.ci95 is not None else None)
        return value + (f" ± {ci}" if ci is not None and not math.isnan(self.ci95) else "")


def ratio(system: str, column: str, numerator: float, numerator_ci: float, denominator: float,
          denominator_ci: float) -> Metric:
    """numerator / denominator as a Metric, its CI by first-order error propagation (relative
    half-widths added in quadrature), as for two independent means. A mean without a CI (one repeat)
    gives a ratio without a CI, never a CI of zero."""
    value = numerator / denominator
    if not (_finite(numerator_ci) and _finite(denominator_ci)):
        return Metric(system, column, float(value), float("nan"), 1.0, "x")
    relative = math.hypot(_relative(numerator_ci, numerator), _relative(denominator_ci, denominator))
    return Metric(system, column, float(value), float(abs(value) * relative), 1.0, "x")


def _relative(ci: float, mean: float) -> float:
    return 0.0 if mean == 0 else ci / abs(mean)


# --- the verdict rules -------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    """How a claim is judged on a metric's 95% CI [low, high]."""
    kind: str  # "above", "below", "within"
    threshold: float = 0.0
    upper: float = 0.0  # "within": the band [threshold, upper]

    def judge(self, low: float | None, high: float | None) -> tuple[str, str]:
        if not _finite(low) or not _finite(high):
            return INCONCLUSIVE, "no confidence interval (too few repeats)"
        if self.kind == "above":
            return _side(low > self.threshold, high < self.threshold)
        if self.kind == "below":
            return _side(high < self.threshold, low > self.threshold)
        inside = low >= self.threshold and high <= self.upper
        return _side(inside, high < self.threshold or low > self.upper)

    def text(self) -> str:
        if self.kind == "above":
            return f"95% CI above {self.threshold:g}"
        if self.kind == "below":
            return f"95% CI below {self.threshold:g}"
        return f"95% CI within [{self.threshold:g}, {self.upper:g}]"


def _side(holds: bool, fails: bool) -> tuple[str, str]:
    if holds:
        return HOLDS, ""
    if fails:
        return DOES_NOT_HOLD, ""
    return INCONCLUSIVE, "the 95% CI straddles the threshold"


def above(threshold: float) -> Rule:
    return Rule("above", threshold)


def below(threshold: float) -> Rule:
    return Rule("below", threshold)


def within(low: float, high: float) -> Rule:
    return Rule("within", low, high)


def _finite(x) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x))


@dataclass(frozen=True)
class Claim:
    """One statement of the paper, judged on one metric of ours."""
    reference: str  # where the paper says it (section, figure, table)
    statement: str  # what the paper says, in a sentence
    metric: str  # what of ours it is judged on (with the configuration)
    value: float | None
    ci_low: float | None
    ci_high: float | None
    unit: str
    rule: str
    verdict: str
    why: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: one of {', '.join(VERDICTS)}")


def judge(reference: str, statement: str, metric: str, value: float, half_width: float | None, rule: Rule,
          unit: str = "x") -> Claim:
    """A claim judged by ``rule`` on ``value`` ± ``half_width`` (95% CI)."""
    low = value - half_width if _finite(half_width) and _finite(value) else None
    high = value + half_width if _finite(half_width) and _finite(value) else None
    verdict, why = rule.judge(low, high)
    return Claim(reference, statement, metric, _num(value), _num(low), _num(high), unit, rule.text(), verdict, why)


def not_comparable(reference: str, statement: str, metric: str, why: str) -> Claim:
    return Claim(reference, statement, metric, None, None, None, "", "", NOT_COMPARABLE, why)


def _num(x) -> float | None:
    return float(x) if _finite(x) else None


# --- the findings file ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Findings:
    headline: str  # one line, shown in reports/index.html
    markdown: str  # the detailed Findings section of the report
    metrics: tuple[Metric, ...] = field(default=())
    claims: tuple[Claim, ...] = field(default=())

    def record(self, experiment: Experiment, manifest: dict) -> dict:
        """The findings file's content: what the report and the index render."""
        run = {key: manifest.get(key) for key in ("run_id", "started_utc", "finished_utc", "duration_s", "scale",
                                                     "git_rev", "params_hash", "machine")}
        run["repeats"] = (manifest.get("settings") or {}).get("repeats")
        return {"experiment": experiment.name, "paper": experiment.paper, "reference": experiment.reference,
                "question": experiment.question, "headline": self.headline.strip(), "markdown": self.markdown,
                "metrics": [asdict(m) for m in self.metrics], "claims": [asdict(c) for c in self.claims],
                "run": run}


def path_for(out_dir: Path, experiment: str) -> Path:
    return Path(out_dir) / f"{experiment}.findings.json"


def write(out_dir: Path, experiment: Experiment, findings: Findings, manifest: dict) -> Path:
    """Record ``findings`` beside the experiment's report (the index reads this file)."""
    path = path_for(out_dir, experiment.name)
    path.write_text(dumps(findings.record(experiment, manifest)))
    return path


def dumps(record: dict) -> str:
    """Strict JSON (a NaN, e.g. a CI from one repeat, is written as null)."""
    return json.dumps(_finite_or_none(record), indent=1, allow_nan=False, default=_json_default) + "\n"


def _finite_or_none(value):
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _json_default(value):
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


@dataclass(frozen=True)
class Recorded:
    experiment: str
    paper: str
    headline: str
    metrics: tuple[Metric, ...]
    claims: tuple[Claim, ...]
    run: dict

    @property
    def verdict_counts(self) -> dict[str, int]:
        return {v: sum(c.verdict == v for c in self.claims) for v in VERDICTS}


def read(path: Path) -> Recorded:
    record = json.loads(Path(path).read_text())
    if record.get("paper") not in PAPERS:
        raise ValueError(f"{path}: unknown paper {record.get('paper')!r}")
    return Recorded(record["experiment"], record["paper"], record["headline"],
                    tuple(Metric(**m) for m in record["metrics"]), tuple(Claim(**c) for c in record["claims"]),
                    record.get("run") or {})


def read_all(reports_dir: Path) -> list[Recorded]:
    return [read(p) for p in sorted(Path(reports_dir).glob("*.findings.json"))]
