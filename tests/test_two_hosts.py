"""Two hosts rehearsed on one machine at smoke scale (storebench.experiments.cassandra_dl.twohosts): a
Cassandra node and a torchrun rank in this namespace and in one of our own, joined by a veth at
lan-1g's rate; both ranks read the ring, every epoch whole and every blob verified, while the second
node joins and leaves. Nothing is left behind: no JVM, no rank, no namespace."""
import os
import subprocess

import psutil
import pytest

from storebench.experiments.cassandra_dl.twohosts import PHASES, SMOKE, rehearse
from storebench.testbed.netns import NetworkHopUnavailable

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.


def cassandra_jvms(under) -> list[int]:
    """Cassandra JVMs whose configuration lies under ``under`` (other suites' JVMs may come and go)."""
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if "org.apache.cassandra.service.CassandraDaemon" in (p.info["cmdline"] or [])
            and str(under) in " ".join(p.info["cmdline"])]


def ranks_running() -> list[int]:
    return [p.pid for p in psutil.process_iter(["cmdline"])
            if "storebench.experiments.cassandra_dl.twohosts_rank" in " ".join(p.info["cmdline"] or [])]


def our_namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    return [n for n in listed if n == f"sb{os.getpid()}"]


@pytest.mark.server
@pytest.mark.usefixtures("default_ports_free")
def test_two_hosts_read_the_ring_while_it_grows_and_shrinks(tmp_path):
    try:
        result = rehearse(tmp_path, SMOKE, say=lambda _: None)
    except NetworkHopUnavailable as why:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no network namespaces here: {why}")
    assert [r["status"] for r in result.ring] == [
        {"198.18.0.1": "UN"}, {"198.18.0.1": "UN", "198.18.0.2": "UN"}, {"198.18.0.1": "UN"}]
    rank_a, rank_b = result.ranks
    assert (rank_a["rank"], rank_b["rank"]) == (0, 1) and rank_a["steps"] == rank_b["steps"]
    assert rank_a["netns"] == os.readlink("/proc/self/ns/net") != rank_b["netns"]  # B ran on "host B"
    assert rank_a["split_size"] + rank_b["split_size"] == SMOKE.images
    for rank in result.ranks:   # every completed epoch delivered the whole split, every blob checked
        assert rank["epochs"] and all(e["images"] == rank["split_size"] for e in rank["epochs"])
        assert rank["errors"] == []
    phases = result.phases()
    assert list(phases.phase.unique()) == list(PHASES)
    assert (phases.images > 0).all()   # reads went on under the join and the leave, on both hosts
    assert cassandra_jvms(tmp_path) == [] and ranks_running() == [] and our_namespaces() == []
