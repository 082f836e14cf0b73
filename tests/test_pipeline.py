"""Each DVC stage depends on the library files its imports reach, and on no others."""
import yaml

from storebench.pipeline import deps as pipeline
from storebench.paths import ROOT

EXPERIMENTS = ["access_pattern", "location", "format", "granularity", "breakdown", "training"]
SEED001 = {"dataloaders": "dataloaders", "scalability": "scalability", "embeddings": "embeddings",
           "resources": "resource_use"}  # notebook -> experiment module


def stage_deps(name: str) -> set[str]:
    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"][name]
    return {next(iter(d)) if isinstance(d, dict) else d for d in stage["deps"]}


def test_dvc_yaml_lists_exactly_what_each_stage_imports():
    assert pipeline.check() == {}, "run `python -m storebench.pipeline.deps write`"


def test_writing_the_committed_pipeline_again_changes_nothing_and_says_so(tmp_path):
    for name in ("dvc.yaml", "params.yaml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    assert pipeline.write(tmp_path / "dvc.yaml") == []
    assert (tmp_path / "dvc.yaml").read_text() == (ROOT / "dvc.yaml").read_text()


def test_a_missing_module_is_reported(tmp_path):
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())
    doc["stages"]["measure_format"]["deps"].remove("lib/storebench/core/timing.py")
    changed = tmp_path / "dvc.yaml"
    changed.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert pipeline.check(changed) == {"measure_format": {"missing": ["lib/storebench/core/timing.py"], "extra": []}}


def measuring_stage(name: str) -> str:
    return f"measure_{name}"


def experiment_files(name: str) -> set[str]:
    """The library files that are experiment ``name``'s own."""
    from storebench.experiments import package

    base = ROOT / "lib" / package(name).replace(".", "/")
    if base.is_dir():
        return {str(p.relative_to(ROOT)) for p in base.glob("*.py")}
    return set()


def test_an_experiment_depends_on_its_own_module_only():
    for name in EXPERIMENTS:
        deps = stage_deps(measuring_stage(name))
        assert experiment_files(name) & deps
        others = set().union(*(experiment_files(o) for o in EXPERIMENTS if o != name))
        assert not deps & others, f"{name} depends on {sorted(deps & others)}"


def test_report_stages_start_no_server_and_changing_a_figure_leaves_measurements_up_to_date():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    reports = [name for name in stages if name.startswith("report_")]
    assert reports, "no experiment on the contract"
    for name in reports:
        deps = stage_deps(name)
        reached = [d for d in deps if d.startswith(("lib/storebench/stores", "lib/storebench/services",
                                                    "lib/storebench/testbed")) or d.endswith("/measure.py")]
        assert not reached, f"{name} depends on {reached}"
        experiment = name.removeprefix("report_")
        analysis = next(d for d in deps if d.endswith(f"/{experiment}/analysis.py"))
        assert analysis not in stage_deps(f"measure_{experiment}"), "a figure change would re-measure"


def test_one_familys_preset_is_not_anothers_dependency():
    doc = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    reference = yaml.safe_load((ROOT / "reference" / "dvc.yaml").read_text())["stages"]
    for name in [*EXPERIMENTS, *SEED001]:
        params = set(doc[measuring_stage(name)]["params"])
        assert f"presets.small.{name}" in params and name in params and "scale" in params
        # the quick check does not depend on the reference preset, nor the reference run on the quick check's
        assert not [p for p in params if p.startswith(("presets.reference", "presets.paper", "parts"))]
        assert "presets" not in params and not {f"presets.small.{o}" for o in [*EXPERIMENTS, *SEED001] if o != name} & params
        for stage in [s for s in reference if s == f"measure_{name}" or s.startswith(f"measure_{name}-")]:
            ref = set(reference[stage]["params"])
            assert {f"presets.paper.{name}", name} <= ref  # + presets.reference.<name> where the preset changes it
            assert not [p for p in ref if p.startswith(("presets.small", "presets.smoke"))] and "scale" not in ref
    deps = stage_deps(measuring_stage("training"))
    assert not [d for d in deps if d.endswith(("loaders/rows.py", "samples.py", "stores/tables.py"))]


def test_seed001_stages_chain_through_the_best_loader_configurations():
    for name in SEED001:
        deps = stage_deps(measuring_stage(name))
        assert experiment_files(name) & deps
        assert not set().union(*(experiment_files(e) for e in EXPERIMENTS)) & deps
    for name in ("scalability", "resources"):
        assert "results/dataloaders/dataloaders_best.csv" in stage_deps(measuring_stage(name))


