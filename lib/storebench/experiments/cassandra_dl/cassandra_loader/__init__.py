"""Seed 004's prefetching loader on Cassandra and on every other system (Versaci & Busonera, Secs 4-5)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="cassandra_loader", paper="cassandra_dl", reference="Secs 4-5, Table 1, Fig 2, Table 2",
    question="How fast can one data loader pull training images out of Cassandra (and out of every other "
             "system), what does the server's read latency do under many loaders, and how many accelerators "
             "does one loader feed?",
    data="{images:,} images per encoding ({originals:,} real ImageNet images, 224x224, replicated under new UUIDs), "
         "JPEG q90 (~18 kB) and raw (150,528 B)")
