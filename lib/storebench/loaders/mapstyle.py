"""Map-style PyTorch datasets of image samples over any store (seed 003 Sec 5.5 and its future work).

- :class:`StoreMapDataset`: ``__getitem__(i)`` does ONE ``store.get`` per sample, as the paper's
  ``RedisMnist`` did with HGET. The DataLoader then issues concurrent random single reads (one
  per sample), which the paper names as the weakness.
- :class:`BatchedStoreMapDataset`: the same plus ``__getitems__(indices)``, the batched fetch
  hook the DataLoader's map fetcher calls (PyTorch >= 2.2) instead of ``__getitem__`` once per
  index: ONE ``store.get_many`` for the whole batch, the system's native multi-read (HMGET,
  MultiGet, ``$in``, ...), and ONE array conversion for the batch's images (stacked, then
  normalised as one tensor), not one per sample. This is the paper's stated future work.

Both verify every object they receive against the CRC-32 recorded at ingest
(:class:`~storebench.stores.readers.ObjectReader` has them) and raise
:class:`~storebench.stores.readers.VerificationError` on a mismatch, then decode to tensors
(image float32 normalised, shape (C, H, W); label int64) that the default collate stacks.
Each process opens its own store handle (storebench.loaders.opener).
"""
from __future__ import annotations

import zlib

import numpy as np
import torch

from storebench.data.formats import Format, get_format
from storebench.stores.readers import ObjectReader, VerificationError
from storebench.stores import Store
from storebench.loaders.opener import ProcessLocalStore, StoreOpener, worker_context

MNIST_MEAN, MNIST_STD = 0.1307, 0.3081  # the usual MNIST normalisation constants
LOADERS = ("per-sample", "batched")  # __getitem__ only / __getitems__ (one get_many per batch)

# ------------------------------------------------------------------------------- decoding
def to_tensors(image: np.ndarray, label: int) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 (H, W[, C]) image -> float32 (C, H, W) normalised; label -> int64 scalar."""
    x, y = batch_to_tensors(np.asarray(image)[None], np.asarray([label]))
    return x[0], y[0]


def batch_to_tensors(images: np.ndarray, labels: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """uint8 (B, H, W[, C]) images -> float32 (B, C, H, W) normalised, in one array operation; labels -> int64 (B,).
    The conversion runs on the contiguous (B, H, W, C) array; channels-first is a view of it."""
    x = np.asarray(images, dtype=np.float32)
    x *= 1 / (255.0 * MNIST_STD)
    x -= MNIST_MEAN / MNIST_STD
    x = torch.from_numpy(x)
    x = x.unsqueeze(1) if x.ndim == 3 else x.permute(0, 3, 1, 2)
    return x, torch.as_tensor(np.asarray(labels, dtype=np.int64))


def keep_batch(batch):
    """collate_fn for datasets whose ``__getitems__`` already returns the collated batch."""
    return batch


# ------------------------------------------------------------------------------- datasets
class StoreMapDataset(torch.utils.data.Dataset):
    """Map-style dataset: sample ``i`` is read with ONE ``store.get`` of its object."""

    loader = "per-sample"
    collate_fn = None  # the DataLoader's default: stack the samples

    def __init__(self, store: Store | StoreOpener, fmt: Format | str, samples_per_object: int, n_samples: int,
                 checksums: np.ndarray):
        self.handle = ProcessLocalStore(store)
        self.opener = self.handle.opener
        self.format = get_format(fmt) if isinstance(fmt, str) else fmt
        self.samples_per_object, self.n_samples = int(samples_per_object), int(n_samples)
        self.checksums = np.asarray(checksums, dtype=np.uint32)

    @classmethod
    def from_reader(cls, reader: ObjectReader, opener: StoreOpener | None = None) -> "StoreMapDataset":
        """Over the objects ``reader`` ingested (its CRC-32s); ``opener`` defaults to the reader's store."""
        return cls(opener or StoreOpener.of(reader.store), reader.format, reader.samples_per_object,
                   reader.n_samples, reader.checksums)

    @property
    def store(self) -> Store:
        return self.handle.store

    def close(self) -> None:
        self.handle.close()

    def __len__(self) -> int:
        return self.n_samples

    def _check(self, key: int, value: bytes) -> bytes:
        if zlib.crc32(value) != self.checksums[key]:
            raise VerificationError(f"{self.opener.store_class.name}: object {key} differs from what was "
                                    f"written (CRC-32 mismatch, {len(value)} bytes)")
        return value

    def __getitem__(self, index):
        index = int(index)
        if not 0 <= index < self.n_samples:
            raise IndexError(index)
        key = index // self.samples_per_object
        image, label = self.format.decode(self._check(key, self.store.get(key)))[index % self.samples_per_object]
        return to_tensors(image, label)


