"""Apache Cassandra 5.0 from Maven Central jars (install-cassandra.sh), run with Java 17.

A node on 127.0.0.1 (or ``host`` in a namespace); no authentication (AllowAllAuthenticator, see
env/conf/cassandra.yaml.in). Ports: native (CQL) ``port`` (9042), storage ``7000 + (port -
9042)``, JMX ``7199 + (port - 9042)`` unless given. Heap: ``STOREBENCH_CASSANDRA_HEAP`` (default 1G).
A node started with ``seeds`` of another joins that node's ring (storebench.experiments.cassandra_dl.ring).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from storebench.paths import cache_dir, conf_dir
from storebench.services.base import LocalService, ServiceError, load_options_file, render_template, tcp_open

_TOOLS_LOGBACK = """<configuration>
  <appender name="STDERR" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.err</target>
    <encoder><pattern>%-5level %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="STDERR" /></root>
</configuration>
"""


def _version_key(path: Path) -> tuple:
    return tuple(int(x) if x.isdigit() else 0 for x in re.split(r"[.-]", path.name.split("-", 1)[1]))


class CassandraService(LocalService):
    system = "cassandra"
    default_port = 9042
    install_script = "install-cassandra.sh"
    ready_timeout = 180.0
    stop_timeout = 60.0
    probe_interval = 0.25

    def __init__(self, workdir, location: str = "disk", port: int | None = None, host: str = "127.0.0.1",
                 netns: str | None = None, heap: str | None = None, seeds: str | None = None,
                 jmx_port: int | None = None, ring_delay_ms: int = 1000):
        super().__init__(workdir, location, port, host, netns)
        self.heap = heap or os.environ.get("STOREBENCH_CASSANDRA_HEAP", "1G")
        self.storage_port = 7000 + (self.port - 9042)
        self.jmx_port = jmx_port or 7199 + (self.port - 9042)
        self.seeds = seeds or f"{self.host}:{self.storage_port}"
        self.ring_delay_ms = ring_delay_ms
        self.conf = self.dir / f"conf-{self.port}"

    # -- install ------------------------------------------------------------------------

    def home(self) -> Path:
        """$STOREBENCH_CACHE/cassandra-5.0.x with the most recent complete install."""
        homes = [p for p in cache_dir().glob("cassandra-5.0.*")
                 if (p / "lib" / ".storebench-complete").exists()]
        if not homes:
            raise self._missing(f"{cache_dir()}/cassandra-5.0.*/lib (jars)")
        return max(homes, key=_version_key)

    def _java(self) -> str:
        java = shutil.which("java")
        if not java:
            raise ServiceError(self.system, "java not found: Cassandra 5.0 needs Java 17",
                               hint="apt-get install openjdk-17-jre-headless")
        return java

    def _check_installed(self) -> None:
        self.home()
        self._java()

    def _ports(self) -> list[int]:
        return [self.port, self.storage_port, self.jmx_port]

    def _classpath(self) -> str:
        return f"{self.conf}:{self.home() / 'lib'}/*"

    # -- start --------------------------------------------------------------------------

    def _launch(self) -> None:
        self.conf.mkdir(parents=True, exist_ok=True)
        (self.conf / "cassandra.yaml").write_text(render_template(conf_dir() / "cassandra.yaml.in", {
            "DATA_DIR": self.data_dir, "ADDRESS": self.host, "STORAGE_PORT": self.storage_port,
            "NATIVE_PORT": self.port, "SEEDS": self.seeds,
        }))
        shutil.copyfile(conf_dir() / "logback.xml", self.conf / "logback.xml")
        lib = self.home() / "lib"
        jamm = sorted(lib.glob("jamm-*.jar"))
        cmd = [
            self._java(), f"-Xms{self.heap}", f"-Xmx{self.heap}",
            *load_options_file(conf_dir() / "cassandra-jvm17.options"),
            # jamm measures object sizes for memtable accounting (as Cassandra's own scripts do)
            *([f"-javaagent:{jamm[-1]}"] if jamm else []),
            f"-Dcassandra.config=file://{self.conf / 'cassandra.yaml'}",
            f"-Dlogback.configurationFile={self.conf / 'logback.xml'}",
            f"-Dcassandra.storagedir={self.data_dir}",
            f"-Dcassandra.logdir={self.dir / 'logs'}",
            f"-Dcassandra.jmx.local.port={self.jmx_port}",
            "-Djava.rmi.server.hostname=127.0.0.1",  # JMX is local-only: nodetool runs beside it
            "-Dcassandra-foreground=yes",
            # Single node: no need to wait for gossip/ring settling (else a fresh node idles 30 s);
            # a node joining a ring waits longer, to learn the ring's tokens before it takes its own.
            f"-Dcassandra.ring_delay_ms={self.ring_delay_ms}",
            "-Dcassandra.skip_wait_for_gossip_to_settle=0",
            f"-Djava.io.tmpdir={self.dir / 'tmp'}",
            f"-Duser.home={self.dir}",
            "-cp", self._classpath(),
            "org.apache.cassandra.service.CassandraDaemon",
            *self.extra_args,
        ]
        (self.dir / "tmp").mkdir(exist_ok=True)
        self._spawn("cassandra", cmd)

    def cluster(self, **kwargs):
        """A cassandra-driver ``Cluster`` for this node (call ``.connect()``, ``.shutdown()``)."""
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import DCAwareRoundRobinPolicy

        kwargs.setdefault("protocol_version", 5)
        kwargs.setdefault("execution_profiles", {EXEC_PROFILE_DEFAULT: ExecutionProfile(
            load_balancing_policy=DCAwareRoundRobinPolicy(local_dc="datacenter1"))})
        return Cluster([self.host], port=self.port, **kwargs)

    def _query_one(self, cql: str, timeout: float = 5.0):
        cluster = self.cluster(connect_timeout=timeout, control_connection_timeout=timeout)
        try:
            session = cluster.connect()
            return session.execute(cql, timeout=timeout).one()
        finally:
            cluster.shutdown()

    def _probe(self) -> bool:
        if not tcp_open(self.port, self.host):   # the native transport opens last in startup
            return False
        return self._query_one("SELECT release_version FROM system.local") is not None

    def version(self) -> str:
        return str(self._query_one("SELECT release_version FROM system.local").release_version)

    def endpoint(self) -> dict:
        return {"system": self.system, "host": self.host, "port": self.port,
                "contact_points": [self.host], "local_dc": "datacenter1",
                "username": None, "password": None, "jmx_port": self.jmx_port}

    # -- nodetool -----------------------------------------------------------------------

    def nodetool(self, *args: str, timeout: float = 120.0) -> str:
        """Run ``nodetool ARGS`` against this node (~2.5 s per call); returns stdout."""
        self.conf.mkdir(parents=True, exist_ok=True)
        tools_logback = self.conf / "logback-tools.xml"
        if not tools_logback.exists():
            tools_logback.write_text(_TOOLS_LOGBACK)
        cmd = [
            self._java(), *load_options_file(conf_dir() / "cassandra-jvm17-clients.options"),
            f"-Dlogback.configurationFile={tools_logback}",
            f"-Dcassandra.storagedir={self.data_dir}",
            f"-Duser.home={self.dir}",   # else it writes ~/.cassandra/nodetool.history
            "-cp", self._classpath(), "org.apache.cassandra.tools.NodeTool",
            "-h", "127.0.0.1", "-p", str(self.jmx_port), *args,
        ]
        res = subprocess.run(self._in_netns(cmd), capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0:
            raise ServiceError(self.system, f"nodetool {' '.join(args)} failed ({res.returncode}):\n"
                               f"{res.stdout[-2000:]}{res.stderr[-2000:]}", self.log_file)
        return res.stdout

    def read_latency_percentiles(self, keyspace: str, table: str) -> dict[str, float]:
        """Read latency (us) at the percentiles ``nodetool tablehistograms`` reports (50, 75, 95, 98,
        99, Min, Max): the coordinator's recent reads of the table (a decaying reservoir)."""
        return parse_table_histograms(self.nodetool("tablehistograms", keyspace, table))


def parse_table_histograms(text: str) -> dict[str, float]:
    """``nodetool tablehistograms`` output -> {"p50": us, ..., "min": us, "max": us} of Read Latency."""
    out = {}
    for line in text.splitlines():
        match = re.match(r"^(\d+)%\s+([\d.]+|NaN)\s", line) or re.match(r"^(Min|Max)\s+([\d.]+|NaN)\s", line)
        if match:
            name = f"p{match.group(1)}" if match.group(1).isdigit() else match.group(1).lower()
            out[name] = float(match.group(2))
    if "p50" not in out:
        raise ValueError(f"no read latency percentiles in nodetool tablehistograms output:\n{text[-1000:]}")
    return out
