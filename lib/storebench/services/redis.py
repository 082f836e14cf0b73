"""Redis 7 (Debian's redis-server), one process, password from the work dir's credentials."""
from __future__ import annotations

import secrets
import shutil

from storebench.paths import conf_dir
from storebench.services.base import LocalService, render_template


class RedisService(LocalService):
    system = "redis"
    default_port = 6379
    install_script = "install-redis.sh"
    ready_timeout = 120.0   # loading a large dump.rdb at start counts as "not ready" (LOADING)
    stop_timeout = 300.0    # SIGTERM writes dump.rdb first (shutdown-on-sigterm save)

    def _new_credentials(self) -> dict:
        return {"password": secrets.token_urlsafe(24)}

    def _binary(self) -> str:
        path = shutil.which("redis-server")
        if not path:
            raise self._missing("redis-server")
        return path

    def _check_installed(self) -> None:
        self._binary()

    def _launch(self) -> None:
        conf = self.dir / f"{self.name}.conf"
        text = render_template(conf_dir() / "redis.conf.in", {
            "PORT": self.port, "HOST": self.host, "PASSWORD": self.credentials()["password"],
            "DATA_DIR": self.data_dir,
        })
        conf.write_text(text)
        conf.chmod(0o600)  # holds the password
        self._spawn("redis-server", [self._binary(), str(conf), *self.extra_args])

    def client(self, **kwargs):
        import redis

        ep = self.endpoint()
        return redis.Redis(host=ep["host"], port=ep["port"], password=ep["password"], **kwargs)

    def _probe(self) -> bool:
        c = self.client(socket_timeout=2, socket_connect_timeout=1)
        try:
            return bool(c.ping())   # raises BusyLoadingError while loading the dump
        finally:
            c.close()

    def version(self) -> str:
        c = self.client(socket_timeout=5)
        try:
            return str(c.info("server")["redis_version"])
        finally:
            c.close()

    def endpoint(self) -> dict:
        return {"system": self.system, "host": self.host, "port": self.port,
                "password": self.credentials()["password"],
                "url": f"redis://:{self.credentials()['password']}@{self.host}:{self.port}/0"}
