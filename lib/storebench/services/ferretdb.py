"""MongoDB API through FerretDB v1 with its SQLite backend (no real mongod is installable here).

Results must name it "MongoDB API (FerretDB/SQLite)", not MongoDB. FerretDB v1 with SQLite
has no authentication unless set up with --setup-username; loopback-only, so none is used.
"""
from __future__ import annotations


from storebench.services.base import LocalService, tcp_open


class FerretDBService(LocalService):
    system = "mongodb-ferretdb"
    default_port = 27017
    install_script = "install-ferretdb.sh"
    ready_timeout = 30.0
    backend = "SQLite"  # named in every row's system version: FerretDB's speed is its backend's

    @property
    def debug_port(self) -> int:
        """FerretDB's HTTP debug handlers (/debug/readyz, metrics): port + 1000."""
        return self.port + 1000

    def _binary(self) -> str:
        return self._built_binary("ferretdb")

    def _check_installed(self) -> None:
        self._binary()

    def _ports(self) -> list[int]:
        return [self.port, self.debug_port]

    def _launch(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._spawn("ferretdb", [
            self._binary(),
            "--handler=sqlite",
            f"--sqlite-url=file:{self.data_dir}/",     # one SQLite file per database
            f"--listen-addr={self.host}:{self.port}",
            f"--state-dir={self.data_dir}",
            "--telemetry=disable",
            f"--debug-addr={self.host}:{self.debug_port}",
            "--log-level=info",
            *self.extra_args,
        ], env={"FERRETDB_TELEMETRY": "disable", "DO_NOT_TRACK": "1"})

    def client(self, **kwargs):
        import pymongo

        kwargs.setdefault("serverSelectionTimeoutMS", 5000)
        return pymongo.MongoClient(self.endpoint()["uri"], **kwargs)

    def _probe(self) -> bool:
        if not tcp_open(self.port, self.host):
            return False
        c = self.client(serverSelectionTimeoutMS=500, connectTimeoutMS=500)
        try:
            return c.admin.command("ping").get("ok") == 1
        finally:
            c.close()

    def version(self) -> str:
        c = self.client()
        try:
            info = c.admin.command("buildInfo")
        finally:
            c.close()
        ferret = info.get("ferretdbVersion") or info.get("ferretdb", {}).get("version") or "?"
        return f"FerretDB {ferret} ({self.backend} backend)"

    def endpoint(self) -> dict:
        return {"system": self.system, "host": self.host, "port": self.port,
                "uri": f"mongodb://{self.host}:{self.port}/?directConnection=true",
                "username": None, "password": None,
                "label": f"MongoDB API (FerretDB/{self.backend})", "backend": self.backend,
                "readyz_url": f"http://{self.host}:{self.debug_port}/debug/readyz"}
