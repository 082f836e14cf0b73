"""Measure storebench's clients beside each system's own benchmark tool, on the same server, the same
value size and the same concurrency, in one run: after an unrecorded warm-up round, ``repeats``
interleaved rounds (ours, then the tool, then the other order), each a pass of each client. Every pass records its rate, the CPU the client
spent (ours: this process, all threads; a tool: its process, from rusage), the CPU the server spent
(its processes' CPU times, before and after), and the 1-minute load average. Our reads are verified
against what was written, outside the timed pass; the tools check nothing (as they are used).

Pairs (``pairs`` in params.yaml picks which):

- ``redis``: HMGET of k random fields of one hash, one connection (redis-py with hiredis), vs
  ``redis-benchmark`` HMGET of k fields; rates in objects/s.
- ``s3``: GETs of objects of each size from MinIO, 16 in flight, by minio-py (the paper's client) and
  obstore (the fast one), vs ``storebench-s3get`` (minio-go); rates in GETs/s.
- ``rados``: reads of 4 KiB objects, 16 in flight, by python-rados ``aio_read`` (a sliding window of 16) vs
  ``rados bench rand -t 16`` (of its own objects of the same size, in the same pool).
- ``rocksdb``: single-key gets of 3,000-byte values, one thread, by rocksdict vs ``db_bench readrandom``
  (each on its own DB of the same keys count and value size; page cache warm).
- ``webdataset``: the ImageNet sample in LayoutBench's L2 tar shards on MinIO, the whole set read by
  ``TarShards.query`` vs ``webdataset.WebDataset`` over presigned URLs of the same shards; images/s and MB/s.
- ``lance``: the sample as LayoutBench's L4 Lance dataset on MinIO, each of ``lance_queries`` answered by
  ``LanceDataset.query`` vs a plain ``take`` of the same rows (a pass repeats a small query, each time
  from a new dataset handle, up to ``lance_images_per_pass``); images/s and MB/s.

The last two compare with a reference library rather than a tool, timed in this process as ours, and
both sides' reads are verified (see ``readers``).

Table ``calibration``: one row per pass. ``tools``: each tool's version, or why it did not run.
``loaders``: the dataloaders run's loader vs a bare loop of the same store calls (its table, carried over
with its run id: the loaders are timed in that run, not here). ``client_memory``: the TileDB readers' memory
over many queries, with and without a fresh context (see ``memory``).
"""
from __future__ import annotations

import os
import tempfile
import time
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Callable, Literal

import numpy as np
import pandas as pd
import psutil
from pydantic import Field, model_validator

from storebench.core.experiment import ResultsDir, recorded_table
from storebench.core.progress import tqdm
from storebench.core.settings import NonNegativeInt, PositiveFloat, PositiveInt, Settings as Base, one_of
from storebench.data.datasets import imagenet
from storebench.experiments.harness.calibration import memory, native, readers
from storebench.layouts import S3Place
from storebench.layouts.lance import LanceDataset
from storebench.layouts.queries import QUERIES
from storebench.layouts.tarshards import TarShards
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system

EXPERIMENT = "calibration"
Pair = Literal["redis", "s3", "rados", "rocksdb", "webdataset", "lance"]
REFERENCE_LIBRARY = "reference library"  # the client_kind of webdataset and Lance's take (not a system's tool)
LAYOUT_BUCKET = "sb-calibration-layouts"
EACH_OWN = 0  # the concurrency of a layout comparison: each reader's own, named in its client label
NOT_AVAILABLE = {"cassandra-stress": "not installed: it ships only in Cassandra's binary tarball, which no "
                                     "registry reachable here serves (it is not on Maven Central)",
                 "DLIO 2.0.0": "not installed: its wheel requires TensorFlow, nvidia-dali-cuda110, torchvision, "
                               "torchaudio and mpi4py (an MPI build), gigabytes for one comparison; and as released it "
                               "formats a debug line per sample that made it ~70x slower in an earlier trial, so a fair "
                               "comparison would need a patched copy, which the suite does not ship. The loaders are "
                               "judged against a bare loop of the same store calls instead (the loaders table)"}


