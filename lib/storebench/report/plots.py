"""One house style for every figure, and the seed papers' numbers as a labelled reference layer.

Every system (and every layout of the layouts experiment) has ONE colour, marker and hatch, the same in
every figure of every report (``SYSTEM_STYLES``). The colours are the colour-blind-safe Okabe-Ito set and
Paul Tol's muted set: a store's variants (``tiledb-array``, ``cassandra-async``, ...) take a neighbouring
hue of the same family and their own marker, so each system is told apart by colour *and* marker.

Helpers a figure uses so that it reads:

* ``question(fig, text)``: the figure's title is the question it answers;
* ``system_legend(fig, systems)``: one legend for the whole figure, outside the axes;
* ``ticks_at(ax, values)``: ticks at the measured values only (``1, 16, 256``; ``0, 2`` workers);
* ``errorbars(values, ci, log=True)``: asymmetric bars that stop at ``LOG_FLOOR`` x the value on a log
  axis instead of running to the axis floor (the footnote then says so);
* ``reference_lines`` / ``REFERENCE_STYLE``: the paper's numbers, grey dashed, always labelled "paper: ...";
* ``save``: at least ``DPI`` (150) dots per inch.
"""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # reports are rendered headless; notebooks display the returned figure
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

DPI = 150
REFERENCE_STYLE = dict(color="0.45", linestyle="--", marker="x", linewidth=1.2)
REFERENCE_MARKERS = ("x", "+", "1", "2", "3", "4")
LOG_FLOOR = 0.1  # on a log axis a lower error bar stops at this fraction of the value (CI reaching 0 or below)
LOG_FLOOR_NOTE = (f"Where a 95% CI reaches zero, its lower bar is cut at {LOG_FLOOR:g}x the value (log axis) "
                  "and ends in an open triangle.")

# Okabe & Ito (2008) and Paul Tol's muted scheme: readable with every common colour-vision deficiency.
OKABE_ITO = {"black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermilion": "#D55E00", "purple": "#CC79A7"}
TOL_MUTED = {"indigo": "#332288", "cyan": "#88CCEE", "teal": "#44AA99", "green": "#117733", "olive": "#999933",
             "sand": "#DDCC77", "rose": "#CC6677", "wine": "#882255", "purple": "#AA4499", "brown": "#661100"}

# system -> (colour, marker, hatch). Families: a store and its variants in neighbouring hues.
_REGISTRY = {
    "localfs": (OKABE_ITO["black"], "o", ""),
    "rocksdb": (OKABE_ITO["orange"], "s", "//"),
    "tiledb": (OKABE_ITO["green"], "^", ""),
    "tiledb-array": (TOL_MUTED["green"], "v", ".."),
    "tiledb-attrs": (TOL_MUTED["teal"], "<", "xx"),
    "tensorstore": (OKABE_ITO["vermilion"], "D", ""),
    "tensorstore-zarr": (TOL_MUTED["rose"], "d", ".."),
    "redis": (TOL_MUTED["wine"], "P", "\\\\"),
    "mongodb-api": (TOL_MUTED["olive"], "X", ""),
    "mongodb-api-concurrent": (TOL_MUTED["sand"], "p", ".."),
    "cassandra": (OKABE_ITO["blue"], "h", ""),
    "cassandra-async": (OKABE_ITO["sky"], "H", ".."),
    "minio": (TOL_MUTED["purple"], "*", ""),
    "minio-obstore": (OKABE_ITO["purple"], "8", ".."),
    "rgw": (TOL_MUTED["indigo"], ">", ""),
    "rgw-obstore": (TOL_MUTED["cyan"], "<", ".."),
    "ceph": (TOL_MUTED["brown"], "o", "xx"),
    # layoutbench's four layouts of one image set on S3 (never drawn with the stores above)
    "L1-objects": (OKABE_ITO["blue"], "o", ""),
    "L2-tar": (OKABE_ITO["orange"], "v", "//"),
    "L3-parquet": (OKABE_ITO["green"], "p", ".."),
    "L3-parquet-sorted": (TOL_MUTED["teal"], "P", "--"),
    "L4-lance": (OKABE_ITO["vermilion"], "X", "xx"),
}
SYSTEM_STYLES = {name: {"color": matplotlib.colors.to_rgb(c), "marker": m, "hatch": h}
                 for name, (c, m, h) in _REGISTRY.items()}
