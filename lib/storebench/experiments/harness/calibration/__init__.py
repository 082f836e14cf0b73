"""Calibration: storebench's clients beside each system's own benchmark tool, on the same server."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="calibration", paper="harness",
    reference="storebench's clients vs each system's native tool or reference library",
    question="How close do storebench's clients come to what each system's own benchmark tool gets from the same "
             "server, at the same value size and concurrency; and do its layout readers keep up with the libraries "
             "those layouts' users read them with?",
    repeats="an unrecorded warm-up round, then {repeats} interleaved rounds, each one pass of every client (the "
            "order reversed every other round); a ratio is of the rounds' means, with its 95% CI (bootstrap, or "
            "log-scale under 5 rounds)",
    data="Redis {redis_objects:,} values of {redis_value_bytes:,} B; MinIO {s3_objects:,} objects of each size; "
         "RADOS {rados_objects:,} objects of {rados_object_bytes:,} B; RocksDB {rocksdb_keys:,} keys of "
         "{rocksdb_value_bytes:,} B; the ImageNet sample's tier {layout_tier} as LayoutBench's L2 tar shards and L4 "
         "Lance dataset on MinIO")