class Settings(Base):
    pairs: list[Pair] = []  # none: only the readers' memory (a part of a split measurement)
    redis_fields: list[PositiveInt] = Field(min_length=1)  # k of HMGET
    redis_value_bytes: PositiveInt
    redis_objects: PositiveInt  # fields in the hash
    redis_objects_per_pass: PositiveInt
    s3_object_bytes: list[PositiveInt] = Field(min_length=1)
    s3_objects: PositiveInt  # per size; each pass reads them all
    s3_in_flight: PositiveInt
    rados_object_bytes: PositiveInt
    rados_objects: PositiveInt
    rados_in_flight: PositiveInt
    rados_reads_per_pass: PositiveInt
    rados_seconds: PositiveFloat  # the length of a `rados bench rand` pass
    rocksdb_value_bytes: PositiveInt
    rocksdb_keys: PositiveInt
    rocksdb_reads_per_pass: PositiveInt
    layout_tier: Annotated[str, one_of("tier", imagenet.TIERS)]  # the ImageNet sample's copies (x1: the 1,000 JPEGs)
    layout_parallel: PositiveInt  # requests in flight of our L2 reader
    tar_shard_bytes: PositiveInt
    tar_coalesce_gap: NonNegativeInt
    lance_rows_per_group: PositiveInt
    lance_queries: list[Annotated[str, one_of("query", [*QUERIES, readers.WHOLE_SET.name])]] = Field(min_length=1)
    lance_images_per_pass: PositiveInt  # a pass repeats its query until it has read at least this many images
    memory_readers: list[memory.Reader] = []  # the TileDB readers whose memory is followed (none: not measured)
    memory_rows: PositiveInt = 3000  # rows of the real dataset each reader holds
    memory_queries: PositiveInt = 6000  # per pass
    memory_renew_every: PositiveInt = 1000  # queries per context with renewal (the suite's: QUERIES_PER_CONTEXT)
    memory_rounds: PositiveInt = 3

    @model_validator(mode="after")
    def _memory_counts(self):
        """Checked with the params, not after the other pairs have run."""
        if not (self.pairs or self.memory_readers):
            raise ValueError("calibration: nothing to measure (pairs and memory_readers are both empty)")
        if self.memory_readers:
            memory.check_counts(self.memory_queries, self.memory_renew_every)
        return self


def measure(settings: Settings, out: ResultsDir, progress: bool = True) -> None:
    """The pairs' tables (``calibration``, ``tools``, ``loaders``) where pairs are measured, and
    ``client_memory`` where memory readers are: a measurement split in parts writes each table in one part."""
    if settings.pairs:
        rows, tools = run(settings, progress)
        out.write("calibration", pd.DataFrame(rows))
        out.write("tools", pd.DataFrame(tools))
        loaders = loader_overheads(out.root)
        if loaders is not None:
            out.write("loaders", loaders)
    if settings.memory_readers:
        out.write("client_memory", memory.run(settings.memory_readers, settings.memory_rows, settings.memory_queries,
                                              settings.memory_renew_every, settings.memory_rounds, _scratch(),
                                              settings.seed, progress))


def loader_overheads(results_root: Path) -> pd.DataFrame | None:
    """The dataloaders run's loader-vs-bare-loop table (its rounds timed there, in that run), carried into
    these results with the run it came from, so the report shows every ratio beside the others."""
    found = recorded_table(results_root, "dataloaders", "dataloaders_overhead")
    if found is None:
        return None
    table, manifest = found
    return table.assign(source=f"dataloaders run {manifest.get('run_id', '')}".strip())


PAIRS: dict[str, Callable] = {}


def pair(name: str):
    def register(fn):
        PAIRS[name] = fn
        return fn
    return register


def run(config: Settings, progress: bool = True) -> tuple[list[dict], list[dict]]:
    rows, tools = [], [{"tool": t, "version": "", "status": why} for t, why in NOT_AVAILABLE.items()]
    bar = tqdm(total=len(config.pairs), desc=EXPERIMENT, unit="pair", disable=not progress, leave=False)
    with ServicePool(config.endpoints) as services:
        for name in config.pairs:
            try:
                made, tool = PAIRS[name](config, services)
                rows += made
                tools.append({**tool, "status": "ran"})
            except native.ToolMissing as missing:
                tools.append({"tool": name, "version": "", "status": str(missing)})
            bar.update()
    bar.close()
    return rows, tools


