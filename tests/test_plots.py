"""The figure house style: one colour and marker per system, the same in every report; figures at >= 150 dpi."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from storebench.layouts import LAYOUTS  # noqa: E402
from storebench.report import plots  # noqa: E402
from storebench.stores import STORES  # noqa: E402
from storebench.stores.embeddings import EMBEDDING_TABLES  # noqa: E402
from storebench.stores.tables import TABLES  # noqa: E402

KNOWN = {*STORES, *TABLES, *EMBEDDING_TABLES, *LAYOUTS}


def test_every_known_system_has_a_unique_colour_and_marker():
    missing = KNOWN - set(plots.SYSTEM_STYLES)
    assert not missing, f"give these systems a style in report/plots._REGISTRY: {sorted(missing)}"
    pairs = [(tuple(plots.system_style(s)["color"]), plots.system_style(s)["marker"]) for s in sorted(KNOWN)]
    assert len(set(pairs)) == len(pairs)
    stores = [tuple(plots.system_style(s)["color"]) for s in {*STORES, *TABLES, *EMBEDDING_TABLES}]
    assert len(set(stores)) == len(stores), "stores drawn together need distinct colours, not only markers"


def test_a_system_keeps_its_style_across_calls_and_figures():
    alone = plots.palette(["redis"])
    crowded = plots.palette(["localfs", "rocksdb", "tiledb", "redis", "ceph"])
    assert alone["redis"] == crowded["redis"] != crowded["ceph"]
    assert plots.system_style("tensorstore") == plots.system_style("tensorstore")
    assert plots.palette(["jpeg", "raw"]) == plots.palette(["jpeg", "raw"])  # non-systems: stable too


def test_figures_are_saved_at_150_dpi_or_more(tmp_path):
    from PIL import Image

    fig, ax = plt.subplots(figsize=(2, 1))
    ax.plot([0, 1], [0, 1])
    plots.save(fig, tmp_path / "f.png", dpi=72)  # a lower request is raised to the house minimum
    dpi = Image.open(tmp_path / "f.png").info["dpi"]
    assert min(dpi) >= 149.5 and plots.DPI >= 150


def test_a_figure_is_shown_at_its_size_in_inches(tmp_path):
    narrow, _ = plt.subplots(figsize=(4, 3))
    wide, _ = plt.subplots(figsize=(12, 3))
    shown = [plots.save(fig, tmp_path / f"{i}.png") for i, fig in enumerate((narrow, wide))]
    assert [s.width for s in shown] == [round(plots.png_width(tmp_path / f"{i}.png") * 96 / plots.DPI)
                                        for i in range(2)]
    assert 250 < shown[0].width < 400 < 900 < shown[1].width  # ~96 CSS px per inch, less the tight bbox trim


def test_ticks_sit_at_the_measured_values_only():
    fig, ax = plt.subplots()
    ax.plot([0, 2], [1, 2])
    plots.ticks_at(ax, [0, 2], log=False)
    assert list(ax.get_xticks()) == [0, 2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "2"]
    plt.close(fig)


def test_log_error_bars_stop_above_zero():
    yerr = plots.errorbars([1.0, 10.0], [5.0, 1.0], log=True)
    assert yerr[0][0] == 1.0 - plots.LOG_FLOOR and yerr[0][1] == 1.0  # cut at 0.1x the value; the other kept
    assert list(yerr[1]) == [5.0, 1.0]


def test_numbers_in_report_tables_read_without_scientific_notation():
    from storebench.report.tables import readable

    assert [readable(v) for v in (130740.0, 2810.1489, 12.345, 0.00123456, 1.0, 25276510208.0)] == \
        ["130,740", "2,810", "12.3", "0.00123", "1", "25,276,510,208"]
