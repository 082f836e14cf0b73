"""An experiment's headline figures as DVC metrics and a DVC plot, made from its findings file alone (so
``dvc metrics show``, ``dvc metrics diff <rev>`` and ``dvc plots diff <rev>`` compare two runs):

- ``reports/metrics/<experiment>.json``: numbers only (DVC metrics take no strings; the run id, scale and
  machine stay in the findings file): the verdict counts, each claim's figure with its 95% CI as
  ``figures.<claim>.{value,low,high}``, and the run's repeats and duration.
- ``reports/metrics/<experiment>_plot.csv``: ``claim,value``, one row per claim judged on a ratio or a
  share (the dimensionless figures, so one axis serves them all), drawn as horizontal bars.

A figure is named by its claim's statement (the paper's words, the same on every machine and in every
run), not by the figure's own label, which names client versions and data-driven choices ("slowest
other (tensorstore)") that differ between runs: two runs' figures line up in ``dvc metrics diff``.

The report stage writes both beside the findings file (storebench.report.notebook.publish);

    python -m storebench.report.metrics [REPORTS_DIR]

writes them again from every ``*.findings.json`` there.
"""
from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

from storebench.paths import REPORTS_DIR
from storebench.report.findings import VERDICTS, dumps

PLOTTED_UNITS = ("x", "%")  # ratios and shares
PLOT_X, PLOT_Y = "value", "claim"


def metrics_dir(out_dir: Path) -> Path:
    return Path(out_dir) / "metrics"


def metrics_path(out_dir: Path, experiment: str) -> Path:
    return metrics_dir(out_dir) / f"{experiment}.json"


def plot_path(out_dir: Path, experiment: str) -> Path:
    return metrics_dir(out_dir) / f"{experiment}_plot.csv"


def slug(text: str) -> str:
    """A claim as a metric key: lower case, words joined by "_" ("a / b" is "a_over_b"); no "." (DVC
    joins nested keys with ".")."""
    text = text.lower().replace(" / ", " over ").replace("->", " to ").replace("%", " pct ")
    return re.sub(r"[^a-z0-9]+", "_", text).strip("_")


def claim_names(claims: list[dict]) -> list[str]:
    """Each claim's statement, a repeated one numbered (" (2)")."""
    seen: dict[str, int] = {}
    names = []
    for claim in claims:
        statement = claim["statement"].strip().rstrip(".")
        seen[statement] = seen.get(statement, 0) + 1
        names.append(statement if seen[statement] == 1 else f"{statement} ({seen[statement]})")
    return names


def verdict_counts(claims: list[dict]) -> dict[str, int]:
    counts = {slug(v): sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    return {**counts, "total": len(claims)}


def figure(claim: dict) -> dict[str, float]:
    """value, low, high of a claim's figure (a bound it lacks, e.g. from one repeat, is left out)."""
    bounds = {"value": claim["value"], "low": claim["ci_low"], "high": claim["ci_high"]}
    return {key: number for key, number in bounds.items() if isinstance(number, (int, float))}


def metrics(record: dict) -> dict:
    """The metrics file's content for one findings record (``findings.Findings.record``)."""
    claims = record.get("claims") or []
    run = record.get("run") or {}
    numbers = {key: run[key] for key in ("repeats", "duration_s") if isinstance(run.get(key), (int, float))}
    return {"claims": verdict_counts(claims), "figures": figures(claims), "run": numbers}


def figures(claims: list[dict]) -> dict[str, dict[str, float]]:
    """Each claim's figure by its key (a claim without a figure, e.g. not comparable, is left out)."""
    keys = [slug(name) for name in claim_names(claims)]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"claims worded apart by punctuation only make the same metric key: {repeated}")
    return {key: figure(claim) for key, claim in zip(keys, claims) if figure(claim)}


def plot_rows(record: dict) -> list[dict]:
    claims = record.get("claims") or []
    return [{PLOT_Y: name, PLOT_X: claim["value"]} for name, claim in zip(claim_names(claims), claims)
            if claim["unit"] in PLOTTED_UNITS and isinstance(claim["value"], (int, float))]


def plot_csv(record: dict) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[PLOT_Y, PLOT_X], lineterminator="\n")
    writer.writeheader()
    writer.writerows(plot_rows(record))
    return out.getvalue()


def write(out_dir: Path, findings_path: Path) -> tuple[Path, Path]:
    """Write the metrics file and the plot table of the findings file ``findings_path`` under
    ``<out_dir>/metrics/``."""
    record = json.loads(Path(findings_path).read_text())
    target, plot = metrics_path(out_dir, record["experiment"]), plot_path(out_dir, record["experiment"])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps(metrics(record)))
    plot.write_text(plot_csv(record))
    return target, plot


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    reports = Path(argv[0]) if argv else REPORTS_DIR
    for findings_path in sorted(reports.glob("*.findings.json")):
        for path in write(reports, findings_path):
            print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
