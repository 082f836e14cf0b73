"""Seed 001's published configurations and stated trends, typed in once, with their source.

Britto, Patel & Mukherjee, "Studying Storage Systems for ML Workloads" (seeds/001): ONE CloudLab
node, Intel Xeon E5-2660 v3 @ 2.60 GHz (20 cores), PyTorch DataLoaders, up to 32 workers;
Twitter sentiment (228 MB), CIFAR-100, FB15k-237 (272K triples, 21 MB). The paper gives no
numeric tables for its figures: only Table 1 (best configurations) and statements in the text.
"""
from __future__ import annotations

import pandas as pd

SOURCE = "Britto, Patel & Mukherjee, Studying Storage Systems for ML Workloads (seeds/001)"
MACHINE = "CloudLab, Intel Xeon E5-2660 v3 @ 2.60 GHz (20 cores), up to 32 DataLoader workers"
SYSTEMS = {"RD": "rocksdb", "TD": "tiledb", "TS": "tensorstore"}  # the paper's acronyms (Sec 9.1)

# Table 1: configurations that gave the best result per store and workload.
# R rows per key, W workers, B batch size, PF prefetch, T loader (M map-style, I iterable-style).
TABLE1 = {
    ("text", "rocksdb"): dict(rows_per_key=1024, workers=32, batch_size=1024, loader="map"),
    ("text", "tiledb"): dict(workers=16, batch_size=1024, prefetch=1024, loader="iterable"),
    ("text", "tensorstore"): dict(workers=32, batch_size=1024, loader="map"),
    ("image", "rocksdb"): dict(rows_per_key=128, workers=16, batch_size=1024, loader="map"),
    ("image", "tiledb"): dict(workers=32, batch_size=512, prefetch=512, loader="iterable"),
    ("image", "tensorstore"): dict(workers=32, batch_size=512, prefetch=512, loader="iterable"),
    ("graph", "rocksdb"): dict(rows_per_key=1024, workers=16, batch_size=1024, loader="map"),
    ("graph", "tiledb"): dict(workers=16, batch_size=512, prefetch=1024, loader="iterable"),
    ("graph", "tensorstore"): dict(workers=8, batch_size=1024, loader="map"),
}

# Statements of Secs 5.1-5.9 that our numbers can check (no published values beyond these).
FINDINGS = {
    "write_rocksdb_r1_slowest": "Sec 5.1: RocksDB with one row per key is the slowest to write; more rows per key "
                                "improve it a lot",
    "write_text_tiledb_best": "Sec 5.1: text: TileDB (parallel writers) writes fastest",
    "write_image_tensorstore_best": "Sec 5.1: image: TensorStore (N5, internal parallelism) writes fastest, "
                                    "RocksDB (R > 1) close",
    "rocksdb_best_r": "Secs 5.2, 5.4, 5.6: RocksDB's best rows per key is 512-1024 (text, graph), 128 (image)",
    "text_map_rocksdb_best": "Sec 5.2: text, map-style: RocksDB (R rows per key) is best over all configurations",
    "image_iterable_tensorstore_best": "Sec 5.5: image, iterable-style: TensorStore always outperforms the others",
    "stores_beat_ext4_only_for_images": "Sec 5.8: RocksDB and TensorStore beat the ext4 baseline only for images",
    "workers_saturate": "Secs 5.2-5.4: more workers help up to 8-16, then returns diminish",
}


def table1() -> pd.DataFrame:
    """Table 1 as rows (workload, system, loader, R, W, B, PF), with its source."""
    rows = [{"workload": w, "system": s, "loader": c["loader"], "rows_per_key": c.get("rows_per_key"),
             "workers": c["workers"], "batch_size": c["batch_size"], "prefetch": c.get("prefetch"),
             "source": SOURCE} for (w, s), c in TABLE1.items()]
    return pd.DataFrame(rows)


def config_text(config: dict) -> str:
    """A configuration in the paper's notation, e.g. 'M, R=1024, W=32, B=1024'."""
    parts = ["M" if config.get("loader") == "map" else "I"]
    for key, short in (("rows_per_key", "R"), ("workers", "W"), ("batch_size", "B"), ("prefetch", "PF")):
        value = config.get(key)
        if value is not None and not (isinstance(value, float) and pd.isna(value)):
            if key == "rows_per_key" and config.get("loader") == "iterable" and value == 1:
                continue
            parts.append(f"{short}={int(value)}")
    return ", ".join(parts)


# Sec 3.2, Sec 5.9: the seed's datasets and their sizes, as it states them (no row counts for text and images).
DATA = {
    "text": "Twitter sentiment analysis dataset, 228 MB (Sec 5.9)",
    "image": "CIFAR-100 (50,000 training images of 32x32x3; the seed states no count)",
    "graph": "FB15k-237, 272,115 triples, 21 MB (Sec 5.9)",
}
