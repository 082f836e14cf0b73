"""Each system's own benchmark tool, run on the server storebench's client reads from: one function per
tool, each returning what one pass did (``ToolPass``). The tools are found on PATH or in the storebench
cache (``env/tools/install-tools.sh`` installs the ones not already there); a missing tool is
``ToolMissing`` with what installs it.

- ``redis-benchmark`` (Debian redis-tools): HMGET of k fields over one connection, no pipelining; its
  passes are sized by trial passes to last 0.25 s or more (more requests than storebench's pass when
  needed), since it times in whole milliseconds.
- ``rados bench`` (Debian ceph-common): ``write --no-cleanup`` once, then ``rand`` passes, t in flight.
- ``db_bench`` (Debian rocksdb-tools): ``fillrandom`` once, then ``readrandom`` passes, one thread.
- ``storebench-s3get`` (built from env/tools/s3get): GETs with minio-go, MinIO's Go SDK, c in flight.
  (MinIO's own benchmark, warp, is not served by the Go module proxy here: this loop stands in for a
  native S3 client, and is labelled so.)
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import resource
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from storebench.paths import cache_dir


class ToolMissing(RuntimeError):
    pass


@dataclass(frozen=True)
class ToolPass:
    ops: int  # operations the tool counted (GETs, reads, or objects for HMGET of k fields)
    seconds: float  # as the tool timed them
    client_cpu_s: float  # CPU of the tool's process (user + system, from its rusage)


def find(tool: str, installs: str) -> str:
    path = shutil.which(tool) or (str(cache_dir() / "bin" / tool) if (cache_dir() / "bin" / tool).exists() else None)
    if path is None:
        raise ToolMissing(f"{tool} is not installed ({installs}; env/tools/install-tools.sh installs it)")
    return path


def version(binary: str, *args: str, pattern: str = r"(\d+\.\d+(?:\.\d+)?)") -> str:
    out = subprocess.run([binary, *args], capture_output=True, text=True, timeout=30)
    found = re.search(pattern, out.stdout + out.stderr)
    return found.group(1) if found else "unknown"


def run_tool(cmd: list[str], timeout: float, stdin: str | None = None, env: dict | None = None
             ) -> tuple[str, float]:
    """(stdout, CPU seconds of the tool's process) of ``cmd``, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd[:3])} ...` failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, cpu


# ------------------------------------------------------------------------------------------ Redis
REDIS_BENCHMARK_MIN_SECONDS = 0.25  # its clock counts whole milliseconds: a pass this long is timed to 0.4%


def redis_benchmark(endpoint: dict, key: str, k: int, requests: int) -> ToolPass:
    """HMGET of fields 0..k-1 of hash ``key``, ``requests`` times, one connection, no pipelining;
    ops are objects (requests x k). Replies are not checked by the tool."""
    binary = find("redis-benchmark", "Debian redis-tools")
    auth = ["-a", endpoint["password"]] if endpoint.get("password") else []
    out, cpu = run_tool([binary, "-h", endpoint["host"], "-p", str(endpoint["port"]), *auth, "-c", "1",
                         "-n", str(requests), "-P", "1", "--csv", "HMGET", key, *map(str, range(k))],
                        timeout=600)
    rps = float(next(csv.DictReader(io.StringIO(out)))["rps"])  # "inf" when it timed 0 ms
    return ToolPass(requests * k, requests / rps, cpu)


def redis_benchmark_requests(endpoint: dict, key: str, k: int, requests: int) -> int:
    """At least ``requests``: as many as make a pass that redis-benchmark times at
    ``REDIS_BENCHMARK_MIN_SECONDS`` or more (found by trial passes, which also warm up)."""
    while (seconds := redis_benchmark(endpoint, key, k, requests).seconds) < REDIS_BENCHMARK_MIN_SECONDS:
        requests = 2 * requests if seconds == 0 else int(requests * 1.2 * REDIS_BENCHMARK_MIN_SECONDS / seconds) + 1
    return requests


def redis_benchmark_version() -> str:
    return f"redis-benchmark {version(find('redis-benchmark', 'Debian redis-tools'), '--version')}"


# ------------------------------------------------------------------------------------------- RADOS
def rados_bench_write(endpoint: dict, pool: str, object_bytes: int, objects: int, threads: int) -> None:
    """Write ``objects`` objects of ``object_bytes`` for the read passes (kept: --no-cleanup)."""
    binary = find("rados", "Debian ceph-common")
    run_tool([binary, *_rados_args(endpoint), "-p", pool, "bench", "600", "write", "-b", str(object_bytes),
              "-t", str(threads), "--max-objects", str(objects), "--no-cleanup", "--no-hints"], timeout=900)


def rados_bench_read(endpoint: dict, pool: str, seconds: float, threads: int) -> ToolPass:
    """``rados bench rand`` for ``seconds``: random reads of the written objects, ``threads`` in flight."""
    binary = find("rados", "Debian ceph-common")
    out, cpu = run_tool([binary, *_rados_args(endpoint), "-p", pool, "bench", str(max(1, round(seconds))), "rand",
                         "-t", str(threads), "--no-verify"], timeout=600)
    reads = int(_field(out, r"Total reads made:\s+(\d+)"))
    elapsed = float(_field(out, r"Total time run:\s+([\d.]+)"))
    return ToolPass(reads, elapsed, cpu)


def rados_bench_cleanup(endpoint: dict, pool: str) -> None:
    run_tool([find("rados", "Debian ceph-common"), *_rados_args(endpoint), "-p", pool, "cleanup"], timeout=600)


def rados_version() -> str:
    return f"rados bench (ceph {version(find('rados', 'Debian ceph-common'), '--version')})"


def _rados_args(endpoint: dict) -> list[str]:
    args = ["-c", str(endpoint["conffile"]), "--name", endpoint.get("name", "client.admin")]
    return args + (["--keyring", str(endpoint["keyring"])] if endpoint.get("keyring") else [])


# ----------------------------------------------------------------------------------------- RocksDB
def db_bench_fill(db: Path, value_bytes: int, keys: int) -> None:
    """A RocksDB of keys 0..``keys``-1 (16 bytes, written in order) with ``value_bytes`` values, uncompressed, compacted."""
    binary = find("db_bench", "Debian rocksdb-tools")
    run_tool([binary, f"--db={db}", "--benchmarks=fillseq,compact", f"--num={keys}", f"--value_size={value_bytes}",
              "--key_size=16", "--compression_type=none", "--threads=1", "--disable_wal=1"], timeout=900)


def db_bench_read(db: Path, value_bytes: int, keys: int, reads: int) -> ToolPass:
    """``readrandom`` of ``reads`` keys on the filled DB, one thread (the page cache warm, as ours)."""
    binary = find("db_bench", "Debian rocksdb-tools")
    out, cpu = run_tool([binary, f"--db={db}", "--use_existing_db=1", "--benchmarks=readrandom", f"--num={keys}",
                         f"--reads={reads}", f"--value_size={value_bytes}", "--key_size=16", "--threads=1",
                         "--compression_type=none"], timeout=900)
    micros = float(_field(out, r"readrandom\s*:\s*([\d.]+) micros/op"))
    found = re.search(r"\((\d+) of (\d+) found\)", out)
    if found and found.group(1) != found.group(2):
        raise RuntimeError(f"db_bench readrandom found {found.group(1)} of {found.group(2)} keys")
    return ToolPass(reads, reads * micros / 1e6, cpu)


def db_bench_version() -> str:
    binary = find("db_bench", "Debian rocksdb-tools")
    out = subprocess.run([binary, "--benchmarks=", "--num=0"], capture_output=True, text=True, timeout=60)
    found = re.search(r"RocksDB:\s+version\s+([\d.]+)", out.stdout + out.stderr)
    return f"db_bench (RocksDB {found.group(1) if found else 'unknown'})"


# ---------------------------------------------------------------------------------------------- S3
S3GET = "storebench-s3get"


def s3get(endpoint: dict, bucket: str, names: list[str], concurrency: int, passes: int) -> ToolPass:
    """GET every object of ``names`` ``passes`` times, ``concurrency`` in flight, with minio-go."""
    binary = find(S3GET, "built from env/tools/s3get with Go")
    out, cpu = run_tool([binary, "-endpoint", f"{endpoint['host']}:{endpoint['port']}", "-bucket", bucket,
                         "-concurrency", str(concurrency), "-passes", str(passes)], timeout=900,
                        stdin="\n".join(names), env={"S3_ACCESS_KEY": endpoint["access_key"],
                                                     "S3_SECRET_KEY": endpoint["secret_key"]})
    record = json.loads(out.strip().splitlines()[-1])
    return ToolPass(int(record["gets"]), float(record["seconds"]), cpu)


def s3get_version() -> str:
    binary = find(S3GET, "built from env/tools/s3get with Go")
    out = subprocess.run(["go", "version", "-m", binary], capture_output=True, text=True, timeout=30).stdout \
        if shutil.which("go") else ""
    found = re.search(r"github.com/minio/minio-go/v7\s+(v\S+)", out)
    return f"storebench-s3get (minio-go {found.group(1) if found else 'v7'}, Go)"


def _field(text: str, pattern: str) -> str:
    found = re.search(pattern, text)
    if not found:
        raise RuntimeError(f"no {pattern!r} in the tool's output:\n{text[-1500:]}")
    return found.group(1)
