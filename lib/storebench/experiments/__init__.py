"""The experiments, one package each (``storebench.experiments.<paper>.<name>``), grouped by the paper
they reproduce; storebench.core.experiment states the contract every one follows.

The registry maps each experiment to its paper's subpackage. (Not to dotted module paths: the DVC
stage dependencies are derived from the imports and the dotted paths a module names, and a report
stage must not depend on every experiment.)"""
from __future__ import annotations

EXPERIMENTS = {
    "calibration": "harness",
    "location": "dl_storage_benchmarking",
    "access_pattern": "dl_storage_benchmarking",
    "format": "dl_storage_benchmarking",
    "granularity": "dl_storage_benchmarking",
    "breakdown": "dl_storage_benchmarking",
    "training": "dl_storage_benchmarking",
    "dataloaders": "ml_storage_study",
    "scalability": "ml_storage_study",
    "embeddings": "ml_storage_study",
    "resources": "ml_storage_study",
    "layouts": "layoutbench",
    "cassandra_loader": "cassandra_dl",
    "cassandra_scale": "cassandra_dl",
}


def package(name: str) -> str:
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; experiments: {', '.join(EXPERIMENTS)}")
    return ".".join(("storebench", "experiments", EXPERIMENTS[name], name))


def experiment(name: str):
    """The declaration (storebench.core.experiment.Experiment) of experiment ``name``."""
    import importlib

    return importlib.import_module(package(name)).EXPERIMENT


def step(name: str, module: str):
    """Experiment ``name``'s ``measure`` or ``analysis`` module, imported by name at run time."""
    import importlib

    if module not in ("measure", "analysis"):
        raise ValueError(f"an experiment's steps are measure and analysis, not {module!r}")
    return importlib.import_module(f"{package(name)}.{module}")
