"""CPU and memory of the loaders (Britto, Patel & Mukherjee, Sec 5.11, Figs 16-21)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="resources", paper="ml_storage_study", reference="Sec 5.11, Figs 16-21",
    question="How much CPU and memory does feeding each workload (text, image, graph) take, per store, in its "
             "best loader configuration?")
