"""Which library files each DVC stage depends on, derived from the imports, so a change to one
experiment's module re-runs that experiment only.

A stage's library dependencies are the modules its command runs (``python -m storebench.X``) and,
for a notebook stage, the modules the notebook imports, closed over every ``import`` they make
(also those inside functions, which run when the function does) and every module the store and
service registries name by dotted path (of the store registry, a measurement of an experiment in
STORES_OPENED follows only the stores its settings open). A stage whose closure starts servers also depends on their
configuration templates (``env/conf``).

A notebook stage's params are its own section and its own entry under each scale preset, plus
the global preset values every experiment receives (``n_samples``, ``repeats``): so tuning one
family's preset re-runs that family only.

    python -m storebench.pipeline.deps check    # exit 1 and say which stage misses which file
    python -m storebench.pipeline.deps write    # rewrite the deps of dvc.yaml from the imports
"""
from __future__ import annotations

import ast
import json
import re
import sys
from functools import lru_cache
from pathlib import Path

from storebench.paths import ROOT
from storebench.pipeline import yamlfile

PACKAGE = "storebench"
LIB = ROOT / "lib"
DVC_YAML = ROOT / "dvc.yaml"
SERVER_CONFIGS = "env/conf"
_DOTTED = re.compile(rf"^({PACKAGE}(?:\.\w+)*)(?::\w+)?$")  # "storebench.stores.redis:RedisStore"


def module_file(module: str) -> Path | None:
    """The source file of ``module`` (a package's ``__init__.py``), or None outside the library."""
    base = LIB.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path) -> str:
    parts = path.relative_to(LIB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=None)  # the checks walk the same files once per stage: parse each text once
def imported_modules(source: str, importer: str = "", is_package: bool = False) -> frozenset[str]:
    """Library modules named by the imports (absolute and relative) and dotted-path strings of
    ``source``; ``importer`` is the module the source belongs to (for relative imports)."""
    found: set[str] = set()
    package = importer if is_package else importer.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # `from pkg import module`
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (m := _DOTTED.match(node.value)):
            found.add(m.group(1))
    return frozenset(name for name in found if name.split(".")[0] == PACKAGE and module_file(name) is not None)


