"""Splits made from metadata, as seed 004's list manager makes them (its Sec 4.1):

1. read the partitions of ``metadata_by_nat``, then the UUIDs of each (or take an in-memory
   metadata table, for systems without one);
2. aggregate rows into groups by chosen natural keys (e.g. ``original``: the copies of one real
   image), so a group never spans two splits;
3. assign groups to splits: per split and class the target is ``ratio x class total``; groups go
   round robin to the splits, skipping a split the group would overflow in any class; a group
   that fits nowhere (the remainder) goes to the split with most room left (the seed picks a
   random one; most room keeps ratios closer at small scale);
4. per split, take rows round robin across its groups, class by class, until the split's class
   targets are met (with ``balance``: the largest split the available rows allow at that class
   balance; else the split's rows scaled by ``max_samples``).

Splits are lists of UUIDs. A split file (JSON) has a header naming the table, the grouping and
label columns, the ratios, balance and seed, and a fingerprint of the table's UUID set; loading
it against a table whose UUIDs differ raises :class:`SplitMismatch`. ``Splits.epoch(i, e)`` is
split ``i`` reshuffled for epoch ``e``: the same on every rank that has the same seed.

Tolerances (what the property tests hold, over random tables with mixed and single-class groups):
with ``G`` the largest group (rows) and ``N`` the rows used, without ``balance`` every split's share
is within ``G / N`` of its ratio (at most 0.87 G / N was seen over 300 random tables); with
``balance`` every split's class counts are within half a row of ``balance x split size``
(rounding of the class targets), and a split shrinks rather than break the balance.
"""
from __future__ import annotations

import hashlib
import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import pandas as pd

FORMAT = "storebench-splits/1"


class SplitMismatch(ValueError):
    """A split file does not describe the table it is loaded against."""


# ------------------------------------------------------------------------------ metadata sources
class MetadataSource(Protocol):
    name: str  # e.g. "cassandra at 127.0.0.1:9042 seed004_jpeg_200.metadata_by_nat"

    def rows(self, columns: Sequence[str]) -> pd.DataFrame:
        """One row per sample: ``id`` (uuid.UUID) and ``columns``."""


class FrameMetadata:
    """An in-memory metadata table (e.g. ``ImageSet.table``), for systems that keep none."""

    def __init__(self, frame: pd.DataFrame, name: str = "in-memory metadata"):
        self.frame, self.name = frame, name

    def rows(self, columns):
        return self.frame[["id", *dict.fromkeys(c for c in columns if c != "id")]].reset_index(drop=True)


class CassandraMetadata:
    """``metadata_by_nat`` in Cassandra: the list of partitions, then each partition's rows
    (single-partition reads, many in flight), as the seed's list manager reads them."""

    def __init__(self, session, keyspace: str, table: str = "metadata_by_nat", where: str = "cassandra",
                 partition_keys: Sequence[str] = ("original", "label"), in_flight: int = 64):
        self.session, self.keyspace, self.table = session, keyspace, table
        self.partition_keys, self.in_flight = tuple(partition_keys), in_flight
        self.name = f"{where} {keyspace}.{table}"

    def partitions(self) -> list[tuple]:
        keys = ", ".join(self.partition_keys)
        return [tuple(r) for r in self.session.execute(f"SELECT DISTINCT {keys} FROM {self.keyspace}.{self.table}",
                                                       timeout=120)]

    def rows(self, columns):
        from cassandra.concurrent import execute_concurrent_with_args

        columns = list(dict.fromkeys(["id", *columns]))
        where = " AND ".join(f"{k} = ?" for k in self.partition_keys)
        select = self.session.prepare(f"SELECT {', '.join(columns)} FROM {self.keyspace}.{self.table} WHERE {where}")
        results = execute_concurrent_with_args(self.session, select, self.partitions(), concurrency=self.in_flight,
                                               raise_on_first_error=True)
        frame = pd.DataFrame([tuple(row) for _, result in results for row in result], columns=columns)
        return frame


