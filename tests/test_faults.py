"""Faults made real, seen from the stores and experiments (server start-up faults: test_services.py)."""
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from storebench.data import datasets
from storebench.experiments.common import MeasurementFailed, Run, loaded_reader, measure_into
from storebench.data.formats import get_format
from storebench.testbed.netprofiles import NetworkPath
from storebench.stores.readers import ObjectReader
from storebench.core.results import ResultWriter
from storebench.services import local_service
from storebench.stores import get_store_class
from storebench.stores.base import StoreConnectionError
from storebench.data.workloads import Workload
from storebench.core.repeats import RepeatPolicy

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.
FAULT_PORT = {"redis": 6390, "minio": 9090, "toxiproxy": 8490, "mongodb-api": 27090, "ceph": 3390,
              "cassandra": 9390}  # own instances, apart from the session's servers


@pytest.fixture
def own_redis(tmp_path):
    with local_service("redis", tmp_path, "memory", port=FAULT_PORT["redis"]) as svc:
        yield svc


@pytest.mark.server
def test_server_killed_mid_run_fails_the_run_and_records_nothing(own_redis, tmp_path):
    store = get_store_class("redis")(own_redis.endpoint(), namespace="fault", service=own_redis)
    data = datasets.synthetic(2000)
    reader = ObjectReader.ingest(store, data, get_format("pickle"), 1, progress=False)
    run = Run(ResultWriter("faults", raw_dir=tmp_path / "raw"))
    pid = own_redis.pids()[0]
    killer = threading.Timer(0.5, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(MeasurementFailed, match=r"^redis failed during sequential-1 .*No result"):
            measure_into(run, reader, Workload("sequential", 1, 1, 2000), location="memory", policy=RepeatPolicy.exactly(200),
                         dataset="synthetic", format="pickle", scale="smoke", seed=0)
    finally:
        killer.cancel()
    assert run.rows.empty and not list((tmp_path / "raw").glob("*.parquet"))  # nothing of the run recorded


@pytest.mark.server
def test_wrong_redis_password_is_an_authentication_error(own_redis):
    endpoint = {**own_redis.endpoint(), "password": "not-the-password"}
    endpoint.pop("url")
    with pytest.raises(StoreConnectionError, match="redis at 127.0.0.1:6390: authentication failed"):
        get_store_class("redis")(endpoint)


@pytest.mark.server
def test_wrong_minio_secret_is_an_authentication_error(tmp_path):
    with local_service("minio", tmp_path, "disk", port=FAULT_PORT["minio"]) as svc:
        endpoint = {**svc.endpoint(), "secret_key": "wrong-secret-key"}
        with pytest.raises(StoreConnectionError, match="minio at 127.0.0.1:9090: authentication failed"):
            get_store_class("minio")(endpoint)


@pytest.mark.server
def test_an_s3_error_on_a_read_names_the_server(tmp_path):
    """The server answers a GET with an S3 error other than a missing key (here NoSuchBucket: the bucket was
    removed under the store): the error names the server's address beside its code, not only the object."""
    with local_service("minio", tmp_path, "disk", port=FAULT_PORT["minio"]) as svc:
        store = get_store_class("minio")(svc.endpoint(), namespace="gone")
        store.put_many([(0, b"x")])
        store.admin.remove_object(store.bucket, "000000000000")
        store.admin.remove_bucket(store.bucket)
        with pytest.raises(ConnectionError, match=r"^minio at 127\.0\.0\.1:9090: the server failed the request "
                                                  r"\(S3Error: .*code: NoSuchBucket"):
            store.get(0)
        store.close()


def test_unreachable_server_is_a_clear_connection_error():
    with pytest.raises(StoreConnectionError, match="redis at 127.0.0.1:6391: cannot connect"):
        get_store_class("redis")({"host": "127.0.0.1", "port": 6391, "password": "x"})


@pytest.mark.server
def test_killed_server_in_an_experiment_stops_the_experiment(tmp_path, monkeypatch):
    """Through the experiment code path: the first failing system ends the run; no CSV appears."""
    from storebench.pipeline import run

    overrides = {"dataset": "synthetic", "n_samples": 500, "systems": ["redis"], "locations": ["memory"],
                 "samples_per_request": [1], "repeats": 1,
                 "endpoints": {"redis": {"host": "127.0.0.1", "port": 6393, "password": "x"}}}
    with pytest.raises(StoreConnectionError, match="redis at 127.0.0.1:6393"):
        run.measure("access_pattern", "smoke", results_root=tmp_path, overrides=overrides, progress=False)
    assert not list(tmp_path.rglob("*.csv")) and not (tmp_path / "access_pattern").exists()


# ------------------------------------------------------------------ faults a user meets (issue 8)
@pytest.fixture
def small_tmpfs(tmp_path):
    """A 1 MiB tmpfs, unmounted afterwards (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_disk_full_during_ingest_names_the_system_and_the_fix(small_tmpfs, tmp_path, monkeypatch):
    monkeypatch.setenv("STOREBENCH_MEMORY_DIR", str(small_tmpfs))  # the store's "memory" location: 1 MiB
    run = Run(ResultWriter("faults", raw_dir=tmp_path / "raw"))
    with pytest.raises(MeasurementFailed, match=r"^localfs failed during ingest at memory: OSError: .*No space left"
                                                r".*out of space: free space there.*No result of this run"):
        with loaded_reader("localfs", "memory", datasets.synthetic(2000), "pickle", 1, progress=False) as reader:
            measure_into(run, reader, Workload("sequential", 1, 1, 2000), location="memory", policy=RepeatPolicy.exactly(1),
                         dataset="synthetic", format="pickle", scale="smoke", seed=0)
    assert run.rows.empty and not list((tmp_path / "raw").glob("*.parquet"))  # nothing of the run recorded
    assert not any(small_tmpfs.rglob("*.bin"))  # the partial ingest was cleared


@pytest.fixture
def tmpfs_of(tmp_path):
    """mount(size) -> a tmpfs of ``size`` (e.g. "24m"), unmounted afterwards (needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = []

    def mount(size: str):
        point = tmp_path / f"tmpfs-{size}"
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], check=True)
        mounted.append(point)
        return point
    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=True)


