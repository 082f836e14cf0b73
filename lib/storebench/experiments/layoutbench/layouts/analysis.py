"""Analyse layouts (LayoutBench, seed 002: Table 1, Findings 1-4) from its recorded tables: T, D and requests
per query and layout, the latency crossover, bytes over the minimum (and what Parquet's min/max pruning
may skip), bottlenecks, memory tiers, cost with its 95% CI.

The tables of several parts of one measurement (by server, profile or layouts) may be concatenated:
a summary is per (server, profile, memory tier, layout, query), and the per-run tables that parts
repeat (the counts, what each layout wrote, the profiles) are read once per key."""
from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd

from storebench.experiments.layoutbench.layouts import (FOOTPRINT_QUERY, FOOTPRINT_TIER, UNLIMITED, memory_tier_name,
                                                        primary_server, profiles_by_rate, recorded_rates)
from storebench.core.experiment import ResultTables
from storebench.core.stats import MIN_BOOTSTRAP, bootstrap, mean_ci
from storebench.experiments.layoutbench import published as paper002
from storebench.report.machine import CROSSES, part_tags
from storebench.report.findings import (PAPER_SETUP, SUBSTITUTE, UNKNOWN, Cause, Findings, Metric, sig3, above,
                                        below, judge, not_comparable, within)

EXPERIMENT = "layouts"
# What a run reads (the report's Measured line and the index): not the preset's n_samples, which it never reads
DATA = ("LayoutBench's tier {tier} of the ImageNet sample (its 1,000 real JPEGs: 1 copy each at x1, 13 "
        "at mini, under new names; images and bytes per layout in the write table)")


SHORT = {"L1-objects": "L1", "L2-tar": "L2", "L3-parquet": "L3", "L3-parquet-sorted": "L3s", "L4-lance": "L4"}

# The seed's retrieval sizes. Its figures group Q1-Q4, Q10 and Q11 as "small retrieval queries" and
# Q5-Q9 as "large"; Finding 1 tells mid from large and calls L3 fastest for "very large" retrievals:
# Q8 (2,311 images at mini, 17x the next largest) is large, the rest of Q5-Q9 mid. By the seed's own
# counts Q8 is the only query beyond 133 images at mini, so "large" rests on one query there too.
SIZE_GROUPS = {"small": ("Q1", "Q2", "Q3", "Q4", "Q10", "Q11"), "mid": ("Q5", "Q6", "Q7", "Q9"), "large": ("Q8",)}


def _base(config: dict) -> str:
    """The slowest bandwidth tier measured (the t3 instances'): where the verdicts are made."""
    return profiles_by_rate(config["net_profiles"], config.get("net_rates", {}))[0]


def size_class(query: str) -> str:
    for size, names in SIZE_GROUPS.items():
        if query in names:
            return size
    raise ValueError(f"{query!r} is not one of the seed's queries")


