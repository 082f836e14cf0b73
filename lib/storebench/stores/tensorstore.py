"""TensorStore, in two layouts.

- ``tensorstore``: its key-value layer (``kvstore`` on the ``file`` driver), one entry per
  object; a batch is every read issued at once and awaited together (futures).
- ``tensorstore-zarr``: array-native: a zarr uint8 image array chunked along samples
  (``samples_per_chunk`` per chunk, one file each) and a zarr label array chunked alike, read by
  index (outer indexing) or in full.
"""
from __future__ import annotations

import shutil

import numpy as np
import tensorstore as ts

from storebench.stores.base import ArrayStore, Capabilities, Store, check_key, package_version


def _key(key) -> bytes:
    return b"%012d" % check_key(key)  # zero-padded: byte order = numeric order


class TensorStoreKvStore(Store):
    name = "tensorstore"
    capabilities = Capabilities(native_multi_get=True, full_scan=False, in_memory_only=False)
    client_package = "tensorstore"

    def __init__(self, root):
        super().__init__(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._open()

    def _open(self):
        self.kv = ts.KvStore.open({"driver": "file", "path": str(self.root) + "/"}).result()

    def put_many(self, items):
        with ts.Transaction() as txn:
            store = self.kv.with_transaction(txn)
            for key, value in items:
                store.write(_key(key), value)

    def get(self, key):
        result = self.kv.read(_key(key)).result()
        if result.state != "value":
            raise KeyError(key)
        return result.value

    def get_many(self, keys):
        futures = [self.kv.read(_key(k)) for k in keys]
        values = []
        for key, future in zip(keys, futures):
            result = future.result()
            if result.state != "value":
                raise KeyError(key)
            values.append(result.value)
        return values

    def scan(self):
        for raw in sorted(self.kv.list().result()):
            yield int(raw), self.kv.read(raw).result().value

    def clear(self):
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)
        self._open()

    def reopen(self):
        self._open()  # a new KvStore handle has an empty cache pool

    def system_version(self):
        return f"TensorStore {package_version('tensorstore')} (kvstore/file)"


class TensorStoreZarrStore(ArrayStore):
    name = "tensorstore-zarr"
    capabilities = Capabilities(native_multi_get=True, full_scan=True, in_memory_only=False, array_native=True)
    client_package = "tensorstore"

    def __init__(self, root, samples_per_chunk: int = 64):
        super().__init__(root, samples_per_chunk)
        self.images = self.labels = None
        if (self.root / "images" / ".zarray").exists():
            self._open()

    def _spec(self, name, **extra):
        return {"driver": "zarr", "kvstore": {"driver": "file", "path": str(self.root / name)}, **extra}

    def _open(self):
        self.images = ts.open(self._spec("images"), open=True).result()
        self.labels = ts.open(self._spec("labels"), open=True).result()

    def write(self, images, labels):
        self.clear()
        self.root.mkdir(parents=True, exist_ok=True)
        n = len(images)
        chunk = min(self.samples_per_chunk, n)
        img = ts.open(self._spec("images", metadata={"shape": list(images.shape), "dtype": "|u1", "compressor": None,
                                                      "chunks": [chunk, *images.shape[1:]]}), create=True).result()
        lbl = ts.open(self._spec("labels", metadata={"shape": [n], "dtype": "|u1", "compressor": None,
                                                      "chunks": [chunk]}), create=True).result()
        img.write(np.ascontiguousarray(images, dtype=np.uint8)).result()
        lbl.write(np.ascontiguousarray(labels, dtype=np.uint8)).result()
        self._open()

    def read(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        if self.images is None or len(indices) and (indices.min() < 0 or indices.max() >= self.images.shape[0]):
            raise IndexError(f"sample index out of range for {self.name}")
        images = self.images[indices].read()
        labels = self.labels[indices].read()
        return images.result(), labels.result()

    def read_all(self):
        images, labels = self.images.read(), self.labels.read()
        return images.result(), labels.result()

    def clear(self):
        self.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def reopen(self):
        self.close()
        if (self.root / "images" / ".zarray").exists():
            self._open()

    def close(self):
        self.images = self.labels = None

    def system_version(self):
        return f"TensorStore {package_version('tensorstore')} (zarr v2, uncompressed)"
