"""What an experiment found, as data: a one-line headline, the Findings text, per-system metrics for
the index's overview, and the paper's claims with their verdicts. ``analyse`` builds a ``Findings``;
the report stage writes it to ``reports/<experiment>.findings.json``; the HTML report and the index
are rendered from that file alone.

Verdicts come from intervals, by the rules in ``RULES`` (stated once, here, as code: ``Rule.judge``;
every report and the index print ``RULES``). No verdict comes from a point estimate.
"""
from __future__ import annotations

import html
import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from storebench.core.repeats import RepeatPolicy
from storebench.core import stats
from storebench.core.experiment import PAPERS, Experiment

HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_COMPARABLE = "holds", "does not hold", "inconclusive", "not comparable"
VERDICTS = (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_COMPARABLE)
VERDICT_COLOURS = {HOLDS: "#1a7f37", DOES_NOT_HOLD: "#b42318", INCONCLUSIVE: "#9a6700", NOT_COMPARABLE: "#57606a"}

RULES = (
    "A directional claim (\"A is faster than B\", \"at least 5x\") holds when the 95% CI of the effect lies wholly "
    "on the claimed side of its threshold (no effect, or the margin the claim states); it does not hold when the "
    "CI lies wholly on the other side; otherwise it is inconclusive.",
    "A \"no difference\" or \"flat\" claim holds when the 95% CI lies wholly inside the stated equivalence band; "
    "it does not hold when the CI lies wholly outside the band; otherwise it is inconclusive.",
    "A figure from one repeat has no CI: its claim is inconclusive, with that reason.",
    "A claim this machine or this scale cannot test is not comparable, with the reason.",
    "A claim whose figure no one machine's measurements give (it sets parts measured on different machines "
    "against each other) is not comparable: it crosses machines.",
    stats.METHOD_TEXT,
)


def rules_html() -> str:
    """The verdict rules as an HTML list (every report and the index print it)."""
    items = "".join(f"<li>{html.escape(rule)}</li>" for rule in RULES)
    return f"<details><summary><b>How verdicts are reached</b></summary><ol class='rules'>{items}</ol></details>"


RULES_HEADING = "**How verdicts are reached** (the same rules for every claim of every report):"


def rules_markdown() -> str:
    return "\n".join(f"{i}. {rule}" for i, rule in enumerate(RULES, 1))


# --- numbers -------------------------------------------------------------------------------------