def once(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """A per-run table that every part of a measurement writes, one row per ``keys`` (the first part's)."""
    return frame.drop_duplicates([k for k in keys if k in frame.columns]).reset_index(drop=True) if len(frame) else frame


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per server, profile, memory tier, layout and query: median T, mean T +- 95% CI, D, requests,
    connections, D / minimum, and how many runs did not finish."""
    out = []
    keys = ["server", "net_profile", "memory_tier", "layout", "query"]
    for key, g in rows[rows["query"] != FOOTPRINT_QUERY].groupby(keys, sort=False):
        ok = g[g.status == "ok"]
        mean, half, n = mean_ci(ok.seconds) if len(ok) else (float("nan"), float("nan"), 0)
        needed = int(g.needed_bytes.iloc[0])
        d = float(ok.bytes_down.median()) if len(ok) else float("nan")
        out.append({**dict(zip(keys, key)), "images": ok.images.max() if len(ok) else float("nan"),
                    "t_median_s": float(ok.seconds.median()) if len(ok) else float("nan"), "t_mean_s": mean,
                    "t_ci95_s": half, "runs": n, "did_not_finish": int((g.status != "ok").sum()),
                    "bytes_down": d, "needed_bytes": needed, "over_minimum": d / needed if needed else float("nan"),
                    "over_minimum_ci": (mean_ci(ok.bytes_down / needed)[1] if needed and len(ok) else float("nan")),
                    "requests": float(ok.requests.median()) if len(ok) else float("nan"),
                    "connections": float(ok.connections.median()) if len(ok) else float("nan"),
                    "net_rtt_ms": float(g.net_rtt_ms.iloc[0]), "net_throughput_mbit": float(g.net_throughput_mbit.iloc[0]),
                    "net_rate": g.net_rate.iloc[0] if "net_rate" in g else "?",
                    "peak_bytes": float(g.peak_bytes.max()) if "peak_bytes" in g else float("nan")})
    return pd.DataFrame(out)


def table1(written: pd.DataFrame) -> pd.DataFrame:
    """Ours (objects, stored bytes, client index bytes) beside the seed's Table 1 at mini (both L3 orders
    beside the seed's L3)."""
    seed = paper002.TABLE1[paper002.TABLE1.tier == "mini"].set_index("layout")
    written = once(written, ["server", "layout"])
    ours = written.assign(short=written.layout.map(SHORT).replace({"L3s": "L3"}))
    return ours.assign(seed_mini_files=ours.short.map(seed.files), seed_mini_size=ours.short.map(seed.file_size),
                       seed_mini_index=ours.short.map(seed.index_size))[
        ["server", "layout", "tier", "images", "objects", "stored_bytes", "index_bytes", "write_seconds", "details",
         "seed_mini_files", "seed_mini_size", "seed_mini_index"]]


def _time_scale(rows: pd.DataFrame) -> pd.Series:
    """How many times slower than the link it stands for each row's profile ran (1 for tables without it)."""
    return rows["net_time_scale"].fillna(1) if "net_time_scale" in rows else pd.Series(1.0, index=rows.index)


def _cost_samples(rows: pd.DataFrame, config: dict, price: float) -> dict[str, dict[str, list]]:
    """Per layout: per query, the network and compute cost (USD) of each repeat: network = bytes x egress
    price + requests x GET price; compute = T / the profile's time scale (the seed's time) x the hourly price."""
    ok = rows[(rows.status == "ok") & (rows["query"] != FOOTPRINT_QUERY)]
    ok = ok.assign(c_network=ok.bytes_down / 1e9 * config["egress_usd_per_gb"]
                   + ok.requests / 1000 * config["get_usd_per_1000"],
                   c_compute=ok.seconds / _time_scale(ok) / 3600 * price)
    return {layout: {what: [g[what].to_numpy() for _, g in part.groupby("query", sort=True)]
                     for what in ("c_network", "c_compute")}
            for layout, part in ok.groupby("layout", sort=False)}


def _interval(statistic, samples: list) -> tuple[float, float, float]:
    """``statistic`` of the samples' means (vectorised over resamples) with its 95% CI: the percentile
    bootstrap (each query's repeats resampled) with >= MIN_BOOTSTRAP repeats everywhere, else each mean's
    t-interval carried to the figure to first order."""
    means = [float(np.mean(x)) for x in samples]
    value = float(statistic(*[np.asarray([m]) for m in means])[0])
    n = min(len(x) for x in samples)
    if n < 2:
        return value, float("nan"), float("nan")
    if n >= MIN_BOOTSTRAP:
        return (value, *bootstrap(statistic, samples))
    spread = 0.0
    for i, x in enumerate(samples):
        half = mean_ci(x)[1]
        step = max(abs(means[i]) * 1e-6, 1e-15)
        moved = [np.asarray([m + (step if j == i else 0.0)]) for j, m in enumerate(means)]
        spread += ((float(statistic(*moved)[0]) - value) / step * half) ** 2
    return value, value - math.sqrt(spread), value + math.sqrt(spread)


def _total(*means):
    return np.sum(means, axis=0)


def costs(rows: pd.DataFrame, config: dict, instance: str = "t3.medium", profile: str | None = None) -> pd.DataFrame:
    """Finding #4's form: network and compute cost (USD) of running every query once, per layout, on
    ``instance`` (at ``profile``, default the slowest bandwidth tier, the t3s'), each with its 95% CI; the
    compute time is the seed's (T / the profile's time scale). Queries that did not finish are left out."""
    profile = profile or _base(config)
    part = rows[(rows.server == primary_server(config)) & (rows.net_profile == profile) & (rows.memory_tier == UNLIMITED)]
    price = config["instance_usd_per_hour"][instance]
    out = []
    for layout, samples in _cost_samples(part, config, price).items():
        network, compute = samples["c_network"], samples["c_compute"]
        mine = part[(part.layout == layout) & (part.status == "ok") & (part["query"] != FOOTPRINT_QUERY)]
        row = {"layout": layout, "instance": instance, "net_profile": profile, "queries": len(network)}
        for name, values in (("C_network", network), ("C_compute", compute), ("C_total", network + compute)):
            value, low, high = _interval(_total, values)
            row.update({name: value, f"{name}_low": low, f"{name}_high": high})
        by_query = mine.groupby("query")
        row.update({"T_total_s": float(by_query.seconds.mean().sum()),
                    "T_seed_s": float((mine.seconds / _time_scale(mine)).groupby(mine["query"]).mean().sum()),
                    "D_total_bytes": float(by_query.bytes_down.mean().sum()),
                    "requests": float(by_query.requests.mean().sum())})
        out.append(row)
    return pd.DataFrame(out)


def cost_ratio(rows: pd.DataFrame, config: dict, a: str, b: str | list, instance: str = "t3.medium",
               profile: str | None = None, what: str = "total") -> tuple[float, float, float]:
    """C(a) / C(b) (b: a layout, or a list of layouts whose cheaper one, by point estimate, is taken),
    the total (or ``what`` = "network share": C_network / C_total of ``a``), with its 95% CI."""
    profile = profile or _base(config)
    part = rows[(rows.server == primary_server(config)) & (rows.net_profile == profile) & (rows.memory_tier == UNLIMITED)]
    samples = _cost_samples(part, config, config["instance_usd_per_hour"][instance])
    nan = (float("nan"),) * 3
    if a not in samples:
        return nan

    def flat(layout):
        return samples[layout]["c_network"] + samples[layout]["c_compute"]
    if what == "network share":
        k = len(samples[a]["c_network"])
        return _interval(lambda *m: _total(*m[:k]) / (_total(*m[:k]) + _total(*m[k:])), flat(a))
    candidates = [x for x in ([b] if isinstance(b, str) else b) if x in samples]
    if not candidates:
        return nan
    cheapest = min(candidates, key=lambda x: sum(np.mean(v) for v in flat(x)))
    k = len(flat(a))
    return _interval(lambda *m: _total(*m[:k]) / _total(*m[k:]), flat(a) + flat(cheapest))


def _ratio(table, profile, query_names, a, b) -> float:
    """Geometric mean over ``query_names`` of median T(a) / T(b) under ``profile``, unlimited memory."""
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED) & table["query"].isin(query_names)]
    t = part.pivot_table(index="query", columns="layout", values="t_median_s")
    if a not in t or b not in t or t.empty:
        return float("nan")
    return float(np.exp(np.log(t[a] / t[b]).mean()))


def crossover(table: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """Per profile and retrieval size: T(L1) / T(L2), T(L3) / best of L1 and L2, T(L4) / best of
    L1 and L2 (geometric means over the class's queries); the fastest layout of the class."""
    classes = once(counts, ["query"]).assign(size=lambda c: c["query"].map(size_class))
    out = []
    for profile in table.net_profile.unique():
        part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED)]
        if part.empty:
            continue
        for size in ("small", "mid", "large"):
            names = classes[classes["size"] == size]["query"].tolist()
            if not names:
                continue
            t = part[part["query"].isin(names)].pivot_table(index="query", columns="layout", values="t_median_s")
            best12 = t[["L1-objects", "L2-tar"]].min(axis=1) if {"L1-objects", "L2-tar"} <= set(t) else None
            geo = {layout: float(np.exp(np.log(t[layout]).mean())) for layout in t}
            row = {"net_profile": profile, "size": size, "queries": ",".join(names),
                   "fastest": min(geo, key=geo.get), "L1_over_L2": _ratio(table, profile, names, "L1-objects", "L2-tar")}
            for layout in ("L3-parquet", "L3-parquet-sorted", "L4-lance"):
                if best12 is not None and layout in t:
                    row[f"{SHORT[layout]}_over_best_L1_L2"] = float(np.exp(np.log(t[layout] / best12).mean()))
            out.append(row)
    return pd.DataFrame(out)


