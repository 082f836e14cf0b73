"""Embedding updates (Britto, Patel & Mukherjee, Sec 5.10, Figs 13-15, and its Sec 6 future work)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="embeddings", paper="ml_storage_study", reference="Sec 5.10, Figs 13-15; Sec 6 (future work)",
    question="How does the time of reading, updating and writing back embeddings in each store vary with the "
             "dataset size, the embedding size and the batch size (and with sparse updates and key locality)?")

# The vocabulary both steps share (measure writes these labels, analysis reads them).
STREAM_STANDS_FOR = {"zipf": "text", "power-law": "graph"}
UPDATES = ("dense", "sparse")
LOCALITIES = ("shuffled", "clustered")
# sweep name -> (the Point field it varies, the params key listing its values)
SWEEPS = {"dataset_size": ("dataset_size", "dataset_sizes"), "table_size": ("table_rows", "table_sizes"),
          "embedding_size": ("embedding_size", "embedding_sizes"), "batch_size": ("batch_size", "batch_sizes"),
          "update": ("update", "updates"), "locality": ("locality", "locality")}
CONFIG_KEYS = ["durability", "table", "stream", "dataset_size", "table_rows", "embedding_size", "batch_size", "update", "locality"]
