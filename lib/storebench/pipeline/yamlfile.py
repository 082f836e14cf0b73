"""The pipeline's YAML files (dvc.yaml, dvc.lock, params.yaml and reference/'s), parsed once per content.

The pipeline's checks read them once per stage: a few hundred parses of files up to ~0.5 MB, which took
minutes with PyYAML's pure-Python parser. Each file is parsed with libyaml once per distinct text, and each
caller gets its own copy, so a caller that edits what it read changes nothing another reads.
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import yaml


def load(path: Path | str):
    """``yaml.safe_load`` of the file at ``path``."""
    return copy.deepcopy(_parsed(Path(path).read_text()))


@lru_cache(maxsize=16)
def _parsed(text: str):
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
