"""Copying files checked against pinned digests from the offline datasets mirror
(``STOREBENCH_DATASETS_MIRROR``, default ``../shared/datasets``) and the error every dataset
raises when its files are not there. The fetch order (mirror, then public route) is in ``obtain``."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from storebench.paths import ROOT


class DatasetMissing(FileNotFoundError):
    """A dataset's raw or prepared files are not where they should be; the message says how to get them."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def datasets_mirror() -> Path:
    return Path(os.environ.get("STOREBENCH_DATASETS_MIRROR", ROOT.parent / "shared" / "datasets"))


def complete(folder: Path, files) -> bool:
    return all((Path(folder) / f).exists() for f in files)


def copy_checked(name: str, subdir: str, files: dict[str, str], data_dir: Path, mirror: Path | None = None) -> Path:
    """``files`` (name -> SHA-256) of the mirror's ``subdir`` copied into ``data_dir/name``, checked
    (each copied to a temporary file first, renamed once it matches)."""
    target = Path(data_dir) / name
    if complete(target, files):
        return target
    source = Path(mirror or datasets_mirror()) / subdir
    missing = [f for f in files if not (source / f).exists()]
    if missing:
        raise DatasetMissing(f"{name}: {', '.join(missing)} not in the mirror {source} (set STOREBENCH_DATASETS_MIRROR)")
    target.mkdir(parents=True, exist_ok=True)
    for file, digest in files.items():
        partial = target / f".{file}.part"
        try:
            shutil.copyfile(source / file, partial)
            if sha256(partial) != digest:
                raise RuntimeError(f"{source / file} does not match its pinned SHA-256 {digest}")
            partial.replace(target / file)
        finally:
            partial.unlink(missing_ok=True)
    return target


def missing_hint(name: str) -> str:
    """How to obtain dataset ``name`` (the tail of every DatasetMissing for raw files)."""
    return f"Obtain it with `make data` (or `python -m storebench.data.datasets fetch {name}`)."
