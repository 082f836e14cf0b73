"""What a report notebook calls: read the recorded tables (or measure now, in JupyterLab), record the
findings, show the answer, the figures and the provenance.

A report stage runs its notebook with ``measure=False``: it reads ``results/<experiment>/`` and
starts no server. ``measure=True`` runs the measurement first (storebench.pipeline.run, imported
only then, so the report stage's dependencies stay those of the analysis).
"""
from __future__ import annotations

import dataclasses
import html
import importlib
import logging
from pathlib import Path

import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.experiments import experiment, step
from storebench.paths import REPORTS_DIR, ROOT
from storebench.pipeline import yamlfile
from storebench.report import findings as recorded_findings, machine, metrics as report_metrics
from storebench.report.findings import VERDICT_COLOURS, Findings
from storebench.report.tables import ReportTables, readable, readable_frame, readable_text, show_tables_whole

logging.captureWarnings(True)  # warnings go to the log (stderr, which the render step keeps out of the report)
show_tables_whole()  # every report notebook imports this module: whole tables, readable numbers

RESULTS_DIR = ROOT / "results"
PARAMS = ROOT / "params.yaml"  # its ``parts``: how each reference measurement is split
LEFT_OUT = ROOT / "reference" / "left_out.yaml"  # what reference parts leave out of a grid, and why
MEASURING_RUNNER = "storebench.pipeline.run"  # not followed by storebench.pipeline.deps for report stages


def load(name: str, results_dir: str | None = None, *, measure: bool = False, scale: str | None = None,
         overrides: dict | None = None) -> ResultTables:
    """Experiment ``name``'s recorded tables; with ``measure`` measured now (servers start)."""
    root = Path(results_dir) if results_dir else RESULTS_DIR
    if measure:
        return importlib.import_module(MEASURING_RUNNER).measure(name, scale, results_root=root, overrides=overrides)
    return ResultTables.read(root / name)


def analyse(analysis, tables: ResultTables) -> Findings:
    """``analysis.analyse(tables)``: what the experiment found, each claim checked against the machines its
    figures were measured on (``machine.judged_within_machines``)."""
    return machine.judged_within_machines(analysis.analyse, tables)


_shown: ReportTables | None = None  # the tables of the report being rendered (set by ``publish``)


def publish(name: str, findings: Findings, tables: ResultTables, out_dir: str | None = None) -> Path:
    """Write ``reports/<name>.findings.json`` (what the report's answer and the index render) and, from it,
    the DVC metrics and plot table under ``reports/metrics/``; from here on every table the notebook displays
    is shown readable, a long one also as a CSV under ``reports/tables/<name>/``."""
    global _shown
    out = Path(out_dir) if out_dir else REPORTS_DIR
    out.mkdir(parents=True, exist_ok=True)
    _shown = ReportTables(name, out)
    path = recorded_findings.write(out, declared(name), findings, tables.manifest)
    report_metrics.write(out, path)
    return path


def table_html(frame, caption: str | None = None, name: str | None = None, csv: bool = False) -> str:
    """A DataFrame (or Styler) as a report shows it (what ``display(frame)`` gives in a report);
    ``csv`` also writes it whole beside the report."""
    if _shown is None:
        data = frame.data if hasattr(frame, "data") and not isinstance(frame, pd.DataFrame) else frame
        return readable_frame(data).to_html(index=False, border=0)
    return _shown.html(frame, caption, name, csv)


def _show_tables_readable() -> None:
    """In a notebook kernel: every displayed DataFrame and Styler goes through ``table_html``."""
    try:
        from IPython import get_ipython
        from pandas.io.formats.style import Styler
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None:
        formatter = shell.display_formatter.formatters["text/html"]
        formatter.for_type(pd.DataFrame, table_html)
        formatter.for_type(Styler, table_html)


_show_tables_readable()


def save_figures(name: str, figures: dict, out_dir: str | None = None) -> list:
    """Save the figures as ``reports/figures/<name>/<i>-<key>.png`` (the index shows the first);
    returns them as images a notebook displays."""
    import shutil

    from storebench.report import plots

    folder = (Path(out_dir) if out_dir else REPORTS_DIR) / "figures" / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return [plots.save(fig, folder / f"{i}-{key}.png") for i, (key, fig) in enumerate(figures.items(), 1)]


def declared(name: str):
    """Experiment ``name``'s declaration as its report describes it: an analysis module's ``DATA`` (a template
    of the run's settings) says what the run read where the declaration does not. (It lives with the analysis
    because the declaration is a dependency of every measurement: rewording it would make them stale.)"""
    own = experiment(name)
    data = getattr(step(name, "analysis"), "DATA", None)
    return dataclasses.replace(own, data=data) if data and not own.data else own


