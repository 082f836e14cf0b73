"""Every experiment on the contract: its analysis, re-run on the committed result tables, reproduces the
committed findings file: every verdict, label and count exactly, every float to 1e-9 (relative). No server,
seconds."""
import json
import math

import pytest

from storebench.core.experiment import ResultTables
from storebench.experiments import EXPERIMENTS, step
from storebench.paths import REPORTS_DIR, ROOT
from storebench.report import findings, notebook

RECORDED = [name for name in EXPERIMENTS if (ROOT / "results" / name / "manifest.json").exists()]


def test_experiments_on_the_contract_have_committed_results():
    assert RECORDED, "no committed results/<experiment>/manifest.json"


@pytest.mark.parametrize("name", RECORDED)
def test_analysis_reproduces_the_committed_findings(name):
    tables = ResultTables.read(ROOT / "results" / name)
    made = notebook.analyse(step(name, "analysis"), tables)  # as the report does
    expected = json.loads((REPORTS_DIR / f"{name}.findings.json").read_text())
    assert same(json.loads(findings.dumps(made.record(notebook.declared(name), tables.manifest))), expected)


def same(made, expected, where: str = "findings") -> bool:
    """``made == expected``, but floats need only agree to 1e-9: numpy's vectorised sums round their last
    bit differently on different CPUs (seen: a bootstrap CI bound, 1.047109554439011 on an AMD EPYC against
    1.0471095544390108 committed from an Intel Xeon)."""
    if isinstance(made, float) and isinstance(expected, float):
        assert math.isclose(made, expected, rel_tol=1e-9, abs_tol=1e-12), f"{where}: {made} != {expected}"
    elif isinstance(made, dict) and isinstance(expected, dict):
        assert made.keys() == expected.keys(), f"{where}: keys {sorted(made)} != {sorted(expected)}"
        for key in made:
            same(made[key], expected[key], f"{where}.{key}")
    elif isinstance(made, list) and isinstance(expected, list):
        assert len(made) == len(expected), f"{where}: {len(made)} items != {len(expected)}"
        for i, (a, b) in enumerate(zip(made, expected)):
            same(a, b, f"{where}[{i}]")
    else:
        assert made == expected, f"{where}: {made!r} != {expected!r}"
    return True


def test_same_tells_a_rounding_from_a_change():
    assert same({"a": [1.0471095544390108, "x"]}, {"a": [1.047109554439011, "x"]})
    for changed in ({"a": [1.0472, "x"]}, {"a": [1.0471095544390108, "y"]}, {"a": [1.0471095544390108]}):
        with pytest.raises(AssertionError):
            same(changed, {"a": [1.0471095544390108, "x"]})


@pytest.mark.parametrize("name", RECORDED)
def test_figures_draw_from_the_committed_tables(name):
    import matplotlib.pyplot as plt

    drawn = step(name, "analysis").figures(ResultTables.read(ROOT / "results" / name))
    assert drawn and all(hasattr(fig, "savefig") for fig in drawn.values())
    for fig in drawn.values():
        plt.close(fig)
