"""Ceph RGW (the S3 API on RADOS, Debian's radosgw) on a single-node Ceph cluster of its own.

RGW starts its own Ceph (storebench.services.ceph) under ``<workdir>/rgw/`` with mon port
``port - 4170`` (3310 for RGW's default 7480), so ServicePool sees one service, "rgw", to start
and stop, and it can run beside a plain "ceph" service (the test session does). Location is
Ceph's: memory = memstore, disk = bluestore on a sparse file. radosgw creates its pools itself.

radosgw's beast frontend needs ``tcp_nodelay=1``: without it every small GET stalls ~45 ms
(Nagle's algorithm meeting delayed ACKs). An S3 user with generated keys is made per work dir.
"""
from __future__ import annotations

import json
import secrets
import shutil

from storebench.services.base import LocalService, tcp_open
from storebench.services.ceph import CephService

_BINARIES = ("radosgw", "radosgw-admin")


class RgwService(LocalService):
    system = "rgw"
    default_port = 7480
    install_script = "install-ceph.sh"
    ready_timeout = 120.0
    probe_interval = 0.5
    client_name = "client.rgw.x"
    user = "storebench"

    def __init__(self, workdir, location: str = "disk", port: int | None = None, host: str = "127.0.0.1",
                 netns: str | None = None):
        super().__init__(workdir, location, port, host, netns)
        self.ceph = CephService(self.dir, location, self.port - 4170, host, netns)

    def _check_installed(self) -> None:
        self.ceph._check_installed()
        missing = [b for b in _BINARIES if not shutil.which(b)]
        if missing:
            raise self._missing(", ".join(missing))

    def _new_credentials(self) -> dict:
        return {"access_key": "storebench-" + secrets.token_hex(6), "secret_key": secrets.token_urlsafe(30)}

    # -- start ----------------------------------------------------------------------------

    def _launch(self) -> None:
        self.ceph.start(detach=self._detached)
        keyring = self.ceph.keyring_dir / f"{self.client_name}.keyring"
        self.ceph._ceph("auth", "get-or-create", self.client_name, "mon", "allow rw", "osd", "allow rwx",
                        "-o", str(keyring))
        keyring.chmod(0o600)
        self._spawn("radosgw", [
            "radosgw", "-f", "-c", str(self.ceph.conffile), "-n", self.client_name, "-k", str(keyring),
            "--rgw-frontends", f"beast endpoint={self.host}:{self.port} tcp_nodelay=1",
            "--rgw-data", str(self.data_dir), *self.extra_args])
        self._wait_until("answering HTTP", lambda: tcp_open(self.port, self.host), self.ready_timeout)
        self._make_user()

    def _make_user(self) -> None:
        creds = self.credentials()
        info = self._admin("user", "info", "--uid", self.user, check=False)
        if info.returncode == 0:
            return  # a restart on the same data: the user (and its keys) are kept in RADOS
        self._admin("user", "create", "--uid", self.user, "--display-name", self.user,
                    "--access-key", creds["access_key"], "--secret", creds["secret_key"])

    def _admin(self, *args: str, check: bool = True):
        return self._run(["radosgw-admin", "-c", str(self.ceph.conffile), "-n", "client.admin",
                          "-k", str(self.ceph.admin_keyring), *args], timeout=60, check=check, quiet=True)

    def client(self, timeout: float = 30.0):
        """A ``minio.Minio`` client for this gateway (any S3 client works)."""
        import urllib3
        from minio import Minio

        ep = self.endpoint()
        http = urllib3.PoolManager(timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout),
                                   retries=urllib3.Retry(total=0))
        return Minio(f"{ep['host']}:{ep['port']}", access_key=ep["access_key"], secret_key=ep["secret_key"],
                     secure=False, region=ep["region"], http_client=http)

    def _probe(self) -> bool:
        self.client(timeout=5.0).list_buckets()  # a signed S3 request with the user's keys
        return True

    # -- state ----------------------------------------------------------------------------

    def bucket_usage(self, bucket: str) -> int:
        """RGW's own accounting of a bucket: ``size_actual`` (object sizes rounded up to 4 KiB)."""
        stats = json.loads(self._admin("bucket", "stats", "--bucket", bucket).stdout)
        return int(sum(u.get("size_actual", 0) for u in stats.get("usage", {}).values()))

    def pids(self) -> list[int]:
        return [*super().pids(), *self.ceph.pids()]

    def version(self) -> str:
        return self.ceph.version()

    def endpoint(self) -> dict:
        creds = self.credentials()
        return {"system": self.system, "host": self.host, "port": self.port,
                "url": f"http://{self.host}:{self.port}", "secure": False, "region": "us-east-1",
                "access_key": creds["access_key"], "secret_key": creds["secret_key"],
                "objectstore": self.ceph.endpoint()["objectstore"]}

    def _fix_hint(self) -> str:
        return (f"radosgw's own log is {self.ceph.ceph_log_dir}/{self.client_name}.log; "
                + self.ceph._fix_hint())

    # -- stop -----------------------------------------------------------------------------

    def stop(self) -> None:
        super().stop()
        self.ceph.stop()

    def wipe(self) -> None:
        super().wipe()
        self.ceph.wipe()