def answer(name: str, findings: Findings, tables: ResultTables) -> str:
    """The top of a report as HTML: the question, the headline, what was measured on which machine
    and when, and the paper's claims with their verdicts."""
    own, run = declared(name), tables.manifest
    return (f"{partial_banner(name, run)}<p><b>Question</b> ({html.escape(own.reference)}): {html.escape(own.question)}</p>"
            f"<p><b>Answer</b>: {html.escape(findings.headline)}</p>"
            f"<p class='sb-run'><b>Measured</b>: {html.escape(measured(run, own.data))}.</p>"
            f"{_mixed_machines(run)}"
            f"<p class='sb-run'><b>Repeats</b>: {html.escape(repeats_text(tables, own.repeats))}.</p>"
            f"{claims_table(findings)}")


def partial_banner(name: str, run: dict, params_file: Path = PARAMS) -> str:
    """A banner over a report that reads only some of the parts params.yaml defines for its measurement (the
    reference run, measured part by part over several sessions): which parts are missing, and that its answer
    and verdicts are provisional. None for a measurement in one piece (the quick check) or measured in full."""
    if not run.get("parts"):
        return ""
    defined = list((yamlfile.load(params_file).get("parts") or {}).get(name) or {})
    missing = [part for part in defined if part not in run["parts"]]
    if not missing:
        return ""
    return ("<div class='sb-partial' style='border-left:4px solid #b35900;background:#fff4e5;padding:.4em .9em'>"
            f"<b>Partial report</b>: {len(defined) - len(missing)} of {len(defined)} parts of this measurement are "
            f"recorded; not measured yet: {html.escape(', '.join(missing))}. The answer, figures, tables and verdicts "
            "below read only the recorded parts: a claim whose figures lie in a missing part cannot be judged yet, "
            "and a verdict may change when the rest is measured. The index counts none of its verdicts.</div>")


def _mixed_machines(run: dict) -> str:
    note = machine.mixed_note(run)
    return f"<p class='sb-run' style='color:#9a6700'><b>Machines</b>: {html.escape(note)}</p>" if note else ""


def repeats_text(tables: ResultTables, own: str | None = None) -> str:
    """The repeat policy the run was measured under, and how its cells came out (``own``: the experiment's
    own way of repeating, a template of its settings, instead of the policy)."""
    settings = tables.settings
    if own is not None:
        return _filled(own, settings)
    if not isinstance(settings.get("repeats"), int):
        return machine.NOT_RECORDED
    policy = recorded_findings.repeat_policy(settings)
    cells = cells_summary([tables[name] for name in tables.names], policy.min_repeats)
    return recorded_findings.policy_text(settings) + (f": {cells}" if cells else "")


def cells_summary(frames, min_repeats: int) -> str:
    """How the cells of a recorded run came out: their repeats and how many met the CI target (from
    each cell's first repeat row, in every table that records its cell). Cells with fewer repeats
    than the policy's minimum are single-run checks by design (a query under a memory limit, a
    footprint probe): counted apart."""
    firsts = [frame[frame["repeat"] == 0] for frame in frames
              if {"repeat", "repeats", "ci_target_met"} <= set(frame.columns)]
    cells = pd.concat([f[["repeats", "ci_target_met"]] for f in firsts if len(f)], ignore_index=True) if firsts else None
    if cells is None or cells.empty:
        return ""
    timed, checks = cells[cells.repeats >= min_repeats], cells[cells.repeats < min_repeats]
    text = ""
    if len(timed):
        met = int(timed.ci_target_met.astype(bool).sum())
        low, high = int(timed.repeats.min()), int(timed.repeats.max())
        text = (f"{len(timed):,} timed cells, {low if low == high else f'{low}-{high}'} repeats each, "
                f"the CI target met in {met:,} ({met / len(timed):.0%})")
    if len(checks):
        text += ("; " if text else "") + f"{len(checks):,} single-run checks (a memory limit, a footprint probe)"
    return text


def _filled(template: str, settings: dict) -> str:
    try:
        return template.format(**settings)
    except (KeyError, ValueError, TypeError):
        return machine.NOT_RECORDED


def measured(run: dict, data: str | None = None) -> str:
    """Scale, data size, repeats, machine and date of a recorded run, in one sentence (``data``: what the
    experiment reads, a template of its settings, instead of its n_samples)."""
    data = recorded_findings.data_text(run.get("settings") or {}, data)
    part_count = len(run.get("parts") or {})
    parts = f", measured in {part_count} parts" if part_count else ""
    return (f"scale {run.get('scale', machine.NOT_RECORDED)}{parts}, {data}, "
            f"on {machine.summary(run)} ({_run_ids(run)}, "
            f"{_duration(run.get('duration_s'))})")


