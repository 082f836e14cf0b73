"""Storage location: memory, warm disk, cold disk (Cheng & Gunawi, Sec 5.1, Fig 2, Tables 4 and 6)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="location", paper="dl_storage_benchmarking", reference="Sec 5.1, Fig 2, Tables 4 and 6",
    question="How much does it matter where a system keeps the data (memory, warm disk, cold disk), "
             "compared with which system it is?")
