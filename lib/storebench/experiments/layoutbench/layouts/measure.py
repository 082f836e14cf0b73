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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from storebench.data.datasets import imagenet
from storebench.experiments.layoutbench import published as paper002
from typing import Annotated, Literal

from pydantic import Field

from storebench.core.repeats import RepeatPolicy
from storebench.core.experiment import ResultsDir
from storebench.core.settings import NetProfileName, NonNegativeFloat, NonNegativeInt, PositiveInt, Settings as Base, one_of
from storebench.experiments.common import Skipped, record_skipped
from storebench.experiments.layoutbench.layouts import FOOTPRINT_QUERY, UNLIMITED
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
from storebench.testbed.wiretap import Wiretap
from storebench.experiments.layoutbench.layout_client import WRONG_ANSWER_EXIT

EXPERIMENT = "layouts"
SERVERS = ("minio", "rgw")
CLIENT_PACKAGES = ("obstore", "duckdb", "pylance", "pyarrow")


class Settings(Base):
    tier: Annotated[str, one_of("tier", imagenet.TIERS)]
    layouts: list[Annotated[str, one_of("layout", LAYOUTS)]] = Field(min_length=1)
    queries: list[Annotated[str, one_of("query", QUERIES)]] = Field(min_length=1)
    servers: list[Literal[SERVERS]] = Field(min_length=1)
    net_profiles: list[NetProfileName]
    memory_profile: NetProfileName
    other_servers_profiles: list[NetProfileName]
    memory_tiers_gib: list[NonNegativeInt]
    parallel: PositiveInt
    shard_bytes: PositiveInt
    coalesce_gap: NonNegativeInt
    parquet_file_bytes: PositiveInt
    row_group_rows: PositiveInt
    lance_rows_per_group: PositiveInt
    instance_usd_per_hour: dict[str, NonNegativeFloat]
    egress_usd_per_gb: NonNegativeFloat
    get_usd_per_1000: NonNegativeFloat
    prices_source: str


assert FOOTPRINT.name == FOOTPRINT_QUERY


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

    @property
    def skipped(self) -> list[Skipped]:
        return [Skipped(",".join(self.config["servers"]), "", item["what"], item["why"]) for item in self.not_measured]

    def save(self, out: ResultsDir) -> None:
        provenance = machine()
        for frame, name in ((self.rows, EXPERIMENT), (self.written, f"{EXPERIMENT}_write"),
                            (self.profiles, f"{EXPERIMENT}_profiles"), (self.counts, f"{EXPERIMENT}_counts")):
            out.write(name, frame.assign(**provenance, scale=self.config["scale"]))
        record_skipped(self, out)


# ------------------------------------------------------------------ the run
def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """Every layout written on every server, then the queries under every profile and memory tier, into ``out``."""
    run(settings, out, progress)


def run(settings: Settings, out: ResultsDir | None = None, progress: bool = True) -> LayoutRun:
    config = settings.as_dict()
    policy = settings.policy
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
                        net = {**path.measure(), "net_rate": PROFILES[profile].rate or "unshaped"}
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
                                                       meta_path, tap, config, copies, limit, work, policy,
                                                       cgroups is None)
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
    if out is not None:
        result.save(out)
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


def run_client(name, options, place, index_dir, meta_path, tap, config, copies, limit, work, policy: RepeatPolicy,
               cgroups: bool = True) -> list[dict]:
    """The footprint query, then every query in a client process in a memory cgroup of its own
    (``limit`` None: it only measures). Unlimited, the client runs the queries under ``policy``
    (storebench.core.repeats: an unrecorded warm-up sets each query's passes per repeat, then rounds
    until each query's CI target or cap); under a limit, each query once. After an OOM kill the
    query it was running "did not finish" and a new client goes on with the rest."""
    todo = [(0, FOOTPRINT.name)] + ([] if limit is None else [(0, q) for q in config["queries"]])
    adaptive = {"policy": asdict(policy), "queries": config["queries"]} if limit is None else {}
    rows = []
    while todo:
        out = work / f"client-{os.getpid()}-{time.monotonic_ns()}.jsonl"
        spec = {"layout": name, "options": options, "endpoint": place.endpoint, "bucket": place.bucket,
                "prefix": place.prefix, "index_dir": str(index_dir), "meta": str(meta_path), "copies": copies,
                "plan": todo, "counter_file": str(tap.counter_file), "out": str(out), **adaptive}
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
    return _with_cells(rows, policy if limit is None else RepeatPolicy.exactly(1))


def _with_cells(rows: list[dict], policy: RepeatPolicy) -> list[dict]:
    """Each row with its query's cell fields (repeats, whether the CI target was met, passes)."""
    seconds: dict[str, list[float]] = {}
    for row in rows:
        if row["status"] == "ok":
            seconds.setdefault(row["query"], []).append(row["seconds"])
    return [{**row, "repeats": len(seconds.get(row["query"], [])),
             "ci_target_met": policy.met(seconds.get(row["query"], [])), "passes": row.get("passes", 1)}
            for row in rows]


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
