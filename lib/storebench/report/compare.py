"""Two runs side by side: a user's run of the experiments beside the committed results (another machine,
another commit, another preset). Each run is a set of findings files (``reports/<experiment>.findings.json``),
from a directory or from a git revision of this repository:

    python -m storebench.report.compare git:HEAD reports/                  # committed vs this tree's reports
    python -m storebench.report.compare git:v1 /tmp/mine/reports --out /tmp/compare.html --experiments location

Every figure both runs report (same experiment, system and configuration) as other / base: for a ratio, a
ratio of ratios with its 95% CI on the log scale (the two runs independent); for a share, the difference in
percentage points (its CI from the two half-widths, normal approximation). Every claim both runs judged,
with the two verdicts side by side and changes marked. Figures or claims only one run has are counted, not
hidden.
"""
from __future__ import annotations

import argparse
import html
import math
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from storebench.paths import REPORTS_DIR, ROOT
from storebench.report import machine
from storebench.report.findings import (VERDICT_COLOURS, Metric, Recorded, interval_text, ratio_of, read, read_all,
                                        sig3)
from storebench.report.index import STYLE, machine_text, revisions_text


@dataclass(frozen=True)
class Run:
    label: str  # what the user typed: a directory or git:<rev>
    recorded: dict[str, Recorded]  # by experiment

    @property
    def summary(self) -> str:
        runs = [r.run for r in self.recorded.values() if r.run.get("run_id")]
        if not runs:
            return "no run recorded"
        scales = ", ".join(sorted({str(r.get("scale")) for r in runs}))
        machines = "; ".join(sorted({machine_text(m) for r in runs for m, _ in machine.machines(r) if m})) or "machine?"
        revisions = revisions_text(runs)
        started = sorted(r["started_utc"] for r in runs if r.get("started_utc"))
        when = f"{started[0][:10]} to {started[-1][:10]}" if started else "date?"
        return f"scale {scales}; {machines}; {revisions}; measured {when}"


def load(source: str, experiments: list[str] | None = None) -> Run:
    """The findings files of ``source``: a directory, or ``git:<rev>`` (this repository's reports/ at <rev>)."""
    if source.startswith("git:"):
        recorded = _from_git(source[4:])
    else:
        path = Path(source)
        if not path.is_dir():
            raise FileNotFoundError(f"{source}: not a directory of findings files (nor git:<revision>)")
        recorded = {r.experiment: r for r in read_all(path)}
    if experiments:
        unknown = sorted(set(experiments) - set(recorded))
        if unknown:
            raise ValueError(f"{source} has no findings for {', '.join(unknown)}; it has: {', '.join(sorted(recorded))}")
        recorded = {e: recorded[e] for e in experiments}
    if not recorded:
        raise ValueError(f"{source}: no *.findings.json found")
    return Run(source, recorded)


def _from_git(revision: str) -> dict[str, Recorded]:
    listing = _git("ls-tree", "--name-only", f"{revision}:reports")
    names = [n for n in listing.split() if n.endswith(".findings.json")]
    out = {}
    with tempfile.TemporaryDirectory(prefix="storebench-compare-") as scratch:
        for name in names:
            target = Path(scratch) / name
            target.write_text(_git("show", f"{revision}:reports/{name}"))
            recorded = read(target)
            out[recorded.experiment] = replace(recorded, path=None)
    return out


def _git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def change(base: Metric, other: Metric) -> tuple[str, float | None, float | None, float | None]:
    """(kind, value, low, high) of other vs base: "ratio" (other / base) or "difference" (other - base, points)."""
    if base.unit == "%" and other.unit == "%":
        diff = other.value - base.value
        halves = [_half(m) for m in (base, other)]
        if all(h is not None for h in halves):
            spread = math.hypot(*halves)
            return "difference", diff, diff - spread, diff + spread
        return "difference", diff, None, None
    m = ratio_of(base.system, base.column, other, base)
    return "ratio", m.value, m.ci_low, m.ci_high


def _half(m: Metric) -> float | None:
    return (m.ci_high - m.ci_low) / 2 if m.has_ci else None


def change_text(kind: str, value, low, high) -> str:
    if kind == "difference":
        points = lambda v: f"{'+' if v >= 0 else ''}{sig3(v * 100)} pt"  # noqa: E731
        return points(value) + (f" [{points(low)}, {points(high)}]" if low is not None else " (no CI)")
    return interval_text(value, low, high, "x")


