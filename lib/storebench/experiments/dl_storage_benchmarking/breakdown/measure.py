"""Measure where download time goes (seed 003, Sec 5.1, Fig 3): local read + network transfer + server
processing, for every server.

Each server runs inside a network namespace of our own (storebench.testbed.netns), holding the same
data throughout, and the same sequential one-sample-per-request read is timed from three places:

- ``same namespace``: a client process started inside the server's namespace (no hop);
- ``veth``: this process, across the veth pair into the namespace, unshaped;
- ``veth, tbf 1gbit``: the same hop shaped by a token bucket to the paper's 1 Gbps LAN;
- a network profile (storebench.testbed.netprofiles), e.g. ``lan-1g``: the hop shaped to 1 Gbps plus a
  Toxiproxy relay, whose user-space round trip (~0.2 ms) stands in for a real LAN's latency.
  Its RTT and throughput are measured before use and recorded with its rows.

Network = hop time - same-namespace time; local read = the local file system (``localfs``)
reading the same objects; server processing = same-namespace time - local read. The kernel
here has no ``sch_netem``: only a profile's relay adds latency; the bare hop is a lower bound.

Run as ``python -m storebench.experiments.dl_storage_benchmarking.breakdown.measure SPEC`` this module is that
in-namespace client (see ``NamespaceClient``).
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field

from storebench.core.experiment import ResultsDir
from storebench.core.progress import tqdm
from storebench.core.repeats import Cell, RepeatPolicy
from storebench.core.results import ResultWriter
from storebench.core.settings import (DatasetName, FormatName, LocationName, NetProfileName, Settings as Base,
                                      StoreName)
from storebench.core.timing import measure as timed_passes
from storebench.data.formats import get_format
from storebench.data.workloads import Workload
from storebench.experiments.common import (Run, Skipped, failure, has_server, loaded_reader, measure_into, record,
                                           record_skipped, system_locations)
from storebench.experiments.dl_storage_benchmarking.breakdown import IN_NAMESPACE, LOCAL_READ_LOCATION
from storebench.services.base import dies_with_parent
from storebench.stores import get_store_class
from storebench.stores.readers import ObjectReader
from storebench.stores.systems import ServicePool
from storebench.testbed.netns import NetworkHop, NetworkHopUnavailable, bits_per_second
from storebench.testbed.netprofiles import NetworkPath, ProfileNotSupported

EXPERIMENT = "breakdown"
LOCAL_READ_SYSTEM = "localfs"
CLIENT_TIMEOUT_S = 3600


def _link_rate(rate: str) -> str:
    if rate != "unshaped":
        bits_per_second(rate)  # a ValueError names what is allowed
    return rate


class Settings(Base):
    dataset: DatasetName
    format: FormatName
    systems: list[StoreName] = Field(min_length=1)
    locations: list[LocationName] = Field(min_length=1)  # the servers' data
    link_rates: list[Annotated[str, AfterValidator(_link_rate)]] = Field(min_length=1)  # "unshaped" or a tc rate
    net_profiles: list[NetProfileName] = []
    local_read_locations: list[LocationName] = Field(min_length=1)  # localfs reading the same objects


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """The ``breakdown`` table (one row per pass, every placement and the local reads), raw events
    under ``out.raw_dir``, and what was not measured."""
    run = place_and_measure(settings, raw_dir=out.raw_dir, progress=progress)
    out.write("breakdown", run.rows)
    record_skipped(run, out)


def hop_label(rate: str) -> str:
    return "veth" if rate == "unshaped" else f"veth, tbf {rate}"


def place_and_measure(config: Settings, raw_dir=None, progress: bool = True) -> Run:
    from storebench.data import datasets as data

    run = Run(ResultWriter(EXPERIMENT, raw_dir=raw_dir))
    dataset = data.load(config["dataset"], config.samples_of(config["dataset"]))
    workload = Workload("sequential", 1, 1, len(dataset), config["seed"])
    measure_opts = dict(policy=config.policy, dataset=config["dataset"], format=config["format"],
                        scale=config["scale"], seed=config["seed"], warmup=config.warmup)
    servers = _servers(run, config)
    pairs = _measurable(system_locations(servers, config["locations"], run), run)
    read_locations = sorted({LOCAL_READ_LOCATION.get(loc, loc) for loc, _ in pairs} | set(config["local_read_locations"]))
    _local_reads(run, dataset, workload, config, read_locations, measure_opts, progress)
    try:
        hop = NetworkHop().create() if pairs else None
    except NetworkHopUnavailable as why:
        run.skipped.extend(Skipped(system, location, "every placement", str(why)) for location, system in pairs)
        pairs, hop = [], None
    try:
        with ServicePool(config["endpoints"], hop=hop) as services, ExitStack() as stack:
            toxiproxy = _toxiproxy(stack) if pairs and config.net_profiles else None
            for location, system in pairs:
                with loaded_reader(system, location, dataset, config["format"], 1, progress=progress,
                                   services=services) as reader:
                    _placements(run, hop, reader, workload, location, config, measure_opts, toxiproxy)
    finally:
        if hop is not None:
            hop.delete()
    return run


def _servers(run: Run, config: dict) -> list[str]:
    """The configured systems this experiment can place: servers it starts itself."""
    chosen = []
    for system in config["systems"]:
        cls = get_store_class(system)
        if not has_server(system):
            run.skipped.append(Skipped(system, "-", "breakdown", "embedded store: no server, no network"))
        elif config["endpoints"].get(cls.service, "local") != "local":
            run.skipped.append(Skipped(system, "-", "breakdown", "external endpoint: the breakdown places the "
                                       "server in a namespace of its own, so it must start the server itself"))
        else:
            chosen.append(system)
    return chosen


def _measurable(pairs, run) -> list:
    """The (location, system) pairs this experiment can place; disk-cold (server restarted between
    passes) is reported as not measured, pointing at disk-cold-pagecache."""
    kept = []
    for location, system in pairs:
        if location == "disk-cold":
            run.skipped.append(Skipped(system, location, "every placement",
                                       "a server restart inside the namespace between passes is not built here; "
                                       "use disk-cold-pagecache (pages evicted under the running server)"))
        else:
            kept.append((location, system))
    return kept


def _local_reads(run, dataset, workload, config, locations, measure_opts, progress) -> None:
    for location in locations:
        with loaded_reader(LOCAL_READ_SYSTEM, location, dataset, config["format"], 1, progress=progress) as reader:
            measure_into(run, reader, workload, location=location, **measure_opts)


def _toxiproxy(stack: ExitStack):
    from storebench.services import local_service

    return stack.enter_context(local_service("toxiproxy"))


def _placements(run, hop, reader, workload, location, config, measure_opts, toxiproxy) -> None:
    """One repeat per placement per round, the placements' order rotating each round, so that a
    server still warming up (Cassandra's JIT) or a busy moment weighs on every placement alike. The
    first round is the warm-up (not recorded; it sets each placement's passes per repeat); rounds go on
    until the repeat policy is done with every placement; every pass is verified. A placement is
    (label, link rate, reader, measured network profile or None); the in-namespace client has rate None."""
    cold = location == "disk-cold-pagecache"
    policy = config.policy
    placements = [(IN_NAMESPACE, None, None, None),
                  *((hop_label(rate), rate, reader, None) for rate in config["link_rates"])]
    cells: dict[str, Cell] = {}
    passes: dict[str, list] = {}
    try:
        with ExitStack() as stack:
            for name in config.net_profiles:
                placed = _profile_placement(run, stack, hop, reader, name, toxiproxy)
                if placed:
                    placements.append(placed)
            inside = stack.enter_context(NamespaceClient(hop, reader, workload))

            def one_repeat(placement, n_passes):
                label, rate, client, _ = placement
                hop.shape(None if rate in (None, "unshaped") else rate)
                if rate is not None and label not in cells:
                    run.notes.append(f"{reader.store.name}, {label}: tc reports {hop.qdiscs()}")
                if rate is None:
                    return inside.measure_pass(cold, n_passes)
                return timed_passes(client, workload, policy.once(), cold=cold, warmup=False, passes=n_passes)[0]

            if measure_opts["warmup"]:
                for placement in placements:
                    warm = one_repeat(placement, 1)
                    cells[placement[0]] = Cell(policy.passes_for(warm.seconds, loopable=not cold))
            bar = tqdm(desc=f"breakdown {reader.store.name} ({len(placements)} placements)", unit="repeat",
                       leave=False)
            n = 0
            while open_ := [p for p in placements if not policy.done(cells.setdefault(p[0], Cell()))]:
                for placement in open_[n % len(open_):] + open_[:n % len(open_)]:
                    cell = cells[placement[0]]
                    one = one_repeat(placement, cell.passes)
                    one.repeat = cell.repeats
                    cell.add(one.seconds, one.seconds * one.passes)
                    passes.setdefault(placement[0], []).append(one)
                    bar.update()
                n += 1
            bar.close()
    except Exception as error:
        raise failure(reader.store.name, workload, location, error) from error
    finally:
        hop.shape(None)
    fields = {k: measure_opts[k] for k in ("dataset", "format", "scale", "seed")}
    nets = {label: net for label, _, _, net in placements}
    for label, measured in passes.items():
        for one in measured:
            one.cell_repeats, one.ci_target_met = cells[label].repeats, policy.met(cells[label].values)
        record(run, reader, workload, measured, location=location, network=label, net=nets[label], **fields)


def _profile_placement(run, stack: ExitStack, hop, reader, name: str, toxiproxy):
    """(label, rate, reader through the profile, measured profile); None (and a Skipped entry) if
    the system's client cannot be routed through it."""
    store = reader.store
    path = stack.enter_context(NetworkPath(name, hop=hop, toxiproxy=toxiproxy))
    try:
        endpoint = path.route(store.endpoint)
    except ProfileNotSupported as why:
        run.skipped.append(Skipped(store.name, "-", f"network profile {name}", str(why)))
        return None
    net = path.measure()
    through = get_store_class(store.name)(endpoint, namespace=store.namespace)
    stack.callback(through.close)
    through.root = store.root  # the server's files are on this machine: evictable for disk-cold
    run.notes.append(f"{store.name}, {name}: {net['net_path']}; measured before use: RTT "
                     f"{net['net_rtt_ms']:.3f} ms (median of 64-byte echoes), {net['net_throughput_mbit']:.0f} Mbit/s")
    client = ObjectReader(through, reader.format, reader.samples_per_object, reader.checksums, reader.sizes,
                          reader.n_samples)
    return name, path.profile.rate or "unshaped", client, net


# ------------------------------------------------------------------ the client inside the namespace
class NamespaceClient:
    """A client process inside ``hop``'s namespace, reading the same server and objects as ``reader``
    (verified against the same checksums), one pass per ``measure_pass`` call. Its spec holds the
    endpoint's credentials: it lives in a private (0700) temporary directory."""

    def __init__(self, hop: NetworkHop, reader: ObjectReader, workload: Workload):
        store = reader.store
        self.spec = {"store": store.name, "endpoint": store.endpoint, "namespace": store.namespace,
                     "data_dir": str(store.root) if store.root is not None else None,
                     "format": reader.format.name, "samples_per_object": reader.samples_per_object,
                     "checksums": reader.checksums, "sizes": reader.sizes, "n_samples": reader.n_samples,
                     "workload": workload}
        self.hop, self.proc, self.tmp = hop, None, None

    def __enter__(self) -> "NamespaceClient":
        self.tmp = tempfile.TemporaryDirectory(prefix="storebench-client-")
        spec_path = Path(self.tmp.name) / "spec.pkl"
        spec_path.write_bytes(pickle.dumps(self.spec))
        self.stderr = open(Path(self.tmp.name) / "stderr.txt", "w+")
        self.proc = subprocess.Popen(self.hop.inside_command([sys.executable, "-m", __name__, str(spec_path)]),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                     preexec_fn=dies_with_parent())
        return self

    def measure_pass(self, cold: bool, passes: int = 1):
        self.proc.stdin.write(f"{'cold' if cold else 'warm'} {passes}\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if not answer:
            self.proc.wait(timeout=30)
            self.stderr.seek(0)
            raise RuntimeError(f"the client inside namespace {self.hop.namespace} exited "
                               f"({self.proc.returncode}):\n{self.stderr.read()[-3000:]}")
        return pickle.loads(Path(answer).read_bytes())

    def __exit__(self, *exc) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.stderr.close()
        self.tmp.cleanup()


def _client_main(spec_path: str) -> None:
    """The in-namespace client: one verified repeat per line on stdin ("warm 3": warm, 3 passes), each pickled
    next to the spec, its path answered on stdout."""
    spec = pickle.loads(Path(spec_path).read_bytes())
    store = get_store_class(spec["store"])(spec["endpoint"], namespace=spec["namespace"])
    if spec["data_dir"]:
        store.root = Path(spec["data_dir"])  # the server's files are on this machine: evictable for disk-cold
    try:
        reader = ObjectReader(store, get_format(spec["format"]), spec["samples_per_object"], spec["checksums"],
                              spec["sizes"], spec["n_samples"])
        for n, line in enumerate(sys.stdin):
            how, passes = line.split()
            (one,) = timed_passes(reader, spec["workload"], RepeatPolicy().once(), cold=how == "cold", warmup=False,
                                  passes=int(passes))
            out = Path(spec_path).with_name(f"pass-{n}.pkl")
            out.write_bytes(pickle.dumps(one))
            print(out, flush=True)
    finally:
        store.close()


if __name__ == "__main__":
    _client_main(sys.argv[1])
