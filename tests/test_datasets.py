import numpy as np
import pytest

from storebench.data import datasets


def test_real_mnist_from_the_idx_files(prepared_mnist):
    data = datasets.load("mnist", prepared_dir=prepared_mnist)
    assert data.images.shape == (60000, 28, 28) and data.images.dtype == np.uint8
    assert sorted(np.unique(data.labels)) == list(range(10)) and not data.synthetic
    assert np.bincount(data.labels)[1] == 6742  # the well-known count of "1"s in MNIST train


def test_read_idx_checks_its_header(tmp_path):
    good = tmp_path / "x-idx1-ubyte"
    good.write_bytes(b"\x00\x00\x08\x01" + (3).to_bytes(4, "big") + bytes([1, 2, 3]))
    assert datasets.read_idx(good).tolist() == [1, 2, 3]
    short = tmp_path / "short"
    short.write_bytes(b"\x00\x00\x08\x01" + (5).to_bytes(4, "big") + bytes([1]))
    with pytest.raises(ValueError, match="header says"):
        datasets.read_idx(short)


def test_missing_dataset_says_how_to_get_it(tmp_path):
    with pytest.raises(datasets.DatasetMissing, match="make data"):
        datasets.load_mnist_raw(tmp_path)
    with pytest.raises(datasets.DatasetMissing, match="dvc repro prepare"):
        datasets.load("mnist", prepared_dir=tmp_path)


def test_unknown_dataset_lists_valid_ones():
    with pytest.raises(ValueError, match="valid datasets: cifar10, mnist"):
        datasets.load("imagenet")


def test_head_refuses_more_than_there_is():
    with pytest.raises(ValueError, match="has 10 samples"):
        datasets.synthetic(10).head(11)
