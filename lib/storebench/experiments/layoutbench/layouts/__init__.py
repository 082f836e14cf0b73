"""LayoutBench (seed 002): real ImageNet images in four layouts on S3, queries Q1-Q11."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="layouts", paper="layoutbench", reference="Secs 3-5, Table 1, Findings 1-4",
    question="How should an image dataset be laid out on cloud object storage for metadata-driven retrieval: "
             "one object per image, tar shards, Parquet blobs (or Lance), by time, bytes transferred and cost?")

# The vocabulary both steps share (measure writes these labels, analysis reads them).
UNLIMITED = "unlimited"
FOOTPRINT_QUERY = "Q0"  # storebench.layouts.queries.FOOTPRINT: what a client needs before any data
FOOTPRINT_TIER = "footprint"  # the rows of the fresh clients that measured a layout's footprint (Q0, no limit)


def memory_tier_name(multiple: float) -> str:
    """A memory tier's label: its limit as a multiple of the layout's measured client footprint."""
    return f"{multiple:g}x footprint"
