"""Two hosts rehearsed on one machine (issue 23, part 4; the recipe for real hosts: docs/two-hosts.md).

Host A is this network namespace at 198.18.0.1, host B a namespace of our own at 198.18.0.2
(storebench.testbed.netns.NetworkHop), the veth between them shaped to ``lan-1g``'s rate (1 Gbit/s
token bucket, both ways). Each host runs a Cassandra node and a torchrun rank (gloo over the veth,
master on A). Both ranks read the ring with seed 004's loader (twohosts_rank: every blob checked,
every epoch whole) while B's node joins the ring (bootstrap) and later leaves it (decommission).

Not emulated: latency between the hosts. This kernel has no ``sch_netem``, and ``lan-1g``'s
latency stand-in (a Toxiproxy relay) only fits a client's TCP connection to a server, not
Cassandra's node-to-node gossip and streaming or gloo's mesh; so the link is the veth plus the
token bucket, with the sub-0.1 ms RTT of a veth.

    python -m storebench.experiments.cassandra_dl.twohosts [--smoke] [--workdir DIR]   # needs root

Prints per phase (one node, joining, two nodes, leaving, one node again) and rank: images read,
images/s, MB/s, share of time in all-reduce, failed reads, whole epochs; returns the same as a Rehearsal.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from storebench.data import imagesets
from storebench.data import splits as sp
from storebench.experiments.cassandra_dl import ranks
from storebench.experiments.cassandra_dl.ring import Ring
from storebench.paths import scratch_dir
from storebench.services.base import dies_with_parent, port_offset
from storebench.stores import cassandra_model as cm
from storebench.testbed.netns import NetworkHop
from storebench.testbed.netprofiles import get_profile

PROFILE = "lan-1g"
KEYSPACE = "twohosts"
RANK_MODULE = "storebench.experiments.cassandra_dl.twohosts_rank"
MASTER_PORT = 29611   # + STOREBENCH_PORT_OFFSET
PHASES = ("one node", "joining", "two nodes", "leaving", "one node again")
LATENCY_NOTE = ("latency between the hosts is not emulated: no sch_netem on this kernel, and a TCP relay "
                "(lan-1g's latency stand-in) cannot carry node-to-node gossip or gloo's mesh")


@dataclass(frozen=True)
class Plan:
    images: int = 2000
    originals: int = 200
    batch_size: int = 32
    in_flight: int = 16
    depth: int = 2
    consistency: str = "ONE"
    gradient_elements: int = 1 << 20    # 4 MB per all-reduce over the link
    settle_seconds: float = 10.0        # reading before the join, between join and leave, after the leave
    heap: str = "512M"                  # per Cassandra node (two JVMs on a shared machine)
    location: str = "memory"
    join_timeout: float = 300.0


SMOKE = Plan(images=200, originals=50, batch_size=16, in_flight=8, gradient_elements=1 << 16, settle_seconds=2.0)


@dataclass
class Rehearsal:
    link: dict
    ring: list[dict] = field(default_factory=list)     # {"event", "t", "status"}
    events: dict[str, float] = field(default_factory=dict)
    ranks: list[dict] = field(default_factory=list)

    def phases(self) -> pd.DataFrame:
        return phase_table(self.ranks, self.events)


# ------------------------------------------------------------------ the ranks, one torchrun per host
class TwoHostRanks:
    """torchrun node 0 here (host A), node 1 inside the hop's namespace (host B); gloo over the veth."""

    def __init__(self, hop: NetworkHop, spec_path: Path, workdir: Path):
        self.hop, self.spec_path, self.workdir = hop, spec_path, workdir
        self.stop_file = Path(json.loads(spec_path.read_text())["stop_file"])
        self.master = f"{hop.host_address}:{MASTER_PORT + port_offset()}"
        self.procs: dict[str, subprocess.Popen] = {}

    def out_dir(self, host: str) -> Path:
        return self.workdir / f"host-{host}"

    def log(self, host: str) -> Path:
        return self.workdir / f"host-{host}.log"

    def start(self) -> "TwoHostRanks":
        self.stop_file.unlink(missing_ok=True)
        for host, node_rank, link in (("a", 0, self.hop.host_link), ("b", 1, self.hop.inner_link)):
            cmd = ranks.command(RANK_MODULE, ["--spec", str(self.spec_path)], nproc=1, out_dir=self.out_dir(host),
                                nnodes=2, node_rank=node_rank, master=self.master)
            cmd = self.hop.inside_command(cmd) if host == "b" else cmd
            with open(self.log(host), "w") as log:
                self.procs[host] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                                    env=ranks.rank_env(GLOO_SOCKET_IFNAME=link),
                                                    preexec_fn=dies_with_parent())
        return self

    def wait_reading(self, timeout: float = 180.0) -> None:
        """Until both ranks have read their first batch."""
        markers = [self.out_dir("a") / "reading-0", self.out_dir("b") / "reading-1"]
        deadline = time.monotonic() + timeout
        while not all(m.exists() for m in markers):
            self._check_running()
            if time.monotonic() > deadline:
                raise ranks.RanksFailed(f"the ranks did not read within {timeout:.0f} s\n{self._tails()}")
            time.sleep(0.2)

    def finish(self, timeout: float = 120.0) -> list[dict]:
        """Tell rank 0 to stop (both stop at the same step), wait, return both ranks' results."""
        self.stop_file.touch()
        for host, proc in self.procs.items():
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise ranks.RanksFailed(f"host {host}'s torchrun did not stop within {timeout:.0f} s\n{self._tails()}")
            if code != 0:
                raise ranks.RanksFailed(f"host {host}'s torchrun failed (exit {code})\n{self._tails()}")
        return [*ranks.results(self.out_dir("a"), 1, 2, 0), *ranks.results(self.out_dir("b"), 1, 2, 1)]

    def _check_running(self) -> None:
        for host, proc in self.procs.items():
            if proc.poll() is not None:
                raise ranks.RanksFailed(f"host {host}'s torchrun exited early ({proc.returncode})\n{self._tails()}")

    def _tails(self) -> str:
        return "\n".join(f"--- {self.log(h)}:\n{self.log(h).read_text()[-2500:]}" for h in self.procs)

    def kill(self) -> None:
        """torchrun and its ranks, by their process group (each started in its own session)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    _signal_group(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=15)

    def __enter__(self) -> "TwoHostRanks":
        try:
            return self.start()
        except BaseException:
            self.kill()
            raise

    def __exit__(self, *exc) -> None:
        self.kill()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


# ------------------------------------------------------------------ the rehearsal
def write_spec(endpoint: dict, plan: Plan, workdir: Path) -> Path:
    """The ranks' spec and split file (one split per rank; on real hosts copied to every host)."""
    with cm.session_for(endpoint) as session:
        splits = sp.make_splits(sp.CassandraMetadata(session, KEYSPACE), [1, 1], group_by=["original"],
                                label="kind", seed=0)
    spec = {"endpoint": endpoint, "keyspace": KEYSPACE, "splits": str(splits.save(workdir / "splits.json")),
            "in_flight": plan.in_flight, "depth": plan.depth, "batch_size": plan.batch_size,
            "consistency": plan.consistency, "gradient_elements": plan.gradient_elements,
            "stop_file": str(workdir / "stop"), "max_seconds": 4 * plan.join_timeout}
    path = workdir / "spec.json"
    path.write_text(json.dumps(spec, indent=1))
    return path