def bandwidth_scaling(table: pd.DataFrame, config: dict, counts: pd.DataFrame) -> pd.DataFrame:
    """Per layout: T at the slowest tier / T at the fastest, over mid and large queries (the link
    rates differ 4x: 4.0 = bound by bandwidth, 1.0 = not at all)."""
    profiles = _slowest_and_fastest(table, config)
    if not profiles:
        return pd.DataFrame()
    names = [q for q in once(counts, ["query"])["query"] if size_class(q) != "small"]
    slow, fast = profiles
    part = table[(table.memory_tier == UNLIMITED) & table["query"].isin(names)]
    t = part.pivot_table(index=["layout", "query"], columns="net_profile", values="t_median_s")
    ratio = np.exp(np.log(t[slow] / t[fast]).groupby("layout").mean())
    rates = table.groupby("net_profile").net_rate.first() if "net_rate" in table else {}
    rates = {p: rates.get(p, "?") for p in (slow, fast)}
    return pd.DataFrame({"slow_over_fast": ratio, "slow": f"{slow} ({rates[slow]})", "fast": f"{fast} ({rates[fast]})"})


def _slowest_and_fastest(table: pd.DataFrame, config: dict) -> tuple[str, str] | None:
    """The measured network profiles of the lowest and highest rate, or None when fewer than two were measured."""
    profiles = [p for p in profiles_by_rate(config["net_profiles"], config.get("net_rates", {}))
                if p in set(table.net_profile)]
    return (profiles[0], profiles[-1]) if len(profiles) > 1 else None


def memory_order(config: dict, table: pd.DataFrame | None = None) -> list[str]:
    """The memory tiers' labels, smallest first (from the settings; tables of older runs: as recorded)."""
    if "memory_tiers" in config:
        return [memory_tier_name(m) for m in sorted(set(config["memory_tiers"]))]
    seen = [] if table is None else list(dict.fromkeys(table.memory_tier))
    return [t for t in seen if t not in (UNLIMITED, FOOTPRINT_TIER)]


