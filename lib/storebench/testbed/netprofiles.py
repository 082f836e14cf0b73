"""Network profiles: what sits between a client and a server, by name, measured before use.

A profile combines the two tools this machine has: the network hop of storebench.testbed.netns (a
namespace joined by a veth pair, shaped with ``tc tbf``) and Toxiproxy, a user-space TCP relay
that adds latency and bandwidth limits (this kernel has no ``sch_netem``). An experiment asks
for a profile by name and routes a store's endpoint through it:

    with NetworkPath("lan-1g", hop=hop) as path:   # hop: the server runs inside it (or None)
        net = path.measure()                       # {"net_profile", "net_rtt_ms", "net_throughput_mbit", ...}
        store = get_store_class("redis")(path.route(endpoint))
        ... record ``net`` with the rows ...

The link rate is a token bucket on the veth pair when the server sits across a hop, else a
Toxiproxy bandwidth toxic (per connection). ``measure()`` times a tiny echo server placed where
the server is, through the same path: round trips of 64 bytes (RTT) and a bulk download.

Run as ``python -m storebench.testbed.netprofiles serve HOST`` this module is that echo server.
"""
from __future__ import annotations

import itertools
import os
import socket
import socketserver
import statistics
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from storebench.services.base import dies_with_parent
from storebench.testbed.netns import NetworkHop, bits_per_second


@dataclass(frozen=True)
class NetProfile:
    name: str
    rate: str | None = None   # link rate (tc syntax): tbf on the veth hop, else a Toxiproxy bandwidth toxic
    latency_ms: int = 0       # Toxiproxy latency toxic on server -> client data (whole ms: its unit)
    relay: bool = True        # through Toxiproxy at all ("unshaped": a direct connection)
    basis: str = ""           # why these values
    time_scale: int = 1       # it stands for a link this many times faster, with this many times less latency


PROFILES: dict[str, NetProfile] = {p.name: p for p in (
    NetProfile("unshaped", relay=False, basis="a direct connection: nothing added"),
    # Seed 003's 1 GbE LAN. Its own numbers imply ~0.17 ms of network per request (10% of 102 s
    # over 60,000 sequential requests), the RTT of a switched 1 GbE LAN (0.1-0.3 ms). Toxiproxy's
    # latency toxic counts whole milliseconds, 5-10x too much; its relay alone (two user-space
    # copies per round trip) adds ~0.15-0.35 ms here, so the relay with no latency toxic is the
    # LAN's latency. The measured RTT is recorded with every row.
    NetProfile("lan-1g", rate="1gbit", latency_ms=0,
               basis="seed 003's 1 GbE LAN: tbf 1gbit + Toxiproxy relay (~0.2 ms RTT, the paper's ~0.17 ms "
                     "of network per request)"),
    # A cloud object store seen from a VM in the same region. AWS's S3 performance guidelines
    # ("Timeouts and retries for latency-sensitive applications"): small GETs (< 512 KB) have
    # median latencies "in the range of tens of milliseconds", so 20 ms to the first byte; and
    # ("Horizontal scaling"): one connection moves ~85-90 MB/s, so ~720 Mbit/s per connection.
    NetProfile("cloud-s3", rate="720mbit", latency_ms=20,
               basis="S3 in-region: first byte ~20 ms (AWS: tens of ms for small GETs), ~90 MB/s per "
                     "connection (AWS: 85-90 MB/s per request)"),
    # Seed 002's client instances reach S3 at "up to" 5 (t3.*), 10 (c5.large) and 20 Gbit/s
    # (c8gb.large), with S3's ~20 ms to the first byte (as cloud-s3). This machine moves ~1-3 Gbit/s
    # through a relay, so each tier runs 20x slower in time: link rate / 20 (keeping the 1:2:4
    # ratio) AND latency x 20 (400 ms), so that the bytes one round trip is worth (rate x latency,
    # 12.5 MB at 5 Gbit/s and 20 ms) and hence the latency/bandwidth balance are the seed's; a
    # network-bound time here is 20x the seed's (time_scale). With a veth hop the rate is the whole
    # link's (an instance's NIC), not one connection's.
    NetProfile("s3-5g", rate="250mbit", latency_ms=400, time_scale=20,
               basis="seed 002's t3.* (up to 5 Gbit/s) and S3's ~20 ms first byte, 20x slower in time "
                     "(rate / 20, latency x 20)"),
    NetProfile("s3-10g", rate="500mbit", latency_ms=400, time_scale=20,
               basis="seed 002's c5.large (up to 10 Gbit/s) and S3's ~20 ms first byte, 20x slower in time"),
    NetProfile("s3-20g", rate="1gbit", latency_ms=400, time_scale=20,
               basis="seed 002's c8gb.large (up to 20 Gbit/s) and S3's ~20 ms first byte, 20x slower in time"),
)}

