"""One house style for every figure, and the seed papers' numbers as a reference layer."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # reports are rendered headless; notebooks display the returned figure
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

REFERENCE_STYLE = dict(color="0.45", linestyle="--", marker="x", linewidth=1.2)
DPI = 150

# One colour per system family and one marker (bars: one hatch) per variant, the same in every
# figure of every report: seaborn's colour-blind palette has one hue for each of the ten families.
FAMILIES = {
    "localfs": ("localfs",),
    "rocksdb": ("rocksdb",),
    "tiledb": ("tiledb", "tiledb-array", "tiledb-attrs"),
    "tensorstore": ("tensorstore", "tensorstore-zarr"),
    "redis": ("redis",),
    "mongodb-api": ("mongodb-api", "mongodb-api-concurrent"),
    "cassandra": ("cassandra", "cassandra-async"),
    "minio": ("minio", "minio-obstore"),
    "rgw": ("rgw", "rgw-obstore"),
    "ceph": ("ceph",),
}
VARIANT_MARKERS = ("o", "s", "^")
VARIANT_HATCHES = ("", "//", "..")
UNKNOWN_SYSTEM = {"color": (0.5, 0.5, 0.5), "marker": "D", "hatch": "xx"}  # a system added without a style


def _system_styles() -> dict[str, dict]:
    colours = sns.color_palette("colorblind", len(FAMILIES))
    return {system: {"color": colour, "marker": VARIANT_MARKERS[i], "hatch": VARIANT_HATCHES[i]}
            for colour, variants in zip(colours, FAMILIES.values()) for i, system in enumerate(variants)}


SYSTEM_STYLES = _system_styles()


def system_style(system: str) -> dict:
    """``{"color", "marker", "hatch"}`` of ``system``: the same in every figure."""
    return SYSTEM_STYLES.get(system, UNKNOWN_SYSTEM)


def style() -> None:
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")


def palette(systems) -> dict:
    """Colour per system from the one registry (a series that is not a system: the colour-blind palette)."""
    systems = list(systems)
    if all(s in SYSTEM_STYLES for s in systems):
        return {s: SYSTEM_STYLES[s]["color"] for s in systems}
    return dict(zip(systems, sns.color_palette("colorblind", len(systems))))


def marker(system) -> str:
    return system_style(system)["marker"] if system in SYSTEM_STYLES else "o"


def lines_with_ci(ax, summary: pd.DataFrame, x: str, hue: str, y: str = "mean", err: str = "ci95",
                  colors: dict | None = None, label_fmt: str = "{}") -> None:
    """One line per ``hue`` value with 95% CI error bars (CI from the repeats)."""
    for key, group in summary.groupby(hue, sort=False):
        group = group.sort_values(x)
        yerr = group[err].fillna(0).to_numpy()
        ax.errorbar(group[x], group[y], yerr=yerr, marker=marker(key), capsize=3, label=label_fmt.format(key),
                    color=(colors or {}).get(key, system_style(key)["color"] if key in SYSTEM_STYLES else None))


def grouped_bars(ax, frame: pd.DataFrame, x: str, hue: str, y: str = "mean", err: str = "ci95",
                 hue_order=None) -> None:
    """Bars of ``y`` per ``x`` group, one colour per ``hue``, with 95% CI error bars."""
    groups = list(dict.fromkeys(frame[x]))
    hues = [h for h in (hue_order or dict.fromkeys(frame[hue])) if h in set(frame[hue])]
    width = 0.8 / max(len(hues), 1)
    colours = palette(hues)
    for i, h in enumerate(hues):
        part = frame[frame[hue] == h].set_index(x)
        xs = [g + (i - (len(hues) - 1) / 2) * width for g, name in enumerate(groups) if name in part.index]
        names = [name for name in groups if name in part.index]
        ax.bar(xs, part.loc[names, y], width, yerr=part.loc[names, err].fillna(0), capsize=2, label=h,
               color=colours[h], hatch=system_style(h)["hatch"] if h in SYSTEM_STYLES else "", edgecolor="white")
    ax.set_xticks(range(len(groups)), groups)
    ax.legend(fontsize=8)


def reference_lines(ax, frame: pd.DataFrame, x: str, y: str, hue: str, label: str = "paper: {}") -> None:
    """The seed's published values, dashed grey, labelled as theirs."""
    markers = ["x", "+", "1", "2", "3"]
    for i, (key, group) in enumerate(frame.groupby(hue, sort=False)):
        group = group.sort_values(x)
        ax.plot(group[x], group[y], **{**REFERENCE_STYLE, "marker": markers[i % len(markers)]},
                label=label.format(key))


def log2_x(ax, ticks) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ticks))
    ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())


def footnote(fig, text: str) -> None:
    fig.text(0.01, -0.02, text, ha="left", va="top", fontsize=8, color="0.3", wrap=True)


def save(fig, path):
    """Write ``fig`` to ``path`` and return it as an image a notebook displays (the Agg backend shows
    nothing by itself: a cell ending in ``fig`` would render as ``<Figure size ...>`` text)."""
    from IPython.display import Image

    fig.savefig(path, bbox_inches="tight", dpi=DPI)
    plt.close(fig)
    return Image(filename=str(path))


def finite(values) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    return values[np.isfinite(values)]