def memory_frontier(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per layout and memory tier: how many queries finished, of how many."""
    part = table[~table.memory_tier.isin([UNLIMITED, FOOTPRINT_TIER])]
    if part.empty:
        return pd.DataFrame()
    frame = part.assign(finished=part.did_not_finish == 0).groupby(["layout", "memory_tier"]).finished.agg(["sum", "count"])
    frame = frame.assign(text=frame["sum"].astype(int).astype(str) + "/" + frame["count"].astype(str))
    return frame["text"].unstack()[[o for o in memory_order(config, table) if o in set(part.memory_tier)]]


def smallest_tier_all_finish(table: pd.DataFrame, config: dict) -> dict:
    """Per layout: the smallest memory tier (its label) under which every query finished (None: none)."""
    part = table[~table.memory_tier.isin([UNLIMITED, FOOTPRINT_TIER])]
    result = {}
    for layout, g in part.groupby("layout"):
        fine = [t for t in memory_order(config, table) if (g.memory_tier == t).any()
                and (g[g.memory_tier == t].did_not_finish == 0).all()]
        result[layout] = fine[0] if fine else None
    return result


def footprints(rows: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per server and layout: the measured client footprint (MiB, largest of the fresh Q0 clients), the
    limit of each memory tier (MiB), the largest peak of a query that finished under a limit, and which
    query it was."""
    foot = rows[rows.memory_tier == FOOTPRINT_TIER]
    if foot.empty:
        return pd.DataFrame()
    limited = rows[~rows.memory_tier.isin([UNLIMITED, FOOTPRINT_TIER]) & (rows.status == "ok")]
    out = []
    for (server, layout), g in foot.groupby(["server", "layout"], sort=False):
        footprint = float(g.footprint_bytes.max() if "footprint_bytes" in g else g.peak_bytes.max())
        row = {"server": server, "layout": layout, "footprint_mib": footprint / 2**20,
               "footprint_runs_mib": ", ".join(f"{v / 2**20:.1f}" for v in g.peak_bytes)}
        tiers = rows[(rows.server == server) & (rows.layout == layout) & rows.memory_limit_bytes.notna()]
        row.update({f"{tier} limit_mib": float(g.memory_limit_bytes.max()) / 2**20
                    for tier, g in tiers.groupby("memory_tier", sort=False)})
        mine = limited[(limited.server == server) & (limited.layout == layout)]
        if len(mine):
            top = mine.loc[mine.peak_bytes.idxmax()]
            row.update({"largest_peak_mib": float(top.peak_bytes) / 2**20, "largest_peak_query": top["query"],
                        "largest_peak_over_footprint": float(top.peak_bytes) / footprint})
        out.append(row)
    return pd.DataFrame(out)


def row_group_reads(rowgroups: pd.DataFrame, table: pd.DataFrame, config: dict, profile: str | None = None
                    ) -> pd.DataFrame:
    """Per Parquet layout and query: row groups in all, holding a match, and not excluded by min/max
    statistics (with their image bytes), beside what the client really received (median D, the first
    server, ``profile`` default the first bandwidth tier): D / (image bytes of the row groups not
    excluded) near 1 means DuckDB pruned as far as the statistics allow; well above 1, it read more."""
    if rowgroups is None or rowgroups.empty:
        return pd.DataFrame()
    profile = profile or _base(config)
    rowgroups = once(rowgroups, ["layout", "query"])
    measured = table[(table.server == primary_server(config)) & (table.net_profile == profile)
                     & (table.memory_tier == UNLIMITED)].set_index(["layout", "query"]).bytes_down
    out = rowgroups[rowgroups["query"] != FOOTPRINT_QUERY].copy()
    out["bytes_down"] = [measured.get((l, q), float("nan")) for l, q in zip(out.layout, out["query"])]
    out["over_not_excluded"] = out.bytes_down / out.image_bytes_not_excluded.where(out.image_bytes_not_excluded > 0)
    out["over_matching"] = out.bytes_down / out.image_bytes_matching.where(out.image_bytes_matching > 0)
    return out[["layout", "query", "row_groups", "row_groups_matching", "row_groups_not_excluded",
                "image_bytes_matching", "image_bytes_not_excluded", "bytes_down", "over_matching",
                "over_not_excluded"]]


def _fmt(x: float, unit: str = "x") -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{sig3(x)}{unit}"


def server_comparison(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per other server, profile and layout: T(server) / T(first server), geometric mean over the
    queries, and bytes received over the first server's (the layout's bytes should not change)."""
    first = primary_server(config)
    part = table[table.memory_tier == UNLIMITED]
    base = part[part.server == first].set_index(["net_profile", "layout", "query"]).sort_index()
    out = []
    for (server, profile, layout), g in part[part.server != first].groupby(["server", "net_profile", "layout"]):
        ref = base.loc[(profile, layout)].reindex(g["query"])
        out.append({"server": server, "vs": first, "net_profile": profile, "layout": layout,
                    "t_ratio": float(np.exp(np.log(g.t_median_s.to_numpy() / ref.t_median_s.to_numpy()).mean())),
                    "bytes_ratio": float(g.bytes_down.sum() / ref.bytes_down.sum())})
    return pd.DataFrame(out)


def _describe_tier(counts: pd.DataFrame, config: dict) -> str:
    counts = once(counts, ["query"])
    if "tier_images" not in counts:
        return f"tier {config['tier']}"
    return (f"tier {config['tier']}: {int(counts.tier_images.iloc[0]):,} images, {counts.tier_bytes.iloc[0] / 1e9:.2f} GB "
            "(the 1,000 real ImageNet JPEGs and re-encoded copies of them)")


def findings(table: pd.DataFrame, counts: pd.DataFrame, config, rows: pd.DataFrame, claims: tuple = (),
             metrics: tuple = (), machines: tuple[dict[str, str], str] = ({}, "")) -> Findings:
    """``machines``: each part's machine tag and their footnote (``machine.part_tags``), for a run whose parts
    ran on more than one machine."""
    everything, table = table, table[table.server == primary_server(config)]
    on = partial(_machines_that_measured, rows, machines[0], server=[primary_server(config)], memory_tier=[UNLIMITED])

    base = _base(config) if config["net_profiles"] else table.net_profile.iloc[0]
    cross = crossover(table, counts)
    at = cross[cross.net_profile == base].set_index("size") if len(cross) else cross
    scale = int(rows["net_time_scale"].max()) if "net_time_scale" in rows and rows["net_time_scale"].notna().any() else 1
    lines = [f"Server {primary_server(config)}; {_describe_tier(counts, config)}. Retrieval sizes as the seed's figures "
             "group them (small: " + ", ".join(SIZE_GROUPS["small"]) + "; mid: " + ", ".join(SIZE_GROUPS["mid"])
             + "; large: Q8). " + (f"Every network profile runs {scale}x slower in time than the link it stands for "
                                   f"(rate / {scale}, latency x {scale}), so the latency/bandwidth balance is the seed's; "
                                   "times are as measured, costs use T / " + str(scale) + ". " if scale > 1 else "")
             + f"Verdicts at {base}{' (t3.medium tier)' if base == 's3-5g' else ''}; every profile is in the tables above.",
             "", "**Finding 1, latency crossover** (seed: " + paper002.FINDINGS[1] + "):", ""]

    def get(size, column):
        return at.loc[size, column] if size in at.index and column in at.columns else float("nan")

    checks = [
        ("small: L1 ~ L2", "T(L1)/T(L2)", get("small", "L1_over_L2")),
        ("mid: L1 wins", "T(L1)/T(L2)", get("mid", "L1_over_L2")),
        ("large: L2 wins", "T(L1)/T(L2)", get("large", "L1_over_L2")),
        ("L3 slow for small", "T(L3)/best(L1,L2)", get("small", "L3_over_best_L1_L2")),
        ("L3 slow for mid", "T(L3)/best(L1,L2)", get("mid", "L3_over_best_L1_L2")),
    ]
    lines += ["| seed's statement | ours (point estimate; verdicts: the claims below) |", "|---|---|"]
    for text, what, value in checks:
        lines.append(f"| {text} | {what} = {_fmt(value)} |")
    fastest_large = at.loc["large", "fastest"] if "large" in at.index else None
    lines.append(f"| L3 fastest for very large | fastest on large: {fastest_large or 'n/a'} |")
    tiers = smallest_tier_all_finish(table, config)
    if tiers:
        need = lambda v: "none of the tiers" if v is None else v  # noqa: E731
        lines.append("| L3 fails on small-memory clients | smallest memory tier where every query finishes: "
                     + ", ".join(f"{SHORT.get(k, k)} {need(v)}" for k, v in tiers.items()) + " |")
    extra = {x: {size: get(size, f"{SHORT[x]}_over_best_L1_L2") for size in SIZE_GROUPS}
             for x in ("L3-parquet-sorted", "L4-lance")}
    past = [f"{'L3 sorted by label' if k == 'L3-parquet-sorted' else 'L4 (Lance)'} "
            + ", ".join(f"{size} {_fmt(v)}" for size, v in d.items())
            + _parenthesised(_crossing({SHORT[k]: on(layout=[k], net_profile=[base]),
                                        "L1 and L2": on(layout=["L1-objects", "L2-tar"], net_profile=[base])}))
            for k, d in extra.items() if any(np.isfinite(v) for v in d.values())]  # the layouts this run measured
    lines += ["", "Past the seed, T / best(L1, L2): " + "; ".join(past) + "." if past else "", ""]

    # Finding 2: bytes over the minimum
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED) & (table.needed_bytes > 0)]
    over = part.groupby("layout", sort=False).over_minimum.median()
    small_q = [q for q in SIZE_GROUPS["small"] if q in set(part["query"])]
    selective = {x: part[(part.layout == x) & part["query"].isin(small_q)].over_minimum
                 for x in ("L3-parquet", "L3-parquet-sorted")}
    lines += ["**Finding 2, bytes transferred** (seed: " + paper002.FINDINGS[2] + "): median D / minimum over the "
              "queries that return images: " + ", ".join(f"{SHORT.get(k, k)} {_fmt(v)}" for k, v in over.items()) + ". "
              + " ".join(f"{'L3 in class order' if x == 'L3-parquet' else 'L3 sorted by label'} on the small queries: "
                         f"{_fmt(v.min())}-{_fmt(v.max())} the minimum." for x, v in selective.items() if len(v))
              + " Row groups read: the table of min/max pruning above.", ""]

    # Finding 3: bottlenecks
    scaling = bandwidth_scaling(table, config, counts)
    lines.append("**Finding 3, bottlenecks** (seed: " + paper002.FINDINGS[3] + "):")
    if not scaling.empty:
        slow, fast = _slowest_and_fastest(table, config)
        def across(k, v):
            return _crossing({slow: on(layout=[k], net_profile=[slow]), fast: on(layout=[k], net_profile=[fast])}) \
                if np.isfinite(v) else None

        ratios, crossing = _marked_ratios([(f"{SHORT.get(k, k)} {_fmt(v)}", across(k, v))
                                           for k, v in scaling.slow_over_fast.items()])
        lines.append(f"T at {scaling.slow.iloc[0]} / T at {scaling.fast.iloc[0]} on mid and large queries "
                     f"(4.0 = bound by the link, 1.0 = not at all{'; ' + crossing if crossing else ''}): {ratios}.")
    lines.append("L1's requests: " + _latency_share(table, base, config) + "; memory: see the memory tiers above.")
    lines.append("")
    cost = costs(rows, config)
    if not cost.empty:
        shares = ", ".join(f"{SHORT.get(r.layout, r.layout)} {r.C_network / r.C_total:.0%}" for r in cost.itertuples())
        lines += ["**Finding 4, cost** (every query once at t3.medium's price and bandwidth tier, compute time T / the "
                  "time scale; seed: " + paper002.FINDINGS[4] + "): "
                  + ", ".join(f"{SHORT.get(r.layout, r.layout)} ${sig3(r.C_total)} [{sig3(r.C_total_low)}, "
                              f"{sig3(r.C_total_high)}]" for r in cost.itertuples())
                  + f" (network: {shares} of it). Our tier is mini, the seed's cost table is not said to be: compare "
                  "the ratios between layouts, not the dollars.", ""]
    servers = server_comparison(everything, config)
    if not servers.empty:
        def measured(server, r):
            return _machines_that_measured(rows, machines[0], server=[server], layout=[r.layout],
                                           net_profile=[r.net_profile], memory_tier=[UNLIMITED])

        ratios, crossing = _marked_ratios(
            [(f"{SHORT.get(r.layout, r.layout)} {_fmt(r.t_ratio)} at {r.net_profile}",
              _crossing({r.server: measured(r.server, r), r.vs: measured(r.vs, r)})) for r in servers.itertuples()])
        lines += [f"**The server, not the layout**: the same layouts on {', '.join(servers.server.unique())} vs "
                  f"{primary_server(config)}, T ratio (geometric mean over the queries"
                  f"{'; ' + crossing if crossing else ''}) " + ratios
                  + "; bytes received " + ", ".join(f"{SHORT.get(r.layout, r.layout)} {_fmt(r.bytes_ratio)} at "
                                                    f"{r.net_profile}" for r in servers.itertuples())
                  + " of the first server's. A layout's ranking that holds on both servers is the layout's.", ""]
    _key_after_first_crossing(lines, machines[1])
    headline = _headline(config["tier"], table[(table.net_profile == base) & (table.memory_tier == UNLIMITED)],
                         _size_classes(counts), selective["L3-parquet"])
    return Findings(headline, "\n".join(lines), metrics=list(metrics), claims=claims)


def _machines_that_measured(rows: pd.DataFrame, machine_of: dict[str, str], **where: list) -> tuple[str, ...]:
    """The machine tags (``machine.part_tags``) of the parts whose rows match ``where`` (column -> values)."""
    if not machine_of or "part" not in rows:
        return ()
    for column, values in where.items():
        if column in rows:
            rows = rows[rows[column].isin(values)]
    return tuple(sorted({machine_of.get(part, "") for part in rows.part.unique()}))


def _marked_ratios(ratios: list[tuple[str, str | None]]) -> tuple[str, str]:
    """"L1 1.22x, L2 1.68x" from (ratio, its crossing mark; None for a ratio not measured) pairs, and the mark
    to say once for all of them when every measured ratio crosses machines the same way; otherwise "" and each
    ratio carries its own mark."""
    marks = {mark for _, mark in ratios if mark is not None}
    once = marks.pop() if len(marks) == 1 else ""
    return ", ".join(f"{ratio}{'' if once else _parenthesised(mark or '')}" for ratio, mark in ratios), once


def _parenthesised(text: str) -> str:
    return f" ({text})" if text else ""


def _key_after_first_crossing(lines: list[str], key: str) -> None:
    """Append the machines' key ("Machines: M1 = ...") to the first line that marks a ratio as crossing them."""
    first = next((i for i, line in enumerate(lines) if CROSSES in line), None)
    if key and first is not None:
        lines[first] += f" {key}"


def _crossing(sides: dict[str, tuple[str, ...]]) -> str:
    """"crosses machines: L3s on M1, L1 and L2 on M2" when a ratio's sides (name -> the machines that measured
    it) were measured on different machines; "" otherwise."""
    if not all(sides.values()) or len(set(sides.values())) < 2:  # a side not measured is not a crossing
        return ""
    return f"{CROSSES}: " + ", ".join(f"{name} on {', '.join(tags)}" for name, tags in sides.items())


def _headline(tier: str, part: pd.DataFrame, classes: dict, l3_small: pd.Series) -> str:
    """The report's answer line: the same means as the claims (T(L1)/T(L2), L4 over the best of L1 and L2), and
    only what this run measured (a partial run may lack L3 or a size class)."""
    def ratio(size, a, b):
        t = _means(part, classes[size]) if classes[size] else pd.DataFrame()
        return _geo(t, {a: 1, b: -1})[0] if a in t and b in t else float("nan")

    l1_l2 = [f"{size} L1/L2 {_fmt(ratio(size, 'L1-objects', 'L2-tar'))}" for size in ("small", "large")]
    said = [", ".join(s for s in l1_l2 if "n/a" not in s) or "n/a",
            f"L3 reads up to {_fmt(l3_small.max())} the minimum on selective queries" if len(l3_small) else "n/a",
            f"L4 (Lance) {_fmt(ratio('mid', 'L4-lance', 'best12'))} the time of the better of L1 and L2 on mid queries"]
    return f"LayoutBench ({tier}): " + "; ".join(s for s in said if "n/a" not in s)


def _latency_share(table: pd.DataFrame, profile: str, config: dict) -> str:
    """How much of L1's time its request rounds explain: (requests / parallel) x RTT over T."""
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED) & (table.layout == "L1-objects")
                 & (table.requests > 0)]
    if part.empty or "net_rtt_ms" not in part:
        return "not measured"
    share = (np.ceil(part.requests / config["parallel"]) * part.net_rtt_ms / 1000 / part.t_median_s).clip(upper=1)
    return (f"rounds of {config['parallel']} requests x the profile's RTT explain {share.min():.0%}-{share.max():.0%} "
            "of T")


