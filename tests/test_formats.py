import numpy as np
import pytest

from storebench.data import datasets
from storebench.data.formats import FORMATS, get_format, n_objects, object_samples, pack


@pytest.mark.parametrize("name", sorted(FORMATS))
@pytest.mark.parametrize("samples_per_object", [1, 3, 8])
def test_pack_and_decode_round_trip(name, samples_per_object):
    data = datasets.synthetic(20)
    fmt = get_format(name)
    objects = list(pack(data.images, data.labels, fmt, samples_per_object))
    assert [k for k, _ in objects] == list(range(n_objects(20, samples_per_object)))
    restored = [s for _, blob in objects for s in fmt.decode(blob)]
    assert len(restored) == 20
    for i, (img, lbl) in enumerate(restored):
        assert np.array_equal(img, data.images[i]) and lbl == data.labels[i]


def test_color_images_round_trip():
    rgb = np.random.default_rng(1).integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    for name in FORMATS:
        fmt = get_format(name)
        out = fmt.decode(fmt.encode([(img, 7) for img in rgb]))
        assert all(np.array_equal(a, b) and l == 7 for (a, l), b in zip(out, rgb))


def test_last_object_may_be_short():
    assert list(object_samples(3, 4, 14)) == [12, 13]
    assert n_objects(14, 4) == 4


def test_format_sizes_on_real_mnist(prepared_mnist):
    """Blob is exactly header + label + pixels; PNG compresses MNIST's mostly-black digits below that;
    pickle adds its framing. (The seed's 9x larger raw MNIST on disk is file-system blocks, not bytes.)"""
    data = datasets.load("mnist", 200, prepared_dir=prepared_mnist)
    size = {n: sum(len(b) for _, b in pack(data.images, data.labels, get_format(n), 1)) for n in FORMATS}
    assert size["blob"] == 200 * (16 + 1 + 28 * 28)
    assert size["raw"] < size["blob"] < size["pickle"]


def test_unknown_format_lists_valid_ones():
    with pytest.raises(ValueError, match="valid formats: blob, pickle, raw"):
        get_format("jpeg")


def test_bad_granularity_is_refused():
    data = datasets.synthetic(4)
    with pytest.raises(ValueError, match="samples_per_object"):
        list(pack(data.images, data.labels, get_format("blob"), 0))