FAMILIES = {  # which variants belong together (for readers of the registry; the styles are above)
    "localfs": ("localfs",), "rocksdb": ("rocksdb",), "tiledb": ("tiledb", "tiledb-array", "tiledb-attrs"),
    "tensorstore": ("tensorstore", "tensorstore-zarr"), "redis": ("redis",),
    "mongodb-api": ("mongodb-api", "mongodb-api-concurrent"), "cassandra": ("cassandra", "cassandra-async"),
    "minio": ("minio", "minio-obstore"), "rgw": ("rgw", "rgw-obstore"), "ceph": ("ceph",),
    "layouts": ("L1-objects", "L2-tar", "L3-parquet", "L3-parquet-sorted", "L4-lance"),
}
UNKNOWN_SYSTEM = {"color": (0.5, 0.5, 0.5), "marker": "D", "hatch": "xx"}  # a system added without a style
# series that are not systems (workloads, locations, encodings): Okabe-Ito without black, in order
SERIES_COLOURS = [OKABE_ITO[k] for k in ("blue", "orange", "green", "vermilion", "purple", "sky", "yellow")] + \
    [TOL_MUTED[k] for k in ("indigo", "olive", "wine", "teal")]


def system_style(system: str) -> dict:
    """``{"color", "marker", "hatch"}`` of ``system``: the same in every figure."""
    return SYSTEM_STYLES.get(system, UNKNOWN_SYSTEM)


def style() -> None:
    sns.set_theme(context="notebook", style="whitegrid", palette=SERIES_COLOURS[:7])
    plt.rcParams.update({"figure.dpi": DPI, "savefig.dpi": DPI, "legend.framealpha": 0.9,
                         "axes.titlesize": "medium"})


def palette(series) -> dict:
    """Colour per series: a system's from the registry; other series (workloads, encodings, ...) take
    the colour-blind-safe series colours in order."""
    series = list(series)
    if all(s in SYSTEM_STYLES for s in series):
        return {s: SYSTEM_STYLES[s]["color"] for s in series}
    return {s: matplotlib.colors.to_rgb(SERIES_COLOURS[i % len(SERIES_COLOURS)]) for i, s in enumerate(series)}


def marker(system) -> str:
    return system_style(system)["marker"] if system in SYSTEM_STYLES else "o"


def hatch(system) -> str:
    return system_style(system)["hatch"] if system in SYSTEM_STYLES else ""


# --- reading aids --------------------------------------------------------------------------------------

def question(fig, text: str) -> None:
    """Title the figure with the question it answers (above every panel)."""
    fig.suptitle(text, fontsize="x-large", fontweight="bold", y=1.0, va="bottom")


def system_legend(fig, systems, *, extra: list | None = None, title: str | None = None, bars: bool = False,
                  where: str = "right", ncol: int | None = None):
    """One legend for the whole figure, outside the axes: a system's colour and marker (or hatch for
    bars) from the registry; ``extra`` adds (handle, label) pairs (e.g. the paper's reference marks)."""
    handles, labels = [], []
    order = list(SYSTEM_STYLES)  # registry order: the same system order in every report
    for s in sorted(dict.fromkeys(systems), key=lambda s: order.index(s) if s in order else len(order)):
        st = system_style(s)
        if bars:
            handles.append(Patch(facecolor=st["color"], hatch=st["hatch"], edgecolor="white"))
        else:
            handles.append(Line2D([], [], color=st["color"], marker=st["marker"], linewidth=1.5))
        labels.append(str(s))
    for handle, label in extra or []:
        handles.append(handle)
        labels.append(label)
    return legend_outside(fig, handles, labels, title=title, where=where, ncol=ncol)