def with_parents(module: str) -> set[str]:
    """Importing a.b.c runs a/__init__.py and a/b/__init__.py too."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts) + 1)}


# A report stage runs its notebook with measure=False: the measuring runner, which a notebook can
# reach (storebench.report.notebook names it for measure=True), is not among its dependencies.
MEASURING_RUNNER = f"{PACKAGE}.pipeline.run"


def closure(modules: set[str], stop: frozenset[str] = frozenset(),
            unopened_stores: frozenset[str] = frozenset()) -> set[Path]:
    """Every library file that importing ``modules`` can run (not following into ``stop``, nor from the
    store registry into ``unopened_stores``: store modules a run loads only by name, and never asks for)."""
    todo = set().union(*(with_parents(m) for m in modules)) if modules else set()
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen or module in stop:
            continue
        seen.add(module)
        path = module_file(module)
        if path is None:
            continue
        names = imported_modules(path.read_text(), module, path.name == "__init__.py")
        if module == STORE_REGISTRY:
            names = names - unopened_stores
        for name in names:
            todo |= with_parents(name) - seen
    return {module_file(m) for m in seen if module_file(m) is not None}


STORE_REGISTRY = f"{PACKAGE}.stores"

# The registry's stores a measurement opens, from its settings, for the experiments whose measure code
# opens no other (read there: the systems it sweeps, plus the fixed ones named); a measurement of any
# other experiment may open any store. So a change to one store's module makes stale only the stages
# and reference parts that open that store.
STORES_OPENED = {
    "location": lambda c: c["systems"],
    "format": lambda c: c["systems"],
    "granularity": lambda c: c["systems"],
    "training": lambda c: c["systems"],
    "breakdown": lambda c: [*c["systems"], "localfs"],  # breakdown.measure.LOCAL_READ_SYSTEM
    # access_pattern.measure.harness_check's stores, when the part runs it (its default: on)
    "access_pattern": lambda c: [*c["systems"], *(("rocksdb", "localfs") if c.get("harness_check", True) else ())],
    "cassandra_loader": lambda c: [*c["systems"], *c.get("feed_systems", [])],
    "cassandra_scale": lambda c: [],  # reads through loaders.prefetch.CassandraBlobs (stores.cassandra_model) only
}


def unopened_stores(cmd: str) -> frozenset[str]:
    """The store modules a measurement command never opens (none known for commands of other kinds, or of
    experiments outside STORES_OPENED)."""
    words = cmd.split()
    if f"{PACKAGE}.pipeline.run" not in words or words[words.index(f"{PACKAGE}.pipeline.run") + 1:][:1] != ["measure"]:
        return frozenset()
    name = words[words.index("measure") + 1]
    if name not in STORES_OPENED:
        return frozenset()
    from storebench.core.settings import merged, part_overrides
    from storebench.stores import STORES

    params = _params()
    scale = words[words.index("--scale") + 1] if "--scale" in words else None
    scale = params.get("scale") if scale in (None, "${scale}") else scale
    part = words[words.index("--part") + 1] if "--part" in words else None
    config, _ = merged(name, scale, params, part_overrides(params, name, part))
    opened = STORES_OPENED[name](config)
    if not set(opened) <= set(STORES):  # a store given by dotted path, or a typo the run itself will refuse
        return frozenset()
    opened = {_store_module(STORES[s]) for s in opened}
    return frozenset({_store_module(target) for target in STORES.values()} - opened)


def _store_module(target: str) -> str:
    return target.partition(":")[0]


def notebook_source(path: Path) -> str:
    """The code cells of a notebook as one Python source (IPython magics and shell lines dropped)."""
    cells = json.loads(path.read_text())["cells"]
    lines = []
    for cell in cells:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            lines += [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def command_modules(cmd: str) -> tuple[set[str], list[Path]]:
    """Library modules a stage command runs, and the notebooks it executes."""
    modules, notebooks = set(), []
    match = re.search(rf"-m\s+({PACKAGE}(?:\.\w+)*)", cmd)
    if match:
        modules.add(match.group(1))
        if module_file(f"{match.group(1)}.__main__") is not None:  # `python -m package` runs its __main__
            modules.add(f"{match.group(1)}.__main__")
        words = cmd[match.end():].split()
        if match.group(1) == f"{PACKAGE}.pipeline.notebooks":
            notebook = ROOT / "notebooks" / f"{words[0]}.ipynb"
            notebooks.append(notebook)
            modules |= imported_modules(notebook_source(notebook))
        elif match.group(1) == MEASURING_RUNNER and words[:1] == ["measure"]:
            from storebench.experiments import package

            modules.add(f"{package(words[1])}.measure")  # imported by name at run time
    return modules, notebooks


def is_report_stage(cmd: str) -> bool:
    """A notebook of an experiment on the contract (it has a measure module): it reads recorded
    tables and starts no server."""
    match = re.search(rf"-m\s+{PACKAGE}\.pipeline\.notebooks\s+(\w+)", cmd)
    if not match:
        return False
    from storebench.experiments import EXPERIMENTS, package

    return match.group(1) in EXPERIMENTS and module_file(f"{package(match.group(1))}.measure") is not None


def library_deps(cmd: str) -> list[str]:
    """The repo-relative library files (and server configs) a stage command depends on."""
    modules, _ = command_modules(cmd)
    files = closure(modules, frozenset({MEASURING_RUNNER}) if is_report_stage(cmd) else frozenset(),
                    unopened_stores(cmd))
    deps = sorted(str(p.relative_to(ROOT)) for p in files)
    if any(f"/{PACKAGE}/services/" in f"/{d}" for d in deps):
        deps.append(SERVER_CONFIGS)
    return deps


def is_library_dep(dep: str) -> bool:
    return dep.startswith(f"lib/{PACKAGE}") or dep == SERVER_CONFIGS


def _stages(doc) -> dict:
    """name -> the mapping that holds ``cmd`` and ``deps`` (the ``do`` of a foreach stage)."""
    return {name: (stage["do"] if "do" in stage else stage) for name, stage in doc["stages"].items()}


def _dep_name(dep) -> str:
    return next(iter(dep)) if isinstance(dep, dict) else str(dep)


def expected_deps(stage: dict) -> list[str]:
    cmd = stage["cmd"].replace("${item}", "")  # foreach stages run the same module for every item
    return library_deps(cmd)


def notebook_name(stage: dict) -> str | None:
    match = re.search(rf"-m\s+{PACKAGE}\.pipeline\.notebooks\s+(\w+)", stage["cmd"])
    return match.group(1) if match else None


def measured_experiment(stage: dict) -> str | None:
    """The experiment a stage measures: a measurement stage, or a notebook not yet on the contract."""
    match = re.search(rf"-m\s+{PACKAGE}\.pipeline\.run\s+measure\s+(\w+)", stage["cmd"])
    if match:
        return match.group(1)
    return None if is_report_stage(stage["cmd"]) else notebook_name(stage)


def expected_params(stage: dict, params_yaml: Path | None = None) -> list[str] | None:
    """The params a measuring stage reads (see the module docstring); None for other stages. A stage of
    the default pipeline reads the presets of params.yaml's ``scale``; a reference stage those of the
    reference preset (``--scale reference``) and its part: so tuning the reference preset never makes the
    quick check's results stale, nor the other way round."""
    from storebench.core.settings import preset_chain

    name = measured_experiment(stage)
    if name is None:
        return None
    params = _params(params_yaml)
    fixed_scale = re.search(r"--scale\s+(\w+)", stage["cmd"])
    scale = fixed_scale.group(1) if fixed_scale else params.get("scale", "small")
    chain = preset_chain(params, scale)
    _refuse_preset_mappings_without_an_experiment(params, chain)
    global_keys = sorted({key for _, preset in chain for key, value in preset.items()
                          if not isinstance(value, dict) and key != "extends"})
    part = re.search(r"--part\s+([\w-]+)", stage["cmd"])
    return ((["seed", "endpoints", name] if fixed_scale else ["scale", "seed", "endpoints", name])
            + [f"presets.{s}.{k}" for s, preset in chain for k in global_keys if k in preset]
            + [f"presets.{s}.{name}" for s, preset in chain if name in preset]
            + ([f"parts.{name}.{part.group(1)}"] if part else []))


