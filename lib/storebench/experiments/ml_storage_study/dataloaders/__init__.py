"""Data loaders and write cost (Britto, Patel & Mukherjee, Secs 5.1-5.8, Figs 1-11, Table 1)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="dataloaders", paper="ml_storage_study", reference="Secs 5.1-5.8, Figs 1-11, Table 1",
    question="Which store, layout and PyTorch loader configuration (map-style or iterable-style; rows per key, "
             "batch, prefetch, workers) feeds text, image and graph workloads fastest, against the ext4 baseline, "
             "and what does converting each dataset into the store cost?",
    data="rows: text {rows[text]:,}, image {rows[image]:,}, graph {rows[graph]:,} (a dataset's first rows, or whole "
         "copies of it end to end; rows and bytes in the data table)")