ECHO_BYTES = 64


def get_profile(name: str) -> NetProfile:
    if name not in PROFILES:
        raise ValueError(f"unknown network profile {name!r}; valid: {', '.join(PROFILES)}")
    return PROFILES[name]


class ProfileNotSupported(ValueError):
    """This system's client cannot be routed through a single TCP relay."""


class NetworkPath:
    """``profile`` between this process and servers bound to ``hop.server_address`` inside
    ``hop`` (or on this machine's loopback without one). Starts its own Toxiproxy (by PID, API on
    127.0.0.1:``toxiproxy_port``) unless ``toxiproxy`` (a started ToxiproxyService) is given."""

    def __init__(self, profile: str | NetProfile, hop: NetworkHop | None = None, toxiproxy=None,
                 workdir: Path | None = None, toxiproxy_port: int | None = None):
        self.profile = get_profile(profile) if isinstance(profile, str) else profile
        self.hop, self.toxiproxy = hop, toxiproxy
        self.workdir, self.toxiproxy_port = workdir, toxiproxy_port
        self._own_toxiproxy = False
        self._proxies: list[str] = []
        self._names = itertools.count()

    # -- lifecycle ----------------------------------------------------------------------
    def __enter__(self) -> "NetworkPath":
        if self.profile.relay and self.toxiproxy is None:
            from storebench.services import local_service

            self.toxiproxy = local_service("toxiproxy", self.workdir, port=self.toxiproxy_port).start()
            self._own_toxiproxy = True
        self.shape()
        return self

    def __exit__(self, *exc) -> None:
        for name in self._proxies:
            try:
                self.toxiproxy.api().delete_proxy(name)
            except Exception:  # noqa: BLE001 - the proxy goes with Toxiproxy anyway
                pass
        self._proxies.clear()
        if self._own_toxiproxy:
            self.toxiproxy.stop()
        if self.hop is not None and self.hop.created:
            self.hop.shape(None)

    def shape(self) -> None:
        """Put the profile's link rate on the hop (for callers that reshape it in between)."""
        if self.hop is not None:
            self.hop.shape(self.profile.rate)

    @property
    def description(self) -> str:
        parts = []
        if self.hop is not None:
            parts.append(f"veth pair{f', tbf {self.profile.rate}' if self.profile.rate else ''}")
        if self.profile.relay:
            toxics = [f"latency {self.profile.latency_ms} ms server->client"] if self.profile.latency_ms else []
            if self.profile.rate and self.hop is None:
                toxics.append(f"bandwidth {self.profile.rate} per connection")
            parts.append("Toxiproxy relay" + (f" ({', '.join(toxics)})" if toxics else ""))
        return " + ".join(parts) or "direct connection on loopback"

    # -- routing ------------------------------------------------------------------------
    def relay(self, host: str, port: int, name: str | None = None) -> tuple[str, int]:
        """A Toxiproxy proxy to ``host:port`` with the profile's toxics; where the client connects."""
        if not self.profile.relay:
            return host, port
        api = self.toxiproxy.api()
        name = name or f"sb-{os.getpid()}-{next(self._names)}"
        listen = api.create_proxy(name, upstream=f"{host}:{port}")
        self._proxies.append(name)
        if self.profile.latency_ms:
            api.add_toxic(name, "latency", {"latency": self.profile.latency_ms, "jitter": 0}, stream="downstream")
        if self.profile.rate and self.hop is None:
            kb_per_s = bits_per_second(self.profile.rate) // 8 // 1000   # Toxiproxy's KB is 1000 bytes
            for stream in ("downstream", "upstream"):
                api.add_toxic(name, "bandwidth", {"rate": kb_per_s}, stream=stream)
        listen_host, listen_port = listen.rsplit(":", 1)
        return listen_host, int(listen_port)

    def route(self, endpoint: dict) -> dict:
        """``endpoint`` (a store's endpoint dict) rewritten to reach its server through this path."""
        system = endpoint.get("system", "?")
        if system == "ceph":
            raise ProfileNotSupported("ceph: a RADOS client talks to every monitor and OSD at the addresses of "
                                      "the cluster map, so one TCP relay cannot sit in between; measure Ceph "
                                      "through its S3 gateway, or across the veth hop alone")
        if "host" not in endpoint or "port" not in endpoint:
            raise ProfileNotSupported(f"{system}: the endpoint has no host/port to route through a profile "
                                      f"(got keys {sorted(endpoint)}); give it as a mapping with host and port")
        points = endpoint.get("contact_points")
        if points and len(points) > 1:
            raise ProfileNotSupported(f"{system}: {len(points)} contact points; a profile relays one server, "
                                      "and the driver would reach the other nodes directly")
        host, port = self.relay(endpoint["host"], int(endpoint["port"]))
        routed = dict(endpoint)
        old, new = f"{endpoint['host']}:{endpoint['port']}", f"{host}:{port}"
        for key, value in endpoint.items():
            if isinstance(value, str) and old in value:
                routed[key] = value.replace(old, new)   # url / uri
        routed.update(host=host, port=port)
        if points:
            # Cassandra: with one contact point the driver keeps the connection's own address for
            # the node (system.local), so every request goes through the relay; a single node has
            # no peers that it could reach around it.
            routed["contact_points"] = [host]
        routed["net_profile"] = self.profile.name
        return routed

    # -- measurement --------------------------------------------------------------------
    def measure(self, round_trips: int = 30, bulk_bytes: int = 32 * 2**20, timeout: float = 30.0) -> dict:
        """RTT (median of ``round_trips`` 64-byte echoes) and throughput (a ``bulk_bytes``
        download, first to last byte) of this path, to an echo server placed like the servers."""
        self.shape()
        with EchoServer(self.hop) as echo:
            host, port = self.relay(echo.host, echo.port, name=f"sb-{os.getpid()}-echo{next(self._names)}")
            rtts = echo_round_trips(host, port, round_trips, timeout)
            mbit = bulk_throughput_mbit(host, port, bulk_bytes, timeout)
        return {"net_profile": self.profile.name, "net_rtt_ms": statistics.median(rtts) * 1000,
                "net_throughput_mbit": mbit, "net_path": self.description,
                "net_rtt_min_ms": min(rtts) * 1000}


