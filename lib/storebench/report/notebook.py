"""What a report notebook calls: read the recorded tables (or measure now, in JupyterLab), record the
findings, show the answer, the figures and the provenance.

A report stage runs its notebook with ``measure=False``: it reads ``results/<experiment>/`` and
starts no server. ``measure=True`` runs the measurement first (storebench.pipeline.run, imported
only then, so the report stage's dependencies stay those of the analysis).
"""
from __future__ import annotations

import html
import importlib
from pathlib import Path

import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.experiments import experiment
from storebench.paths import REPORTS_DIR, ROOT
from storebench.report import findings as recorded_findings
from storebench.report.findings import VERDICT_COLOURS, Findings
from storebench.report.tables import show_tables_whole

show_tables_whole()  # every report notebook imports this module: whole tables, readable numbers

RESULTS_DIR = ROOT / "results"
MEASURING_RUNNER = "storebench.pipeline.run"  # not followed by storebench.pipeline.deps for report stages


def load(name: str, results_dir: str | None = None, *, measure: bool = False, scale: str | None = None,
         overrides: dict | None = None) -> ResultTables:
    """Experiment ``name``'s recorded tables; with ``measure`` measured now (servers start)."""
    root = Path(results_dir) if results_dir else RESULTS_DIR
    if measure:
        return importlib.import_module(MEASURING_RUNNER).measure(name, scale, results_root=root, overrides=overrides)
    return ResultTables.read(root / name)


def publish(name: str, findings: Findings, tables: ResultTables, out_dir: str | None = None) -> Path:
    """Write ``reports/<name>.findings.json`` (what the report's answer and the index render)."""
    out = Path(out_dir) if out_dir else REPORTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    return recorded_findings.write(out, experiment(name), findings, tables.manifest)


def save_figures(name: str, figures: dict, out_dir: str | None = None) -> list:
    """Save the figures as ``reports/figures/<name>/<i>-<key>.png`` (the index shows the first);
    returns them as images a notebook displays."""
    import shutil

    from storebench.report import plots

    folder = (Path(out_dir) if out_dir else REPORTS_DIR) / "figures" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return [plots.save(fig, folder / f"{i}-{key}.png") for i, (key, fig) in enumerate(figures.items(), 1)]


def answer(name: str, findings: Findings, tables: ResultTables) -> str:
    """The top of a report as HTML: the question, the scale, machine and date, the headline, and the
    paper's claims with their verdicts."""
    declared, run = experiment(name), tables.manifest
    card = run.get("machine", {})
    left = "style='text-align:left;vertical-align:top'"
    rows = "".join(
        f"<tr><td {left}>{html.escape(c.reference)}</td><td {left}>{html.escape(c.statement)}</td>"
        f"<td {left}>{html.escape(c.metric)}</td><td {left}>{_interval(c)}</td><td {left}>{html.escape(c.rule)}</td>"
        f"<td style='text-align:left;vertical-align:top;color:{VERDICT_COLOURS[c.verdict]};font-weight:bold'>"
        f"{c.verdict}</td><td {left}>{html.escape(c.why)}</td></tr>" for c in findings.claims)
    head = "".join(f"<th {left}>{h}</th>" for h in ("paper", "statement", "judged on", "ours (95% CI)", "rule",
                                                     "verdict", "why"))
    claims = f"<table><tr>{head}</tr>{rows}</table>" if rows else ""
    return (f"<p><b>Question</b> ({html.escape(declared.reference)}): {html.escape(declared.question)}</p>"
            f"<p><b>Answer</b>: {html.escape(findings.headline)}</p>{claims}"
            f"<p style='color:#57606a'>Scale <code>{html.escape(str(run.get('scale')))}</code>, measured "
            f"{html.escape(str(run.get('started_utc')))} in {run.get('duration_s')} s on {card.get('cores')} cores "
            f"({html.escape(str(card.get('cpu_model')))}), git {html.escape(str(run.get('git_rev')))}, "
            f"run <code>{html.escape(str(run.get('run_id')))}</code>.</p>")


def _interval(claim) -> str:
    if claim.value is None:
        return "&ndash;"
    text = f"{claim.value:.3g}"
    if claim.ci_low is not None:
        text += f" [{claim.ci_low:.3g}, {claim.ci_high:.3g}]"
    return html.escape(text + (claim.unit if claim.unit in ("x", "%") else f" {claim.unit}"))


def provenance(tables: ResultTables) -> pd.DataFrame:
    """Who measured what with which versions, from the manifest."""
    run = tables.manifest
    rows = [("run id", run.get("run_id")), ("started (UTC)", run.get("started_utc")),
            ("finished (UTC)", run.get("finished_utc")), ("duration (s)", run.get("duration_s")),
            ("scale", run.get("scale")), ("git revision", run.get("git_rev")), ("params hash", run.get("params_hash"))]
    rows += [(f"machine: {k}", v) for k, v in run.get("machine", {}).items()]
    versions = run.get("versions", {})
    rows += [(f"server: {k}", v) for k, v in versions.get("system_versions", {}).items()]
    rows += [(f"client: {k}", v) for k, v in versions.get("client_versions", {}).items()]
    rows += [(f"package: {k}", v) for k, v in versions.get("client_packages", {}).items()]
    return pd.DataFrame(rows, columns=["what", "value"]).set_index("what")


def settings(tables: ResultTables) -> pd.DataFrame:
    return pd.DataFrame([(k, str(v)) for k, v in tables.settings.items()], columns=["setting", "value"]).set_index(
        "setting")


def skipped(tables: ResultTables) -> pd.DataFrame:
    """What was not measured, and why (the ``skipped`` table), with the run's notes."""
    frame = tables.get("skipped", pd.DataFrame(columns=["system", "location", "what", "reason"]))
    notes = tables.get("notes")
    if notes is not None and len(notes):
        frame = pd.concat([frame, pd.DataFrame({"what": "note", "reason": notes.note})], ignore_index=True)
    return frame.fillna("")
