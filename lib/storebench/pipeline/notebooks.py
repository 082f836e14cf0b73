"""Run an experiment's report notebook with papermill and render it to HTML (the report stages call
this). The notebook reads the recorded tables (results/<experiment>/) and starts no server.

    python -m storebench.pipeline.notebooks access_pattern [--results DIR] [--out-dir DIR] [-p key value]
"""
from __future__ import annotations

import argparse
import html
import os
import re
import sys
import tempfile
from pathlib import Path

from storebench.paths import REPORTS_DIR, ROOT
from storebench.core.progress import relayed_to

NOTEBOOKS_DIR = ROOT / "notebooks"
KERNEL = "storebench"


def run(name: str, scale: str | None = None, out_dir: Path = REPORTS_DIR, parameters: dict | None = None,
        progress: bool = True, results_dir: Path | None = None) -> Path:
    """Execute notebooks/<name>.ipynb into <out_dir>/notebooks/ and render <out_dir>/<name>.html."""
    import papermill

    source = NOTEBOOKS_DIR / f"{name}.ipynb"
    if not source.exists():
        known = ", ".join(sorted(p.stem for p in NOTEBOOKS_DIR.glob("*.ipynb")))
        raise ValueError(f"unknown notebook {name!r}; notebooks: {known}")
    out_dir = Path(out_dir).resolve()
    executed = out_dir / "notebooks" / f"{name}.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    params = {**({"scale": scale} if scale else {}), **({"out_dir": str(out_dir)} if out_dir != REPORTS_DIR.resolve() else {}),
              **({"results_dir": str(Path(results_dir).resolve())} if results_dir else {}), **(parameters or {})}
    streams = {"stdout_file": sys.stdout, "stderr_file": sys.stderr} if progress else {}  # cell output, live
    spool = Path(tempfile.gettempdir()) / f"storebench-progress-{os.getpid()}-{name}.txt"
    with relayed_to(sys.stderr if progress else None, spool):  # the kernel's bars: terminal, not report
        papermill.execute_notebook(str(source), str(executed), parameters=params, kernel_name=KERNEL,
                                   cwd=str(NOTEBOOKS_DIR), progress_bar=progress, **streams)
    return render_html(executed, out_dir / f"{name}.html", index_href=_index_href(out_dir))


def _index_href(out_dir: Path) -> str:
    """The link from a report in ``out_dir`` to reports/index.html (a report under reports/reference/
    links one level up; a report rendered elsewhere, to the index beside it)."""
    try:
        depth = len(out_dir.resolve().relative_to(REPORTS_DIR.resolve()).parts)
    except ValueError:
        depth = 0
    return "../" * depth + "index.html"


STYLE = """<style>
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; font-size: 15px; line-height: 1.45;
       color: #1f2328; margin: 0; }
main { max-width: 1200px; margin: 0 auto; padding: 1.5em 2em; }
h1 { font-size: 1.8em; font-weight: 500; } h2 { margin-top: 1.6em; font-weight: 500; } h3 { font-weight: 600; }
table { border-collapse: collapse; font-size: 90%; margin: .5em 0 1em; table-layout: auto; }
th, td { padding: .3em .6em; border-bottom: 1px solid #d0d7de; text-align: left; vertical-align: top;
         white-space: normal; max-width: 40em; }
tbody tr:nth-child(odd) { background: #f6f8fa; }
caption { caption-side: top; text-align: left; font-weight: bold; padding: 4px 0; }
img { max-width: 100%; height: auto; }
pre, code { font-family: ui-monospace, monospace; font-size: 90%; }
pre { white-space: pre-wrap; }
.sb-scroll { overflow-x: auto; max-width: 100%; }
.sb-card th { font-weight: normal; color: #57606a; }
.sb-note { color: #57606a; font-size: 90%; }
details > summary { cursor: pointer; color: #0969da; }
</style>
"""
# What a code cell's output shows, in order of preference (the richest the cell produced).
SHOWN = ("text/html", "image/png", "image/jpeg", "image/svg+xml", "text/markdown", "text/plain")


