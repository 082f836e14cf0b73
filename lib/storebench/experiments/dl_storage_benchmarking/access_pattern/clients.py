"""How much of a number is the client: the same reads through different client configurations,
measured in one run on one server.

- Redis: redis-py's pure-Python reply parser vs the hiredis C parser (two stores on one server,
  the same data, the same random k-sample HMGETs, alternating), with ``redis-benchmark`` (C,
  one connection, no pipelining) sending the same HMGET as a reference for what the server gives.
- S3: minio-py vs obstore on MinIO and on RGW, from the access-pattern rows of the same run: computed
  from the recorded rows by the analysis (``analysis.s3_clients``), not measured here.
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess
from contextlib import ExitStack

import numpy as np
import pandas as pd

from storebench.data.datasets import Dataset
from storebench.stores.readers import ObjectReader
from storebench.stores.systems import ServicePool, open_system
from storebench.core.timing import measure
from storebench.data.workloads import Workload
from storebench.experiments.common import loaded_reader


def redis_parsers(dataset: Dataset, config: dict, k: int = 256, rounds: int = 3) -> pd.DataFrame:
    """Client CPU per object here is over the whole pass, CRC checks and unpickling included (~10 us per
    object), which hides the parser's share at Redis's speed: compare the rates.

    Objects/s of random k-sample HMGETs with each redis-py parser (alternating ``rounds`` times),
    and of redis-benchmark's same HMGET; one row per client, the pure-Python parser first."""
    workload = Workload("random", k, 1, len(dataset), config["seed"])
    passes = {"python": [], "hiredis": []}
    one_repeat = config.policy.once()  # the rounds alternate instead
    with ServicePool(config["endpoints"]) as services, ExitStack() as stack:
        base = stack.enter_context(loaded_reader("redis", "memory", dataset, config["format"], 1, progress=False,
                                                 services=services))
        readers = {p: ObjectReader(stack.enter_context(open_system("redis", "memory", services, parser=p)),
                                   base.format, 1, base.checksums, base.sizes, base.n_samples) for p in passes}
        configs = {p: r.store.client_config() for p, r in readers.items()}
        for _ in range(rounds):  # alternate, so drift on a busy machine hits both alike
            for parser, reader in readers.items():
                passes[parser] += measure(reader, workload, one_repeat, cold=False, warmup=True)
        bench = redis_benchmark(base.store, k)
    rows = [_row("redis", configs[p], "random", k, ps) for p, ps in passes.items()]
    if bench is not None:
        rows.append(bench)
    table = pd.DataFrame(rows)
    table["vs_first"] = table.objects_per_s / table.objects_per_s.iloc[0]
    return table


def _row(system: str, client_config: str, access: str, k: int, passes) -> dict:
    rates = [p.per_pass("n_objects") / p.seconds for p in passes]
    cpu = [1e3 * p.cpu_seconds / p.per_pass("n_objects") for p in passes]
    return {"system": system, "client_config": client_config, "access": access, "samples_per_request": k,
            "objects_per_s": float(np.mean(rates)), "objects_per_s_min": float(np.min(rates)),
            "objects_per_s_max": float(np.max(rates)), "client_cpu_ms_per_object": float(np.mean(cpu)),
            "passes": len(passes)}


def redis_benchmark(store, k: int, requests: int = 2000) -> dict | None:
    """redis-benchmark (Debian redis-tools) sending HMGET of ``k`` fields of the store's hash over
    one connection, one request at a time; None if redis-benchmark is not installed."""
    binary = shutil.which("redis-benchmark")
    if binary is None:
        return None
    ep = store.endpoint
    fields = [str(i) for i in range(k)]
    out = subprocess.run([binary, "-h", ep["host"], "-p", str(ep["port"]), "-a", ep["password"], "-c", "1",
                          "-n", str(requests), "-P", "1", "--csv", "HMGET", store.namespace, *fields],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    record = next(csv.DictReader(io.StringIO(out)))
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.split()[1]
    rate = float(record["rps"]) * k
    return {"system": "redis", "client_config": f"redis-benchmark {version} (C; 1 connection, no pipelining; "
                                                 f"HMGET of fields 0..{k - 1}, replies not checked)",
            "access": "fixed", "samples_per_request": k, "objects_per_s": rate, "objects_per_s_min": np.nan,
            "objects_per_s_max": np.nan, "client_cpu_ms_per_object": np.nan, "passes": 1}