@pytest.mark.server
def test_a_server_store_whose_disk_fills_during_ingest_fails_clearly_and_starts_clean(tmpfs_of, tmp_path):
    """MinIO with its data directory on a 200 MiB filesystem, sent 234 MB: the ingest fails naming the system and
    the space, and nothing partial is left in the bucket, so the next run starts from an empty one. (When the
    space comes back is MinIO's: it frees deleted objects in the background, which took seconds on an idle
    machine and over a minute during the whole test suite, so the test does not wait for it.)"""
    from storebench.stores.systems import ServicePool

    with local_service("minio", tmpfs_of("200m"), "disk", port=FAULT_PORT["minio"]) as svc:
        pool = ServicePool({"minio": svc.endpoint()})
        with pytest.raises(MeasurementFailed, match=r"^minio failed during ingest at disk-warm: .*"
                                                    r"out of space: free space there.*No result of this run"):
            with loaded_reader("minio", "disk-warm", datasets.synthetic(2600, shape=(300, 300)), "pickle", 1,
                               progress=False, services=pool):
                pass
        store = get_store_class("minio")(svc.endpoint())
        assert not list(store.client.names())  # the partial ingest was cleared
        store.close()


@pytest.fixture
def relayed_redis(own_redis, tmp_path):
    """(direct store, reader through a Toxiproxy relay, its API and proxy name); 2000 objects ingested."""
    with local_service("toxiproxy", tmp_path, port=FAULT_PORT["toxiproxy"]) as toxiproxy:
        with NetworkPath("lan-1g", toxiproxy=toxiproxy) as path:
            routed = path.route(own_redis.endpoint())
            direct = get_store_class("redis")(own_redis.endpoint(), namespace="fault")
            reader = ObjectReader.ingest(direct, datasets.synthetic(2000), get_format("pickle"), 1, progress=False)
            through = get_store_class("redis")(routed, namespace="fault", timeout=FAULT_TIMEOUT_S)
            relayed = ObjectReader(through, reader.format, 1, reader.checksums, reader.sizes, reader.n_samples)
            (proxy,) = [name for name in toxiproxy.api().proxies()]
            yield relayed, toxiproxy.api(), proxy
            through.close()
            direct.close()


FAULT_TIMEOUT_S = 1.0  # the client's stated timeout for a request