# ------------------------------------------------------------------ the echo server and its client
class EchoServer:
    """``python -m storebench.testbed.netprofiles serve HOST`` in ``hop``'s namespace (bound to its server
    address) or on 127.0.0.1 here; stopped by PID."""

    def __init__(self, hop: NetworkHop | None = None):
        self.hop = hop
        self.host = hop.server_address if hop is not None else "127.0.0.1"
        self.proc, self.port = None, 0

    def __enter__(self) -> "EchoServer":
        cmd = [sys.executable, "-m", __name__, "serve", self.host]
        self.proc = subprocess.Popen(self.hop.inside_command(cmd) if self.hop else cmd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=dies_with_parent())
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.proc.kill()
            raise RuntimeError(f"the echo server for the network profile did not start: {line}"
                               f"{self.proc.stderr.read()[-2000:]}")
        self.port = int(line)
        return self

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _EchoHandler(socketserver.BaseRequestHandler):
    """b"E": echo ECHO_BYTES-byte messages until the client closes; b"B" + 8-byte size: send that many bytes."""

    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        mode = _recv_exactly(sock, 1)
        if mode == b"E":
            while message := _recv_exactly(sock, ECHO_BYTES, eof_ok=True):
                sock.sendall(message)
        elif mode == b"B":
            (size,) = struct.unpack("!Q", _recv_exactly(sock, 8))
            block = b"\x5a" * min(size, 2**20)
            while size > 0:
                sock.sendall(block[:size])
                size -= len(block)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _serve(host: str) -> None:
    with _Server((host, 0), _EchoHandler) as server:
        print(server.server_address[1], flush=True)
        server.serve_forever()


def _recv_exactly(sock: socket.socket, n: int, eof_ok: bool = False) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            if eof_ok and not data:
                return b""
            raise ConnectionError(f"the echo server closed the connection after {len(data)} of {n} bytes")
        data += chunk
    return bytes(data)


def echo_round_trips(host: str, port: int, n: int, timeout: float, warmup: int = 3) -> list[float]:
    """Seconds of each of ``n`` 64-byte echo round trips on one connection (after ``warmup``)."""
    message = os.urandom(ECHO_BYTES)
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.sendall(b"E")
        times = []
        for i in range(warmup + n):
            t0 = time.perf_counter()
            sock.sendall(message)
            if _recv_exactly(sock, ECHO_BYTES) != message:
                raise RuntimeError(f"the echo through {host}:{port} came back changed")
            if i >= warmup:
                times.append(time.perf_counter() - t0)
    return times


def bulk_throughput_mbit(host: str, port: int, size: int, timeout: float) -> float:
    """Mbit/s of one ``size``-byte download, from its first byte to its last (latency excluded)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 2**20)
        sock.sendall(b"B" + struct.pack("!Q", size))
        buffer = bytearray(2**20)
        first = got = sock.recv_into(buffer)
        t0 = time.perf_counter()
        while got < size:
            n = sock.recv_into(buffer)
            if not n:
                raise ConnectionError(f"bulk transfer through {host}:{port} ended after {got} of {size} bytes")
            got += n
        seconds = time.perf_counter() - t0
    return (got - first) * 8 / seconds / 1e6


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        _serve(sys.argv[2])