def _refuse_preset_mappings_without_an_experiment(params: dict, chain: list[tuple[str, dict]]) -> None:
    """A mapping in a preset is an experiment's section there (storebench.core.settings.merged reads it so and
    gives every experiment only a preset's plain values): a setting whose value is a mapping, such as
    ``dataset_samples``, placed in a preset itself would reach no experiment, so it is refused, not dropped."""
    from storebench.core.settings import ParamsError

    for preset_name, preset in chain:
        for key, value in preset.items():
            if isinstance(value, dict) and not isinstance(params.get(key), dict):
                raise ParamsError(
                    f"params.yaml: presets.{preset_name}.{key} is a mapping but names no experiment, so no "
                    f"experiment would read it; put it in presets.{preset_name}.<experiment> or in the parts "
                    f"that need it (parts.<experiment>.<part>)")


def _params(params_yaml: Path | None = None) -> dict:
    if params_yaml is None or not params_yaml.exists():
        params_yaml = DVC_YAML.with_name("params.yaml")
    return yamlfile.load(params_yaml)


def report_experiment(stage: dict) -> str | None:
    """The experiment whose report a stage renders (a notebook on the contract), else None."""
    return notebook_name(stage) if is_report_stage(stage["cmd"]) else None


def report_metrics(name: str) -> list[dict]:
    """A report stage's DVC metrics: its headline figures (storebench.report.metrics), committed."""
    return [{f"reports/metrics/{name}.json": {"cache": False}}]


