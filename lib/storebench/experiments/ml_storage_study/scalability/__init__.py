"""Input scalability (Britto, Patel & Mukherjee, Sec 5.9, Fig 12)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="scalability", paper="ml_storage_study", reference="Sec 5.9, Fig 12",
    question="How do the time to read a dataset with each store's best loader and the time to write it into the "
             "store grow as the input grows (text x1..x10, graph x1..x50), and what do the stores' caches change?",
    data="x1 inputs of text {base_rows[text]:,} and graph {base_rows[graph]:,} rows, concatenated {factors[text]} "
         "(text) and {factors[graph]} (graph) times; rows and bytes per input in the data table")
