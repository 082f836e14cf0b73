"""Where download time goes: local read, network, server processing (Cheng & Gunawi, Sec 5.1, Fig 3)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="breakdown", paper="dl_storage_benchmarking", reference="Sec 5.1, Fig 3",
    question="Of the time a server takes to deliver pickled MNIST one sample per request, how much is reading "
             "the data, how much is the network, and how much is the server's own processing?")
