"""LayoutBench (seed 002): one tier of real ImageNet images written in four layouts on S3 (L1 one
object per image, L2 tar shards, L3 Parquet blobs read by DuckDB, L4 Lance), then Q1-Q11 against
each, on a real S3 server behind network profiles (bandwidth tiers) and under memory limits
(memory tiers). Per query: T (first call to last image verified, cold client), D (bytes the client
received, counted by storebench.testbed.wiretap, headers included), requests, connections; cost from T and
D with the seed's prices.

The S3 server runs in a network namespace of its own (storebench.testbed.netns) so that a profile's rate
is a token bucket on the whole link, as an instance's NIC; a Toxiproxy relay adds S3's latency to
the first byte. Each (server, profile, layout) runs in one client process; memory tiers run the
client in a cgroup limited to the seed's memory scaled by (this tier's bytes / the seed's full
ImageNet bytes): an OOM kill marks that query "did not finish" and the client restarts at the next.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from storebench.data import imagenet
from storebench.experiments.layoutbench import published as paper002
from storebench.core.config import all_non_negative, choices, positive
from storebench.layouts import LAYOUTS, S3Place, get_layout
from storebench.testbed import memlimits
from storebench.testbed.memlimits import MemoryLimit
from storebench.testbed.netns import NetworkHop, NetworkHopUnavailable
from storebench.testbed.netprofiles import PROFILES, NetworkPath
from storebench.paths import scratch_dir
from storebench.core.progress import tqdm
from storebench.layouts.queries import FOOTPRINT, QUERIES, get_queries
from storebench.core.results import machine
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool
from storebench.core.stats import mean_ci
from storebench.testbed.wiretap import Wiretap
from storebench.experiments.layoutbench.layout_client import WRONG_ANSWER_EXIT

EXPERIMENT = "layouts"
SEED = "002"
SERVERS = ("minio", "rgw")
UNLIMITED = "unlimited"
CLIENT_PACKAGES = ("obstore", "duckdb", "pylance", "pyarrow")


def _prices(value):
    bad = {k: v for k, v in value.items() if not isinstance(v, (int, float)) or v < 0}
    return f"must map names to prices >= 0; bad: {bad}" if bad else None


SCHEMA = {
    "tier": (str, choices(imagenet.TIERS)),
    "layouts": (list[str], choices(LAYOUTS)),
    "queries": (list[str], choices(QUERIES)),
    "servers": (list[str], choices(SERVERS)),
    "net_profiles": (list[str], choices(PROFILES)),
    "memory_profile": (str, choices(PROFILES)),
    "other_servers_profiles": (list[str], choices(PROFILES)),
    "memory_tiers_gib": (list[int], all_non_negative),
    "parallel": (int, positive),
    "shard_bytes": (int, positive),
    "coalesce_gap": (int, lambda v: None if v >= 0 else "must be >= 0"),
    "parquet_file_bytes": (int, positive),
    "row_group_rows": (int, positive),
    "lance_rows_per_group": (int, positive),
    "instance_usd_per_hour": (dict, _prices),
    "egress_usd_per_gb": (float, None),
    "get_usd_per_1000": (float, None),
    "prices_source": (str, None),
}


def layout_options(config: dict, name: str) -> dict:
    return {"L1-objects": {}, "L2-tar": {"shard_bytes": config["shard_bytes"], "coalesce_gap": config["coalesce_gap"]},
            "L3-parquet": {"file_bytes": config["parquet_file_bytes"], "row_group_rows": config["row_group_rows"]},
            "L4-lance": {"rows_per_group": config["lance_rows_per_group"]}}[name] | {"parallel": config["parallel"]}


def memory_allowance(tier_gib: int, data_bytes: int) -> int:
    """The seed's instance memory scaled by this tier's share of its full ImageNet (139.25 GB)."""
    return int(tier_gib * 2**30 * data_bytes / paper002.FULL_BYTES)


@dataclass
class LayoutRun:
    config: dict
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)      # one row per query run
    written: pd.DataFrame = field(default_factory=pd.DataFrame)   # Table 1: per server and layout
    profiles: pd.DataFrame = field(default_factory=pd.DataFrame)  # what each profile delivered, measured
    counts: pd.DataFrame = field(default_factory=pd.DataFrame)    # per query: ours vs the seed's
    notes: list[str] = field(default_factory=list)
    not_measured: list[dict] = field(default_factory=list)

    def save(self, out_dir: Path) -> None:
        out_dir = Path(out_dir)
        provenance = machine()
        for frame, name in ((self.rows, EXPERIMENT), (self.written, f"{EXPERIMENT}_write"),
                            (self.profiles, f"{EXPERIMENT}_profiles"), (self.counts, f"{EXPERIMENT}_counts")):
            frame.assign(**provenance, scale=self.config["scale"]).to_csv(out_dir / f"{name}.csv", index=False)


# ------------------------------------------------------------------ the run
def run(config: dict, out_dir: Path | None = None, progress: bool = True) -> LayoutRun:
    copies = imagenet.tier_copies(config["tier"])
    meta = imagenet.tier_metadata(copies)
    images = dict(imagenet.images())
    result = LayoutRun(config)
    result.counts = query_counts(meta, copies, config)
    work = scratch_dir(EXPERIMENT)
    meta_path = work / "meta.parquet"
    meta.to_parquet(meta_path)
    rows, written, profiles = [], [], []
    hop = _hop(result)
    cgroups = memlimits.available()
    sweeps = _sweeps(config, meta, result, hop is not None, cgroups)
    try:
        with ServicePool(config["endpoints"], hop=hop) as services, ExitStack() as stack:
            toxiproxy = None
            for i, server in enumerate(config["servers"]):
                endpoint, service = services.endpoint(server, "disk-warm")
                version = service.version() if service is not None else "external"
                bucket = _bucket(endpoint, config["tier"])
                index_dir = work / server
                for name in config["layouts"]:
                    written.append(_write(name, config, endpoint, bucket, index_dir, meta, images, server, version,
                                          progress))
                if toxiproxy is None and any(PROFILES[p].relay for p in _profiles(config)):
                    from storebench.services import local_service
                    toxiproxy = stack.enter_context(local_service("toxiproxy"))
                for profile, tiers in (sweeps if i == 0 else other_server_sweeps(config, sweeps)):
                    with NetworkPath(profile, hop=hop, toxiproxy=toxiproxy) as path:
                        net = path.measure()
                        profiles.append({"server": server, **net})
                        routed = path.route(endpoint)
                        with Wiretap(routed["host"], routed["port"]) as tap:
                            footprint = {}
                            for tier_name, allowance in tiers:
                                for name in tqdm(config["layouts"], desc=f"{server} {profile} {tier_name}",
                                                 disable=not progress):
                                    limit = None if allowance is None else footprint[name] + allowance
                                    place = S3Place(tap.endpoint(routed), bucket, f"{config['tier']}/{name}")
                                    found = run_client(name, layout_options(config, name), place, index_dir,
                                                       meta_path, tap, config, copies, limit, work, cgroups is None)
                                    footprint.setdefault(name, next(r.get("peak_bytes") for r in found
                                                                    if r["query"] == FOOTPRINT.name))
                                    rows += [{**r, "server": server, "server_version": version, "layout": name,
                                              "memory_tier": tier_name, "memory_allowance_bytes": allowance,
                                              "memory_limit_bytes": limit, **net} for r in found]
    finally:
        if hop is not None:
            hop.delete()
    result.rows = _with_context(pd.DataFrame(rows), meta, copies, config)
    result.written = pd.DataFrame(written)
    result.profiles = pd.DataFrame(profiles)
    if out_dir is not None:
        result.save(out_dir)
    return result


def _hop(result: LayoutRun):
    try:
        return NetworkHop().create()
    except NetworkHopUnavailable as why:
        result.not_measured.append({"what": "every profile with a link rate", "why": f"no network namespace: {why}"})
        return None


def _bucket(endpoint: dict, tier: str) -> str:
    from storebench.stores.s3 import minio_client

    bucket = f"sb-layouts-{tier}"
    client = minio_client(endpoint, 4)
    if client.bucket_exists(bucket):
        from minio.deleteobjects import DeleteObject

        names = [DeleteObject(o.object_name) for o in client.list_objects(bucket, recursive=True)]
        for error in client.remove_objects(bucket, names):
            raise RuntimeError(f"could not empty {bucket}: {error}")
    else:
        client.make_bucket(bucket)
    return bucket


def _write(name, config, endpoint, bucket, index_dir, meta, images, server, version, progress) -> dict:
    # lance warns at every later fork; ours (the query clients) exec a new interpreter at once
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    layout = get_layout(name)(S3Place(endpoint, bucket, f"{config['tier']}/{name}"), index_dir,
                              **layout_options(config, name))
    with tqdm(total=len(meta), desc=f"{server}: writing {name}", unit="img", disable=not progress) as bar:
        def image(filename: str) -> bytes:   # the layout asks for each image once: the bar's tick
            bar.update()
            return images[filename]

        start = time.perf_counter()
        written = layout.write(meta, image)
        seconds = time.perf_counter() - start
    return {"server": server, "server_version": version, "layout": name, "tier": config["tier"],
            "images": len(meta), "objects": written.objects, "stored_bytes": written.stored_bytes,
            "index_bytes": written.index_bytes, "write_seconds": seconds,
            "details": json.dumps(written.details)}


def _profiles(config: dict) -> list[str]:
    return list(dict.fromkeys([*config["net_profiles"], config["memory_profile"]]))


def _sweeps(config: dict, meta: pd.DataFrame, result: LayoutRun, has_hop: bool, cgroups: str | None):
    """(profile, [(memory tier, allowance bytes or None)]): every profile unlimited, then the memory
    tiers under ``memory_profile`` (each limit: the layout's client footprint measured unlimited
    under that profile, plus the tier's allowance). What this machine cannot provide (a link rate
    without a namespace, a memory limit without cgroups) is listed as not measured, never run without."""
    data = int(meta["bytes"].sum())
    sweeps = {}
    for profile in _profiles(config):
        if PROFILES[profile].rate and not has_hop:
            result.not_measured.append({"what": f"profile {profile}", "why": "its link rate needs a network namespace"})
        else:
            sweeps[profile] = [(UNLIMITED, None)]
    tiers = [(f"{gib} GiB", memory_allowance(gib, data)) for gib in config["memory_tiers_gib"]]
    if tiers and cgroups is not None:
        result.not_measured.append({"what": "memory tiers", "why": cgroups})
    elif tiers and config["memory_profile"] in sweeps:
        sweeps[config["memory_profile"]] += tiers
    return list(sweeps.items())


def other_server_sweeps(config: dict, sweeps: list) -> list:
    """A second S3 server is measured under ``other_servers_profiles`` only, without memory tiers:
    enough to tell what is the layout's and what the server's."""
    return [(profile, [(UNLIMITED, None)]) for profile, _ in sweeps if profile in config["other_servers_profiles"]]


def run_client(name, options, place, index_dir, meta_path, tap, config, copies, limit, work,
               cgroups: bool = True) -> list[dict]:
    """The footprint query, then every query ``repeats`` times (once under a memory limit), in a client
    process in a memory cgroup of its own (``limit`` None: it only measures). After an OOM kill the
    query it was running "did not finish" and a new client goes on with the rest."""
    repeats = config["repeats"] if limit is None else 1
    todo = [(0, FOOTPRINT.name)] + [(r, q) for r in range(repeats) for q in config["queries"]]
    rows = []
    while todo:
        out = work / f"client-{os.getpid()}-{time.monotonic_ns()}.jsonl"
        spec = {"layout": name, "options": options, "endpoint": place.endpoint, "bucket": place.bucket,
                "prefix": place.prefix, "index_dir": str(index_dir), "meta": str(meta_path), "copies": copies,
                "plan": todo, "counter_file": str(tap.counter_file), "out": str(out)}
        code = _client_process(spec, limit, cgroups)
        done = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        rows += done
        todo = todo[len(done):]
        if code == 0 and not todo:
            break
        if code == WRONG_ANSWER_EXIT:
            raise AssertionError(f"{name} returned a wrong answer to {todo[0][1]} (see the client's message above)")
        if limit is None or code not in (-9, 137):
            raise RuntimeError(f"the {name} query client failed (exit {code}) at {todo[0] if todo else '?'}")
        repeat, query = todo.pop(0)
        rows.append({"query": query, "repeat": repeat, "status": "did not finish",
                     "reason": f"OOM-killed at a {limit / 2**20:.1f} MiB limit"})
    return rows


def _client_process(spec: dict, limit: int | None, cgroups: bool = True) -> int:
    """Run the query client of ``spec`` in a memory cgroup limited to ``limit`` (None: measuring
    only; ``cgroups`` False: none at all); its exit code."""
    spec_path = Path(spec["out"]).with_suffix(".json")
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.Popen([sys.executable, "-m", "storebench.experiments.layoutbench.layout_client", str(spec_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the query client did not start (exit {proc.wait()})")
        with MemoryLimit(limit) if cgroups else nullcontext() as group:
            if group is not None:
                group.add(proc.pid)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            return proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _with_context(rows: pd.DataFrame, meta: pd.DataFrame, copies: int, config: dict) -> pd.DataFrame:
    if rows.empty:
        return rows
    needed = {q.name: int(q.select(meta, copies)["bytes"].sum()) for q in get_queries([FOOTPRINT.name, *config["queries"]])}
    versions = {f"{p}_version": package_version(p) for p in CLIENT_PACKAGES}
    return rows.assign(tier=config["tier"], copies=copies, needed_bytes=rows["query"].map(needed), **versions)


def query_counts(meta: pd.DataFrame, copies: int, config: dict) -> pd.DataFrame:
    return pd.DataFrame([{"query": q.name, "type": q.kind, "description": q.description, "where": q.where(),
                          "limit": q.limit(copies), "images": len(q.select(meta, copies)),
                          "seed_images": paper002.query_count(q.name, config["tier"]),
                          "seed_mini_images": paper002.query_count(q.name, "mini")}
                         for q in (QUERIES[n] for n in config["queries"])])


# ------------------------------------------------------------------ analysis
SHORT = {"L1-objects": "L1", "L2-tar": "L2", "L3-parquet": "L3", "L4-lance": "L4"}


def size_class(images: int, copies: int) -> str:
    """The seed's retrieval sizes at any tier: small = at most one class's images, mid = up to 20
    classes' worth, large beyond (at mini: Q1-Q3, Q10, Q11 small; Q4-Q7, Q9 mid; Q8 large)."""
    return "small" if images <= copies else "mid" if images <= 20 * copies else "large"


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per server, profile, memory tier, layout and query: median T, mean T +- 95% CI, D, requests,
    connections, D / minimum, and how many runs did not finish."""
    out = []
    keys = ["server", "net_profile", "memory_tier", "layout", "query"]
    for key, g in rows[rows["query"] != FOOTPRINT.name].groupby(keys, sort=False):
        ok = g[g.status == "ok"]
        mean, half, n = mean_ci(ok.seconds) if len(ok) else (float("nan"), float("nan"), 0)
        needed = int(g.needed_bytes.iloc[0])
        d = float(ok.bytes_down.median()) if len(ok) else float("nan")
        out.append({**dict(zip(keys, key)), "images": ok.images.max() if len(ok) else float("nan"),
                    "t_median_s": float(ok.seconds.median()) if len(ok) else float("nan"), "t_mean_s": mean,
                    "t_ci95_s": half, "runs": n, "did_not_finish": int((g.status != "ok").sum()),
                    "bytes_down": d, "needed_bytes": needed, "over_minimum": d / needed if needed else float("nan"),
                    "requests": float(ok.requests.median()) if len(ok) else float("nan"),
                    "connections": float(ok.connections.median()) if len(ok) else float("nan"),
                    "net_rtt_ms": float(g.net_rtt_ms.iloc[0]), "net_throughput_mbit": float(g.net_throughput_mbit.iloc[0]),
                    "peak_bytes": float(g.peak_bytes.max()) if "peak_bytes" in g else float("nan")})
    return pd.DataFrame(out)


def table1(written: pd.DataFrame) -> pd.DataFrame:
    """Ours (objects, stored bytes, client index bytes) beside the seed's Table 1 at mini."""
    seed = paper002.TABLE1[paper002.TABLE1.tier == "mini"].set_index("layout")
    ours = written.assign(short=written.layout.map(SHORT))
    return ours.assign(seed_mini_files=ours.short.map(seed.files), seed_mini_size=ours.short.map(seed.file_size),
                       seed_mini_index=ours.short.map(seed.index_size))[
        ["server", "layout", "tier", "images", "objects", "stored_bytes", "index_bytes", "write_seconds", "details",
         "seed_mini_files", "seed_mini_size", "seed_mini_index"]]


