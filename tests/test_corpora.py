"""Seed 001's text and graph corpora from the real mirror: checksums, counts, exact bytes, scaling."""
import gzip

import numpy as np
import pytest

from storebench.data import samples
from storebench.data.datasets import corpora
from storebench.data.datasets import DatasetMissing, datasets_mirror


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpora")
    for name in corpora.MIRROR_DIRS:
        corpora.fetch(name, out)
    return out


def test_sentiment140_holds_every_tweet_with_its_label(data_dir):
    corpus = corpora.load_sentiment140_raw(data_dir)
    assert len(corpus) == 100_000 and np.bincount(corpus.labels).tolist() == [50_000, 50_000]
    with gzip.open(datasets_mirror() / "sentiment140-sample" / "positive.txt.gz", "rb") as lines:
        first_positive = next(lines).rstrip(b"\n")
    where = [i for i in range(len(corpus)) if corpus.texts[i] == first_positive]
    assert where and all(corpus.labels[i] == corpora.POSITIVE for i in where)
    assert corpus.labels[:100].min() == 0 and corpus.labels[:100].max() == 1  # shuffled, not grouped by label


def test_fb15k237_triples_map_back_to_the_file(data_dir):
    graph = corpora.load_fb15k237_raw(data_dir)
    assert graph.triples.shape == (272_115, 3)
    assert len(graph.relations) == 237 and len(graph.entities) <= 14_541
    with gzip.open(datasets_mirror() / "fb15k-237" / "train.txt.gz", "rt") as lines:
        for n, line in enumerate(lines):
            if n in (0, 1000, 272_114):
                head, relation, tail = line.rstrip("\n").split("\t")
                h, r, t = graph.triples[n]
                assert (graph.entities[h], graph.relations[r], graph.entities[t]) == (head, relation, tail)


def test_a_missing_mirror_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("STOREBENCH_DATASETS_URL", "http://127.0.0.1:1")  # the public route unreachable, offline
    monkeypatch.setenv("STOREBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DatasetMissing, match="on neither route(.|\n)*nowhere"):
        corpora.fetch("fb15k237", tmp_path / "data", mirror=tmp_path / "nowhere")
    with pytest.raises(DatasetMissing, match="datasets fetch sentiment140"):
        corpora.load_sentiment140_raw(tmp_path)
    with pytest.raises(ValueError, match="valid: sentiment140, fb15k237"):
        corpora.fetch("cifar100", tmp_path)


def test_a_corrupted_mirror_file_is_refused(tmp_path):
    mirror = tmp_path / "mirror" / "fb15k-237"
    mirror.mkdir(parents=True)
    (mirror / "train.txt.gz").write_bytes(b"not the real file")
    with pytest.raises(RuntimeError, match="SHA-256"):
        corpora.fetch("fb15k237", tmp_path / "data", mirror=tmp_path / "mirror")
    assert not (tmp_path / "data" / "fb15k237" / "train.txt.gz").exists()


def test_ragged_bytes_round_trip_and_concatenation_scaling():
    texts = [b"", b"a", "caf\u00e9".encode(), b"x" * 300]
    ragged = samples.RaggedBytes.from_list(texts)
    assert [ragged[i] for i in range(len(ragged))] == texts
    scaled = samples.scale_by_concatenation({"texts": ragged, "labels": np.arange(4)}, 3)
    assert [scaled["texts"][i] for i in range(12)] == texts * 3
    assert scaled["labels"].tolist() == list(range(4)) * 3
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="scale factor"):
            samples.scale_by_concatenation({"labels": np.arange(4)}, bad)
