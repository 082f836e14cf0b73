"""Input scalability (seed 001 Sec 5.9, Fig 12): text x1..x10 and graph x1..x50, made by
concatenating each dataset with itself (``Samples.scaled``), written into each store (timed) and
read whole by that store's best loader configuration, with the stores' caches as a parameter.

Loader configurations come from the dataloaders experiment's ``reports/dataloaders_best.csv`` (a
DVC dependency), else from the seed's Table 1 with W capped to this machine's ``max_workers``; the
rows say which (``config_source``). Caches: RocksDB's block cache (``block_cache_mib``; the seed's
text says 50 MB for its version) and TileDB's VFS read-ahead cache (``tiledb_read_ahead_mib``;
TileDB 2.30 has no tile cache any more, this is its one cache and 10 MiB is its default, the
seed's "10 MB"). The seed did not vary them; we do. ``None`` means the library's default.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd

from storebench.experiments.ml_storage_study import published as paper001
from storebench.data import samples as sample_data
from storebench.core.config import choices, params_hash
from storebench.loaders import rows as rowloaders
from storebench.loaders.opener import StoreOpener, start_method
from storebench.testbed.locations import store_root
from storebench.core.progress import tqdm
from storebench.core.results import machine
from storebench.data.rowformats import KeyLayout, row_format
from storebench.data.samples import WORKLOADS, row_fingerprints
from storebench.stores.base import package_version
from storebench.stores.systems import ServicePool, open_system
from storebench.stores.tables import TABLES
from storebench.core.stats import mean_ci
from storebench.experiments.common import Run, Skipped
from storebench.experiments.ml_storage_study.dataloaders import LOADER_SYSTEMS, LOCATION, PARALLEL_WRITERS, Point, loader_dataset, point_of, write_objects

EXPERIMENT = "scalability"
SEED = "001"
MIB = 1 << 20
PAPER = {"text_base_mb": 228, "graph_base_mb": 21, "largest_gb": 1.0,
         "graph_read": "TileDB and TensorStore scale really well (similar time at every size, even over 1 GB); "
                       "ext4 and RocksDB read time grows steadily, RocksDB worse than ext4",
         "write": "write time grows with input size for every store, TileDB the slowest"}


def _factors(value):
    bad = {k: v for k, v in value.items() if k not in WORKLOADS or not isinstance(v, list) or not v
           or any(not isinstance(f, int) or isinstance(f, bool) or f < 1 for f in v)}
    return f"must map workloads to lists of integer factors >= 1; bad: {bad}" if bad else None


def _rows(value):
    bad = {k: v for k, v in value.items() if k not in WORKLOADS or not isinstance(v, int) or v < 1}
    return f"must map workloads to row counts >= 1; bad: {bad}" if bad else None


def _cache_list(value):
    ok = isinstance(value, list) and value and all(v is None or (isinstance(v, (int, float)) and v >= 0) for v in value)
    return None if ok else "must be a non-empty list of MiB values >= 0 (null: the library's default)"


SCHEMA = {
    "workloads": (list[str], choices(WORKLOADS)),
    "base_rows": (dict, _rows),
    "factors": (dict, _factors),
    "systems": (list[str], choices(LOADER_SYSTEMS)),
    "best_configs": (str, None),
    "max_workers": (int, None),
    "block_cache_mib": (list, _cache_list),
    "tiledb_read_ahead_mib": (list, _cache_list),
    "writers": (int, None),
    "chunk_rows": (int, None),
}


def best_configs_path(results_root=None) -> Path:
    """The dataloaders measurement's best configurations under ``results_root`` (default: results/)."""
    from storebench.paths import ROOT

    return Path(results_root or ROOT / "results") / "dataloaders" / "dataloaders_best.csv"


def loader_configs(config, results_root=None) -> tuple[dict, str]:
    """(workload, system) -> Point, and where they came from."""
    path = best_configs_path(results_root)
    configs, source = {}, "seed 001 Table 1 (W capped)"
    if path.exists():
        best = pd.read_csv(path)
        configs = {(r["workload"], r["system"]): point_of(r) for r in best.to_dict("records")}
        source = f"{path.parent.name}/{path.name} (the dataloaders measurement)"
    cap = config.get("max_workers", 2)
    for (workload, system), c in paper001.TABLE1.items():
        for name in (system, "tiledb-attrs" if system == "tiledb" else system):
            configs.setdefault((workload, name), Point(c["loader"], c.get("rows_per_key", 1), c["batch_size"],
                                                       c.get("prefetch"), min(c["workers"], cap)))
    return configs, source


