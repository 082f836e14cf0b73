"""Seed 001's loaders: rows of any workload (storebench.data.samples), map-style vs iterable-style.

- :class:`RowMapDataset` (map-style): the DataLoader's batch sampler hands ``__getitems__`` the B
  row indices of a batch; they become ONE read (the keys holding them: one ``get_many``, the
  store's native multi-read; or one table read), ONE decode of the batch and one tensor per
  column. With R rows per key a batch of B rows reads about B/R keys.
- :class:`RowIterableDataset` (iterable-style): the rows, in order, cut into chunks of PF rows
  (the prefetch size); each chunk is ONE read, issued ahead on a background thread while the
  previous chunk's batches are consumed; batches of B rows are cut from the stream (they may
  span chunks). With W DataLoader workers, chunk c goes to worker c mod W, so every row is
  delivered exactly once per epoch.

Every batch is verified: the fingerprints of the rows received (storebench.data.samples.
row_fingerprints, array operations) must equal those recorded at ingest, else
:class:`~storebench.stores.readers.VerificationError`. A batch is a dict of tensors: ``row`` (int64
row indices) plus, per workload, ``x``/``y`` (image: the pixels as stored, uint8 (B, H, W, C), and int64
labels: normalising to float is the model's first step, on the accelerator where there is one, as
FFCV and DALI do; on this CPU it cost 1-1.7 us of a row's ~3.5 us read),
``text`` (uint8 bytes of the batch's tweets, end to end) + ``offsets`` (int64, B + 1) + ``y``,
or ``triple`` (int64 (B, 3)).
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from storebench.core.repeats import Cell, RepeatPolicy, repeat_cell
from storebench.stores.readers import VerificationError
from storebench.data.rowformats import KeyLayout, RowFormat
from storebench.data.samples import concat_columns, n_rows, row_fingerprints, slice_columns, take_columns
from storebench.stores.tables import RowTable
from storebench.loaders.heap import keep_batch_buffers, worker_init
from storebench.loaders.mapstyle import WORKER_TIMEOUT_S, keep_batch
from storebench.loaders.opener import ProcessLocalStore, StoreOpener, worker_context

LOADER_KINDS = ("map", "iterable")


# ------------------------------------------------------------------------------- sources
class StoreRows:
    """Rows held R per key in a bytes store (one process-local handle per process)."""

    def __init__(self, opener: StoreOpener, layout: KeyLayout, fmt: RowFormat):
        self.handle, self.layout, self.format = ProcessLocalStore(opener), layout, fmt
        self.name = opener.store_class.name

    @property
    def n_rows(self) -> int:
        return self.layout.n_rows

    def fetch(self, keys: np.ndarray) -> list[bytes]:
        """The store calls alone (what a bare loop times)."""
        store = self.handle.store
        keys = keys.tolist()
        return [store.get(keys[0])] if len(keys) == 1 else store.get_many(keys)

    def read(self, rows: np.ndarray) -> dict:
        if _is_run(rows):  # a sequential batch: its keys are a range, the rows need no gather
            return self.read_range(int(rows[0]), int(rows[-1]) + 1)
        keys = self.layout.keys_of(rows)
        decoded = self.format.decode_many(self.fetch(keys))
        positions = self.layout.positions(rows, keys)
        if len(positions) == n_rows(decoded) and (positions == np.arange(len(positions))).all():
            return decoded  # the rows came back in the order asked: no gather
        return take_columns(decoded, positions)

    def read_range(self, start: int, stop: int) -> dict:
        first, last = start // self.layout.rows_per_key, (stop - 1) // self.layout.rows_per_key
        decoded = self.format.decode_many(self.fetch(np.arange(first, last + 1)))
        offset = first * self.layout.rows_per_key
        return slice_columns(decoded, start - offset, stop - offset)

    def bare_read(self, rows: np.ndarray) -> int:
        if _is_run(rows):
            return self.bare_read_range(int(rows[0]), int(rows[-1]) + 1)
        return len(self.fetch(self.layout.keys_of(rows)))

    def bare_read_range(self, start: int, stop: int) -> int:
        first, last = start // self.layout.rows_per_key, (stop - 1) // self.layout.rows_per_key
        return len(self.fetch(np.arange(first, last + 1)))

    def close(self) -> None:
        self.handle.close()


def _is_run(rows: np.ndarray) -> bool:
    """Whether ``rows`` are consecutive and ascending."""
    return len(rows) > 0 and rows[-1] - rows[0] == len(rows) - 1 and bool((np.diff(rows) == 1).all())


@dataclass(frozen=True)
class TableOpener:
    table_class: type
    root: str
    options: dict

    def open(self) -> RowTable:
        table = self.table_class(self.root, **self.options)
        table._open()
        return table


class TableRows:
    """Rows of an array-native table (TileDB attributes, TensorStore zarr)."""

    def __init__(self, opener: TableOpener, n: int):
        self.opener, self._n, self._table, self._pid = opener, int(n), None, None
        self.name = opener.table_class.name

    @property
    def n_rows(self) -> int:
        return self._n

    @property
    def table(self) -> RowTable:
        import os

        if self._table is None or self._pid != os.getpid():
            self._table, self._pid = self.opener.open(), os.getpid()
        return self._table

    def read(self, rows):
        return self.table.read(rows)

    def read_range(self, start, stop):
        return self.table.read_range(start, stop)

    bare_read = read  # for an array layout the read IS the decoded columns
    bare_read_range = read_range

    def close(self):
        if self._table is not None:
            self._table.close()
        self._table = None

    def __getstate__(self):
        return {**self.__dict__, "_table": None, "_pid": None}


# ------------------------------------------------------------------------------- batches
def to_batch(modality: str, columns: dict, rows: np.ndarray) -> dict:
    """Columns of a batch as tensors, one conversion per column."""
    batch = {"row": torch.as_tensor(np.asarray(rows, dtype=np.int64))}
    if modality == "image":
        batch["x"] = torch.from_numpy(np.ascontiguousarray(columns["image"]))
        batch["y"] = torch.as_tensor(np.asarray(columns["label"], dtype=np.int64))
    elif modality == "text":
        text = columns["text"]
        batch["text"] = torch.from_numpy(np.array(text.data, dtype=np.uint8))
        batch["offsets"] = torch.as_tensor(text.offsets - text.offsets[0])
        batch["y"] = torch.as_tensor(np.asarray(columns["label"], dtype=np.int64))
    else:
        batch["triple"] = torch.as_tensor(np.asarray(columns["triple"], dtype=np.int64))
    return batch


def verified(source, columns: dict, rows: np.ndarray, expected: np.ndarray) -> dict:
    if n_rows(columns) != len(rows) or not np.array_equal(row_fingerprints(columns), expected[rows]):
        got = row_fingerprints(columns) if n_rows(columns) == len(rows) else None
        bad = [] if got is None else rows[got != expected[rows]][:5].tolist()
        raise VerificationError(f"{source.name}: rows differ from what was written "
                                f"({n_rows(columns)} rows received for {len(rows)}; first bad rows {bad})")
    return columns


class RowMapDataset(torch.utils.data.Dataset):
    """Map-style: ``__getitems__(rows)`` = one read + one decode + one verification of the batch."""

    kind = "map"
    collate_fn = staticmethod(keep_batch)

    def __init__(self, source, modality: str, fingerprints: np.ndarray):
        self.source, self.modality, self.fingerprints = source, modality, fingerprints

    def __len__(self) -> int:
        return self.source.n_rows

    def __getitems__(self, rows):
        rows = np.asarray(rows, dtype=np.int64)
        if len(rows) and (rows.min() < 0 or rows.max() >= len(self)):
            raise IndexError(rows[(rows < 0) | (rows >= len(self))][:5].tolist())
        return to_batch(self.modality, verified(self.source, self.source.read(rows), rows, self.fingerprints), rows)

    def __getitem__(self, row):
        return self.__getitems__([row])


class RowIterableDataset(torch.utils.data.IterableDataset):
    """Iterable-style: chunks of ``prefetch`` rows, each one read issued one chunk ahead,
    batches of ``batch_size`` rows cut from the stream; chunk c to worker c mod W."""

    kind = "iterable"

    def __init__(self, source, modality: str, fingerprints: np.ndarray, batch_size: int, prefetch: int):
        if batch_size < 1 or prefetch < 1:
            raise ValueError(f"batch size and prefetch must be >= 1, got {batch_size} and {prefetch}")
        self.source, self.modality, self.fingerprints = source, modality, fingerprints
        self.batch_size, self.prefetch = int(batch_size), int(prefetch)

    def chunks(self, worker: int = 0, workers: int = 1) -> list[tuple[int, int]]:
        n = self.source.n_rows
        starts = range(worker * self.prefetch, n, workers * self.prefetch)
        return [(s, min(s + self.prefetch, n)) for s in starts]

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        chunks = self.chunks(info.id, info.num_workers) if info else self.chunks()
        pending, held = [], 0
        with ThreadPoolExecutor(1, thread_name_prefix="prefetch") as ahead:
            next_read = ahead.submit(self.source.read_range, *chunks[0]) if chunks else None
            for i, (start, stop) in enumerate(chunks):
                columns = next_read.result()
                if i + 1 < len(chunks):
                    next_read = ahead.submit(self.source.read_range, *chunks[i + 1])
                rows = np.arange(start, stop)
                pending.append((verified(self.source, columns, rows, self.fingerprints), rows))
                held += stop - start
                while held >= self.batch_size:
                    columns, rows = _cut(pending, self.batch_size)
                    pending, held = _rest(pending, self.batch_size, held)
                    yield to_batch(self.modality, columns, rows)
        if held:
            columns = concat_columns([c for c, _ in pending])
            yield to_batch(self.modality, columns, np.concatenate([r for _, r in pending]))


def _cut(pending: list, size: int) -> tuple[dict, np.ndarray]:
    """The first ``size`` rows of the pending pieces."""
    taken, parts, rows = 0, [], []
    for columns, piece_rows in pending:
        use = min(size - taken, len(piece_rows))
        parts.append(slice_columns(columns, 0, use))
        rows.append(piece_rows[:use])
        taken += use
        if taken == size:
            break
    return concat_columns(parts), np.concatenate(rows)


def _rest(pending: list, size: int, held: int) -> tuple[list, int]:
    """The pending pieces after their first ``size`` rows."""
    rest, skip = [], size
    for columns, rows in pending:
        if skip >= len(rows):
            skip -= len(rows)
            continue
        rest.append((slice_columns(columns, skip, len(rows)), rows[skip:]) if skip else (columns, rows))
        skip = 0
    return rest, held - size


def map_batches(n: int, batch_size: int, order: str = "sequential", seed: int = 0) -> list[list[int]]:
    """The batch plan of one map-style epoch: every row once, sequential (as the seed loaded the
    whole dataset) or shuffled with ``seed``."""
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    rows = np.arange(n) if order == "sequential" else np.random.default_rng(seed).permutation(n)
    if order not in ("sequential", "shuffled"):
        raise ValueError(f"unknown order {order!r}; valid: sequential, shuffled")
    return [rows[i:i + batch_size].tolist() for i in range(0, n, batch_size)]


def row_loader(dataset, workers: int, start_method: str | None = None, batches=None,
               prefetch_factor: int | None = None, persistent: bool = False) -> torch.utils.data.DataLoader:
    """A DataLoader over a row dataset: map-style with the batch plan ``batches``, iterable-style
    with its own batches (``batch_size=None``). Its processes keep batch buffers in their heap
    (storebench.loaders.heap). ``persistent``: the workers outlive an epoch (``close_loader`` ends them)."""
    keep_batch_buffers()
    extra = {}
    if workers:
        extra["persistent_workers"] = persistent
        extra["timeout"] = WORKER_TIMEOUT_S
        extra["worker_init_fn"] = worker_init
        if prefetch_factor:
            extra["prefetch_factor"] = prefetch_factor
        if start_method:
            extra["multiprocessing_context"] = worker_context(start_method)
    if isinstance(dataset, RowIterableDataset):
        return torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers, **extra)
    return torch.utils.data.DataLoader(dataset, batch_sampler=batches, num_workers=workers,
                                       collate_fn=dataset.collate_fn, **extra)


@dataclass
class Epoch:
    seconds: float  # iterator creation (workers start, unless they persist) to the last batch
    rows: int
    batches: int
    cpu_seconds: float  # this process and its workers

    @classmethod
    def mean(cls, epochs: list["Epoch"]) -> "Epoch":
        """The mean epoch of several back-to-back epochs (one timed repeat)."""
        return cls(float(np.mean([e.seconds for e in epochs])), epochs[0].rows, epochs[0].batches,
                   float(np.mean([e.cpu_seconds for e in epochs])))


def run_epoch(loader) -> Epoch:
    """Iterate ``loader`` once; every row must arrive exactly once. The CPU time of persistent workers
    is read from /proc while they live; other workers' once they are joined."""
    import resource

    def children_cpu():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    dataset = loader.dataset
    persistent = loader.num_workers > 0 and loader.persistent_workers
    delivered = []
    workers0 = _workers_cpu(loader._iterator) if persistent else 0.0
    cpu0, child0, start = time.process_time(), children_cpu(), time.perf_counter()
    iterator = iter(loader)
    for batch in iterator:
        delivered.append(batch["row"].numpy())
    seconds = time.perf_counter() - start
    workers = _workers_cpu(iterator) - workers0 if persistent else 0.0
    del iterator  # joins non-persistent workers, so their CPU time is counted
    batches = len(delivered)
    seen = np.bincount(np.concatenate(delivered) if delivered else np.zeros(0, np.int64),
                       minlength=len(dataset.fingerprints))
    if len(seen) > len(dataset.fingerprints):
        raise VerificationError(f"{dataset.source.name}: rows beyond the dataset's {len(dataset.fingerprints)} delivered")
    if not (seen == 1).all():
        raise VerificationError(f"{dataset.source.name}: {int((seen == 0).sum())} rows never delivered, "
                                f"{int((seen > 1).sum())} delivered more than once")
    return Epoch(seconds, int(seen.sum()), batches, time.process_time() - cpu0 + children_cpu() - child0 + workers)


