"""What every experiment does: put a dataset in a store at a location, then measure workloads."""
from __future__ import annotations

import errno
from contextlib import contextmanager
from typing import Callable
from dataclasses import dataclass, field

import pandas as pd
from storebench.core.progress import tqdm

from storebench.data.datasets import Dataset
from storebench.data.formats import get_format
from storebench.testbed.locations import COLD_LOCATIONS
from storebench.stores.readers import ArrayReader, NotSupported, ObjectReader
from storebench.core.results import LOCAL_NETWORK, ResultWriter
from storebench.stores import get_store_class
from storebench.stores.systems import LocationNotSupported, ServicePool, open_system
from storebench.stores.base import package_version
from storebench.core.repeats import RepeatPolicy
from storebench.core.timing import measure
from storebench.data.workloads import Workload


class MeasurementFailed(RuntimeError):
    """A system failed during a measurement; nothing of that run is recorded."""


@dataclass
class Skipped:
    system: str
    location: str
    what: str
    reason: str


@dataclass
class Run:
    """Everything one experiment run produced."""
    writer: ResultWriter
    skipped: list[Skipped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def rows(self) -> pd.DataFrame:
        return self.writer.frame()


@contextmanager
def loaded_reader(system: str, location: str, dataset: Dataset, format: str, samples_per_object: int,
                  progress: bool = True, services: ServicePool | None = None, options: dict | None = None):
    """A reader over ``system`` at ``location`` holding ``dataset``; the store is emptied after.
    ``options``: the store's own (e.g. its ``layout_for(samples_per_object)``).
    A failed ingest is a MeasurementFailed naming the system and what to do."""
    with open_system(system, location, services, **(options or {})) as store:
        try:
            if store.capabilities.array_native:
                reader = ArrayReader.ingest(store, dataset, progress=progress)
            else:
                reader = ObjectReader.ingest(store, dataset, get_format(format), samples_per_object,
                                             progress=progress)
        except Exception as error:
            _clear_quietly(store)
            raise MeasurementFailed(f"{store.name} failed during ingest at {location}: {type(error).__name__}: "
                                    f"{str(error).rstrip('.')}. {what_to_do(error)} No result of this run was recorded."
                                    ) from error
        try:
            yield reader
        except BaseException:
            _clear_quietly(store)  # the server may be what failed: keep the first error
            raise
        store.clear()


def _clear_quietly(store) -> None:
    try:
        store.clear()
    except Exception:  # noqa: BLE001 - reporting the failure that got us here matters more
        pass


def measure_into(run: Run, reader, workload: Workload, *, location: str, policy: RepeatPolicy, dataset: str,
                 format: str, scale: str, seed: int, warmup: bool = True, progress: bool = False) -> bool:
    """Measure ``workload`` and add its rows to ``run``; False (and a Skipped entry) if unsupported."""
    store = reader.store
    try:
        passes = measure(reader, workload, policy, cold=location in COLD_LOCATIONS, warmup=warmup,
                         progress=progress, desc=f"{store.name} {workload.label} {location}",
                         restart_server=location == "disk-cold")
    except NotSupported as why:
        run.skipped.append(Skipped(store.name, location, workload.label, str(why)))
        return False
    except Exception as error:
        raise failure(store.name, workload, location, error) from error
    record(run, reader, workload, passes, location=location, dataset=dataset, format=format, scale=scale, seed=seed)
    return True


def failure(system: str, workload: Workload, location: str, error: BaseException) -> MeasurementFailed:
    return MeasurementFailed(f"{system} failed during {workload.label} at {location}: "
                             f"{type(error).__name__}: {str(error).rstrip('.')}. {what_to_do(error)} "
                             "No result of this run was recorded.")


def what_to_do(error: BaseException) -> str:
    """The fix for the faults a user meets: a full disk, a reset connection, a server too slow."""
    chain, seen = [], error
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    text = " ".join(f"{type(e).__name__} {e}" for e in chain).lower()
    if any(getattr(e, "errno", None) == errno.ENOSPC for e in chain) or any(
            words in text for words in ("no space left", "storage full", "storagefull", "free drive threshold")):
        return ("The store's location is out of space: free space there, or put the store where the dataset "
                "fits (a larger disk or tmpfs), then re-run.")
    if any(isinstance(e, TimeoutError) for e in chain) or "timeout" in text or "timed out" in text:
        return ("The server did not answer within the client's timeout: check that it is running and not "
                "overloaded (its log), and the network to it, or raise the store's `timeout` option; then re-run.")
    if any(isinstance(e, ConnectionError) for e in chain) or any(
            words in text for words in ("reset by peer", "connection reset", "closed by server", "connectionerror")):
        return ("The connection to the server was reset or closed: check the server's log and the network "
                "between client and server, then re-run.")
    return "Check the server's log and the message above, then re-run."


def record(run: Run, reader, workload: Workload, passes, *, location: str, dataset: str, format: str, scale: str,
           seed: int, network: str = LOCAL_NETWORK, net: dict | None = None) -> None:
    """Add measured passes to ``run`` with their workload, versions and ``network`` (where the client sat);
    ``net``: the measured network profile between them (storebench.testbed.netprofiles.NetworkPath.measure)."""
    store = reader.store
    run.writer.add(passes, system=store.name, dataset=dataset,
                   format="array" if store.capabilities.array_native else format,
                   samples_per_object=workload.samples_per_object,
                   samples_per_request=workload.samples_per_request, access=workload.access,
                   location=location, network=network, n_samples=workload.n_samples,
                   system_version=store.system_version(),
                   client_version=f"{store.client_package} {package_version(store.client_package)}",
                   client_config=store.client_config(), scale=scale, seed=seed, net=net)


def system_locations(systems, locations, run: Run) -> list[tuple[str, str]]:
    """(location, system) pairs to measure, location-major so each server starts once per location.
    A memory-only system (Redis) asked for a disk location is measured in memory instead, as the
    paper did, and the substitution is noted."""
    pairs = []
    for location in locations:
        for system in systems:
            where = location
            if get_store_class(system).capabilities.in_memory_only and location != "memory":
                run.notes.append(f"{system} keeps its data in memory only: asked for {location}, measured at memory")
                where = "memory"
            if (where, system) not in pairs:
                pairs.append((where, system))
    return sorted(pairs, key=lambda p: locations.index(p[0]) if p[0] in locations else -1)


def sweep(run: Run, config: dict, *, datasets: list[str], formats: list[str], samples_per_object: list[int],
          plan: Callable[[int, int], list[Workload]], progress: bool = True,
          on_loaded: Callable[..., None] | None = None, layout: bool = False) -> None:
    """Measure ``plan(n_samples, samples_per_object)`` for every system x location x dataset x format x
    granularity, ingesting once per combination; one local server runs at a time. ``on_loaded(reader,
    location=, dataset=, format=, samples_per_object=)`` runs after each ingest (e.g. disk usage).
    ``layout``: open each store with its ``layout_for(samples_per_object)`` (the array layouts' chunks along
    the sample axis hold that many samples; elsewhere they keep their defaults).
    Servers at ``disk-cold`` only on ``config["restart_datasets"]`` (default: all; see restart_skipped)."""
    from storebench.data import datasets as data

    loaded = {name: data.load(name, config.samples_of(name)) for name in datasets}
    pairs = system_locations(config["systems"], config["locations"], run)
    combos = [(loc, system, name, fmt, spo) for loc, system in pairs for name in datasets for fmt in formats
              for spo in samples_per_object]
    with ServicePool(config["endpoints"]) as services:
        for location, system, name, fmt, spo in tqdm(combos, desc=run.writer.experiment, unit="config",
                                                     disable=not progress):
            why_not = restart_skipped(config, location, system, name)
            if why_not:
                run.skipped.append(Skipped(system, location, f"every workload on {name}", why_not))
                continue
            try:
                options = get_store_class(system).layout_for(spo) if layout else None
                with loaded_reader(system, location, loaded[name], fmt, spo, progress=progress,
                                   services=services, options=options) as reader:
                    if on_loaded:
                        on_loaded(reader, location=location, dataset=name, format=fmt, samples_per_object=spo)
                    for workload in plan(len(loaded[name]), spo):
                        measure_into(run, reader, workload, location=location, policy=config.policy,
                                     dataset=name, format=fmt, scale=config["scale"], seed=config["seed"],
                                     warmup=config.get("warmup", True))
            except LocationNotSupported as why:
                run.skipped.append(Skipped(system, location, "every workload", str(why)))


def restart_skipped(config: dict, location: str, system: str, dataset: str) -> str | None:
    """Why ``system`` is not measured at ``disk-cold`` on ``dataset``, or None. A server is restarted
    before every cold repeat (1-45 s each here), so a scale may restart on fewer datasets
    (params ``restart_datasets``; ``[]``: servers only at ``disk-cold-pagecache``)."""
    restart_datasets = config.get("restart_datasets")
    if location != "disk-cold" or restart_datasets is None or dataset in restart_datasets or not has_server(system):
        return None
    return (f"disk-cold restarts the server before every repeat; at this scale only on "
            f"{', '.join(restart_datasets) or 'no dataset'} (params.yaml restart_datasets)")


def has_server(system: str) -> bool:
    return get_store_class(system).capabilities.has_server


def record_skipped(run: Run, out) -> None:
    """The ``skipped`` table (what was not measured, and why) and the ``notes`` table of a run."""
    out.write("skipped", pd.DataFrame([vars(s) for s in run.skipped], columns=["system", "location", "what", "reason"]))
    out.write("notes", pd.DataFrame({"note": list(dict.fromkeys(run.notes))}))
