"""Typed experiment settings, read from ``params.yaml``.

An experiment's settings are its section in ``params.yaml``, overlaid with the global values of
the chosen preset (``n_samples``, ``repeats``, ...) and then the preset's own section for that
experiment, if any, then the caller's overrides. The result is validated by the experiment's
``Settings`` class (pydantic): a wrong key or value is a ``ParamsError`` naming where it came
from (``presets.small.access_pattern.systems``), the value and what is allowed.

    class Settings(storebench.core.settings.Settings):
        systems: list[StoreName]
        samples_per_request: list[PositiveInt]
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from storebench.paths import ROOT

SCALES = ("smoke", "small", "paper", "reference")


class ParamsError(ValueError):
    pass


def one_of(kind: str, known) -> AfterValidator:
    """A validator: the value is one of ``known`` (a collection, or a function returning one, for
    registries that are imported only when settings are checked)."""
    def check(value):
        valid = known() if callable(known) else known
        if value not in valid:
            raise ValueError(f"unknown {kind} {value!r}; valid: {', '.join(sorted(map(str, valid)))}")
        return value
    return AfterValidator(check)


def _stores():
    from storebench.stores import STORES
    return STORES


def _locations():
    from storebench.testbed.locations import LOCATIONS
    return LOCATIONS


def _formats():
    from storebench.data.formats import FORMATS
    return FORMATS


def _datasets():
    from storebench.data.datasets.images import RAW_LOADERS
    return {*RAW_LOADERS, "synthetic"}


def _net_profiles():
    from storebench.testbed.netprofiles import PROFILES
    return PROFILES


def _services():
    from storebench.services import LOCAL_SERVICES
    return LOCAL_SERVICES


StoreName = Annotated[str, one_of("system", _stores)]
LocationName = Annotated[str, one_of("location", _locations)]
FormatName = Annotated[str, one_of("format", _formats)]
DatasetName = Annotated[str, one_of("dataset", _datasets)]
NetProfileName = Annotated[str, one_of("network profile", _net_profiles)]
PositiveInt = Annotated[int, Field(ge=1, strict=True)]
NonNegativeInt = Annotated[int, Field(ge=0, strict=True)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
NonEmpty = Field(min_length=1)


def _known_endpoints(endpoints: dict) -> dict:
    unknown = sorted(set(endpoints) - set(_services()))
    if unknown:
        raise ValueError(f"names unknown service(s) {unknown}; valid: {', '.join(_services())}")
    return endpoints


class Settings(BaseModel):
    """What every experiment receives; an experiment's ``Settings`` adds its own fields."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    scale: str
    seed: int = 0
    n_samples: PositiveInt
    # a dataset's own size where it differs from n_samples (CIFAR-10's 50,000 training images beside MNIST's 60,000)
    dataset_samples: dict[str, PositiveInt] = {}
    repeats: PositiveInt  # at least this many repeats per cell (storebench.core.repeats)
    max_repeats: PositiveInt | None = None  # None: exactly ``repeats`` (the presets in params.yaml set the policy)
    target_ci: PositiveFloat = 0.05  # more repeats until the 95% CI half-width is within this share of the mean
    cell_cap_s: PositiveFloat = 30.0  # ... or a cell has spent this much measured time
    min_repeat_s: NonNegativeFloat = 0.0  # timed work per repeat (shorter passes are looped; 0: one pass)
    warmup: bool = True
    endpoints: Annotated[dict, AfterValidator(_known_endpoints)] = {}

    # Read like the mapping the experiments were first written against (``settings["systems"]``).
    def __getitem__(self, key: str):
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default=None):
        return getattr(self, key, default)

    def __contains__(self, key: str) -> bool:
        return key in type(self).model_fields

    def samples_of(self, dataset: str) -> int:
        """How many samples of ``dataset`` a run reads: its ``dataset_samples`` entry, else ``n_samples``."""
        return self.dataset_samples.get(dataset, self.n_samples)

    @property
    def policy(self):
        from storebench.core.repeats import RepeatPolicy
        return RepeatPolicy(min_repeats=self.repeats, max_repeats=max(self.max_repeats or self.repeats, self.repeats),
                            target_ci=self.target_ci, cell_cap_s=self.cell_cap_s, min_repeat_s=self.min_repeat_s)

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")


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


