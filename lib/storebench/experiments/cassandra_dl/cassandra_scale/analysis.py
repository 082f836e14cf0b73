"""Analyse cassandra_scale (Versaci & Busonera, seed 004, Sec 5.4 and Sec 6, Tables 3-4, Fig 3) from its
recorded tables: the ring's throughput while a node joins and leaves, and images/s vs data-parallel ranks."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from storebench.core.stats import mean_ci, ratio_interval
from storebench.core.experiment import ResultTables
from storebench.experiments.cassandra_dl import published as paper004
from storebench.report.findings import MACHINE, Cause, Findings, Metric, above, below, judge, not_comparable


EXPERIMENT = "cassandra_scale"
EMULATED, LOADER_BOUND = "emulated", "loader-bound"  # the steps (measure.STEPS); runs before issue 24: emulated
RING_WARMUP_S = 1.0  # runs recorded before ring_warmup_s was a setting: the ramp-up they are read with
ONE_HOST = Cause(MACHINE, "both Cassandra nodes, the loaders (or ranks) and their all-reduce share one VM's cores",
                 "the same run on separate hosts (docs/two-hosts.md: a node and a rank per host; torchrun --nnodes "
                 "against a real ring)")


@dataclass
class Recorded:
    """The recorded tables, as the summaries below read them."""
    timeline: pd.DataFrame = field(default_factory=pd.DataFrame)
    events: pd.DataFrame = field(default_factory=pd.DataFrame)
    failures: list[dict] = field(default_factory=list)
    ranks: pd.DataFrame = field(default_factory=pd.DataFrame)  # per rank count and phase: means over repeats
    rank_repeats: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per launch and phase
    warmup: float = RING_WARMUP_S  # seconds discarded at the start of each ring phase

    @classmethod
    def of(cls, tables: ResultTables) -> "Recorded":
        failures = tables.get(f"{EXPERIMENT}_failures", pd.DataFrame())
        repeats = with_steps(tables[f"{EXPERIMENT}_ranks"])
        warmup = tables.settings.get("ring_warmup_s")
        return cls(tables.get(f"{EXPERIMENT}_timeline", pd.DataFrame()), tables.get(f"{EXPERIMENT}_events", pd.DataFrame()),
                   failures.to_dict("records") if len(failures) else [], rank_means(repeats), repeats,
                   RING_WARMUP_S if warmup is None else float(warmup))

    def ring(self) -> dict:
        return ring_summary(self.timeline, self.events, self.failures, self.warmup)


def rank_means(repeats: pd.DataFrame) -> pd.DataFrame:
    """Images/s and MB/s per step, rank count and phase: the mean over the launches, with its 95% CI
    half-width, the images per launch, and the launches' rates themselves (``values``)."""
    out = []
    for (step, ranks, phase), g in with_steps(repeats).groupby(["step", "ranks", "phase"], sort=True):
        rate, rate_ci, n = mean_ci(g.images_per_s)
        out.append({"step": step, "ranks": ranks, "phase": phase, "images": int(g.images.iloc[0]),
                    "images_per_s": rate, "images_per_s_ci": rate_ci, "mb_per_s": g.mb_per_s.mean(),
                    "allreduce_share": g.allreduce_share.mean(), "repeats": n, "values": tuple(g.images_per_s)})
    return pd.DataFrame(out, columns=["step", "ranks", "phase", "images", "images_per_s", "images_per_s_ci",
                                      "mb_per_s", "allreduce_share", "repeats", "values"])


def with_steps(frame: pd.DataFrame) -> pd.DataFrame:
    """Rank rows with their ``step`` (rows recorded before the loader-bound step: the seed's emulated one)."""
    return frame if "step" in frame.columns or frame.empty else frame.assign(step=EMULATED)