def legend_outside(fig, handles, labels, *, title: str | None = None, where: str = "right", ncol: int | None = None):
    """A figure-level legend beside (``right``) or under (``below``) the axes, never over the data."""
    if where == "right":
        return fig.legend(handles, labels, title=title, loc="center left", bbox_to_anchor=(1.0, 0.5),
                          fontsize="small", ncol=ncol or 1, frameon=False)
    return fig.legend(handles, labels, title=title, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                      fontsize="small", ncol=ncol or min(len(labels), 6), frameon=False)


def reference_handle(label: str, marker_: str = "x"):
    """A legend entry for the paper's numbers drawn with ``REFERENCE_STYLE``."""
    return Line2D([], [], **{**REFERENCE_STYLE, "marker": marker_}), label


def ticks_at(ax, values, axis: str = "x", log: bool | None = None, fmt=None) -> None:
    """Ticks at the measured ``values`` only, labelled as plain numbers (integers when they are).
    ``log`` (default: the values span 8x or more and are positive) sets a log axis, base 2 when all
    values are powers of two."""
    values = sorted({float(v) for v in values if pd.notna(v)})
    if not values:
        return
    if log is None:
        log = values[0] > 0 and values[-1] / values[0] >= 8
    if log:
        base = 2 if all(v > 0 and float(np.log2(v)).is_integer() for v in values) else 10
        (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    fmt = fmt or (lambda v: f"{int(v):,}" if float(v).is_integer() else f"{v:g}")
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(values))
    target.set_minor_locator(NullLocator())
    target.set_major_formatter(matplotlib.ticker.FixedFormatter([fmt(v) for v in values]))
    if not log and len(values) > 1:  # a little room either side of the outer measured values
        pad = 0.06 * (values[-1] - values[0])
        (ax.set_xlim if axis == "x" else ax.set_ylim)(values[0] - pad, values[-1] + pad)


def log2_x(ax, ticks) -> None:
    """Base-2 log x axis ticked at the measured values."""
    ticks_at(ax, ticks, "x", log=True)


def errorbars(values, ci, log: bool = True) -> np.ndarray:
    """``yerr`` of shape (2, n) for ``values`` +- ``ci``; on a log axis the lower bar stops at
    ``LOG_FLOOR`` x the value (the figure's footnote then says so, see ``footnote``)."""
    values = np.asarray(values, dtype=float)
    ci = np.nan_to_num(np.asarray(ci, dtype=float), nan=0.0)
    lower = ci.copy()
    if log:
        cut = values - ci < LOG_FLOOR * values
        lower = np.where(cut, (1 - LOG_FLOOR) * values, ci)
    return np.vstack([np.clip(lower, 0, None), ci])


def _cut_marks(ax, xs, values, ci, color) -> None:
    """Open downward triangles where a lower bar was cut at the log floor."""
    values, ci = np.asarray(values, dtype=float), np.nan_to_num(np.asarray(ci, dtype=float), nan=0.0)
    cut = values - ci < LOG_FLOOR * values
    if cut.any():
        ax.figure._storebench_cut = True
        ax.scatter(np.asarray(xs, dtype=float)[cut], (LOG_FLOOR * values)[cut], marker="v", s=18,
                   facecolors="none", edgecolors=[color], linewidths=0.9, zorder=3)


def _is_log(ax, axis: str = "y") -> bool:
    return (ax.get_yscale() if axis == "y" else ax.get_xscale()) == "log"


def lines_with_ci(ax, summary: pd.DataFrame, x: str, hue: str, y: str = "mean", err: str = "ci95",
                  colors: dict | None = None, label_fmt: str = "{}", log: bool = True, **kw) -> None:
    """One line per ``hue`` value with 95% CI error bars (CI from the repeats; on a log y axis, the
    default, lower bars are cut at ``LOG_FLOOR`` x the value). The log scale is set after drawing: set
    before, matplotlib 3.10 takes a wrong data range from error bars (down to the x values)."""
    for key, group in summary.groupby(hue, sort=False):
        group = group.sort_values(x)
        colour = (colors or {}).get(key, system_style(key)["color"] if key in SYSTEM_STYLES else None)
        drawn = ax.errorbar(group[x], group[y], yerr=errorbars(group[y], group[err].fillna(0), log),
                            marker=marker(key), capsize=3, label=label_fmt.format(key), color=colour, **kw)
        if log:
            _cut_marks(ax, group[x], group[y], group[err].fillna(0), drawn.lines[0].get_color())
    if log:
        ax.set_yscale("log")


