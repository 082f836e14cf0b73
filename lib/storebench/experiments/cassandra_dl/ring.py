"""A Cassandra ring that grows and shrinks on this machine (seed 004, Sec 5.4): the first node on
127.0.0.1, a second on 127.0.0.2 (its own directories, the same CQL and storage ports on its own
address, its own JMX port) that joins the ring (bootstrap: it streams its token ranges from the
first) and later leaves it (``nodetool decommission``: it streams them back, then stops).

    with Ring(workdir) as ring:        # starts the first node
        ring.join()                    # the second node bootstraps; returns when both are Up/Normal
        ring.leave()                   # decommission, then stop
        ring.status()                  # {address: "UN", ...} from nodetool status

Across two "hosts" (storebench.experiments.cassandra_dl.twohosts): the first node at the veth's
address here, the second inside a network namespace at its own address, seeded by the first::

    Ring(workdir, first=hop.host_address, second=hop.server_address, second_netns=hop.namespace)

Every node is stopped by PID when the ring closes, also after an error: no orphan JVM.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from storebench.services.base import ServiceError, port_offset
from storebench.services.cassandra import CassandraService

FIRST, SECOND = "127.0.0.1", "127.0.0.2"
SECOND_JMX_PORT = 7299


class Ring:
    def __init__(self, workdir: Path, location: str = "disk", heap: str | None = None,
                 join_timeout: float = 300.0, first: str = FIRST, second: str = SECOND,
                 second_netns: str | None = None):
        self.workdir, self.location, self.heap = Path(workdir), location, heap
        self.join_timeout = join_timeout
        self.first_address, self.second_address, self.second_netns = first, second, second_netns
        self.first = CassandraService(self.workdir / "node1", location, host=first, heap=heap)
        self.second: CassandraService | None = None
        self.started = [self.first]   # every node ever started, for wipe()

    def start(self) -> "Ring":
        self.first.wipe()
        self.first.start()
        return self

    def endpoint(self) -> dict:
        return self.first.endpoint()

    def join(self) -> float:
        """Start the second node with the first as its seed; seconds until both are Up/Normal."""
        start = time.monotonic()
        self.second = CassandraService(self.workdir / "node2", self.location, host=self.second_address,
                                       netns=self.second_netns, heap=self.heap,
                                       seeds=f"{self.first_address}:{self.first.storage_port}",
                                       jmx_port=self._second_jmx_port(), ring_delay_ms=5000)
        self.second.wipe()
        self.started.append(self.second)
        self.second.ready_timeout = self.join_timeout
        self.second.start()
        self._wait(lambda s: s.get(self.first_address) == "UN" and s.get(self.second_address) == "UN",
                   "the second node to be Up/Normal")
        return time.monotonic() - start

    def _second_jmx_port(self) -> int | None:
        """JMX listens on the loopback: beside the first node it needs a port of its own; in its own
        namespace (its own loopback) the default one is free."""
        return None if self.second_netns else SECOND_JMX_PORT + port_offset()

    def leave(self) -> float:
        """Decommission the second node (its ranges stream back to the first), then stop it."""
        if self.second is None:
            raise ServiceError("cassandra", "no second node to decommission: call join() first")
        start = time.monotonic()
        # --force: Cassandra's own system_distributed/system_traces keyspaces ask for RF 3, which no
        # two-node ring meets; the benchmark's keyspace is what must stay whole (it is checked).
        self.second.nodetool("decommission", "--force", timeout=self.join_timeout)
        self.second.stop()
        self.second = None
        self._wait(lambda s: self.second_address not in s, "the second node to leave the ring")
        return time.monotonic() - start

    def status(self) -> dict[str, str]:
        """address -> two-letter state (UN = Up/Normal, UJ = joining, UL = leaving, DN = down)."""
        out = self.first.nodetool("status")
        return {address: state for state, address in re.findall(r"^([UD][NLJM])\s+(\d+\.\d+\.\d+\.\d+)", out, re.M)}

    def _wait(self, done, what: str) -> None:
        deadline = time.monotonic() + self.join_timeout
        while time.monotonic() < deadline:
            if done(self.status()):
                return
            time.sleep(1.0)
        raise ServiceError("cassandra", f"timed out after {self.join_timeout:.0f} s waiting for {what} "
                           f"(nodetool status: {self.status()})", self.first.log_file)

    def stop(self) -> None:
        for node in (self.second, self.first):
            if node is not None:
                node.stop()
        self.second = None

    def wipe(self) -> None:
        """Stop every node and delete its data (on tmpfs, memory until deleted)."""
        self.stop()
        for node in self.started:
            node.wipe()

    def __enter__(self) -> "Ring":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
