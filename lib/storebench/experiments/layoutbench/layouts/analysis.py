"""Analyse layouts (LayoutBench, seed 002: Table 1, Findings 1-4) from its recorded tables: T, D and requests
per query and layout, the latency crossover, bytes over the minimum, bottlenecks, memory tiers, cost."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from storebench.experiments.layoutbench.layouts import UNLIMITED, FOOTPRINT_QUERY
from storebench.core.experiment import ResultTables
from storebench.core.stats import mean_ci
from storebench.experiments.layoutbench import published as paper002
from storebench.report.findings import Findings, Metric, sig3, above, below, judge, not_comparable, within

EXPERIMENT = "layouts"


SHORT = {"L1-objects": "L1", "L2-tar": "L2", "L3-parquet": "L3", "L4-lance": "L4"}


def size_class(images: int, copies: int) -> str:
    """The seed's retrieval sizes at any tier: small = at most one class's images, mid = up to 20
    classes' worth, large beyond (at mini: Q1-Q3, Q10, Q11 small; Q4-Q7, Q9 mid; Q8 large)."""
    return "small" if images <= copies else "mid" if images <= 20 * copies else "large"


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
    """Ours (objects, stored bytes, client index bytes) beside the seed's Table 1 at mini."""
    seed = paper002.TABLE1[paper002.TABLE1.tier == "mini"].set_index("layout")
    ours = written.assign(short=written.layout.map(SHORT))
    return ours.assign(seed_mini_files=ours.short.map(seed.files), seed_mini_size=ours.short.map(seed.file_size),
                       seed_mini_index=ours.short.map(seed.index_size))[
        ["server", "layout", "tier", "images", "objects", "stored_bytes", "index_bytes", "write_seconds", "details",
         "seed_mini_files", "seed_mini_size", "seed_mini_index"]]


def costs(table: pd.DataFrame, config: dict, instance: str = "t3.medium", profile: str | None = None) -> pd.DataFrame:
    """Finding #4's form: network and compute cost of running every query once, per layout, on
    ``instance`` (its profile: the slowest bandwidth tier); did-not-finish queries are excluded and counted."""
    profile = profile or config["net_profiles"][0]
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED)]
    price = config["instance_usd_per_hour"][instance]
    out = {}
    for layout, g in part.groupby("layout", sort=False):
        network = g.bytes_down.sum() / 1e9 * config["egress_usd_per_gb"] + g.requests.sum() / 1000 * config["get_usd_per_1000"]
        compute = g.t_median_s.sum() / 3600 * price
        out[layout] = {"C_network": network, "C_compute": compute, "C_total": network + compute,
                       "T_total_s": g.t_median_s.sum(), "D_total_bytes": g.bytes_down.sum(),
                       "requests": g.requests.sum()}
    return pd.DataFrame(out)


def _ratio(table, profile, query_names, a, b) -> float:
    """Geometric mean over ``query_names`` of median T(a) / T(b) under ``profile``, unlimited memory."""
    part = table[(table.net_profile == profile) & (table.memory_tier == UNLIMITED) & table["query"].isin(query_names)]
    t = part.pivot_table(index="query", columns="layout", values="t_median_s")
    if a not in t or b not in t or t.empty:
        return float("nan")
    return float(np.exp(np.log(t[a] / t[b]).mean()))


def crossover(table: pd.DataFrame, counts: pd.DataFrame, copies: int) -> pd.DataFrame:
    """Per profile and retrieval size: T(L1) / T(L2), T(L3) / best of L1 and L2, T(L4) / best of
    L1 and L2 (geometric means over the class's queries); the fastest layout of the class."""
    classes = counts.assign(size=[size_class(n, copies) for n in counts.images])
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
            for layout in ("L3-parquet", "L4-lance"):
                if best12 is not None and layout in t:
                    row[f"{SHORT[layout]}_over_best_L1_L2"] = float(np.exp(np.log(t[layout] / best12).mean()))
            out.append(row)
    return pd.DataFrame(out)