def test_a_reference_stage_is_refused_until_what_it_reads_is_measured(monkeypatch):
    from storebench.pipeline import reference

    unmeasured = {"measure_dataloaders-image"}
    monkeypatch.setattr(reference, "is_measured", lambda stage: stage not in unmeasured)
    assert reference.unmeasured_upstream("measure_resources") == ["measure_dataloaders-image"]
    assert reference.unmeasured_upstream("measure_scalability-text") == ["measure_dataloaders-image"]
    assert reference.unmeasured_upstream("measure_dataloaders-image") == []  # its own outs are not upstream
    assert reference.unmeasured_upstream("measure_layouts-t3-others") == []

    def went_on(*args):
        raise AssertionError("went on to measure resources before the dataloaders it reads")

    monkeypatch.setattr(reference, "_git", went_on)  # the first step past the check
    try:
        reference.measure("resources")
    except SystemExit as refused:
        assert "measure_dataloaders-image" in str(refused) and "measure them first" in str(refused)
    else:
        raise AssertionError("measured resources before the dataloaders it reads")


def test_the_index_is_built_from_recorded_findings_not_experiment_code():
    """It imports no experiment; it lists the code the measured reference stages ran only to say whether
    each reference result is still current."""
    own = set(pipeline.expected_deps(yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["index"]))
    assert not [d for d in own if d.startswith("lib/storebench/experiments/") and d != "lib/storebench/experiments/__init__.py"]
    deps = stage_deps("index")
    assert {d for d in deps - own if not pipeline._is_quick_check_report(d)} == set(pipeline.index_reference_deps()) - own
    assert {f"reports/{name}.findings.json" for name in [*EXPERIMENTS, *SEED001]} <= deps


def test_imports_inside_functions_and_registry_paths_are_followed():
    found = pipeline.imported_modules(
        "def f():\n    from .base import Store\nSTORES = {'x': 'storebench.stores.redis:RedisStore'}\n",
        "storebench.stores.readers")
    assert {"storebench.stores.base", "storebench.stores.redis"} <= found


def reference_deps(experiment: str, part: str) -> set[str]:
    return set(pipeline.library_deps(f"python -m storebench.pipeline.run measure {experiment} --scale reference "
                                     f"--part {part} --results results/reference"))


def test_a_part_depends_on_the_stores_it_opens_and_not_on_the_others():
    cassandra = reference_deps("location", "cassandra-mnist-warm")
    tiledb = reference_deps("location", "tiledb-mnist-memory")
    assert "lib/storebench/stores/cassandra.py" in cassandra and "lib/storebench/stores/tiledb.py" not in cassandra
    assert "lib/storebench/stores/tiledb.py" in tiledb and "lib/storebench/stores/cassandra.py" not in tiledb
    assert {"lib/storebench/stores/__init__.py", "lib/storebench/stores/base.py"} <= cassandra & tiledb


def test_the_ring_and_ranks_depend_on_cassandra_and_on_no_registry_store():
    scale = set(pipeline.library_deps("python -m storebench.pipeline.run measure cassandra_scale --scale reference "
                                      "--results results/reference"))
    assert "lib/storebench/stores/cassandra_model.py" in scale
    assert not {"lib/storebench/stores/tiledb.py", "lib/storebench/stores/s3.py", "lib/storebench/stores/redis.py"} & scale


def test_an_experiment_that_may_open_any_store_depends_on_every_store():
    from storebench.stores import STORES

    every = {f"lib/{t.partition(':')[0].replace('.', '/')}.py" for t in STORES.values()}
    assert "calibration" not in pipeline.STORES_OPENED
    assert every <= set(pipeline.library_deps("python -m storebench.pipeline.run measure calibration --scale reference"))


def test_a_store_module_imported_directly_stays_a_dependency_though_unopened():
    files = pipeline.closure({"storebench.stores.tables"}, unopened_stores=frozenset({"storebench.stores.tiledb"}))
    assert ROOT / "lib/storebench/stores/tiledb.py" in files