def _run_ids(run: dict) -> str:
    if run.get("parts"):
        return f"{len(run['parts'])} runs, one a part: see Provenance"
    return f"run {run.get('run_id', machine.NOT_RECORDED)}"


def _duration(seconds) -> str:
    return f"{readable(float(seconds))} s" if isinstance(seconds, (int, float)) else "duration not recorded"


def claims_table(findings: Findings) -> str:
    left = "style='text-align:left;vertical-align:top'"
    rows = "".join(
        f"<tr><td {left}>{html.escape(c.reference)}</td><td {left}>{html.escape(c.statement)}</td>"
        f"<td {left}>{html.escape(c.metric)}</td><td {left}>{_interval(c)}</td><td {left}>{html.escape(c.rule)}</td>"
        f"<td style='text-align:left;vertical-align:top;color:{VERDICT_COLOURS[c.verdict]};font-weight:bold'>"
        f"{c.verdict}</td><td {left}>{html.escape(' '.join(filter(None, (c.why, c.cause_text()))))}</td></tr>"
        for c in findings.claims)
    head = "".join(f"<th {left}>{h}</th>" for h in ("paper", "statement", "judged on", "ours (95% CI)", "rule",
                                                     "verdict", "why"))
    return f"<div class='sb-scroll'><table class='sb-claims'><tr>{head}</tr>{rows}</table></div>" if rows else ""


def findings_markdown(findings: Findings) -> str:
    """The Findings section (Markdown), its numbers without scientific notation."""
    return readable_text(findings.markdown)


def _interval(claim) -> str:
    if claim.value is None:
        return "&ndash;"
    scale = 100 if claim.unit == "%" else 1  # a share is held as a fraction
    text = readable(claim.value * scale)
    if claim.ci_low is not None:
        text += f" [{readable(claim.ci_low * scale)}, {readable(claim.ci_high * scale)}]"
    return html.escape(text + (claim.unit if claim.unit in ("x", "%") else f" {claim.unit}"))


def provenance(tables: ResultTables) -> str:
    """The Provenance section as HTML: what was not measured, the machine card, the versions, and
    the run's settings folded away."""
    run = tables.manifest
    versions = pd.DataFrame(machine.versions(run), columns=["what", "version"])
    parts = pd.DataFrame(machine.parts(run))
    return (table_html(skipped(tables), "not measured, and notes", "skipped") + machine.card_html(run)
            + (table_html(parts, "parts of this measurement, in the order they ran", "parts", csv=True) if len(parts) else "")
            + table_html(versions, "versions", "versions", csv=True)
            + f"<details><summary>settings of this run ({len(tables.settings)})</summary>"
            f"{table_html(settings(tables), 'settings', 'settings', csv=True)}</details>")


def settings(tables: ResultTables) -> pd.DataFrame:
    return pd.DataFrame([(k, str(v)) for k, v in tables.settings.items()], columns=["setting", "value"])


def skipped(tables: ResultTables, left_out_file: Path = LEFT_OUT) -> pd.DataFrame:
    """What was not measured, and why (the ``skipped`` table and, for a reference measurement, what its
    parts leave out of the grid), with the run's notes."""
    frame = tables.get("skipped", pd.DataFrame(columns=["system", "location", "what", "reason"]))
    notes = tables.get("notes")
    extra = [left_out(tables.manifest, left_out_file)] + ([_notes(notes)] if notes is not None and len(notes) else [])
    extra = [e for e in extra if len(e)]
    return (pd.concat([frame, *extra], ignore_index=True) if extra else frame).fillna("")


def left_out(manifest: dict, path: Path = LEFT_OUT) -> pd.DataFrame:
    """What the measured parts of a reference measurement leave out of the experiment's grid, and why, as
    reference/left_out.yaml states it (nothing for another preset's measurement)."""
    if manifest.get("scale") != "reference" or not path.exists():
        return pd.DataFrame()
    stated = (yamlfile.load(path) or {}).get(manifest.get("experiment")) or {}
    measured = set(manifest.get("parts") or [manifest.get("part")])
    return pd.DataFrame([{**row, "part": part} for part, rows in stated.items() if part in measured for row in rows])


def _notes(notes: pd.DataFrame) -> pd.DataFrame:
    """The run's notes as rows of the skipped table: a note several parts wrote, once, naming them."""
    if "part" not in notes:
        return pd.DataFrame({"what": "note", "reason": notes.note})
    parts = notes.groupby("note", sort=False)["part"].agg(lambda p: ", ".join(dict.fromkeys(p.astype(str))))
    return pd.DataFrame({"what": "note", "reason": parts.index, "part": parts.values})