def figure(table: pd.DataFrame, config: dict, limits: pd.DataFrame | None = None):
    """Top: median T per query and layout, one panel per bandwidth tier. Bottom: bytes received
    over the minimum (base tier) and the share of queries finished per memory tier, each cell with the
    memory limit the client actually ran under (``limits``: layout, memory_tier, limit_mib)."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    unlimited = table[table.memory_tier == UNLIMITED]
    profiles = profiles_by_rate(unlimited.net_profile, config.get("net_rates", {}))
    queries = [q for q in config["queries"] if q in set(table["query"])]
    memory = table[~table.memory_tier.isin([UNLIMITED, FOOTPRINT_TIER])]
    columns = max(len(profiles), 1 if memory.empty else 2)  # no empty panel where a run has no memory tiers
    fig, axes = plt.subplots(2, columns, figsize=(5.2 * max(columns, 2), 8.5), squeeze=False)
    for ax, profile in zip(axes[0], profiles):
        part = unlimited[unlimited.net_profile == profile].assign(ci=lambda f: f.t_ci95_s.fillna(0))
        part = part.set_index("query").loc[[q for q in queries if q in set(part["query"])]].reset_index()
        plots.grouped_bars(ax, part, "query", "layout", y="t_median_s", err="ci", hue_order=config["layouts"],
                           log=True, legend=False)
        rate = part.net_rate.iloc[0] if "net_rate" in part and len(part) else "?"
        ax.set(title=f"time per query, {profile} ({rate})", ylabel="seconds (median, log)")
    base = unlimited[unlimited.net_profile == profiles[0]] if profiles else unlimited
    base = base[base.needed_bytes > 0].assign(zero=0.0)
    if not base.empty:
        plots.grouped_bars(axes[1][0], base, "query", "layout", y="over_minimum", err="zero",
                           hue_order=config["layouts"], log=True, legend=False)
        axes[1][0].axhline(1, color="0.4", linestyle=":", linewidth=1)
        axes[1][0].set(title=f"bytes received / minimum needed, {profiles[0] if profiles else ''}",
                       ylabel="ratio (log; 1 = only what is needed)")
    if not memory.empty:
        share = memory.assign(done=memory.did_not_finish == 0).pivot_table(index="layout", columns="memory_tier",
                                                                           values="done", aggfunc="mean")
        share = share[[o for o in memory_order(config, table) if o in share.columns]]
        import seaborn as sns

        text = share.map(lambda v: f"{v:.0%}")
        if limits is not None and len(limits):
            limit = limits.pivot_table(index="layout", columns="memory_tier", values="limit_mib", aggfunc="max")
            text = pd.DataFrame({c: [f"{share.loc[r, c]:.0%}\nlimit {limit.loc[r, c]:.0f} MiB"
                                     if r in limit.index and c in limit.columns and pd.notna(limit.loc[r, c])
                                     else f"{share.loc[r, c]:.0%}" for r in share.index] for c in share.columns},
                                index=share.index)
        sns.heatmap(share, annot=text, fmt="", vmin=0, vmax=1, cmap="cividis", ax=axes[1][1], cbar=True,
                    cbar_kws={"label": "share of queries finished", "format": "{x:.0%}"}, annot_kws={"fontsize": 8})
        axes[1][1].set_xticklabels(list(share.columns), rotation=0, fontsize=8)
        axes[1][1].set(title="queries finished under a memory limit (fresh client per query)",
                       xlabel="limit: multiple of the layout's measured client footprint", ylabel="")
    for ax in [*axes[0][len(profiles):], *axes[1][1 if memory.empty else 2:]]:
        ax.axis("off")
    plots.system_legend(fig, [l for l in config["layouts"] if l in set(table.layout)], bars=True, title="layout")
    plots.question(fig, "Which layout answers each query fastest, reading the fewest bytes, within the least memory?")
    fig.tight_layout()
    plots.footnote(fig, "Ours: real ImageNet JPEGs and re-encoded copies, MinIO in a network namespace, links 20x "
                        "slower in time than the seed's (rate / 20, latency x 20); time: first call to last image "
                        "verified, cold client, median of the runs, error bars 95% CI of the mean; bytes counted at "
                        "the client (headers included). Memory tiers: the cgroup limit of each fresh client = a "
                        "multiple of its layout's measured footprint (printed in each cell).")
    return fig


# ------------------------------------------------------------------ the contract: analyse, figures, claims
def settings_with_rates(tables: ResultTables) -> dict:
    """The run's settings, plus each network profile's link rate as its rows recorded it (``net_rates``)."""
    return {**tables.settings, "net_rates": recorded_rates(tables[EXPERIMENT])}


def analyse(tables: ResultTables) -> Findings:
    rows, counts = tables[EXPERIMENT], tables[f"{EXPERIMENT}_counts"]
    config, table = settings_with_rates(tables), summary(rows)
    return findings(table, counts, config, rows, claims(table, counts, config, rows), metrics(table, counts, config),
                    part_tags(tables.manifest))


def figures(tables: ResultTables) -> dict:
    config, table, rows = settings_with_rates(tables), summary(tables[EXPERIMENT]), tables[EXPERIMENT]
    rows = rows[(rows.server == primary_server(config)) & ~rows.memory_tier.isin([UNLIMITED, FOOTPRINT_TIER])]
    limits = (rows.groupby(["layout", "memory_tier"], sort=False).agg(limit_mib=("memory_limit_bytes", "max"))
              .div(2**20).reset_index()) if "memory_limit_bytes" in rows else None
    return {"layouts": figure(table[table.server == primary_server(config)], config, limits)}


def _geo(t: pd.DataFrame, terms: dict) -> tuple[float, float]:
    """Geometric mean over the rows (queries) of prod(T[column] ** power), and its 95% CI half-width by
    first-order propagation of each mean's relative CI (NaN when a mean has none)."""
    logs = sum(power * np.log(t[(column, "mean")]) for column, power in terms.items())
    value = float(np.exp(logs.mean()))
    relative = sum((power * t[(column, "ci")] / t[(column, "mean")]) ** 2 for column, power in terms.items())
    half = float(value * math.sqrt(relative.sum(skipna=False)) / len(t)) if len(t) else float("nan")
    return value, half