def merged(name: str, scale: str | None = None, params: dict | None = None,
           overrides: dict | None = None) -> tuple[dict, dict[str, str]]:
    """The raw settings of experiment ``name`` at ``scale`` and, per key, where its value came from."""
    params = load_params() if params is None else params
    scale = scale or params.get("scale", "small")
    if scale not in SCALES:
        raise ParamsError(f"params.yaml: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    if name not in params:
        raise ParamsError(f"params.yaml has no section {name!r} (experiments: "
                          f"{', '.join(k for k, v in params.items() if isinstance(v, dict) and k != 'presets')})")
    chain = preset_chain(params, scale)
    layers = [("", {"seed": params.get("seed", 0), "endpoints": params.get("endpoints") or {}})]
    layers += [(f"presets.{s}.", {k: v for k, v in p.items() if not isinstance(v, dict) and k != "extends"})
               for s, p in chain]
    layers.append((f"{name}.", _mapping(params, name)))
    layers += [(f"presets.{s}.{name}.", p.get(name, {})) for s, p in chain]
    layers.append(("override ", overrides or {}))
    config, origin = {}, {}
    for prefix, layer in layers:
        config.update(layer)
        origin.update({key: prefix + key for key in layer})
    config["scale"], origin["scale"] = scale, "scale"
    return config, origin


def preset_chain(params: dict, scale: str) -> list[tuple[str, dict]]:
    """The presets ``scale`` is made of, base first: a preset with ``extends: <other>`` overlays that
    one (the reference preset is the paper preset plus what this machine needs changed)."""
    presets = _mapping(params, "presets")
    chain, seen = [], set()
    while scale is not None:
        if scale in seen:
            raise ParamsError(f"params.yaml: presets.{scale}.extends makes a cycle")
        seen.add(scale)
        preset = _mapping(presets, scale, f"presets.{scale}")
        chain.insert(0, (scale, preset))
        scale = preset.get("extends")
    return chain


def part_overrides(params: dict, name: str, part: str | None) -> dict:
    """The settings one part of a split measurement overrides (``parts.<experiment>.<part>``): a stage of
    the reference run that would take too long whole is measured as parts, each its own stage."""
    if part is None:
        return {}
    parts = (params.get("parts") or {}).get(name) or {}
    if part not in parts:
        raise ParamsError(f"params.yaml: parts.{name} has no part {part!r}; parts: {', '.join(parts) or 'none'}")
    return dict(parts[part])


def load(settings_class: type[Settings], name: str, scale: str | None = None, params: dict | None = None,
         overrides: dict | None = None) -> Settings:
    """Experiment ``name``'s settings at ``scale``, validated by ``settings_class``."""
    config, origin = merged(name, scale, params, overrides)
    try:
        return settings_class.model_validate(config)
    except ValidationError as error:
        raise ParamsError(_explain(error, config, origin, settings_class)) from None


def _explain(error: ValidationError, config: dict, origin: dict, settings_class) -> str:
    problems = []
    for item in error.errors():
        key = str(item["loc"][0]) if item["loc"] else "?"
        nested = item["loc"][1:]
        where = origin.get(key, key) + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in nested)
        if item["type"] == "extra_forbidden":
            known = sorted(settings_class.model_fields) if not nested else []
            problems.append(f"unknown key {where}" + (f"; known keys: {', '.join(known)}" if known else ""))
        elif item["type"] == "missing":
            problems.append(f"{where} is missing" + ("" if nested else f" ({_field_help(settings_class, key)})"))
        else:
            message = item["msg"].removeprefix("Value error, ")
            value = item.get("input", config.get(key)) if nested else config.get(key)
            problems.append(f"{where} = {value!r}: {message}")
    return "params.yaml: " + "; ".join(problems)


def _field_help(settings_class, key: str) -> str:
    field = settings_class.model_fields.get(key)
    return field.description if field is not None and field.description else "no default"


def _mapping(parent: dict, key: str, where: str | None = None) -> dict:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise ParamsError(f"params.yaml: {where or key} must be a mapping, got {type(value).__name__}")
    return value


def params_hash(fields: dict[str, Any]) -> str:
    """Provenance hash of the values that define a measurement's workload (not local knobs)."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()[:12]
