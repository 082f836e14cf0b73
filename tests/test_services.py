"""Real local servers: start/ready/version/stop, restart keeps data, stale pidfiles, failures.

Needs the servers installed (`make env` runs env/servers/install-all.sh); a system that is not
installed fails its tests with the install hint. Ports are offset from the defaults so that a user's own servers do not interfere.
Run: ``.venv/bin/python -m pytest -m server tests/test_services.py`` (~1-1.5 min).
"""
from __future__ import annotations

import gc
import io
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from storebench.services import LOCAL_SERVICES, ServiceError, local_service

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.

PORTS = {"redis": 16379, "mongodb-ferretdb": 27117, "minio": 19000, "cassandra": 19042, "ceph": 13300,
         "rgw": 17480}


def _service(system, workdir, location="disk", port=None):
    svc = local_service(system, workdir, location, port or PORTS[system])
    try:
        svc._check_installed()
    except ServiceError as exc:
        pytest.fail(f"{system} not installed: {exc.hint}")
    return svc


def _gone(pids) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            pass
    return True


def _wait_port_free(port: int, timeout: float = 10.0) -> bool:
    from storebench.services.base import port_in_use

    deadline = time.monotonic() + timeout
    while port_in_use(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not port_in_use(port)


def _wait_gone(pids, timeout=10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pids):
            return True
        time.sleep(0.05)
    return _gone(pids)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("services")  # its servers' tmpfs data: freed by conftest at the session's end


# ---------------------------------------------------------------- client round trips

def _write(system, svc, key: str, value: bytes) -> None:
    if system == "redis":
        c = svc.client()
        c.hset("storebench:test", key, value)
        c.close()
    elif system == "mongodb-ferretdb":
        c = svc.client()
        c.storebench.test.replace_one({"_id": key}, {"_id": key, "v": value}, upsert=True)
        c.close()
    elif system == "minio":
        m = svc.client()
        if not m.bucket_exists("storebench-test"):
            m.make_bucket("storebench-test")
        m.put_object("storebench-test", key, io.BytesIO(value), len(value))
    elif system == "cassandra":
        cluster = svc.cluster()
        s = cluster.connect()
        s.execute("CREATE KEYSPACE IF NOT EXISTS sbtest WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS sbtest.kv (k text PRIMARY KEY, v blob)")
        s.execute("INSERT INTO sbtest.kv (k, v) VALUES (%s, %s)", (key, value))
        cluster.shutdown()
    elif system == "ceph":
        r = svc.connect()
        with r.open_ioctx(svc.endpoint()["pool"]) as ioctx:
            ioctx.write_full(key, value)
        r.shutdown()


def _read(system, svc, key: str) -> bytes | None:
    if system == "redis":
        c = svc.client()
        try:
            return c.hget("storebench:test", key)
        finally:
            c.close()
    if system == "mongodb-ferretdb":
        c = svc.client()
        try:
            doc = c.storebench.test.find_one({"_id": key})
            return bytes(doc["v"]) if doc else None
        finally:
            c.close()
    if system == "minio":
        resp = svc.client().get_object("storebench-test", key)
        try:
            return resp.read()
        finally:
            resp.close()
            resp.release_conn()
    if system == "cassandra":
        cluster = svc.cluster()
        try:
            row = cluster.connect().execute("SELECT v FROM sbtest.kv WHERE k = %s", (key,)).one()
            return bytes(row.v) if row else None
        finally:
            cluster.shutdown()
    if system == "ceph":
        r = svc.connect()
        try:
            with r.open_ioctx(svc.endpoint()["pool"]) as ioctx:
                return ioctx.read(key, 1 << 20)
        finally:
            r.shutdown()
    raise AssertionError(system)


def _check_version(system, version: str) -> None:
    expected = {"redis": "7.", "mongodb-ferretdb": "FerretDB v1.", "minio": "", "cassandra": "5.0.",
                "ceph": "16.2."}[system]
    assert version and version.startswith(expected), version


# ---------------------------------------------------------------- fast servers

@pytest.mark.server
@pytest.mark.parametrize("location", ["memory", "disk"])
@pytest.mark.parametrize("system", ["redis", "mongodb-ferretdb", "minio"])
def test_start_write_read_restart_stop(system, location, workdir):
    svc = _service(system, workdir, location)
    svc.wipe()
    with svc:
        assert svc.startup_seconds < 30
        pids = svc.pids()
        assert pids and svc.pidfile.exists() and svc.rss_bytes() > 0
        _check_version(system, svc.version())
        _write(system, svc, "k1", b"\x00value\xff")
        assert _read(system, svc, "k1") == b"\x00value\xff"
        ep = svc.endpoint()
        assert ep["host"] == "127.0.0.1" and ep["port"] == PORTS[system]
    assert _wait_gone(pids), f"{system} processes left after stop: {pids}"
    assert not svc.pidfile.exists()
    svc.stop()  # idempotent
    # restart on the same data keeps it
    with _service(system, workdir, location) as again:
        assert _read(system, again, "k1") == b"\x00value\xff"
    again.wipe()
    assert not again.data_dir.exists()


@pytest.mark.server
def test_memory_location_is_tmpfs(workdir):
    from storebench.paths import memory_dir

    svc = _service("redis", workdir, "memory")
    assert str(svc.data_dir).startswith(str(memory_dir()))
    assert str(_service("redis", workdir, "disk").data_dir).startswith(str(workdir))


@pytest.mark.server
def test_wrong_password_is_an_auth_error(workdir):
    import redis

    with _service("redis", workdir, "memory") as svc:
        bad = redis.Redis(host="127.0.0.1", port=svc.port, password="not-the-password")
        with pytest.raises(redis.AuthenticationError):
            bad.ping()
        with socket.create_connection(("127.0.0.1", svc.port), timeout=5) as s:  # no password
            s.sendall(b"GET x\r\n")
            assert s.recv(100).startswith(b"-NOAUTH")


@pytest.mark.server
def test_credentials_are_per_workdir_and_private(workdir):
    svc = _service("redis", workdir)
    path = svc.dir / "credentials.json"
    pw = svc.credentials()["password"]
    assert path.exists() and (path.stat().st_mode & 0o077) == 0
    assert len(pw) >= 20 and svc.credentials()["password"] == pw


@pytest.mark.server
def test_stale_pidfile_after_kill_9(workdir):
    svc = _service("redis", workdir, "memory").start()
    (pid,) = svc.pids()
    os.kill(pid, signal.SIGKILL)
    assert _wait_gone([pid])
    assert svc.pidfile.exists()
    # The killed server's half of our client connections lingers (FIN_WAIT2) on its port while this process
    # still holds the other half; a restart after a real crash runs in another process. Close ours, let it go.
    gc.collect()
    assert _wait_port_free(svc.port), f"port {svc.port} still held after the server was killed"
    again = _service("redis", workdir, "memory")
    with pytest.warns(RuntimeWarning, match="stale pidfile from a crashed run, removed"):
        again.start()
    try:
        assert again.pids() and again.pids() != [pid]
        assert again.client().ping()
    finally:
        again.stop()
        svc.stop()


@pytest.mark.server
def test_still_running_server_is_not_reused(workdir):
    with _service("redis", workdir, "memory") as first:
        second = _service("redis", workdir, "memory")
        with pytest.raises(ServiceError, match="still running") as err:
            second.start()
        assert str(first.pids()[0]) in str(err.value)
        assert "python -m storebench.services stop redis" in str(err.value)
        assert first.client().ping()  # untouched


@pytest.mark.server
def test_port_taken(workdir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        svc = _service("redis", workdir, "memory", port=port)
        with pytest.raises(ServiceError, match=f"port {port} .* already in use") as err:
            svc.start()
        assert str(svc.log_file) in str(err.value)


@pytest.mark.server
def test_server_exiting_during_startup_fails_fast_with_log(workdir):
    svc = _service("redis", workdir, "memory")
    svc.extra_args = ["--no-such-directive", "yes"]   # a broken config
    t0 = time.monotonic()
    with pytest.raises(ServiceError) as err:
        svc.start()
    assert time.monotonic() - t0 < 10
    msg = str(err.value)
    assert "exited with code" in msg and str(svc.log_file) in msg
    assert "no-such-directive" in msg      # the log tail is in the message
    assert not svc.pidfile.exists() and not svc.pids()


def test_missing_install_names_the_script(workdir, tmp_path, monkeypatch):
    monkeypatch.setenv("STOREBENCH_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    svc = local_service("minio", workdir, "memory", PORTS["minio"])
    with pytest.raises(ServiceError, match="install-minio.sh"):
        svc.start()


def test_unknown_system():
    with pytest.raises(ValueError, match="redis, cassandra, minio, mongodb-ferretdb, ceph"):
        local_service("postgres", "/tmp", "disk")
    assert set(LOCAL_SERVICES) == {"redis", "cassandra", "minio", "mongodb-ferretdb", "ceph", "rgw"}


# ---------------------------------------------------------------- no orphans, CLI

_CHILD = textwrap.dedent("""
    import sys, time
    from storebench.services import local_service
    svc = local_service("redis", sys.argv[1], "memory", int(sys.argv[2])).start()
    print(svc.pids()[0], flush=True)
    time.sleep(60)
""")


@pytest.mark.server
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_orphan_when_python_dies(sig, workdir):
    _service("redis", workdir)
    port = PORTS["redis"] + 1
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(workdir), str(port)],
                             stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(child.stdout.readline())
        assert psutil.pid_exists(server_pid)
        child.send_signal(sig)
        child.wait(timeout=20)
        assert _wait_gone([server_pid]), f"redis {server_pid} survived {sig.name} of its Python process"
    finally:
        child.kill()
        local_service("redis", workdir, "memory", port).stop()


@pytest.mark.server
def test_a_forked_child_ending_leaves_its_parents_servers_running(workdir):
    """A DataLoader worker is a fork: it inherits the stop-at-exit handlers, and its SIGTERM or
    exit must not stop the servers its parent started."""
    import multiprocessing

    svc = _service("redis", workdir, "memory", PORTS["redis"] + 3).start()
    try:
        for target in (lambda: os.kill(os.getpid(), signal.SIGTERM), lambda: sys.exit(0)):
            child = multiprocessing.get_context("fork").Process(target=target)
            child.start()
            child.join(timeout=20)
            assert svc.is_running() and svc.version()
    finally:
        svc.stop()


@pytest.mark.server
def test_cli_start_status_stop(workdir):
    _service("redis", workdir)
    port = PORTS["redis"] + 2
    cli = [sys.executable, "-m", "storebench.services"]
    common = ["redis", "--port", str(port), "--workdir", str(workdir)]
    out = subprocess.run([*cli, "start", *common, "--location", "memory"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    svc = local_service("redis", workdir, "memory", port)
    pids = svc.pids()
    assert pids, "server did not survive the CLI process (start must detach)"
    status = subprocess.run([*cli, "status", *common], capture_output=True, text=True, timeout=30)
    assert "running" in status.stdout and str(pids[0]) in status.stdout
    ver = subprocess.run([*cli, "version", *common], capture_output=True, text=True, timeout=30)
    assert "7." in ver.stdout
    stop = subprocess.run([*cli, "stop", "redis", "--workdir", str(workdir)], capture_output=True,
                          text=True, timeout=60)
    assert stop.returncode == 0, stop.stderr
    assert _wait_gone(pids)
    status = subprocess.run([*cli, "status", *common], capture_output=True, text=True, timeout=30)
    assert "not running" in status.stdout and status.returncode == 3


# ---------------------------------------------------------------- slow servers (one start each)

@pytest.fixture(scope="module")
def cassandra(workdir):
    svc = _service("cassandra", workdir, "disk")
    svc.wipe()
    svc.start()
    yield svc
    svc.stop()
    svc.wipe()


@pytest.mark.server
def test_cassandra(cassandra):
    assert cassandra.startup_seconds < 120
    _check_version("cassandra", cassandra.version())
    _write("cassandra", cassandra, "k1", b"\x00cassandra")
    assert _read("cassandra", cassandra, "k1") == b"\x00cassandra"


@pytest.mark.server
def test_cassandra_restart_keeps_data(cassandra):
    _write("cassandra", cassandra, "k2", b"kept")
    pids = cassandra.pids()
    cassandra.stop()
    assert _wait_gone(pids) and not cassandra.pids()
    cassandra.start()
    assert _read("cassandra", cassandra, "k2") == b"kept"


@pytest.fixture(scope="module")
def ceph(workdir):
    svc = _service("ceph", workdir, "memory")
    import rados  # noqa: F401  (env/servers/install-ceph.sh puts it on the venv's path)
    svc.wipe()
    svc.start()
    yield svc
    svc.stop()
    svc.wipe()


@pytest.mark.server
def test_ceph(ceph):
    assert len(ceph.pids()) == 3   # mon, mgr, osd
    _check_version("ceph", ceph.version())
    _write("ceph", ceph, "obj1", b"\x00rados")
    assert _read("ceph", ceph, "obj1") == b"\x00rados"
    assert ceph.endpoint()["objectstore"] == "memstore"


@pytest.mark.server
def test_the_rados_client_version_is_debians_package_of_the_servers_release(ceph):
    import re

    from storebench.core.provenance import package_version

    client = package_version("rados")  # no PyPI metadata: python3-rados comes from Debian
    assert client.endswith("(Debian python3-rados)")
    release = re.search(r"(\d+\.\d+)\.\d+", ceph.version()).group(1)
    assert client.startswith(release + "."), (client, ceph.version())


@pytest.mark.server
def test_ceph_restart_keeps_data(ceph):
    _write("ceph", ceph, "obj2", b"kept")
    pids = ceph.pids()
    ceph.stop()
    assert _wait_gone(pids)
    ceph.start()
    assert _read("ceph", ceph, "obj2") == b"kept"


@pytest.mark.server
def test_rgw_starts_on_its_own_ceph_on_loopback_and_stops_by_pid(workdir):
    """RGW brings up its own Ceph (mon, mgr, osd) and radosgw, all listening on 127.0.0.1 only;
    a real S3 call works with the generated keys; stop() ends every one of those processes."""
    svc = _service("rgw", workdir, "memory")
    svc.wipe()
    with svc:
        pids = svc.pids()
        assert len(pids) == 4   # radosgw + mon, mgr, osd
        assert svc.version().startswith("16.2.")
        listening = {c.laddr.ip for pid in pids for c in psutil.Process(pid).net_connections("inet")
                     if c.status == psutil.CONN_LISTEN}
        assert listening and all(ip.startswith("127.") for ip in listening), listening
        s3 = svc.client()
        s3.make_bucket("storebench-test")
        s3.put_object("storebench-test", "k1", io.BytesIO(b"\x00rgw"), 4)
        assert s3.get_object("storebench-test", "k1").read() == b"\x00rgw"
        assert svc.bucket_usage("storebench-test") == 4096   # RGW rounds each object up to 4 KiB
    assert _wait_gone(pids), f"rgw/ceph processes left after stop: {pids}"
    assert not svc.pidfile.exists() and not svc.ceph.pidfile.exists()
    svc.wipe()



def test_a_port_offset_moves_every_default_port(monkeypatch, tmp_path):
    from storebench.services import local_service

    monkeypatch.setenv("STOREBENCH_PORT_OFFSET", "20000")
    cassandra = local_service("cassandra", tmp_path)
    assert (cassandra.port, cassandra.storage_port, cassandra.jmx_port) == (29042, 27000, 27199)
    assert local_service("minio", tmp_path).port == 29000 and local_service("redis", tmp_path, port=7000).port == 7000
    monkeypatch.setenv("STOREBENCH_PORT_OFFSET", "-1")
    with pytest.raises(ValueError, match="STOREBENCH_PORT_OFFSET must be an integer"):
        local_service("redis", tmp_path)


@pytest.mark.server
def test_a_pool_frees_its_memory_servers_data_when_it_moves_on_and_closes(tmp_path, default_ports_free):
    from storebench.stores.systems import ServicePool

    with ServicePool(workdir=tmp_path) as pool:
        _, memory = pool.endpoint("redis", "memory")
        assert memory.data_dir.exists()
        _, disk = pool.endpoint("redis", "disk-warm")  # one server at a time: the memory one goes, its data too
        assert not memory.data_dir.exists() and disk.data_dir.exists()
        _, memory = pool.endpoint("redis", "memory")
    assert not memory.data_dir.exists()
    assert disk.data_dir.exists()  # on disk, data stays where the user can look at it