def _log_ci(value: float, half: float) -> tuple:
    """``_geo``'s half-width is value x (the log-scale spread): the interval value x exp(-+spread),
    positive and asymmetric; (None, None) without a CI."""
    if not (np.isfinite(value) and np.isfinite(half)) or value <= 0:
        return None, None
    spread = half / value
    return float(value * math.exp(-spread)), float(value * math.exp(spread))


def _means(part: pd.DataFrame, names: list, index=("query",)) -> pd.DataFrame:
    """Mean T and its CI per query (rows) and layout (columns ("L1-objects", "mean"), ...), plus the best of L1 and L2."""
    part = part[part["query"].isin(names)]
    t = part.pivot_table(index=list(index), columns="layout", values=["t_mean_s", "t_ci95_s"], dropna=False)
    t = t.rename(columns={"t_mean_s": "mean", "t_ci95_s": "ci"}).swaplevel(axis=1)
    if {"L1-objects", "L2-tar"} <= set(t.columns.get_level_values(0)):
        first = t[("L1-objects", "mean")] <= t[("L2-tar", "mean")]
        for what in ("mean", "ci"):
            t[("best12", what)] = np.where(first, t[("L1-objects", what)], t[("L2-tar", what)])
    return t


def _size_classes(counts: pd.DataFrame) -> dict[str, list]:
    measured = set(once(counts, ["query"])["query"])
    return {size: [q for q in names if q in measured] for size, names in SIZE_GROUPS.items()}


