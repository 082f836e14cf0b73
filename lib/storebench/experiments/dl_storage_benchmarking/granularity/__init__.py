"""Disaggregation granularity: samples per object x samples per request (Cheng & Gunawi, Sec 5.3)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="granularity", paper="dl_storage_benchmarking", reference="Sec 5.3, Figs 5-6",
    question="Should each sample be its own object, or should several samples share one object, and how "
             "does that interact with the samples asked for per request?")
