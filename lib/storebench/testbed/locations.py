"""Where a store's data sits while it is read, and making that true.

- ``memory``: the store's directory is on tmpfs (RAM), or the system is in-memory only;
- ``disk-warm``: local disk, page cache warm (a warm-up pass has read everything);
- ``disk-cold``: local disk, nothing cached before each repeat. An embedded store is reopened
  (its in-process caches go with the old handle) and its files are evicted from the page cache
  with ``posix_fadvise(DONTNEED)``; a local server is stopped, its files evicted, started
  again (the time to ready recorded apart, never in the read time) and evicted once more,
  so its own caches (Cassandra's key and chunk caches, BlueStore's caches, MinIO's metadata)
  start empty too;
- ``disk-cold-pagecache`` (servers only): the server keeps running with its own caches; only
  its files are evicted from the page cache (what ``disk-cold`` is for an embedded store).

Before every cold repeat ``mincore`` measures how much of the store's files stayed resident,
and that fraction is recorded with the result, with the cold method used (``COLD_METHODS``).
"""
from __future__ import annotations

import ctypes
import mmap
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storebench.paths import memory_dir, work_dir

LOCATIONS = ("memory", "disk-warm", "disk-cold", "disk-cold-pagecache")
COLD_LOCATIONS = ("disk-cold", "disk-cold-pagecache")
# What a cold repeat did, as recorded in each row's ``cold_method``.
COLD_METHODS = {
    "reopen-evict": "embedded store reopened, its files evicted from the page cache",
    "restart-evict": "server stopped, its files evicted, server started again and evicted once more",
    "evict": "server kept running (its own caches warm), its files evicted from the page cache",
}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_PAGE = mmap.PAGESIZE


def check_location(location: str) -> str:
    if location not in LOCATIONS:
        raise ValueError(f"unknown location {location!r}; valid locations: {', '.join(LOCATIONS)}")
    return location


def store_root(system: str, location: str, tag: str = "") -> Path:
    """Directory for a store's data at ``location`` (tmpfs for memory, work dir on disk)."""
    base = memory_dir() if check_location(location) == "memory" else work_dir() / "stores"
    return base / (f"{system}-{tag}" if tag else system)


def filesystem_type(path: Path) -> str:
    best, fstype = "", "unknown"
    real = os.path.realpath(path)
    with open("/proc/mounts") as mounts:
        for line in mounts:
            _, mnt, typ = line.split()[:3]
            if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best):
                best, fstype = mnt, typ
    return fstype


@dataclass(frozen=True)
class Residency:
    resident_bytes: int
    total_bytes: int

    @property
    def fraction(self) -> float:
        return self.resident_bytes / self.total_bytes if self.total_bytes else 0.0


def evict(files) -> None:
    """Drop the files' pages from the page cache (the caller has flushed dirty pages)."""
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except (FileNotFoundError, IsADirectoryError):
            continue
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Cold:
    """What one cold repeat's preparation did and left."""
    residency: Residency  # of the store's files, right before the repeat
    method: str  # a key of COLD_METHODS
    server_restart_seconds: float | None = None  # stop to client connected again ("restart-evict")


def make_cold(store, restart_server: bool) -> Cold:
    """Empty the caches in front of ``store``'s data before a cold repeat (see the module doc).
    ``restart_server``: a store on a server that storebench runs gets the server restarted too."""
    server = getattr(store, "local", None)
    seconds = None
    if restart_server and server is not None:
        seconds, method = _restart(store, server), "restart-evict"
    else:
        store.reopen()
        method = "evict" if store.capabilities.has_server else "reopen-evict"
    files = store.files()
    evict(files)  # after a restart: what the server read while starting up
    return Cold(residency(files), method, seconds)


def _restart(store, server) -> float:
    """Seconds from stopping ``server`` to ``store`` connected again. The data were flushed at
    ingest (Cassandra: into sstables) and reads write nothing, so a stop loses nothing."""
    store.close()
    start = time.perf_counter()
    restart_evicted(server)
    store.reconnect()
    return time.perf_counter() - start


def restart_evicted(server) -> float:
    """Stop ``server``, evict its files from the page cache, start it: seconds from stop to ready."""
    start = time.perf_counter()
    server.stop()
    evict(path for path in server.data_dir.rglob("*") if path.is_file())
    server.start()
    return time.perf_counter() - start


def residency(files) -> Residency:
    """How many bytes of ``files`` are in the page cache (mincore on a read-only mapping)."""
    resident = total = 0
    for path in files:
        try:
            size = os.path.getsize(path)
        except FileNotFoundError:
            continue
        total += size
        if size:
            resident += _resident_pages(path, size) * _PAGE
    return Residency(min(resident, total), total)


def _resident_pages(path, size: int) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        address = _libc.mmap(None, ctypes.c_size_t(size), mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), f"mmap failed on {path}")
        try:
            vec = (ctypes.c_ubyte * ((size + _PAGE - 1) // _PAGE))()
            if _libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vec) != 0:
                raise OSError(ctypes.get_errno(), f"mincore failed on {path}")
            return int((np.frombuffer(vec, dtype=np.uint8) & 1).sum())  # a sparse 64 GiB file: 16M pages
        finally:
            _libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size))
    finally:
        os.close(fd)