def bandwidth_scaling(table: pd.DataFrame, config: dict, counts: pd.DataFrame, copies: int) -> pd.DataFrame:
    """Per layout: T at the slowest tier / T at the fastest, over mid and large queries (the link
    rates differ 4x: 4.0 = bound by bandwidth, 1.0 = not at all)."""
    profiles = [p for p in config["net_profiles"] if p in set(table.net_profile)]
    if len(profiles) < 2:
        return pd.DataFrame()
    names = [q for q, n in zip(counts["query"], counts.images) if size_class(n, copies) != "small"]
    slow, fast = profiles[0], profiles[-1]
    part = table[(table.memory_tier == UNLIMITED) & table["query"].isin(names)]
    t = part.pivot_table(index=["layout", "query"], columns="net_profile", values="t_median_s")
    ratio = np.exp(np.log(t[slow] / t[fast]).groupby("layout").mean())
    rates = table.groupby("net_profile").net_rate.first() if "net_rate" in table else {}
    rates = {p: rates.get(p, "?") for p in (slow, fast)}
    return pd.DataFrame({"slow_over_fast": ratio, "slow": f"{slow} ({rates[slow]})", "fast": f"{fast} ({rates[fast]})"})


def memory_frontier(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per layout and memory tier: how many queries finished, of how many."""
    part = table[table.memory_tier != UNLIMITED]
    if part.empty:
        return pd.DataFrame()
    order = [f"{g} GiB" for g in config["memory_tiers_gib"]]
    frame = part.assign(finished=part.did_not_finish == 0).groupby(["layout", "memory_tier"]).finished.agg(["sum", "count"])
    frame = frame.assign(text=frame["sum"].astype(int).astype(str) + "/" + frame["count"].astype(str))
    return frame["text"].unstack()[[o for o in order if o in set(part.memory_tier)]]


def smallest_tier_all_finish(table: pd.DataFrame, config: dict) -> dict:
    part = table[table.memory_tier != UNLIMITED]
    result = {}
    for layout, g in part.groupby("layout"):
        fine = [gib for gib in config["memory_tiers_gib"] if (g[g.memory_tier == f"{gib} GiB"].did_not_finish == 0).all()
                and (g.memory_tier == f"{gib} GiB").any()]
        result[layout] = min(fine) if fine else None
    return result


def _fmt(x: float, unit: str = "x") -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{sig3(x)}{unit}"


def server_comparison(table: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Per other server, profile and layout: T(server) / T(first server), geometric mean over the
    queries, and bytes received over the first server's (the layout's bytes should not change)."""
    first = config["servers"][0]
    part = table[table.memory_tier == UNLIMITED]
    base = part[part.server == first].set_index(["net_profile", "layout", "query"]).sort_index()
    out = []
    for (server, profile, layout), g in part[part.server != first].groupby(["server", "net_profile", "layout"]):
        ref = base.loc[(profile, layout)].reindex(g["query"])
        out.append({"server": server, "vs": first, "net_profile": profile, "layout": layout,
                    "t_ratio": float(np.exp(np.log(g.t_median_s.to_numpy() / ref.t_median_s.to_numpy()).mean())),
                    "bytes_ratio": float(g.bytes_down.sum() / ref.bytes_down.sum())})
    return pd.DataFrame(out)


def findings(table: pd.DataFrame, counts: pd.DataFrame, config, copies: int, claims: tuple = (),
             metrics: tuple = ()) -> Findings:
    everything, table = table, table[table.server == config["servers"][0]]

    base = config["net_profiles"][0] if config["net_profiles"] else table.net_profile.iloc[0]
    cross = crossover(table, counts, copies)
    at = cross[cross.net_profile == base].set_index("size")
    lines = [f"Server {config['servers'][0]}; tier {config['tier']} ({copies} cop{'y' if copies == 1 else 'ies'} of each real image); retrieval "
             f"sizes as the seed's (small: at most one class, mid: up to 20 classes, large: beyond). "
             f"Verdicts at {base}{' (t3.medium tier)' if base == 's3-5g' else ''}; every profile is in the "
             "tables above.", "",
             "**Finding 1, latency crossover** (seed: " + paper002.FINDINGS[1] + "):", ""]

    def get(size, column):
        return at.loc[size, column] if size in at.index and column in at.columns else float("nan")

    checks = [
        ("small: L1 ~ L2", "T(L1)/T(L2)", get("small", "L1_over_L2"), lambda v: 0.8 <= v <= 1.25),
        ("mid: L1 wins", "T(L1)/T(L2)", get("mid", "L1_over_L2"), lambda v: v < 1),
        ("large: L2 wins", "T(L1)/T(L2)", get("large", "L1_over_L2"), lambda v: v > 1),
        ("L3 slow for small", "T(L3)/best(L1,L2)", get("small", "L3_over_best_L1_L2"), lambda v: v > 1),
        ("L3 slow for mid", "T(L3)/best(L1,L2)", get("mid", "L3_over_best_L1_L2"), lambda v: v > 1),
    ]
    lines += ["| seed's statement | ours (point estimate; verdicts: the claims below) |", "|---|---|"]
    for text, what, value, _ in checks:
        lines.append(f"| {text} | {what} = {_fmt(value)} |")
    fastest_large = at.loc["large", "fastest"] if "large" in at.index else None
    lines.append(f"| L3 fastest for very large | fastest on large: {fastest_large or 'n/a'} |")
    tiers = smallest_tier_all_finish(table, config)
    if tiers:
        l3, others = tiers.get("L3-parquet"), [tiers.get(x) for x in ("L1-objects", "L2-tar")]
        need = lambda v: "none of the tiers" if v is None else f"{v} GiB"  # noqa: E731
        rank = [float("inf") if v is None else v for v in (l3, *others)]
        lines.append("| L3 fails on small-memory clients | smallest tier where every query finishes: "
                     + ", ".join(f"{SHORT[k]} {need(v)}" for k, v in tiers.items()) + " |")
    l4 = {size: get(size, "L4_over_best_L1_L2") for size in ("small", "mid", "large")}
    lines += ["", "L4 (Lance, past the seed): T(L4)/best(L1,L2) " + ", ".join(f"{k} {_fmt(v)}" for k, v in l4.items())
              + ".", ""]

    # Finding 2: bytes over the minimum
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED) & (table.needed_bytes > 0)]
    over = part.groupby("layout").over_minimum.median()
    small_q = [q for q, n in zip(counts["query"], counts.images) if 0 < n and size_class(n, copies) == "small"]
    l3_selective = part[(part.layout == "L3-parquet") & part["query"].isin(small_q)].over_minimum
    l12 = [over.get(x, float("nan")) for x in ("L1-objects", "L2-tar")]
    lines += ["**Finding 2, bytes transferred** (seed: " + paper002.FINDINGS[2] + "): median D / minimum over the "
              "queries that return images: " + ", ".join(f"{SHORT[k]} {_fmt(v)}" for k, v in over.items()) + ". "
              f"L3 on the selective (small) queries: {_fmt(l3_selective.min())}-{_fmt(l3_selective.max())} the "
              "minimum (whole row groups read for a few images).", ""]

    # Finding 3: bottlenecks
    scaling = bandwidth_scaling(table, config, counts, copies)
    lines.append("**Finding 3, bottlenecks** (seed: " + paper002.FINDINGS[3] + "):")
    if not scaling.empty:
        lines.append(f"T at {scaling.slow.iloc[0]} / T at {scaling.fast.iloc[0]} on mid and large queries "
                     "(4.0 = bound by the link, 1.0 = not at all): "
                     + ", ".join(f"{SHORT[k]} {_fmt(v)}" for k, v in scaling.slow_over_fast.items()) + ".")
    lines.append("L1's requests: " + _latency_share(table, base, config) + "; L3's memory: see the memory tiers above.")
    lines.append("")
    cost = costs(table, config)
    if not cost.empty:
        shares = ", ".join(f"{SHORT[k]} {cost.loc['C_network', k] / cost.loc['C_total', k]:.0%}" for k in cost.columns)
        lines += ["**Finding 4, cost** (every query once, t3.medium's price and tier; seed: " + paper002.FINDINGS[4]
                  + "): " + ", ".join(f"{SHORT[k]} ${sig3(cost.loc['C_total', k])}" for k in cost.columns)
                  + f" (network: {shares} of it). "
                  "Our tier is far smaller than the seed's full ImageNet: compare the ratios between layouts, not the dollars.", ""]
    servers = server_comparison(everything, config)
    if not servers.empty:
        lines += [f"**The server, not the layout**: the same layouts on {', '.join(servers.server.unique())} vs "
                  f"{config['servers'][0]}, T ratio (geometric mean over the queries) "
                  + ", ".join(f"{SHORT[r.layout]} {_fmt(r.t_ratio)} at {r.net_profile}" for r in servers.itertuples())
                  + "; bytes received " + ", ".join(f"{SHORT[r.layout]} {_fmt(r.bytes_ratio)}" for r in servers.itertuples())
                  + " of the first server's. A layout's ranking that holds on both servers is the layout's.", ""]
    headline = (f"LayoutBench ({config['tier']}): small L1/L2 {_fmt(get('small', 'L1_over_L2'))}, large L1/L2 "
                f"{_fmt(get('large', 'L1_over_L2'))}; L3 reads {_fmt(l3_selective.max() if len(l3_selective) else np.nan)} "
                f"the minimum on selective queries; L4 (Lance) {_fmt(l4['mid'])} of the best of L1/L2 on mid queries")
    return Findings(headline, "\n".join(lines), metrics=list(metrics), claims=claims)


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
    profiles = list(dict.fromkeys(unlimited.net_profile))
    queries = [q for q in config["queries"] if q in set(table["query"])]
    fig, axes = plt.subplots(2, max(len(profiles), 2), figsize=(5.2 * max(len(profiles), 2), 8.5), squeeze=False)
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
    memory = table[table.memory_tier != UNLIMITED]
    if not memory.empty:
        order = [f"{g} GiB" for g in config["memory_tiers_gib"]]
        share = memory.assign(done=memory.did_not_finish == 0).pivot_table(index="layout", columns="memory_tier",
                                                                           values="done", aggfunc="mean")
        share = share[[o for o in order if o in share.columns]]
        import seaborn as sns

        text = share.map(lambda v: f"{v:.0%}")
        if limits is not None and len(limits):
            limit = limits.pivot_table(index="layout", columns="memory_tier", values="limit_mib", aggfunc="max")
            text = pd.DataFrame({c: [f"{share.loc[r, c]:.0%}\nlimit {limit.loc[r, c]:.1f} MiB"
                                     if r in limit.index and c in limit.columns and pd.notna(limit.loc[r, c])
                                     else f"{share.loc[r, c]:.0%}" for r in share.index] for c in share.columns},
                                index=share.index)
        sns.heatmap(share, annot=text, fmt="", vmin=0, vmax=1, cmap="cividis", ax=axes[1][1], cbar=True,
                    cbar_kws={"label": "share of queries finished", "format": "{x:.0%}"}, annot_kws={"fontsize": 8})
        allowance = (limits.groupby("memory_tier").allowance_mib.max() if limits is not None and len(limits)
                     else pd.Series(dtype=float))
        axes[1][1].set_xticklabels([f"{c}\n{allowance[c]:.1f} MiB" if c in allowance.index else c
                                    for c in share.columns], rotation=0, fontsize=8)
        axes[1][1].set(title="queries finished under a memory limit (seed's tier, scaled)",
                       xlabel="seed's instance memory / our data allowance, scaled", ylabel="")
    for ax in axes[1][2:]:
        ax.axis("off")
    plots.system_legend(fig, [l for l in config["layouts"] if l in set(table.layout)], bars=True, title="layout")
    plots.question(fig, "Which layout answers each query fastest, reading the fewest bytes, within the least memory?")
    fig.tight_layout()
    plots.footnote(fig, "Ours: real ImageNet JPEGs replicated to the tier, MinIO in a network namespace; time: first "
                        "call to last image verified, cold client, median of the runs, error bars 95% CI of the mean; "
                        "bytes counted at the client (headers included). Memory tiers: the seed's GiB scaled by data "
                        "size (the allowance under each tier), plus each client's measured footprint = the cgroup "
                        "limit printed in each cell.")
    return fig