def report_plots(name: str) -> list[dict]:
    """A report stage's DVC plot: its claims' ratios and shares as horizontal bars, one colour per revision."""
    return [{f"reports/metrics/{name}_plot.csv": {"cache": False, "x": "value", "y": "claim",
                                                   "template": "bar_horizontal",
                                                   "title": f"{name}: the claims' figures (ratio or share)"}}]


def _declared(stage: dict) -> set[str]:
    """A stage's metrics and plots as comparable strings ("metrics <path> {flags}")."""
    return {f"{kind} {json.dumps(entry, sort_keys=True)}" for kind in ("metrics", "plots")
            for entry in stage.get(kind, [])}


def expected_declared(stage: dict) -> set[str]:
    name = report_experiment(stage)
    return _declared({"metrics": report_metrics(name), "plots": report_plots(name)})


def check(dvc_yaml: Path = DVC_YAML) -> dict[str, dict[str, list[str]]]:
    """Per stage, the library files (and params, and a report's metrics and plots) it should list but does
    not ('missing') and those it lists but does not read ('extra'); empty when dvc.yaml matches the imports,
    params.yaml and storebench.report.metrics."""
    problems = {}
    for name, stage in _stages(yamlfile.load(dvc_yaml)).items():
        listed = {_dep_name(d) for d in stage.get("deps", []) if is_library_dep(_dep_name(d))}
        want = set(expected_deps(stage))
        params = expected_params(stage, dvc_yaml.with_name("params.yaml"))
        if params is not None:
            listed |= {f"param {p}" for p in stage.get("params", [])}
            want |= {f"param {p}" for p in params}
        if report_experiment(stage):
            listed |= _declared(stage)
            want |= expected_declared(stage)
        if name == "index":
            listed = {d for d in map(_dep_name, stage.get("deps", [])) if not _is_quick_check_report(d)}
            listed |= {f"param {p}" for p in stage.get("params", [])}
            want |= set(index_reference_deps()) | {f"param {p}" for p in index_reference_params()}
        missing, extra = sorted(want - listed), sorted(listed - want)
        if missing or extra:
            problems[name] = {"missing": missing, "extra": extra}
    if dvc_yaml == DVC_YAML and (not REFERENCE_YAML.exists() or REFERENCE_YAML.read_text() != reference_yaml(dvc_yaml)):
        problems["reference/dvc.yaml"] = {"missing": ["stages as params.yaml and the imports make them"], "extra": []}
    return problems


def index_reference_deps() -> list[str]:
    """The index reads the reference reports that exist (an experiment not yet measured at the reference
    preset is not upstream of it, so `dvc repro` never starts a reference measurement), and says whether
    each is current: from reference/dvc.lock and the measured stages' git-tracked inputs."""
    from storebench.pipeline.reference import index_inputs

    reports = [f"{REFERENCE_REPORTS}/{name}.{kind}" for name in renderable_references() for kind in ("findings.json", "html")]
    partial = [f"{REFERENCE_PARTIAL}/{name}.html" for name in partial_references()]  # the index links them
    return reports + partial + index_inputs()[0]


def index_reference_params() -> list[str]:
    from storebench.pipeline.reference import index_inputs

    return index_inputs()[1]


def _is_quick_check_report(dep: str) -> bool:
    """The index's own inputs besides the reference run's: the quick check's reports (reports/<name>.*)."""
    return dep.startswith("reports/") and not dep.startswith(REFERENCE_REPORTS)


