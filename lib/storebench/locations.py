"""Where a store's data sits while it is read, and making that true.

- ``memory``: the store's directory is on tmpfs (RAM), or the system is in-memory only;
- ``disk-warm``: local disk, page cache warm (a warm-up pass has read everything);
- ``disk-cold``: local disk, the store's files evicted from the page cache before each
  repeat with ``posix_fadvise(DONTNEED)`` after a flush; ``mincore`` then measures how much
  stayed resident, and that fraction is recorded with the result.
"""
from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass
from pathlib import Path

from .paths import MEMORY_DIR, WORK_DIR

LOCATIONS = ("memory", "disk-warm", "disk-cold")

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
    base = MEMORY_DIR if check_location(location) == "memory" else WORK_DIR / "stores"
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
            return sum(v & 1 for v in vec)
        finally:
            _libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size))
    finally:
        os.close(fd)
