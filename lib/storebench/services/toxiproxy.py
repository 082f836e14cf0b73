"""Toxiproxy (Shopify): a TCP proxy that adds latency, bandwidth limits and faults in user
space, built by install-toxiproxy.sh. storebench's network profiles and fault tests put it
between a client and a server (this kernel has no ``sch_netem``).

    with ToxiproxyService(workdir) as proxy:
        api = proxy.api()
        listen = api.create_proxy("redis", upstream="127.0.0.1:6379")   # -> "127.0.0.1:41234"
        api.add_toxic("redis", "latency", {"latency": 20}, stream="downstream")

Its HTTP API listens on ``host``:``port`` (127.0.0.1:8474 by default); proxies it makes listen
on 127.0.0.1 with a port the kernel picks. No credentials: the API is reachable from this
machine only.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from storebench.paths import cache_dir
from storebench.services.base import LocalService


class ToxiproxyError(RuntimeError):
    """The Toxiproxy API refused a request; the message has its answer."""


class ToxiproxyAPI:
    """The few calls of Toxiproxy's HTTP API that storebench uses."""

    def __init__(self, url: str, timeout: float = 10.0):
        self.url, self.timeout = url.rstrip("/"), timeout

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                text = response.read().decode()
        except urllib.error.HTTPError as error:
            raise ToxiproxyError(f"toxiproxy at {self.url}: {method} {path} -> {error.code} "
                                 f"{error.read().decode(errors='replace').strip()}") from None
        return json.loads(text) if text.strip() else None

    def version(self) -> str:
        return str(self._call("GET", "/version")["version"])

    def create_proxy(self, name: str, upstream: str, listen: str = "127.0.0.1:0") -> str:
        """Make proxy ``name`` forwarding to ``upstream`` ("host:port"); returns where it listens."""
        return self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream,
                                                "enabled": True})["listen"]

    def delete_proxy(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}")

    def proxies(self) -> dict:
        return self._call("GET", "/proxies")

    def add_toxic(self, proxy: str, kind: str, attributes: dict, stream: str = "downstream",
                  name: str | None = None, toxicity: float = 1.0) -> str:
        """Add a toxic (latency, bandwidth, timeout, reset_peer, ...) to ``stream``
        ("downstream": server -> client, "upstream": client -> server); returns its name.
        It applies to the proxy's open connections too."""
        name = name or f"{kind}_{stream}"
        self._call("POST", f"/proxies/{proxy}/toxics", {"name": name, "type": kind, "stream": stream,
                                                         "toxicity": toxicity, "attributes": attributes})
        return name

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")


class ToxiproxyService(LocalService):
    system = "toxiproxy"
    default_port = 8474
    install_script = "install-toxiproxy.sh"
    ready_timeout = 20.0
    stop_timeout = 10.0

    def _binary(self) -> str:
        return self._built_binary("toxiproxy-server")

    def _check_installed(self) -> None:
        self._binary()

    def _launch(self) -> None:
        self._spawn("toxiproxy", [self._binary(), "-host", self.host, "-port", str(self.port), *self.extra_args])

    def api(self, timeout: float = 10.0) -> ToxiproxyAPI:
        return ToxiproxyAPI(self.endpoint()["url"], timeout)

    def _probe(self) -> bool:
        self.api(timeout=1.0).version()
        return True

    def version(self) -> str:
        """The API's version; a `go install` build reports "git", so the module version that
        install-toxiproxy.sh recorded is added."""
        reported = self.api().version()
        stamp = cache_dir() / "bin" / "toxiproxy-server.version"
        if stamp.exists():
            return f"{reported} ({stamp.read_text().strip()})"
        return reported

    def endpoint(self) -> dict:
        return {"system": self.system, "host": self.host, "port": self.port,
                "url": f"http://{self.host}:{self.port}"}