def sig3(x, unit: str = "") -> str:
    """``x`` with 3 significant digits (no exponent for ordinary magnitudes): 1091.44 -> 1,090;
    0.002483 -> 0.00248; with ``unit`` "%" a fraction as a percentage (0.3802 -> 38.0%)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    x = float(x)
    if unit == "%":
        return sig3(x * 100) + "%"
    if x == 0:
        return "0"
    digits = 2 - int(math.floor(math.log10(abs(x))))
    rounded = round(x, digits)
    if abs(rounded) >= 1000:
        return f"{rounded:,.0f}"
    if abs(rounded) < 1e-4:
        return f"{rounded:.2e}"
    return f"{rounded:.{max(digits, 0)}f}"


def interval_text(value, low, high, unit: str = "", repeats_note: str = "no CI") -> str:
    """"22.4x (95% CI 3.10x-162x)"; a value without a CI says so, never "± 0"."""
    suffix = unit if unit in ("x", "%", "") else f" {unit}"
    show = (lambda v: sig3(v, "%")) if unit == "%" else (lambda v: sig3(v) + suffix)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if not (_finite(low) and _finite(high)):
        return f"{show(value)} ({repeats_note})"
    return f"{show(value)} [{show(low)}, {show(high)}]"


# --- per-system metrics --------------------------------------------------------------------------

@dataclass(frozen=True)
class Metric:
    """One per-system figure for the overview: ``value`` with its 95% CI [``ci_low``, ``ci_high``]
    (asymmetric for a ratio, within [0, 1] for a share; None from one repeat), and ``no_effect``,
    the value that would mean "no difference" (1.0 for a ratio, 0 for a share). ``column`` names
    the figure AND the configuration it was measured in. ``ci95`` is the symmetric half-width of
    files written before the intervals (read only: new metrics leave it None)."""
    system: str
    column: str
    value: float
    ci95: float | None = None
    no_effect: float = 1.0
    unit: str = "x"  # "x" (a ratio) or "%" (a share, value as a fraction)
    ci_low: float | None = None
    ci_high: float | None = None
    why: str = ""  # why there is no CI, when there is none

    def __post_init__(self):
        if self.ci_low is None and _finite(self.ci95) and _finite(self.value):  # an old file: a half-width
            low, high = self.value - self.ci95, self.value + self.ci95
            if self.unit == "%":
                low, high = max(low, 0.0), min(high, 1.0)
            elif self.unit == "x":
                low = max(low, 0.0)
            object.__setattr__(self, "ci_low", float(low))
            object.__setattr__(self, "ci_high", float(high))
        for name in ("value", "ci_low", "ci_high"):
            object.__setattr__(self, name, _num(getattr(self, name)))
        object.__setattr__(self, "ci95", None)

    @property
    def has_ci(self) -> bool:
        return _finite(self.ci_low) and _finite(self.ci_high)

    @property
    def within_noise(self) -> bool:
        """The 95% CI includes "no effect": the figure is not a finding."""
        return self.has_ci and self.ci_low <= self.no_effect <= self.ci_high

    @property
    def interval(self) -> tuple[float | None, float | None]:
        return self.ci_low, self.ci_high

    def text(self) -> str:
        return interval_text(self.value, self.ci_low, self.ci_high, self.unit, self.why or "one repeat: no CI")


def ratio(system: str, column: str, numerator: float, numerator_ci: float, denominator: float,
          denominator_ci: float, *, values: tuple | None = None) -> Metric:
    """numerator / denominator (two independent means) as a Metric with the ratio's own 95% CI:
    from the repeats in ``values`` = (numerator's, denominator's) when given (bootstrap with enough
    repeats, see storebench.core.stats), else from the means' CI half-widths on the log scale. A
    mean without a CI (one repeat) gives a ratio without a CI, never a CI of zero."""
    if values is not None and all(v is not None and len(v) for v in values):
        value, low, high = stats.ratio_interval(*values)
    else:
        value = numerator / denominator if denominator else float("nan")
        low, high = stats.log_ratio_interval(value, numerator, numerator_ci, denominator, denominator_ci)
    return Metric(system, column, float(value), None, 1.0, "x", _num(low), _num(high),
                  "" if _finite(low) else "one repeat: no CI")


def ratio_rows(system: str, column: str, numerator, denominator, value: str = "mean") -> Metric:
    """The ratio of two summary rows (``mean``, ``ci95`` and, where kept, the repeats in ``values``)."""
    return product_rows(system, column, (numerator, denominator), (1, -1), value)


def product_rows(system: str, column: str, rows, exponents, value: str = "mean") -> Metric:
    """prod(row_i[value] ** exponent_i) over summary rows, with its CI: from the rows' repeats
    (``values``) when kept, else from their means and CI half-widths on the log scale."""
    ci = "ci95" if value == "mean" else f"{value.removesuffix('_mean')}_ci95"
    kept = [_values(r) for r in rows]
    if value == "mean" and all(v for v in kept):
        v, low, high = stats.product_interval(kept, exponents)
    else:
        means = [float(r[value]) for r in rows]
        halves = [r.get(ci) if hasattr(r, "get") else None for r in rows]
        v = math.prod(m ** e for m, e in zip(means, exponents)) if all(m > 0 for m in means) else float("nan")
        if all(_finite(h) for h in halves) and _finite(v):
            spread = math.sqrt(sum((e * h / m) ** 2 for m, h, e in zip(means, halves, exponents)))
            low, high = v * math.exp(-spread), v * math.exp(spread)
        else:
            low = high = None
    return Metric(system, column, float(v), None, 1.0, "x", _num(low), _num(high),
                  "" if _finite(low) else "one repeat: no CI")


def _values(row) -> tuple:
    values = row.get("values") if hasattr(row, "get") else None
    return tuple(values) if isinstance(values, (tuple, list)) and len(values) else ()


def ratio_of(system: str, column: str, numerator: Metric, denominator: Metric) -> Metric:
    """A ratio of two ratio Metrics (independent), its CI on the log scale from theirs."""
    value = numerator.value / denominator.value if denominator.value else float("nan")
    spreads = [_log_half(m) for m in (numerator, denominator)]
    if not all(_finite(s) for s in spreads) or not _finite(value) or value <= 0:
        return Metric(system, column, float(value), None, 1.0, "x", None, None, "no CI on one side")
    spread = math.hypot(*spreads)
    return Metric(system, column, float(value), None, 1.0, "x", value * math.exp(-spread), value * math.exp(spread))


def power(metric: Metric, exponent: float, column: str | None = None) -> Metric:
    """A positive ratio raised to ``exponent`` (e.g. per doubling from end to end), CI mapped."""
    value, low, high = stats.log_interval(metric.value, metric.ci_low, metric.ci_high, exponent)
    return Metric(metric.system, metric.column if column is None else column, value, None, metric.no_effect,
                  metric.unit, _num(low), _num(high), "" if _finite(low) else (metric.why or "one repeat: no CI"))


def share(system: str, column: str, value: float, low: float | None, high: float | None) -> Metric:
    """A share of a whole (value a fraction in [0, 1]) with its CI (see stats.bounded_interval)."""
    return Metric(system, column, float(value), None, 0.0, "%", _num(low), _num(high),
                  "" if _finite(low) else "one repeat: no CI")


def _log_half(m: Metric) -> float | None:
    if not m.has_ci or m.ci_low <= 0 or m.value <= 0:
        return None
    return (math.log(m.ci_high) - math.log(m.ci_low)) / 2


def _relative(ci: float, mean: float) -> float:
    return 0.0 if mean == 0 else ci / abs(mean)


# --- the verdict rules -------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    """How a claim is judged on a metric's 95% CI [low, high] (``RULES``)."""
    kind: str  # "above", "below" (directional), "within" (equivalence band)
    threshold: float = 0.0
    upper: float = 0.0  # "within": the band [threshold, upper]

    def __post_init__(self):
        if self.kind not in ("above", "below", "within"):
            raise ValueError(f"rule kind {self.kind!r}: above, below or within")

    def judge(self, low: float | None, high: float | None) -> tuple[str, str]:
        """(verdict, why) of a claim whose figure has the 95% CI [low, high]."""
        if not _finite(low) or not _finite(high):
            return INCONCLUSIVE, "no confidence interval (one repeat, or a figure without repeats)"
        if self.kind == "above":
            return _side(low > self.threshold, high < self.threshold, f"the 95% CI straddles {self.threshold:g}")
        if self.kind == "below":
            return _side(high < self.threshold, low > self.threshold, f"the 95% CI straddles {self.threshold:g}")
        inside = low >= self.threshold and high <= self.upper
        outside = high < self.threshold or low > self.upper
        return _side(inside, outside, f"the 95% CI is not wholly inside [{self.threshold:g}, {self.upper:g}]")

    def text(self, unit: str = "") -> str:
        show = (lambda v: sig3(v, "%")) if unit == "%" else (lambda v: f"{v:g}")  # noqa: E731
        if self.kind == "above":
            return f"95% CI above {show(self.threshold)}"
        if self.kind == "below":
            return f"95% CI below {show(self.threshold)}"
        return f"95% CI within [{show(self.threshold)}, {show(self.upper)}]"

    def spec(self) -> dict:
        return {"kind": self.kind, "threshold": float(self.threshold), "upper": float(self.upper)}