def write(dvc_yaml: Path = DVC_YAML) -> list[str]:
    """Rewrite each stage's library deps from its imports, keeping every other dep, comment and
    key order (ruamel round trip); returns the stages that changed."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedSeq

    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)  # dvc.yaml's own style
    doc = yaml.load(dvc_yaml.read_text())
    changed = add_contract_stages(doc)
    for name, stage in _stages(doc).items():
        if name == "index":  # its deps and params are set whole, in their own order
            if _index_deps(stage):
                changed.append(name)
            continue
        old = list(stage.get("deps", []))
        keep = [d for d in old if not is_library_dep(_dep_name(d))]
        new = CommentedSeq(keep + expected_deps(stage))
        params = expected_params(stage, dvc_yaml.with_name("params.yaml"))
        if [_dep_name(d) for d in old] != [_dep_name(d) for d in new]:
            stage["deps"] = new
            changed.append(name)
        if params is not None and list(stage.get("params", [])) != params:
            stage["params"] = CommentedSeq(params)
            changed.append(name)
        experiment = report_experiment(stage)
        if experiment and _declared(stage) != expected_declared(stage):
            stage["metrics"], stage["plots"] = report_metrics(experiment), report_plots(experiment)
            changed.append(name)
    with dvc_yaml.open("w") as out:
        yaml.dump(doc, out)
    if dvc_yaml == DVC_YAML:
        text = reference_yaml(dvc_yaml)
        if not REFERENCE_YAML.exists() or REFERENCE_YAML.read_text() != text:
            REFERENCE_YAML.parent.mkdir(exist_ok=True)
            REFERENCE_YAML.write_text(text)
            changed.append("reference/dvc.yaml")
    return list(dict.fromkeys(changed))


def _index_deps(stage) -> bool:
    """Set the index's deps (the quick check's reports, the reference run's inputs, its own imports) and
    params (the measured reference stages'); True when they changed."""
    from ruamel.yaml.comments import CommentedSeq

    old = ([_dep_name(d) for d in stage["deps"]], list(stage.get("params", [])))
    reference = index_reference_deps()
    stage["deps"] = CommentedSeq([d for d in stage["deps"] if _is_quick_check_report(_dep_name(d))] + reference
                                 + [d for d in expected_deps(stage) if d not in reference])
    params = index_reference_params()
    if params:
        stage["params"] = CommentedSeq(params)
    else:
        stage.pop("params", None)
    return ([_dep_name(d) for d in stage["deps"]], list(stage.get("params", []))) != old


def add_contract_stages(doc) -> list[str]:
    """Add the measurement and report stages of a registered experiment that has none yet (before the
    index); returns the stages made. Its data (``prepared/...``) and, if it records raw events,
    ``results/raw/<name>`` are the author's to add."""
    from ruamel.yaml.comments import CommentedMap

    from storebench.experiments import EXPERIMENTS

    made = []
    for name in EXPERIMENTS:
        if f"measure_{name}" in doc["stages"]:
            continue
        measure = CommentedMap(cmd=f"python -m {MEASURING_RUNNER} measure {name} --scale ${{scale}}", deps=[],
                               outs=[{f"results/{name}": {"cache": False}}])
        report = CommentedMap(cmd=f"python -m {PACKAGE}.pipeline.notebooks {name}",
                              deps=[f"notebooks/{name}.ipynb", f"results/{name}"],
                              outs=[{f"reports/{name}.html": {"cache": False}},
                                    {f"reports/{name}.findings.json": {"cache": False}},
                                    {f"reports/figures/{name}": {"cache": False}},
                                    {f"reports/tables/{name}": {"cache": False}}],
                              metrics=report_metrics(name), plots=report_plots(name))
        stages = list(doc["stages"].items())
        at = [k for k, _ in stages].index("index") if "index" in doc["stages"] else len(stages)
        stages[at:at] = [(f"measure_{name}", measure), (f"report_{name}", report)]
        doc["stages"] = CommentedMap(stages)
        made += [f"measure_{name}", f"report_{name}"]
    return made


REFERENCE_YAML = ROOT / "reference" / "dvc.yaml"
REFERENCE_RESULTS, REFERENCE_REPORTS = "results/reference", "reports/reference"
REFERENCE_PARTIAL = f"{REFERENCE_REPORTS}/partial"  # reports of experiments measured in part, marked partial
REFERENCE_LEFT_OUT = "reference/left_out.yaml"  # what reference parts leave out of a grid: report stages only
REFERENCE_HEADER = """\
# The reference results: every experiment at the papers' sizes (the `reference` preset of params.yaml,
# which extends `paper`), measured stage by stage on this machine and committed; reports/index.html presents
# them as the suite's results. Generated from params.yaml and the imports by `make deps`: do not edit.
#
# The measurement stages are frozen: `dvc repro` never re-measures them (each takes up to ~40 min), not
# even when the code they ran has changed since (the index says so per experiment). Measure one on purpose:
#   python -m storebench.pipeline.reference measure <experiment> [--part <part>]
# The report stages are not frozen: an analysis, figure or notebook change re-renders them (seconds). While
# an experiment has some parts measured and others not, a partial_ stage renders its report from the parts
# measured so far into reports/reference/partial/, marked partial (the index counts none of its verdicts).
# Raw per-request events stay beside the tables in results/reference/raw/ (git-ignored, not in DVC: a
# frozen stage's cached output missing from a fresh clone would stop `dvc repro`). A report's executed
# notebook (reports/reference/notebooks/) is a by-product the same way: every output of a report stage is in
# git, so a new clone's `dvc repro` finds the rendered reports current and rewrites none of this lock.
"""


def reference_part_names(params: dict, name: str) -> list[str | None]:
    return list((params.get("parts") or {}).get(name) or {}) or [None]


def reference_measure_stage(name: str, part: str | None) -> str:
    return f"measure_{name}" + (f"-{part}" if part else "")


def reference_results(name: str, part: str | None = None) -> str:
    return f"{REFERENCE_RESULTS}/{name}" + (f"/{part}" if part else "")


def reference_stages(main_doc: dict, params: dict, measured: frozenset[str] = frozenset()) -> dict:
    """The stages of reference/dvc.yaml: per experiment its measurement (one stage per part) and its report,
    both run from the repository's root (``wdir: ..``); and, while only some of its parts are ``measured``
    (stage names), its partial report."""
    from storebench.experiments import EXPERIMENTS

    stages = {}
    for name in EXPERIMENTS:
        main_measure = _stages(main_doc).get(f"measure_{name}", {})
        data = [_reference_path(_dep_name(d)) for d in main_measure.get("deps", [])
                if not is_library_dep(_dep_name(d))]
        parts = reference_part_names(params, name)
        for part in parts:
            cmd = (f"python -m {MEASURING_RUNNER} measure {name} --scale reference"
                   + (f" --part {part}" if part else "") + f" --results {REFERENCE_RESULTS}")
            stage = {"cmd": cmd, "wdir": "..", "frozen": True}
            stage["deps"] = data + library_deps(cmd)
            stage["params"] = expected_params(stage)
            stage["outs"] = [{reference_results(name, part): {"cache": False}}]
            stages[reference_measure_stage(name, part)] = stage
        cmd = f"python -m {PACKAGE}.pipeline.notebooks {name} --results {REFERENCE_RESULTS} --out-dir {REFERENCE_REPORTS}"
        out = REFERENCE_REPORTS
        stages[f"report_{name}"] = {
            "cmd": cmd, "wdir": "..",
            "deps": [f"notebooks/{name}.ipynb", *(reference_results(name, p) for p in parts), REFERENCE_LEFT_OUT,
                     *library_deps(cmd)],
            "outs": [{f"{out}/{f}": {"cache": False}} for f in
                     (f"{name}.html", f"{name}.findings.json", f"figures/{name}", f"tables/{name}")],
            "metrics": [{f"{out}/metrics/{name}.json": {"cache": False}}]}
        held = held_parts(name, parts, measured)
        if held and len(held) < len(parts):
            stages[f"partial_{name}"] = partial_report_stage(name, held)
    return stages


def held_parts(name: str, parts: list[str | None], measured: frozenset[str]) -> list[str]:
    """The parts of a split measurement that have been measured (none for a measurement in one piece)."""
    return [p for p in parts if p is not None and reference_measure_stage(name, p) in measured]


def partial_report_stage(name: str, held: list[str]) -> dict:
    """The report notebook on the parts measured so far, rendered under reports/reference/partial/; the report
    names the parts it misses (storebench.report.notebook.partial_banner)."""
    cmd = f"python -m {PACKAGE}.pipeline.notebooks {name} --results {REFERENCE_RESULTS} --out-dir {REFERENCE_PARTIAL}"
    outs = (f"{name}.html", f"{name}.findings.json", f"figures/{name}", f"tables/{name}", f"metrics/{name}.json",
            f"metrics/{name}_plot.csv")
    return {"cmd": cmd, "wdir": "..",
            "deps": [f"notebooks/{name}.ipynb", *(reference_results(name, p) for p in held), REFERENCE_LEFT_OUT,
                     *library_deps(cmd)],
            "outs": [{f"{REFERENCE_PARTIAL}/{f}": {"cache": False}} for f in outs]}


def measured_reference_stages(params: dict) -> frozenset[str]:
    """The reference measurement stages params.yaml defines that have been measured (recorded in
    reference/dvc.lock, with their manifest)."""
    from storebench.experiments import EXPERIMENTS
    from storebench.pipeline.reference import recorded

    defined = {reference_measure_stage(name, part): (name, part)
               for name in EXPERIMENTS for part in reference_part_names(params, name)}
    return frozenset(recorded(defined))


def partial_references(params: dict | None = None) -> list[str]:
    """The experiments measured in part (some parts measured, others not): each has a partial report."""
    from storebench.experiments import EXPERIMENTS

    params = _params() if params is None else params
    measured = measured_reference_stages(params)
    found = []
    for name in EXPERIMENTS:
        parts = reference_part_names(params, name)
        if 0 < len(held_parts(name, parts, measured)) < len(parts):
            found.append(name)
    return found


def _reference_path(dep: str) -> str:
    """A measurement's input from another measurement (scalability reads the dataloaders' best loaders) comes
    from the reference results too: that measurement's whole folder, which holds its parts where it has any."""
    if not dep.startswith("results/"):
        return dep
    return f"{REFERENCE_RESULTS}/{dep.split('/')[1]}"


def reference_yaml(main_yaml: Path = DVC_YAML) -> str:
    import yaml

    params = _params()
    doc = {"stages": reference_stages(yamlfile.load(main_yaml), params, measured_reference_stages(params))}
    return REFERENCE_HEADER + yaml.safe_dump(doc, sort_keys=False, width=4096)


def renderable_references(root: Path = ROOT) -> list[str]:
    """The experiments whose reference report has been rendered and could be rendered again: every part
    measured. A report whose parts were redefined since (some not measured yet) is not upstream of the index,
    or `dvc repro` would try to render it from part folders that do not exist; the index still presents it,
    marked incomplete."""
    from storebench.experiments import EXPERIMENTS
    from storebench.pipeline.reference import is_measured, measure_stages

    return [name for name in EXPERIMENTS if (root / REFERENCE_REPORTS / f"{name}.findings.json").exists()
            and all(is_measured(stage) for stage in measure_stages(name))]


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m storebench.pipeline.deps", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["check", "write", "show"])
    parser.add_argument("--dvc-yaml", default=str(DVC_YAML))
    args = parser.parse_args(argv)
    path = Path(args.dvc_yaml)
    if args.action == "write":
        print("updated deps of: " + (", ".join(write(path)) or "nothing (already derived from the imports)"))
        return 0
    if args.action == "show":
        for name, stage in _stages(yamlfile.load(path)).items():
            print(f"{name}: {' '.join(expected_deps(stage))}")
        return 0
    problems = check(path)
    for name, what in problems.items():
        for kind, files in what.items():
            if files:
                print(f"{name}: {kind} {', '.join(files)}")
    if problems:
        print("run `python -m storebench.pipeline.deps write` to derive the deps from the imports", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
