"""reports/index.html, built from what the experiments recorded (``*.findings.json``, see
storebench.report.findings) and the rendered reports beside them: first the reference results
(``reports/reference/``: each paper at its own sizes), one section per seed paper, each with its per-system
overview and its reports; then the quick check at ``small`` (``reports/``), the same way; earlier runs at the
paper preset outside the reference set (``reports/paper/``) last.

    python -m storebench.report.index [--reports DIR]
"""
from __future__ import annotations

import html
from pathlib import Path

from storebench.core.experiment import PAPERS
from storebench.core.provenance import git_revision
from storebench.paths import REPORTS_DIR
from storebench.report import machine
from storebench.report.findings import VERDICT_COLOURS, VERDICTS, Metric, Recorded, read_all, rules_html

STYLE = """body{font-family:sans-serif;max-width:64em;margin:2em auto;line-height:1.4}
li{list-style:none;border-top:1px solid #ccc;padding:.5em 0} code{background:#eee}
table{border-collapse:collapse;font-size:85%} td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:right}
th{vertical-align:bottom;font-weight:bold;white-space:nowrap} td:first-child{text-align:left}
ul.columns{font-size:85%;color:#444;list-style:none;padding-left:0} ul.columns li{border:0;padding:0} td{white-space:nowrap}
td.noise{color:#888;font-style:italic}
td small{white-space:normal;display:inline-block;max-width:12em}  /* a figure's note wraps under it */
div.overview{overflow-x:auto} div.overview table{margin-bottom:.8em} td.figure{white-space:normal;max-width:24em}
nav a{margin-right:1em} .verdicts span{margin-right:.8em}"""


WHOSE = {"harness": "(storebench's own targets for its clients)"}


def verdict_counts(recorded: list[Recorded], whose: str = "of the paper") -> str:
    """How many of a paper's claims (or the harness's targets) hold, do not hold, are inconclusive or not
    comparable."""
    counts = {v: sum(r.verdict_counts[v] for r in recorded) for v in VERDICTS}
    total = sum(counts.values())
    if not total:
        return "<p class='verdicts'>No claims judged yet.</p>"
    spans = "".join(f"<span style='color:{VERDICT_COLOURS[v]}'><b>{n}</b> {v}</span>" for v, n in counts.items())
    return f"<p class='verdicts'>{total} claims {whose} judged: {spans}</p>"


FIGURES_PER_TABLE = 6  # what fits the page's width beside the system column


def overview_table(recorded: list[Recorded]) -> str:
    """system x figure, compact, value [95% CI], 3 significant digits; a figure whose CI includes "no
    effect" is greyed. Few systems and many figures: one row per figure, its description beside it.
    Otherwise one row per system, the figures lettered (A, B, ...) and described below, in tables of at most
    ``FIGURES_PER_TABLE`` figures so that none runs off the page (a system without any of a table's figures
    is left out of it)."""
    metrics: list[Metric] = [m for r in recorded for m in r.metrics]
    if not metrics:
        return ""
    columns = list(dict.fromkeys(m.column for m in metrics))
    systems = list(dict.fromkeys(m.system for m in metrics))
    cell = {(m.system, m.column): m for m in metrics}
    units = {c: next(m.unit for m in metrics if m.column == c) for c in columns}
    few_systems = len(systems) < len(columns) and len(systems) <= FIGURES_PER_TABLE
    tables = (_figure_rows if few_systems else _system_rows)(columns, systems, cell, units)
    return (tables +
            "<p>Value [95% CI], 3 significant digits, computed by each experiment from its own result table (one "
            "run, this machine); a ratio's CI comes from the ratio's own distribution (asymmetric), a share's stays "
            "within [0, 100%]; <i>no CI</i>: one repeat. <i>Within noise</i>: the 95% CI includes no effect (1x for "
            "a ratio, 0% for a share), so the figure is not a finding. &ndash;: not measured by that "
            "experiment.</p>")