def cache_settings(config: dict, system: str) -> list[dict]:
    """The store options to sweep for ``system`` (one {} for stores without a cache knob here)."""
    def option(mib):
        return None if mib is None else int(mib * MIB)
    if system == "rocksdb":
        return [{"block_cache_bytes": option(m)} for m in config.get("block_cache_mib", [None])]
    if system in ("tiledb", "tiledb-attrs"):
        return [{"read_ahead_cache_bytes": option(m)} for m in config.get("tiledb_read_ahead_mib", [None])]
    return [{}]


def run(config: dict, out_dir=None, progress: bool = True, services: ServicePool | None = None) -> Run:
    from storebench.experiments.ml_storage_study.dataloaders import EpochRows

    result = Run(EpochRows())
    result.writer.experiment = EXPERIMENT
    configs, source = loader_configs(config, out_dir)
    result.notes.append(f"loader configurations from {source}")
    pool = services or ServicePool(config["endpoints"])
    plan = [(w, f, s, c) for w in config["workloads"] for f in config["factors"][w] for s in config["systems"]
            for c in cache_settings(config, s)]
    plan.sort(key=lambda p: (start_method(p[2]) is not None, p[0], p[1]))  # forking systems first
    base = {w: sample_data.load(w, config["base_rows"][w]) for w in config["workloads"]}
    try:
        for workload, factor, system, cache in tqdm(plan, desc=EXPERIMENT, unit="config", disable=not progress):
            point = configs.get((workload, system))
            if point is None:
                result.skipped.append(Skipped(system, LOCATION, f"{workload} x{factor}", "no loader configuration"))
                continue
            if system in TABLES and base[workload].modality not in TABLES[system].modalities:
                result.skipped.append(Skipped(system, LOCATION, f"{workload}", f"{system} holds no {workload} rows"))
                continue
            samples = base[workload].scaled(factor)
            result.writer.rows += _measure(config, workload, factor, samples, system, point, cache, pool, source)
    finally:
        if services is None:
            pool.close()
    return result


def _measure(config, workload, factor, samples, system, point: Point, cache: dict, pool, source) -> list[dict]:
    fingerprints = row_fingerprints(samples.columns)
    point = Point(point.loader, min(point.rows_per_key, len(samples)), point.batch_size, point.prefetch,
                  point.workers)
    rows = []
    writes, data_source, cleanup, version, client = _write(config, workload, samples, system, point, cache, pool)
    try:
        dataset, batches = loader_dataset(data_source, samples.modality, fingerprints, point)
        rowloaders.run_epoch(rowloaders.row_loader(dataset, 0, batches=batches))  # warm-up, verifies every row
        for repeat in range(config["repeats"]):
            dataset, batches = loader_dataset(data_source, samples.modality, fingerprints, point)
            epoch = rowloaders.run_epoch(rowloaders.row_loader(dataset, point.workers, start_method(system), batches))
            workload_fields = dict(experiment=EXPERIMENT, workload=workload, dataset=samples.name, factor=factor,
                                   n_rows=len(samples), system=system, loader=point.loader,
                                   rows_per_key=point.rows_per_key, batch_size=point.batch_size,
                                   prefetch=point.prefetch, workers=point.workers)
            rows.append({**workload_fields, "repeat": repeat, "dataset_bytes": samples.nbytes,
                         "write_seconds": writes[repeat % len(writes)], "read_seconds": epoch.seconds,
                         "rows_per_second": epoch.rows / epoch.seconds, "cpu_seconds": epoch.cpu_seconds,
                         "config_source": source, "block_cache_bytes": cache.get("block_cache_bytes"),
                         "tiledb_read_ahead_cache_bytes": cache.get("read_ahead_cache_bytes"),
                         "cache_setting": _cache_text(system, cache), "verified": True, "system_version": version,
                         "client_version": client, **machine(), "params_hash": params_hash({**workload_fields, **cache}),
                         "scale": config["scale"], "load_avg_1m": os.getloadavg()[0]})
    finally:
        data_source.close()
        cleanup()
    return rows


def _cache_text(system: str, cache: dict) -> str:
    if not cache:
        return "no cache knob (page cache only)"
    (key, value), = cache.items()
    what = "RocksDB block cache" if key == "block_cache_bytes" else "TileDB VFS read-ahead cache"
    return f"{what} {'default' if value is None else f'{value / MIB:g} MiB'}"