def steady_windows(events: pd.DataFrame, end: float, warmup: float) -> dict[str, tuple[float, float]]:
    """The three steady phases (one node, two nodes, one node again) as (start, end) seconds, each
    without its first ``warmup`` seconds."""
    at = dict(zip(events.event, events.t_s))
    phases = {"one node": (0.0, at["join starts"]), "two nodes": (at["join done (both Up/Normal)"], at["leave starts"]),
              "one node again": (at["leave done"], end)}
    return {name: (start + warmup, stop) for name, (start, stop) in phases.items()}


def ring_summary(timeline: pd.DataFrame, events: pd.DataFrame, failures: list, warmup: float = RING_WARMUP_S
                 ) -> dict:
    """Steady rates (mean img/s per second) of each phase after its first ``warmup`` seconds (the
    ramp-up: the loaders' at the start, the driver finding a new or lost node after a change): one node
    before the join (the baseline), two nodes between join and leave, one node after; the lowest second
    during join and leave relative to the baseline; seconds after each event until the rate is back to
    90% of it; seconds without a single image read from the join's start on."""
    at = dict(zip(events.event, events.t_s))
    rate = timeline.set_index("t_s").images
    joined, leave, left = at["join done (both Up/Normal)"], at["leave starts"], at["leave done"]

    def steady(window):
        start, end = window
        inside = rate[(rate.index >= start) & (rate.index + 1 <= end)]  # whole seconds inside
        return float(inside.mean()) if len(inside) else float("nan"), len(inside)

    windows = steady_windows(events, rate.index.max() + 1, warmup)
    (baseline, baseline_s), (two_nodes, two_nodes_s), (after, after_s) = (steady(w) for w in windows.values())

    def dip(start, end):
        window = rate[(rate.index >= int(start)) & (rate.index <= int(end))]
        return float(window.min() / baseline) if len(window) and baseline else float("nan")

    def recovery(since):
        later = rate[rate.index > since]
        back = later[later >= 0.9 * baseline]
        return float(back.index[0] - since) if len(back) else float("nan")

    return {"warmup_s": warmup, "baseline_images_per_s": baseline, "baseline_seconds": baseline_s,
            "two_nodes_images_per_s": two_nodes, "two_nodes_seconds": two_nodes_s,
            "after_images_per_s": after, "after_seconds": after_s,
            "join_seconds": joined - at["join starts"], "leave_seconds": left - leave,
            "lowest_during_join": dip(at["join starts"], joined), "lowest_during_leave": dip(leave, left),
            "recovery_after_join_s": recovery(joined), "recovery_after_leave_s": recovery(left),
            "seconds_without_reads": int((rate[rate.index >= int(at["join starts"])] == 0).sum()),
            "failed_batches": len(failures), "wrong_blobs": 0}


def tables_3_4(ranks_frame: pd.DataFrame, encoding: str) -> pd.DataFrame:
    """Ours (ranks on one node; per step: the seed's emulated step and the loader-bound one) beside the
    seed's rows of the same total rank count."""
    seed = (paper004.TABLE3 if encoding == "jpeg" else paper004.TABLE4).assign(
        ranks=lambda f: f.nodes * f.ranks_per_node)
    seed = seed.groupby("ranks").first().reset_index()
    ours = ranks_frame.pivot_table(index="ranks", columns=["step", "phase"], values=["images_per_s", "mb_per_s"])
    ours.columns = [f"{step}_{phase}_{what}" for what, step, phase in ours.columns]
    ours = ours[sorted(ours.columns, key=lambda c: (not c.startswith(EMULATED), c))]
    return ours.reset_index().merge(seed[["ranks", "nodes", "ranks_per_node", "train_images_per_s",
                                          "val_images_per_s"]].rename(columns={"train_images_per_s": "seed_train_images_per_s",
                                                                               "val_images_per_s": "seed_val_images_per_s"}),
                                    on="ranks", how="left")


def rank_rate(ranks_frame: pd.DataFrame, step: str, phase: str) -> pd.DataFrame:
    """One step's and phase's rows, by rank count."""
    return ranks_frame[(ranks_frame.step == step) & (ranks_frame.phase == phase)].set_index("ranks").sort_index()