def test_the_fixed_stores_named_beside_the_settings_are_those_the_code_opens():
    import inspect

    from storebench.experiments.dl_storage_benchmarking.access_pattern import measure as access_pattern
    from storebench.experiments.dl_storage_benchmarking.breakdown import measure as breakdown

    harness = inspect.signature(access_pattern.harness_check).parameters["systems"].default
    assert access_pattern.Settings.model_fields["harness_check"].default is True  # the table's default for it
    opened = pipeline.STORES_OPENED["access_pattern"]
    assert set(harness) <= set(opened({"systems": ["redis"]})) and set(opened({"systems": ["redis"], "harness_check": False})) == {"redis"}
    assert breakdown.LOCAL_READ_SYSTEM in pipeline.STORES_OPENED["breakdown"]({"systems": ["redis"]})


def test_a_registered_experiment_without_stages_gets_its_measurement_and_report_stages():
    from ruamel.yaml import YAML

    doc = YAML().load((ROOT / "dvc.yaml").read_text())
    del doc["stages"]["measure_granularity"], doc["stages"]["report_granularity"]
    assert pipeline.add_contract_stages(doc) == ["measure_granularity", "report_granularity"]
    names = list(doc["stages"])
    assert names.index("report_granularity") == names.index("index") - 1
    measure, report = doc["stages"]["measure_granularity"], doc["stages"]["report_granularity"]
    assert measure["cmd"] == "python -m storebench.pipeline.run measure granularity --scale ${scale}"
    assert report["cmd"] == "python -m storebench.pipeline.notebooks granularity"
    assert "results/granularity" in report["deps"] and pipeline.add_contract_stages(doc) == []


def test_a_rendered_report_has_no_log_lines_and_links_back_to_the_index(tmp_path):
    import io
    import re

    import nbformat

    from storebench.pipeline.notebooks import render_html

    node = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A question"),
                                           nbformat.v4.new_code_cell("print(1)", outputs=[
                                               nbformat.v4.new_output("stream", name="stderr", text="WARN lance: noisy\n"),
                                               nbformat.v4.new_output("stream", name="stdout", text="the answer\n")]),
                                           nbformat.v4.new_code_cell("x = 1", metadata={"tags": ["parameters"]})])
    notebook = tmp_path / "q.ipynb"
    nbformat.write(node, notebook)
    log = io.StringIO()
    page = render_html(notebook, tmp_path / "q.html", log)
    html = page.read_text()
    assert "the answer" in html and "WARN lance" not in html and "print(1)" not in html
    assert log.getvalue() == "WARN lance: noisy\n"
    assert "index.html" in html and "<title>A question</title>" in html
    assert "celltag_parameters" not in html and "x = 1" not in html  # the parameters cell: no output, not shown
    assert not re.search(r"jp-|CodeMirror|highlight|code_cell|input_area", html)  # a document, no notebook markup
    assert html.count("<pre>the answer") == 1


def test_a_measured_reference_stage_names_each_input_changed_since(tmp_path, monkeypatch):
    """A real git + DVC repository with one frozen measurement stage, recorded by `dvc commit` as
    reference.measure records one; then its code, a param and an untracked data file change."""
    import subprocess
    import sys

    from storebench.pipeline import reference

    def run(*cmd):
        subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "reference").mkdir()
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "data.bin").write_text("rows\n")  # not in git, like prepared/ and data/
    (tmp_path / "params.yaml").write_text("demo: {images: 10}\nother: 1\n")
    (tmp_path / "results" / "reference" / "demo").mkdir(parents=True)
    (tmp_path / "results" / "reference" / "demo" / "manifest.json").write_text(
        '{"started_utc": "2026-11-26T01:00:00+00:00", "duration_s": 60, "git_rev": "abcdef123456", '
        '"machine": {"cpu_model": "AMD EPYC", "cpu_id": "family 23 model 1 stepping 2"}}')
    (tmp_path / "reference" / "dvc.yaml").write_text(yaml.safe_dump({"stages": {"measure_demo": {
        "cmd": "python -m storebench.pipeline.run measure demo --scale reference", "wdir": "..", "frozen": True,
        "deps": ["code.py", "data.bin"], "params": ["demo"],
        "outs": [{"results/reference/demo": {"cache": False}}]}}}))
    (tmp_path / ".gitignore").write_text("data.bin\n")
    run("git", "init", "-q")
    run(sys.executable, "-m", "dvc", "init", "-q")
    run(sys.executable, "-m", "dvc", "commit", "-f", "reference/dvc.yaml:measure_demo")
    run("git", "add", "-A")
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "measured")
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    monkeypatch.setattr(reference, "REFERENCE_DIR", tmp_path / "reference")

    assert reference.state("measure_demo").changed_inputs == ()
    assert reference.index_inputs() == (["code.py", "reference/dvc.lock"], ["demo"])
    (tmp_path / "code.py").write_text("x = 2\n")
    (tmp_path / "data.bin").write_text("other rows\n")
    (tmp_path / "params.yaml").write_text("demo: {images: 20}\nother: 2\n")
    assert reference.state("measure_demo", tracked_only=True).changed_inputs == ("code.py", "param demo")
    assert set(reference.state("measure_demo").changed_inputs) == {"code.py", "data.bin", "param demo"}
    assert "3 input(s) changed since" in reference.state("measure_demo").summary
    assert "on AMD EPYC (family 23 model 1 stepping 2) at abcdef12" in reference.state("measure_demo").summary


