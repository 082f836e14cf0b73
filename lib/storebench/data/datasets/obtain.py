"""The fetch order of every dataset file: the offline mirror first, the public route second.

The mirror comes first when it holds the file: offline machines and CI have it, it is read
without the network, and its files carry the same pins as the public routes' results, so
nothing is gained by downloading what is already on disk. Only a file the mirror lacks (no
mirror, or a partial one) takes its public route (``routes.ROUTES``): the downloads are cached
under ``~/.cache/storebench/downloads`` (``STOREBENCH_CACHE``), each checked against its pin as
it arrives; the built file is checked against the dataset file's pin and only then renamed into
``data/<dataset>/``. When neither route gives the file, one ``DatasetMissing`` names both.

The papers' full archives (``routes.REFERENCE_ARCHIVES``) have no pin yet: ``fetch_reference``
refuses them unless ``STOREBENCH_ALLOW_UNPINNED=1``, and prints the digest it got so it can be pinned.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from storebench import paths
from storebench.data.datasets.builds import BUILDS
from storebench.data.datasets.download import ChecksumMismatch, download, public_url
from storebench.data.datasets.mirror import DatasetMissing, copy_checked, datasets_mirror, sha256
from storebench.data.datasets.routes import Download, Route, reference_archive, route

ALLOW_UNPINNED_ENV = "STOREBENCH_ALLOW_UNPINNED"


def obtain(name: str, subdir: str, files: dict[str, str], data_dir: Path, mirror: Path | None = None) -> Path:
    """Each of ``files`` (name -> SHA-256) into ``data_dir/name``: copied from the mirror's
    ``subdir`` when it is there, else built from its public route."""
    target = Path(data_dir) / name
    source = Path(mirror or datasets_mirror()) / subdir
    for file, digest in files.items():
        if (target / file).exists():
            continue
        if (source / file).exists():
            copy_checked(name, subdir, {file: digest}, data_dir, source.parent)
        else:
            from_public_route(route(name, file), target, looked_in=source / file)
    return target


def from_public_route(chosen: Route, target: Path, looked_in: Path) -> Path:
    """``chosen.file`` into ``target``, built from its downloads and checked; DatasetMissing naming
    ``looked_in`` and the URL when a download cannot be had."""
    downloads = []
    for item in chosen.downloads:
        try:
            downloads.append(_cached_download(item))
        except OSError as error:
            raise DatasetMissing(_on_neither_route(chosen, target, looked_in, item, error)) from error
    return _build_checked(chosen, downloads, target)


def fetch_reference(dataset: str, dest_dir: Path | None = None) -> Path:
    """A paper's full archive (no pin yet) into ``dest_dir`` (default: the download cache), only
    with ``STOREBENCH_ALLOW_UNPINNED=1``."""
    archive = reference_archive(dataset)
    if os.environ.get(ALLOW_UNPINNED_ENV) != "1":
        raise PermissionError(f"{archive.url} has no pinned SHA-256 in storebench (not yet verified); set "
                              f"{ALLOW_UNPINNED_ENV}=1 to download it anyway, then pin the digest it prints in routes.py. "
                              "Without it the reference run uses the mirror's sample scaled by concatenation.")
    dest = Path(dest_dir or _downloads_dir()) / Path(archive.url).name
    download(archive.url, archive.sha256, dest)
    print(f"{dest}: SHA-256 {sha256(dest)} (unverified: compare with another copy before pinning)")
    return dest


def _cached_download(item: Download) -> Path:
    dest = _downloads_dir() / _cache_name(item)
    if dest.exists() and (item.sha256 is None or sha256(dest) == item.sha256):
        return dest
    return download(item.url, item.sha256, dest)


def _build_checked(chosen: Route, downloads: list[Path], target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    partial = target / f".{chosen.file}.part"
    try:
        BUILDS[chosen.build](downloads, partial)
        built = sha256(partial)
        if built != chosen.sha256:
            _forget_unpinned(chosen)
            raise ChecksumMismatch(f"{chosen.dataset}/{chosen.file} built from {', '.join(d.url for d in chosen.downloads)} "
                                   f"does not match its pin: expected {chosen.sha256}, built {built} (removed)")
        partial.replace(target / chosen.file)
    finally:
        partial.unlink(missing_ok=True)
    return target / chosen.file


def _forget_unpinned(chosen: Route) -> None:
    # an unpinned download is judged by what it builds: a wrong build must not reuse it next time
    for item in chosen.downloads:
        if item.sha256 is None:
            (_downloads_dir() / _cache_name(item)).unlink(missing_ok=True)


def _on_neither_route(chosen: Route, target: Path, looked_in: Path, failed: Download, error: Exception) -> str:
    urls = "\n".join(f"    {item.url}" + (f"  (SHA-256 {item.sha256})" if item.sha256 else "") for item in chosen.downloads)
    return (f"{chosen.dataset}: {chosen.file} is on neither route.\n"
            f"  mirror: {looked_in} does not exist (STOREBENCH_DATASETS_MIRROR sets the mirror)\n"
            f"  public: {public_url(failed.url)} failed: {error}\n"
            f"To get it by hand, download\n{urls}\n"
            f"  and put {chosen.how} at {target / chosen.file} (SHA-256 {chosen.sha256}), "
            f"or put the mirror's copy at {looked_in}.")


def _cache_name(item: Download) -> str:
    return f"{hashlib.sha256(item.url.encode()).hexdigest()[:12]}-{Path(item.url).name}"


def _downloads_dir() -> Path:
    return paths.cache_dir() / "downloads"
