"""LayoutBench (seed 002): one tier of the ImageNet sample (storebench.data.imagetiers: the real JPEGs and
re-encoded copies of them) written in five layouts on S3 (L1 one object per image, L2 tar shards, L3
Parquet blobs read by DuckDB in class order and sorted by label, L4 Lance), then Q1-Q11 against each,
on a real S3 server behind network profiles (bandwidth tiers, 20x slower in time: see
storebench.testbed.netprofiles) and under memory limits (memory tiers). Per query: T (first call to
last image verified, cold client), D (bytes the client received, counted by storebench.testbed.wiretap,
headers included), requests, connections; cost from T and D with the seed's prices. For the L3
layouts, what min/max pruning lets a reader skip (row groups, bytes) is recorded beside.

The S3 server runs in a network namespace of its own (storebench.testbed.netns) so that a profile's rate
is a token bucket on the whole link, as an instance's NIC; a Toxiproxy relay adds S3's latency to
the first byte. Each (server, profile, layout) is timed in one client process. Memory tiers: each
layout's client footprint is measured first (a fresh client answering a query that needs no image,
its whole process charged to a memory cgroup), then every query runs in a FRESH client process in a
cgroup limited to a stated multiple of that footprint (so no query inherits another's memory, and
the order of queries does not matter): an OOM kill, or an engine that stops for want of memory,
marks the query "did not finish".
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

from storebench.data import imagetiers
from storebench.data.datasets import imagenet
from storebench.experiments.layoutbench import published as paper002
from typing import Annotated, Literal

from pydantic import Field

from storebench.core.repeats import RepeatPolicy
from storebench.core.experiment import ResultsDir
from storebench.core.settings import NetProfileName, NonNegativeFloat, NonNegativeInt, PositiveInt, Settings as Base, one_of
from storebench.experiments.common import Skipped, record_skipped
from storebench.experiments.layoutbench.layouts import (FOOTPRINT_QUERY, FOOTPRINT_TIER, SERVERS, UNLIMITED,
                                                        memory_tier_name)
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
CLIENT_PACKAGES = ("obstore", "duckdb", "pylance", "pyarrow")


class Settings(Base):
    tier: Annotated[str, one_of("tier", imagenet.TIERS)]
    layouts: list[Annotated[str, one_of("layout", LAYOUTS)]] = Field(min_length=1)
    queries: list[Annotated[str, one_of("query", QUERIES)]] = Field(min_length=1)
    servers: list[Literal[SERVERS]] = Field(min_length=1)
    net_profiles: list[NetProfileName]
    memory_profile: NetProfileName
    other_servers_profiles: list[NetProfileName]
    memory_tiers: list[Annotated[float, Field(gt=1)]]  # multiples of each layout's measured client footprint
    footprint_runs: PositiveInt = 3  # fresh clients answering Q0; the footprint is their largest peak
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
    parquet = {"file_bytes": config["parquet_file_bytes"], "row_group_rows": config["row_group_rows"]}
    return {"L1-objects": {}, "L2-tar": {"shard_bytes": config["shard_bytes"], "coalesce_gap": config["coalesce_gap"]},
            "L3-parquet": parquet, "L3-parquet-sorted": parquet,
            "L4-lance": {"rows_per_group": config["lance_rows_per_group"]}}[name] | {"parallel": config["parallel"]}


@dataclass
class LayoutRun:
    config: dict
    rows: pd.DataFrame = field(default_factory=pd.DataFrame)      # one row per query run
    written: pd.DataFrame = field(default_factory=pd.DataFrame)   # Table 1: per server and layout
    profiles: pd.DataFrame = field(default_factory=pd.DataFrame)  # what each profile delivered, measured
    counts: pd.DataFrame = field(default_factory=pd.DataFrame)    # per query: ours vs the seed's
    rowgroups: pd.DataFrame = field(default_factory=pd.DataFrame)  # per L3 layout and query: what pruning may skip
    notes: list[str] = field(default_factory=list)
    not_measured: list[dict] = field(default_factory=list)

    @property
    def skipped(self) -> list[Skipped]:
        return [Skipped(",".join(self.config["servers"]), "", item["what"], item["why"]) for item in self.not_measured]

    def save(self, out: ResultsDir) -> None:
        provenance = machine()
        for frame, name in ((self.rows, EXPERIMENT), (self.written, f"{EXPERIMENT}_write"),
                            (self.profiles, f"{EXPERIMENT}_profiles"), (self.counts, f"{EXPERIMENT}_counts"),
                            (self.rowgroups, f"{EXPERIMENT}_rowgroups")):
            out.write(name, frame.assign(**provenance, scale=self.config["scale"]))
        record_skipped(self, out)


# ------------------------------------------------------------------ the run
def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """Every layout written on every server, then the queries under every profile and memory tier, into ``out``."""
    run(settings, out, progress)


def run(settings: Settings, out: ResultsDir | None = None, progress: bool = True) -> LayoutRun:
    config = settings.as_dict()
    policy = settings.policy
    tier = imagetiers.image_tier(config["tier"], progress=progress)
    meta, copies = tier.meta, tier.copies
    result = LayoutRun(config)
    result.counts = query_counts(meta, copies, config)
    result.rowgroups = row_group_reads(meta, copies, config)
    work = scratch_dir(EXPERIMENT)
    meta_path = work / "meta.parquet"
    meta.to_parquet(meta_path)
    rows, written, profiles = [], [], []
    hop = _hop(result)
    cgroups = memlimits.available()
    sweeps = _sweeps(config, result, hop is not None, cgroups)
    try:
        with ServicePool(config["endpoints"], hop=hop) as services, ExitStack() as stack:
            toxiproxy = None
            for i, server in enumerate(sorted(config["servers"], key=SERVERS.index)):
                endpoint, service = services.endpoint(server, "disk-warm")
                version = service.version() if service is not None else "external"
                bucket = _bucket(endpoint, config["tier"])
                index_dir = work / server
                for name in config["layouts"]:
                    written.append(_write(name, config, endpoint, bucket, index_dir, meta, tier.image, server, version,
                                          progress))
                if toxiproxy is None and any(PROFILES[p].relay for p in _profiles(config)):
                    from storebench.services import local_service
                    toxiproxy = stack.enter_context(local_service("toxiproxy"))
                for profile, tiers in (sweeps if i == 0 else other_server_sweeps(config, sweeps)):
                    with NetworkPath(profile, hop=hop, toxiproxy=toxiproxy) as path:
                        net = {**path.measure(), "net_rate": PROFILES[profile].rate or "unshaped",
                               "net_time_scale": PROFILES[profile].time_scale}
                        profiles.append({"server": server, **net})
                        routed = path.route(endpoint)
                        with Wiretap(routed["host"], routed["port"]) as tap:
                            client = Client(config, index_dir, meta_path, tap, copies, work,
                                            no_cgroups=cgroups is not None)
                            for name in config["layouts"]:
                                place = S3Place(tap.endpoint(routed), bucket, f"{config['tier']}/{name}")
                                found = _layout_sweep(client, name, place, tiers, policy, progress,
                                                      f"{server} {profile}")
                                rows += [{**r, "server": server, "server_version": version, "layout": name, **net}
                                         for r in found]
    finally:
        if hop is not None:
            hop.delete()
    result.rows = _with_context(pd.DataFrame(rows), meta, copies, config)
    result.written = pd.DataFrame(written)
    result.profiles = pd.DataFrame(profiles)
    if out is not None:
        result.save(out)
    return result


def _layout_sweep(client: "Client", name: str, place: S3Place, tiers: list, policy: RepeatPolicy, progress: bool,
                  label: str) -> list[dict]:
    """One layout under one profile: timed without a limit (UNLIMITED in ``tiers``), then, if ``tiers``
    has memory multiples, its footprint and every query in a fresh client under each multiple of it."""
    rows = []
    if UNLIMITED in tiers:
        found = client.timed(name, place, policy)
        rows += [{**r, "memory_tier": UNLIMITED} for r in found]
    multiples = [m for m in tiers if m != UNLIMITED]
    if not multiples:
        return rows
    peaks = [client.fresh(name, place, FOOTPRINT.name, None) for _ in range(client.config["footprint_runs"])]
    footprint = max(r["peak_bytes"] for r in peaks)
    rows += [{**r, "repeat": i, "memory_tier": FOOTPRINT_TIER, "footprint_bytes": footprint}
             for i, r in enumerate(peaks)]
    for multiple in tqdm(multiples, desc=f"{label} {name} memory tiers", disable=not progress):
        limit = int(multiple * footprint)
        for query in client.config["queries"]:
            row = client.fresh(name, place, query, limit)
            rows.append({**row, "memory_tier": memory_tier_name(multiple), "memory_multiple": multiple,
                         "footprint_bytes": footprint, "memory_limit_bytes": limit, "repeats": 1, "passes": 1,
                         "ci_target_met": False})
    return rows


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


def _write(name, config, endpoint, bucket, index_dir, meta, read_image, server, version, progress) -> dict:
    # lance warns at every later fork; ours (the query clients) exec a new interpreter at once
    warnings.filterwarnings("ignore", message="lance is not fork-safe")
    layout = get_layout(name)(S3Place(endpoint, bucket, f"{config['tier']}/{name}"), index_dir,
                              **layout_options(config, name))
    with tqdm(total=len(meta), desc=f"{server}: writing {name}", unit="img", disable=not progress) as bar:
        def image(filename: str) -> bytes:   # the layout asks for each image once: the bar's tick
            bar.update()
            return read_image(filename)

        start = time.perf_counter()
        written = layout.write(meta, image)
        seconds = time.perf_counter() - start
    return {"server": server, "server_version": version, "layout": name, "tier": config["tier"],
            "images": len(meta), "objects": written.objects, "stored_bytes": written.stored_bytes,
            "index_bytes": written.index_bytes, "write_seconds": seconds,
            "details": json.dumps(written.details)}


def _profiles(config: dict) -> list[str]:
    return list(dict.fromkeys([*config["net_profiles"], config["memory_profile"]]))


def _sweeps(config: dict, result: LayoutRun, has_hop: bool, cgroups: str | None):
    """(profile, [UNLIMITED and/or memory multiples]): every profile timed without a limit, then the
    memory tiers under ``memory_profile``. What this machine cannot provide (a link rate without a
    namespace, a memory limit without cgroups) is listed as not measured, never run without."""
    sweeps = {}
    for profile in _profiles(config):
        if PROFILES[profile].rate and not has_hop:
            result.not_measured.append({"what": f"profile {profile}", "why": "its link rate needs a network namespace"})
        elif profile in config["net_profiles"]:
            sweeps[profile] = [UNLIMITED]
        else:
            sweeps[profile] = []
    tiers = list(config["memory_tiers"])
    if tiers and cgroups is not None:
        result.not_measured.append({"what": "memory tiers", "why": cgroups})
    elif tiers and config["memory_profile"] in sweeps:
        sweeps[config["memory_profile"]] += tiers
    return [(profile, tiers) for profile, tiers in sweeps.items() if tiers]


def other_server_sweeps(config: dict, sweeps: list) -> list:
    """A second S3 server is measured under ``other_servers_profiles`` only, without memory tiers:
    enough to tell what is the layout's and what the server's."""
    return [(profile, [UNLIMITED]) for profile, tiers in sweeps
            if profile in config["other_servers_profiles"] and UNLIMITED in tiers]


@dataclass
class Client:
    """Runs the query client (storebench.experiments.layoutbench.layout_client) of a layout in a process
    of its own, in a memory cgroup from before its imports (``no_cgroups``: none at all)."""
    config: dict
    index_dir: Path
    meta_path: Path
    tap: Wiretap
    copies: int
    work: Path
    no_cgroups: bool = False

    def spec(self, name: str, place: S3Place, plan: list, **extra) -> dict:
        out = self.work / f"client-{os.getpid()}-{time.monotonic_ns()}.jsonl"
        return {"layout": name, "options": layout_options(self.config, name), "endpoint": place.endpoint,
                "bucket": place.bucket, "prefix": place.prefix, "index_dir": str(self.index_dir),
                "meta": str(self.meta_path), "copies": self.copies, "plan": plan,
                "counter_file": str(self.tap.counter_file), "out": str(out), **extra}

    def timed(self, name: str, place: S3Place, policy: RepeatPolicy) -> list[dict]:
        """The footprint query once, then every query under ``policy`` (storebench.core.repeats: an
        unrecorded warm-up sets each query's passes per repeat, then rounds until each query's CI
        target or cap), in one client process with no memory limit."""
        spec = self.spec(name, place, [(0, FOOTPRINT.name)], policy=asdict(policy), queries=self.config["queries"])
        code, rows = self._run(spec, None)
        if code == WRONG_ANSWER_EXIT:
            raise AssertionError(f"{name} returned a wrong answer (see the client's message above)")
        if code != 0:
            raise RuntimeError(f"the {name} query client failed (exit {code}) after {len(rows)} results")
        return _with_cells(rows, policy)

    def fresh(self, name: str, place: S3Place, query: str, limit: int | None) -> dict:
        """``query`` once in a fresh client process, its cgroup limited to ``limit`` bytes (None: only
        measured); an OOM kill is "did not finish"."""
        code, rows = self._run(self.spec(name, place, [(0, query)], memory_limit=limit), limit)
        if code == WRONG_ANSWER_EXIT:
            raise AssertionError(f"{name} returned a wrong answer to {query} (see the client's message above)")
        if code == 0 and rows:
            return rows[0]
        if limit is not None and code in (-9, 137):
            return {"query": query, "repeat": 0, "status": "did not finish",
                    "reason": f"OOM-killed at a {limit / 2**20:.1f} MiB limit"}
        raise RuntimeError(f"the {name} query client failed (exit {code}) at {query}")

    def _run(self, spec: dict, limit: int | None) -> tuple[int, list[dict]]:
        code = _client_process(spec, limit, not self.no_cgroups)
        out = Path(spec["out"])
        return code, [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


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
    only; ``cgroups`` False: none at all), moved in before it imports anything; its exit code."""
    spec_path = Path(spec["out"]).with_suffix(".json")
    spec_path.write_text(json.dumps(spec))
    proc = subprocess.Popen([sys.executable, "-m", "storebench.experiments.layoutbench.layout_client", str(spec_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        if proc.stdout.readline().strip() != "started":
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
    """Per query: what it selects at this tier (images, bytes) beside the seed's count at this tier and at mini."""
    out = []
    for q in (QUERIES[n] for n in config["queries"]):
        chosen = q.select(meta, copies)
        out.append({"query": q.name, "type": q.kind, "description": q.description, "where": q.where(),
                    "seed_predicate": q.seed_predicate or "", "limit": q.limit(copies), "images": len(chosen),
                    "image_bytes": int(chosen["bytes"].sum()), "tier": config["tier"], "tier_images": len(meta),
                    "tier_bytes": int(meta["bytes"].sum()), "seed_images": paper002.query_count(q.name, config["tier"]),
                    "seed_mini_images": paper002.query_count(q.name, "mini")})
    return pd.DataFrame(out)


def row_group_reads(meta: pd.DataFrame, copies: int, config: dict) -> pd.DataFrame:
    """Per Parquet layout and query: row groups (and image bytes) in all, holding a match, and not
    excluded by min/max statistics (storebench.layouts.parquet: ``reads``)."""
    out = []
    for name in config["layouts"]:
        layout = get_layout(name)
        if not hasattr(layout, "reads"):
            continue
        reader = layout(S3Place({}, "", ""), Path("."), **layout_options(config, name))
        for q in get_queries([FOOTPRINT.name, *config["queries"]]):
            out.append({"layout": name, "query": q.name, **reader.reads(meta, q, copies)})
    return pd.DataFrame(out)
