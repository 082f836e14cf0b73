"""LayoutBench (seed 002): real ImageNet images in four layouts on S3, queries Q1-Q11."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="layouts", paper="layoutbench", reference="Secs 3-5, Table 1, Findings 1-4",
    question="How should an image dataset be laid out on cloud object storage for metadata-driven retrieval: "
             "one object per image, tar shards, Parquet blobs (or Lance), by time, bytes transferred and cost?")

# The vocabulary both steps share (measure writes these labels, analysis reads them).
SERVERS = ("minio", "rgw")  # in this order: the first measured is the one every profile and memory tier runs on
UNLIMITED = "unlimited"
FOOTPRINT_QUERY = "Q0"  # storebench.layouts.queries.FOOTPRINT: what a client needs before any data
FOOTPRINT_TIER = "footprint"  # the rows of the fresh clients that measured a layout's footprint (Q0, no limit)


def memory_tier_name(multiple: float) -> str:
    """A memory tier's label: its limit as a multiple of the layout's measured client footprint."""
    return f"{multiple:g}x footprint"


def primary_server(config: dict) -> str:
    """The server every profile and memory tier runs on (the first of SERVERS measured): what the
    findings are about; the others are measured beside it."""
    return sorted(config["servers"], key=lambda s: SERVERS.index(s) if s in SERVERS else len(SERVERS))[0]


def profiles_by_rate(names, rates: dict) -> list[str]:
    """Network profiles slowest first, by the link rate the measurement recorded for each (``rates``: profile ->
    its ``net_rate``, e.g. "250mbit"; unshaped or unknown last), whatever order parts listed them in."""
    return sorted(dict.fromkeys(names), key=lambda p: _bits_per_second(rates.get(p)))


def recorded_rates(rows) -> dict:
    """Profile -> the link rate recorded on the measurement's rows (``net_profile``, ``net_rate``)."""
    if rows is None or not {"net_profile", "net_rate"} <= set(rows.columns):
        return {}
    return dict(zip(rows.net_profile, rows.net_rate))


def _bits_per_second(rate) -> float:
    text = str(rate).strip().lower()
    for unit, factor in (("kbit", 1e3), ("mbit", 1e6), ("gbit", 1e9)):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) * factor
            except ValueError:
                break
    return float("inf")
