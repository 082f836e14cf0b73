"""Analyse cassandra_loader (Versaci & Busonera, seed 004, Table 1, Fig 2, Table 2, "how many GPUs does a
loader feed") from its recorded tables: ours beside the seed's, and the paper's claims judged."""
from __future__ import annotations


import pandas as pd

from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci, ratio_interval
from storebench.experiments.cassandra_dl import published as paper004
from storebench.experiments.cassandra_dl.cassandra_loader.saturation import SATURATION_GAIN, Saturation, saturation
from storebench.report.findings import (MACHINE, UNKNOWN, Cause, Findings, Metric, above, below, interval_text,
                                        judge_metric, not_comparable, ratio)


EXPERIMENT = "cassandra_loader"
CASSANDRA = "cassandra"  # the seed's loader: async single-partition reads of data_by_uuid
PERCENTILES = ["p50", "p75", "p95", "p98", "p99"]
SHARED_CORES = Cause(MACHINE, "the loaders and the server share this VM's cores, so more load queues for the CPU "
                     "and the server is saturated by CPU, not by its network as the seed's was (10 GbE)",
                     "the loaders on other hosts than the server, over a link the server can saturate (the "
                     "two-hosts recipe, docs/two-hosts.md)")


def table1(batches: pd.DataFrame) -> pd.DataFrame:
    """Per system, encoding and batch size: ms per batch (mean +- CI over the repeats' means), images/s,
    MB/s, CPU%; the seed's Table 1 beside (Cassandra)."""
    rows = []
    for (system, encoding, b), g in batches.groupby(["system", "encoding", "batch_size"], sort=False):
        ms, ms_ci, _ = mean_ci(g.ms_per_batch)
        rate, rate_ci, _ = mean_ci(g.images_per_s)
        rows.append({"system": system, "encoding": encoding, "batch_size": b, "kb_per_image": g.bytes.sum()
                     / g.images.sum() / 1e3, "ms_per_batch": ms, "ms_ci": ms_ci, "images_per_s": rate,
                     "images_per_s_ci": rate_ci, "mb_per_s": g.mb_per_s.mean(), "cpu_percent": g.cpu_percent.mean(),
                     "images_per_s_per_core": rate / max(g.cpu_percent.mean() / 100, 1e-9)})
    ours = pd.DataFrame(rows)
    seed = paper004.TABLE1.assign(encoding=paper004.TABLE1.image_kb.map({20: "jpeg", 150: "raw"}))
    seed = seed.rename(columns={"ms_per_batch": "seed_ms_per_batch", "images_per_s": "seed_images_per_s",
                                "mb_per_s": "seed_mb_per_s"})[["encoding", "batch_size", "seed_ms_per_batch",
                                                              "seed_images_per_s", "seed_mb_per_s"]]
    return ours.merge(seed, on=["encoding", "batch_size"], how="left")


def cold_vs_warm(cold: pd.DataFrame, batches: pd.DataFrame) -> pd.DataFrame:
    """Per system and encoding: images/s of the epochs read right after a restart with the files evicted
    beside Table 1's warm passes at the same batch size, warm / cold with its 95% CI; the keyspace's
    largest page-cache residency before a cold epoch and the mean restart time (not in the read time)."""
    rows = []
    for (system, encoding, b), g in (cold.groupby(["system", "encoding", "batch_size"], sort=False)
                                     if len(cold) else ()):
        warm = batches[(batches.system == system) & (batches.encoding == encoding) & (batches.batch_size == b)]
        value, low, high = ratio_interval(warm.images_per_s, g.images_per_s)
        rate, rate_ci, n = mean_ci(g.images_per_s)
        rows.append({"system": system, "encoding": encoding, "batch_size": b, "cold_epochs": n,
                     "cold_images_per_s": rate, "cold_images_per_s_ci": rate_ci, "cold_mb_per_s": g.mb_per_s.mean(),
                     "warm_images_per_s": warm.images_per_s.mean(), "warm_over_cold": value,
                     "warm_over_cold_low": low, "warm_over_cold_high": high,
                     "resident_before_max": g.resident_fraction.max(), "keyspace_mb": g.keyspace_bytes.max() / 1e6,
                     "restart_s": g.server_restart_seconds.mean()})
    return pd.DataFrame(rows)