def _write(config, workload, samples, system, point: Point, cache: dict, pool):
    """Timed conversions (``repeats`` of them), a source over the last one, and what removes it."""
    seconds = []
    if system in TABLES:
        cls = TABLES[system]
        root = store_root(f"{system}-{workload}-scaled", LOCATION)
        options = {"chunk_rows": config.get("chunk_rows", 64), **cache}
        table = cls(root, **options)
        for _ in range(config["repeats"]):
            start = time.perf_counter()
            table.write(samples)
            seconds.append(time.perf_counter() - start)
        table.close()
        source = rowloaders.TableRows(rowloaders.TableOpener(cls, str(root), options), len(samples))
        return seconds, source, table.clear, table.system_version(), \
            f"{cls.client_package} {package_version(cls.client_package)}"
    context = open_system(system, LOCATION, pool, **cache)
    store = context.__enter__()
    writers = config.get("writers", 2) if system in PARALLEL_WRITERS else 1
    layout = KeyLayout(len(samples), point.rows_per_key)
    for _ in range(config["repeats"]):
        store.clear()
        start = time.perf_counter()
        write_objects(store, samples, layout, writers)
        seconds.append(time.perf_counter() - start)
    source = rowloaders.StoreRows(StoreOpener.of(store, **cache), layout, row_format(samples))

    def cleanup():
        store.clear()
        context.__exit__(None, None, None)
    return seconds, source, cleanup, store.system_version(), \
        f"{store.client_package} {package_version(store.client_package)}"


# ------------------------------------------------------------------------------- analysis
KEYS = ["workload", "system", "cache_setting", "factor"]


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    out = []
    for key, group in rows.groupby(KEYS, sort=False):
        read, read_ci, n = mean_ci(group.read_seconds)
        write, write_ci, _ = mean_ci(group.write_seconds)
        out.append({**dict(zip(KEYS, key)), "n_rows": group.n_rows.iloc[0], "dataset_mb": group.dataset_bytes.iloc[0] / 1e6,
                    "read_mean": read, "read_ci95": read_ci, "write_mean": write, "write_ci95": write_ci,
                    "repeats": n, "config": paper001.config_text(group.iloc[0].to_dict())})
    return pd.DataFrame(out)


def growth(summary: pd.DataFrame) -> pd.DataFrame:
    """Per workload, store and cache: time at the largest input / at the smallest, beside the size ratio
    (1 = flat, as the seed says of TileDB/TensorStore on graphs; = size ratio: linear)."""
    out = []
    for key, group in summary.groupby(["workload", "system", "cache_setting"], sort=False):
        lo, hi = group.loc[group.factor.idxmin()], group.loc[group.factor.idxmax()]
        if hi.factor == lo.factor:
            continue
        out.append({**dict(zip(["workload", "system", "cache_setting"], key)),
                    "factors": f"x{lo.factor} -> x{hi.factor}", "size_ratio": hi.factor / lo.factor,
                    "read_growth": hi.read_mean / lo.read_mean, "write_growth": hi.write_mean / lo.write_mean,
                    "largest_read_s": hi.read_mean, "largest_write_s": hi.write_mean})
    return pd.DataFrame(out)


def figure(summary: pd.DataFrame):
    """Fig 12: read (left) and write (right) time vs input size, one row per workload."""
    import matplotlib.pyplot as plt

    from storebench.report import plots

    workloads = list(dict.fromkeys(summary.workload))
    fig, axes = plt.subplots(len(workloads), 2, figsize=(12, 4.5 * len(workloads)), squeeze=False)
    colors = plots.palette(sorted(set(summary.system)))
    for row, workload in enumerate(workloads):
        part = summary[summary.workload == workload]
        for col, (what, label) in enumerate((("read", "loader time, whole dataset (s)"),
                                             ("write", "conversion into the store (s)"))):
            ax = axes[row][col]
            for (system, cache), g in part.groupby(["system", "cache_setting"], sort=False):
                g = g.sort_values("factor")
                style = "--" if "default" not in cache and "no cache" not in cache else "-"
                ax.errorbar(g.factor, g[f"{what}_mean"], yerr=g[f"{what}_ci95"].fillna(0), marker="o", capsize=3,
                            linestyle=style, color=colors[system],
                            label=system + ("" if "no cache" in cache else f", {cache.split(' cache ')[-1]}"))
            ax.set(xscale="log", yscale="log", title=f"{workload}: {what} time vs input size (Fig 12)",
                   xlabel="input size (x the base dataset)", ylabel=label)
            ax.legend(fontsize=7)
    plots.footnote(fig, f"Ours: mean of the repeats, error bars 95% CI, every row verified; dashed: a non-default "
                        f"cache size. The seed publishes no values ({paper001.MACHINE}).")
    fig.tight_layout()
    return fig