def test_every_experiments_stages_have_the_contracts_shape():
    """Each quick-check stage pair is the contract's (the same cmd, outs, report deps, metrics and plots as
    `add_contract_stages` makes), so running a few of them through `dvc repro` tests the wiring of all."""
    import json

    from ruamel.yaml import YAML

    from storebench.experiments import EXPERIMENTS as REGISTERED

    def plain(entries):
        return {json.dumps(entry, sort_keys=True) for entry in entries or []}

    doc = YAML().load((ROOT / "dvc.yaml").read_text())
    written = {name: doc["stages"][name] for name in list(doc["stages"]) if name.startswith(("measure_", "report_"))}
    for name in written:
        del doc["stages"][name]
    made = pipeline.add_contract_stages(doc)
    assert sorted(made) == sorted(written) and len(made) == 2 * len(REGISTERED)
    for name in made:
        contract, actual = doc["stages"][name], written[name]
        assert actual["cmd"] == contract["cmd"], name
        assert plain(contract["outs"]) <= plain(actual["outs"]), name
        assert plain(contract["deps"]) <= plain(actual["deps"]), name
        for key in ("metrics", "plots"):
            assert plain(contract.get(key)) == plain(actual.get(key)), (name, key)
    index = stage_deps("index")
    assert {f"reports/{name}.{ext}" for name in REGISTERED for ext in ("html", "findings.json")} <= index


def test_a_reference_report_with_a_part_not_measured_is_not_upstream_of_the_index(tmp_path, monkeypatch):
    """A report rendered before its parts were redefined: `dvc repro` must not try to re-render it from part
    folders that do not exist yet, so the index does not depend on it (it still presents it, incomplete)."""
    from storebench.pipeline import reference

    reports = tmp_path / pipeline.REFERENCE_REPORTS
    reports.mkdir(parents=True)
    for name in ("dataloaders", "cassandra_scale"):
        (reports / f"{name}.findings.json").write_text("{}")
    parts = {"measure_dataloaders-old": ("dataloaders", "old"), "measure_dataloaders-new": ("dataloaders", "new"),
             "measure_cassandra_scale": ("cassandra_scale", None)}
    monkeypatch.setattr(reference, "measure_stages",
                        lambda experiment=None: {s: p for s, p in parts.items() if experiment in (None, p[0])})
    monkeypatch.setattr(reference, "is_measured", lambda stage: stage != "measure_dataloaders-new")
    assert pipeline.renderable_references(tmp_path) == ["cassandra_scale"]


def test_the_index_does_not_depend_on_what_another_reference_measurement_writes(monkeypatch):
    """resources reads the dataloaders results: as an index dep, that folder would put every dataloaders stage,
    measured or not, upstream of the index, and `dvc repro` fails on a frozen stage's missing outputs."""
    from storebench.pipeline import reference

    defined = {"measure_loaders-a": {"cmd": "python -m storebench.pipeline.run measure loaders --part a",
                                     "deps": ["lib/a.py"], "outs": [{"results/reference/loaders/a": {}}]},
               "measure_loaders-b": {"cmd": "python -m storebench.pipeline.run measure loaders --part b",
                                     "deps": ["lib/a.py"], "outs": [{"results/reference/loaders/b": {}}]},
               "measure_resources": {"cmd": "python -m storebench.pipeline.run measure resources",
                                     "deps": ["results/reference/loaders", "lib/r.py"], "params": ["resources"],
                                     "outs": [{"results/reference/resources": {}}]}}
    monkeypatch.setattr(reference, "stages", lambda: defined)
    monkeypatch.setattr(reference, "_lock", lambda: {"measure_loaders-a": {}, "measure_resources": {}})
    monkeypatch.setattr(reference, "_in_git_paths",
                        lambda: {"lib/a.py", "lib/r.py", "results/reference/loaders", "results/reference/loaders/a"})
    assert reference.index_inputs() == (["lib/a.py", "lib/r.py", "reference/dvc.lock"], ["resources"])


