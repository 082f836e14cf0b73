"""Where download time goes: local read, network, server processing (Cheng & Gunawi, Sec 5.1, Fig 3)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="breakdown", paper="dl_storage_benchmarking", reference="Sec 5.1, Fig 3",
    question="Of the time a server takes to deliver pickled MNIST one sample per request, how much is reading "
             "the data, how much is the network, and how much is the server's own processing?")

# The vocabulary both steps share (measure writes these labels, analysis reads them).
IN_NAMESPACE = "same namespace"
# A server's cold read here evicts its files' pages under the running server (disk-cold-pagecache):
# restarting it inside the namespace between passes (disk-cold) is not built. localfs's counterpart
# of that cold read is its own disk-cold (files evicted, reopened).
LOCAL_READ_LOCATION = {"disk-cold-pagecache": "disk-cold"}
