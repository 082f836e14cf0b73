"""Embedding updates (Britto, Patel & Mukherjee, Sec 5.10, Figs 13-15, and its Sec 6 future work)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="embeddings", paper="ml_storage_study", reference="Sec 5.10, Figs 13-15; Sec 6 (future work)",
    question="How does the time of reading, updating and writing back embeddings in each store vary with the "
             "dataset size, the embedding size and the batch size (and with sparse updates and key locality)?")
