"""Seed 004 at scale: a Cassandra ring that grows and shrinks under load, and data-parallel ranks."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="cassandra_scale", paper="cassandra_dl", reference="Sec 5.4, Sec 6, Tables 3-4, Fig 3",
    question="Can a Cassandra ring gain and lose a node while loaders read from it, without interruption; and "
             "how does data loading scale with data-parallel training ranks?",
    data="{images:,} {encoding} images ({originals:,} real ImageNet images, 224x224, replicated under new UUIDs; "
         "{train_share:.0%} training, the rest validation)")
