"""Access pattern (seed 003, Sec 5.2, Fig 4, Table 5): sequential one-by-one vs the full set
in one request vs random requests of k samples, per system."""
from __future__ import annotations

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import datasets
from ..results import ResultWriter, summarize
from ..workloads import Workload
from .common import Run, loaded_reader, measure_into

EXPERIMENT = "access_pattern"


def workloads(config: dict, n_samples: int) -> list[Workload]:
    spo, seed = 1, config["seed"]
    plan = [Workload("sequential", 1, spo, n_samples, seed), Workload("full", 0, spo, n_samples, seed)]
    plan += [Workload("random", k, spo, n_samples, seed) for k in config["samples_per_request"]]
    return plan


def run(config: dict, out_dir=None, progress: bool = True) -> Run:
    dataset = datasets.load(config["dataset"], config["n_samples"])
    writer = ResultWriter(EXPERIMENT, **({"out_dir": out_dir} if out_dir else {}))
    run = Run(writer)
    plan = workloads(config, len(dataset))
    combos = [(loc, system) for loc in config["locations"] for system in config["systems"]]
    for location, system in tqdm(combos, desc=EXPERIMENT, unit="system", disable=not progress):
        with loaded_reader(system, location, dataset, config["format"], 1, progress=progress) as reader:
            for workload in plan:
                measure_into(run, reader, workload, location=location, repeats=config["repeats"],
                             dataset=config["dataset"], format=config["format"], scale=config["scale"],
                             seed=config["seed"], warmup=config.get("warmup", True))
    writer.write()
    return run


def speedups(summary: pd.DataFrame) -> pd.DataFrame:
    """Random k vs random k=1 speed-up, and the sequential-1 and full-set times, per system/location."""
    out = []
    for (system, location), group in summary.groupby(["system", "location"], sort=False):
        rand = group[group.access == "random"].set_index("samples_per_request")["mean"]
        seq1 = group[(group.access == "sequential") & (group.samples_per_request == 1)]["mean"]
        full = group[group.access == "full"]["mean"]
        row = {"system": system, "location": location,
               "random_penalty_k1": rand.get(1, np.nan) / seq1.iloc[0] if len(seq1) else np.nan,
               "full_vs_seq1": seq1.iloc[0] / full.iloc[0] if len(seq1) and len(full) else np.nan}
        for k, value in rand.items():
            row[f"speedup_k{k}"] = rand.get(1, np.nan) / value
        row["flattens_at_k"] = flattening_point(rand)
        out.append(row)
    return pd.DataFrame(out)


def flattening_point(times: pd.Series, threshold: float = 0.2) -> float:
    """Smallest k after which doubling-or-more the request size gains less than ``threshold``
    of the time, for every later step (the seed's "decrease slows down after 16")."""
    ks = sorted(times.index)
    for i, k in enumerate(ks[:-1]):
        gains = [1 - times[b] / times[a] for a, b in zip(ks[i:], ks[i + 1:])]
        if all(g < threshold for g in gains):
            return float(k)
    return float(ks[-1]) if ks else np.nan


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    return summarize(rows)


def harness_check(config: dict, systems=("rocksdb", "localfs"), location: str = "memory") -> pd.DataFrame:
    """Harness overhead on the fastest stores (where it would show most), random k requests."""
    from ..timing import harness_overhead

    dataset = datasets.load(config["dataset"], config["n_samples"])
    k = config.get("overhead_samples_per_request", 16)
    rows = []
    for system in systems:
        with loaded_reader(system, location, dataset, config["format"], 1, progress=False) as reader:
            rows.append(harness_overhead(reader, Workload("random", k, 1, len(dataset), config["seed"])))
    return pd.DataFrame(rows)