def findings(summary: pd.DataFrame):
    from storebench.report.findings import Findings, Metric

    g = growth(summary)
    default = g[g.cache_setting.str.contains("default|no cache")]
    lines = ["| workload | store | cache | sizes | size ratio | read time ratio | write time ratio |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.workload} | {r.system} | {r.cache_setting} | {r.factors} | {r.size_ratio:g} | {r.read_growth:.2f} | "
              f"{r.write_growth:.2f} |" for r in g.itertuples()]
    checks = []
    graph = default[default.workload == "graph"]
    if len(graph):
        flat = graph[graph.system.isin(["tiledb-attrs", "tiledb", "tensorstore", "tensorstore-zarr"])]
        steady = graph[graph.system.isin(["localfs", "rocksdb"])]
        if len(flat) and len(steady):
            holds = flat.read_growth.max() < steady.read_growth.min()
            checks.append(f"| graph: TileDB/TensorStore read time flat, ext4/RocksDB grow | TileDB/TS x"
                          f"{flat.read_growth.min():.1f}-{flat.read_growth.max():.1f}, ext4/RocksDB x"
                          f"{steady.read_growth.min():.1f}-{steady.read_growth.max():.1f} for x{graph.size_ratio.max():g} "
                          f"the data | {'holds' if holds else 'does not hold'} |")
    if len(default):
        grows = (default.write_growth > 1).all()
        slowest = default.loc[default.largest_write_s.idxmax()]
        checks.append(f"| write time grows with size for every store | {'all' if grows else 'not all'} grow "
                      f"(x{default.write_growth.min():.1f}-{default.write_growth.max():.1f}) | "
                      f"{'holds' if grows else 'does not hold'} |")
        checks.append(f"| TileDB writes slowest at the largest size | slowest: {slowest.system} "
                      f"({slowest.largest_write_s:.3g} s, {slowest.workload}) | "
                      f"{'holds' if slowest.system.startswith('tiledb') else 'does not hold'} |")
    caches = _cache_effect(summary)
    text = "\n".join([
        f"**Paper (seed 001, Sec 5.9, Fig 12):** text {PAPER['text_base_mb']} MB up to x10, graph "
        f"{PAPER['graph_base_mb']} MB up to x50 (~1 GB). {PAPER['graph_read']}; {PAPER['write']}. Caches not varied "
        "(RocksDB 50 MB, TileDB 10 MB).", "",
        "**Ours** (base sizes and factors of this scale preset; the stores' caches varied):", "", *lines, "",
        "| seed statement | ours | verdict |", "|---|---|---|", *checks, "", *caches])
    metrics = tuple(Metric(r.system, f"read time x{r.size_ratio:g} input / x1, {r.workload} (scalability)",
                           float(r.read_growth), None, 1.0, "x") for r in default.itertuples())
    headline = ("scalability: read time at the largest input / the smallest: " + ", ".join(
        f"{r.system} {r.workload} x{r.read_growth:.1f}" for r in default.itertuples())
        + " (paper: TileDB/TensorStore flat on graphs, ext4/RocksDB growing)")
    return Findings(headline, text, metrics)


def _cache_effect(summary: pd.DataFrame) -> list[str]:
    varied = summary.groupby(["workload", "system", "factor"]).cache_setting.nunique()
    if not (varied > 1).any():
        return ["Cache sizes: one setting per store at this scale."]
    lines = ["**Cache size** (read time at the largest input, per setting):", "", "| workload | store | setting | read (s) |",
             "|---|---|---|---|"]
    top = summary.loc[summary.groupby(["workload", "system", "cache_setting"]).factor.idxmax()]
    for r in top.itertuples():
        if varied.get((r.workload, r.system, r.factor), 1) > 1:
            lines.append(f"| {r.workload} | {r.system} | {r.cache_setting} | {r.read_mean:.3g} ± {r.read_ci95:.2g} |")
    return lines