# ------------------------------------------------------------------------------ the splits
def fingerprint(ids) -> str:
    """blake2b-128 of the sorted UUIDs (order-free: the same set gives the same fingerprint)."""
    digest = hashlib.blake2b(digest_size=16)
    for raw in sorted(u.bytes for u in ids):
        digest.update(raw)
    return digest.hexdigest()


@dataclass
class Splits:
    ids: list[list[uuid.UUID]]
    header: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.ids)

    def sizes(self) -> list[int]:
        return [len(s) for s in self.ids]

    def epoch(self, split: int, epoch: int) -> list[uuid.UUID]:
        """Split ``split`` in the order of epoch ``epoch`` (epoch 0: as made; later: reshuffled with the
        split's seed, so every rank that loaded the same file sees the same order)."""
        ids = self.ids[split]
        if epoch == 0:
            return list(ids)
        rng = np.random.default_rng([int(self.header.get("seed") or 0), split, epoch])
        return [ids[i] for i in rng.permutation(len(ids))]

    def save(self, path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"header": self.header, "splits": [[str(u) for u in s] for s in self.ids]}
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(body))
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path, source: MetadataSource | None = None) -> "Splits":
        """The splits of a file; with ``source``, checked against that table (SplitMismatch if the
        table's UUID set differs from the one the splits were made from)."""
        body = json.loads(Path(path).read_text())
        if body.get("header", {}).get("format") != FORMAT:
            found = body.get("header", {}).get("format")
            raise SplitMismatch(f"{path}: not a storebench split file (format {found!r})")
        splits = cls([[uuid.UUID(s) for s in split] for split in body["splits"]], body["header"])
        if source is not None:
            splits.check(source, path)
        return splits

    def check(self, source: MetadataSource, path="splits") -> None:
        head = self.header
        table_ids = source.rows([])["id"].tolist()
        now = fingerprint(table_ids)
        if now == head["fingerprint"]:
            return
        present = set(table_ids)
        missing = sum(u not in present for split in self.ids for u in split)
        raise SplitMismatch(
            f"{path}: made from {head['source']} ({head['n_table']:,} rows, UUID fingerprint {head['fingerprint']}), "
            f"but {source.name} has {len(table_ids):,} rows (fingerprint {now}); {missing:,} of the split's "
            f"{sum(self.sizes()):,} UUIDs are not in it. Make the splits again from this table "
            f"(storebench.data.splits.make_splits) or load them against the table they were made from.")


def make_splits(source: MetadataSource, ratios: Sequence[float], group_by: Sequence[str] = ("original",),
                label: str = "kind", balance: Sequence[float] | None = None, max_samples: int | None = None,
                seed: int = 0) -> Splits:
    """Splits of ``source``'s rows with sizes in ``ratios`` (e.g. [7, 2, 1]), groups by ``group_by``
    never split, classes of ``label`` in proportions ``balance`` (None: as they come)."""
    ratios = np.asarray(ratios, dtype=float)
    if ratios.ndim != 1 or len(ratios) < 1 or (ratios <= 0).any():
        raise ValueError(f"ratios must be positive numbers, got {list(ratios)}")
    ratios = ratios / ratios.sum()
    frame = source.rows([*group_by, label])
    classes = sorted(frame[label].unique().tolist())
    if balance is not None:
        balance = np.asarray(balance, dtype=float)
        if len(balance) != len(classes) or (balance <= 0).any():
            raise ValueError(f"balance needs one positive weight per class of {label!r} ({classes}), "
                             f"got {list(balance)}")
        balance = balance / balance.sum()
    rng = np.random.default_rng(seed)
    groups = _groups(frame, list(group_by), label, classes, rng)
    counts = np.array([[len(per_class) for per_class in g] for g in groups], dtype=np.int64).reshape(-1, len(classes))
    bags = assign_groups(counts, ratios, rng)
    targets = class_targets(counts, bags, ratios, balance, max_samples)
    ids = fill(groups, bags, targets)
    for split in ids:
        rng.shuffle(split)
    header = {
        "format": FORMAT, "source": source.name, "group_by": list(group_by), "label": label,
        "classes": [c if isinstance(c, str) else int(c) for c in classes], "ratios": ratios.tolist(),
        "balance": None if balance is None else balance.tolist(),
        "max_samples": None if max_samples is None else int(max_samples), "seed": int(seed),
        "n_table": len(frame), "fingerprint": fingerprint(frame["id"]), "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "sizes": [len(s) for s in ids],
    }
    return Splits(ids, header)


