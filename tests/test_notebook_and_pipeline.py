"""What a user runs: the notebook through papermill, and the pipeline through `dvc repro`."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from storebench.pipeline import notebooks, run as pipeline
from storebench.paths import ROOT
from storebench.core.results import ROW_COLUMNS

# Tier markers are per test: `slow` on each test that needs it, none on the pure ones.


def check_access_pattern_results(csv: Path, scale: str, systems: set[str] | None = None):
    rows = pd.read_csv(csv)
    assert set(ROW_COLUMNS) <= set(rows.columns)
    assert rows.verified.all() and (rows.seconds > 0).all() and (rows.scale == scale).all()
    config = yaml.safe_load((ROOT / "params.yaml").read_text())
    systems = systems or set(config["presets"][scale].get("access_pattern", {}).get("systems", config["access_pattern"]["systems"]))
    assert set(rows.system) == systems
    random_k = set(rows[rows.access == "random"].samples_per_request)
    assert random_k == set(config["presets"][scale]["access_pattern"]["samples_per_request"])
    assert (rows.n_samples == config["presets"][scale]["n_samples"]).all()
    cold = rows[rows.location == "disk-cold"]
    assert len(cold) and (cold.resident_fraction < 0.5).all()


DL_STORAGE = ["access_pattern", "location", "format", "granularity", "breakdown", "training"]
SEED001 = ["dataloaders", "scalability", "resources", "embeddings"]


def check_recorded(results: Path, out: Path, name: str, scale: str = "smoke") -> tuple[pd.DataFrame, dict]:
    """What an experiment leaves behind: verified rows of this scale and a manifest in results/, raw
    events, and a report rendered from them with its findings file (claims included), figures and no code."""
    from storebench.experiments import EXPERIMENTS

    rows = pd.read_csv(results / name / f"{name}.csv")
    assert len(rows) and set(ROW_COLUMNS) <= set(rows.columns)
    assert rows.verified.all() and (rows.seconds > 0).all() and (rows.scale == scale).all()
    assert rows.system_version.notna().all()
    manifest = json.loads((results / name / "manifest.json").read_text())
    assert manifest["scale"] == scale and manifest["machine"]["cores"] and manifest["run_id"].startswith(name)
    assert list((results / "raw" / name).glob("*.parquet"))
    recorded = json.loads((out / f"{name}.findings.json").read_text())
    assert recorded["paper"] == EXPERIMENTS[name] and recorded["claims"]
    assert recorded["run"]["run_id"] == manifest["run_id"] and recorded["run"]["scale"] == scale
    assert all(c["verdict"] in ("holds", "does not hold", "inconclusive", "not comparable") for c in recorded["claims"])
    assert max(p.stat().st_size for p in (out / "figures" / name).glob("*.png")) > 10_000
    page = (out / f"{name}.html").read_text()
    assert "Findings" in page and "Traceback" not in page and "Answer" in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page  # the figure itself
    assert "<title>Notebook</title>" not in page and re.search(r"<title>[^<]+</title>", page)
    assert "analysis.analyse(" not in page and "report.publish(" not in page  # code hidden
    return rows, recorded


def check_contract_report(tmp_path: Path, name: str, scale: str = "smoke", **overrides) -> tuple[pd.DataFrame, dict]:
    """Measure ``name`` at ``scale`` into tmp_path/results, render its report from the recorded tables, check both."""
    results = tmp_path / "results"
    pipeline.measure(name, scale, results_root=results, overrides=overrides or None, progress=False)
    notebooks.run(name, out_dir=tmp_path, results_dir=results, progress=False)
    return check_recorded(results, tmp_path, name, scale)


AP_SMOKE_SYSTEMS = ["localfs", "rocksdb", "redis", "cassandra", "minio", "minio-obstore"]  # the clients' pairs too


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_access_pattern_notebook_at_smoke_scale(prepared_mnist, tmp_path):
    check_contract_report(tmp_path, "access_pattern", systems=AP_SMOKE_SYSTEMS)
    results = tmp_path / "results" / "access_pattern"
    check_access_pattern_results(results / "access_pattern.csv", "smoke", set(AP_SMOKE_SYSTEMS))
    assert "Seed 003 Table 5" in (tmp_path / "access_pattern.html").read_text()
    redis = pd.read_csv(results / "clients_redis.csv")
    assert len(redis) >= 2 and (redis.objects_per_s > 0).all()  # pure-Python and hiredis parsers
    assert len(pd.read_csv(results / "harness.csv")) == 2


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_location_notebook_at_smoke_scale(prepared_mnist, tmp_path):
    rows, recorded = check_contract_report(tmp_path, "location")
    systems = set(yaml.safe_load((ROOT / "params.yaml").read_text())["location"]["systems"])
    assert set(rows.system) == systems
    assert set(rows[rows.system == "redis"].location) == {"memory"}  # memory only, as in the paper
    assert {"memory", "disk-warm", "disk-cold"} <= set(rows.location)
    cold = rows[rows.location == "disk-cold"]
    assert (cold.resident_fraction < 0.5).all()
    assert len(recorded["claims"]) == 7


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_format_notebook_at_smoke_scale(prepared_mnist, tmp_path):
    rows, recorded = check_contract_report(tmp_path, "format")
    assert set(rows.format) >= {"raw", "pickle", "blob"}
    usage = pd.read_csv(tmp_path / "results" / "format" / "format_usage.csv")
    assert (usage.usage_bytes > 0).all() and usage.usage_how.notna().all()
    assert set(usage.system) == set(rows.system)
    assert {c["verdict"] for c in recorded["claims"]} <= {"holds", "does not hold", "inconclusive", "not comparable"}


def test_format_analysis_is_pure_and_judges_the_paper(tmp_path):
    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.format import analysis

    rows = pd.DataFrame([{"experiment": "format", "system": "cassandra", "dataset": "mnist", "format": fmt,
                          "samples_per_object": 1, "samples_per_request": 1, "access": "sequential",
                          "location": "disk-warm", "network": "local", "seconds": seconds + 0.01 * r,
                          "decode_seconds": 0.01, "system_version": "x"}
                         for fmt, seconds in (("raw", 2.0), ("pickle", 1.0), ("blob", 1.0)) for r in range(3)])
    usage = pd.DataFrame([{"system": "cassandra", "dataset": "mnist", "format": fmt, "n_samples": 100,
                           "usage_bytes": size, "usage_how": "x"} for fmt, size in (("raw", 100), ("pickle", 11), ("blob", 11))])
    found = analysis.analyse(ResultTables({"format": rows, "format_usage": usage}, {}))
    space, _, download, decode = found.claims
    assert space.value == pytest.approx(0.11) and space.verdict == "inconclusive"  # measured once: no CI
    assert download.value == pytest.approx(2.0, rel=0.02) and download.verdict == "holds"
    assert decode.verdict == "not comparable"


def test_access_pattern_reads_its_parts_as_one(tmp_path):
    """The reference run measures access_pattern in parts: parts without Redis say so in clients_redis, one part
    has the harness check. Read together, the analysis finds the one Redis table and judges as on the whole."""
    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.access_pattern import analysis

    whole = ROOT / "results" / "access_pattern"
    rows = pd.read_csv(whole / "access_pattern.csv")
    manifest = json.loads((whole / "manifest.json").read_text())
    for part, systems in (("redis", {"redis"}), ("others", set(rows.system) - {"redis"})):
        folder = tmp_path / part
        folder.mkdir()
        rows[rows.system.isin(systems)].to_csv(folder / "access_pattern.csv", index=False)
        for name in ("systems", "skipped", "notes") + (("clients_redis", "harness") if part == "redis" else ()):
            shutil.copy(whole / f"{name}.csv", folder / f"{name}.csv")
        if part != "redis":
            pd.DataFrame({"not_measured": ["redis (random access) is not among what this run measures"]}).to_csv(
                folder / "clients_redis.csv", index=False)
            pd.DataFrame().to_csv(folder / "harness.csv", index=False)
        (folder / "manifest.json").write_text(json.dumps({**manifest, "run_id": f"access_pattern-{part}"}))
    together, alone = ResultTables.read(tmp_path), ResultTables.read(whole)
    redis = analysis.redis_clients(together)
    assert redis is not None and list(redis.objects_per_s) == list(pd.read_csv(whole / "clients_redis.csv").objects_per_s)
    assert len(together["harness"]) == len(alone["harness"])
    assert [(c.metric, c.verdict, c.value) for c in analysis.analyse(together).claims] == \
        [(c.metric, c.verdict, c.value) for c in analysis.analyse(alone).claims]


def test_a_split_breakdown_sets_each_hop_against_its_own_parts_baseline(tmp_path):
    """The reference run splits a server's placements over parts, each measuring the same-namespace baseline
    and the local reads again. Read together, a hop's network time is its part's hop - same namespace: a
    part measured in a session where everything ran twice as slowly does not turn into network time."""
    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.breakdown import analysis

    whole = ROOT / "results" / "breakdown"
    rows = pd.read_csv(whole / "breakdown.csv")
    manifest = json.loads((whole / "manifest.json").read_text())
    baselines = rows.network.isin(["local", "same namespace"])
    for part, hops, slowdown in (("fast", ["veth"], 1.0), ("slow", ["lan-1g"], 2.0)):
        folder = tmp_path / part
        folder.mkdir()
        mine = rows[baselines | rows.network.isin(hops)].assign(seconds=lambda r: r.seconds * slowdown)
        mine.to_csv(folder / "breakdown.csv", index=False)
        for name in ("skipped", "notes"):
            shutil.copy(whole / f"{name}.csv", folder / f"{name}.csv")
        (folder / "manifest.json").write_text(json.dumps({**manifest, "run_id": f"breakdown-{part}"}))
    alone = analysis.hop_breakdown(rows).set_index(["system", "network"])
    together = analysis.hop_breakdown(ResultTables.read(tmp_path)["breakdown"]).set_index(["system", "network"])
    assert set(together.index) == {key for key in alone.index if key[1] in ("veth", "lan-1g")}
    for key, row in together.iterrows():
        slowdown = 2.0 if key[1] == "lan-1g" else 1.0
        assert row.network_s == pytest.approx(alone.loc[key].network_s * slowdown)
        assert row.network_share == pytest.approx(alone.loc[key].network_share)


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_granularity_notebook_at_smoke_scale(prepared_mnist, tmp_path):
    rows, recorded = check_contract_report(tmp_path, "granularity")
    coarse = rows[(rows.samples_per_object > 1) & (rows.access == "random")]
    assert (coarse.bytes >= coarse.needed_bytes).all() and (coarse.bytes > coarse.needed_bytes).any()
    whole = rows[(rows.access == "random-objects") & (rows.samples_per_request % rows.samples_per_object == 0)]
    assert (whole.bytes == whole.needed_bytes).all()
    # TileDB and TensorStore: k samples per cell / entry (bytes), and k samples per tile / chunk (arrays)
    assert {"tiledb", "tensorstore", "tiledb-array", "tensorstore-zarr"} <= set(rows.system)
    arrays = rows[rows.format == "array"]
    assert set(arrays.system) == {"tiledb-array", "tensorstore-zarr"}
    for spo, group in arrays.groupby("samples_per_object"):
        assert group.client_config.str.contains(f"; {spo} samples per (?:tile|chunk)").all()
    assert rows[rows.system == "tiledb"].client_config.str.contains("cells per tile").all()
    assert "Rows per cell on TileDB and TensorStore" in (tmp_path / "granularity.html").read_text()
    for claim in recorded["claims"]:
        assert claim["verdict"] != "does not hold" or (claim["cause"] and claim["settle"])


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_breakdown_at_smoke_scale(prepared_mnist, tmp_path):
    from storebench.pipeline import notebooks as report_notebooks, run

    recorded = run.measure("breakdown", "smoke", results_root=tmp_path / "results", progress=False)
    rows = recorded["breakdown"]
    assert len(rows) and set(ROW_COLUMNS) <= set(rows.columns)
    assert rows.verified.all() and (rows.seconds > 0).all() and (rows.scale == "smoke").all()
    assert rows.system_version.notna().all()
    assert list((tmp_path / "results" / "raw" / "breakdown").glob("*.parquet"))
    config = yaml.safe_load((ROOT / "params.yaml").read_text())
    servers = set(config["presets"]["smoke"]["breakdown"]["systems"])
    placed = rows[rows.network != "local"]
    assert set(placed.system) == servers and set(rows[rows.network == "local"].system) == {"localfs"}
    profiles = config["presets"]["smoke"]["breakdown"].get("net_profiles", config["breakdown"]["net_profiles"])
    assert set(placed.network) == {"same namespace", "veth", "veth, tbf 1gbit", *profiles}
    shaped = placed[placed.network.isin(profiles)]
    assert (shaped.net_rtt_ms > 0).all() and (shaped.net_throughput_mbit > 0).all()  # measured before use
    assert (placed.groupby(["system", "network"]).repeat.nunique() == config["presets"]["smoke"]["repeats"]).all()
    notes = recorded["notes"].note.str.cat(sep="\n")
    assert "rate 1Gbit" in notes
    assert not [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if ns.startswith("sb")], "the measurement left its network namespace behind"

    page = report_notebooks.run("breakdown", out_dir=tmp_path, results_dir=tmp_path / "results",
                                progress=False).read_text()
    assert "Findings" in page and "Traceback" not in page and "server processing" in page and "rate 1Gbit" in page
    assert re.search(r'<img [^>]*src="data:image/png', page) and "&lt;Figure size" not in page
    assert max(p.stat().st_size for p in (tmp_path / "figures" / "breakdown").glob("*.png")) > 10_000
    recorded_findings = json.loads((tmp_path / "breakdown.findings.json").read_text())
    assert "paper" in recorded_findings["headline"] and recorded_findings["paper"] == "dl_storage_benchmarking"
    claims = recorded_findings["claims"]
    assert len(claims) == 3 and all(c["metric"].startswith("cassandra") for c in claims)
    assert all(c["verdict"] != "not comparable" for c in claims)


def quick_check_stages(status_json: str) -> set[str]:
    """The stages `dvc status` names, but the reference run's (reference/dvc.yaml: measured on purpose, frozen)."""
    return {name for name in json.loads(status_json) if not name.startswith("reference/")}


