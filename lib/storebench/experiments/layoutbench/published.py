"""Seed 002 (LayoutBench, slides; ../shared/seeds/002_*) as published, typed in once: its Table 1,
its query table's counts, the client instances and the Finding #4 cost table. Nothing here is
measured; the notebooks print these beside our numbers."""
from __future__ import annotations

import pandas as pd

SOURCE = "Sanyal, Chen, Tumanov & Kimball, LayoutBench (slides), seed 002"

# Table 1: objects on the server, their size, and the client index's size, per tier and layout.
TABLE1 = pd.DataFrame([
    ("mini", "L1", 12_756, "1.39 GB", "553 KB"), ("mini", "L2", 23, "1.38 GB", "810 KB"),
    ("mini", "L3", 22, "1.36 GB", "0"),
    ("medium", "L1", 128_066, "13.91 GB", "4.4 MB"), ("medium", "L2", 28, "13.76 GB", "6.8 MB"),
    ("medium", "L3", 28, "13.57 GB", "0"),
    ("full", "L1", 1_281_167, "139.25 GB", "35.6 MB"), ("full", "L2", 276, "137.73 GB", "54.7 MB"),
    ("full", "L3", 274, "135.85 GB", "0"),
], columns=["tier", "layout", "files", "file_size", "index_size"])
FULL_BYTES = 139.25e9  # L1 at full: the data the seed's memory tiers were sized against

# The query table's "Retrieval - Num. of Files" per tier.
QUERY_COUNTS = {
    "Q1": (1, 1, 1), "Q2": (10, 100, 1000), "Q3": (13, 130, 1300), "Q4": (130, 1300, 13000),
    "Q5": (39, 390, 3900), "Q6": (86, 801, 7837), "Q7": (133, 1309, 12635), "Q8": (2311, 23006, 229710),
    "Q9": (6, 47, 575), "Q10": (1, 27, 294), "Q11": (1, 6, 32),
}
TIER_ORDER = ("mini", "medium", "full")


def query_count(query: str, tier: str) -> int | None:
    """The seed's count for ``query`` at ``tier``; None for a tier the seed did not run."""
    return QUERY_COUNTS[query][TIER_ORDER.index(tier)] if tier in TIER_ORDER else None


# Client EC2 instances: network ("up to"), memory, vCPUs, hourly price (us-east-1 on-demand, as on the slide).
INSTANCES = pd.DataFrame([
    ("t3.medium", 5, 4, 2, 0.0416), ("c5.large", 10, 4, 2, 0.0850), ("c8gb.large", 20, 4, 2, 0.1185),
    ("t3.large", 5, 8, 2, 0.0832), ("t3.xlarge", 5, 16, 4, 0.1664), ("t3.2xlarge", 5, 32, 8, 0.3328),
], columns=["instance", "network_gbit", "memory_gib", "vcpus", "usd_per_hour"])

# Finding #4: cost breakdown on t3.medium (USD), L1 / L2 / L3.
COST_T3_MEDIUM = pd.DataFrame({"L1": [0.795, 0.010, 0.805], "L2": [0.795, 0.005, 0.800],
                               "L3": [9.183, 0.019, 9.202]}, index=["C_network", "C_compute", "C_total"])

FINDINGS = {
    1: "Small retrievals: L1 ~ L2 (L2 slightly faster); mid: L1 wins; large: L2 wins (connection reuse); "
       "L3 slow for small and mid (DuckDB start-up), fastest for very large; L3 cannot run on small "
       "instances at full scale",
    2: "L1 ~ L2 fetch close to the minimum bytes; L3 fetches entire row groups: big overhead on selective queries",
    3: "Bottlenecks: L1 per-request latency (and bandwidth), L2 bandwidth, L3 memory",
    4: "Cost on t3.medium: L1 $0.805, L2 $0.800, L3 $9.202 (network dominates)",
}
