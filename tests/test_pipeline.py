"""Each DVC stage depends on the library files its imports reach, and on no others."""
import yaml

from storebench.pipeline.deps import deps as pipeline
from storebench.paths import ROOT

EXPERIMENTS = ["access_pattern", "location", "format", "granularity", "breakdown", "training"]
SEED001 = {"dataloaders": "dataloaders", "scalability": "scalability", "embeddings": "embeddings",
           "resources": "resource_use"}  # notebook -> experiment module


def stage_deps(name: str) -> set[str]:
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][name]
    return {next(iter(d)) if isinstance(d, dict) else d for d in stage["deps"]}


def test_dvc_yaml_lists_exactly_what_each_stage_imports():
    assert pipeline.check() == {}, "run `python -m storebench.pipeline.deps write`"


def test_a_missing_module_is_reported(tmp_path):
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    doc["stages"]["format"]["deps"].remove("lib/storebench/core/timing.py")
    changed = tmp_path / "dvc.yaml"
    changed.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert pipeline.check(changed) == {"format": {"missing": ["lib/storebench/core/timing.py"], "extra": []}}


def test_an_experiment_depends_on_its_own_module_only():
    for name in EXPERIMENTS:
        deps = stage_deps(name)
        assert f"lib/storebench/experiments/{name}.py" in deps and f"notebooks/{name}.ipynb" in deps
        others = {f"lib/storebench/experiments/{o}.py" for o in EXPERIMENTS if o != name}
        assert not deps & others, f"{name} depends on {sorted(deps & others)}"


def test_one_familys_preset_is_not_anothers_dependency():
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name in [*EXPERIMENTS, *SEED001]:
        params = set(doc[name]["params"])
        assert {f"presets.{s}.{name}" for s in ("smoke", "small", "paper")} <= params and name in params
        assert "presets" not in params and not {f"presets.small.{o}" for o in [*EXPERIMENTS, *SEED001] if o != name} & params
    deps = stage_deps("training")
    assert not [d for d in deps if d.endswith(("loaders/rows.py", "samples.py", "tables.py"))]


def test_seed001_stages_chain_through_the_best_loader_configurations():
    for name, module in SEED001.items():
        deps = stage_deps(name)
        assert f"lib/storebench/experiments/{module}.py" in deps and f"notebooks/{name}.ipynb" in deps
        assert not {f"lib/storebench/experiments/{e}.py" for e in EXPERIMENTS} & deps
    for name in ("scalability", "resources"):
        assert "reports/dataloaders_best.csv" in stage_deps(name)


def test_the_index_is_built_from_recorded_findings_not_experiment_code():
    deps = stage_deps("index")
    assert not [d for d in deps if d.startswith("lib/storebench/experiments")]
    assert {f"reports/{name}.findings.json" for name in [*EXPERIMENTS, *SEED001]} <= deps


def test_imports_inside_functions_and_registry_paths_are_followed():
    found = pipeline.imported_modules(
        "def f():\n    from .timing import measure\nSTORES = {'x': 'storebench.stores.redis:RedisStore'}\n",
        "storebench.stores.readers")
    assert {"storebench.core.timing", "storebench.stores.redis"} <= found