def _side(holds: bool, fails: bool, straddles: str) -> tuple[str, str]:
    if holds:
        return HOLDS, ""
    if fails:
        return DOES_NOT_HOLD, ""
    return INCONCLUSIVE, straddles


def above(threshold: float) -> Rule:
    return Rule("above", threshold)


def below(threshold: float) -> Rule:
    return Rule("below", threshold)


def within(low: float, high: float) -> Rule:
    return Rule("within", low, high)


def verdict(rule: Rule, low: float | None, high: float | None) -> str:
    """The verdict ``rule`` gives the interval [low, high] (for a text built from the data)."""
    return rule.judge(low, high)[0]


def _finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


# Why a claim may not hold here: said with every claim that does not hold (issue 24).
MACHINE, SUBSTITUTE, PAPER_SETUP, UNKNOWN = "the machine", "a substitute", "the paper's setup", "unknown"
CAUSES = (MACHINE, SUBSTITUTE, PAPER_SETUP, UNKNOWN)


@dataclass(frozen=True)
class Cause:
    """What would make a claim not hold here, stated with the claim (before its verdict is known):
    ``known`` one of ``CAUSES`` (this machine, a substitute for what the paper used, the paper's own
    setup; or unknown), ``detail`` how, ``settle`` the measurement that would settle it. ``judge`` and
    ``judge_metric`` keep it on the claim only when the claim does not hold."""
    known: str
    detail: str
    settle: str

    def __post_init__(self):
        if self.known not in CAUSES:
            raise ValueError(f"cause {self.known!r}: one of {', '.join(CAUSES)}")
        if not self.settle:
            raise ValueError("a cause needs what would settle it")


