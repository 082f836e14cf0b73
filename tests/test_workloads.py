import numpy as np
import pytest

from storebench.data.workloads import Workload

N = 1000


@pytest.mark.parametrize("access", ["sequential", "random", "random-objects", "full"])
@pytest.mark.parametrize("k", [1, 3, 4, 16, 256, 2000])
@pytest.mark.parametrize("spo", [1, 2, 7, 64])
def test_every_sample_exactly_once_per_pass(access, k, spo):
    w = Workload(access, 0 if access == "full" else k, spo, N, seed=42)
    requests = w.requests()
    delivered = np.concatenate([r.samples for r in requests])
    assert len(delivered) == N and np.array_equal(np.sort(delivered), np.arange(N))
    for r in requests:
        assert len(np.unique(r.objects)) == len(r.objects)  # an object is fetched once per request
        assert set(np.unique(r.samples // spo)) == set(r.objects.tolist())  # exactly the objects needed
        assert r.keys == r.objects.tolist()
    if access == "full":
        assert len(requests) == 1
    else:
        assert all(len(r.samples) == k for r in requests[:-1]) and 1 <= len(requests[-1].samples) <= k


def test_random_order_is_fixed_by_seed_and_differs_from_sequential():
    a = Workload("random", 16, 1, N, seed=42).sample_order()
    b = Workload("random", 16, 1, N, seed=42).sample_order()
    c = Workload("random", 16, 1, N, seed=43).sample_order()
    assert np.array_equal(a, b) and not np.array_equal(a, c) and not np.array_equal(a, np.arange(N))


def test_random_matches_the_seed_papers_recipe():
    """Shuffle indices with a fixed numpy seed, then slice into batches (seed 003, Sec 4.4)."""
    order = np.arange(N)
    np.random.default_rng(7).shuffle(order)
    got = [r.samples for r in Workload("random", 10, 1, N, seed=7).requests()]
    assert all(np.array_equal(g, order[i * 10:(i + 1) * 10]) for i, g in enumerate(got))


@pytest.mark.parametrize("bad", [dict(access="zigzag"), dict(samples_per_request=0), dict(samples_per_object=0)])
def test_bad_workloads_are_refused(bad):
    args = dict(access="random", samples_per_request=4, samples_per_object=1, n_samples=10) | bad
    with pytest.raises(ValueError):
        Workload(**args)


def test_random_objects_keeps_each_objects_samples_together():
    w = Workload("random-objects", 8, 4, 103, seed=5)
    order = w.sample_order()
    assert sorted(order) == list(range(103)) and not np.array_equal(order, np.arange(103))
    objects = order // 4
    boundaries = np.flatnonzero(np.diff(objects)) + 1
    blocks = np.split(order, boundaries)
    assert len(blocks) == 26  # every object appears as one contiguous block
    assert all(np.array_equal(b, np.arange(b[0], b[0] + len(b))) and b[0] % 4 == 0 for b in blocks)
    aligned = Workload("random-objects", 8, 4, 104, seed=5)  # no short last object
    assert all(len(r.objects) == 2 and len(r.samples) == 8 for r in aligned.requests())
