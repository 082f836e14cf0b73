"""Calibration: storebench's clients beside each system's own benchmark tool, on the same server."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="calibration", paper="harness", reference="storebench's clients vs each system's native tool",
    question="How close do storebench's clients come to what each system's own benchmark tool gets from the same "
             "server, at the same value size and concurrency?")