def copy_checkout(copy: Path, with_data: bool = False) -> None:
    """What a clone of this tree holds (its tracked files and the untracked ones git does not ignore), and
    data/ when asked, in ``copy``: no executed notebook, raw event or DVC cache of this machine."""
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    data = [str(p.relative_to(ROOT)) for p in (ROOT / "data").rglob("*") if p.is_file()] if with_data else []
    for name in tracked + data:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)


def commit_copy(copy: Path, env: dict | None = None) -> None:
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"]):
        subprocess.run(cmd, cwd=copy, check=True, env=env)


@pytest.mark.slow
def test_a_new_clone_finds_every_rendered_reference_report_current(tmp_path):
    """A new machine's `make reproduce` re-renders no committed reference report (partial ones included), so it
    rewrites none of reference/dvc.lock: every output of a rendered report stage is in git, none only in a DVC
    cache."""
    copy = tmp_path / "repo"
    copy_checkout(copy)
    commit_copy(copy)
    rendered = sorted(page.stem for page in (copy / "reports" / "reference").glob("*.html"))
    partial = sorted(page.stem for page in (copy / "reports" / "reference" / "partial").glob("*.html"))
    assert "breakdown" in rendered  # one rendered report to check, at least
    dvc = [sys.executable, "-m", "dvc"]
    subprocess.run([*dvc, "cache", "dir", "--local", str(tmp_path / "empty-cache")], cwd=copy, check=True)
    stages = [f"reference/dvc.yaml:report_{name}" for name in rendered] + [
        f"reference/dvc.yaml:partial_{name}" for name in partial]
    status = subprocess.run([*dvc, "status", "--json", *stages], cwd=copy, capture_output=True, text=True, check=True)
    assert json.loads(status.stdout) == {}, status.stdout[-3000:]


