"""Published numbers of the seed papers, typed in once, with their source.

These are THEIR measurements on THEIR hardware (seed 003: Emulab d430 nodes, 2x Xeon
E5-2630v3, 64 GB, 1 GbE LAN, SATA SSD/HDD; 60,000 MNIST samples, 3 repeats, mean).
Plots show them as a labelled reference layer, never mixed with our rows.
"""
from __future__ import annotations

import pandas as pd

SEED_003 = "Storage Benchmarking with Deep Learning Workloads (seeds/003), Appendix A"
SEED_003_MACHINE = "Emulab d430 (2x Xeon E5-2630v3, 64 GB, 1 GbE), 60,000 MNIST samples"

# Table 5: MNIST download time (s) by random access, k samples per request.
TABLE5_K = [1, 4, 16, 32, 64, 128, 256]
TABLE5 = {
    ("mongodb", "raw"): [70.12, 35.05, 22.44, 11.71, 9.6, 9.09, 8.56],
    ("cassandra", "pickle"): [111.6, 40.3, 21.3, 15.81, 15.15, 13.59, 12.53],
    ("redis", "pickle"): [24.02, 7.87, 3.72, 3.01, 2.46, 2.44, 2.28],
}

# Table 4: MNIST download time (s), pickle unless noted; (system, format, access) -> memory, ssd, disk
TABLE4 = {
    ("localfs", "pickle", "sequential-1"): (1.3, 4.2, 7),
    ("minio", "pickle", "sequential-1"): (138, 154, 169),
    ("ceph", "pickle", "sequential-1"): (54, 66, 77),
    ("redis", "pickle", "sequential-1"): (23, None, None),
    ("redis", "pickle", "full"): (2.1, None, None),
    ("mongodb", "raw", "sequential-1"): (58, 62, 65),
    ("mongodb", "raw", "full"): (7, 9.1, 10.2),
    ("cassandra", "pickle", "sequential-1"): (96, 100, 102),
    ("cassandra", "pickle", "full"): (4.6, 5.2, 5.4),
    ("cassandra", "blob", "sequential-1"): (99, 99, 101),
    ("cassandra", "blob", "full"): (3, 3.7, 3.8),
    ("cassandra", "raw", "sequential-1"): (196, 200, 206),
    ("cassandra", "raw", "full"): (45, 46, 47),
}

# Table 6: CIFAR-10 download time (s), pickle unless noted; (system, format, access) -> memory, ssd, disk
TABLE6 = {
    ("localfs", "pickle", "sequential-1"): (1.4, 7, 19),
    ("minio", "pickle", "sequential-1"): (138, 156, 198),
    ("ceph", "pickle", "sequential-1"): (57, 69, 105),
    ("redis", "pickle", "sequential-1"): (28, None, None),
    ("redis", "pickle", "full"): (8, None, None),
    ("mongodb", "raw", "sequential-1"): (80, 88, 87),
    ("mongodb", "raw", "full"): (23, 30, 31),
    ("cassandra", "pickle", "sequential-1"): (96, 108, 115),
    ("cassandra", "pickle", "full"): (20, 20, 21),
    ("cassandra", "blob", "sequential-1"): (97, 104, 113),
    ("cassandra", "blob", "full"): (12.5, 14, 15),
    ("cassandra", "raw", "sequential-1"): (330, 350, 375),
    ("cassandra", "raw", "full"): (132, 142, 139),
}

# Sec 5.1 text and Fig 3 (Cassandra, pickled MNIST, HDD, sequential, 1 sample per request):
# a client on the server node is ~10% faster than across the 1 GbE LAN (network ~10%); the
# local file system reads the 60,000 files in 4.2 s (SSD) / 6.6 s (disk), ~5%; the rest,
# ~85%, is Cassandra's processing. Download time: Table 4 (disk) = 102 s.
FIG3_CASSANDRA = {"network_share": 0.10, "local_read_share": 0.05, "processing_share": 0.85,
                  "local_read_ssd_s": 4.2, "local_read_disk_s": 6.6, "download_disk_s": 102.0}

# Sec 5.2 text: random k=1 is ~10% slower than sequential; 2x faster at k=4, 10x at k=256;
# gains slow down after k=16.
ACCESS_PATTERN_FINDINGS = {"random_penalty_k1": 1.10, "speedup_k4": 2.0, "speedup_k256": 10.0, "flattens_at_k": 16}


def table5() -> pd.DataFrame:
    rows = [{"system": s, "format": f, "samples_per_request": k, "seconds": t, "source": SEED_003}
            for (s, f), times in TABLE5.items() for k, t in zip(TABLE5_K, times)]
    frame = pd.DataFrame(rows)
    first = frame[frame.samples_per_request == 1].set_index("system")["seconds"]
    frame["speedup_vs_k1"] = frame.system.map(first) / frame.seconds
    return frame


def table4() -> pd.DataFrame:
    return _location_table(TABLE4)


def table6() -> pd.DataFrame:
    return _location_table(TABLE6)


def _location_table(table: dict) -> pd.DataFrame:
    rows = []
    for (system, fmt, access), values in table.items():
        for location, seconds in zip(("memory", "ssd", "disk"), values):
            if seconds is not None:
                rows.append({"system": system, "format": fmt, "access": access, "location": location,
                             "seconds": seconds, "source": SEED_003})
    return pd.DataFrame(rows)