def costs(table: pd.DataFrame, config: dict, instance: str = "t3.medium", profile: str | None = None) -> pd.DataFrame:
    """Finding #4's form: network and compute cost of running every query once, per layout, on
    ``instance`` (its profile: the slowest bandwidth tier); did-not-finish queries are excluded and counted."""
    profile = profile or config["net_profiles"][0]
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED)]
    price = config["instance_usd_per_hour"][instance]
    out = {}
    for layout, g in part.groupby("layout", sort=False):
        network = g.bytes_down.sum() / 1e9 * config["egress_usd_per_gb"] + g.requests.sum() / 1000 * config["get_usd_per_1000"]
        compute = g.t_median_s.sum() / 3600 * price
        out[layout] = {"C_network": network, "C_compute": compute, "C_total": network + compute,
                       "T_total_s": g.t_median_s.sum(), "D_total_bytes": g.bytes_down.sum(),
                       "requests": g.requests.sum()}
    return pd.DataFrame(out)


def _ratio(table, profile, query_names, a, b) -> float:
    """Geometric mean over ``query_names`` of median T(a) / T(b) under ``profile``, unlimited memory."""
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED) & table["query"].isin(query_names)]
    t = part.pivot_table(index="query", columns="layout", values="t_median_s")
    if a not in t or b not in t or t.empty:
        return float("nan")
    return float(np.exp(np.log(t[a] / t[b]).mean()))


