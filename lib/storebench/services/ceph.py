"""Ceph 16.2 (Debian packages): one mon, one mgr, one OSD, bootstrapped by hand.

location "memory": OSD objectstore memstore (objects in the OSD's RAM, saved to its tmpfs data
dir on a clean stop), mon/mgr data on tmpfs too. location "disk": bluestore on a sparse file
under the work dir. A pool ``storebench`` (32 PGs, application rados) is created at the first
start. cephx is on: client.admin's keyring is generated per work dir.

Ports: mon v2 ``port`` (3300) and v1 ``port + 3489`` (6789); mgr/OSD take ports in 6800-6899.
Sizes: STOREBENCH_CEPH_MEMSTORE_BYTES (default 8 GiB), STOREBENCH_CEPH_BLUESTORE_BYTES
(sparse file, default 64 GiB), STOREBENCH_CEPH_OSD_MEMORY_TARGET (default 4 GiB, Ceph's).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import uuid
import warnings
from pathlib import Path

from storebench.paths import conf_dir
from storebench.services.base import LocalService, render_template, tcp_open

GiB = 1 << 30
_DAEMONS = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "ceph-authtool", "monmaptool", "rados")


class CephService(LocalService):
    system = "ceph"
    default_port = 3300
    install_script = "install-ceph.sh"
    ready_timeout = 120.0
    stop_timeout = 60.0
    probe_interval = 0.5
    stop_order = ("osd.0", "mgr.x", "mon.a")
    pool = "storebench"
    pg_num = 32

    def __init__(self, workdir, location: str = "disk", port: int | None = None, host: str = "127.0.0.1",
                 netns: str | None = None):
        super().__init__(workdir, location, port, host, netns)
        self.port_v1 = 6789 + (self.port - 3300)
        self.conffile = self.dir / f"{self.name}.conf"
        self.keyring_dir = self.dir / "keyrings"
        # admin sockets: a short path (unix socket paths are limited to 107 bytes)
        key = hashlib.sha1(str(self.workdir).encode()).hexdigest()[:8]
        self.run_dir = Path(tempfile.gettempdir()) / f"storebench-{os.getuid()}" / f"ceph-{key}-{self.port}"
        self.ceph_log_dir = self.dir / f"logs-{self.port}"

    # -- install ------------------------------------------------------------------------

    def _check_installed(self) -> None:
        missing = [d for d in _DAEMONS if not shutil.which(d)]
        if missing:
            raise self._missing(", ".join(missing))

    def _ports(self) -> list[int]:
        return [self.port, self.port_v1]

    # -- config -------------------------------------------------------------------------

    @property
    def admin_keyring(self) -> Path:
        return self.keyring_dir / "client.admin.keyring"

    def _write_conf(self, fsid: str) -> None:
        objectstore = "memstore" if self.location == "memory" else "bluestore"
        self.conffile.write_text(render_template(conf_dir() / "ceph.conf.in", {
            "FSID": fsid, "HOST": self.host, "NETWORK": f"{self.host}/32",
            "MON_PORT_V2": self.port, "MON_PORT_V1": self.port_v1,
            "KEYRING_DIR": self.keyring_dir, "RUN_DIR": self.run_dir, "LOG_DIR": self.ceph_log_dir,
            "DATA_DIR": self.data_dir, "OBJECTSTORE": objectstore,
            "OSD_FAST_SHUTDOWN": "false" if objectstore == "memstore" else "true",
            "MEMSTORE_BYTES": int(os.environ.get("STOREBENCH_CEPH_MEMSTORE_BYTES", 8 * GiB)),
            "BLUESTORE_BYTES": int(os.environ.get("STOREBENCH_CEPH_BLUESTORE_BYTES", 64 * GiB)),
            "OSD_MEMORY_TARGET": int(os.environ.get("STOREBENCH_CEPH_OSD_MEMORY_TARGET", 4 * GiB)),
        }))

    def _ceph(self, *args: str, timeout: float = 30, check: bool = True, quiet: bool = False):
        return self._run(["ceph", "-c", str(self.conffile), "--connect-timeout", "10", *args],
                         timeout=timeout, check=check, quiet=quiet)

    def _daemon(self, kind: str, ident: str) -> None:
        label = f"{kind}.{ident}"
        self._spawn(label, [f"ceph-{kind}", "-f", "-c", str(self.conffile), "-i", ident,
                            *(self.extra_args if kind == "mon" else [])],
                    log_file=self.ceph_log_dir / f"{label}.stdout.log")

    # -- start --------------------------------------------------------------------------

    def _launch(self) -> None:
        for d in (self.keyring_dir, self.run_dir, self.ceph_log_dir, self.data_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.keyring_dir.chmod(0o700)
        fsid_file = self.data_dir / "fsid"
        fresh = not (self.data_dir / "mon.a" / "store.db").exists()
        if fresh:
            shutil.rmtree(self.data_dir, ignore_errors=True)
            self.data_dir.mkdir(parents=True)
            fsid_file.write_text(str(uuid.uuid4()) + "\n")
        fsid = fsid_file.read_text().strip()
        self._write_conf(fsid)
        if not self.admin_keyring.exists():
            self._run(["ceph-authtool", "--create-keyring", str(self.admin_keyring), "--gen-key",
                       "-n", "client.admin", "--cap", "mon", "allow *", "--cap", "osd", "allow *",
                       "--cap", "mgr", "allow *", "--cap", "mds", "allow *"])
            self.admin_keyring.chmod(0o600)
        if fresh:
            self._mkfs_mon(fsid)
        self._daemon("mon", "a")
        # (the port check first: a mon that died is then noticed at once, not after a CLI timeout)
        self._wait_until("answering (mon)", lambda: tcp_open(self.port, self.host) and self._ceph(
            "mon", "stat", timeout=15, check=False, quiet=True).returncode == 0, 60)
        if fresh:
            self._ceph("config", "set", "mon", "auth_allow_insecure_global_id_reclaim", "false", check=False)
            mgr_dir = self.data_dir / "mgr.x"
            mgr_dir.mkdir(exist_ok=True)
            self._ceph("auth", "get-or-create", "mgr.x", "mon", "allow profile mgr", "osd", "allow *",
                       "mds", "allow *", "-o", str(mgr_dir / "keyring"))
        self._daemon("mgr", "x")
        if fresh:
            self._mkfs_osd()
        self._daemon("osd", "0")
        if fresh:
            self._ceph("osd", "pool", "create", self.pool, str(self.pg_num), str(self.pg_num))
            self._ceph("osd", "pool", "application", "enable", self.pool, "rados")

    def _mkfs_mon(self, fsid: str) -> None:
        boot = self.data_dir / "mon-bootstrap.keyring"
        self._run(["ceph-authtool", "--create-keyring", str(boot), "--gen-key", "-n", "mon.",
                   "--cap", "mon", "allow *"])
        self._run(["ceph-authtool", str(boot), "--import-keyring", str(self.admin_keyring)])
        monmap = self.data_dir / "monmap"
        self._run(["monmaptool", "--create", "--clobber", "--fsid", fsid, "--addv", "a",
                   f"[v2:{self.host}:{self.port},v1:{self.host}:{self.port_v1}]", str(monmap)])
        self._run(["ceph-mon", "-c", str(self.conffile), "--mkfs", "-i", "a", "--monmap", str(monmap),
                   "--keyring", str(boot)])
        boot.unlink()

    def _mkfs_osd(self) -> None:
        osd_uuid = str(uuid.uuid4())
        secret = self._run(["ceph-authtool", "--gen-print-key"]).stdout.decode().strip()
        osd_dir = self.data_dir / "osd.0"
        osd_dir.mkdir(exist_ok=True)
        secret_json = osd_dir / "new-osd.json"
        secret_json.write_text(json.dumps({"cephx_secret": secret}))
        out = self._ceph("osd", "new", osd_uuid, "0", "-i", str(secret_json)).stdout.decode().strip()
        secret_json.unlink()
        if out.splitlines()[-1:] != ["0"]:
            raise self._error(f"`ceph osd new` returned {out!r}, expected OSD id 0")
        self._run(["ceph-authtool", "--create-keyring", str(osd_dir / "keyring"), "--name", "osd.0",
                   "--add-key", secret])
        self._run(["ceph-osd", "-c", str(self.conffile), "-i", "0", "--mkfs", "--osd-uuid", osd_uuid],
                  timeout=120)

    # -- readiness ------------------------------------------------------------------------

    def connect(self, timeout: int = 10):
        """A connected ``rados.Rados`` handle (needs the rados binding: install-ceph.sh)."""
        import rados

        r = rados.Rados(conffile=str(self.conffile), name="client.admin",
                        conf={"keyring": str(self.admin_keyring),
                              "client_mount_timeout": str(timeout),
                              "rados_osd_op_timeout": str(timeout),
                              "rados_mon_op_timeout": str(timeout)})
        r.connect(timeout=timeout)
        return r

    def _probe(self) -> bool:
        # a real write + read of an object in the pool, then all PGs active
        payload = os.urandom(64)
        try:
            import rados  # noqa: F401
        except ImportError:
            rados = None
        if rados is not None:
            r = self.connect(timeout=5)
            try:
                with r.open_ioctx(self.pool) as io:
                    io.write_full("storebench-probe", payload)
                    ok = io.read("storebench-probe", 1024) == payload
                    io.remove_object("storebench-probe")
            finally:
                r.shutdown()
        else:
            probe = self.dir / "probe.bin"
            probe.write_bytes(payload)
            base = ["rados", "-c", str(self.conffile), "-p", self.pool]
            self._run([*base, "put", "storebench-probe", str(probe)], timeout=10, quiet=True)
            self._run([*base, "get", "storebench-probe", str(probe) + ".out"], timeout=10, quiet=True)
            ok = Path(str(probe) + ".out").read_bytes() == payload
            self._run([*base, "rm", "storebench-probe"], timeout=10, quiet=True)
        if not ok:
            return False
        stat = json.loads(self._ceph("pg", "stat", "--format", "json", quiet=True).stdout)
        summary = stat.get("pg_summary", stat)
        by_state = summary.get("num_pg_by_state", [])
        total = summary.get("num_pgs", 0)
        active = sum(s["num"] for s in by_state if "active" in s["name"].split("+"))
        return total > 0 and active == total

    def version(self) -> str:
        out = self._ceph("versions", "--format", "json", quiet=True).stdout.decode()
        overall = json.loads(out).get("overall", {})
        text = next(iter(overall), "")
        m = re.match(r"ceph version (\S+) \(\w+\) (\w+)", text)
        return f"{m.group(1)} ({m.group(2)})" if m else text

    def _after_crash(self) -> None:
        # memstore writes its objects out only on a clean stop: after a crash the OSD's saved
        # state no longer matches the mon's maps and the PGs never become active. The data
        # is gone anyway, so start from an empty cluster.
        if self.location == "memory" and self.data_dir.exists():
            msg = (f"{self.system}: the memstore data of the crashed run is lost (it is saved only by a "
                   f"clean stop): starting from an empty cluster in {self.data_dir}")
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def _fix_hint(self) -> str:
        return (f"the daemons' own logs are in {self.ceph_log_dir} (mon.a.log, mgr.x.log, osd.0.log); "
                + super()._fix_hint())

    def health(self) -> str:
        return self._ceph("health", "detail").stdout.decode().strip()

    def endpoint(self) -> dict:
        return {"system": self.system, "host": self.host, "port": self.port,
                "mon_host": f"[v2:{self.host}:{self.port},v1:{self.host}:{self.port_v1}]",
                "conffile": str(self.conffile), "keyring": str(self.admin_keyring),
                "name": "client.admin", "pool": self.pool,
                "objectstore": "memstore" if self.location == "memory" else "bluestore"}

    def wipe(self) -> None:
        super().wipe()
        shutil.rmtree(self.run_dir, ignore_errors=True)
