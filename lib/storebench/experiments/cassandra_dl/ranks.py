"""Data-parallel ranks with ``torchrun`` (seed 004, Sec 6): N processes in a gloo process group on
the CPU, each running ``module`` with the same arguments; each rank writes ``rank-<i>.json`` into
``out_dir`` and the launcher returns them in rank order.

    results = launch("storebench.experiments.cassandra_dl.ddp_rank", ["--spec", spec_path], nproc=2, out_dir=out)

Across hosts it is the same code: run this launcher on every host with ``nnodes``, ``node_rank``
and one ``master`` address (``torchrun --nnodes N --node-rank I --master-addr HOST``), and point the
spec's endpoint at the real ring. Here the default is one node and 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


class RanksFailed(RuntimeError):
    pass


def torchrun() -> list[str]:
    """``torchrun`` of this interpreter's environment (its console script, else the module)."""
    script = Path(sys.executable).with_name("torchrun")
    return [str(script)] if script.exists() else [sys.executable, "-m", "torch.distributed.run"]


def launch(module: str, args: list[str], nproc: int, out_dir: Path, nnodes: int = 1, node_rank: int = 0,
           master: str = "127.0.0.1:29511", timeout: float = 1800.0, threads_per_rank: int = 1) -> list[dict]:
    cmd = command(module, args, nproc, out_dir, nnodes, node_rank, master)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=rank_env(threads_per_rank))
    if res.returncode != 0:
        raise RanksFailed(f"torchrun {module} with {nproc} rank(s) failed (exit {res.returncode}):\n"
                          f"{res.stdout[-2000:]}\n{res.stderr[-3000:]}")
    return results(out_dir, nproc, nnodes, node_rank, res.stderr)


def command(module: str, args: list[str], nproc: int, out_dir: Path, nnodes: int = 1, node_rank: int = 0,
            master: str = "127.0.0.1:29511") -> list[str]:
    """The torchrun command of one node (host); ``out_dir`` is emptied for its ranks' results."""
    if nproc < 1 or nnodes < 1 or not 0 <= node_rank < nnodes:
        raise ValueError(f"need nproc >= 1, nnodes >= 1 and 0 <= node_rank < nnodes; got {nproc}, {nnodes}, {node_rank}")
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    host, _, port = master.rpartition(":")
    return [*torchrun(), f"--nnodes={nnodes}", f"--node-rank={node_rank}", f"--nproc-per-node={nproc}",
            f"--master-addr={host}", f"--master-port={port}", "--max-restarts=0", "-m", module, *args,
            "--out-dir", str(out_dir)]


def rank_env(threads_per_rank: int = 1, **extra: str) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": str(threads_per_rank), **extra}


def results(out_dir: Path, nproc: int, nnodes: int = 1, node_rank: int = 0, stderr: str = "") -> list[dict]:
    """The ``rank-<i>.json`` of this node's ranks, in rank order (RanksFailed if one is missing)."""
    out_dir = Path(out_dir)
    mine = range(node_rank * nproc, (node_rank + 1) * nproc)
    missing = [r for r in mine if not (out_dir / f"rank-{r}.json").exists()]
    if missing:
        raise RanksFailed(f"ranks {missing} of {nproc * nnodes} wrote no result in {out_dir}:\n{stderr[-2000:]}")
    return [json.loads((out_dir / f"rank-{r}.json").read_text()) for r in mine]