def test_the_reference_run_names_the_parts_measured_on_another_machine(tmp_path, monkeypatch):
    """Before a part is measured, the parts of its experiment that ran elsewhere are named: the claims that
    set them against each other will read "not comparable (crosses machines)"."""
    import json

    from storebench.core import provenance
    from storebench.pipeline import reference

    here = provenance.machine_card()
    elsewhere = {**here, "cpu_id": "family 6 model 85 stepping 7"}
    for part, machine in (("here", here), ("there", elsewhere), ("unlocked", elsewhere)):
        (tmp_path / part).mkdir()
        (tmp_path / part / "manifest.json").write_text(json.dumps({"machine": machine}))
    monkeypatch.setattr(reference, "measure_stages", lambda experiment=None: {
        f"measure_demo-{p}": ("demo", p) for p in ("here", "there", "unlocked", "unmeasured")})
    monkeypatch.setattr(reference, "_lock", lambda: {"measure_demo-here": {}, "measure_demo-there": {}})
    monkeypatch.setattr(reference, "_manifest", lambda experiment, part: tmp_path / part / "manifest.json")
    assert reference.parts_on_other_machines("demo") == ["there"]


def test_an_experiment_measured_in_part_has_a_partial_report_stage():
    """While some parts of a split experiment are measured, reference/dvc.yaml renders its report from those
    parts into reports/reference/partial/; measured in full, or not at all, it has none."""
    main, params = yaml.safe_load((ROOT / "dvc.yaml").read_text()), pipeline._params()
    parts = pipeline.reference_part_names(params, "granularity")
    first = pipeline.reference_measure_stage("granularity", parts[0])
    partial = pipeline.reference_stages(main, params, frozenset({first}))["partial_granularity"]
    assert [d for d in partial["deps"] if d.startswith("results/")] == [f"results/reference/granularity/{parts[0]}"]
    assert partial["cmd"].endswith("--out-dir reports/reference/partial")
    assert all(next(iter(out)).startswith("reports/reference/partial/") for out in partial["outs"])
    everything = frozenset(pipeline.reference_measure_stage("granularity", part) for part in parts)
    assert "partial_granularity" not in pipeline.reference_stages(main, params, everything)
    assert not [name for name in pipeline.reference_stages(main, params) if name.startswith("partial_")]


def test_the_quick_checks_raw_events_are_in_git_so_a_fresh_clone_can_recompute_every_statistic():
    """A DVC cache without a remote does not outlive the machine that measured: raw events cached there left
    every later clone with measurement stages 'not in cache', and nothing to recompute a statistic from."""
    import subprocess

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    raw_outs = [out for stage in stages.values() for out in stage.get("outs", [])
                if isinstance(out, dict) and next(iter(out)).startswith("results/raw/")]
    assert raw_outs and all(list(out.values())[0].get("cache") is False for out in raw_outs)
    for out in raw_outs:
        path = next(iter(out))
        ignored = subprocess.run(["git", "check-ignore", "-q", f"{path}/x.parquet"], cwd=ROOT).returncode == 0
        assert not ignored, f"{path} is git-ignored"
        assert subprocess.run(["git", "ls-files", "--error-unmatch", path], cwd=ROOT,
                              capture_output=True).returncode == 0, f"{path} is not committed"


def test_every_output_of_a_report_stage_is_in_git_so_a_new_machine_finds_the_reports_current():
    """An executed notebook kept only in DVC's cache (no remote) was missing on every new machine, which then
    listed all 14 quick-check report stages as changed and re-rendered them; the notebook is a by-product."""
    import subprocess

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    reports = {name: stage for name, stage in stages.items() if name.startswith("report_")}
    assert len(reports) >= 13
    for name, stage in reports.items():
        for out in stage["outs"]:
            assert isinstance(out, dict) and list(out.values())[0].get("cache") is False, f"{name}: {out}"
            assert subprocess.run(["git", "ls-files", "--error-unmatch", next(iter(out))], cwd=ROOT,
                                  capture_output=True).returncode == 0, f"{name}: {out} is not committed"
