import numpy as np
import pytest

from storebench.data import datasets
from storebench.data.datasets import images, sources


def test_real_mnist_from_the_idx_files(prepared_mnist):
    data = datasets.load("mnist", prepared_dir=prepared_mnist)
    assert data.images.shape == (60000, 28, 28) and data.images.dtype == np.uint8
    assert sorted(np.unique(data.labels)) == list(range(10)) and not data.synthetic
    assert np.bincount(data.labels)[1] == 6742  # the well-known count of "1"s in MNIST train


def test_read_idx_checks_its_header(tmp_path):
    good = tmp_path / "x-idx1-ubyte"
    good.write_bytes(b"\x00\x00\x08\x01" + (3).to_bytes(4, "big") + bytes([1, 2, 3]))
    assert images.read_idx(good).tolist() == [1, 2, 3]
    short = tmp_path / "short"
    short.write_bytes(b"\x00\x00\x08\x01" + (5).to_bytes(4, "big") + bytes([1]))
    with pytest.raises(ValueError, match="header says"):
        images.read_idx(short)


def test_missing_dataset_says_how_to_get_it(tmp_path):
    with pytest.raises(datasets.DatasetMissing, match="make data"):
        images.load_mnist_raw(tmp_path)
    with pytest.raises(datasets.DatasetMissing, match="dvc repro prepare"):
        datasets.load("mnist", prepared_dir=tmp_path)


def test_unknown_dataset_lists_valid_ones():
    with pytest.raises(ValueError, match="valid datasets: cifar10, mnist"):
        datasets.load("imagenet")


def test_head_refuses_more_than_there_is():
    with pytest.raises(ValueError, match="has 10 samples"):
        datasets.synthetic(10).head(11)


def test_one_registry_names_every_dataset_and_refuses_unknown_ones(capsys):
    assert list(sources.SOURCES) == ["mnist", "cifar10", "sentiment140", "fb15k237", "imagenet-sample"]
    with pytest.raises(ValueError, match="valid datasets: mnist, cifar10, sentiment140, fb15k237, imagenet-sample"):
        sources.fetch("cifar100")
    with pytest.raises(ValueError, match="no prepare step"):
        sources.prepare("imagenet-sample")
    sources.main(["list"])
    assert capsys.readouterr().out.count("\n") == len(sources.SOURCES)
    with pytest.raises(SystemExit):
        sources.main(["prepare"])  # prepare needs names


def test_the_pipeline_prepares_exactly_the_datasets_with_a_prepare_step():
    import yaml

    from storebench.paths import ROOT

    stage = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]["prepare"]
    assert stage["foreach"] == [name for name, s in sources.SOURCES.items() if s.prepare]
    assert stage["do"]["cmd"].startswith("python -m storebench.data.datasets prepare")


def test_cifar10_is_the_train_split_then_the_test_split(tmp_path):
    """Prepared from the files `make data` fetched (the PNG mirror, grouped by class, or the official
    archive): the first 50,000 images are exactly the train split (5,000 per class), the last 10,000
    the test split, so a 50,000-sample head is CIFAR-10's training set."""
    sources.prepare("cifar10", out_dir=tmp_path)
    labels = datasets.load("cifar10", prepared_dir=tmp_path).labels
    assert len(labels) == 60_000
    assert (np.bincount(labels[:50_000], minlength=10) == 5_000).all()
    assert (np.bincount(labels[50_000:], minlength=10) == 1_000).all()
    assert len(set(labels[:100].tolist())) > 5  # shuffled within each split, not grouped by class