def grouped_bars(ax, frame: pd.DataFrame, x: str, hue: str, y: str = "mean", err: str = "ci95",
                 hue_order=None, log: bool = False, legend: bool = True, colors: dict | None = None) -> None:
    """Bars of ``y`` per ``x`` group, one colour (and hatch, for systems) per ``hue``, with 95% CI bars."""
    groups = list(dict.fromkeys(frame[x]))
    hues = [h for h in (hue_order or dict.fromkeys(frame[hue])) if h in set(frame[hue])]
    width = 0.8 / max(len(hues), 1)
    colours = {**palette(hues), **(colors or {})}
    for i, h in enumerate(hues):
        part = frame[frame[hue] == h].set_index(x)
        names = [name for name in groups if name in part.index]
        xs = [g + (i - (len(hues) - 1) / 2) * width for g, name in enumerate(groups) if name in part.index]
        values, ci = part.loc[names, y].to_numpy(float), part.loc[names, err].fillna(0).to_numpy(float)
        ax.bar(xs, values, width, yerr=errorbars(values, ci, log), capsize=2, label=h, color=colours[h],
               hatch=hatch(h), edgecolor="white", error_kw={"elinewidth": 1})
        if log:
            _cut_marks(ax, xs, values, ci, "0.15")
    ax.set_xticks(range(len(groups)), groups)
    if log:  # after drawing (see lines_with_ci)
        ax.set_yscale("log")
    if legend:
        ax.legend(fontsize=8)


def rotate_labels(ax, angle: int = 40) -> None:
    """Slanted x tick labels anchored at their tick, so long names do not run into each other."""
    for label in ax.get_xticklabels():
        label.set_rotation(angle)
        label.set_horizontalalignment("right")
        label.set_rotation_mode("anchor")


def reference_lines(ax, frame: pd.DataFrame, x: str, y: str, hue: str, label: str = "paper: {}") -> list:
    """The seed's published values, dashed grey, labelled as theirs; returns the legend entries."""
    entries = []
    for i, (key, group) in enumerate(frame.groupby(hue, sort=False)):
        group = group.sort_values(x)
        line, = ax.plot(group[x], group[y], **{**REFERENCE_STYLE, "marker": REFERENCE_MARKERS[i % 6]},
                        label=label.format(key))
        entries.append((line, label.format(key)))
    return entries


def footnote(fig, text: str) -> None:
    """Small grey text under the figure (with the log-floor note when a lower error bar was cut)."""
    if getattr(fig, "_storebench_cut", False) and LOG_FLOOR_NOTE not in text:
        text = f"{text} {LOG_FLOOR_NOTE}"
    fig.text(0.01, -0.02, text, ha="left", va="top", fontsize=8, color="0.3", wrap=True)


CSS_PX_PER_INCH = 96


def save(fig, path, dpi: int = DPI):
    """Write ``fig`` to ``path`` (at least ``DPI`` dots per inch) and return it as an image a notebook
    displays (the Agg backend shows nothing by itself: a cell ending in ``fig`` would render as
    ``<Figure size ...>`` text). The image is shown at its size in inches (the page's CSS narrows a
    wider one), so a one-panel figure is not blown up to the page width and text reads at one size
    across a report's figures."""
    from IPython.display import Image

    dpi = max(dpi, DPI)
    fig.savefig(path, bbox_inches="tight", dpi=dpi)
    plt.close(fig)
    return Image(filename=str(path), width=round(png_width(path) * CSS_PX_PER_INCH / dpi))


def png_width(path) -> int:
    """Width in pixels of the PNG at ``path``, from its IHDR header."""
    with open(path, "rb") as f:
        return int.from_bytes(f.read(24)[16:20], "big")


def finite(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]
