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


def profiles_by_rate(names) -> list[str]:
    """Network profiles slowest first (by link rate; unshaped last), whatever order parts listed them in."""
    from storebench.testbed.netns import bits_per_second
    from storebench.testbed.netprofiles import PROFILES

    return sorted(dict.fromkeys(names), key=lambda p: bits_per_second(PROFILES[p].rate) if PROFILES[p].rate
                  else float("inf"))
