"""Every experiment on the contract: its analysis, re-run on the committed result tables, reproduces the
committed findings file exactly. No server, seconds."""
import json

import pytest

from storebench.core.experiment import ResultTables
from storebench.experiments import EXPERIMENTS, experiment, step
from storebench.paths import REPORTS_DIR, ROOT
from storebench.report import findings

RECORDED = [name for name in EXPERIMENTS if (ROOT / "results" / name / "manifest.json").exists()]


def test_experiments_on_the_contract_have_committed_results():
    assert RECORDED, "no committed results/<experiment>/manifest.json"


@pytest.mark.parametrize("name", RECORDED)
def test_analysis_reproduces_the_committed_findings(name):
    tables = ResultTables.read(ROOT / "results" / name)
    made = step(name, "analysis").analyse(tables)
    expected = json.loads((REPORTS_DIR / f"{name}.findings.json").read_text())
    assert json.loads(findings.dumps(made.record(experiment(name), tables.manifest))) == expected


@pytest.mark.parametrize("name", RECORDED)
def test_figures_draw_from_the_committed_tables(name):
    import matplotlib.pyplot as plt

    drawn = step(name, "analysis").figures(ResultTables.read(ROOT / "results" / name))
    assert drawn and all(hasattr(fig, "savefig") for fig in drawn.values())
    for fig in drawn.values():
        plt.close(fig)
