"""The figure house style: one colour and marker per system, the same in every report."""
from storebench.report import plots
from storebench.stores import STORES
from storebench.stores.embeddings import EMBEDDING_TABLES
from storebench.stores.tables import TABLES


def test_every_system_has_its_own_colour_and_marker():
    systems = {*STORES, *TABLES, *EMBEDDING_TABLES}
    missing = systems - set(plots.SYSTEM_STYLES)
    assert not missing, f"give these systems a style in report/plots.FAMILIES: {sorted(missing)}"
    pairs = [(tuple(s["color"]), s["marker"]) for s in plots.SYSTEM_STYLES.values()]
    assert len(set(pairs)) == len(pairs)


def test_a_system_keeps_its_colour_whatever_else_is_in_the_figure():
    alone = plots.palette(["redis"])
    crowded = plots.palette(["localfs", "rocksdb", "tiledb", "redis", "ceph"])
    assert alone["redis"] == crowded["redis"] != crowded["ceph"]
    assert plots.palette(["jpeg", "raw"])  # a series that is not a system still gets colours


def test_numbers_in_report_tables_read_without_scientific_notation():
    from storebench.report.tables import readable

    assert [readable(v) for v in (130740.0, 2810.1489, 12.345, 0.00123456, 1.0, 25276510208.0)] == \
        ["130,740", "2,810", "12.3", "0.00123", "1", "25,276,510,208"]
