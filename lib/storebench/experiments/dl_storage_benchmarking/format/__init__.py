"""Data format: raw PNG files vs pickle vs blob (Cheng & Gunawi, Sec 5.4, Fig 7, Table 4)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="format", paper="dl_storage_benchmarking", reference="Sec 5.4, Fig 7, Table 4",
    question="Does serializing a dataset (pickle, blob) instead of keeping raw image files save space and "
             "download time, and what does decoding cost?")
