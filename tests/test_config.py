import pytest
import yaml

from storebench.core.config import ParamsError, experiment_config, load_params
from storebench.paths import ROOT


def params(**section):
    base = yaml.safe_load((ROOT / "params.yaml").read_text())
    base["access_pattern"].update(section)
    return base


def test_repository_params_resolve_at_every_scale():
    for scale in ("smoke", "small", "paper"):
        config = experiment_config("access_pattern", scale)
        assert config["scale"] == scale and config["repeats"] >= 1
    assert experiment_config("access_pattern", "paper")["n_samples"] == 60000


def test_preset_overrides_section():
    config = experiment_config("access_pattern", "smoke", params())
    assert config["samples_per_request"] == load_params()["presets"]["smoke"]["access_pattern"]["samples_per_request"]


def test_wrong_type_names_the_key_and_type():
    with pytest.raises(ParamsError, match=r"access_pattern.samples_per_request must be a non-empty list of int"):
        experiment_config("access_pattern", "paper", params(samples_per_request="16"))


def test_wrong_type_in_preset_names_the_preset_key():
    p = params()
    p["presets"]["small"]["n_samples"] = "many"
    with pytest.raises(ParamsError, match=r"presets.small.n_samples must be an integer, got 'many'"):
        experiment_config("access_pattern", "small", p)


def test_unknown_store_in_params_lists_valid_ones():
    with pytest.raises(ParamsError, match=r"access_pattern.systems has unknown value\(s\) \['mysql'\]; valid: .*rocksdb"):
        experiment_config("access_pattern", "paper", params(systems=["rocksdb", "mysql"]))


def test_unknown_key_and_scale_and_section():
    with pytest.raises(ParamsError, match="unknown key access_pattern.repeets"):
        experiment_config("access_pattern", "small", params(repeets=3))
    with pytest.raises(ParamsError, match="scale must be one of smoke, small, paper"):
        experiment_config("access_pattern", "huge")
    with pytest.raises(ParamsError, match="no section 'nope'"):
        experiment_config("nope", "small")


def test_malformed_yaml(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("scale: [small\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)
