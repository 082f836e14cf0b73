"""Who measured what, on what: the machine card, the git revision, library versions and the
manifest written beside every measurement's result tables."""
from __future__ import annotations

import json
import os
import platform
import re
import socket
import subprocess
import threading
import uuid
from datetime import datetime, timezone
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from storebench.paths import ROOT, work_dir

# The client libraries and engines a result can depend on (recorded when installed).
CLIENT_PACKAGES = ("numpy", "pandas", "pyarrow", "torch", "rocksdict", "tiledb", "tensorstore", "redis", "hiredis",
                   "pymongo", "cassandra-driver", "minio", "obstore", "duckdb", "pylance", "webdataset", "rados",
                   "dvc", "papermill")
# Client modules that come from a Debian package, not from PyPI (no Python distribution metadata):
# python-rados is Debian's python3-rados, linked into the venv by env/servers/install-ceph.sh.
DEBIAN_PACKAGES = {"rados": "python3-rados"}


def git_revision() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no",
                                "--", "lib", "notebooks"], capture_output=True, text=True).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@lru_cache(maxsize=1)
def machine_card() -> dict:
    """CPU model (with family/model/stepping and clock: a VM may name only "AMD EPYC"), cores,
    hypervisor, memory, the disk under the work dir (device, size, rotational) and its
    filesystem, kernel, OS."""
    return {
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        **_cpu_details(),
        "cores": os.cpu_count(),
        "hypervisor": _hypervisor(),
        "memory_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
        **_disk(work_dir() if work_dir().exists() else ROOT),
        "kernel": platform.release(),
        "os": _os_name(),
        "python": platform.python_version(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_details() -> dict:
    """Family/model/stepping and clock of the first CPU in /proc/cpuinfo ("unknown" elsewhere)."""
    fields = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().split("\n\n")[0].splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
    except OSError:
        pass
    ident = (f"family {fields['cpu family']} model {fields['model']} stepping {fields.get('stepping', '?')}"
             if "cpu family" in fields and "model" in fields else "unknown")
    mhz = fields.get("cpu MHz")
    return {"cpu_id": ident, "cpu_mhz": round(float(mhz)) if mhz else "unknown"}


def _hypervisor() -> str:
    """The hypervisor lscpu names ("KVM"), "none" on bare metal, "unknown" without lscpu."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    found = re.search(r"^Hypervisor vendor:\s*(.+)$", out, re.M)
    return found.group(1).strip() if found else "none"


def _disk(path: Path) -> dict:
    """The block device and filesystem holding ``path`` (findmnt, util-linux), with the device's
    size and whether it is rotational (lsblk)."""
    try:
        out = subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE", "--target", str(path)],
                             capture_output=True, text=True, check=True).stdout.split()
        card = {"disk_device": out[0], "filesystem": out[1]}
    except (OSError, subprocess.CalledProcessError, IndexError):
        return {"disk_device": "unknown", "filesystem": "unknown"}
    try:
        size, rota = subprocess.run(["lsblk", "-b", "-d", "-n", "-o", "SIZE,ROTA", card["disk_device"]],
                                    capture_output=True, text=True, check=True).stdout.split()[:2]
        card.update(disk_size_bytes=int(size), disk_rotational=rota == "1")
    except (OSError, subprocess.CalledProcessError, ValueError):
        pass
    return card


def _os_name() -> str:
    try:
        return platform.freedesktop_os_release().get("PRETTY_NAME", "unknown")
    except OSError:
        return "unknown"


GO_PSEUDO_VERSION = re.compile(r"DEVELOPMENT\.GOGET \((\S+) v0\.0\.0-(\d{4})(\d{2})(\d{2})\d{6}-([0-9a-f]{12})\)")


def build_identifier(version: str) -> str:
    """A server version that names its build: a MinIO built by ``go install`` reports only
    "DEVELOPMENT.GOGET"; its Go module pseudo-version holds the commit and its date, so
    "MinIO DEVELOPMENT.GOGET (github.com/minio/minio v0.0.0-20260212201848-7aac2a2c5b7c)" reads
    "MinIO commit 7aac2a2c5b7c of 2026-02-12 (github.com/minio/minio)". Anything else is kept."""
    return GO_PSEUDO_VERSION.sub(lambda m: f"commit {m[5]} of {m[2]}-{m[3]}-{m[4]} ({m[1]})", version)


def package_version(dist: str) -> str:
    """The installed version of a Python distribution, or of the Debian package a client module
    comes from (``16.2.15+ds-0+deb12u2 (Debian python3-rados)``); "unknown" when neither is there."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        pass
    if dist in DEBIAN_PACKAGES:
        return _debian_version(DEBIAN_PACKAGES[dist])
    return "unknown"


@lru_cache(maxsize=None)
def _debian_version(package: str) -> str:
    try:
        version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{version} (Debian {package})" if version else "unknown"


def package_versions(names=CLIENT_PACKAGES) -> dict[str, str]:
    """Versions of the client packages that are installed (absent ones are left out)."""
    return {name: version for name in names if (version := package_version(name)) != "unknown"}


class LoadSampler:
    """The machine's 1-minute load average over a run, sampled every ``every_s`` seconds in a daemon
    thread: how busy the machine was while it measured (2 cores shared by servers and clients here)."""

    def __init__(self, every_s: float = 15.0):
        self.every_s, self.samples = every_s, [os.getloadavg()[0]]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(self.every_s):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> "LoadSampler":
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.samples.append(os.getloadavg()[0])

    def summary(self) -> dict:
        start, end, top, mean = self.samples[0], self.samples[-1], max(self.samples), sum(self.samples) / len(self.samples)
        return {"start": round(start, 2), "end": round(end, 2), "max": round(top, 2), "mean": round(mean, 2),
                "samples": len(self.samples), "every_s": self.every_s}


def new_run_id(experiment: str, started: datetime) -> str:
    return f"{experiment}-{started:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)


def write_manifest(path: Path, manifest: dict) -> Path:
    path.write_text(json.dumps(manifest, indent=1, sort_keys=False, default=str) + "\n")
    return path