def metrics(table: pd.DataFrame, counts: pd.DataFrame, config) -> tuple:
    """Per layout, for the index: geometric mean over each size class's queries of T(layout) / T(best of
    L1, L2), at the first bandwidth tier, no memory limit (1.00x: as fast as the better of L1 and L2)."""
    table = table[table.server == primary_server(config)]
    base = _base(config) if config["net_profiles"] else table.net_profile.iloc[0]
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED)]
    made = []
    for size, names in _size_classes(counts).items():
        t = _means(part, names)
        if not names or t.empty or "best12" not in t:
            continue
        for layout in [c for c in dict.fromkeys(t.columns.get_level_values(0)) if c != "best12"]:
            value, half = _geo(t, {layout: 1, "best12": -1})
            if np.isfinite(value):
                made.append(Metric(layout, f"T / best of L1, L2, {size} queries, {base} (layouts)", value,
                                   None, 1.0, "x", *_log_ci(value, half)))
    return tuple(made)


_ON_S3 = "the same queries from an EC2 t3.medium against S3 in one region, at the seed's tier"
# Why a finding may not hold here (kept on a claim only when it does not hold).
LINK = Cause(SUBSTITUTE, "the seed's EC2-to-S3 path is emulated here: MinIO on loopback behind tc netem, its rate and "
             "round-trip time scaled by one stated factor, so per-request costs of this machine's client and server "
             "stand in for S3's", _ON_S3)
L3_TIER = Cause(PAPER_SETUP, "which layout wins a size class depends on how many images its queries return; the tier "
                "here is the seed's mini (its queries select about the seed's counts), not the tier its figures plot",
                "the seed's per-query times (its figures give no values) and the same queries at its tier")
MEMORY = Cause(PAPER_SETUP, "the memory tiers here are multiples of each layout's own measured client footprint; the "
               "seed's were its instances' memory, which it does not relate to its clients' footprints",
               "the seed's instance sizes applied as fixed limits, beside the footprint multiples")
ROW_GROUPS = Cause(SUBSTITUTE, "the bytes a query fetches from L3 are set by the row-group size our Parquet writer "
                   "uses; the seed does not state its own", "the seed's row-group size, or L3 at several row-group sizes")
FETCHED = Cause(UNKNOWN, "L1 and L2 read only the objects or byte ranges of the selected images here; what exceeds "
                "the minimum is headers and index reads", "the seed's own D/minimum per query")
COST = Cause(SUBSTITUTE, "the cost is computed from the emulated link's time scaled back and t3.medium's price; the "
             "network share follows from how the emulated link stretches time", _ON_S3)