def crossover(table: pd.DataFrame, counts: pd.DataFrame, copies: int) -> pd.DataFrame:
    """Per profile and retrieval size: T(L1) / T(L2), T(L3) / best of L1 and L2, T(L4) / best of
    L1 and L2 (geometric means over the class's queries); the fastest layout of the class."""
    classes = counts.assign(size=[size_class(n, copies) for n in counts.images])
    out = []
    for profile in table.net_profile.unique():
        part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED)]
        if part.empty:
            continue
        for size in ("small", "mid", "large"):
            names = classes[classes["size"] == size]["query"].tolist()
            if not names:
                continue
            t = part[part["query"].isin(names)].pivot_table(index="query", columns="layout", values="t_median_s")
            best12 = t[["L1-objects", "L2-tar"]].min(axis=1) if {"L1-objects", "L2-tar"} <= set(t) else None
            geo = {layout: float(np.exp(np.log(t[layout]).mean())) for layout in t}
            row = {"net_profile": profile, "size": size, "queries": ",".join(names),
                   "fastest": min(geo, key=geo.get), "L1_over_L2": _ratio(table, profile, names, "L1-objects", "L2-tar")}
            for layout in ("L3-parquet", "L4-lance"):
                if best12 is not None and layout in t:
                    row[f"{SHORT[layout]}_over_best_L1_L2"] = float(np.exp(np.log(t[layout] / best12).mean()))
            out.append(row)
    return pd.DataFrame(out)