def _groups(frame, group_by, label, classes, rng) -> list[list[list[uuid.UUID]]]:
    """Groups in a seeded random order, each as per-class lists of UUIDs in a seeded random order.
    Rows are sorted first, so the result does not depend on the order the table returned them in."""
    frame = frame.assign(_id=frame["id"].map(lambda u: u.bytes)).sort_values([*group_by, "_id"])
    class_index = {c: i for i, c in enumerate(classes)}
    groups = []
    for _, rows in frame.groupby(group_by, sort=True):
        per_class = [[] for _ in classes]
        for uid, lab in zip(rows["id"], rows[label]):
            per_class[class_index[lab]].append(uid)
        for ids in per_class:
            rng.shuffle(ids)
        groups.append(per_class)
    return [groups[i] for i in rng.permutation(len(groups))]


def assign_groups(counts: np.ndarray, ratios: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The split of each group (rows of ``counts``: rows per class). Round robin from a random
    split, skipping splits the group would overflow; the remainder to the split with most room."""
    n_splits = len(ratios)
    target = ratios[:, None] * counts.sum(axis=0)[None, :]
    filled = np.zeros_like(target)
    bags = np.full(len(counts), -1)
    current = int(rng.integers(n_splits))
    remainder = []
    for g, row in enumerate(counts):
        for step in range(n_splits):
            s = (current + step) % n_splits
            if (filled[s] + row <= target[s] + 1e-9).all():
                bags[g], filled[s] = s, filled[s] + row
                current = (s + 1) % n_splits
                break
        else:
            remainder.append(g)
    for g in remainder:
        room = (target - filled).sum(axis=1) / np.maximum(target.sum(axis=1), 1e-9)
        s = int(np.argmax(room))
        bags[g], filled[s] = s, filled[s] + counts[g]
    return bags


def class_targets(counts, bags, ratios, balance, max_samples) -> np.ndarray:
    """Rows to take per (split, class)."""
    n_splits = len(ratios)
    available = np.stack([counts[bags == s].sum(axis=0) for s in range(n_splits)]).astype(float)
    total = available.sum() if max_samples is None else min(max_samples, available.sum())
    if balance is None:
        scale = total / max(available.sum(), 1)
        return np.floor(available * scale + 0.5).astype(np.int64)
    # the largest split the available rows allow at this class balance, capped by its share of the total
    size = np.minimum((available / balance[None, :]).min(axis=1), total * ratios)
    return np.minimum(np.floor(size[:, None] * balance[None, :] + 0.5), available).astype(np.int64)


def fill(groups, bags, targets) -> list[list[uuid.UUID]]:
    """Per split and class, rows taken round robin across the split's groups (one from each group
    in turn: the most diverse subset) until the target is met."""
    out = []
    for s, split_targets in enumerate(targets):
        members = [groups[g] for g in np.flatnonzero(bags == s)]
        taken = []
        for c, want in enumerate(split_targets):
            queues = [list(m[c]) for m in members if m[c]]
            got, i = 0, 0
            while got < want and queues:
                i %= len(queues)
                taken.append(queues[i].pop())
                got += 1
                if queues[i]:
                    i += 1
                else:
                    queues.pop(i)
        out.append(taken)
    return out


def split_stats(splits: Splits, metadata: pd.DataFrame, label: str | None = None) -> pd.DataFrame:
    """Rows per split and class (from a metadata frame with ``id`` and ``label``)."""
    label = label or splits.header["label"]
    of = dict(zip(metadata["id"], metadata[label]))
    rows = [(s, of[u]) for s, ids in enumerate(splits.ids) for u in ids]
    table = pd.DataFrame(rows, columns=["split", label]).value_counts().unstack(fill_value=0)
    return table
