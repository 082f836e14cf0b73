"""Network profiles (storebench.testbed.netprofiles) on a real Toxiproxy, a real veth hop and a real Redis."""
import os

import psutil
import pytest

from storebench.testbed.netns import NetworkHop
from storebench.testbed.netprofiles import PROFILES, NetworkPath, ProfileNotSupported
from storebench.services import local_service
from storebench.stores import get_store_class

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.
PORT = {"toxiproxy": 8482, "redis": 6396}  # own instances, apart from the session's servers


@pytest.fixture(scope="module")
def toxiproxy(tmp_path_factory):
    with local_service("toxiproxy", tmp_path_factory.mktemp("toxiproxy"), port=PORT["toxiproxy"]) as svc:
        yield svc


@pytest.mark.server
def test_toxiproxy_starts_and_stops_by_pid(tmp_path):
    svc = local_service("toxiproxy", tmp_path, port=PORT["toxiproxy"] + 1).start()
    try:
        (pid,) = svc.pids()
        assert psutil.Process(pid).name().startswith("toxiproxy")
        assert "v2.12.0" in svc.version()
        assert svc.pidfile.exists() and svc.endpoint()["url"] == f"http://127.0.0.1:{PORT['toxiproxy'] + 1}"
    finally:
        svc.stop()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not svc.pidfile.exists()


@pytest.mark.server
@pytest.mark.parametrize("name", sorted(PROFILES))
def test_measured_rtt_is_at_least_the_configured_latency(name, toxiproxy):
    with NetworkPath(name, toxiproxy=toxiproxy) as path:
        net = path.measure(round_trips=10, bulk_bytes=4 * 2**20)
    assert net["net_profile"] == name
    assert net["net_rtt_min_ms"] >= PROFILES[name].latency_ms  # a lower bound: cannot flake on a busy machine
    assert net["net_throughput_mbit"] > 0


@pytest.mark.server
@pytest.mark.skipif(os.geteuid() != 0, reason="a network namespace needs root")
def test_lan_1g_across_the_veth_hop_is_shaped_and_relayed(toxiproxy):
    with NetworkHop() as hop, NetworkPath("lan-1g", hop=hop, toxiproxy=toxiproxy) as path:
        assert "tbf" in hop.qdiscs() and "rate 1Gbit" in hop.qdiscs()
        net = path.measure(round_trips=10, bulk_bytes=8 * 2**20)
        assert net["net_path"] == "veth pair, tbf 1gbit + Toxiproxy relay"
        assert net["net_throughput_mbit"] < 1100   # the token bucket holds it near 1 Gbit/s
    assert not hop.exists()


@pytest.mark.server
@pytest.mark.parametrize("name", ["lan-1g", "cloud-s3"])
def test_redis_answers_verified_reads_through_a_profile(name, toxiproxy, tmp_path):
    with local_service("redis", tmp_path, "memory", port=PORT["redis"]) as redis:
        direct = get_store_class("redis")(redis.endpoint(), namespace="profiles")
        values = {k: os.urandom(700 + k) for k in range(50)}
        direct.put_many(values.items())
        with NetworkPath(name, toxiproxy=toxiproxy) as path:
            routed = path.route(redis.endpoint())
            assert routed["port"] != PORT["redis"] and routed["net_profile"] == name
            assert str(routed["port"]) in routed["url"]
            through = get_store_class("redis")(routed, namespace="profiles")
            assert through.get_many(list(values)) == list(values.values())
            assert through.get(7) == values[7]
            peers = {c.raddr.port for c in psutil.Process().net_connections("tcp") if c.raddr}
            assert routed["port"] in peers  # the routed client really talks to the relay
            through.close()
        direct.clear()
        direct.close()


@pytest.mark.server
def test_ceph_cannot_be_routed_through_one_relay(toxiproxy):
    with NetworkPath("lan-1g", toxiproxy=toxiproxy) as path:
        with pytest.raises(ProfileNotSupported, match="ceph: a RADOS client talks to every"):
            path.route({"system": "ceph", "host": "127.0.0.1", "port": 3300})


def test_unknown_profile_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown network profile 'lan-10g'; valid: unshaped, lan-1g, cloud-s3"):
        NetworkPath("lan-10g")
