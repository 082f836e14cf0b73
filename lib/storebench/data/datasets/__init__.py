"""Every dataset the suite reads, in one room: where its raw files come from (pinned digests), how
they are prepared, and one command line (``storebench.data.datasets.sources``) that obtains and
prepares them.

Raw files live under ``data/<name>`` (tracked by ``data.dvc``); ``prepare`` turns them into
``prepared/<name>.npz`` (the pipeline's prepare stage).

    python -m storebench.data.datasets list
    python -m storebench.data.datasets fetch [NAME ...]     # all when no name is given
    python -m storebench.data.datasets prepare NAME ...

One module per source family: ``images`` (MNIST, CIFAR-10), ``corpora`` (Sentiment140,
FB15k-237), ``imagenet`` (the real ImageNet sample and its replicated tiers); ``mirror`` holds the
checked copy from the offline mirror and :class:`DatasetMissing`; ``routes`` every file's public route
(data), ``download`` the HTTP client, ``builds`` how downloads become the files, ``obtain`` the fetch
order (mirror, else public route); ``sources`` the registry. This
package itself exposes only the image datasets' API, so an experiment that reads MNIST does not
depend on the text corpora. Adding a dataset: docs/adding-a-dataset.md.
"""
from __future__ import annotations

from storebench.data.datasets.images import Dataset, load, synthetic
from storebench.data.datasets.mirror import DatasetMissing, datasets_mirror, sha256

__all__ = ["Dataset", "DatasetMissing", "datasets_mirror", "load", "sha256", "synthetic"]
