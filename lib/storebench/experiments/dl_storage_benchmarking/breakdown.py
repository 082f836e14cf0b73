"""Where download time goes (seed 003, Sec 5.1, Fig 3): local read + network transfer + server
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

Run as ``python -m storebench.experiments.dl_storage_benchmarking.breakdown SPEC`` this module is that in-namespace
client (see ``NamespaceClient``).
"""
from __future__ import annotations

import pickle
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pandas as pd

from storebench.data.formats import get_format
from storebench.testbed.netns import NetworkHop, NetworkHopUnavailable
from storebench.testbed.netprofiles import PROFILES, NetworkPath, ProfileNotSupported
from storebench.experiments.dl_storage_benchmarking.published import FIG3_CASSANDRA, SEED_003_MACHINE
from storebench.core.progress import tqdm
from storebench.stores.readers import ObjectReader
from storebench.core.results import LOCAL_NETWORK, NET_COLUMNS, ResultWriter
from storebench.core.stats import summarize
from storebench.stores import get_store_class
from storebench.stores.systems import ServicePool
from storebench.core.timing import measure
from storebench.data.workloads import Workload
from storebench.report.tables import number
from storebench.experiments.common import Run, Skipped, failure, has_server, loaded_reader, measure_into, record, system_locations

EXPERIMENT = "breakdown"
SEED = "003"
IN_NAMESPACE = "same namespace"
LOCAL_READ_SYSTEM = "localfs"
CLIENT_TIMEOUT_S = 3600
# A server's cold read here evicts its files' pages under the running server (disk-cold-pagecache):
# restarting it inside the namespace between passes (disk-cold) is not built. localfs's counterpart
# of that cold read is its own disk-cold (files evicted, reopened).
LOCAL_READ_LOCATION = {"disk-cold-pagecache": "disk-cold"}


def hop_label(rate: str) -> str:
    return "veth" if rate == "unshaped" else f"veth, tbf {rate}"