def _workers_cpu(iterator) -> float:
    """User + system CPU seconds of a DataLoader iterator's live worker processes."""
    total = 0
    for worker in getattr(iterator, "_workers", None) or []:
        try:
            fields = open(f"/proc/{worker.pid}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, ValueError, TypeError):
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def measure_epochs(dataset, workers: int, start_method: str | None, batches, policy,
                   make_row: Callable[[int, Epoch, float], dict]) -> tuple[Cell, RepeatPolicy]:
    """One loader whose workers persist across its epochs, measured under ``policy``: a first epoch
    (workers start), a steady one (sets the epochs per repeat; without workers the first epoch is
    the steady one), then repeats of back-to-back epochs. ``policy`` is a RepeatPolicy or a function
    of the steady epoch's seconds giving one (a time-capped policy: fewer repeats for long epochs).
    ``make_row(repeat, mean epoch, startup_seconds)`` makes each repeat's row; the start-up (first
    epoch minus the steady one) is reported apart, never inside a repeat. Returns the cell and the
    policy it was measured under."""
    loader = row_loader(dataset, workers, start_method, batches, persistent=True)
    try:
        first = run_epoch(loader)
        steady = run_epoch(loader) if workers else first
        startup = max(first.seconds - steady.seconds, 0.0) if workers else 0.0
        policy = policy if isinstance(policy, RepeatPolicy) else policy(steady.seconds)
        passes = policy.passes_for(steady.seconds)

        def one_repeat(repeat: int):
            epoch = Epoch.mean([run_epoch(loader) for _ in range(passes)])
            return epoch.seconds, make_row(repeat, epoch, startup)
        return repeat_cell(policy, one_repeat, passes), policy
    finally:
        close_loader(loader)


def close_loader(loader) -> None:
    """End a loader's persistent workers now (not when the garbage collector gets to it)."""
    iterator = getattr(loader, "_iterator", None)
    if iterator is not None and hasattr(iterator, "_shutdown_workers"):
        iterator._shutdown_workers()
    loader._iterator = None


def bare_epoch(dataset, batches=None) -> Epoch:
    """The same reads as one epoch of ``dataset`` (map-style: with the batch plan ``batches``),
    in this process, without decoding, verifying or tensors: the loader's floor."""
    source, start, cpu0 = dataset.source, time.perf_counter(), time.process_time()
    if isinstance(dataset, RowIterableDataset):
        plan = dataset.chunks()
        for chunk in plan:
            source.bare_read_range(*chunk)
    else:
        plan = batches
        for rows in plan:
            source.bare_read(np.asarray(rows, dtype=np.int64))
    return Epoch(time.perf_counter() - start, source.n_rows, len(plan), time.process_time() - cpu0)
