"""Seed 002's eleven metadata queries (Q1-Q11), each defined once.

A query is a conjunction of conditions over the metadata columns ``label`` (the class's first
WordNet lemma, spaces as ``_``, e.g. ``tiger_cat``), ``bytes``, ``width`` and ``height``, plus an
optional limit (the N smallest keys, so that every layout returns the same images). From the one
definition come a pandas mask (L1/L2's client index), a SQL ``WHERE`` clause (DuckDB on L3,
Lance's filter on L4) and the count expected for a tier.

Sizes are in bytes with KB = 1,000 bytes.

The predicates keep the seed's form; five numeric thresholds differ from the seed's, each set once
so that our mini tier (storebench.data.imagetiers: 13 images per class, 13,000 in all) selects the
seed's count at mini, in the middle of a gap between two images so that a re-encoding by another
libjpeg moves no image across it: Q6 562 KB (the seed's 500 KB: 118 images here, the seed's 86),
Q7 975 px (1024: 114, the seed's 133), Q9 and Q10 51 KB (100 KB: 15 and 6, the seed's 6 and 1),
Q11 400 px (512: none, the seed's 1). The seed's images of a class are 13 different photos; ours
are one photo re-encoded at drawn scales and qualities, so a class's sizes spread differently and
a class-and-size query needs its own threshold to select the seed's share. ``seed_predicate``
keeps the seed's wording of each changed condition; the counts table prints both.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

COLUMNS = ("label", "bytes", "width", "height")
KB = 1000


@dataclass(frozen=True)
class Condition:
    column: str     # a metadata column (or key), or "aspect" (width / height)
    op: str         # "=", "in", "like-suffix", ">=", "<", ">"
    value: object

    def mask(self, meta: pd.DataFrame) -> np.ndarray:
        values = meta["width"] / meta["height"] if self.column == "aspect" else meta[self.column]
        if self.op == "=":
            return (values == self.value).to_numpy()
        if self.op == "in":
            return values.isin(self.value).to_numpy()
        if self.op == "like-suffix":
            return values.str.endswith(self.value).to_numpy()
        return {">=": values >= self.value, "<": values < self.value, ">": values > self.value}[self.op].to_numpy()

    def may_match(self, low, high) -> bool:
        """Whether a row group whose ``column`` lies in [low, high] (its min/max statistics) may hold a
        match: what a reader that prunes by statistics must read. A suffix match cannot be pruned so."""
        if self.op == "=":
            return low <= self.value <= high
        if self.op == "in":
            return any(low <= v <= high for v in self.value)
        if self.op == "like-suffix":
            return True
        return {">=": high >= self.value, "<": low < self.value, ">": high > self.value}[self.op]

    def sql(self) -> str:
        column = "CAST(width AS DOUBLE) / CAST(height AS DOUBLE)" if self.column == "aspect" else self.column
        if self.op == "=":
            return f"{column} = {_literal(self.value)}"
        if self.op == "in":
            return f"{column} IN ({', '.join(_literal(v) for v in self.value)})"
        if self.op == "like-suffix":
            return f"{column} LIKE {_literal('%' + self.value)}"
        return f"{column} {self.op} {_literal(self.value)}"


def _literal(value) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


@dataclass(frozen=True)
class Query:
    name: str
    kind: str                  # the seed's "Type" column
    description: str           # the seed's wording
    conditions: tuple[Condition, ...]
    fixed_limit: int | None = None      # Q1: one image at every tier
    limit_per_mini: int | None = None   # Q2: N = 10 at mini (of 13 lemons), 100 at medium, 1000 at full
    seed_predicate: str | None = None   # the seed's condition where our threshold differs (see the module doc)

    def limit(self, copies: int) -> int | None:
        """How many images (the smallest keys) the query returns at most, for a tier of ``copies``
        replicas per image: Q2 keeps the seed's share of a class (10 of the 13 at mini)."""
        if self.fixed_limit is not None:
            return self.fixed_limit
        if self.limit_per_mini is None:
            return None
        return max(1, math.ceil(copies * self.limit_per_mini / 13))

    def select(self, meta: pd.DataFrame, copies: int) -> pd.DataFrame:
        """The selected rows of ``meta`` (columns key + COLUMNS), in key order."""
        mask = np.ones(len(meta), dtype=bool)
        for condition in self.conditions:
            mask &= condition.mask(meta)
        chosen = meta[mask].sort_values("key")
        limit = self.limit(copies)
        return chosen.head(limit) if limit is not None else chosen

    def where(self) -> str:
        return " AND ".join(c.sql() for c in self.conditions)


QUERIES: dict[str, Query] = {q.name: q for q in (
    Query("Q1", "One Sample", "one image of streetcar", (Condition("label", "=", "streetcar"),), fixed_limit=1),
    Query("Q2", "Batch Fetch", "N images of lemon (N = 10 mini, 100 medium, 1000 full)",
          (Condition("label", "=", "lemon"),), limit_per_mini=10),
    Query("Q3", "One Class", "images of cello", (Condition("label", "=", "cello"),)),
    Query("Q4", "Regex Match", "labels LIKE %snake", (Condition("label", "like-suffix", "snake"),)),
    Query("Q5", "Fan-out", "images of Old_English_sheepdog, giant_panda and water_buffalo",
          (Condition("label", "in", ("Old_English_sheepdog", "giant_panda", "water_buffalo")),)),
    Query("Q6", "File size Filter", "images of at least 562 KB (the seed: 500 KB)",
          (Condition("bytes", ">=", 562 * KB),), seed_predicate="bytes >= 500 KB"),
    Query("Q7", "Resolution Filter", "width and height both at least 975 (the seed: 1024)",
          (Condition("width", ">=", 975), Condition("height", ">=", 975)),
          seed_predicate="width >= 1024 AND height >= 1024"),
    Query("Q8", "Cross-column", "width / height greater than 1.5", (Condition("aspect", ">", 1.5),)),
    Query("Q9", "Multi-label Filter", "canoe and starfish smaller than 51 KB (the seed: 100 KB)",
          (Condition("label", "in", ("canoe", "starfish")), Condition("bytes", "<", 51 * KB)),
          seed_predicate="bytes < 100 KB"),
    Query("Q10", "Selective Filter", "tiger_cat smaller than 51 KB (the seed: 100 KB)",
          (Condition("label", "=", "tiger_cat"), Condition("bytes", "<", 51 * KB)), seed_predicate="bytes < 100 KB"),
    Query("Q11", "All-column Filter", "bagel under 200 KB with width and height at least 400 (the seed: 512)",
          (Condition("label", "=", "bagel"), Condition("bytes", "<", 200 * KB), Condition("width", ">=", 400),
           Condition("height", ">=", 400)), seed_predicate="width >= 512 AND height >= 512"),
)}


# Not the seed's: a query that selects nothing and needs no image bytes (keys are >= 0), run first by
# each client to measure its start-up footprint (engine, connection pools, footers).
FOOTPRINT = Query("Q0", "Footprint", "no image (key < 0): what a client needs before any data",
                  (Condition("key", "<", 0),))


def get_queries(names) -> list[Query]:
    unknown = [n for n in names if n not in QUERIES and n != FOOTPRINT.name]
    if unknown:
        raise ValueError(f"unknown query name(s) {unknown}; valid: {', '.join(QUERIES)}")
    return [FOOTPRINT if n == FOOTPRINT.name else QUERIES[n] for n in names]
