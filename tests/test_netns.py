"""The network hop of the breakdown experiment: a real namespace, veth pair and tc shaping."""
import os
import socket
import subprocess
import sys
import time

import pytest

from storebench.testbed.netns import NetworkHop, NetworkHopUnavailable, bits_per_second, remove_stale_namespaces
from storebench.services import LOCAL_SERVICES
from storebench.services.base import tcp_open
from storebench.stores.systems import ServicePool

# Tier markers are per test: `slow` on each test that needs it, none on the pure ones.

SINK = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5001)); s.listen(1); print("listening", flush=True)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(1 << 16)
    if not b: break
    n += len(b)
c.sendall(str(n).encode()); c.close()
"""


def namespaces() -> list[str]:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()


def links() -> str:
    return subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout


@pytest.fixture
def hop():
    try:
        with NetworkHop() as created:
            yield created
    except NetworkHopUnavailable as why:
        if os.environ.get("CI"):
            raise  # CI runs as root: the breakdown must really be exercised there
        pytest.skip(f"no network namespaces here: {why}")


def send_through(hop: NetworkHop, n_bytes: int) -> float:
    """Seconds to push ``n_bytes`` from here to a sink inside the namespace (acknowledged)."""
    sink = subprocess.Popen(hop.inside_command([sys.executable, "-c", SINK, hop.server_address]),
                            stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout.readline().strip() == "listening"
        with socket.create_connection((hop.server_address, 5001), timeout=30) as conn:
            start = time.perf_counter()
            conn.sendall(b"\0" * n_bytes)
            conn.shutdown(socket.SHUT_WR)
            assert int(conn.recv(64)) == n_bytes
            return time.perf_counter() - start
    finally:
        sink.wait(timeout=30)


@pytest.mark.slow
def test_hop_is_a_real_route_into_a_namespace_and_is_torn_down(hop):
    assert hop.namespace in namespaces() and hop.host_link in links()
    assert send_through(hop, 1 << 20) > 0
    hop.delete()
    assert hop.namespace not in namespaces() and hop.host_link not in links()
    hop.delete()  # idempotent


@pytest.mark.slow
def test_token_bucket_limits_the_rate(hop):
    """2 MB at 20 Mbit/s cannot take less than 0.8 s (a busy machine only makes it slower)."""
    hop.shape("20mbit")
    assert "tbf" in hop.qdiscs() and "rate 20Mbit" in hop.qdiscs()
    shaped = send_through(hop, 2_000_000)
    assert shaped >= 0.8 * 2_000_000 * 8 / 20e6
    hop.shape(None)
    assert "tbf" not in hop.qdiscs()


@pytest.mark.slow
@pytest.mark.parametrize("service", sorted(LOCAL_SERVICES))
def test_every_server_starts_inside_the_namespace(hop, service):
    with ServicePool(hop=hop) as pool:
        endpoint, local = pool.endpoint(service, "disk-warm")
        assert endpoint["host"] == hop.server_address and local.netns == hop.namespace
        assert local.version()  # a real request across the hop
        assert tcp_open(local.port, hop.server_address)
        ours = os.readlink("/proc/self/ns/net")
        assert all(os.readlink(f"/proc/{pid}/ns/net") != ours for pid in local.pids())
    assert not local.is_running()


@pytest.mark.slow
def test_namespaces_left_by_a_killed_run_are_removed(hop):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"sb{dead.pid}"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    assert stale in remove_stale_namespaces()
    assert stale not in namespaces() and hop.namespace in namespaces()  # a live run's is kept


KILLED_RUN = """
from storebench.testbed.netns import NetworkHop
from storebench.testbed.netprofiles import EchoServer
hop = NetworkHop().create()
with EchoServer(hop) as echo:
    print(hop.namespace, echo.proc.pid, flush=True)
    input()
"""


@pytest.mark.slow
def test_a_run_killed_inside_a_profile_leaves_nothing_that_blocks_the_next_hop():
    """Killed with -9 while its echo server sits in its namespace: the server dies with it, and the
    next hop removes the namespace and the veth end holding 198.18.0.1."""
    run = subprocess.Popen([sys.executable, "-c", KILLED_RUN], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
    namespace, echo_pid = run.stdout.readline().split()
    run.kill()
    run.wait()
    deadline = time.monotonic() + 10
    while _alive(int(echo_pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(int(echo_pid)), "the echo server outlived the run that started it"
    try:
        with NetworkHop() as hop:
            assert namespace not in namespaces() and f"{namespace}h" not in links()
            assert send_through(hop, 2**20) > 0
    except NetworkHopUnavailable as why:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no network namespaces here: {why}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead
        return stat.read().split(")")[-1].split()[0] != "Z"


def test_rates_in_tc_syntax():
    assert bits_per_second("1gbit") == 10**9 and bits_per_second("100mbit") == 10**8
    with pytest.raises(ValueError, match="kbit/mbit/gbit"):
        bits_per_second("1 GB/s")