def rehearse(workdir: Path | None = None, plan: Plan = Plan(), say=print) -> Rehearsal:
    workdir = Path(workdir or scratch_dir("twohosts"))
    workdir.mkdir(parents=True, exist_ok=True)
    images = imagesets.image_set(plan.images, "jpeg", 0, min(plan.originals, plan.images))
    with NetworkHop() as hop:
        hop.shape(get_profile(PROFILE).rate)
        result = Rehearsal(link={"profile": PROFILE, "host_a": hop.host_address, "host_b": hop.server_address,
                                 "namespace_b": hop.namespace, "qdiscs": hop.qdiscs(), "note": LATENCY_NOTE})
        say(f"host A: this namespace, {hop.host_address}; host B: namespace {hop.namespace}, {hop.server_address}; "
            f"link: veth, tbf {hop.rate} both ways ({PROFILE}'s rate); {LATENCY_NOTE}")
        ring = Ring(workdir / "ring", plan.location, plan.heap, plan.join_timeout, first=hop.host_address,
                    second=hop.server_address, second_netns=hop.namespace)
        try:
            with ring:
                say(f"host A's node up at {hop.host_address} in {ring.first.startup_seconds:.0f} s")
                cm.ingest_endpoint(ring.endpoint(), KEYSPACE, images, replication_factor=1, progress=False)
                say(f"ingested {images.describe()}")
                spec_path = write_spec(ring.endpoint(), plan, workdir)
                with TwoHostRanks(hop, spec_path, workdir) as two:
                    two.wait_reading()
                    grow_and_shrink(ring, plan, result, say)
                    result.events["stop"] = time.time()
                    result.ranks = two.finish()
        finally:
            ring.wipe()
    (workdir / "rehearsal.json").write_text(json.dumps(asdict(result), indent=1, default=str))
    say(result.phases().to_string(index=False))
    return result