def render_html(notebook: Path, target: Path, log=None, index_href: str = "index.html") -> Path:
    """The executed notebook as the document a reviewer reads: its markdown and its cells' outputs, nothing of
    the notebook itself (no code, no cell markup, no notebook styles); a link back to the index, the title as
    the page's <title>, no log or warning line (a cell's stderr goes to ``log``, the stage's own log, instead)
    and no path of this machine (repo-relative ones instead)."""
    import nbformat

    node = nbformat.read(notebook, as_version=4)
    move_stderr(node, log or sys.stderr)
    strip_machine_paths(node)
    parts = [f'<p><a href="{index_href}">&larr; all storebench reports</a></p>']
    for cell in node.cells:
        if cell.cell_type == "markdown":
            parts.append(markdown_html(cell.source))
        elif cell.cell_type == "code":
            parts.extend(output_html(output) for output in cell.get("outputs", []))
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{html.escape(title(node), quote=False)}</title>\n{STYLE}</head>\n"
            f"<body><main>\n" + "\n".join(p for p in parts if p) + "\n</main></body></html>\n")
    target.write_text(page, encoding="utf-8")
    return target


def markdown_html(text: str) -> str:
    """Markdown as HTML (nbconvert's renderer), without the pilcrow links it puts in every heading."""
    from nbconvert.filters.markdown import markdown2html

    return re.sub(r'<a class="anchor-link" href="#[^"]*">&#182;</a>', "", markdown2html(text))


def output_html(output) -> str:
    """One output of a code cell as HTML (stderr is already gone: see ``move_stderr``)."""
    if output.get("output_type") == "stream":
        return f"<pre>{html.escape(output.get('text', ''))}</pre>"
    if output.get("output_type") == "error":
        return f"<pre>{html.escape(output.get('ename', ''))}: {html.escape(output.get('evalue', ''))}</pre>"
    data = output.get("data", {})
    mime = next((m for m in SHOWN if m in data), None)
    value = data.get(mime)
    if isinstance(value, list):
        value = "".join(value)
    if mime == "text/html":
        return f'<div class="sb-output">{value}</div>'
    if mime in ("image/png", "image/jpeg"):
        width = output.get("metadata", {}).get(mime, {}).get("width")
        size = f' width="{int(width)}"' if width else ""
        return f'<p><img src="data:{mime};base64,{value.strip()}"{size} alt="figure"></p>'
    if mime == "image/svg+xml":
        return value
    if mime == "text/markdown":
        return markdown_html(value)
    if mime == "text/plain":
        return f"<pre>{html.escape(value)}</pre>"
    return ""


def move_stderr(node, log) -> None:
    """Take every stderr stream (library log lines, warnings) out of the notebook's outputs and
    write it to ``log``."""
    for cell in node.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream" and output.get("name") == "stderr":
                log.write(output.get("text", ""))
            else:
                kept.append(output)
        cell.outputs = kept


def strip_machine_paths(node) -> None:
    """Paths under the checkout as repo-relative ones, the home directory as ``~``, in every text output."""
    def clean(text: str) -> str:
        return text.replace(f"{ROOT.resolve()}/", "").replace(f"{ROOT}/", "").replace(f"{Path.home()}/", "~/")

    for cell in node.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if "text" in output:
                output["text"] = clean(output["text"])
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") and isinstance(value, str):
                    output["data"][mime] = clean(value)


def title(node) -> str:
    """The page title: the notebook's first heading (nbconvert would say "Notebook")."""
    for cell in node.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return "storebench report"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m storebench.pipeline.notebooks")
    parser.add_argument("name")
    parser.add_argument("--results", default=None, help="recorded result tables (default: results/)")
    parser.add_argument("--scale", default=None, help="for a notebook that measures (measure=True, or an experiment "
                                                       "not yet on the contract)")
    parser.add_argument("--out-dir", default=str(REPORTS_DIR))
    parser.add_argument("-p", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="extra notebook parameter (value parsed as YAML)")
    args = parser.parse_args(argv)
    import yaml

    extra = {key: yaml.safe_load(value) for key, value in args.p}
    print(run(args.name, args.scale, Path(args.out_dir), extra, results_dir=args.results))


if __name__ == "__main__":
    main()
