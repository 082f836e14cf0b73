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
        for scale in ("smoke", "small", "paper"):
            config = settings(name, scale)
            assert config.scale == scale and config.repeats >= 1
    assert settings(EXPERIMENT, "paper").n_samples == 60000


def test_preset_overrides_section():
    config = experiment_config(EXPERIMENT, "smoke", params())
    assert config.samples_per_request == load_params()["presets"]["smoke"]["granularity"]["samples_per_request"]


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
    with pytest.raises(ParamsError, match="scale must be one of smoke, small, paper"):
        experiment_config(EXPERIMENT, "huge")
    with pytest.raises(ValueError, match="unknown experiment 'nope'"):
        experiment_config("nope", "small")


def test_malformed_yaml(tmp_path):
    bad = tmp_path / "params.yaml"
    bad.write_text("scale: [small\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)