def table2(latency: pd.DataFrame, gain: float = SATURATION_GAIN) -> pd.DataFrame:
    """Per encoding and loader count (means over the repeats, each a fresh table's histogram): MB/s with
    its CI, images/s, the read-latency percentiles; where it stands (one loader, the knee, saturated);
    the seed's Table 2 beside (its 1 and 16 loaders: one loader and saturated)."""
    rows = []
    for encoding, g in latency.groupby("encoding", sort=False):
        sat = saturation(g, gain)
        for loaders, runs in g.groupby("loaders"):
            mb, mb_ci, n = mean_ci(runs.mb_per_s)
            role = ", ".join(r for r, at in (("one loader", 1), ("knee", sat.knee), ("saturated", sat.saturated))
                             if loaders == at)
            rows.append({"encoding": encoding, "loaders": loaders, "load": role, "repeats": n, "mb_per_s": mb,
                         "mb_per_s_ci": mb_ci, "images_per_s": runs.images_per_s.mean(),
                         **{p: runs[p].mean() for p in PERCENTILES}})
    ours = pd.DataFrame(rows)
    seed = paper004.TABLE2.rename(columns={c: f"seed_{c}" for c in ("loaders", "mb_per_s", *PERCENTILES)})
    seed = seed.assign(load=seed.seed_loaders.map({1: "one loader", 16: "saturated"}))
    ours = ours.assign(seed_load=ours.load.map(lambda r: "saturated" if "saturated" in r
                                               else "one loader" if "one loader" in r else ""))
    return ours.merge(seed.rename(columns={"load": "seed_load"}), on=["encoding", "seed_load"], how="left"
                      ).drop(columns="seed_load")


def fed(feeds: pd.DataFrame) -> pd.DataFrame:
    """Per system and encoding: the largest count of emulated accelerators kept >= the utilisation
    threshold, the count the rate predicted, and the seed's answer (50-90 JPEG, 19-24 TIFF)."""
    if feeds.empty:
        return feeds
    out = feeds.groupby(["system", "encoding"], sort=False).agg(
        accelerators_fed=("largest_held", "first"), predicted=("predicted_from_rate", "first"),
        probes=("accelerators", lambda c: ", ".join(map(str, sorted(c))))).reset_index()
    return out.assign(seed=out.encoding.map({"jpeg": "50-90 GPUs", "raw": "19-24 GPUs"}))