def bandwidth_scaling(table: pd.DataFrame, config: dict, counts: pd.DataFrame, copies: int) -> pd.DataFrame:
    """Per layout: T at the slowest tier / T at the fastest, over mid and large queries (the link
    rates differ 4x: 4.0 = bound by bandwidth, 1.0 = not at all)."""
    profiles = [p for p in config["net_profiles"] if p in set(table.net_profile)]
    if len(profiles) < 2:
        return pd.DataFrame()
    names = [q for q, n in zip(counts["query"], counts.images) if size_class(n, copies) != "small"]
    slow, fast = profiles[0], profiles[-1]
    part = table[(table.memory_tier == UNLIMITED) & table["query"].isin(names)]
    t = part.pivot_table(index=["layout", "query"], columns="net_profile", values="t_median_s")
    ratio = np.exp(np.log(t[slow] / t[fast]).groupby("layout").mean())
    rates = {p: PROFILES[p].rate for p in (slow, fast)}
    return pd.DataFrame({"slow_over_fast": ratio, "slow": f"{slow} ({rates[slow]})", "fast": f"{fast} ({rates[fast]})"})


def memory_frontier(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per layout and memory tier: how many queries finished, of how many."""
    part = table[table.memory_tier != UNLIMITED]
    if part.empty:
        return pd.DataFrame()
    order = [f"{g} GiB" for g in config["memory_tiers_gib"]]
    frame = part.assign(finished=part.did_not_finish == 0).groupby(["layout", "memory_tier"]).finished.agg(["sum", "count"])
    frame = frame.assign(text=frame["sum"].astype(int).astype(str) + "/" + frame["count"].astype(str))
    return frame["text"].unstack()[[o for o in order if o in set(part.memory_tier)]]


def smallest_tier_all_finish(table: pd.DataFrame, config: dict) -> dict:
    part = table[table.memory_tier != UNLIMITED]
    result = {}
    for layout, g in part.groupby("layout"):
        fine = [gib for gib in config["memory_tiers_gib"] if (g[g.memory_tier == f"{gib} GiB"].did_not_finish == 0).all()
                and (g.memory_tier == f"{gib} GiB").any()]
        result[layout] = min(fine) if fine else None
    return result


def _verdict(holds: bool | None) -> str:
    return "not comparable" if holds is None else "**holds**" if holds else "**does not hold**"


def _fmt(x: float, unit: str = "x") -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.2f}{unit}"


def server_comparison(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per other server, profile and layout: T(server) / T(first server), geometric mean over the
    queries, and bytes received over the first server's (the layout's bytes should not change)."""
    first = config["servers"][0]
    part = table[table.memory_tier == UNLIMITED]
    base = part[part.server == first].set_index(["net_profile", "layout", "query"])
    out = []
    for (server, profile, layout), g in part[part.server != first].groupby(["server", "net_profile", "layout"]):
        ref = base.loc[(profile, layout)].reindex(g["query"])
        out.append({"server": server, "vs": first, "net_profile": profile, "layout": layout,
                    "t_ratio": float(np.exp(np.log(g.t_median_s.to_numpy() / ref.t_median_s.to_numpy()).mean())),
                    "bytes_ratio": float(g.bytes_down.sum() / ref.bytes_down.sum())})
    return pd.DataFrame(out)


def findings(table: pd.DataFrame, counts: pd.DataFrame, config: dict, copies: int):
    from storebench.report.findings import Findings

    everything, table = table, table[table.server == config["servers"][0]]

    base = config["net_profiles"][0] if config["net_profiles"] else table.net_profile.iloc[0]
    cross = crossover(table, counts, copies)
    at = cross[cross.net_profile == base].set_index("size")
    lines = [f"Server {config['servers'][0]}; tier {config['tier']} ({copies} cop{'y' if copies == 1 else 'ies'} of each real image); retrieval "
             f"sizes as the seed's (small: at most one class, mid: up to 20 classes, large: beyond). "
             f"Verdicts at {base}{' (t3.medium tier)' if base == 's3-5g' else ''}; every profile is in the "
             "tables above.", "",
             "**Finding 1, latency crossover** (seed: " + paper002.FINDINGS[1] + "):", ""]

    def get(size, column):
        return at.loc[size, column] if size in at.index and column in at.columns else float("nan")

    checks = [
        ("small: L1 ~ L2", "T(L1)/T(L2)", get("small", "L1_over_L2"), lambda v: 0.8 <= v <= 1.25),
        ("mid: L1 wins", "T(L1)/T(L2)", get("mid", "L1_over_L2"), lambda v: v < 1),
        ("large: L2 wins", "T(L1)/T(L2)", get("large", "L1_over_L2"), lambda v: v > 1),
        ("L3 slow for small", "T(L3)/best(L1,L2)", get("small", "L3_over_best_L1_L2"), lambda v: v > 1),
        ("L3 slow for mid", "T(L3)/best(L1,L2)", get("mid", "L3_over_best_L1_L2"), lambda v: v > 1),
    ]
    lines += ["| seed's statement | ours | verdict |", "|---|---|---|"]
    for text, what, value, test in checks:
        lines.append(f"| {text} | {what} = {_fmt(value)} | {_verdict(test(value) if np.isfinite(value) else None)} |")
    fastest_large = at.loc["large", "fastest"] if "large" in at.index else None
    lines.append(f"| L3 fastest for very large | fastest on large: {fastest_large or 'n/a'} | "
                 f"{_verdict(None if fastest_large is None else fastest_large == 'L3-parquet')} |")
    tiers = smallest_tier_all_finish(table, config)
    if tiers:
        l3, others = tiers.get("L3-parquet"), [tiers.get(x) for x in ("L1-objects", "L2-tar")]
        need = lambda v: "none of the tiers" if v is None else f"{v} GiB"  # noqa: E731
        rank = [float("inf") if v is None else v for v in (l3, *others)]
        holds = None if "L3-parquet" not in tiers or min(rank) == float("inf") else rank[0] > max(rank[1:])
        lines.append("| L3 fails on small-memory clients | smallest tier where every query finishes: "
                     + ", ".join(f"{SHORT[k]} {need(v)}" for k, v in tiers.items()) + f" | {_verdict(holds)} |")
    l4 = {size: get(size, "L4_over_best_L1_L2") for size in ("small", "mid", "large")}
    lines += ["", "L4 (Lance, past the seed): T(L4)/best(L1,L2) " + ", ".join(f"{k} {_fmt(v)}" for k, v in l4.items())
              + ".", ""]

    # Finding 2: bytes over the minimum
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED) & (table.needed_bytes > 0)]
    over = part.groupby("layout").over_minimum.median()
    small_q = [q for q, n in zip(counts["query"], counts.images) if 0 < n and size_class(n, copies) == "small"]
    l3_selective = part[(part.layout == "L3-parquet") & part["query"].isin(small_q)].over_minimum
    l12 = [over.get(x, float("nan")) for x in ("L1-objects", "L2-tar")]
    lines += ["**Finding 2, bytes transferred** (seed: " + paper002.FINDINGS[2] + "): median D / minimum over the "
              "queries that return images: " + ", ".join(f"{SHORT[k]} {_fmt(v)}" for k, v in over.items()) + ". "
              f"L1 and L2 within 10% of the minimum: {_verdict(all(np.isfinite(v) and v <= 1.1 for v in l12))}. "
              f"L3 on the selective (small) queries: {_fmt(l3_selective.min())}-{_fmt(l3_selective.max())} the "
              f"minimum: {_verdict(bool(len(l3_selective)) and l3_selective.min() > 2 if len(l3_selective) else None)} "
              "(whole row groups read for a few images).", ""]

    # Finding 3: bottlenecks
    scaling = bandwidth_scaling(table, config, counts, copies)
    lines.append("**Finding 3, bottlenecks** (seed: " + paper002.FINDINGS[3] + "):")
    if not scaling.empty:
        lines.append(f"T at {scaling.slow.iloc[0]} / T at {scaling.fast.iloc[0]} on mid and large queries "
                     "(4.0 = bound by the link, 1.0 = not at all): "
                     + ", ".join(f"{SHORT[k]} {_fmt(v)}" for k, v in scaling.slow_over_fast.items()) + ".")
        l2, l1 = scaling.slow_over_fast.get("L2-tar", np.nan), scaling.slow_over_fast.get("L1-objects", np.nan)
        lines.append(f"L2 bound by bandwidth more than L1: {_verdict(l2 > l1 if np.isfinite(l1 + l2) else None)}.")
    lines.append("L1's requests: " + _latency_share(table, base, config) + "; L3's memory: see the memory tiers above.")
    lines.append("")
    cost = costs(table, config)
    if not cost.empty:
        shares = ", ".join(f"{SHORT[k]} {cost.loc['C_network', k] / cost.loc['C_total', k]:.0%}" for k in cost.columns)
        lines += ["**Finding 4, cost** (every query once, t3.medium's price and tier; seed: " + paper002.FINDINGS[4]
                  + "): " + ", ".join(f"{SHORT[k]} ${cost.loc['C_total', k]:.6f}" for k in cost.columns)
                  + f" (network: {shares} of it). "
                  "Our tier is far smaller than the seed's full ImageNet: compare the ratios between layouts, not the dollars.", ""]
    servers = server_comparison(everything, config)
    if not servers.empty:
        lines += [f"**The server, not the layout**: the same layouts on {', '.join(servers.server.unique())} vs "
                  f"{config['servers'][0]}, T ratio (geometric mean over the queries) "
                  + ", ".join(f"{SHORT[r.layout]} {_fmt(r.t_ratio)} at {r.net_profile}" for r in servers.itertuples())
                  + "; bytes received " + ", ".join(f"{SHORT[r.layout]} {_fmt(r.bytes_ratio)}" for r in servers.itertuples())
                  + " of the first server's. A layout's ranking that holds on both servers is the layout's.", ""]
    headline = (f"LayoutBench ({config['tier']}): small L1/L2 {_fmt(get('small', 'L1_over_L2'))}, large L1/L2 "
                f"{_fmt(get('large', 'L1_over_L2'))}; L3 reads {_fmt(l3_selective.max() if len(l3_selective) else np.nan)} "
                f"the minimum on selective queries; L4 (Lance) {_fmt(l4['mid'])} of the best of L1/L2 on mid queries")
    return Findings(headline, "\n".join(lines))


