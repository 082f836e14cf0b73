"""Putting a dataset into a store, and reading requests back verified.

A reader turns a workload's request into the store calls that serve it (``fetch``, the
part that is timed), checks what came back against what was written (``verify``), and
decodes it into samples (``decode``, timed apart). Object stores hold encoded objects
whose CRC-32 was recorded at ingest; array stores hold tensors compared element-wise
with the source arrays.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
from storebench.core.progress import tqdm

from storebench.data.datasets import Dataset
from storebench.data.formats import Format, n_objects, pack
from storebench.stores import ArrayStore, Store
from storebench.data.workloads import Request


class VerificationError(AssertionError):
    """A store returned bytes that differ from what was written."""


class NotSupported(Exception):
    """The store has no way to serve this request shape (e.g. a full-set read)."""


@dataclass(frozen=True)
class Fetched:
    n_samples: int
    n_bytes: int  # bytes read: the objects received, or for an array store the whole chunks its read touched
    needed_bytes: int  # bytes of the samples the request asked for


class ObjectReader:
    """Reads encoded objects (``fmt``, ``samples_per_object``) from a bytes store."""

    def __init__(self, store: Store, fmt: Format, samples_per_object: int, checksums: np.ndarray,
                 sizes: np.ndarray, n_samples: int):
        self.store, self.format, self.samples_per_object = store, fmt, samples_per_object
        self.checksums, self.sizes, self.n_samples = checksums, sizes, n_samples

    @classmethod
    def ingest(cls, store: Store, dataset: Dataset, fmt: Format, samples_per_object: int,
               batch: int = 512, progress: bool = True) -> "ObjectReader":
        store.clear()
        total = n_objects(len(dataset), samples_per_object)
        checksums = np.zeros(total, dtype=np.uint32)
        sizes = np.zeros(total, dtype=np.int64)
        pending = []
        bar = tqdm(total=total, desc=f"ingest {store.name} ({fmt.name}, {samples_per_object}/object)",
                   unit="obj", disable=not progress, leave=False, delay=2)
        for key, value in pack(dataset.images, dataset.labels, fmt, samples_per_object):
            checksums[key], sizes[key] = zlib.crc32(value), len(value)
            pending.append((key, value))
            if len(pending) == batch:
                store.put_many(pending)
                bar.update(len(pending))
                pending = []
        store.put_many(pending)
        bar.update(len(pending))
        bar.close()
        store.flush()
        return cls(store, fmt, samples_per_object, checksums, sizes, len(dataset))

    # -- the timed part: call(request) gives (function, argument) to time as function(argument)
    def call(self, request: Request, full: bool = False):
        if full:
            return self._fetch_full, request.keys
        if len(request.keys) == 1:
            return self.store.get, request.keys[0]
        return self.store.get_many, request.keys

    def _fetch_full(self, keys):
        caps = self.store.capabilities
        if caps.full_scan:
            return [value for _, value in self.store.scan()]
        if caps.native_multi_get:
            return self.store.get_many(keys)
        raise NotSupported(f"{self.store.name} has no full-set read (no scan, no native multi-get)")

    # -- checked and decoded outside the timed part --------------------------------------------
    def verify(self, request: Request, payload) -> Fetched:
        keys = request.objects
        if isinstance(payload, bytes):  # a single get
            payload = [payload]
        if len(payload) != len(keys):
            raise VerificationError(f"{self.store.name}: asked for {len(keys)} objects, got {len(payload)}")
        received = 0
        for key, value in zip(keys.tolist(), payload):
            if zlib.crc32(value) != self.checksums[key]:
                raise VerificationError(f"{self.store.name}: object {key} differs from what was written "
                                        f"(CRC-32 mismatch, {len(value)} bytes vs {self.sizes[key]} written)")
            received += len(value)
        needed = _needed_bytes(request, self.sizes, self.samples_per_object, self.n_samples)
        return Fetched(len(request.samples), received, needed)

    def decode(self, request: Request, payload) -> int:
        if isinstance(payload, bytes):
            payload = [payload]
        wanted = set(request.samples.tolist())
        delivered = 0
        for key, value in zip(request.objects.tolist(), payload):
            samples = self.format.decode(value)
            first = key * self.samples_per_object
            delivered += sum(1 for i in range(len(samples)) if first + i in wanted)
        if delivered != len(request.samples):
            raise VerificationError(f"decoded {delivered} of the {len(request.samples)} requested samples")
        return delivered


def _needed_bytes(request: Request, sizes: np.ndarray, samples_per_object: int, n_samples: int) -> int:
    """Bytes of the requested samples, attributing each object's bytes evenly to its samples."""
    objects = request.samples // samples_per_object
    counts = np.minimum(samples_per_object, n_samples - objects * samples_per_object)
    return int(round(float(np.sum(sizes[objects] / counts))))


class ArrayReader:
    """Reads decoded tensors by sample index from an array-native store. Its objects are the store's
    chunks along the sample axis (``samples_per_object`` = the store's ``samples_per_chunk``): a read
    fetches the whole chunks holding the samples it asks for (uncompressed chunks: the bytes of their
    files), which is what ``verify`` counts as read."""

    def __init__(self, store: ArrayStore, dataset: Dataset):
        self.store, self.dataset = store, dataset
        self.format, self.samples_per_object = None, store.samples_per_chunk
        self.sample_bytes = int(dataset.images[0].nbytes + dataset.labels[:1].nbytes) if len(dataset) else 0

    @classmethod
    def ingest(cls, store: ArrayStore, dataset: Dataset, progress: bool = True) -> "ArrayReader":
        if progress:
            print(f"ingest {store.name}: {len(dataset)} samples as arrays", flush=True)
        store.write(dataset.images, dataset.labels)
        store.flush()
        return cls(store, dataset)

    def call(self, request: Request, full: bool = False):
        if full:
            return (lambda _: self.store.read_all()), None
        return self.store.read, request.samples

    def verify(self, request: Request, payload) -> Fetched:
        images, labels = payload
        samples = request.samples
        if not (np.array_equal(images, self.dataset.images[samples])
                and np.array_equal(labels, self.dataset.labels[samples])):
            raise VerificationError(f"{self.store.name}: tensors differ from what was written")
        chunks = len(np.unique(samples // self.samples_per_object))
        return Fetched(len(samples), chunks * self.samples_per_object * self.sample_bytes,
                       images.nbytes + labels.nbytes)

    def decode(self, request: Request, payload) -> int:
        return len(payload[1])  # already decoded tensors: nothing to do