def claims(table: pd.DataFrame, counts: pd.DataFrame, config, rows: pd.DataFrame | None = None) -> tuple:
    table = table[table.server == primary_server(config)]
    base = _base(config) if config["net_profiles"] else table.net_profile.iloc[0]
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED)]
    classes = _size_classes(counts)
    made = []
    geo = "geometric mean over the {size} queries of mean T({a})/T({b}), " + base

    def timed(reference, statement, size, a, b, rule, cause=LINK):
        t = _means(part, classes[size])
        if not classes[size] or a not in t or b not in t or t.empty:
            made.append(not_comparable(reference, statement, f"T({a})/T({b}), {size} queries",
                                       f"no {size} query with both layouts measured at this scale"))
            return
        value, half = _geo(t, {a: 1, b: -1})
        made.append(judge(reference, statement, geo.format(size=size, a=a, b=b), value, _log_ci(value, half), rule,
                          cause=cause))

    f1 = "Finding 1"
    timed(f1, "Small retrievals: L1 and L2 take about the same time.", "small", "L1-objects", "L2-tar", within(0.8, 1.25))
    timed(f1, "Mid-sized retrievals: L1 (one object per image) is faster than L2 (tar shards).", "mid", "L1-objects",
          "L2-tar", below(1.0))
    timed(f1, "Large retrievals: L2 (tar shards) is faster than L1.", "large", "L1-objects", "L2-tar", above(1.0))
    timed(f1, "L3 (Parquet via DuckDB) is slow for small retrievals.", "small", "L3-parquet", "best12", above(1.0))
    timed(f1, "L3 (Parquet via DuckDB) is slow for mid-sized retrievals.", "mid", "L3-parquet", "best12", above(1.0))
    timed(f1, "L3 is the fastest for very large retrievals.", "large", "L3-parquet", "best12", below(1.0), L3_TIER)
    statement = "L3 cannot run on small-memory clients (where L1 and L2 can)."
    memory = table[~table.memory_tier.isin([UNLIMITED, FOOTPRINT_TIER])]
    if memory.empty or not {"L1-objects", "L2-tar", "L3-parquet"} <= set(memory.layout):
        made.append(not_comparable(f1, statement, "memory tiers where L3 fails and L1, L2 finish",
                                   "memory tiers not measured (or L1-L3 not all measured) at this scale"))
    else:
        done = memory.groupby(["memory_tier", "layout"]).did_not_finish.sum().unstack()
        only_l3 = int(((done["L3-parquet"] > 0) & (done["L1-objects"] == 0) & (done["L2-tar"] == 0)).sum())
        # Whether a query finished under a limit is observed, not estimated: no sampling interval.
        made.append(judge(f1, statement, f"memory tiers ({', '.join(done.index)}; each a multiple of the layout's own "
                          "client footprint) where L3 did not finish every query and L1, L2 did", only_l3, 0.0,
                          above(0.5), unit="tiers", cause=MEMORY))
    f2 = "Finding 2"
    returning = part[part.needed_bytes > 0]
    l12 = returning[returning.layout.isin(["L1-objects", "L2-tar"])]
    statement = "L1 and L2 fetch close to the minimum bytes."
    if l12.empty:
        made.append(not_comparable(f2, statement, "D / minimum, L1 and L2", "L1, L2 not measured"))
    else:
        medians = l12.groupby("layout").over_minimum.median()
        made.append(judge(f2, statement, f"the larger of L1's and L2's median D/minimum over the queries, {base}",
                          float(medians.max()), float(l12.over_minimum_ci.max()), below(1.1), cause=FETCHED))
    statement = "L3 fetches entire row groups: a large overhead (over 2x the minimum) on selective queries."
    l3 = returning[(returning.layout == "L3-parquet") & returning["query"].isin(classes["small"])]
    if l3.empty:
        made.append(not_comparable(f2, statement, "L3 D / minimum, small queries", "L3 or small queries not measured"))
    else:
        made.append(judge(f2, statement, f"L3's smallest D/minimum over the small queries, {base}",
                          float(l3.over_minimum.min()), float(l3.over_minimum_ci.max()), above(2.0), cause=ROW_GROUPS))
    f3 = "Finding 3"
    statement = "L2 is bound by the bandwidth (more than L1, which is bound by per-request latency)."
    profiles = [p for p in profiles_by_rate(config["net_profiles"], config.get("net_rates", {}))
                if p in set(table.net_profile)]
    names = classes["mid"] + classes["large"]
    unlimited = table[table.memory_tier == UNLIMITED]
    if len(profiles) < 2 or not names:
        made.append(not_comparable(f3, statement, "T(slow)/T(fast) of L2 over that of L1",
                                   "fewer than two bandwidth tiers (or no mid/large query) measured at this scale"))
    else:
        slow, fast = profiles[0], profiles[-1]
        t = pd.concat({p: _means(unlimited[unlimited.net_profile == p], names) for p in (slow, fast)}, axis=1)
        flat = pd.DataFrame({(f"{p}|{layout}", what): t[(p, layout, what)] for p, layout, what in t.columns})
        if not all(f"{p}|{x}" in flat for p in (slow, fast) for x in ("L1-objects", "L2-tar")):
            made.append(not_comparable(f3, statement, "bandwidth scaling", "L1 or L2 not measured at both tiers"))
        else:
            value, half = _geo(flat, {f"{slow}|L2-tar": 1, f"{fast}|L2-tar": -1, f"{slow}|L1-objects": -1,
                                      f"{fast}|L1-objects": 1})
            made.append(judge(f3, statement, f"[T({slow})/T({fast}) of L2] / [same of L1], mid and large queries",
                              value, _log_ci(value, half), above(1.0), cause=LINK))
    made += cost_claims(rows, config)
    return tuple(made)


def cost_claims(rows: pd.DataFrame | None, config: dict) -> list:
    """Finding 4 on t3.medium (its price, its bandwidth tier: the first profile), every query once, with
    the 95% CI of each cost from the repeats of every query (storebench.core.stats' bootstrap)."""
    f4 = "Finding 4"
    statements = [("Cost on t3.medium: L1 and L2 cost about the same (the seed: $0.805 and $0.800).",
                   "C(L1) / C(L2)", ("L1-objects", "L2-tar", "total"), within(0.8, 1.25)),
                  ("Cost on t3.medium: L3 costs far more than L1 and L2 (the seed: $9.20, 11x).",
                   "C(L3) / C of the cheaper of L1 and L2", ("L3-parquet", ["L1-objects", "L2-tar"], "total"), above(1.0)),
                  ("The network dominates the cost (the seed: 99% for L1, L2 and L3).",
                   "the smallest share of the network in C over L1, L2 and L3", None, above(0.5))]
    made = []
    for statement, metric, args, rule in statements:
        if rows is None or not config["net_profiles"]:
            made.append(not_comparable(f4, statement, metric, "no timed rows"))
            continue
        if args is None:
            shares = [cost_ratio(rows, config, x, "", what="network share") for x in ("L1-objects", "L2-tar", "L3-parquet")]
            shares = [s for s in shares if np.isfinite(s[0])]
            value, low, high = min(shares, key=lambda s: s[0]) if shares else (float("nan"),) * 3
            unit = "%"
        else:
            value, low, high = cost_ratio(rows, config, *args[:2], what=args[2])
            unit = "x"
        if not np.isfinite(value):
            made.append(not_comparable(f4, statement, metric, "a layout it needs was not measured at the first profile"))
            continue
        made.append(judge(f4, statement, f"{metric}, every query once, t3.medium price, {_base(config)}, "
                          "compute time T / the time scale", value,
                          (low, high) if np.isfinite(low) else None, rule, unit=unit, cause=COST))
    return made
