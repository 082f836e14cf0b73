"""HTTP downloads for the public routes: a timeout on every socket operation, a progress bar,
verified before they are kept, and atomic (a temporary file next to the destination, renamed only
once its SHA-256 matches; a failed or corrupt download leaves nothing behind).

``STOREBENCH_DATASETS_URL`` (e.g. ``http://127.0.0.1:8000/files``) redirects every public URL
``https://HOST/PATH`` to ``$STOREBENCH_DATASETS_URL/HOST/PATH``: an HTTP mirror of the routes laid
out by host, or a test's loopback server. The pinned digests still decide what is accepted.
"""
from __future__ import annotations

import hashlib
import os
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from storebench.core.progress import tqdm

URL_ENV = "STOREBENCH_DATASETS_URL"
TIMEOUT_S = 60  # per connect and per read, not for the whole file
CHUNK = 1 << 20


class ChecksumMismatch(ValueError):
    """A downloaded or built file is not the pinned one (it has been removed)."""


def public_url(url: str) -> str:
    base = os.environ.get(URL_ENV)
    if not base:
        return url
    parts = urlsplit(url)
    return f"{base.rstrip('/')}/{parts.netloc}{parts.path}"


def download(url: str, sha256: str | None, dest: Path) -> Path:
    """``url`` into ``dest``, checked against ``sha256`` (``None``: kept unchecked, the caller checks
    what it builds). Raises OSError when the server cannot be reached, ChecksumMismatch when the
    bytes are wrong."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f".{dest.name}.part")
    source = public_url(url)
    try:
        digest = _stream(source, partial)
        if sha256 is not None and digest != sha256:
            raise ChecksumMismatch(f"{source} does not match its pinned SHA-256: expected {sha256}, downloaded {digest} "
                                   "(the download was removed; retry, or use the offline mirror)")
        partial.replace(dest)
    finally:
        partial.unlink(missing_ok=True)
    return dest


def _stream(url: str, into: Path) -> str:
    digest = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "storebench"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response, open(into, "wb") as out:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(total=total, unit="B", unit_scale=True, desc=f"download {Path(urlsplit(url).path).name}",
                  delay=1) as bar:
            for block in iter(lambda: response.read(CHUNK), b""):
                out.write(block)
                digest.update(block)
                bar.update(len(block))
    return digest.hexdigest()