# ------------------------------------------------------------------ the contract: analyse, figures, claims
def _copies(tables: ResultTables) -> int:
    return int(tables[EXPERIMENT].copies.iloc[0])


def analyse(tables: ResultTables) -> Findings:
    config, table, counts = tables.settings, summary(tables[EXPERIMENT]), tables[f"{EXPERIMENT}_counts"]
    copies = _copies(tables)
    return findings(table, counts, config, copies, claims(table, counts, config, copies),
                    metrics(table, counts, config, copies))


def figures(tables: ResultTables) -> dict:
    config, table, rows = tables.settings, summary(tables[EXPERIMENT]), tables[EXPERIMENT]
    rows = rows[(rows.server == config["servers"][0]) & (rows.memory_tier != UNLIMITED)]
    limits = (rows.groupby(["layout", "memory_tier"], sort=False)
              .agg(limit_mib=("memory_limit_bytes", "max"), allowance_mib=("memory_allowance_bytes", "max"))
              .div(2**20).reset_index()) if {"memory_limit_bytes", "memory_allowance_bytes"} <= set(rows) else None
    return {"layouts": figure(table[table.server == config["servers"][0]], config, limits)}


def _geo(t: pd.DataFrame, terms: dict) -> tuple[float, float]:
    """Geometric mean over the rows (queries) of prod(T[column] ** power), and its 95% CI half-width by
    first-order propagation of each mean's relative CI (NaN when a mean has none)."""
    logs = sum(power * np.log(t[(column, "mean")]) for column, power in terms.items())
    value = float(np.exp(logs.mean()))
    relative = sum((power * t[(column, "ci")] / t[(column, "mean")]) ** 2 for column, power in terms.items())
    half = float(value * math.sqrt(relative.sum()) / len(t)) if len(t) else float("nan")
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