@dataclass(frozen=True)
class Claim:
    """One statement of the paper, judged on one metric of ours: ``verdict`` is ``rule`` (kept as
    data in ``test``) applied to the 95% CI [``ci_low``, ``ci_high``]; ``why`` gives the reason when
    there is no CI or the claim is not comparable. A claim that does not hold says whether its cause
    is known (``cause``: one of ``CAUSES``, ``cause_detail``) and what would settle it (``settle``)."""
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
    test: dict | None = None  # Rule.spec(): the rule as data, to re-apply
    cause: str = ""  # a claim that does not hold: one of CAUSES ("" before issue 24, or not said)
    cause_detail: str = ""
    settle: str = ""  # ... and what would settle it

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}: one of {', '.join(VERDICTS)}")
        if self.cause and (self.cause not in CAUSES or self.verdict != DOES_NOT_HOLD):
            raise ValueError(f"{self.statement!r}: a cause ({self.cause!r}) is one of {', '.join(CAUSES)}, "
                             f"said of a claim that does not hold (this one: {self.verdict})")
        if self.verdict == NOT_COMPARABLE and not self.why:
            raise ValueError(f"{self.statement!r}: not comparable needs its reason")
        if self.test is not None and self.verdict != NOT_COMPARABLE:
            expected = Rule(**self.test).judge(self.ci_low, self.ci_high)[0]
            if expected != self.verdict:
                raise ValueError(f"{self.statement!r}: verdict {self.verdict!r}, its rule gives {expected!r}")

    def interval_text(self) -> str:
        return interval_text(self.value, self.ci_low, self.ci_high, self.unit)

    def cause_text(self) -> str:
        """"Cause: the machine (how). Would settle it: ..." ("" when none is said)."""
        if not (self.cause or self.settle):
            return ""
        detail = f" ({self.cause_detail})" if self.cause_detail else ""
        return f"Cause: {self.cause or UNKNOWN}{detail}. Would settle it: {self.settle or 'not said'}."

    def explained(self, cause: "Cause | None") -> "Claim":
        """This claim with ``cause`` kept on it if it does not hold (else unchanged)."""
        if cause is None or self.verdict != DOES_NOT_HOLD:
            return self
        return Claim(**{**asdict(self), "cause": cause.known, "cause_detail": cause.detail, "settle": cause.settle})


def judge(reference: str, statement: str, metric: str, value: float, interval, rule: Rule,
          unit: str = "x", cause: Cause | None = None) -> Claim:
    """A claim judged by ``rule`` on ``value`` with its 95% CI ``interval``: a Metric's
    (``judge_metric``), a (low, high) pair, or a symmetric half-width (only for a plain mean or a
    difference, never for a ratio or a share); None: no CI. ``cause``: what would make it not hold
    here (kept if it does not)."""
    if isinstance(interval, tuple):
        low, high = interval
    elif _finite(interval) and _finite(value):
        low, high = value - interval, value + interval
    else:
        low = high = None
    low, high = _num(low), _num(high)
    verdict_, why = rule.judge(low, high)
    return Claim(reference, statement, metric, _num(value), low, high, unit, rule.text(unit), verdict_, why,
                 rule.spec()).explained(cause)


