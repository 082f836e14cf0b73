import os

import numpy as np
import pytest

from storebench import datasets
from storebench.stores import STORES, get_store_class

BYTE_STORES = [n for n in STORES if not get_store_class(n).capabilities.array_native]
ARRAY_STORES = [n for n in STORES if get_store_class(n).capabilities.array_native]


@pytest.fixture(scope="session")
def prepared_mnist(tmp_path_factory):
    """Real MNIST prepared into a temporary directory (raw files from `make data`)."""
    out = tmp_path_factory.mktemp("prepared")
    datasets.prepare("mnist", out_dir=out)
    os.environ["STOREBENCH_PREPARED"] = str(out)  # for notebooks and pipelines run by the tests
    return out


@pytest.fixture
def small_dataset():
    return datasets.synthetic(300)


@pytest.fixture(params=BYTE_STORES)
def store(request, tmp_path):
    with get_store_class(request.param)(tmp_path / request.param) as s:
        yield s


@pytest.fixture(params=ARRAY_STORES)
def array_store(request, tmp_path):
    with get_store_class(request.param)(tmp_path / request.param) as s:
        yield s


def value_for(key: int, size: int = 700) -> bytes:
    return np.random.default_rng(key).integers(0, 256, size, dtype=np.uint8).tobytes()