def run(config: dict, out_dir=None, progress: bool = True) -> Run:
    from storebench.data import datasets as data

    run = Run(ResultWriter(EXPERIMENT, **({"out_dir": out_dir} if out_dir else {})))
    dataset = data.load(config["dataset"], config["n_samples"])
    workload = Workload("sequential", 1, 1, len(dataset), config["seed"])
    measure_opts = dict(repeats=config["repeats"], dataset=config["dataset"], format=config["format"],
                        scale=config["scale"], seed=config["seed"], warmup=config.get("warmup", True))
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
            toxiproxy = _toxiproxy(stack) if pairs and config.get("net_profiles") else None
            for location, system in pairs:
                with loaded_reader(system, location, dataset, config["format"], 1, progress=progress,
                                   services=services) as reader:
                    _placements(run, hop, reader, workload, location, config, measure_opts, toxiproxy)
    finally:
        if hop is not None:
            hop.delete()
    run.writer.write()
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
    """One pass per placement per round, the placements' order rotating each round, so that a
    server still warming up (Cassandra's JIT) or a busy moment weighs on every placement alike.
    The first ``warmup`` round is not recorded; every pass is verified. A placement is (label,
    link rate, reader, measured network profile or None); the in-namespace client has rate None."""
    cold = location == "disk-cold-pagecache"
    placements = [(IN_NAMESPACE, None, None, None),
                  *((hop_label(rate), rate, reader, None) for rate in config["link_rates"])]
    passes: dict[str, list] = {label: [] for label, *_ in placements}
    warmup = int(measure_opts["warmup"])
    try:
        with ExitStack() as stack:
            for name in config.get("net_profiles", []):
                placed = _profile_placement(run, stack, hop, reader, name, toxiproxy)
                if placed:
                    placements.append(placed)
                    passes[name] = []
            inside = stack.enter_context(NamespaceClient(hop, reader, workload))
            rounds = tqdm(range(warmup + measure_opts["repeats"]), unit="round", leave=False,
                          desc=f"breakdown {reader.store.name} ({len(placements)} placements)")
            for n in rounds:
                for label, rate, client, _ in placements[n % len(placements):] + placements[:n % len(placements)]:
                    hop.shape(None if rate in (None, "unshaped") else rate)
                    if n == 0 and rate is not None:
                        run.notes.append(f"{reader.store.name}, {label}: tc reports {hop.qdiscs()}")
                    one = inside.measure_pass(cold) if rate is None else \
                        measure(client, workload, 1, cold=cold, warmup=False)[0]
                    if n >= warmup:
                        one.repeat = n - warmup
                        passes[label].append(one)
    except Exception as error:
        raise failure(reader.store.name, workload, location, error) from error
    finally:
        hop.shape(None)
    fields = {k: measure_opts[k] for k in ("dataset", "format", "scale", "seed")}
    nets = {label: net for label, _, _, net in placements}
    for label, measured in passes.items():
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
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)
        return self

    def measure_pass(self, cold: bool):
        self.proc.stdin.write("cold\n" if cold else "warm\n")
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
    """The in-namespace client: one verified pass per line on stdin ("warm"/"cold"), each pickled
    next to the spec, its path answered on stdout."""
    spec = pickle.loads(Path(spec_path).read_bytes())
    store = get_store_class(spec["store"])(spec["endpoint"], namespace=spec["namespace"])
    if spec["data_dir"]:
        store.root = Path(spec["data_dir"])  # the server's files are on this machine: evictable for disk-cold
    try:
        reader = ObjectReader(store, get_format(spec["format"]), spec["samples_per_object"], spec["checksums"],
                              spec["sizes"], spec["n_samples"])
        for n, line in enumerate(sys.stdin):
            (one,) = measure(reader, spec["workload"], 1, cold=line.strip() == "cold", warmup=False)
            out = Path(spec_path).with_name(f"pass-{n}.pkl")
            out.write_bytes(pickle.dumps(one))
            print(out, flush=True)
    finally:
        store.close()


# ------------------------------------------------------------------ analysis
def summary(rows: pd.DataFrame) -> pd.DataFrame:
    return summarize(rows)


def breakdown(summary: pd.DataFrame) -> pd.DataFrame:
    """Per server, location and hop: hop time split into local read, server processing and network
    (seconds, and shares of the hop time). CI of a difference: the two CIs added in quadrature."""
    local = summary[summary.network == LOCAL_NETWORK].set_index(["dataset", "location"])
    inside = summary[summary.network == IN_NAMESPACE].set_index(["system", "dataset", "location"])
    out = []
    for _, hop in summary[~summary.network.isin([LOCAL_NETWORK, IN_NAMESPACE])].iterrows():
        key = (hop.system, hop.dataset, hop.location)
        if key not in inside.index:
            continue
        same = inside.loc[key]
        local_key = (hop.dataset, LOCAL_READ_LOCATION.get(hop.location, hop.location))
        read = local.loc[local_key] if local_key in local.index else None
        read_s = float(read["mean"]) if read is not None else np.nan
        network_s = hop["mean"] - same["mean"]
        out.append({
            "system": hop.system, "dataset": hop.dataset, "location": hop.location, "network": hop.network,
            "download_s": hop["mean"], "download_ci95": hop.ci95, "same_namespace_s": same["mean"],
            "local_read_s": read_s, "processing_s": same["mean"] - read_s, "network_s": network_s,
            "network_ci95": float(np.hypot(hop.ci95, same.ci95)),
            "local_read_share": read_s / hop["mean"], "processing_share": (same["mean"] - read_s) / hop["mean"],
            "network_share": network_s / hop["mean"],
        })
    return pd.DataFrame(out)


