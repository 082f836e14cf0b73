"""Tidy result rows with their provenance, raw event tables, and statistics over repeats.

One row per measured pass (an experiment's main result table, ``results/<experiment>/<experiment>.csv``).
Each pass's per-request events go to ``results/raw/<experiment>/<run_id>.parquet`` so every statistic can
be recomputed without re-running the benchmark ("record raw, analyse later"). Statistics over repeats:
storebench.core.stats.
"""
from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import pandas as pd

from storebench.core.provenance import git_revision, machine_card
from storebench.core.settings import params_hash
from storebench.core.timing import PassResult

from storebench.core.rows import LOCAL_NETWORK, NET_COLUMNS, ROW_COLUMNS



@lru_cache(maxsize=1)
def machine() -> dict:
    """The provenance columns of every row (the manifest holds the full machine card)."""
    card = machine_card()
    return {"host": card["host"], "cpus": card["cores"], "memory_bytes": card["memory_bytes"],
            "python": card["python"], "git_rev": git_revision()}


def pass_rows(passes: list[PassResult], *, experiment: str, system: str, dataset: str, format: str,
              samples_per_object: int, samples_per_request: int, access: str, location: str, n_samples: int,
              system_version: str, client_version: str, run_id: str, scale: str, seed: int,
              network: str = LOCAL_NETWORK, net: dict | None = None, client_config: str = "") -> list[dict]:
    workload = dict(experiment=experiment, system=system, dataset=dataset, format=format,
                    samples_per_object=samples_per_object, samples_per_request=samples_per_request,
                    access=access, location=location, n_samples=n_samples, seed=seed)
    rows = []
    for p in passes:
        rows.append({
            **{k: v for k, v in workload.items() if k != "seed"}, "network": network,
            "repeat": p.repeat, "repeats": p.cell_repeats, "ci_target_met": p.ci_target_met, "passes": p.passes,
            "n_requests": p.requests_per_pass, "bytes": p.per_pass("bytes"),
            "needed_bytes": p.per_pass("needed_bytes"), "seconds": p.seconds,
            "decode_seconds": p.decode_seconds, "wall_seconds": p.wall_seconds,
            "client_cpu_seconds": p.cpu_seconds, "client_peak_rss_bytes": p.peak_rss_bytes,
            # the client's CPU per object read, over the whole pass (requests, then CRC checks and decoding)
            "client_cpu_ms_per_object": 1e3 * p.cpu_seconds / max(p.per_pass("n_objects"), 1),
            "resident_fraction": p.resident_fraction, "cold_method": p.cold_method,
            "server_restart_seconds": p.server_restart_seconds, "verified": True,
            "system_version": system_version, "client_version": client_version, "client_config": client_config,
            **machine(), "params_hash": params_hash(workload), "run_id": run_id, "scale": scale,
            "load_avg_1m": os.getloadavg()[0],  # how busy the machine was (2 cores shared with servers)
            **{k: (net or {}).get(k) for k in NET_COLUMNS},
        })
    return rows


class ResultWriter:
    """Collects the rows of one experiment run (``frame()``: its result table) and writes each
    configuration's raw events to ``raw_dir`` as it is measured."""

    def __init__(self, experiment: str, raw_dir: Path):
        self.experiment, self.raw_dir = experiment, Path(raw_dir)
        self.rows: list[dict] = []

    def add(self, passes: list[PassResult], **fields) -> None:
        run_id = _run_id(fields)
        self.rows.extend(pass_rows(passes, experiment=self.experiment, run_id=run_id, **fields))
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        events = pd.concat([p.events.assign(repeat=p.repeat) for p in passes], ignore_index=True)
        events.to_parquet(self.raw_dir / f"{run_id}.parquet", index=False)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=ROW_COLUMNS)


def _run_id(fields: dict) -> str:
    parts = [fields["system"], fields["format"], f"spo{fields['samples_per_object']}", fields["access"],
             f"k{fields['samples_per_request']}", fields["location"]]
    if fields.get("network", LOCAL_NETWORK) != LOCAL_NETWORK:
        parts.append(fields["network"].replace(" ", "-"))
    return "_".join(str(p) for p in parts)


def read_raw_events(raw_dir: Path) -> pd.DataFrame:
    frames = [pd.read_parquet(p).assign(run_id=p.stem) for p in sorted(Path(raw_dir).glob("*.parquet"))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
