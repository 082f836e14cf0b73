"""Seed 001's text and graph workloads: from the offline mirror (../shared/datasets) or, where it
lacks them, their public routes (``routes.py``: GitHub files at pinned commits), pinned SHA-256.

- ``sentiment140``: the Sentiment140 sample: 50,000 positive + 50,000 negative tweets (the
  distant-supervision labels of the mirror's two files), each tweet's original bytes.
- ``fb15k237``: FB15k-237's 272,115 training triples (head, relation, tail) as integer ids, with
  the entity (Freebase MID) and relation vocabularies in first-seen order.

The sample's two files are gzips of geraldzakwan/iykra-sentiment-analysis's
``data/tweets_100k/{positive,negative}.txt``; FB15k-237's text train split is rebuilt from
thunlp/OpenKE's id files. The papers' full releases (1.6M tweets; Microsoft's FB15k-237) are
declared in ``routes.REFERENCE_ARCHIVES`` without a pin yet.

Tweets are held as :class:`storebench.data.samples.RaggedBytes` (one byte buffer plus offsets).
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from storebench import paths
from storebench.data.datasets.mirror import DatasetMissing, complete, missing_hint
from storebench.data.datasets.obtain import obtain
from storebench.data.samples import RaggedBytes, Samples
from storebench.paths import DATA_DIR

SENTIMENT140_FILES = {
    "positive.txt.gz": "0386ffaaac3f040691de7a314d9d0c5febd16ea6dffd6a26ae7e4a30a6ecdcf2",
    "negative.txt.gz": "73d1c788520ee10f70ef70d3ba4228d5fd2f99a37978a17279905658beabcd97",
}
FB15K237_FILES = {"train.txt.gz": "2748477d4fedf097fa7886f60ba41d501d53bea9e9d603e94a90be9c49d12f7e"}
MIRROR_DIRS = {"sentiment140": ("sentiment140-sample", SENTIMENT140_FILES), "fb15k237": ("fb15k-237", FB15K237_FILES)}
SENTIMENT140_ORDER_SEED = 2009  # the mirror is grouped by label: one fixed shuffle, as for CIFAR-10
POSITIVE, NEGATIVE = 1, 0


@dataclass(frozen=True)
class TextCorpus:
    name: str
    texts: RaggedBytes
    labels: np.ndarray  # uint8: 1 positive, 0 negative

    def __len__(self) -> int:
        return len(self.texts)


@dataclass(frozen=True)
class TripleGraph:
    name: str
    triples: np.ndarray  # (n, 3) int32: head, relation, tail ids
    entities: np.ndarray  # entity id -> Freebase MID (str)
    relations: np.ndarray  # relation id -> relation path (str)

    def __len__(self) -> int:
        return len(self.triples)


def fetch(name: str, data_dir: Path = DATA_DIR, mirror: Path | None = None) -> Path:
    """``name``'s files into ``data_dir/name``, from the mirror or the public route (``obtain``), checked."""
    subdir, files = _mirror_spec(name)
    return obtain(name, subdir, files, Path(data_dir), mirror)


def load_sentiment140_raw(data_dir: Path = DATA_DIR) -> TextCorpus:
    """The 100,000 tweets, each line's bytes without its newline, shuffled once with a fixed seed;
    labels 1 = positive, 0 = negative."""
    folder = _present(Path(data_dir) / "sentiment140", "sentiment140")
    texts, labels = [], []
    for file, label in (("positive.txt.gz", POSITIVE), ("negative.txt.gz", NEGATIVE)):
        with gzip.open(folder / file, "rb") as lines:
            for line in lines:
                texts.append(line.rstrip(b"\n"))
                labels.append(label)
    order = np.random.default_rng(SENTIMENT140_ORDER_SEED).permutation(len(texts))
    return TextCorpus("sentiment140", RaggedBytes.from_list([texts[i] for i in order]),
                      np.array(labels, dtype=np.uint8)[order])


def load_fb15k237_raw(data_dir: Path = DATA_DIR) -> TripleGraph:
    """The training triples in file order, ids assigned in first-seen order."""
    folder = _present(Path(data_dir) / "fb15k237", "fb15k237")
    entities: dict[str, int] = {}
    relations: dict[str, int] = {}
    rows = []
    with gzip.open(folder / "train.txt.gz", "rt", encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise ValueError(f"{folder / 'train.txt.gz'} line {number}: expected head<TAB>relation<TAB>tail")
            head, relation, tail = parts
            rows.append((entities.setdefault(head, len(entities)), relations.setdefault(relation, len(relations)),
                         entities.setdefault(tail, len(entities))))
    return TripleGraph("fb15k237", np.array(rows, dtype=np.int32), np.array(list(entities)), np.array(list(relations)))


def _mirror_spec(name: str) -> tuple[str, dict[str, str]]:
    if name not in MIRROR_DIRS:
        raise ValueError(f"unknown corpus {name!r}; valid: {', '.join(MIRROR_DIRS)}")
    return MIRROR_DIRS[name]


def _present(folder: Path, name: str) -> Path:
    if not complete(folder, _mirror_spec(name)[1]):
        raise DatasetMissing(f"{name} is not in {folder}. {missing_hint(name)}")
    return folder


RAW_LOADERS = {"sentiment140": load_sentiment140_raw, "fb15k237": load_fb15k237_raw}


def prepare(name: str, data_dir: Path = DATA_DIR, out_dir: Path | None = None) -> Path:
    """``prepared/<name>.npz``: the tweets as one byte buffer + offsets + labels, or the triples."""
    _mirror_spec(name)
    raw = RAW_LOADERS[name](Path(data_dir))
    out_dir = Path(out_dir or paths.prepared_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.npz"
    if isinstance(raw, TextCorpus):
        np.savez(path, text_data=raw.texts.data, text_offsets=raw.texts.offsets, label=raw.labels)
    else:
        np.savez(path, triple=raw.triples, entities=raw.entities, relations=raw.relations)
    return path


def load_prepared(name: str, prepared_dir: Path | None = None):
    """``prepared/<name>.npz`` as :class:`storebench.data.samples.Samples`."""
    _mirror_spec(name)
    path = Path(prepared_dir or paths.prepared_dir()) / f"{name}.npz"
    if not path.exists():
        raise DatasetMissing(f"{path} does not exist. Run `make data && dvc repro prepare` "
                             f"(or `python -m storebench.data.datasets prepare {name}`).")
    with np.load(path) as arrays:
        if "text_data" in arrays:
            return Samples(name, "text", {"text": RaggedBytes(arrays["text_data"], arrays["text_offsets"]),
                                          "label": arrays["label"]})
        return Samples(name, "graph", {"triple": arrays["triple"]})
