"""A real network hop on one machine: a network namespace of our own, joined to this one by a
veth pair, optionally shaped with ``tc`` (seed 003's 1 Gbps LAN), torn down afterwards.

    with NetworkHop() as hop:            # needs CAP_NET_ADMIN (root)
        hop.shape("1gbit")               # token bucket on both ends; hop.shape(None) unshapes
        ... a server bound to hop.server_address inside hop.namespace (ip netns exec) ...
        hop.run_inside([sys.executable, "-m", ...])   # a client in the server's namespace

Addresses come from 198.18.0.0/15 (RFC 2544, reserved for benchmarking), so they never
collide with a real network. The kernel here has no ``sch_netem``, so latency is not
emulated: the hop is the veth pair plus the token bucket, nothing more.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess

import psutil

PREFIX = "sb"  # namespace sb<pid>, interfaces sb<pid>h (here) and sb<pid>n (inside)


class NetworkHopUnavailable(RuntimeError):
    """This machine or user cannot create network namespaces (needs iproute2 and CAP_NET_ADMIN)."""


def _ip(*args: str, inside: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = ["ip", *(["-n", inside] if inside else []), *args]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise NetworkHopUnavailable(f"`{' '.join(cmd)}` failed: {res.stderr.strip() or res.stdout.strip()}")
    return res


def _tc(*args: str, inside: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = [*(["ip", "netns", "exec", inside] if inside else []), "tc", *args]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise NetworkHopUnavailable(f"`{' '.join(cmd)}` failed: {res.stderr.strip()}")
    return res


def remove_stale_namespaces() -> list[str]:
    """Delete namespaces of ours whose creating process is gone (a run killed with -9), with what
    outlived it: processes still inside (they would keep the namespace and its veth alive) and the
    veth's end here (it holds 198.18.0.1, which the next hop needs)."""
    listed = _ip("netns", "list", check=False).stdout
    removed = []
    for name, pid in re.findall(rf"^({PREFIX}(\d+))\b", listed, flags=re.M):
        if psutil.pid_exists(int(pid)):
            continue
        for inside in _ip("netns", "pids", name, check=False).stdout.split():
            _kill(int(inside))
        _ip("link", "delete", f"{name}h", check=False)
        _ip("netns", "delete", name, check=False)
        removed.append(name)
    for name, pid in re.findall(rf"^\d+: ({PREFIX}(\d+))h@", _ip("-o", "link", "show", check=False).stdout, flags=re.M):
        if not psutil.pid_exists(int(pid)):  # its namespace already deleted, but a process inside kept it
            _ip("link", "delete", f"{name}h", check=False)
            removed.append(f"{name}h")
    return removed


def _kill(pid: int) -> None:
    try:
        psutil.Process(pid).kill()
    except psutil.Error:
        pass


class NetworkHop:
    """A namespace ``sb<pid>`` joined by a veth pair; this side 198.18.0.1, inside 198.18.0.2."""

    host_address = "198.18.0.1"
    server_address = "198.18.0.2"

    def __init__(self):
        if shutil.which("ip") is None or shutil.which("tc") is None:
            raise NetworkHopUnavailable("`ip` and `tc` (Debian package iproute2) are not installed")
        self.namespace = f"{PREFIX}{os.getpid()}"
        self.host_link, self.inner_link = f"{self.namespace}h", f"{self.namespace}n"
        self.rate: str | None = None
        self.created = False

    def create(self) -> "NetworkHop":
        remove_stale_namespaces()
        if self.namespace in _ip("netns", "list", check=False).stdout.split():
            _ip("netns", "delete", self.namespace, check=False)
        try:
            _ip("netns", "add", self.namespace)
        except NetworkHopUnavailable as why:
            raise NetworkHopUnavailable(f"cannot create a network namespace (needs root or CAP_NET_ADMIN "
                                        f"and CAP_SYS_ADMIN; in a container run it with --cap-add "
                                        f"NET_ADMIN,SYS_ADMIN): {why}") from None
        self.created = True
        atexit.register(self.delete)
        try:
            _ip("link", "add", self.host_link, "type", "veth", "peer", "name", self.inner_link,
                "netns", self.namespace)
            _ip("addr", "add", f"{self.host_address}/30", "dev", self.host_link)
            _ip("link", "set", self.host_link, "up")
            _ip("link", "set", "lo", "up", inside=self.namespace)
            _ip("addr", "add", f"{self.server_address}/30", "dev", self.inner_link, inside=self.namespace)
            _ip("link", "set", self.inner_link, "up", inside=self.namespace)
        except BaseException:
            self.delete()
            raise
        return self

    def shape(self, rate: str | None) -> None:
        """Shape both directions to ``rate`` (tc syntax, e.g. "1gbit") with a token bucket; None
        removes the shaping. Burst: 1 ms of traffic at the rate (>= 64 KiB), as tc's guidance."""
        for link, inside in ((self.host_link, None), (self.inner_link, self.namespace)):
            _tc("qdisc", "del", "dev", link, "root", inside=inside, check=False)
            if rate is not None:
                _tc("qdisc", "add", "dev", link, "root", "tbf", "rate", rate, "burst",
                    str(max(64 * 1024, bits_per_second(rate) // 8 // 1000)), "latency", "50ms", inside=inside)
        self.rate = rate

    def qdiscs(self) -> str:
        """What ``tc`` reports is installed on both ends (recorded with the results)."""
        here = _tc("qdisc", "show", "dev", self.host_link, check=False).stdout.strip()
        inside = _tc("qdisc", "show", "dev", self.inner_link, inside=self.namespace, check=False).stdout.strip()
        return f"{self.host_link}: {here}; {self.inner_link}: {inside}"

    def inside_command(self, cmd: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, *cmd]

    def delete(self) -> None:
        """Remove the veth pair and the namespace. Idempotent. (The link first: a deleted namespace
        releases its devices only later, in the kernel's own time.)"""
        if self.created:
            _ip("link", "delete", self.host_link, check=False)
            _ip("netns", "delete", self.namespace, check=False)
            self.created = False
        atexit.unregister(self.delete)

    def exists(self) -> bool:
        return self.namespace in _ip("netns", "list", check=False).stdout.split()

    def __enter__(self) -> "NetworkHop":
        return self.create()

    def __exit__(self, *exc) -> None:
        self.delete()


def bits_per_second(rate: str) -> int:
    """tc's rate syntax ("1gbit", "100mbit", "500kbit", "8bit") in bits per second."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmg]?)bit", rate.strip().lower())
    if not match:
        raise ValueError(f"rate {rate!r}: expected a number and kbit/mbit/gbit, e.g. '1gbit'")
    return int(float(match.group(1)) * {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[match.group(2)])