def scaling(ranks_frame: pd.DataFrame, step: str, phase: str) -> Metric | None:
    """Scaling efficiency from the fewest to the most ranks: (img/s at most / at fewest) / (rank ratio),
    its 95% CI from the launches' rates (None with one rank count)."""
    rows = rank_rate(ranks_frame, step, phase)
    if len(rows) < 2:
        return None
    lo, hi = rows.index[0], rows.index[-1]
    value, low, high = ratio_interval(rows.at[hi, "values"], rows.at[lo, "values"])
    k = hi / lo
    return Metric("cassandra", f"{phase} img/s scaling efficiency, {lo} -> {hi} ranks ({step} step)", value / k, None,
                  1.0, "x", low / k, high / k, "" if pd.notna(low) else "one launch per rank count: no CI")


def headroom(ranks_frame: pd.DataFrame, phase: str, ranks: int) -> Metric | None:
    """Loader-bound img/s / the emulated step's at ``ranks`` ranks: how much faster the loaders deliver
    than the seed's emulated GPUs consume (None unless both were run)."""
    free, paced = rank_rate(ranks_frame, LOADER_BOUND, phase), rank_rate(ranks_frame, EMULATED, phase)
    if ranks not in free.index or ranks not in paced.index:
        return None
    value, low, high = ratio_interval(free.at[ranks, "values"], paced.at[ranks, "values"])
    return Metric("cassandra", f"{phase} img/s, loader-bound / the seed's emulated step ({ranks} rank"
                  f"{'s' if ranks > 1 else ''})", value, None, 1.0, "x", low, high,
                  "" if pd.notna(low) else "one launch per rank count: no CI")


def findings(result: Recorded, config, claims: tuple = (), metrics: tuple = ()) -> Findings:
    lines, headline = [], []
    if not result.timeline.empty:
        s = result.ring()
        lines.append(f"- **Ring scale-up/down under load** (RF {config['replication_factor']}, CL "
                     f"{config['consistency']}, {config['ring_loaders']} loaders; the first {s['warmup_s']:g} s of each "
                     f"phase discarded as ramp-up): one node {s['baseline_images_per_s']:,.0f} img/s (steady over "
                     f"{s['baseline_seconds']} s); the join took {s['join_seconds']:.0f} s, its lowest second "
                     f"{s['lowest_during_join']:.0%} of that, back to 90% {s['recovery_after_join_s']:.0f} s after; two "
                     f"nodes {s['two_nodes_images_per_s']:,.0f} img/s (steady over {s['two_nodes_seconds']} s before the "
                     f"leave{'' if s['two_nodes_seconds'] >= 30 else ': under the 30 s the reference asks'}); the leave "
                     f"took {s['leave_seconds']:.0f} s (lowest {s['lowest_during_leave']:.0%}, back "
                     f"{s['recovery_after_leave_s']:.0f} s after); one node again {s['after_images_per_s']:,.0f} img/s. "
                     f"Failed batches: {s['failed_batches']}; seconds without a read from the join on: "
                     f"{s['seconds_without_reads']}; wrong blobs: 0 (every blob checked). Seed: "
                     f"{paper004.FINDINGS['scale']} (verdicts: the claims above).")
        headline.append(f"ring join/leave under load with {s['failed_batches']} failed batches, "
                        f"{s['seconds_without_reads']} s without reads")
    else:
        lines.append("- **Ring scale-up/down**: not run at this scale (see Provenance).")
    for step in (EMULATED, LOADER_BOUND):
        val, train = (rank_rate(result.ranks, step, phase).images_per_s for phase in ("val", "train"))
        if val.empty:
            continue
        what = ("the seed's step (emulated compute, the seed's per-batch times, and a "
                f"{config['gradient_elements'] * 4 / 1e6:.0f} MB gradient all-reduce per training step)"
                if step == EMULATED else "loader-bound (no compute, no gradient: what the loaders alone deliver)")
        images = rank_rate(result.ranks, step, "val").images
        lines.append(f"- **Data-parallel ranks, {what}**: validation " + ", ".join(
            f"{n} rank{'s' if n > 1 else ''} {v:,.0f}" for n, v in val.items()) + " img/s; training " + ", ".join(
            f"{n} {v:,.0f}" for n, v in train.items()) + f" img/s (validation on {images.min():,} images a launch).")
        efficiency = scaling(result.ranks, step, "val")
        if efficiency is not None:
            headline.append(f"validation scaling {efficiency.value:.0%} of linear ({step})")
    free = headroom(result.ranks, "train", 1)
    if free is not None:
        lines.append(f"- **One rank, training**: the loader alone delivers {free.text()} the seed's emulated rate "
                     f"({paper004.TRAINING_BATCH} images / {config['train_seconds_per_batch']:g} s, the seed's 1-rank "
                     "rate by construction); the emulated rate is the GPU's, not the loader's.")
    return Findings("Cassandra at scale: " + ("; ".join(headline) or "see report"), "\n".join(lines), metrics, claims)