def findings(batches: pd.DataFrame, latency: pd.DataFrame, feeds: pd.DataFrame, config, cores=None,
             claims: tuple = (), metrics: tuple = (), cold: pd.DataFrame = pd.DataFrame()) -> Findings:
    t1 = table1(batches)
    cass = t1[t1.system == CASSANDRA]
    lines = [f"Machine: this {cores}-core VM, Cassandra and the loader on the same cores; the seed: "
             f"{paper004.MACHINE}.", ""]
    headline = []
    for encoding, g in cass.groupby("encoding", sort=False):
        best = g.loc[g.images_per_s.idxmax()]
        seed = paper004.TABLE1[paper004.TABLE1.image_kb == (20 if encoding == "jpeg" else 150)]
        seed_best = seed.loc[seed.images_per_s.idxmax()]
        lines.append(f"- **Table 1, {encoding}**: our Cassandra loader peaks at {best.images_per_s:,.0f} img/s "
                     f"({best.mb_per_s:.0f} MB/s) at batch {best.batch_size}; the seed's at "
                     f"{seed_best.images_per_s:,.0f} img/s at batch {int(seed_best.batch_size)} "
                     f"(ratio {best.images_per_s / seed_best.images_per_s:.2f}x). Peak at "
                     f"{'the same' if best.batch_size == seed_best.batch_size else 'a different'} batch size.")
        headline.append(f"{encoding} {best.images_per_s:,.0f} img/s (seed {seed_best.images_per_s:,.0f})")
    jpeg = cass[cass.encoding == "jpeg"]
    if len(jpeg):
        top = jpeg.loc[jpeg.images_per_s.idxmax()]
        seed_per_core = paper004.PEAK_IMAGES_PER_S / (paper004.PEAK_CPU_PERCENT / 100)
        lines.append(f"- **Images/s per client core** (JPEG, best batch): ours {top.images_per_s_per_core:,.0f} "
                     f"(at {top.cpu_percent:.0f}% CPU of the loader process), the seed's {seed_per_core:,.0f} "
                     f"({paper004.PEAK_IMAGES_PER_S:,} img/s at ~{paper004.PEAK_CPU_PERCENT:,}%).")
    others = t1[t1.system != CASSANDRA]
    if len(others) and len(cass):
        best_by = t1.groupby(["system", "encoding"]).images_per_s.max().unstack()
        lines.append("- **Every system, same loader** (best img/s over batch sizes): "
                     + "; ".join(f"{s}: " + ", ".join(f"{e} {v:,.0f}" for e, v in row.items())
                                 for s, row in best_by.iterrows()) + ".")
    for r in cold_vs_warm(cold, batches).itertuples():
        lines.append(f"- **Cold, {r.encoding}** ({r.system}, batch {r.batch_size}, {r.cold_epochs} "
                     f"epoch{'s' if r.cold_epochs != 1 else ''}, each right after a restart with its files evicted; {r.keyspace_mb:,.0f} MB on disk, at most "
                     f"{r.resident_before_max:.0%} of it in the page cache before an epoch): "
                     f"{r.cold_images_per_s:,.0f} img/s ({r.cold_mb_per_s:.0f} MB/s) against {r.warm_images_per_s:,.0f} "
                     f"warm: warm is {interval_text(r.warm_over_cold, r.warm_over_cold_low, r.warm_over_cold_high, 'x')} "
                     f"cold. A restart took {r.restart_s:.0f} s (not in the read time). The seed read from disk; its "
                     "Table 1 does not say whether its page cache held the data.")
    gain = saturation_gain(config)
    for encoding, g in (latency.groupby("encoding", sort=False) if len(latency) else ()):
        sat = saturation(g, gain)
        lines.append(f"- **Table 2, {encoding}, up to saturation**: {sat.text()}.")
        if sat.saturated is not None:
            at = g[g.loaders == sat.saturated][PERCENTILES].mean()
            one = g[g.loaders == 1][PERCENTILES].mean()
            lines.append(f"  Read latency (us) with one loader p50/p95/p99 {one.p50:.0f}/{one.p95:.0f}/{one.p99:.0f}; "
                         f"saturated ({sat.saturated} loaders) {at.p50:.0f}/{at.p95:.0f}/{at.p99:.0f}. Seed: "
                         f"{paper004.FINDINGS['table2']}. Ours: p95 {_moved(_percentile_ratio(g, 'p95', sat), 1.5)}, "
                         f"p99 {_moved(_percentile_ratio(g, 'p99', sat), 1.0)} (verdicts: the claims above).")
    answer = fed(feeds)
    if len(answer):
        lines.append("- **Accelerators fed** at >= {:.0%} utilisation ({:.0f} img/s each, batch {}): ".format(
            config["utilisation"], config["accelerator_images_per_s"], config["feed_batch"])
            + "; ".join(f"{r.system} {r.encoding}: {r.accelerators_fed} (rate predicted {r.predicted:.1f}; probes "
                        f"{r.probes})" for r in answer.itertuples())
            + f". Seed: {paper004.FINDINGS['feeds']} (computed, not run).")
    return Findings("Cassandra loader: " + "; ".join(headline), "\n".join(lines), metrics, claims)


