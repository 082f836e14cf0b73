"""Access pattern: one by one, the full set, or random batches of k (Cheng & Gunawi, Sec 5.2, Fig 4, Table 5)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="access_pattern", paper="dl_storage_benchmarking", reference="Sec 5.2, Fig 4, Table 5",
    question="How does download time change when a client reads a dataset sequentially one sample per "
             "request, all at once in one request, or in random batches of k samples per request?")
