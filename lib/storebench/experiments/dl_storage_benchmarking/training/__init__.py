"""Training: LeNet-5 fed from a local or a remote store (Cheng & Gunawi, Sec 5.5, Fig 8)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="training", paper="dl_storage_benchmarking", reference="Sec 5.5, Fig 8",
    question="How much does the storage system feeding a training job change end-to-end training time, across "
             "batch sizes and DataLoader workers, and what does reading a whole batch at once change?")