def _fault_after(seconds, api, proxy, kind, attributes):
    timer = threading.Timer(seconds, api.add_toxic, (proxy, kind, attributes), {"stream": "downstream"})
    timer.start()
    return timer


@pytest.mark.server
def test_connection_reset_mid_run_fails_the_run_and_records_nothing(relayed_redis, tmp_path):
    reader, api, proxy = relayed_redis
    run = Run(ResultWriter("faults", raw_dir=tmp_path / "raw"))
    timer = _fault_after(0.5, api, proxy, "reset_peer", {"timeout": 0})
    try:
        with pytest.raises(MeasurementFailed, match=r"^redis failed during sequential-1 at memory: ConnectionError: "
                                                    r".*connection to the server was reset or closed.*No result"):
            measure_into(run, reader, Workload("sequential", 1, 1, 2000), location="memory", policy=RepeatPolicy.exactly(200),
                         dataset="synthetic", format="pickle", scale="smoke", seed=0)
    finally:
        timer.cancel()
    assert run.rows.empty and not list((tmp_path / "raw").glob("*.parquet"))  # nothing of the run recorded


RELAYED = {"minio": ("minio", "minio"), "minio-obstore": ("minio", "minio"),  # system: its service, its port
           "mongodb-api": ("mongodb-ferretdb", "mongodb-api"), "cassandra": ("cassandra", "cassandra")}


@pytest.mark.server
@pytest.mark.parametrize("system", list(RELAYED))
def test_connection_reset_mid_batch_fails_clearly_for_every_client(system, tmp_path):
    """Toxiproxy resets the connection while batches of 16 are being read: the run fails naming the system,
    the phase and the reset (no client retries a read, so that a fault is never hidden), and records nothing."""
    service, port = RELAYED[system]
    with local_service(service, tmp_path / "server", "disk", port=FAULT_PORT[port]) as server, \
            local_service("toxiproxy", tmp_path, port=FAULT_PORT["toxiproxy"]) as toxiproxy, \
            NetworkPath("lan-1g", toxiproxy=toxiproxy) as path:
        cls = get_store_class(system)
        direct = cls(server.endpoint(), namespace="reset")
        reader = ObjectReader.ingest(direct, datasets.synthetic(2000), get_format("pickle"), 1, progress=False)
        through = cls(path.route(server.endpoint()), namespace="reset")
        relayed = ObjectReader(through, reader.format, 1, reader.checksums, reader.sizes, reader.n_samples)
        (proxy,) = list(toxiproxy.api().proxies())
        run = Run(ResultWriter("faults", raw_dir=tmp_path / "raw"))
        timer = _fault_after(0.5, toxiproxy.api(), proxy, "reset_peer", {"timeout": 0})
        try:
            with pytest.raises(MeasurementFailed, match=rf"^{system} failed during random-16 at disk-warm: ") as failed:
                measure_into(run, relayed, Workload("random", 16, 1, 2000), location="disk-warm",
                             policy=RepeatPolicy.exactly(500), dataset="synthetic", format="pickle", scale="smoke",
                             seed=0)
        finally:
            timer.cancel()
        said = str(failed.value).lower()
        assert any(w in said for w in ("reset", "closed", "connection", "aborted", "eof")), said
        assert "no result" in said
        assert run.rows.empty and not list((tmp_path / "raw").glob("*.parquet"))
        through.close()
        direct.clear()
        direct.close()


@pytest.mark.server
def test_server_too_slow_times_out_after_the_stated_timeout(relayed_redis, tmp_path):
    reader, api, proxy = relayed_redis
    run = Run(ResultWriter("faults", raw_dir=tmp_path / "raw"))
    timer = _fault_after(0.5, api, proxy, "timeout", {"timeout": 0})  # data stops flowing; nothing closes
    t0 = time.monotonic()
    try:
        with pytest.raises(MeasurementFailed, match=r"^redis failed during sequential-1 at memory: TimeoutError: "
                                                    r".*did not answer within the client's timeout.*No result"):
            measure_into(run, reader, Workload("sequential", 1, 1, 2000), location="memory", policy=RepeatPolicy.exactly(200),
                         dataset="synthetic", format="pickle", scale="smoke", seed=0)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 60  # gave up (1 s timeout, no retries) instead of hanging
    assert run.rows.empty and not list((tmp_path / "raw").glob("*.parquet"))  # nothing of the run recorded


