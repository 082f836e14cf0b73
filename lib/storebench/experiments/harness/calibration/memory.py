"""The memory of storebench's TileDB readers over many queries, with and without a fresh context.

TileDB (2.30, TileDB-Py 0.36) keeps memory of every query in its context until the context is freed (open
upstream as TileDB-Py #2194), so a reader that holds one context, as TileDB-Py's documentation does, grows
by ~15-25 KB a query: 15 GB over a reference dataloaders part. storebench's readers open new handles in a
fresh context every ``QUERIES_PER_CONTEXT`` queries (``storebench.stores.tiledb.FreshContexts``). This
measures what that buys and costs, in one run: each reader, on real data, makes the same queries in a
fresh process (so no pass inherits another's heap) with renewal ("fresh context every N queries") and
without it ("one context"), rounds alternating the order, and records the process's RSS and the time
spent in reads as the queries go. Every read is checked against what was written (outside the timed
call).

Readers (``memory_readers``): ``tiledb`` (the bytes store: point reads of a random key, CIFAR-10 images as
values), ``tiledb-array`` (reads of a random image of CIFAR-10) and ``tiledb-attrs`` (the row table: range
reads of 16 rows of the text sample).

Table ``client_memory``: one row per RSS sample (reader, mode, renew_every: none for one context, mark_every:
the renewal interval the pass is compared at, round, queries_done, rss_mib, read_seconds: the time spent in
reads so far, processes_died: pass processes that crashed before this one returned, see in_fresh_process).
"""
from __future__ import annotations

import multiprocessing
import shutil
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from storebench.core.progress import tqdm

Reader = Literal["tiledb", "tiledb-array", "tiledb-attrs"]
READERS: tuple[str, ...] = ("tiledb", "tiledb-array", "tiledb-attrs")
RENEWED, ONE_CONTEXT = "fresh context every N queries", "one context"
# a query: one point read (the bytes store, the image array: each key decodes its own tile, so more keys a
# query only lengthen the pass), or a range of 16 rows (the row table, as its iterable loader reads)
KEYS_PER_QUERY = {"tiledb": 1, "tiledb-array": 1, "tiledb-attrs": 16}
PASS_SAMPLES = 30  # RSS samples per pass, evenly spaced
ATTEMPTS = 4  # fresh processes a pass may take (see in_fresh_process); the report counts those that died
WORKLOAD = {"tiledb": "image", "tiledb-array": "image", "tiledb-attrs": "text"}