# The stages `dvc repro` runs in the wiring test: two seed-003 experiments (one edited below), and seed 001's
# loaders with resources, which reads their best configurations. Every other stage pair has the same shape
# (tests/test_pipeline.py: test_every_experiments_stages_have_the_contracts_shape), and each notebook has
# its own smoke test, so re-measuring all 14 here (17 min) would test nothing more.
WIRED = {"format": "systems", "granularity": "systems", "dataloaders": "systems", "resources": "systems"}


@pytest.mark.slow
@pytest.mark.usefixtures("default_ports_free")
def test_dvc_repro_at_smoke_scale_in_a_copy(tmp_path):
    copy = tmp_path / "repo"
    copy_checkout(copy, with_data=True)
    params = yaml.safe_load((copy / "params.yaml").read_text())
    params["scale"] = "smoke"
    for name, key in WIRED.items():  # the notebook tests cover every system; here the DVC wiring is under test
        params["presets"]["smoke"].setdefault(name, {})[key] = ["localfs", "rocksdb"]
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "STOREBENCH_ROOT": str(copy), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("STOREBENCH_PREPARED", None)
    commit_copy(copy, env)
    reports = [f"report_{name}" for name in WIRED]

    def dvc(*args, check=False):
        return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=copy, env=env, capture_output=True,
                              text=True, check=check)

    repro = dvc("repro", *reports)
    assert repro.returncode == 0, repro.stdout[-3000:] + repro.stderr[-3000:]
    assert "measure_location" not in repro.stdout  # only what the targets need
    for name in ("format", "granularity"):
        check_recorded(copy / "results", copy / "reports", name)
    for name in ("dataloaders", "resources"):
        assert json.loads((copy / "results" / name / "manifest.json").read_text())["scale"] == "smoke"
        assert json.loads((copy / "reports" / f"{name}.findings.json").read_text())["claims"]
        assert "Traceback" not in (copy / "reports" / f"{name}.html").read_text()
    index = dvc("repro", "--single-item", "index")  # the others' committed findings stand in for theirs
    assert index.returncode == 0 and "Running stage 'index'" in index.stdout, index.stdout[-3000:] + index.stderr
    index = (copy / "reports" / "index.html").read_text()
    assert all(f'href="{name}.html"' in index for name in [*DL_STORAGE, *SEED001])
    assert "the paper saw" in index and "Britto" in index and "claims of the paper judged" in index
    assert "Peng Cheng" in index and "<td>localfs</td>" in index
    dry = dvc("repro", "--dry")  # every other stage's definition (params, deps, cmd) still resolves in DVC
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    from storebench.experiments import EXPERIMENTS
    assert [name for name in EXPERIMENTS if name not in WIRED and f"Running stage 'measure_{name}'" not in dry.stdout] == []
    assert not [name for name in WIRED if f"Running stage 'measure_{name}'" in dry.stdout]  # measured above
    again = dvc("repro", *reports)
    assert again.returncode == 0 and "didn't change, skipping" in again.stdout
    assert "Running stage" not in again.stdout
    for page in WIRED:  # progress bars reach the terminal, never the report
        assert not re.search(r"\d+%\|[^|]*\| *\d+/\d+ \[", (copy / "reports" / f"{page}.html").read_text()), page
    experiments = copy / "lib" / "storebench" / "experiments" / "dl_storage_benchmarking"
    with open(experiments / "format" / "measure.py", "a") as module:
        module.write("\n# an edit to one experiment's measurement\n")
    status = dvc("status", "--json", "--with-deps", *reports, check=True)
    assert quick_check_stages(status.stdout) == {"measure_format"}, status.stdout  # and its report, downstream
    subprocess.run(["git", "checkout", "--", "lib"], cwd=copy, check=True)
    with open(experiments / "granularity" / "analysis.py", "a") as module:  # a figure or verdict change
        module.write("\n# an edit to the analysis\n")
    status = dvc("status", "--json", "--with-deps", *reports, check=True)
    assert quick_check_stages(status.stdout) == {"report_granularity"}, status.stdout  # measurements up to date
    rerender = dvc("repro", "report_granularity")
    assert rerender.returncode == 0 and "measure_granularity" not in rerender.stdout.replace(
        "'measure_granularity' didn't change", ""), rerender.stdout[-2000:]
