"""Tables for notebooks, one-line findings, and the HTML index that links every report."""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .paths import REPORTS_DIR
from .results import machine


@dataclass(frozen=True)
class Findings:
    headline: str  # one line, shown in reports/index.html
    markdown: str  # the notebook's Findings section


def workload_label(access: str, k: int) -> str:
    return "full" if access == "full" else f"{'seq' if access == 'sequential' else 'rand'}-{k}"


def wide_table(summary: pd.DataFrame) -> pd.DataFrame:
    """system x location rows, one column per workload, cells 'mean ± ci95' seconds."""
    frame = summary.copy()
    frame["workload"] = [workload_label(a, k) for a, k in zip(frame.access, frame.samples_per_request)]
    frame["cell"] = [f"{m:.4g} ± {c:.2g}" if pd.notna(c) else f"{m:.4g}" for m, c in zip(frame["mean"], frame.ci95)]
    order = list(dict.fromkeys(frame.workload))
    table = frame.pivot_table(index=["system", "system_version", "location"], columns="workload", values="cell",
                              aggfunc="first", sort=False)
    return table[[c for c in order if c in table.columns]].fillna("n/a")


def provenance(rows: pd.DataFrame) -> pd.DataFrame:
    """Who measured what with which versions: one row per system, plus the machine."""
    columns = ["system", "system_version", "client_version"]
    table = rows[columns].drop_duplicates().reset_index(drop=True)
    first = rows.iloc[0]
    for key in ("host", "cpus", "memory_bytes", "python", "git_rev", "scale", "n_samples"):
        table[key] = first[key]
    table["repeats"] = int(rows.repeat.max()) + 1
    return table


def write_finding(out_dir: Path, experiment: str, headline: str) -> Path:
    path = Path(out_dir) / f"{experiment}.finding.txt"
    path.write_text(headline.strip() + "\n")
    return path


def _report_items(reports_dir: Path, prefix: str = "") -> list[str]:
    """One list item per rendered report in ``reports_dir``: link, finding, CSV, figure."""
    items = []
    for page in sorted(reports_dir.glob("*.html")):
        if page.name == "index.html":
            continue
        name = page.stem
        finding_file = reports_dir / f"{name}.finding.txt"
        finding = finding_file.read_text().strip() if finding_file.exists() else "(no finding recorded)"
        link = f"{prefix}{name}"
        figure = f'<img src="{link}.png" alt="{name} figure" width="420">' if (reports_dir / f"{name}.png").exists() else ""
        csv = f' &middot; <a href="{link}.csv">results table (CSV)</a>' if (reports_dir / f"{name}.csv").exists() else ""
        items.append(f'<li><h2><a href="{link}.html">{html.escape(name.replace("_", " "))}</a></h2>'
                     f"<p>{html.escape(finding)}{csv}</p>{figure}</li>")
    return items


def build_index(reports_dir: Path = REPORTS_DIR) -> Path:
    """reports/index.html: the per-system overview, then every rendered report with its one-line
    finding and figure; runs at the paper's scale (``reports/paper/``) in a section of their own."""
    from .overview import overview_html

    reports_dir = Path(reports_dir)
    items = _report_items(reports_dir)
    paper_items = _report_items(reports_dir / "paper", "paper/") if (reports_dir / "paper").is_dir() else []
    m = machine()
    body = "\n".join(items) or "<li>No reports yet: run <code>make reproduce</code>.</li>"
    table = overview_html(reports_dir)
    overview = (f"<h2>Per system, across the experiments</h2>\n{table}\n<p>Each ratio is computed by the "
                f"experiment's own code from its results table below (one run, same machine); &ndash; where that "
                f"experiment does not measure the system.</p>") if table else ""
    paper = (f"<h2>At the paper's scale (60,000 samples)</h2>\n<ul>\n{chr(10).join(paper_items)}\n</ul>"
             if paper_items else "")
    index = reports_dir / "index.html"
    index.write_text(f"""<!doctype html>
<html><head><meta charset="utf-8"><title>storebench reports</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}}
li{{list-style:none;border-top:1px solid #ccc;padding:.5em 0}} code{{background:#eee}}
table{{border-collapse:collapse;font-size:90%}} td,th{{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:right}}</style></head>
<body><h1>storebench reports</h1>
<p>Each report is an executed notebook: parameters, measurements (mean &plusmn; 95% CI over repeats),
figures with the seed papers' published numbers as a labelled reference layer, and findings.
Index built on {html.escape(m["host"])} ({m["cpus"]} CPUs), git {html.escape(m["git_rev"])}.</p>
{overview}
<ul>
{body}
</ul>
{paper}
</body></html>
""")
    return index


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m storebench.reporting")
    parser.add_argument("action", choices=["index"])
    parser.add_argument("--reports", default=str(REPORTS_DIR))
    args = parser.parse_args(argv)
    print(build_index(Path(args.reports)))


if __name__ == "__main__":
    main()