def grow_and_shrink(ring: Ring, plan: Plan, result: Rehearsal, say) -> None:
    """B's node joins, then leaves, ``settle_seconds`` of reading around each; the ring's state after each."""
    def event(name: str) -> None:
        result.events[name] = time.time()

    def record(name: str) -> None:
        status = ring.status()
        result.ring.append({"event": name, "t": time.time(), "status": status})
        say(f"ring {name}: {status}")

    event("reading")
    record("before")
    time.sleep(plan.settle_seconds)
    event("join starts")
    say(f"host B's node joined in {ring.join():.0f} s")
    event("joined")
    record("joined")
    time.sleep(plan.settle_seconds)
    event("leave starts")
    say(f"host B's node left in {ring.leave():.0f} s")
    event("left")
    record("left")
    time.sleep(plan.settle_seconds)


def phase_table(rank_results: list[dict], events: dict[str, float]) -> pd.DataFrame:
    """Per phase and rank: images, images/s, MB/s, share of the time in all-reduce (the transfer over the
    link and the wait for the slower rank: with reads prefetched, what paces the steps), failed reads,
    completed (whole, verified) epochs."""
    bounds = [events[e] for e in ("reading", "join starts", "joined", "leave starts", "left", "stop")]
    rows = []
    for name, start, end in zip(PHASES, bounds, bounds[1:]):
        for r in rank_results:
            batches = [b for b in r["batches"] if start <= b[0] < end]
            images, nbytes = sum(b[1] for b in batches), sum(b[2] for b in batches)
            rows.append({"phase": name, "rank": r["rank"], "seconds": round(end - start, 1), "images": images,
                         "images_per_s": round(images / (end - start), 1),
                         "mb_per_s": round(nbytes / (end - start) / 1e6, 2),
                         "allreduce_share": round(sum(s for t, s in r["allreduce"] if start <= t < end)
                                                  / (end - start), 2),
                         "failed_reads": sum(start <= e["t"] < end for e in r["errors"]),
                         "whole_epochs": sum(start <= e["t"] < end for e in r["epochs"])})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="200 images, 2 s of reading around each change")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--images", type=int, help="images ingested (both ranks' splits together)")
    parser.add_argument("--gradient-elements", type=int, help="float32 all-reduced per step (0.25M-25.6M: "
                        "a small model to ResNet-50); over 1 Gbit/s it paces the steps")
    parser.add_argument("--settle-seconds", type=float, help="reading before the join, between, after the leave")
    args = parser.parse_args(argv)
    chosen = {k: v for k, v in vars(args).items() if k in Plan.__dataclass_fields__ and v is not None}
    rehearse(args.workdir, replace(SMOKE if args.smoke else Plan(), **chosen))


if __name__ == "__main__":
    main()
