"""What a user runs: the notebook through papermill, and the pipeline through `dvc repro`."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from storebench import notebooks
from storebench.paths import ROOT
from storebench.results import ROW_COLUMNS

pytestmark = pytest.mark.slow


def check_access_pattern_results(csv: Path, scale: str):
    rows = pd.read_csv(csv)
    assert set(ROW_COLUMNS) <= set(rows.columns)
    assert rows.verified.all() and (rows.seconds > 0).all() and (rows.scale == scale).all()
    config = yaml.safe_load((ROOT / "params.yaml").read_text())
    systems = set(config["access_pattern"]["systems"])
    assert set(rows.system) == systems
    random_k = set(rows[rows.access == "random"].samples_per_request)
    assert random_k == set(config["presets"][scale]["access_pattern"]["samples_per_request"])
    assert (rows.n_samples == config["presets"][scale]["n_samples"]).all()
    cold = rows[rows.location == "disk-cold"]
    assert len(cold) and (cold.resident_fraction < 0.5).all()


def test_access_pattern_notebook_at_smoke_scale(prepared_mnist, tmp_path):
    html = notebooks.run("access_pattern", "smoke", out_dir=tmp_path, progress=False)
    check_access_pattern_results(tmp_path / "access_pattern.csv", "smoke")
    page = html.read_text()
    assert "Findings" in page and "Seed 003 Table 5" in page and "Traceback" not in page
    assert (tmp_path / "access_pattern.png").stat().st_size > 10_000
    assert "the paper saw" in (tmp_path / "access_pattern.finding.txt").read_text()
    assert list((tmp_path / "raw" / "access_pattern").glob("*.parquet"))


def test_dvc_repro_at_smoke_scale_in_a_copy(tmp_path):
    copy = tmp_path / "repo"
    tracked = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    for name in tracked + [f"data/mnist/{f}" for f in os.listdir(ROOT / "data" / "mnist")]:
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    params = yaml.safe_load((copy / "params.yaml").read_text())
    params["scale"] = "smoke"
    (copy / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**os.environ, "STOREBENCH_ROOT": str(copy), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("STOREBENCH_PREPARED", None)
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"]):
        subprocess.run(cmd, cwd=copy, check=True, env=env)
    repro = subprocess.run([sys.executable, "-m", "dvc", "repro"], cwd=copy, env=env, capture_output=True, text=True)
    assert repro.returncode == 0, repro.stdout[-3000:] + repro.stderr[-3000:]
    check_access_pattern_results(copy / "reports" / "access_pattern.csv", "smoke")
    index = (copy / "reports" / "index.html").read_text()
    assert 'href="access_pattern.html"' in index and "the paper saw" in index
    again = subprocess.run([sys.executable, "-m", "dvc", "repro"], cwd=copy, env=env, capture_output=True, text=True)
    assert again.returncode == 0 and "didn't change, skipping" in again.stdout
    assert "Running stage" not in again.stdout