@pytest.mark.server
@pytest.mark.parametrize("workers", [0, 2])
def test_a_server_restarted_during_a_loader_epoch_rides_through_verified_or_fails_clearly(workers, tmp_path):
    """MinIO restarted (stopped, started on the same data) while a DataLoader epoch reads from it: either the
    epoch completes with every sample verified and in its planned place, or it fails with an error naming the
    server's address and the connection, or with MinIO's own S3 error for the request it was answering as it
    stopped (the server, its code and the object named: MinIO answers an in-flight GET with ClientDisconnected);
    never a short or wrong epoch. (Today it fails: the S3 clients do not retry, by design, so that a fault is never hidden.)"""
    from storebench import loaders

    with local_service("minio", tmp_path / "minio", "disk", port=FAULT_PORT["minio"]) as svc:
        store = get_store_class("minio")(svc.endpoint(), service=svc)
        data = datasets.synthetic(3000)
        reader = ObjectReader.ingest(store, data, get_format("pickle"), 1, progress=False)
        plan = loaders.batch_plan(3000, 60_000, 32, seed=1)  # 20 passes: a few seconds, the restart inside
        dataset = loaders.make_dataset("batched", reader)
        restart = threading.Timer(0.3, lambda: (svc.stop(), svc.start()))
        restart.start()
        got = []
        try:
            for _images, labels in loaders.data_loader(dataset, plan, workers):
                got.extend(labels.tolist())
        except Exception as error:  # noqa: BLE001 - the failure must say what failed
            chain = f"{type(error).__name__}: {error} {error.__cause__ or ''}".lower()
            assert re.search(rf"(port=|:){FAULT_PORT['minio']}\b", chain), chain  # the server it lost, always
            if "s3error" in chain:  # the server's answer to the request in flight: its code and the object
                assert re.search(r"code: \w+", chain) and "resource: /sb-storebench/" in chain, chain
            else:
                assert any(words in chain for words in ("connection", "refused", "reset", "closed")), chain
            assert len(got) < 60_000
        else:
            assert got == [int(data.labels[i]) for batch in plan for i in batch]  # all of it, verified, in order
        finally:
            restart.join()
        store.close()


HUNG = {"mongodb-api": ("mongodb-ferretdb", "ferretdb"), "ceph": ("ceph", "ceph-osd")}  # service, process to stop


@pytest.mark.server
@pytest.mark.parametrize("system", list(HUNG))
def test_a_hung_server_times_out_after_the_stated_timeout(system, tmp_path):
    """The server's process stopped (SIGSTOP: it holds its connections and answers nothing): the client gives
    up after its stated timeout with a clear error, and nothing of the run is recorded."""
    service, process = HUNG[system]
    with local_service(service, tmp_path, "disk", port=FAULT_PORT[system]) as svc:
        store = get_store_class(system)(svc.endpoint(), namespace="hung", timeout=2.0)
        reader = ObjectReader.ingest(store, datasets.synthetic(300), get_format("pickle"), 1, progress=False)
        (stopped,) = [p for p in _processes(svc) if process in p.name()]
        run = Run(ResultWriter("faults", raw_dir=tmp_path / "raw"))
        timer = threading.Timer(0.5, stopped.suspend)
        timer.start()
        t0 = time.monotonic()
        try:
            with pytest.raises(MeasurementFailed, match=rf"^{system} failed during sequential-1 at disk-warm: "
                                                        r"\w*(Timeout|TimedOut)\w*: .*did not answer within the "
                                                        r"client's timeout.*No result"):
                measure_into(run, reader, Workload("sequential", 1, 1, 300), location="disk-warm",
                             policy=RepeatPolicy.exactly(500), dataset="synthetic", format="pickle", scale="smoke",
                             seed=0)
        finally:
            timer.cancel()
            stopped.resume()
        assert time.monotonic() - t0 < 60  # gave up instead of hanging
        assert run.rows.empty and not list((tmp_path / "raw").glob("*.parquet"))
        store.close()


def _processes(svc):
    import psutil

    procs = [psutil.Process(pid) for pid in svc.pids()]
    return procs + [child for p in procs for child in p.children(recursive=True)]