def judge_metric(reference: str, statement: str, metric: str, m: Metric, rule: Rule, unit: str | None = None,
                 cause: Cause | None = None) -> Claim:
    """A claim judged by ``rule`` on Metric ``m``'s value and 95% CI (``cause``: as for ``judge``)."""
    claim = judge(reference, statement, metric, m.value, (m.ci_low, m.ci_high), rule, m.unit if unit is None else unit,
                  cause)
    if not m.has_ci and m.why and claim.verdict == INCONCLUSIVE:
        claim = Claim(**{**asdict(claim), "why": m.why})
    return claim


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

    def __post_init__(self):
        # every report prints the verdict rules under its Findings (the rules are stated once: RULES)
        if self.claims and RULES_HEADING not in self.markdown:
            object.__setattr__(self, "markdown", f"{self.markdown.rstrip()}\n\n{RULES_HEADING}\n\n{rules_markdown()}\n")

    def record(self, experiment: Experiment, manifest: dict) -> dict:
        """The findings file's content: what the report and the index render."""
        run = {key: manifest.get(key) for key in ("run_id", "started_utc", "finished_utc", "duration_s", "scale",
                                                     "git_rev", "params_hash", "machine", "load_avg_1m")}
        settings = manifest.get("settings") or {}
        run["repeats"] = settings.get("repeats")
        run["repeat_policy"] = policy_text(settings) if isinstance(run["repeats"], int) else None
        run["data"] = data_text(settings, experiment.data)
        if manifest.get("parts"):
            run["parts"] = manifest["parts"]
        return {"experiment": experiment.name, "paper": experiment.paper, "reference": experiment.reference,
                "question": experiment.question, "headline": self.headline.strip(), "markdown": self.markdown,
                "metrics": [asdict(m) for m in self.metrics], "claims": [_claim_record(c) for c in self.claims],
                "run": run}


def data_text(settings: dict, template: str | None = None) -> str:
    """What a run read, in words: the experiment's own template of its settings, else its rows per workload
    (concatenated ``factors`` times) where it has them, else its n_samples."""
    if template is not None:
        try:
            data = template.format(**settings)
        except (KeyError, ValueError, TypeError, IndexError):
            data = "data size not recorded"
    elif isinstance(settings.get("rows"), dict):  # rows per workload: n_samples is the preset's, not read here
        data = "rows: " + ", ".join(_rows_text(workload, rows, (settings.get("factors") or {}).get(workload))
                                    for workload, rows in settings["rows"].items())
    elif isinstance(settings.get("n_samples"), int):
        data = f"{settings['n_samples']:,} samples"
        if settings.get("dataset_samples"):
            data += " (" + ", ".join(f"{k} {v:,}" for k, v in settings["dataset_samples"].items()) + ")"
    else:
        data = "data size not recorded"
    return data


def _rows_text(workload: str, rows: int, factor) -> str:
    """``text 100,000``, or with the rows concatenated ``factor`` times ``text 2,700,000 (100,000 x27)``."""
    if isinstance(factor, int) and factor > 1:
        return f"{workload} {rows * factor:,} ({rows:,} x{factor})"
    return f"{workload} {rows:,}"


def _claim_record(claim: Claim) -> dict:
    """A claim as recorded: its cause fields only where a cause is said (files before issue 24 unchanged)."""
    said = bool(claim.cause or claim.settle)
    return {k: v for k, v in asdict(claim).items() if said or k not in ("cause", "cause_detail", "settle")}


def repeat_policy(settings: dict) -> RepeatPolicy:
    """The repeat policy a run's recorded settings state."""
    repeats = settings["repeats"]
    given = {key: settings.get(key) for key in ("target_ci", "cell_cap_s", "min_repeat_s")}
    return RepeatPolicy(min_repeats=repeats, max_repeats=max(settings.get("max_repeats") or repeats, repeats),
                        **{key: value for key, value in given.items() if value is not None})


def policy_text(settings: dict) -> str:
    """The repeat policy in words (a run recorded before the adaptive policy: its fixed repeats)."""
    policy = repeat_policy(settings)
    if "max_repeats" not in settings or policy.max_repeats == policy.min_repeats:
        return f"{policy.min_repeats} repeats per cell"
    return policy.describe()


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
    path: Path | None = None

    @property
    def verdict_counts(self) -> dict[str, int]:
        return {v: sum(c.verdict == v for c in self.claims) for v in VERDICTS}


def read(path: Path) -> Recorded:
    record = json.loads(Path(path).read_text())
    if record.get("paper") not in PAPERS:
        raise ValueError(f"{path}: unknown paper {record.get('paper')!r}")
    return Recorded(record["experiment"], record["paper"], record["headline"],
                    tuple(Metric(**_known(Metric, m)) for m in record["metrics"]),
                    tuple(Claim(**_known(Claim, c)) for c in record["claims"]), record.get("run") or {},
                    Path(path))


def _known(cls, record: dict) -> dict:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in record.items() if k in names}


def read_all(reports_dir: Path) -> list[Recorded]:
    """Every findings file directly in ``reports_dir`` (``<experiment>*.findings.json``)."""
    return [read(p) for p in sorted(Path(reports_dir).glob("*.findings.json"))]
