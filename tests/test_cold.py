"""Cold means cold: disk-cold restarts a local server (new process, data kept, restart timed
apart from the read); disk-cold-pagecache only evicts its files; embedded stores reopen + evict."""
import time

import psutil
import pytest

from storebench.data.formats import get_format
from storebench.testbed.locations import LOCATIONS, check_location
from storebench.stores.readers import ObjectReader
from storebench.services import local_service
from storebench.stores import get_store_class, open_store
from storebench.stores.systems import LocationNotSupported, open_system
from storebench.core.timing import measure
from storebench.data.workloads import Workload
from storebench.core.repeats import RepeatPolicy

# (service, system, port): servers quick to restart, off their default ports
QUICK_SERVERS = [("mongodb-ferretdb", "mongodb-api", 27317), ("minio", "minio", 9300)]


@pytest.fixture(params=QUICK_SERVERS, ids=[s[1] for s in QUICK_SERVERS])
def server_reader(request, tmp_path, small_dataset):
    service, system, port = request.param
    svc = local_service(service, tmp_path / "services", "disk", port=port).start()
    store = get_store_class(system)(svc.endpoint(), namespace="cold", service=svc)
    try:
        yield ObjectReader.ingest(store, small_dataset, get_format("pickle"), 1, progress=False), svc
    finally:
        store.clear()
        store.close()
        svc.stop()


def _process_started(pid: int) -> float:
    return psutil.Process(pid).create_time()


@pytest.mark.server
def test_disk_cold_restarts_the_server_and_times_the_restart_apart(server_reader):
    reader, svc = server_reader
    before = set(svc.pids())
    workload = Workload("sequential", 1, 1, 300)
    passes = measure(reader, workload, policy=RepeatPolicy.exactly(2), cold=True, restart_server=True)
    # perf_counter_ns (the events' clock) to wall-clock time, to compare with the process start
    to_wall = time.time() - time.perf_counter_ns() / 1e9
    after = set(svc.pids())
    assert after and not after & before  # a new server process
    for p in passes:
        assert p.cold_method == "restart-evict"
        assert p.server_restart_seconds is not None and p.server_restart_seconds > 0
        assert p.resident_fraction is not None and p.resident_fraction < 0.2
        assert p.events.n_samples.sum() == 300  # every sample read back and verified (run_pass)
    # the last restart's server was up before the first timed request: the restart is not read time
    first_request = passes[-1].events.start_ns.min() / 1e9 + to_wall
    assert max(_process_started(pid) for pid in after) < first_request


@pytest.mark.server
def test_disk_cold_pagecache_keeps_the_server_running(server_reader):
    reader, svc = server_reader
    before = set(svc.pids())
    (p,) = measure(reader, Workload("sequential", 1, 1, 300), policy=RepeatPolicy.exactly(1), cold=True, restart_server=False)
    assert set(svc.pids()) == before
    assert p.cold_method == "evict" and p.server_restart_seconds is None
    assert p.resident_fraction is not None and p.resident_fraction < 0.2


def test_embedded_disk_cold_reopens_and_evicts(tmp_path, small_dataset):
    store = open_store("rocksdb", tmp_path / "db")
    reader = ObjectReader.ingest(store, small_dataset, get_format("pickle"), 1, progress=False)
    (p,) = measure(reader, Workload("sequential", 1, 1, 300), policy=RepeatPolicy.exactly(1), cold=True, restart_server=True)
    assert p.cold_method == "reopen-evict" and p.server_restart_seconds is None
    assert p.resident_fraction < 0.1
    store.close()


def test_both_cold_locations_are_known_and_pagecache_is_for_servers_only():
    assert {"disk-cold", "disk-cold-pagecache"} <= set(LOCATIONS)
    assert check_location("disk-cold-pagecache") == "disk-cold-pagecache"
    with pytest.raises(LocationNotSupported, match="for servers"):
        with open_system("localfs", "disk-cold-pagecache"):
            pass
