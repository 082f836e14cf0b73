"""What an experiment found, as data: a one-line headline, the notebook's Findings section, and the
per-system figures it contributes to the overview on reports/index.html. Experiments produce these;
the notebook writes them to ``<out>/<experiment>.findings.json``; the index is built from those files
alone (storebench.index), without importing any experiment.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Seed id -> the paper it is (the index has a section per seed).
SEEDS = {
    "003": "Cheng & Gunawi, Storage Benchmarking with Deep Learning Workloads (seeds 000/003)",
    "001": "Britto, Patel & Mukherjee, Studying Storage Systems for ML Workloads (seed 001)",
    "002": "Sanyal, Chen, Tumanov & Kimball, LayoutBench: cloud storage layouts for multimedia data (seed 002)",
    "004": "Versaci & Busonera, Scaling deep learning data management with Cassandra DB (seed 004)",
}


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
    half-widths added in quadrature), as for two independent means."""
    value = numerator / denominator
    relative = math.hypot(_relative(numerator_ci, numerator), _relative(denominator_ci, denominator))
    return Metric(system, column, float(value), float(abs(value) * relative), 1.0, "x")


def _relative(ci: float, mean: float) -> float:
    return 0.0 if ci is None or math.isnan(ci) or mean == 0 else ci / abs(mean)


@dataclass(frozen=True)
class Findings:
    headline: str  # one line, shown in reports/index.html
    markdown: str  # the notebook's Findings section
    metrics: tuple[Metric, ...] = field(default=())

    def save(self, out_dir: Path, experiment: str, seed: str) -> Path:
        return write(out_dir, experiment, self, seed)


def path_for(out_dir: Path, experiment: str) -> Path:
    return Path(out_dir) / f"{experiment}.findings.json"


def write(out_dir: Path, experiment: str, findings: Findings, seed: str) -> Path:
    """Record ``findings`` beside the experiment's report (the index reads this file)."""
    if seed not in SEEDS:
        raise ValueError(f"unknown seed {seed!r}; known: {', '.join(SEEDS)}")
    path = path_for(out_dir, experiment)
    record = {"experiment": experiment, "seed": seed, "headline": findings.headline.strip(),
              "metrics": [asdict(m) for m in findings.metrics]}
    path.write_text(json.dumps(record, indent=1, allow_nan=True) + "\n")
    return path


@dataclass(frozen=True)
class Recorded:
    experiment: str
    seed: str
    headline: str
    metrics: tuple[Metric, ...]


def read(path: Path) -> Recorded:
    record = json.loads(Path(path).read_text())
    return Recorded(record["experiment"], record["seed"], record["headline"],
                    tuple(Metric(**m) for m in record["metrics"]))


def read_all(reports_dir: Path) -> list[Recorded]:
    return [read(p) for p in sorted(Path(reports_dir).glob("*.findings.json"))]