def figure(batches: pd.DataFrame, latency: pd.DataFrame, gain: float = SATURATION_GAIN,
           cold: pd.DataFrame = pd.DataFrame()):
    """Fig 2 (MB/s vs batch size per encoding, ours per system and the seed's Cassandra) and Table 2's percentiles."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    t1, cold_rates = table1(batches), cold_vs_warm(cold, batches)
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    systems = sorted(t1.system.unique())
    colors = plots.palette(systems)
    for ax, encoding in zip(axes[:2], ("jpeg", "raw")):
        part = t1[t1.encoding == encoding]
        for system, g in part.groupby("system"):
            g = g.sort_values("batch_size")
            ax.errorbar(g.batch_size, g.images_per_s, yerr=plots.errorbars(g.images_per_s, g.images_per_s_ci),
                        marker=plots.marker(system), capsize=3, label=system, color=colors[system])
            plots._cut_marks(ax, g.batch_size, g.images_per_s, g.images_per_s_ci, colors[system])
        for r in (cold_rates[cold_rates.encoding == encoding].itertuples() if len(cold_rates) else ()):
            ax.errorbar([r.batch_size], [r.cold_images_per_s], yerr=[[r.cold_images_per_s_ci], [r.cold_images_per_s_ci]],
                        marker=plots.marker(r.system), mfc="white", ls="none", capsize=3, color=colors[r.system],
                        label=f"{r.system}, cold (restart + evict)")
            ax.annotate("cold", (r.batch_size, r.cold_images_per_s), textcoords="offset points", xytext=(6, -10),
                        fontsize=8, color=colors[r.system])
        seed = paper004.TABLE1[paper004.TABLE1.image_kb == (20 if encoding == "jpeg" else 150)]
        ax.plot(seed.batch_size, seed.images_per_s, **plots.REFERENCE_STYLE)
        ax.set_yscale("log")  # after the error bars (see plots.lines_with_ci)
        plots.ticks_at(ax, sorted(set(part.batch_size) | set(seed.batch_size)), log=True)
        ax.set(title=f"short-circuited loader, {encoding} images", xlabel="batch size (images)",
               ylabel="images / s (log)")
    paper = [plots.reference_handle("paper: Cassandra, 10 GbE (Fig 2 / Table 1)")]
    if len(latency):
        pct = PERCENTILES
        t2 = table2(latency, gain)
        for r in t2[t2.load != ""].itertuples():
            axes[2].plot(pct, [getattr(r, p) for p in pct], marker="o",
                         label=f"ours: {r.encoding}, {r.loaders} loader(s) ({r.load})")
        for i, r in enumerate(paper004.TABLE2.itertuples()):
            m = plots.REFERENCE_MARKERS[i % len(plots.REFERENCE_MARKERS)]
            axes[2].plot(pct, [getattr(r, p) for p in pct], **{**plots.REFERENCE_STYLE, "marker": m},
                         label=f"paper: {r.encoding}, {r.loaders} loader(s) (Table 2)")
        axes[2].set_yscale("log")
        axes[2].set(title="Cassandra read latency per percentile (nodetool)", xlabel="percentile",
                    ylabel="microseconds (log)")
        axes[2].legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    else:
        axes[2].axis("off")
    plots.question(fig, "How many images per second does a loader get from Cassandra and the other stores, "
                        "and how slow are Cassandra's reads?")
    plots.system_legend(fig, systems, extra=paper)
    fig.tight_layout()
    plots.footnote(fig, f"Ours: this VM, server and loader sharing its cores; mean of the repeats, error bars "
                        f"95% CI; hollow 'cold': whole epochs right after a restart with the files evicted (the rest "
                        f"warm). Seed: {paper004.MACHINE}.")
    return fig


# ------------------------------------------------------------------ the contract: analyse, figures, claims
def analyse(tables: ResultTables) -> Findings:
    batches, latency, feeds = _tables(tables)
    cold = _cold(tables)
    cores = tables.manifest.get("machine", {}).get("cores")
    t1 = table1(batches)
    gain = saturation_gain(tables.settings)
    return findings(batches, latency, feeds, tables.settings, cores, claims(t1, latency, feeds, cores, gain),
                    metrics(t1, latency, gain) + cold_metrics(cold_vs_warm(cold, batches)), cold)


def figures(tables: ResultTables) -> dict:
    batches, latency, _ = _tables(tables)
    cold = _cold(tables)
    return {"loader": figure(batches, latency, saturation_gain(tables.settings), cold)}


def _percentile_ratio(latency: pd.DataFrame, percentile: str, sat: Saturation) -> Metric:
    """A latency percentile at the saturated load / with one loader, over the histograms recorded per
    load (one per load and repeat, each of a fresh table): without repeats, no CI."""
    one = latency[latency.loaders == 1][percentile]
    many = latency[latency.loaders == sat.saturated][percentile]
    value, low, high = ratio_interval(many, one)
    return Metric(CASSANDRA, f"{percentile} saturated / one loader", value, None, 1.0, "x", low, high,
                  "" if pd.notna(low) else "one latency histogram per load: no CI")


def saturation_gain(settings) -> float:
    """The stated margin a run was analysed with (its setting; older runs: SATURATION_GAIN)."""
    gain = settings.get("saturation_gain") if hasattr(settings, "get") else None
    return SATURATION_GAIN if gain is None else float(gain)


def _moved(m: Metric, threshold: float) -> str:
    """What the data say, in words: '1.20x one loader's (below 1.5x; no CI)'."""
    side = "below" if m.value < threshold else "above" if m.value > threshold else "at"
    trend = "fell" if m.value < 1 else "grew" if m.value > 1 else "unchanged"
    return f"{m.text()} of one loader's ({trend}; the estimate {side} {threshold:g}x)"