# ------------------------------------------------------------------------------------- one pass
class Passes:
    """The passes of one comparison: each client's label, and one row per pass."""

    def __init__(self, system: str, operation: str, value_bytes: int, concurrency: int, unit: str, server=None):
        self.key = dict(system=system, operation=operation, value_bytes=value_bytes, concurrency=concurrency,
                        unit=unit)
        self.server_pids = server.pids() if server is not None else []
        self.rows: list[dict] = []

    def ours(self, client: str, round_: int, ops: int, read: Callable[[], object], check: Callable[[object], None],
             payload_bytes: int | None = None):
        """Time ``read`` (one pass of ``ops`` operations, ``payload_bytes`` if they are counted) in this
        process; then ``check`` what it returned."""
        self._timed(client, "storebench", round_, ops, read, check, payload_bytes)

    def reference(self, client: str, round_: int, ops: int, read: Callable[[], object],
                  check: Callable[[object], None], payload_bytes: int | None = None):
        """A reference library's pass, timed and checked as ours."""
        self._timed(client, REFERENCE_LIBRARY, round_, ops, read, check, payload_bytes)

    def _timed(self, client, kind, round_, ops, read, check, payload_bytes):
        cpu, server, start = time.process_time(), self._server_cpu(), time.perf_counter()
        got = read()
        seconds = time.perf_counter() - start
        self._add(client, kind, round_, ops, seconds, time.process_time() - cpu, self._server_cpu() - server,
                  payload_bytes)
        check(got)

    def tool(self, client: str, round_: int, run_pass: Callable[[], native.ToolPass]):
        server = self._server_cpu()
        done = run_pass()
        self._add(client, "native tool", round_, done.ops, done.seconds, done.client_cpu_s,
                  self._server_cpu() - server)

    def _add(self, client, kind, round_, ops, seconds, client_cpu, server_cpu, payload_bytes=None):
        if round_ < 0:  # the warm-up
            return
        self.rows.append({**self.key, "client": client, "client_kind": kind, "round": round_, "ops": ops,
                          "seconds": seconds, "ops_per_s": ops / seconds,
                          "mb_per_s": payload_bytes / seconds / 1e6 if payload_bytes else np.nan,
                          "client_cpu_us_per_op": 1e6 * client_cpu / ops,
                          "server_cpu_us_per_op": 1e6 * server_cpu / ops if self.server_pids else np.nan,
                          "load_1min": os.getloadavg()[0]})

    def _server_cpu(self) -> float:
        total = 0.0
        for pid in self.server_pids:
            try:
                proc = psutil.Process(pid)
                for p in [proc, *proc.children(recursive=True)]:
                    times = p.cpu_times()
                    total += times.user + times.system
            except psutil.Error:
                pass
        return total


def interleaved(rounds: int, clients: list[Callable[[int], None]]) -> None:
    """A warm-up round (-1, not recorded), then ``rounds`` rounds, each running every client once, the
    order reversed every other round (drift hits all alike)."""
    for r in range(-1, rounds):
        for client in (clients if r % 2 == 0 else clients[::-1]):
            client(r)


def expect_equal(expected: list[bytes], what: str) -> Callable[[list], None]:
    def check(got):
        if list(got) != expected:
            wrong = next(i for i, (a, b) in enumerate(zip(got, expected)) if a != b) if len(got) == len(expected) \
                else f"{len(got)} of {len(expected)} returned"
            raise AssertionError(f"{what}: a read returned other bytes than were written (first at {wrong})")
    return check


def each(check: Callable[[list], None]) -> Callable[[list], None]:
    """``check`` of every read of a pass that repeats one read."""
    def check_all(reads):
        for got in reads:
            check(got)
    return check_all


