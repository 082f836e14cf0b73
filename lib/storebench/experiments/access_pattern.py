"""Access pattern (seed 003, Sec 5.2, Fig 4, Table 5): sequential one-by-one vs the full set
in one request vs random requests of k samples, per system."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import datasets
from ..results import ResultWriter, summarize
from ..workloads import Workload
from .common import Run, has_server, loaded_reader, number, sweep

EXPERIMENT = "access_pattern"


def workloads(config: dict, n_samples: int) -> list[Workload]:
    spo, seed = 1, config["seed"]
    plan = [Workload("sequential", 1, spo, n_samples, seed), Workload("full", 0, spo, n_samples, seed)]
    plan += [Workload("random", k, spo, n_samples, seed) for k in config["samples_per_request"]]
    return plan


def run(config: dict, out_dir=None, progress: bool = True) -> Run:
    run = Run(ResultWriter(EXPERIMENT, **({"out_dir": out_dir} if out_dir else {})))
    sweep(run, config, datasets=[config["dataset"]], formats=[config["format"]], samples_per_object=[1],
          plan=lambda n, spo: workloads(config, n), progress=progress)
    run.writer.write()
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
            rows.append(harness_overhead(reader, Workload("random", k, 1, len(dataset), config["seed"]), rounds=31))
    return pd.DataFrame(rows)


def figure(summary: pd.DataFrame, reference: pd.DataFrame):
    """(top) random-k download time per location; (bottom) speed-up vs k=1, ours vs the paper's."""
    import matplotlib.pyplot as plt

    from .. import plots
    from ..paper import SEED_003_MACHINE

    locations = list(dict.fromkeys(summary.location))
    systems = list(dict.fromkeys(summary.system))
    colors = plots.palette(systems)
    rand = summary[summary.access == "random"]
    ks = sorted(rand.samples_per_request.unique())
    fig, axes = plt.subplots(2, len(locations), figsize=(4.6 * len(locations), 8.5), squeeze=False)
    for ax, location in zip(axes[0], locations):
        plots.lines_with_ci(ax, rand[rand.location == location], "samples_per_request", "system", colors=colors)
        plots.log2_x(ax, ks)
        ax.set_yscale("log")
        ax.set(title=f"random access, {location}", xlabel="samples per request (k)", ylabel="download time (s)")
    axes[0][0].legend(fontsize=8)
    main_location = "disk-warm" if "disk-warm" in locations else locations[0]
    ours = rand[rand.location == main_location].copy()
    first = ours[ours.samples_per_request == 1].set_index("system")["mean"]
    ours["speedup"] = ours.system.map(first) / ours["mean"]
    ax = axes[1][0]
    for system, group in ours.groupby("system", sort=False):
        ax.plot(group.samples_per_request, group.speedup, marker="o", color=colors[system], label=system)
    plots.reference_lines(ax, reference, "samples_per_request", "speedup_vs_k1", "system",
                          label="paper: {} (their hardware)")
    plots.log2_x(ax, ks)
    ax.set_yscale("log")
    ax.set(title=f"speed-up over random k=1 ({main_location})", xlabel="samples per request (k)",
           ylabel="speed-up (x)")
    ax.legend(fontsize=7)
    seq = summary[(summary.access != "random") & (summary.location == main_location)].copy()
    seq["workload"] = seq.access.map({"sequential": "sequential, 1/request", "full": "full set, 1 request"})
    ax = axes[1][1] if len(locations) > 1 else None
    if ax is not None:
        import seaborn as sns

        sns.barplot(data=seq, x="system", y="mean", hue="workload", ax=ax)
        ax.set(title=f"sequential vs full set ({main_location})", ylabel="download time (s)", xlabel="")
        ax.tick_params(axis="x", rotation=30)
        ax.set_yscale("log")
    for extra in axes[1][2:]:
        extra.axis("off")
    versions = "; ".join(f"{s}: {' / '.join(dict.fromkeys(g))}"
                         for s, g in summary.groupby("system", sort=False).system_version)
    plots.footnote(fig, f"Ours: mean of the repeats, error bars 95% CI. Versions: {versions}. "
                        f"Dashed grey: seed 003 Table 5 ({SEED_003_MACHINE}).")
    fig.tight_layout()
    return fig


def _range_sentence(label: str, rows: pd.DataFrame) -> str:
    if rows.empty or rows.speedup_k256.isna().all():
        return ""
    lo, hi = rows.loc[rows.speedup_k256.idxmin()], rows.loc[rows.speedup_k256.idxmax()]
    return (f"{label}: k=256 is {lo.speedup_k256:.1f}x ({lo.system}) to {hi.speedup_k256:.1f}x ({hi.system}) "
            f"faster than k=1, i.e. {lo.speedup_k256 / 10:.2f} to {hi.speedup_k256 / 10:.2f} times the paper's 10x.")


def findings(speed: pd.DataFrame):
    """The paper's access-pattern findings next to ours, in numbers."""
    from ..paper import ACCESS_PATTERN_FINDINGS as P
    from ..reporting import Findings

    main = speed[speed.location == "disk-warm"] if (speed.location == "disk-warm").any() else speed
    lines = ["| system | random k=1 / seq-1 (paper 1.10) | k=4 speed-up (paper 2x) | k=256 speed-up (paper 10x) "
             "| ours / paper at 256 | gains flatten after k (paper 16) |", "|---|---|---|---|---|---|"]
    for _, r in main.iterrows():
        s4, s256 = r.get("speedup_k4", float("nan")), r.get("speedup_k256", float("nan"))
        lines.append(f"| {r.system} | {number(r.random_penalty_k1, '.2f')} | {number(s4, '.1f', 'x')} | "
                     f"{number(s256, '.1f', 'x')} | {number(s256 / P['speedup_k256'], '.2f')} | {number(r.flattens_at_k, '.0f')} |")
    best = main.sort_values("speedup_k256", ascending=False).iloc[0]
    worst = main.sort_values("speedup_k256").iloc[0]
    headline = (f"Random batches of 256 vs one-by-one ({main.location.iloc[0]}): from {worst.speedup_k256:.1f}x "
                f"({worst.system}) to {best.speedup_k256:.1f}x ({best.system}); the paper saw ~10x on "
                f"Redis/MongoDB/Cassandra over a 1 GbE LAN.")
    servers = main[main.system.map(has_server)]
    embedded = main[~main.system.map(has_server)]
    text = "\n".join([
        "**Paper (seed 003, Sec 5.2):** random k=1 is ~10% slower than sequential; batching is 2x faster "
        "at k=4 and 10x at k=256; gains slow down after k=16. Their systems were networked servers on a LAN, "
        "where each request pays a round trip and server processing.",
        "",
        f"**Ours** ({main.location.iloc[0]}, this machine, client and servers on one host):",
        "",
        *lines,
        "",
        _range_sentence("Servers", servers),
        _range_sentence("Embedded stores", embedded),
        "A speed-up below 1 means batching made reads slower: the system's multi-read costs more per sample "
        "than its single read (e.g. a query that scans the table for every `$in`). Ratios are within one run.",
    ])
    return Findings(headline, text)
