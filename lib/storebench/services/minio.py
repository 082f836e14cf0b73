"""MinIO (S3 API), single drive, built from the Go module proxy by install-minio.sh.

Root user/password are generated per work dir. The web console is off (MINIO_BROWSER=off).
"""
from __future__ import annotations

import secrets

from storebench.core.provenance import build_identifier
from storebench.paths import cache_dir
from storebench.services.base import LocalService


class MinioService(LocalService):
    system = "minio"
    default_port = 9000
    install_script = "install-minio.sh"
    ready_timeout = 60.0

    @property
    def console_port(self) -> int:
        return self.port + 1

    def _new_credentials(self) -> dict:
        return {"access_key": "storebench-" + secrets.token_hex(6),
                "secret_key": secrets.token_urlsafe(30)}

    def _binary(self) -> str:
        return self._built_binary("minio")

    def _check_installed(self) -> None:
        self._binary()

    def _ports(self) -> list[int]:
        return [self.port, self.console_port]

    def _launch(self) -> None:
        creds = self.credentials()
        self._spawn("minio", [
            self._binary(), "server", str(self.data_dir),
            "--address", f"{self.host}:{self.port}",
            "--console-address", f"{self.host}:{self.console_port}",
            "--quiet", "--anonymous",
            *self.extra_args,
        ], env={
            "MINIO_ROOT_USER": creds["access_key"],
            "MINIO_ROOT_PASSWORD": creds["secret_key"],
            "MINIO_BROWSER": "off",          # no web console
            "MINIO_UPDATE": "off",           # never look for updates
            "MINIO_CI_CD": "1",              # allow drives on the root filesystem / tmpfs
        })

    def client(self, timeout: float = 30.0, retries: int = 3):
        """A ``minio.Minio`` client for this server."""
        import urllib3
        from minio import Minio

        ep = self.endpoint()
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=min(timeout, 5.0), read=timeout), maxsize=16,
            retries=urllib3.Retry(total=retries, backoff_factor=0.2,
                                  status_forcelist=[500, 502, 503, 504]))
        return Minio(f"{ep['host']}:{ep['port']}", access_key=ep["access_key"],
                     secret_key=ep["secret_key"], secure=False, region=ep["region"], http_client=http)

    def _probe(self) -> bool:
        self.client(timeout=2.0, retries=0).list_buckets()   # a signed S3 request
        return True

    def version(self) -> str:
        """Server-reported version (admin info); for a `go install` build that is
        "DEVELOPMENT.GOGET", so the commit and date of the module version recorded by
        install-minio.sh name the build instead (provenance.build_identifier)."""
        from minio.credentials import StaticProvider
        from minio.minioadmin import MinioAdmin
        import json

        ep = self.endpoint()
        admin = MinioAdmin(endpoint=f"{ep['host']}:{ep['port']}",
                           credentials=StaticProvider(ep["access_key"], ep["secret_key"]),
                           secure=False)
        info = json.loads(admin.info())
        servers = info.get("servers") or [{}]
        reported = servers[0].get("version", "?")
        stamp = cache_dir() / "bin" / "minio.version"
        if reported.startswith("DEVELOPMENT") and stamp.exists():
            module = stamp.read_text().split()
            return build_identifier(f"{reported} ({' '.join(module)})")
        return reported

    def endpoint(self) -> dict:
        creds = self.credentials()
        return {"system": self.system, "host": self.host, "port": self.port,
                "url": f"http://{self.host}:{self.port}", "secure": False, "region": "us-east-1",
                "access_key": creds["access_key"], "secret_key": creds["secret_key"]}