def _tables(tables: ResultTables):
    return (tables[EXPERIMENT], tables.get(f"{EXPERIMENT}_latency", pd.DataFrame()),
            tables.get(f"{EXPERIMENT}_feeds", pd.DataFrame()))


def _cold(tables: ResultTables) -> pd.DataFrame:
    return tables.get(f"{EXPERIMENT}_cold", pd.DataFrame())


def metrics(t1: pd.DataFrame, latency: pd.DataFrame = pd.DataFrame(), gain: float = SATURATION_GAIN) -> tuple:
    """Per system: its best img/s over batch sizes against Cassandra's (same loader, same machine), per
    encoding; for Cassandra: its best against the seed's best, and the MB/s its server delivers to the
    saturating count of loaders against one loader's."""
    out = []
    for encoding, g in (latency.groupby("encoding", sort=False) if len(latency) else ()):
        sat = saturation(g, gain)
        top = sat.saturated if sat.saturated is not None else int(g.loaders.max())
        if top > 1:
            value, low, high = ratio_interval(g[g.loaders == top].mb_per_s, g[g.loaders == 1].mb_per_s)
            out.append(Metric(CASSANDRA, f"{encoding} MB/s served to {top} loaders ("
                              f"{'saturated' if sat.saturated is not None else 'not saturated'}) vs one", value, None,
                              1.0, "x", low, high, "" if pd.notna(low) else "one run per load: no CI"))
    for encoding, part in t1.groupby("encoding", sort=False):
        best = part.loc[part.groupby("system", sort=False).images_per_s.idxmax()].set_index("system")
        if CASSANDRA not in best.index:
            continue
        cass = best.loc[CASSANDRA]
        seed = paper004.TABLE1[paper004.TABLE1.image_kb == (20 if encoding == "jpeg" else 150)]
        seed_best = seed.loc[seed.images_per_s.idxmax()]
        # the seed's figure is a published constant: the ratio's CI is ours alone
        out.append(ratio(CASSANDRA, f"best {encoding} img/s vs the seed's (one loader)", cass.images_per_s,
                         cass.images_per_s_ci, seed_best.images_per_s, 0.0))
        for system, row in best.drop(index=CASSANDRA).iterrows():
            out.append(ratio(system, f"best {encoding} img/s vs Cassandra (one loader)", row.images_per_s,
                             row.images_per_s_ci, cass.images_per_s, cass.images_per_s_ci))
    return tuple(out)


def cold_metrics(cold: pd.DataFrame) -> tuple:
    """Per system and encoding: warm / cold images/s at the cold epochs' batch size."""
    return tuple(Metric(r.system, f"{r.encoding} warm / cold img/s, batch {r.batch_size} (cold: restart + evict)",
                        r.warm_over_cold, None, 1.0, "x", r.warm_over_cold_low, r.warm_over_cold_high,
                        "" if pd.notna(r.warm_over_cold_low) else "one cold epoch: no CI")
                 for r in cold.itertuples())


def _rate(part: pd.DataFrame, batch: int):
    row = part[part.batch_size == batch]
    return (row.images_per_s.iloc[0], row.images_per_s_ci.iloc[0]) if len(row) else None


