"""Which keys a client asks for, request by request (no timing, no stores here).

Access patterns of seed 003 (Sec 4.4):
- ``sequential``: samples in index order, ``samples_per_request`` per request (1 = "Seq, 1");
- ``full``: the whole dataset in one request ("Seq, Full");
- ``random``: sample indices shuffled with a fixed numpy seed, then sliced into requests of
  ``samples_per_request`` (mini-batch SGD);
- ``random-objects``: the objects shuffled instead, their samples kept together (what coarse
  objects force on a loader that fetches whole objects: shard-level shuffling).

A request names the samples the client needs and the objects it must fetch to get them.
When objects hold several samples, a request may fetch bytes it does not need: the plan
records that, so the flexibility cost of coarse objects is measurable.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from storebench.data.formats import n_objects

ACCESS_PATTERNS = ("sequential", "full", "random", "random-objects")


@dataclass(frozen=True)
class Request:
    samples: np.ndarray  # sample indices delivered to the consumer
    objects: np.ndarray  # distinct object keys fetched, in first-needed order
    keys: list  # the same keys as Python ints, made before timing starts


@dataclass(frozen=True)
class Workload:
    access: str
    samples_per_request: int  # 0 for "full"
    samples_per_object: int
    n_samples: int
    seed: int = 0

    def __post_init__(self):
        if self.access not in ACCESS_PATTERNS:
            raise ValueError(f"unknown access pattern {self.access!r}; valid: {', '.join(ACCESS_PATTERNS)}")
        if self.access != "full" and self.samples_per_request < 1:
            raise ValueError(f"samples_per_request must be >= 1 for {self.access!r} access")
        if self.samples_per_object < 1 or self.n_samples < 1:
            raise ValueError("samples_per_object and n_samples must be >= 1")

    @property
    def label(self) -> str:
        return "full" if self.access == "full" else f"{self.access}-{self.samples_per_request}"

    def sample_order(self) -> np.ndarray:
        order = np.arange(self.n_samples)
        if self.access == "random":
            np.random.default_rng(self.seed).shuffle(order)
        elif self.access == "random-objects":
            objects = np.random.default_rng(self.seed).permutation(self.n_objects())
            starts = objects * self.samples_per_object
            order = np.concatenate([np.arange(s, min(s + self.samples_per_object, self.n_samples)) for s in starts])
        return order

    def requests(self) -> list[Request]:
        order = self.sample_order()
        size = self.n_samples if self.access == "full" else self.samples_per_request
        return [_request(order[i:i + size], self.samples_per_object) for i in range(0, self.n_samples, size)]

    def n_objects(self) -> int:
        return n_objects(self.n_samples, self.samples_per_object)


def _request(samples: np.ndarray, samples_per_object: int) -> Request:
    objects = samples // samples_per_object
    _, first = np.unique(objects, return_index=True)
    objects = objects[np.sort(first)]
    return Request(samples=samples, objects=objects, keys=objects.tolist())
