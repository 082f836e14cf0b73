"""Data loaders over any store of the registry, one room per loader kind.

- ``opener``: a picklable way to open a store in each process that reads (workers included).
- ``mapstyle``: image samples, map-style, per-sample ``__getitem__`` vs batched ``__getitems__``
  (seed 003's training experiment).
- ``rows``: rows of any modality (storebench.data.samples) read R rows per key: a map-style dataset
  whose batch is one multi-read and one decode, and an iterable dataset that prefetches PF rows
  per request and shards its chunks over DataLoader workers (seed 001).
"""
from storebench.loaders.mapstyle import (LOADERS, MNIST_MEAN, MNIST_STD, BatchedStoreMapDataset, StoreMapDataset, batch_plan,
                       batch_to_tensors, data_loader, make_dataset, to_tensors)
from storebench.loaders.opener import CLEAN_START_SYSTEMS, SPAWN_SYSTEMS, StoreOpener, start_method, worker_context

__all__ = ["CLEAN_START_SYSTEMS", "worker_context", "LOADERS", "MNIST_MEAN", "MNIST_STD", "SPAWN_SYSTEMS", "BatchedStoreMapDataset", "StoreMapDataset",
           "StoreOpener", "batch_plan", "batch_to_tensors", "data_loader", "make_dataset", "start_method",
           "to_tensors"]