def values(n: int, size: int, seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [rng.bytes(size) for _ in range(n)]


# ------------------------------------------------------------------------------------------ pairs
@pair("redis")
def redis(config: Settings, services: ServicePool) -> tuple[list[dict], dict]:
    written = values(config.redis_objects, config.redis_value_bytes, config.seed)
    rng = np.random.default_rng(config.seed)
    rows = []
    with open_system("redis", "memory", services, namespace="calibration", parser="hiredis") as store:
        store.clear()
        store.put_many(enumerate(written))
        client = f"redis-py {package_version('redis')} + hiredis, HMGET, one connection"
        tool = native.redis_benchmark_version()
        for k in config.redis_fields:
            requests = max(1, config.redis_objects_per_pass // k)
            batches = [rng.choice(config.redis_objects, size=k, replace=False).tolist() for _ in range(requests)]
            expected = [written[key] for batch in batches for key in batch]
            passes = Passes("redis", f"HMGET of {k} field{'s' if k > 1 else ''}", config.redis_value_bytes, 1,
                            "objects/s", store.local)

            def ours(r, batches=batches, passes=passes, expected=expected):
                passes.ours(client, r, len(expected), lambda: [v for b in batches for v in store.get_many(b)],
                            expect_equal(expected, "redis"))

            tool_requests = native.redis_benchmark_requests(store.endpoint, store.namespace, k, requests)

            def theirs(r, k=k, requests=tool_requests, passes=passes):
                passes.tool(tool, r, lambda: native.redis_benchmark(store.endpoint, store.namespace, k, requests))
            interleaved(config.repeats, [ours, theirs])
            rows += passes.rows
        store.clear()
    return rows, {"tool": tool, "version": tool}


@pair("s3")
def s3(config: Settings, services: ServicePool) -> tuple[list[dict], dict]:
    tool = native.s3get_version()
    rows = []
    for size in config.s3_object_bytes:
        written = values(config.s3_objects, size, config.seed + size)
        keys = list(range(config.s3_objects))
        with ExitStack() as stack:
            stores = {name: stack.enter_context(open_system(name, "disk-warm", services, namespace=f"calibration-{size}",
                                                            parallel=config.s3_in_flight))
                      for name in ("minio", "minio-obstore")}
            first = stores["minio"]
            first.clear()
            first.put_many(zip(keys, written))
            passes = Passes("minio", "GET", size, config.s3_in_flight, "GETs/s", first.local)
            names = [f"{k:012d}" for k in keys]  # storebench.stores.s3's object names

            def ours_with(store):
                label = f"{store.client_config()}"
                return lambda r: passes.ours(label, r, len(keys), lambda: store.get_many(keys),
                                             expect_equal(written, store.name))

            def theirs(r):
                passes.tool(tool, r, lambda: native.s3get(first.endpoint, first.bucket, names, config.s3_in_flight, 1))
            interleaved(config.repeats, [ours_with(stores["minio-obstore"]), ours_with(stores["minio"]), theirs])
            rows += passes.rows
            first.clear()
    return rows, {"tool": tool, "version": tool}


@pair("rados")
def rados(config: Settings, services: ServicePool) -> tuple[list[dict], dict]:
    tool = native.rados_version()
    size, in_flight = config.rados_object_bytes, config.rados_in_flight
    written = values(config.rados_objects, size, config.seed)
    rng = np.random.default_rng(config.seed)
    with open_system("ceph", "disk-warm", services, namespace="calibration", in_flight=in_flight) as store:
        store.clear()
        store.put_many(enumerate(written))
        endpoint, pool = store.endpoint, store.pool
        native.rados_bench_write(endpoint, pool, size, config.rados_objects, in_flight)
        try:
            reads = rng.integers(0, config.rados_objects, config.rados_reads_per_pass).tolist()
            expected = [written[k] for k in reads]
            passes = Passes("ceph", "read", size, in_flight, "reads/s", store.local)
            client = f"python-rados {store.system_version()}: aio_read, a sliding window of {in_flight} in flight"
            interleaved(config.repeats, [
                lambda r: passes.ours(client, r, len(reads), lambda: store.get_many(reads),
                                      expect_equal(expected, "ceph")),
                lambda r: passes.tool(tool, r, lambda: native.rados_bench_read(endpoint, pool, config.rados_seconds,
                                                                               in_flight))])
        finally:
            native.rados_bench_cleanup(endpoint, pool)
            store.clear()
    return passes.rows, {"tool": tool, "version": tool}


@pair("rocksdb")
def rocksdb(config: Settings, services: ServicePool) -> tuple[list[dict], dict]:
    tool = native.db_bench_version()
    size, n = config.rocksdb_value_bytes, config.rocksdb_keys
    written = values(n, size, config.seed)
    rng = np.random.default_rng(config.seed)
    reads = rng.integers(0, n, config.rocksdb_reads_per_pass).tolist()
    expected = [written[k] for k in reads]
    with tempfile.TemporaryDirectory(prefix="calibration-db_bench-", dir=_scratch()) as scratch, \
            open_system("rocksdb", "disk-warm", services, namespace="calibration") as store:
        store.clear()
        store.put_many(enumerate(written))
        store.flush()
        native.db_bench_fill(Path(scratch), size, n)
        passes = Passes("rocksdb", "get", size, 1, "reads/s")
        client = f"{store.client_config()}: get, one thread"
        interleaved(config.repeats, [
            lambda r: passes.ours(client, r, len(reads), lambda: [store.get(k) for k in reads],
                                  expect_equal(expected, "rocksdb")),
            lambda r: passes.tool(tool, r, lambda: native.db_bench_read(Path(scratch), size, n,
                                                                        config.rocksdb_reads_per_pass))])
        store.clear()
    return passes.rows, {"tool": tool, "version": tool}


@pair("webdataset")
def webdataset(config: Settings, services: ServicePool) -> tuple[list[dict], dict]:
    data = readers.sample(config.layout_tier)
    endpoint, server = services.endpoint("minio", "disk-warm")
    readers.empty_bucket(endpoint, LAYOUT_BUCKET)
    with tempfile.TemporaryDirectory(prefix="calibration-L2-", dir=_scratch()) as index_dir:
        layout = TarShards(S3Place(endpoint, LAYOUT_BUCKET, f"{data.tier}/L2-tar"), index_dir,
                           parallel=config.layout_parallel, shard_bytes=config.tar_shard_bytes,
                           coalesce_gap=config.tar_coalesce_gap)
        shards = layout.write(data.meta, data.image).objects
        urls = readers.presigned_urls(layout.place, [layout.shard_name(s) for s in range(shards)])
        expected = data.expected(readers.WHOLE_SET)
        payload, check = sum(len(b) for _, b in expected), expect_equal(expected, "L2 tar shards")
        passes = Passes("minio", f"L2 tar shards, {described(readers.WHOLE_SET, len(expected))}",
                        data.mean_image_bytes, EACH_OWN, "images/s", server)
        ours = (f"storebench L2-tar: TarShards.query, obstore {package_version('obstore')} range GETs, "
                f"{config.layout_parallel} in flight, {shards} shards of <= {config.tar_shard_bytes / 1e6:g} MB, "
                f"members within {config.tar_coalesce_gap:,} B in one GET")
        version = package_version("webdataset")
        tool = f"webdataset {version}: WebDataset over presigned GET URLs (its curl pipe), one shard after another"
        interleaved(config.repeats, [
            lambda r: passes.ours(ours, r, len(expected), lambda: list(layout.query(readers.WHOLE_SET, data.copies)),
                                  check, payload),
            lambda r: passes.reference(tool, r, len(expected), lambda: readers.webdataset_read(urls), check,
                                       payload)])
    readers.empty_bucket(endpoint, LAYOUT_BUCKET)
    return passes.rows, {"tool": "webdataset", "version": version}


@pair("lance")
def lance(config: Settings, services: ServicePool) -> tuple[list[dict], dict]:
    warnings.filterwarnings("ignore", message="lance is not fork-safe")  # the tools fork, and exec at once
    data = readers.sample(config.layout_tier)
    endpoint, server = services.endpoint("minio", "disk-warm")
    readers.empty_bucket(endpoint, LAYOUT_BUCKET)
    layout = LanceDataset(S3Place(endpoint, LAYOUT_BUCKET, f"{data.tier}/L4-lance"), _scratch(),
                          rows_per_group=config.lance_rows_per_group)
    layout.write(data.meta, data.image)
    version = package_version("pylance")
    ours = (f"storebench L4-lance: LanceDataset.query (pylance {version}), a filtered scan of the metadata for the "
            f"keys, then _take_rows of 256 rows at a time")
    tool = f"pylance {version} take: lance.dataset(uri).take(row offsets, columns=[key, image]), one call"
    rows = []
    for query in readers.queries(config.lance_queries):
        expected = data.expected(query)
        if not expected:
            raise ValueError(f"calibration: {query.name} selects no image at tier {data.tier}; pick another query")
        times = -(-config.lance_images_per_pass // len(expected))  # each a cold query: a new dataset handle
        offsets = readers.row_offsets(data.meta, query, data.copies)
        check = each(expect_equal(expected, f"L4 Lance {query.name}"))
        images, payload = times * len(expected), times * sum(len(b) for _, b in expected)
        passes = Passes("minio", f"L4 Lance, {described(query, len(expected))}", data.mean_image_bytes, EACH_OWN,
                        "images/s", server)

        def ours_pass(r, query=query, passes=passes, times=times, check=check, images=images, payload=payload):
            passes.ours(ours, r, images, lambda: [list(layout.query(query, data.copies)) for _ in range(times)],
                        check, payload)

        def take_pass(r, offsets=offsets, passes=passes, times=times, check=check, images=images, payload=payload):
            options = layout.storage_options()
            passes.reference(tool, r, images,
                             lambda: [readers.lance_take(layout.uri, options, offsets) for _ in range(times)],
                             check, payload)
        interleaved(config.repeats, [ours_pass, take_pass])
        rows += passes.rows
    readers.empty_bucket(endpoint, LAYOUT_BUCKET)
    return rows, {"tool": "pylance (Lance take)", "version": version}


def described(query, images: int) -> str:
    """``the whole set of 1,000 images``, ``Q8 (width / height greater than 1.5), 181 images``."""
    count = f"{images:,} image{'s' if images != 1 else ''}"
    return f"the whole set of {count}" if query is readers.WHOLE_SET else f"{query.name} ({query.description}), {count}"


def _scratch() -> Path:
    from storebench.testbed.locations import store_root

    root = store_root("calibration-scratch", "disk-warm")
    root.mkdir(parents=True, exist_ok=True)
    return root
