import pytest
import yaml

from storebench.core.settings import ParamsError, load_params
from storebench.pipeline.run import settings
from storebench.paths import ROOT


def params(**section):
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    base["granularity"].update(section)
    return base


EXPERIMENT = "granularity"  # on the contract: typed settings


def experiment_config(name, scale, params_=None):
    import tempfile
    from pathlib import Path

    if params_ is None:
        return settings(name, scale)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "params.yaml"
        path.write_text(yaml.safe_dump(params_))
        return settings(name, scale, path)


def test_repository_params_resolve_at_every_scale():
    from storebench.experiments import EXPERIMENTS, package
    from storebench.pipeline.deps import module_file

    on_contract = [n for n in EXPERIMENTS if module_file(f"{package(n)}.measure") is not None]
    assert on_contract
    for name in on_contract:
        for scale in ("smoke", "small", "paper", "reference"):
            config = settings(name, scale)
            assert config.scale == scale and config.repeats >= 1
    assert settings(EXPERIMENT, "paper").n_samples == 60000


def test_preset_overrides_section():
    config = experiment_config(EXPERIMENT, "smoke", params())
    assert config.samples_per_request == load_params()["presets"]["smoke"]["granularity"]["samples_per_request"]


def test_reference_extends_paper_and_a_part_overrides_both():
    p = params()
    p["presets"]["paper"]["granularity"] = {"samples_per_object": [1, 2], "samples_per_request": [4]}
    p["presets"]["reference"] = {"extends": "paper", "cell_cap_s": 7, "granularity": {"samples_per_request": [8]}}
    config = experiment_config(EXPERIMENT, "reference", p)
    assert config.scale == "reference" and config.cell_cap_s == 7 and config.n_samples == 60000
    assert config.samples_per_object == [1, 2] and config.samples_per_request == [8]
    from storebench.core.settings import part_overrides

    p["parts"] = {"granularity": {"servers": {"systems": ["redis"]}}}
    assert part_overrides(p, "granularity", "servers") == {"systems": ["redis"]}
    with pytest.raises(ParamsError, match="parts.granularity has no part 'nope'; parts: servers"):
        part_overrides(p, "granularity", "nope")
    p["presets"]["paper"]["extends"] = "reference"
    with pytest.raises(ParamsError, match="makes a cycle"):
        experiment_config(EXPERIMENT, "reference", p)


def test_parts_of_a_measurement_read_as_one(tmp_path):
    import json

    import pandas as pd

    from storebench.core.experiment import ResultTables

    for part, systems, started, load in (("embedded", ["rocksdb"], "2026-01-01T10:00", 1.5),
                                         ("servers", ["redis"], "2026-01-01T09:00", 2.5)):
        folder = tmp_path / part
        folder.mkdir()
        pd.DataFrame({"system": systems, "seconds": [1.0]}).to_csv(folder / "t.csv", index=False)
        pd.DataFrame({"loaders": [4] if part == "servers" else []}).to_csv(folder / "u.csv", index=False)
        (folder / "manifest.json").write_text(json.dumps({
            "run_id": part, "started_utc": started, "finished_utc": started + ":30", "duration_s": 30,
            "git_rev": "abc", "settings": {"systems": systems, "n_samples": 60000, "rows": {"text": 1}}, "tables": ["t"],
            "load_avg_1m": {"max": load, "mean": load - 1}}))
    tables = ResultTables.read(tmp_path)
    assert list(tables["t"].system) == ["rocksdb", "redis"] and list(tables["t"].part) == ["embedded", "servers"]
    assert tables["u"].loaders.tolist() == [4] and tables["u"].loaders.dtype.kind == "i"  # not floats
    assert tables.settings == {"systems": ["rocksdb", "redis"], "n_samples": 60000, "rows": {"text": 1}}
    assert tables.manifest["duration_s"] == 60 and tables.manifest["started_utc"] == "2026-01-01T09:00"
    assert set(tables.manifest["parts"]) == {"embedded", "servers"}
    assert tables.manifest["load_avg_1m"] == {"max": 2.5, "mean": 1.0, "parts_recorded": 2}


def test_a_measurement_records_the_load_it_ran_under():
    import time

    from storebench.core.provenance import LoadSampler

    with LoadSampler(every_s=0.05) as load:
        time.sleep(0.2)
    summary = load.summary()
    assert summary["samples"] >= 3 and 0 <= summary["start"] and summary["mean"] <= summary["max"]


def test_wrong_type_names_the_key_and_type():
    with pytest.raises(ParamsError, match=r"granularity.samples_per_request = '16': Input should be a valid list"):
        experiment_config(EXPERIMENT, "small", params(samples_per_request="16"))


def test_wrong_type_in_preset_names_the_preset_key():
    p = params()
    p["presets"]["small"]["n_samples"] = "many"
    with pytest.raises(ParamsError, match=r"presets.small.n_samples = 'many': Input should be a valid integer"):
        experiment_config(EXPERIMENT, "small", p)


def test_unknown_store_in_params_lists_valid_ones():
    with pytest.raises(ParamsError, match=r"granularity.systems\[1\] = 'mysql': unknown system 'mysql'; valid: .*rocksdb"):
        experiment_config(EXPERIMENT, "paper", params(systems=["rocksdb", "mysql"]))


def test_unknown_key_and_scale_and_section():
    with pytest.raises(ParamsError, match="unknown key granularity.repeets; known keys: .*samples_per_object"):
        experiment_config(EXPERIMENT, "small", params(repeets=3))
    with pytest.raises(ParamsError, match="scale must be one of smoke, small, paper, reference"):
        experiment_config(EXPERIMENT, "huge")
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        experiment_config("nope", "small")


def test_malformed_yaml(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("scale: [small\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)


def test_the_reference_reads_cifar10s_training_split_wherever_a_part_reads_cifar10():
    from storebench.core.settings import part_overrides

    p = load_params()
    read = {}
    for experiment in ("location", "granularity"):
        for part in p["parts"][experiment]:
            config = settings(experiment, "reference", None, part_overrides(p, experiment, part))
            if "cifar10" in config.datasets:
                read[(experiment, part)] = config.samples_of("cifar10")
    assert ("granularity", "minio-cifar10") in read and ("location", "redis-localfs") in read
    assert set(read.values()) == {50000}, read


def test_a_mapping_in_a_preset_that_names_no_experiment_is_refused_not_dropped(tmp_path):
    from storebench.pipeline.deps import expected_params

    p = load_params()
    p["presets"]["reference"]["dataset_samples"] = {"cifar10": 50000}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    stage = {"cmd": "python -m storebench.pipeline.run measure location --scale reference --part redis-localfs"}
    with pytest.raises(ParamsError, match="presets.reference.dataset_samples is a mapping but names no experiment"):
        expected_params(stage, tmp_path / "params.yaml")
    del p["presets"]["reference"]["dataset_samples"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    assert "parts.location.redis-localfs" in expected_params(stage, tmp_path / "params.yaml")