def _latency_share(table: pd.DataFrame, profile: str, config: dict) -> str:
    """How much of L1's time its request rounds explain: (requests / parallel) x RTT over T."""
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED) & (table.layout == "L1-objects")
                 & (table.requests > 0)]
    if part.empty or "net_rtt_ms" not in part:
        return "not measured"
    share = (np.ceil(part.requests / config["parallel"]) * part.net_rtt_ms / 1000 / part.t_median_s).clip(upper=1)
    return (f"rounds of {config['parallel']} requests x the profile's RTT explain {share.min():.0%}-{share.max():.0%} "
            "of T")


def figure(table: pd.DataFrame, config: dict):
    """Top: median T per query and layout, one panel per bandwidth tier. Bottom: bytes received
    over the minimum (base tier) and the share of queries finished per memory tier."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    unlimited = table[table.memory_tier == UNLIMITED]
    profiles = list(dict.fromkeys(unlimited.net_profile))
    queries = [q for q in config["queries"] if q in set(table["query"])]
    fig, axes = plt.subplots(2, max(len(profiles), 2), figsize=(5.2 * max(len(profiles), 2), 8.5), squeeze=False)
    for ax, profile in zip(axes[0], profiles):
        part = unlimited[unlimited.net_profile == profile].assign(ci=lambda f: f.t_ci95_s.fillna(0))
        part = part.set_index("query").loc[[q for q in queries if q in set(part["query"])]].reset_index()
        plots.grouped_bars(ax, part, "query", "layout", y="t_median_s", err="ci", hue_order=config["layouts"])
        ax.set_yscale("log")
        ax.set(title=f"T per query, {profile} ({PROFILES[profile].rate or 'unshaped'})", ylabel="seconds (median)")
    base = unlimited[unlimited.net_profile == profiles[0]] if profiles else unlimited
    base = base[base.needed_bytes > 0].assign(zero=0.0)
    if not base.empty:
        plots.grouped_bars(axes[1][0], base, "query", "layout", y="over_minimum", err="zero",
                           hue_order=config["layouts"])
        axes[1][0].set_yscale("log")
        axes[1][0].axhline(1, color="0.4", linestyle=":", linewidth=1)
        axes[1][0].set(title=f"bytes received / minimum needed, {profiles[0] if profiles else ''}", ylabel="ratio")
    memory = table[table.memory_tier != UNLIMITED]
    if not memory.empty:
        order = [f"{g} GiB" for g in config["memory_tiers_gib"]]
        share = memory.assign(done=memory.did_not_finish == 0).pivot_table(index="layout", columns="memory_tier",
                                                                           values="done", aggfunc="mean")
        share = share[[o for o in order if o in share.columns]]
        import seaborn as sns

        sns.heatmap(share, annot=True, fmt=".0%", vmin=0, vmax=1, cmap="RdYlGn", ax=axes[1][1], cbar=False)
        axes[1][1].set(title="queries finished per memory tier (scaled)", xlabel="seed's instance memory", ylabel="")
    for ax in axes[1][2:]:
        ax.axis("off")
    plots.footnote(fig, "Ours: real ImageNet JPEGs replicated to the tier, MinIO in a network namespace; T: first call "
                        "to last image verified, cold client; bytes counted at the client (headers included). "
                        "Memory tiers: the seed's GiB scaled by data size, above each client's measured footprint.")
    fig.tight_layout()
    return fig