def _size_classes(counts: pd.DataFrame, copies: int) -> dict[str, list]:
    return {size: [q for q, n in zip(counts["query"], counts.images) if size_class(n, copies) == size]
            for size in ("small", "mid", "large")}


def metrics(table: pd.DataFrame, counts: pd.DataFrame, config, copies: int) -> tuple:
    """Per layout, for the index: geometric mean over each size class's queries of T(layout) / T(best of
    L1, L2), at the first bandwidth tier, no memory limit (1.00x: as fast as the better of L1 and L2)."""
    table = table[table.server == config["servers"][0]]
    base = config["net_profiles"][0] if config["net_profiles"] else table.net_profile.iloc[0]
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED)]
    made = []
    for size, names in _size_classes(counts, copies).items():
        t = _means(part, names)
        if not names or t.empty or "best12" not in t:
            continue
        for layout in [c for c in dict.fromkeys(t.columns.get_level_values(0)) if c != "best12"]:
            value, half = _geo(t, {layout: 1, "best12": -1})
            if np.isfinite(value):
                made.append(Metric(layout, f"T / best of L1, L2, {size} queries, {base} (layouts)", value,
                                   None, 1.0, "x", *_log_ci(value, half)))
    return tuple(made)


def claims(table: pd.DataFrame, counts: pd.DataFrame, config, copies: int) -> tuple:
    table = table[table.server == config["servers"][0]]
    base = config["net_profiles"][0] if config["net_profiles"] else table.net_profile.iloc[0]
    part = table[(table.net_profile == base) & (table.memory_tier == UNLIMITED)]
    classes = _size_classes(counts, copies)
    made = []
    geo = "geometric mean over the {size} queries of mean T({a})/T({b}), " + base

    def timed(reference, statement, size, a, b, rule):
        t = _means(part, classes[size])
        if not classes[size] or a not in t or b not in t or t.empty:
            made.append(not_comparable(reference, statement, f"T({a})/T({b}), {size} queries",
                                       f"no {size} query with both layouts measured at this scale"))
            return
        value, half = _geo(t, {a: 1, b: -1})
        made.append(judge(reference, statement, geo.format(size=size, a=a, b=b), value, _log_ci(value, half), rule))

    f1 = "Finding 1"
    timed(f1, "Small retrievals: L1 and L2 take about the same time.", "small", "L1-objects", "L2-tar", within(0.8, 1.25))
    timed(f1, "Mid-sized retrievals: L1 (one object per image) is faster than L2 (tar shards).", "mid", "L1-objects",
          "L2-tar", below(1.0))
    timed(f1, "Large retrievals: L2 (tar shards) is faster than L1.", "large", "L1-objects", "L2-tar", above(1.0))
    timed(f1, "L3 (Parquet via DuckDB) is slow for small retrievals.", "small", "L3-parquet", "best12", above(1.0))
    timed(f1, "L3 (Parquet via DuckDB) is slow for mid-sized retrievals.", "mid", "L3-parquet", "best12", above(1.0))
    timed(f1, "L3 is the fastest for very large retrievals.", "large", "L3-parquet", "best12", below(1.0))
    statement = "L3 cannot run on small-memory clients (where L1 and L2 can)."
    memory = table[table.memory_tier != UNLIMITED]
    if memory.empty or not {"L1-objects", "L2-tar", "L3-parquet"} <= set(memory.layout):
        made.append(not_comparable(f1, statement, "memory tiers where L3 fails and L1, L2 finish",
                                   "memory tiers not measured (or L1-L3 not all measured) at this scale"))
    else:
        done = memory.groupby(["memory_tier", "layout"]).did_not_finish.sum().unstack()
        only_l3 = int(((done["L3-parquet"] > 0) & (done["L1-objects"] == 0) & (done["L2-tar"] == 0)).sum())
        # Whether a query finished under a limit is observed, not estimated: no sampling interval.
        made.append(judge(f1, statement, f"memory tiers ({', '.join(done.index)}) where L3 did not finish every query "
                          "and L1, L2 did", only_l3, 0.0, above(0.5), unit="tiers"))
    f2 = "Finding 2"
    returning = part[part.needed_bytes > 0]
    l12 = returning[returning.layout.isin(["L1-objects", "L2-tar"])]
    statement = "L1 and L2 fetch close to the minimum bytes."
    if l12.empty:
        made.append(not_comparable(f2, statement, "D / minimum, L1 and L2", "L1, L2 not measured"))
    else:
        medians = l12.groupby("layout").over_minimum.median()
        made.append(judge(f2, statement, f"the larger of L1's and L2's median D/minimum over the queries, {base}",
                          float(medians.max()), float(l12.over_minimum_ci.max()), below(1.1)))
    statement = "L3 fetches entire row groups: a large overhead (over 2x the minimum) on selective queries."
    l3 = returning[(returning.layout == "L3-parquet") & returning["query"].isin(classes["small"])]
    if l3.empty:
        made.append(not_comparable(f2, statement, "L3 D / minimum, small queries", "L3 or small queries not measured"))
    else:
        made.append(judge(f2, statement, f"L3's smallest D/minimum over the small queries, {base}",
                          float(l3.over_minimum.min()), float(l3.over_minimum_ci.max()), above(2.0)))
    f3 = "Finding 3"
    statement = "L2 is bound by the bandwidth (more than L1, which is bound by per-request latency)."
    profiles = [p for p in config["net_profiles"] if p in set(table.net_profile)]
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
                              value, _log_ci(value, half), above(1.0)))
    made.append(not_comparable("Finding 4", "Cost on t3.medium: L1 $0.805, L2 $0.800, L3 $9.202 (network dominates).",
                               "cost of every query once, t3.medium",
                               f"our tier ({config['tier']}) is far smaller than the seed's full ImageNet: the report "
                               "gives our costs to compare between layouts, not in dollars"))
    return tuple(made)