def check_counts(queries: int, renew_every: int) -> None:
    """Refuse query counts that cannot compare what stays after each renewal."""
    if queries < 3 * renew_every or queries % renew_every or renew_every % max(1, queries // PASS_SAMPLES):
        raise ValueError(f"calibration: memory_queries ({queries:,}) must be a multiple of memory_renew_every "
                         f"({renew_every:,}), at least 3 of them (what stays after each renewal is compared), and "
                         f"memory_renew_every a multiple of memory_queries / {PASS_SAMPLES} (RSS is sampled then)")


def run(readers: list[str], rows: int, queries: int, renew_every: int, rounds: int, root: Path, seed: int = 0,
        progress: bool = True) -> pd.DataFrame:
    """``rounds`` rounds, each a pass of ``queries`` queries per reader and mode, every pass in a new process."""
    check_counts(queries, renew_every)
    found = []
    bar = tqdm(total=len(readers) * 2 * rounds, desc="calibration memory", unit="pass", disable=not progress,
               leave=False)
    for reader in readers:
        where = root / f"memory-{reader}"
        shutil.rmtree(where, ignore_errors=True)
        try:
            _write(reader, where, rows)
            for r in range(rounds):
                modes = [(RENEWED, renew_every), (ONE_CONTEXT, queries + 1)]
                for mode, every in (modes if r % 2 == 0 else modes[::-1]):
                    samples, died = in_fresh_process(one_pass, (reader, str(where), rows, queries, every, seed + r))
                    found += [{"reader": reader, "mode": mode, "renew_every": renew_every if mode == RENEWED else None,
                               "mark_every": renew_every, "round": r, "queries_done": q, "rss_mib": rss / 2**20,
                               "read_seconds": s, "processes_died": died}
                              for q, rss, s in samples]
                    bar.update()
        finally:
            shutil.rmtree(where, ignore_errors=True)
    bar.close()
    return pd.DataFrame(found)


def in_fresh_process(function, args: tuple, attempts: int = ATTEMPTS) -> tuple[object, int]:
    """``function(*args)`` in a new spawned process, and how many processes died before one returned.

    TileDB 2.30 crashes now and then inside a read (a segmentation fault in a point read's query, seen here
    in bursts: 2 of 4 passes of 6,000 point reads on 2026-12-02, then 0 of 8), and a ``multiprocessing.Pool``
    whose worker dies mid-task waits for its result forever: a crashed pass is run again in a new process,
    ``attempts`` times in all, then the run stops, naming the pass."""
    spawn = multiprocessing.get_context("spawn")
    for died in range(attempts):
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
            try:
                return pool.submit(function, *args).result(), died
            except BrokenProcessPool:
                continue
    raise RuntimeError(f"calibration memory: {getattr(function, '__name__', function)}{args} died in each of "
                       f"{attempts} fresh processes (each killed by a signal)")


def _data(reader: str, rows: int):
    from storebench.data import samples

    return samples.load(WORKLOAD[reader], rows)


def _write(reader: str, where: Path, rows: int) -> None:
    data = _data(reader, rows)
    opened = _open(reader, where)
    if reader == "tiledb":
        opened.put_many((i, image.tobytes()) for i, image in enumerate(data.columns["image"]))
        opened.flush()
    elif reader == "tiledb-array":
        opened.write(data.columns["image"], data.columns["label"])
    else:
        opened.write(data)
    opened.close()


def _open(reader: str, where: Path):
    from storebench.stores.tables import TileDBTable
    from storebench.stores.tiledb import TileDBArrayStore, TileDBStore

    return {"tiledb": TileDBStore, "tiledb-array": TileDBArrayStore, "tiledb-attrs": TileDBTable}[reader](where)


def _open_to_read(reader: str, where: Path):
    """The reader on what ``_write`` left (a row table opens its arrays as the loaders do)."""
    if reader == "tiledb-attrs":
        from storebench.loaders.rows import TableOpener
        from storebench.stores.tables import TileDBTable

        return TableOpener(TileDBTable, str(where), {}).open()
    return _open(reader, where)


def one_pass(reader: str, where: str, rows: int, queries: int, renew_every: int, seed: int) -> list[tuple]:
    """In a fresh process: ``queries`` reads, a fresh context every ``renew_every`` (one context for the pass
    when that is more than ``queries``); (queries done, RSS bytes, seconds in reads) ``PASS_SAMPLES`` times,
    evenly spaced."""
    import psutil

    from storebench.stores import tiledb as T

    T.QUERIES_PER_CONTEXT = renew_every
    data, opened = _data(reader, rows), _open_to_read(reader, Path(where))
    read, check = _query(reader, opened, data)
    rng = np.random.default_rng(seed)
    step, span = max(1, queries // PASS_SAMPLES), KEYS_PER_QUERY[reader]
    process, spent, found = psutil.Process(), 0.0, []
    for q in range(queries + 1):
        if q % step == 0 and q:
            found.append((q, process.memory_info().rss, spent))
        if q == queries:
            break
        start = rng.integers(0, rows - span)
        keys = rng.integers(0, rows, span)
        clock = time.perf_counter()
        got = read(keys, start)
        spent += time.perf_counter() - clock
        check(got, keys, start)
    opened.close()
    return found


def _query(reader: str, opened, data):
    """(read(keys, start), check(got, keys, start)) of one reader: what a query is and how it is verified."""
    from storebench.data.samples import row_fingerprints

    if reader == "tiledb":
        images = data.columns["image"]

        def check(got, keys, _):
            if any(g != images[k].tobytes() for g, k in zip(got, keys)):
                raise AssertionError("tiledb: a read returned other bytes than were written")
        return (lambda keys, _: opened.get_many(keys.tolist())), check
    if reader == "tiledb-array":
        images, labels = data.columns["image"], data.columns["label"]

        def check(got, keys, _):
            if not (np.array_equal(got[0], images[keys]) and np.array_equal(got[1], labels[keys])):
                raise AssertionError("tiledb-array: a read returned other images than were written")
        return (lambda keys, _: opened.read(keys)), check
    fingerprints = row_fingerprints(data.columns)

    def check(got, _, start):
        if not np.array_equal(row_fingerprints(got), fingerprints[start:start + KEYS_PER_QUERY[reader]]):
            raise AssertionError("tiledb-attrs: a range read returned other rows than were written")
    return (lambda _, start: opened.read_range(int(start), int(start) + KEYS_PER_QUERY[reader])), check