def figure(result: Recorded, config):
    """The throughput timeline with the join and leave marked, and images/s vs ranks (ours, the seed's)."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    fig, axes = plt.subplots(1, 2, figsize=(15, 5))
    if not result.timeline.empty:
        axes[0].plot(result.timeline.t_s, result.timeline.images, drawstyle="steps-post", color=plots.palette(["x"])["x"],
                     label="images / s")
        top = max(result.timeline.images) * 1.02
        axes[0].set_ylim(0, top * 1.25)
        for i, event in enumerate(result.events.itertuples()):  # labels on two staggered rows, above the data
            axes[0].axvline(event.t_s, color="0.4", linestyle=":", linewidth=1)
            axes[0].annotate(event.event, (event.t_s, top * (1.04 if i % 2 == 0 else 1.14)), fontsize=7,
                             ha="center", va="bottom", bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none"))
        windows = steady_windows(result.events, result.timeline.t_s.max() + 1, result.warmup)
        for i, (start, end) in enumerate(windows.values()):
            axes[0].axvspan(start, end, color="0.85", alpha=0.5, linewidth=0,
                            label=f"steady (first {result.warmup:g} s of a phase left out)" if i == 0 else None)
        for i, failure in enumerate(result.failures):
            axes[0].axvline(failure["t_s"], color=plots.OKABE_ITO["vermilion"], linewidth=1.2,
                            label="a read failed" if i == 0 else None)
        axes[0].legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
        axes[0].set(title=f"reads while a node joins and leaves (RF {config['replication_factor']})",
                    xlabel="seconds since start", ylabel="images / s (all loaders)")
    else:
        axes[0].text(0.5, 0.5, "ring not run at this scale", ha="center", transform=axes[0].transAxes)
        axes[0].axis("off")
    if not result.ranks.empty:
        colours = plots.palette(["train", "val"])
        for (step, phase), g in result.ranks.groupby(["step", "phase"]):
            g = g.sort_values("ranks")
            axes[1].errorbar(g.ranks, g.images_per_s, yerr=plots.errorbars(g.images_per_s, g.images_per_s_ci),
                             marker="o", capsize=3, color=colours.get(phase),
                             linestyle="-" if step == EMULATED else "--", label=f"ours, {phase}, {step}")
        seed = (paper004.TABLE3 if config["encoding"] == "jpeg" else paper004.TABLE4).assign(
            ranks=lambda f: f.nodes * f.ranks_per_node).groupby("ranks").first().reset_index()
        seed = seed[seed.ranks <= max(4, result.ranks.ranks.max())]
        axes[1].plot(seed.ranks, seed.train_images_per_s, **plots.REFERENCE_STYLE, label="paper: train (Tables 3/4)")
        axes[1].plot(seed.ranks, seed.val_images_per_s, **{**plots.REFERENCE_STYLE, "marker": "+"},
                     label="paper: validation (Tables 3/4)")
        plots.ticks_at(axes[1], sorted(set(result.ranks.ranks) | set(seed.ranks)), log=False)
        axes[1].set_yscale("log")  # after the error bars (see plots.lines_with_ci)
        axes[1].set(title="data-parallel ranks (torchrun, gloo)", xlabel="ranks", ylabel="images / s (log)")
        axes[1].legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    plots.question(fig, "Do reads keep flowing while a Cassandra node joins and leaves, and does throughput "
                        "grow with ranks?")
    fig.tight_layout()
    plots.footnote(fig, f"Ours: one 2-core VM (both nodes, loaders and ranks share it). Seed: {paper004.MACHINE}.")
    return fig


# ------------------------------------------------------------------ the contract: analyse, figures, claims
def analyse(tables: ResultTables) -> Findings:
    result, config = Recorded.of(tables), tables.settings
    made, metrics = claims(result, config)
    return findings(result, config, made, metrics)


def figures(tables: ResultTables) -> dict:
    return {"scale": figure(Recorded.of(tables), tables.settings)}


def claims(result: Recorded, config) -> tuple[tuple, tuple]:
    made, metrics = [], []
    statement = "A second node joins and leaves the ring under load without service interruption."
    if result.timeline.empty:
        made.append(not_comparable("Sec 5.4", statement, "failed batches during join and leave",
                                   "the ring was not run at this scale (ring: false)"))
    else:
        s = result.ring()
        load = f"({config['ring_loaders']} loaders, RF {config['replication_factor']})"
        # Counts over every batch and second of the run (each blob verified), not estimates: no sampling interval.
        made.append(judge("Sec 5.4", statement, f"failed batches while a node joined and left {load}",
                          s["failed_batches"], 0.0, below(0.5), unit="batches", cause=ONE_HOST))
        made.append(judge("Sec 5.4", statement, f"seconds without a single image read, from the join's start to the "
                          f"end {load}", s["seconds_without_reads"], 0.0, below(0.5), unit="s", cause=ONE_HOST))
        baseline = s["baseline_images_per_s"]
        for key, column in (("two_nodes_images_per_s", "two-node steady img/s / one node's (before the join)"),
                            ("after_images_per_s", "one node's steady img/s after the leave / before the join"),
                            ("lowest_during_join", "lowest img/s second during the join / one node's steady")):
            value = s[key] if key.startswith("lowest") else s[key] / baseline if baseline else float("nan")
            metrics.append(Metric("cassandra", column, value, None, 1.0, "x",
                                  why="one run: its seconds are not independent repeats"))
    statement = "Validation loading scales linearly with the ranks (up to the servers' bandwidth)."
    efficiency = scaling(result.ranks, EMULATED, "val")
    if efficiency is None:
        made.append(not_comparable("Sec 6, Tables 3-4", statement, "validation img/s vs ranks",
                                   "one rank count only at this scale"))
    else:
        cause = Cause(MACHINE, "the ranks, their loaders and the server share this VM's cores, so the machine's "
                      "CPUs, not the server's bandwidth, cap the ranks (compare the loader-bound rates)", ONE_HOST.settle)
        made.append(judge("Sec 6, Tables 3-4", statement, efficiency.column + " (speed-up / rank ratio)",
                          efficiency.value, efficiency.interval, above(0.8), cause=cause))
    for step, phase in ((EMULATED, "val"), (EMULATED, "train"), (LOADER_BOUND, "val"), (LOADER_BOUND, "train")):
        m = scaling(result.ranks, step, phase)
        if m is not None:
            metrics.append(m)
    for ranks in sorted(result.ranks.ranks.unique()) if not result.ranks.empty else ():
        m = headroom(result.ranks, "train", int(ranks))
        if m is not None:
            metrics.append(m)
    return tuple(made), tuple(metrics)