def _system_rows(columns, systems, cell, units) -> str:
    """Tables of at most FIGURES_PER_TABLE lettered figures, each with the systems that have one of them
    and, below it, what its letters stand for."""
    per = -(-len(columns) // -(-len(columns) // FIGURES_PER_TABLE))  # balanced: 18 figures -> 3 tables of 6
    tables = []
    for start in range(0, len(columns), per):
        chunk = list(enumerate(columns))[start:start + per]
        head = "".join(f"<th title='{html.escape(c)}'>{_letter(i)} ({_unit(units[c])})</th>" for i, c in chunk)
        rows = [f"<tr><td>{html.escape(s)}</td>{''.join(_cell(cell.get((s, c))) for _, c in chunk)}</tr>"
                for s in systems if any((s, c) in cell for _, c in chunk)]
        legend = "".join(f"<li><b>{_letter(i)}</b>: {html.escape(c)}</li>" for i, c in chunk)
        tables.append(f"<table><tr><th>system</th>{head}</tr>\n" + "\n".join(rows) + "</table>"
                      f"<ul class='columns'>{legend}</ul>")
    return "<div class='overview'>" + "\n".join(tables) + "</div>\n"


def _figure_rows(columns, systems, cell, units) -> str:
    head = "".join(f"<th>{html.escape(s)}</th>" for s in systems)
    rows = [f"<tr><td class='figure'>{html.escape(c)} ({_unit(units[c])})</td>"
            f"{''.join(_cell(cell.get((s, c))) for s in systems)}</tr>" for c in columns]
    return (f"<div class='overview'><table><tr><th>figure</th>{head}</tr>\n" + "\n".join(rows)
            + "</table></div>\n")


def _unit(unit: str) -> str:
    return "%" if unit == "%" else "ratio"


def _cell(m: Metric | None) -> str:
    if m is None:
        return "<td>&ndash;</td>"
    if m.within_noise:
        return (f'<td class="noise" title="95% CI includes no effect">{_value_lines(m.text())}'
                f"<br><small>(within noise)</small></td>")
    return f"<td>{_value_lines(m.text())}</td>"


def _value_lines(text: str) -> str:
    """A figure on one line and its interval (or why it has none) below it, so a table of many
    figures fits the page."""
    cut = min((i for i in (text.find(" ["), text.find(" (")) if i > 0), default=len(text))
    value, rest = text[:cut], text[cut + 1:]
    return html.escape(value) + (f"<br><small>{html.escape(rest)}</small>" if rest else "")


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"A{i - 25}"


def report_items(reports_dir: Path, recorded: list[Recorded], prefix: str = "") -> list[str]:
    items = []
    for r in recorded:
        link = f"{prefix}{r.experiment}"
        if not (reports_dir / f"{r.experiment}.html").exists():
            continue
        figure = ""
        drawn = sorted((reports_dir / "figures" / r.experiment).glob("*.png"))
        if drawn:
            figure = f'<img src="{prefix}figures/{r.experiment}/{drawn[0].name}" alt="{r.experiment} figure" width="420">'
        elif (reports_dir / f"{r.experiment}.png").exists():
            figure = f'<img src="{link}.png" alt="{r.experiment} figure" width="420">'
        results = f"results/{prefix}{r.experiment}"  # reports/paper/ renders results/paper/
        csv = (f' &middot; <a href="../{results}/">result tables (CSV)</a>'
               if (reports_dir.parent.parent if prefix else reports_dir.parent).joinpath(results, "manifest.json")
               .exists() else "")
        counts = ", ".join(f"{n} {v}" for v, n in r.verdict_counts.items() if n)
        claims = f" <i>(claims: {counts})</i>" if counts else ""
        items.append(f'<li><h3><a href="{link}.html">{html.escape(r.experiment.replace("_", " "))}</a></h3>'
                     f"<p>{html.escape(r.headline)}{claims}{csv}</p>{figure}</li>")
    return items


def unrecorded(reports_dir: Path, recorded: list[Recorded]) -> list[str]:
    """Rendered reports with no findings file (e.g. an interrupted run): listed, never hidden."""
    known = {r.experiment for r in recorded}
    return [p.stem for p in sorted(reports_dir.glob("*.html")) if p.stem != "index" and p.stem not in known]


def paper_sections(reports_dir: Path, prefix: str = "", heading: str = "h2", every_paper: bool | None = None,
                   overview: bool | None = None, missing_text: str = "run its experiments (<code>make reproduce</code>)"
                   ) -> list[str]:
    """One section per seed paper (by default all of them at the top level, even one without recorded findings,
    each with its per-system overview; under a prefix only the papers recorded there, without)."""
    recorded = read_all(reports_dir) if reports_dir.is_dir() else []
    every_paper = not prefix if every_paper is None else every_paper
    overview = not prefix if overview is None else overview
    sections = []
    papers = list(PAPERS) if every_paper else sorted({r.paper for r in recorded}, key=list(PAPERS).index)
    for paper in papers:
        mine = [r for r in recorded if r.paper == paper]
        anchor = f'{paper}{prefix.strip("/")}'
        if not mine:
            sections.append(f'<section id="{anchor}"><{heading}>{html.escape(PAPERS[paper])}</{heading}>\n'
                            f"<p>No findings recorded for this paper yet: {missing_text}.</p></section>")
            continue
        table = overview_table(mine) if overview else ""
        sections.append(f'<section id="{anchor}"><{heading}>{html.escape(PAPERS[paper])}'
                        f"</{heading}>\n{verdict_counts(mine, WHOSE.get(paper, 'of the paper'))}{table}<ul>\n"
                        + "\n".join(report_items(reports_dir, mine, prefix)) + "\n</ul></section>")
    missing = [m for m in unrecorded(reports_dir, recorded) if m != "index"]
    if missing:
        links = ", ".join(f'<a href="{prefix}{m}.html">{html.escape(m)}</a>' for m in missing)
        sections.append(f"<p>Reports without recorded findings (re-run them): {links}</p>")
    return sections


def machine_text(card: dict) -> str:
    gib = (card.get("memory_bytes") or 0) / 2**30
    return (f"{card.get('host', '?')}: {card.get('cpu_model', '?')}, {card.get('cores', '?')} cores, "
            f"{gib:.0f} GiB, {card.get('disk_device', '?')} ({card.get('filesystem', '?')}), "
            f"kernel {card.get('kernel', '?')}, {card.get('os', '?')}")


def revisions_text(runs: list[dict]) -> str:
    """The git revisions the runs were measured at: a few by name, many counted (a reference run measured
    in parts names one a part; each report's Provenance lists them)."""
    revisions = sorted({rev for r in runs for rev in str(r.get("git_rev")).split(", ")})
    if len(revisions) <= 3:
        return "git " + ", ".join(revisions)
    return f"{len(revisions)} git revisions, one a part, each named in its report's Provenance"


def runs_summary(recorded: list[Recorded]) -> str:
    """What the results on this page are: scale, repeats, machine(s), when and from which code they were measured."""
    runs = [r.run for r in recorded if r.run.get("run_id")]
    if not runs:
        return ""
    scales = ", ".join(sorted({str(r.get("scale")) for r in runs}))
    policies = sorted({r.get("repeat_policy") or f"{r['repeats']} repeats per cell" for r in runs if r.get("repeats")})
    machines = {machine_text(m) for r in runs for m, _ in machine.machines(r) if m}
    started = [r["started_utc"] for r in runs if r.get("started_utc")]
    finished = [r["finished_utc"] for r in runs if r.get("finished_utc")]
    when = (f", between {min(started)[:16].replace('T', ' ')} and {max(finished or started)[:16].replace('T', ' ')} UTC"
            if started else "")
    revisions = revisions_text(runs)
    repeats_text = policies[0] if len(policies) == 1 else "repeats: see each report"
    return (f"<p><b>Measured</b> at scale <code>{html.escape(scales)}</code>, {html.escape(repeats_text)}, on {html.escape('; '.join(sorted(machines)) or 'an unrecorded machine')}{when}, "
            f"from {html.escape(revisions)} ({len(runs)} run{'s' if len(runs) != 1 else ''}).</p>")


def _machines_mark(run: dict) -> str:
    """A mark for a run whose parts ran on more than one machine (its report says which)."""
    count = len(machine.machines(run))
    return f"<br><span style='color:#9a6700'>on {count} machines</span>" if count > 1 else ""


def reference_table(reports_dir: Path, stages: list | None = None) -> str:
    """Per experiment of the reference run: its preset, what it read, when it ran and how long it took, its
    verdicts, and whether the code, configuration and params it was measured with are still today's
    (``stages``: storebench.pipeline.reference's StageStates; None leaves that column out); an experiment
    not measured there yet says so, with its quick-check report."""
    from storebench.experiments import EXPERIMENTS

    recorded = {r.experiment: r for r in (read_all(reports_dir) if reports_dir.is_dir() else [])}
    rows = []
    for name, paper in EXPERIMENTS.items():
        r = recorded.get(name)
        label = html.escape(name.replace("_", " "))
        mine = [s for s in stages or [] if s.experiment == name]
        if r is None:
            done = sum(s.measured for s in mine)
            stale = sum(bool(s.measured and s.changed_inputs) for s in mine)
            progress = (f"; {done} of {len(mine)} parts measured" + (f", {stale} of them stale" if stale else "")
                        if done else "")
            if (reports_dir / "partial" / f"{name}.html").exists():
                progress += f": <a href='reference/partial/{name}.html'>partial report</a>, its verdicts not counted"
            rows.append(f"<tr><td>{label}</td><td>{html.escape(PAPER_SHORT[paper])}</td>"
                        f"<td colspan='{7 if stages is not None else 6}' style='text-align:left;color:#888;white-space:normal'>"
                        f"not measured at the reference preset yet{progress} "
                        f"(quick check: <a href='{name}.html'>{label}</a>)</td></tr>")
            continue
        run = r.run
        parts = len(run.get("parts") or {})
        minutes = f"{float(run['duration_s']) / 60:.1f} min" if run.get("duration_s") is not None else "?"
        counts = ", ".join(f"{n} {v}" for v, n in r.verdict_counts.items() if n) or "no claims"
        rows.append(f"<tr><td><a href='reference/{name}.html'>{label}</a></td><td>{html.escape(PAPER_SHORT[paper])}</td>"
                    f"<td>{html.escape(str(run.get('scale')))}</td>"
                    f"<td style='white-space:normal;text-align:left;min-width:12em'>{html.escape(str(run.get('data', '?')))}</td>"
                    f"<td style='white-space:normal'>{html.escape(str(run.get('started_utc', '?'))[:16].replace('T', ' '))}"
                    f"{_machines_mark(run)}</td>"
                    f"{currency_cell(mine) if stages is not None else ''}"
                    f"<td style='white-space:normal;min-width:5.5em'>{minutes}{f' ({parts} parts)' if parts else ''}</td>"
                    f"<td>{load_text(run.get('load_avg_1m'))}</td>"
                    f"<td style='white-space:normal;text-align:left;min-width:9em'>{html.escape(counts)}</td></tr>")
    head = "".join(f"<th>{h}</th>" for h in ("experiment", "paper", "preset", "data", "measured<br>(UTC)",
                                               *(["current?"] if stages is not None else []), "took",
                                               "load<br>(max / mean)", "claims"))
    note = ("<p style='font-size:90%;color:#555'>Load: the machine's 1-minute load average, sampled every 15 s "
            "while the experiment measured (its own servers and clients included; 2 cores)."
            + (" Current: whether the code, server configuration and params each part was measured with are today's "
               "(as <code>make reference-status</code> compares them with <code>reference/dvc.lock</code>; data "
               "folders, which git does not hold, are compared there too but not here)." if stages is not None else "")
            + "</p>")
    return (stale_warning(stages or [], set(recorded)) + f"<div style='overflow-x:auto'><table><tr>{head}</tr>\n" + "\n".join(rows)
            + "</table></div>" + note)


def currency_cell(mine: list) -> str:
    """"yes"; "stale" when a part was measured with inputs that have changed since; "incomplete" when a part
    defined today has not been measured (the parts were redefined after the report); the banner says which."""
    if any(s.measured and s.changed_inputs for s in mine):
        return "<td style='color:#b35900'><b>stale</b></td>"
    if not all(s.measured for s in mine):
        return "<td style='color:#b35900'><b>incomplete</b></td>"
    return "<td style='color:#1a7f37'>yes</td>"


def stale_warning(stages: list, presented: set[str]) -> str:
    """A banner over the table naming each presented reference result measured with inputs changed since,
    and which inputs, or with parts defined since its report that are not measured yet."""
    lines = []
    for experiment in sorted(presented):
        mine = [s for s in stages if s.experiment == experiment]
        stale = [s for s in mine if s.measured and s.changed_inputs]
        unmeasured = [s.part or s.stage for s in mine if not s.measured]
        label = f"<b>{html.escape(experiment.replace('_', ' '))}</b>"
        if stale:
            inputs = sorted({i.removeprefix("lib/storebench/") for s in stale for i in s.changed_inputs})
            shown = ", ".join(inputs[:4]) + (f" and {len(inputs) - 4} more" if len(inputs) > 4 else "")
            parts = f" ({len(stale)} of {len(mine)} parts)" if len(mine) > 1 else ""
            lines.append(f"<li style='border:0;padding:.1em 0'>{label}{parts}: measured before a change to "
                         f"{html.escape(shown)}</li>")
        if unmeasured:
            lines.append(f"<li style='border:0;padding:.1em 0'>{label} ({len(unmeasured)} of {len(mine)} parts): "
                         f"defined since its report and not measured yet ({html.escape(', '.join(unmeasured))}); "
                         "its report is the last one rendered, from the parts as they were then</li>")
    if not lines:
        return ""
    return ("<div style='border-left:4px solid #b35900;padding:.3em .8em;background:#fff4e5'><b>Stale:</b> measured "
            "with code, configuration or params that have changed since, or before its parts were redefined. Their figures are those of the committed "
            "measurement until it is repeated (<code>python -m storebench.pipeline.reference measure "
            "&lt;experiment&gt; [--part &lt;part&gt;]</code>).<ul style='margin:.3em 0'>" + "".join(lines)
            + "</ul></div>")


def load_text(load) -> str:
    """The 1-minute load average a run was measured under ("1.9 / 1.4"; "not recorded" before it was)."""
    if not isinstance(load, dict) or load.get("max") is None:
        return "not recorded"
    return f"{load['max']:.1f} / {load['mean']:.1f}"


def verdicts_by_paper(reports_dir: Path) -> str:
    """Per paper, the reference results' claims counted by verdict, and how many of its experiments are in."""
    from storebench.experiments import EXPERIMENTS

    recorded = read_all(reports_dir) if reports_dir.is_dir() else []
    head = "".join(f"<th>{h}</th>" for h in ("paper", "experiments measured", *VERDICTS))
    rows = []
    for paper in PAPERS:
        mine = [r for r in recorded if r.paper == paper]
        total = sum(1 for p in EXPERIMENTS.values() if p == paper)
        counts = [sum(r.verdict_counts[v] for r in mine) for v in VERDICTS]
        cells = "".join(f"<td style='color:{VERDICT_COLOURS[v]}'>{n if mine else '&ndash;'}</td>"
                        for v, n in zip(VERDICTS, counts))
        rows.append(f"<tr><td>{html.escape(PAPER_SHORT[paper])}</td><td>{len(mine)} of {total}</td>{cells}</tr>")
    return f"<table><tr>{head}</tr>\n" + "\n".join(rows) + "</table>"


PAPER_SHORT = {"harness": "harness", "dl_storage_benchmarking": "DL workloads (003)", "ml_storage_study":
               "ML storage (001)", "layoutbench": "LayoutBench (002)", "cassandra_dl": "Cassandra (004)"}


def build(reports_dir: Path = REPORTS_DIR, reference_stages: list | None = None) -> Path:
    """``reference_stages``: the reference run's StageStates (storebench.pipeline.reference.status), which say
    whether each reference result is still current; None leaves that out."""
    reports_dir = Path(reports_dir)
    reference_dir = reports_dir / "reference"
    reference = paper_sections(reference_dir, "reference/", "h3", every_paper=True, overview=True,
                               missing_text="not measured at the reference preset yet (see the table above)")
    sections = paper_sections(reports_dir, heading="h3")
    paper_dir = reports_dir / "paper"
    paper = paper_sections(paper_dir, "paper/", "h3") if paper_dir.is_dir() else []
    measured = runs_summary(read_all(reports_dir))
    nav = " ".join(f'<a href="#{p}reference">{html.escape(PAPERS[p].split(",")[0])}</a>' for p in PAPERS)
    body = "\n".join(sections) or "<p>No reports yet: run <code>make reproduce</code>.</p>"
    paper_html = ("<h2>Earlier runs at the paper preset, outside the reference set</h2>\n"
                  + runs_summary(read_all(paper_dir)) + "\n".join(paper)) if paper else ""
    index = reports_dir / "index.html"
    index.write_text(f"""<!doctype html>
<html><head><meta charset="utf-8"><title>storebench reports</title>
<style>{STYLE}</style></head>
<body><h1>storebench reports</h1>
<p>Each report renders one experiment from its recorded result tables (<code>results/</code>): the answer
first (the paper's claims, each judged from a 95% CI: holds, does not hold, inconclusive or not comparable),
figures with the papers' published numbers as a labelled reference layer, findings, method, detailed tables and
provenance.</p>
<p>Index built from git {html.escape(git_revision())}.</p>
<nav>{nav} <a href="#quick-check">the quick check</a></nav>
<h2 id="reference">The reference results: each paper at its own sizes</h2>
<p>The suite's results: every experiment measured at the <code>reference</code> preset of
<code>params.yaml</code> (the papers' data sizes and grids, as the <code>paper</code> preset states them, changed
only where this machine cannot hold them, each change stated in <code>params.yaml</code> and in the report), stage by
stage (<code>python -m storebench.pipeline.reference measure &lt;experiment&gt;</code>; each planned within ~40 min,
split into parts where longer; a part that is a single cell cannot be split and may run past it:
<code>... reference status</code> gives each stage's time), and committed.</p>
<p><b>The claims, per paper</b> (each judged on the reference results by the rules below; a "does not hold" says
in its report whether the cause is known and what would settle it):</p>
{verdicts_by_paper(reference_dir)}
<p><b>Per experiment</b>:</p>
{reference_table(reference_dir, reference_stages)}
{runs_summary(read_all(reference_dir)) if reference_dir.is_dir() else ""}
{rules_html()}
{"".join(reference)}
<h2 id="quick-check">The quick check: every experiment at <code>small</code></h2>
<p>What <code>make reproduce</code> regenerates in about an hour: the same code and reports on data 10-1000x smaller
than the papers' (mostly in the page cache) and a lighter repeat policy. It checks that everything runs; it is
not where the papers' claims are settled.</p>
{measured}
{body}
{paper_html}
</body></html>
""")
    return index


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m storebench.report.index")
    parser.add_argument("--reports", default=str(REPORTS_DIR))
    args = parser.parse_args(argv)
    from storebench.pipeline import reference

    print(build(Path(args.reports), reference.status(tracked_only=True)))


if __name__ == "__main__":
    main()