class BatchedStoreMapDataset(StoreMapDataset):
    """Map-style dataset whose batches are ONE ``store.get_many`` (``__getitems__``) and one
    tensor conversion; it returns per-sample views of the converted batch, which the default
    collate stacks in one operation (so a plain DataLoader works too)."""

    loader = "batched"

    def __getitems__(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        if len(indices) and (indices.min() < 0 or indices.max() >= self.n_samples):
            raise IndexError([int(i) for i in indices if not 0 <= i < self.n_samples])
        spo = self.samples_per_object
        keys = list(dict.fromkeys((indices // spo).tolist()))  # each object once
        values = self.store.get_many(keys)
        if len(values) != len(keys):
            raise VerificationError(f"{self.opener.store_class.name}: asked for {len(keys)} objects, "
                                    f"got {len(values)}")
        decoded = {key: self.format.decode(self._check(key, value)) for key, value in zip(keys, values)}
        picked = [decoded[i // spo][i % spo] for i in indices.tolist()]
        x, y = batch_to_tensors(np.stack([image for image, _ in picked]), np.array([label for _, label in picked]))
        return list(zip(x.unbind(0), y.unbind(0)))


DATASETS = {cls.loader: cls for cls in (StoreMapDataset, BatchedStoreMapDataset)}


def make_dataset(loader: str, reader: ObjectReader, opener: StoreOpener | None = None) -> StoreMapDataset:
    """The dataset for ``loader`` ('per-sample' or 'batched') over what ``reader`` ingested."""
    try:
        cls = DATASETS[loader]
    except KeyError:
        raise ValueError(f"unknown loader {loader!r}; valid: {', '.join(LOADERS)}") from None
    return cls.from_reader(reader, opener)


# A worker that delivers no batch for this long has hung (e.g. a client whose threads did not survive the
# fork that started it) or died unseen (a worker from the forkserver is not this process's child, so only
# this wait notices its death): the epoch fails with the DataLoader's error instead of waiting forever.
WORKER_TIMEOUT_S = 120.0


def data_loader(dataset: StoreMapDataset, batch_sampler, workers: int, start_method: str | None = None,
                **kwargs) -> torch.utils.data.DataLoader:
    """A DataLoader over ``dataset`` with a fixed batch plan (list of index lists)."""
    extra = {}
    if workers:
        extra["persistent_workers"] = False
        extra["timeout"] = WORKER_TIMEOUT_S
        if start_method:
            extra["multiprocessing_context"] = worker_context(start_method)
    kwargs.setdefault("collate_fn", dataset.collate_fn)
    return torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler, num_workers=workers, **extra,
                                       **kwargs)


def batch_plan(n_samples: int, epoch_samples: int, batch_size: int, seed: int) -> list[list[int]]:
    """Shuffled batches of one epoch (fixed seed): every sample at most once per pass over
    the dataset, ``epoch_samples`` in all (several passes if it exceeds ``n_samples``)."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(n_samples) for _ in range(-(-epoch_samples // n_samples))])
    order = order[:epoch_samples].tolist()
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