def metrics_table(base: Recorded, other: Recorded) -> tuple[str, int, int]:
    mine = {(m.system, m.column): m for m in other.metrics}
    rows, matched = [], 0
    for m in base.metrics:
        o = mine.get((m.system, m.column))
        if o is None:
            continue
        matched += 1
        kind, value, low, high = change(m, o)
        differs = low is not None and high is not None and not (low <= (0 if kind == "difference" else 1) <= high)
        style = " style='font-weight:bold'" if differs else ""
        rows.append(f"<tr><td>{html.escape(m.system)}</td><td style='text-align:left;white-space:normal'>"
                    f"{html.escape(m.column)}</td><td>{html.escape(m.text())}</td><td>{html.escape(o.text())}</td>"
                    f"<td{style}>{html.escape(change_text(kind, value, low, high))}</td></tr>")
    unmatched = len(base.metrics) + len(other.metrics) - 2 * matched
    if not rows:
        return "<p>No figure is reported by both runs.</p>", matched, unmatched
    return ("<table><tr><th style='text-align:left'>system</th><th style='text-align:left'>figure</th><th>base</th><th>other</th><th>other vs base</th></tr>"
            + "\n".join(rows) + "</table>"), matched, unmatched


def claims_table(base: Recorded, other: Recorded) -> tuple[str, int]:
    mine = {(c.statement, c.metric): c for c in other.claims}  # one statement can be judged on several metrics
    rows, changed = [], 0
    for c in base.claims:
        o = mine.get((c.statement, c.metric))
        if o is None:
            continue
        moved = o.verdict != c.verdict
        changed += moved
        rows.append(f"<tr><td style='text-align:left;white-space:normal'>{html.escape(c.statement)}<br><small>"
                    f"{html.escape(c.metric)}</small></td>"
                    f"{_verdict_cell(c)}{_verdict_cell(o)}<td>{'<b>changed</b>' if moved else 'same'}</td></tr>")
    if not rows:
        return "<p>No claim is judged by both runs.</p>", 0
    return ("<table><tr><th style='text-align:left'>claim</th><th>base</th><th>other</th><th></th></tr>" + "\n".join(rows) + "</table>",
            changed)


def _verdict_cell(claim) -> str:
    colour = VERDICT_COLOURS.get(claim.verdict, "#000")
    return (f"<td style='color:{colour}'><b>{html.escape(claim.verdict)}</b><br><small>"
            f"{html.escape(claim.interval_text())}</small></td>")


def render(base: Run, other: Run) -> str:
    shared = [e for e in base.recorded if e in other.recorded]
    if not shared:
        raise ValueError(f"{base.label} and {other.label} have no experiment in common")
    sections = []
    for name in shared:
        b, o = base.recorded[name], other.recorded[name]
        metrics, matched, unmatched = metrics_table(b, o)
        claims, changed = claims_table(b, o)
        sections.append(f"<section><h2>{html.escape(name.replace('_', ' '))}</h2>"
                        f"<p>base: {html.escape(b.headline)}<br>other: {html.escape(o.headline)}</p>"
                        f"<h3>Figures ({matched} in both runs; {unmatched} in one only)</h3>{metrics}"
                        f"<h3>Claims ({changed} verdict{'s' if changed != 1 else ''} changed)</h3>{claims}</section>")
    only = sorted(set(base.recorded) ^ set(other.recorded))
    only_text = f"<p>In one run only: {html.escape(', '.join(only))}.</p>" if only else ""
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>storebench: {html.escape(other.label)} vs {html.escape(base.label)}</title>
<style>{STYLE}</style></head>
<body><p><a href="index.html">&larr; all storebench reports</a></p>
<h1>Two runs side by side</h1>
<p><b>Base</b> ({html.escape(base.label)}): {html.escape(base.summary)}.<br>
<b>Other</b> ({html.escape(other.label)}): {html.escape(other.summary)}.</p>
<p>Each figure both runs report, as other / base (a ratio of the two ratios, 95% CI on the log scale, the runs
taken as independent; a share as the difference in percentage points, its CI from the two half-widths). Bold:
the CI excludes no change. Different machines, presets or data sizes change the figures for reasons of their
own: read a change with the two runs' lines above.</p>
{only_text}
{''.join(sections)}
</body></html>
"""


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(prog="python -m storebench.report.compare",
                                     description="Two runs of the experiments side by side (figures and verdicts).")
    parser.add_argument("base", help="findings directory or git:<revision> (e.g. git:HEAD: the committed results)")
    parser.add_argument("other", help="findings directory or git:<revision> (e.g. a reports/ of your own run)")
    parser.add_argument("--out", default=str(REPORTS_DIR / "compare.html"))
    parser.add_argument("--experiments", help="comma-separated; default: every experiment both runs have")
    args = parser.parse_args(argv)
    chosen = args.experiments.split(",") if args.experiments else None
    base, other = load(args.base, chosen), load(args.other, chosen)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(base, other), encoding="utf-8")
    print(out)
    return out


if __name__ == "__main__":
    main()