def claims(t1: pd.DataFrame, latency: pd.DataFrame, feeds: pd.DataFrame, cores=None,
           gain: float = SATURATION_GAIN) -> tuple:
    made = []
    cass = t1[t1.system == CASSANDRA]
    jpeg, raw = cass[cass.encoding == "jpeg"], cass[cass.encoding == "raw"]
    ours = (f"ours peaks at {jpeg.images_per_s.max():,.0f} JPEG/s" if len(jpeg) else "JPEG not measured")
    made.append(not_comparable("Sec 5.2, Table 1", "A single loader reads 11,000-18,000 JPEG/s and 3,800-4,900 "
                               "TIFF/s from one Cassandra server.", "Cassandra img/s, one loader",
                               f"the seed: {paper004.MACHINE}; ours: a {cores}-core VM where server and loader "
                               f"share the cores ({ours})"))
    # What the seed's batch-size trends come from: a loader alone on a 24-thread node, the server across 10 GbE.
    batch_trend = Cause(MACHINE, f"on this {cores}-core VM the loader and the server share the cores, so a batch's "
                        "cost is CPU time on both sides, not the per-request round trips over 10 GbE that larger "
                        "batches amortise in the seed", "the loader on its own many-core host, the server across a "
                        "10 GbE link (docs/two-hosts.md), the same batch sizes")
    statement = "JPEG throughput grows with the batch size (11,440 img/s at batch 32, 18,400 at 256)."
    sizes = sorted(jpeg.batch_size)
    if len(sizes) >= 2:
        (big, big_ci), (small, small_ci) = _rate(jpeg, sizes[-1]), _rate(jpeg, sizes[0])
        r = ratio(CASSANDRA, "", big, big_ci, small, small_ci)
        made.append(judge_metric("Sec 5.2, Table 1", statement, f"Cassandra JPEG img/s at batch {sizes[-1]} / at "
                                 f"batch {sizes[0]}", r, above(1.0), cause=batch_trend))
    else:
        made.append(not_comparable("Sec 5.2, Table 1", statement, "Cassandra JPEG img/s across batch sizes",
                                   "fewer than two JPEG batch sizes measured"))
    statement = "TIFF throughput peaks at batch 128 and falls at larger batches (4,870 img/s at 128, 3,870 at 512)."
    larger = sorted(b for b in raw.batch_size if b > 128)
    if 128 in set(raw.batch_size) and larger:
        (big, big_ci), (mid, mid_ci) = _rate(raw, larger[-1]), _rate(raw, 128)
        r = ratio(CASSANDRA, "", big, big_ci, mid, mid_ci)
        made.append(judge_metric("Sec 5.2, Table 1", statement, f"Cassandra raw img/s at batch {larger[-1]} / at "
                                 "batch 128", r, below(1.0), cause=Cause(
                                     UNKNOWN, "the seed does not say why its TIFF rate falls past batch 128 (a "
                                     "larger batch holds more MB in flight: its client's memory or its 10 GbE link "
                                     "may be what limits it); here the link is the loopback and the cores are shared",
                                     "the seed's setup: a 10 GbE link between loader and server "
                                     "(docs/two-hosts.md), batches 128-512 of raw images, the client's memory "
                                     "and the link's use recorded")))
    else:
        made.append(not_comparable("Sec 5.2, Table 1", statement, "Cassandra raw img/s, batch 128 vs larger",
                                   "batch 128 and a larger raw batch not both measured at this scale"))
    for encoding in ("jpeg", "raw"):
        g = latency[latency.encoding == encoding] if len(latency) else latency
        p95 = f"Under saturation ({encoding}), read latency up to the 95th percentile stays almost constant."
        p99 = f"Under saturation ({encoding}), the 99th percentile of read latency grows (about 2x)."
        what = f"nodetool read latency, {encoding}, saturated load / one loader"
        if len(g) == 0 or g.loaders.nunique() < 2:
            for statement in (p95, p99):
                made.append(not_comparable("Sec 5.2, Table 2", statement, what,
                                           "latency with one and several loaders not both measured"))
            continue
        sat = saturation(g, gain)
        if sat.saturated is None:
            for statement in (p95, p99):
                made.append(not_comparable("Sec 5.2, Table 2", statement, what, sat.text() + " (the claim is about "
                                           "a saturated server; more loaders would find its saturation)"))
            continue
        loads = f"at {sat.saturated} loaders (saturated; the MB/s stopped rising after {sat.knee}) / at 1"
        made.append(judge_metric("Sec 5.2, Table 2", p95, f"p95 {loads} ({encoding})",
                                 _percentile_ratio(g, "p95", sat), below(1.5), cause=SHARED_CORES))
        made.append(judge_metric("Sec 5.2, Table 2", p99, f"p99 {loads} ({encoding})",
                                 _percentile_ratio(g, "p99", sat), above(1.0), cause=SHARED_CORES))
    answer = fed(feeds)
    ours = "; ".join(f"{r.system} {r.encoding}: {r.accelerators_fed}" for r in answer.itertuples()) or "not measured"
    made.append(not_comparable("Sec 5.2", "One loader feeds 50-90 GPUs (JPEG) or 19-24 (TIFF) at 200 img/s each.",
                               "emulated accelerators kept at the utilisation threshold",
                               f"the seed computed it from a 24-thread node's rate; ours ran them on a {cores}-core "
                               f"VM shared with the server ({ours})"))
    return tuple(made)
