"""Every experiment follows the contract (storebench.core.experiment), in the same shape."""
import ast
from pathlib import Path
import inspect

import pytest

from storebench.core.experiment import PAPERS, Experiment
from storebench.core.settings import Settings
from storebench.experiments import EXPERIMENTS, experiment, package, step
from storebench.pipeline.deps import module_file

ON_CONTRACT = [n for n in EXPERIMENTS if module_file(f"{package(n)}.measure") is not None]
FORBIDDEN_IN_ANALYSIS = ("storebench.stores", "storebench.services", "storebench.testbed", "storebench.loaders",
                         "storebench.layouts", "storebench.experiments.common", "torch")


@pytest.mark.parametrize("name", ON_CONTRACT)
def test_declaration_settings_measure_analyse_figures(name):
    declared = experiment(name)
    assert isinstance(declared, Experiment) and declared.name == name and declared.paper in PAPERS
    assert declared.paper == EXPERIMENTS[name] and declared.reference and declared.question
    measure = step(name, "measure")
    assert issubclass(measure.Settings, Settings)
    assert list(inspect.signature(measure.measure).parameters) == ["settings", "out", "progress"]
    analysis = step(name, "analysis")
    assert list(inspect.signature(analysis.analyse).parameters) == ["tables"]
    assert list(inspect.signature(analysis.figures).parameters) == ["tables"]


@pytest.mark.parametrize("name", ON_CONTRACT)
def test_analysis_imports_nothing_that_measures(name):
    source = module_file(f"{package(name)}.analysis").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    bad = sorted(m for m in imported if m.startswith(FORBIDDEN_IN_ANALYSIS) or m.endswith(".measure"))
    assert not bad, f"{name}/analysis.py imports {bad}"


@pytest.mark.parametrize("name", ON_CONTRACT)
def test_measure_does_not_import_the_analysis(name):
    """A figure or verdict change must never re-measure."""
    source = module_file(f"{package(name)}.measure").read_text()
    imported = {node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom) and node.module}
    assert f"{package(name)}.analysis" not in imported


def test_every_registered_experiment_is_on_the_contract():
    assert ON_CONTRACT == list(EXPERIMENTS)


def test_the_package_root_holds_few_modules_and_no_import_circle():
    from storebench.pipeline.deps import LIB, imported_modules

    root = sorted(p.name for p in (LIB / "storebench").glob("*.py"))
    assert len(root) <= 5, root
    graph = {}
    for path in (LIB / "storebench").rglob("*.py"):
        name = ".".join(path.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]  # module-level imports
        graph[name] = imported_modules(ast.unparse(ast.Module(top, [])), name, path.name == "__init__.py") - {name}
    cycles = [(a, b) for a, deps in graph.items() for b in deps if a in graph.get(b, set())]
    assert not cycles, cycles


def test_tier_markers_are_set_per_test_not_per_file():
    """A pure test in a file of server tests still runs in `make test-fast`."""
    import re

    tests = Path(__file__).parent
    whole_files = [p.name for p in tests.rglob("test_*.py")
                   if re.search(r"^pytestmark\s*=.*mark\.(slow|server)", p.read_text(), re.M)]
    assert not whole_files


def test_the_store_template_implements_every_method_a_store_must_have():
    """docs/templates/store_template.py stays a Store with nothing abstract left (docs/adding-a-store.md)."""
    import importlib.util

    from storebench.stores.base import Store

    path = Path(__file__).parents[1] / "docs" / "templates" / "store_template.py"
    spec = importlib.util.spec_from_file_location("store_template", path)
    template = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(template)
    cls = template.MySystemStore
    assert issubclass(cls, Store) and not cls.__abstractmethods__
    assert all(name in vars(cls) for name in ("put_many", "get", "get_many", "scan", "clear", "flush", "reopen",
                                              "close", "system_version"))
