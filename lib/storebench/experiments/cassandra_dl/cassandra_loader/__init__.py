"""Seed 004's prefetching loader on Cassandra and on every other system (Versaci & Busonera, Secs 4-5)."""
from storebench.core.experiment import Experiment

EXPERIMENT = Experiment(
    name="cassandra_loader", paper="cassandra_dl", reference="Secs 4-5, Table 1, Fig 2, Table 2",
    question="How fast can one data loader pull training images out of Cassandra (and out of every other "
             "system), what does the server's read latency do under many loaders, and how many accelerators "
             "does one loader feed?",
    repeats="Table 1: per system, encoding and batch size, after an unrecorded warm-up, at least {repeats} time-based "
            "passes of {pass_seconds:g} s, more until the 95% CI half-width is within {target_ci:.0%} of the mean or the "
            "cell has spent {cell_cap_s:g} s (at most {max_repeats}); Table 2: {latency_repeats} run(s) of "
            "{latency_seconds:g} s per loader count, each on a fresh table, the counts {latency_loaders} swept until the "
            "MB/s gains less than {saturation_gain:.0%}",
    data="{images:,} images per encoding ({originals:,} real ImageNet images, 224x224, replicated under new UUIDs), "
         "JPEG q90 (~18 kB) and raw (150,528 B)")
