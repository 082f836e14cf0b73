"""Reading ``params.yaml``: scale presets, one section per experiment, checked types.

An experiment's settings are its section in ``params.yaml``, overlaid with the global
values of the chosen preset (``n_samples``, ``repeats``) and then the preset's own
section for that experiment, if any. Every key is checked against a small schema, and
a wrong one is named with its full path and expected type.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

from storebench.paths import ROOT

SCALES = ("smoke", "small", "paper")


class ParamsError(ValueError):
    pass


# key -> (type, check) ; check returns an error message or None
def _positive(v):
    return None if v >= 1 else "must be >= 1"


def _choices(valid):
    def check(v):
        bad = [x for x in (v if isinstance(v, list) else [v]) if x not in valid]
        return f"has unknown value(s) {bad}; valid: {', '.join(sorted(valid))}" if bad else None
    return check


def _all_positive(v):
    return "values must be >= 1" if any(x < 1 for x in v) else None


GLOBAL_SCHEMA = {
    "n_samples": (int, _positive),
    "repeats": (int, _positive),
    "seed": (int, None),
    "warmup": (bool, None),
}


def experiment_schema() -> dict[str, tuple]:
    from storebench.data.formats import FORMATS
    from storebench.testbed.locations import LOCATIONS
    from storebench.stores import STORES

    return {
        **GLOBAL_SCHEMA,
        "dataset": (str, _choices(_dataset_names())),
        "datasets": (list[str], _choices(_dataset_names())),
        "format": (str, _choices(FORMATS)),
        "formats": (list[str], _choices(FORMATS)),
        "systems": (list[str], _choices(STORES)),
        "locations": (list[str], _choices(LOCATIONS)),
        "restart_datasets": (list, _choices(_dataset_names())),  # may be empty: no server restarts (disk-cold)
        "samples_per_request": (list[int], _all_positive),
        "samples_per_object": (list[int], _all_positive),
        "shuffles": (list[str], _choices({"random", "random-objects"})),
        "overhead_samples_per_request": (int, _positive),
        "endpoints": (dict, _valid_endpoints),
        # training (seed 003 Sec 5.5)
        "batch_sizes": (list[int], _all_positive),
        "workers": (list[int], _all_non_negative),
        "loaders": (list[str], _choices(TRAINING_LOADERS)),
        "epoch_samples": (int, _positive),
        "emulated_compute_s": (list, _non_negative_numbers),
        "emulated_batch_sizes": (list[int], _all_positive),
        "learning_rate": (float, _positive_number),
        "torch_threads": (int, _positive),
        # breakdown (seed 003 Fig 3)
        "link_rates": (list[str], _link_rates),
        "local_read_locations": (list[str], _choices(LOCATIONS)),
        "net_profiles": (list[str], _choices(_net_profile_names())),
    }


TRAINING_LOADERS = ("per-sample", "batched")  # = storebench.loaders.LOADERS (not imported: torch is heavy)


def _all_non_negative(v):
    return "values must be >= 0" if any(x < 0 for x in v) else None


def _non_negative_numbers(v):
    ok = v and all(isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in v)
    return None if ok else "must be a non-empty list of numbers >= 0 (seconds; 0 = the real model step)"


def _link_rates(v):
    from storebench.testbed.netns import bits_per_second

    for rate in v:
        if rate != "unshaped":
            try:
                bits_per_second(rate)
            except ValueError as error:
                return f"{error} (or 'unshaped')"
    return None


def _positive_number(v):
    return None if v > 0 else "must be > 0"


def _net_profile_names():
    from storebench.testbed.netprofiles import PROFILES

    return set(PROFILES)


def _dataset_names():
    from storebench.data.datasets import RAW_LOADERS

    return {*RAW_LOADERS, "synthetic"}


def _valid_endpoints(endpoints: dict):
    from storebench.services import LOCAL_SERVICES

    unknown = sorted(set(endpoints) - set(LOCAL_SERVICES))
    if unknown:
        return f"names unknown service(s) {unknown}; valid: {', '.join(LOCAL_SERVICES)}"
    return None


def load_params(path: Path | str | None = None) -> dict:
    path = Path(path) if path else ROOT / "params.yaml"
    if not path.exists():
        raise ParamsError(f"{path} not found (run from the storebench repository, or set STOREBENCH_ROOT)")
    try:
        params = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ParamsError(f"{path} is not valid YAML: {error}") from None
    if not isinstance(params, dict):
        raise ParamsError(f"{path}: expected a mapping at the top level")
    return params


def experiment_config(name: str, scale: str | None = None, params: dict | None = None,
                      overrides: dict | None = None, schema: dict | None = None) -> dict:
    """Settings of experiment ``name`` at ``scale`` (default: params.yaml's ``scale``).

    ``schema`` adds the keys of a family's own experiments (``key -> (type, check)``, as
    ``experiment_schema``), so a new family brings its knobs without touching this module."""
    params = load_params() if params is None else params
    scale = scale or params.get("scale", "small")
    if scale not in SCALES:
        raise ParamsError(f"params.yaml: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    presets = _mapping(params, "presets")
    preset = _mapping(presets, scale, f"presets.{scale}")
    if name not in params:
        raise ParamsError(f"params.yaml has no section {name!r} (experiments: "
                          f"{', '.join(k for k, v in params.items() if isinstance(v, dict) and k != 'presets')})")
    config = {"seed": params.get("seed", 0), "endpoints": params.get("endpoints") or {}}
    config.update({k: v for k, v in preset.items() if not isinstance(v, dict)})
    config.update(_mapping(params, name))
    config.update(preset.get(name, {}))
    config.update(overrides or {})
    _check(config, {**experiment_schema(), **(schema or {})},
           where={k: _origin(k, name, scale, preset, overrides) for k in config})
    config["scale"] = scale
    return config


def _mapping(parent: dict, key: str, where: str | None = None) -> dict:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise ParamsError(f"params.yaml: {where or key} must be a mapping, got {type(value).__name__}")
    return value


def _origin(key, name, scale, preset, overrides) -> str:
    if overrides and key in overrides:
        return f"override {key}"
    if key in preset.get(name, {}):
        return f"presets.{scale}.{name}.{key}"
    if key in preset:
        return f"presets.{scale}.{key}"
    return f"{name}.{key}" if key not in ("seed", "endpoints") else key


def _check(config: dict, schema: dict, where: dict) -> None:
    for key, value in config.items():
        if key not in schema:
            raise ParamsError(f"params.yaml: unknown key {where[key]}; known keys: {', '.join(sorted(schema))}")
        expected, check = schema[key]
        if not _is(value, expected):
            raise ParamsError(f"params.yaml: {where[key]} must be {_type_name(expected)}, "
                              f"got {value!r} ({type(value).__name__})")
        problem = check(value) if check else None
        if problem:
            raise ParamsError(f"params.yaml: {where[key]} {problem}")


def _is(value: Any, expected) -> bool:
    if getattr(expected, "__origin__", None) is list:
        (item,) = expected.__args__
        return isinstance(value, list) and bool(value) and all(_is(v, item) for v in value)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def _type_name(expected) -> str:
    if getattr(expected, "__origin__", None) is list:
        return f"a non-empty list of {expected.__args__[0].__name__}"
    return {int: "an integer", str: "a string", bool: "true or false", dict: "a mapping"}.get(expected, expected.__name__)


# Checks a family's own schema may use (experiment_config(schema=...)).
positive, choices, all_positive, all_non_negative = _positive, _choices, _all_positive, _all_non_negative


def params_hash(fields: dict) -> str:
    """Provenance hash of the values that define a measurement's workload (not local knobs)."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:12]