def compared_hop(parts: pd.DataFrame) -> str:
    """The hop compared with the paper: a network profile (it has the LAN's latency) if one was
    measured, else the last link rate (the shaped veth pair)."""
    profiles = [n for n in dict.fromkeys(parts.network) if n in PROFILES and n != "unshaped"]
    return profiles[-1] if profiles else parts.network.iloc[-1]


def profile_measurements(rows: pd.DataFrame) -> pd.DataFrame:
    """The network profiles' RTT and throughput, measured before use (one row per server and profile)."""
    measured = rows.dropna(subset=["net_profile"]) if "net_profile" in rows else rows.iloc[0:0]
    return measured.drop_duplicates(["system", "location", "network"])[["system", "location", "network",
                                                                        *NET_COLUMNS[1:]]].reset_index(drop=True)


def paper_reference() -> pd.DataFrame:
    ref = FIG3_CASSANDRA
    return pd.DataFrame([{"system": "cassandra (paper, HDD, 1 GbE)", "local_read_share": ref["local_read_share"],
                          "processing_share": ref["processing_share"], "network_share": ref["network_share"],
                          "download_s": ref["download_disk_s"]}])


def figure(summary: pd.DataFrame, parts: pd.DataFrame):
    import matplotlib.pyplot as plt

    from storebench.report import plots

    servers = summary[summary.network != LOCAL_NETWORK]
    fig, (left, right) = plt.subplots(1, 2, figsize=(15, 5), gridspec_kw={"width_ratios": [3, 2]})
    plots.grouped_bars(left, servers, "system", "network", hue_order=list(dict.fromkeys(servers.network)))
    left.set_yscale("log")
    left.set(title="Sequential read, 1 sample per request: where the client sits", ylabel="download time (s)",
             xlabel="")
    left.tick_params(axis="x", rotation=30)
    shaped = parts[parts.network == compared_hop(parts)] if len(parts) else parts
    shares = pd.concat([shaped, paper_reference()], ignore_index=True)
    labels = [f"{s} ({loc})" if isinstance(loc, str) else s for s, loc in zip(shares.system, shares.get("location"))]
    bottom = np.zeros(len(shares))
    for column, name in (("local_read_share", "local read (localfs)"), ("processing_share", "server processing"),
                         ("network_share", "network")):
        values = shares[column].fillna(0).clip(lower=0).to_numpy() * 100
        right.barh(labels, values, left=bottom, label=name)
        bottom += values
    right.set(title=f"Shares of download time ({shaped.network.iloc[0] if len(shaped) else 'no hop'})",
              xlabel="% of download time")
    right.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3)
    plots.footnote(fig, "Mean of the repeats, error bars 95% CI. Network = hop - same namespace (a negative "
                        "difference, i.e. inside the noise, is drawn as 0). Paper bar: seed 003 Sec 5.1/Fig 3, "
                        f"{SEED_003_MACHINE}; its network share includes real LAN latency, which this kernel "
                        "(no sch_netem) cannot add.")
    fig.tight_layout()
    return fig


def findings(parts: pd.DataFrame, n_samples: int, net: pd.DataFrame | None = None):
    """``net``: profile_measurements(rows), to say what the last hop's RTT and throughput were."""
    from storebench.report.findings import Findings

    ref = FIG3_CASSANDRA
    if parts.empty:
        why = (f"No server was placed behind a network hop (see the list of what was not measured); the paper "
               f"put Cassandra's network share at ~{ref['network_share']:.0%}.")
        return Findings(why, why)
    last = compared_hop(parts)
    shaped = parts[parts.network == last]
    lines = ["| system | location | across hop (s) | network | local read | server processing | "
             "network vs paper |", "|---|---|---|---|---|---|---|"]
    for _, row in shaped.iterrows():
        noise = " (within noise)" if abs(row.network_s) <= row.network_ci95 else ""
        lines.append(f"| {row.system} | {row.location} | {row.download_s:.3g} ± {row.download_ci95:.2g} | "
                     f"{row.network_share:.1%}{noise} | {number(row.local_read_share, '.1%')} | "
                     f"{number(row.processing_share, '.1%')} | {row.network_share / ref['network_share']:.2f}x |")
    cass = shaped[shaped.system.str.startswith("cassandra")]
    focus = cass.iloc[0] if len(cass) else shaped.iloc[0]
    headline = (f"{focus.system}, sequential one-by-one reads of {n_samples} samples across a {last} hop: "
                f"network {focus.network_share:.1%}{_noise(focus)} (paper ~{ref['network_share']:.0%}), local read "
                f"{number(focus.local_read_share, '.1%')} (~{ref['local_read_share']:.0%}), server processing "
                f"{number(focus.processing_share, '.1%')} (~{ref['processing_share']:.0%}) of download time.")
    text = "\n".join([
        "**Paper (seed 003, Sec 5.1, Fig 3, Cassandra, pickled MNIST on HDD):** a client on the server node "
        f"is ~10% faster than across the 1 GbE LAN (network ~{ref['network_share']:.0%}); the local file system "
        f"reads the 60,000 files in {ref['local_read_ssd_s']} s (SSD) / {ref['local_read_disk_s']} s (disk), "
        f"~{ref['local_read_share']:.0%}; Cassandra's own processing is the rest, ~{ref['processing_share']:.0%}.",
        "",
        f"**Ours** ({last}; shares of the download time across the hop; network = hop - same namespace, "
        f"its 95% CI from both runs):",
        "",
        *lines,
        "",
        *_hop_text(last, net),
        "Objects of a few hundred bytes are far below what 1 Gbps limits, so shaping changes little; the "
        "server's own processing dominates, as in the paper.",
    ])
    return Findings(headline, text, overview_metrics(parts))


def _hop_text(last: str, net: pd.DataFrame | None) -> list[str]:
    measured = net[net.network == last] if net is not None and len(net) else None
    if measured is None or measured.empty:
        return ["The hop here is a veth pair inside one kernel: it adds per-packet work but no wire and no switch, "
                "and this kernel has no `sch_netem` to add latency, so the network share is a lower bound on a real "
                "LAN's. "]
    rtt, mbit = measured.net_rtt_ms.median(), measured.net_throughput_mbit.median()
    return [f"The {last} profile was measured before use at a median RTT of {rtt:.3f} ms and {mbit:.0f} Mbit/s "
            f"(the paper's numbers imply ~{FIG3_CASSANDRA['download_disk_s'] * FIG3_CASSANDRA['network_share'] / 60000 * 1000:.2f} ms "
            "of network per request on its 1 GbE LAN), so its network share compares with the paper's on equal "
            "terms of latency, not only bandwidth. "]



def _noise(row) -> str:
    """' (within noise: ±x%)' when the network time's 95% CI includes zero."""
    if abs(row.network_s) > row.network_ci95:
        return ""
    return f" (within noise: ±{row.network_ci95 / row.download_s:.0%})"


def overview_metrics(parts: pd.DataFrame) -> tuple:
    """Per server, the network share of download time across the shaped veth pair and across the hop
    compared with the paper, for the index; its CI is the network time's (hop - same namespace, both
    CIs in quadrature) over the hop time."""
    from storebench.report.findings import Metric

    if parts.empty:
        return ()
    shaped = [n for n in dict.fromkeys(parts.network) if n.startswith("veth, tbf")]
    hops = list(dict.fromkeys(shaped[-1:] + [compared_hop(parts)]))
    metrics = []
    for _, row in parts[parts.network.isin(hops)].iterrows():
        column = f"network share of download time, sequential 1 per request, {row.location}, {row.network} (breakdown)"
        metrics.append(Metric(row.system, column, float(row.network_share), float(row.network_ci95 / row.download_s),
                              0.0, "%"))
    return tuple(metrics)


if __name__ == "__main__":
    _client_main(sys.argv[1])
