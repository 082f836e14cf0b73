"""The measurement loop against real stores: counts, verification, cold reads, statistics."""
import numpy as np
import pytest

from storebench.data.formats import get_format
from storebench.stores.readers import ObjectReader, VerificationError
from storebench.stores import open_store
from storebench.core.stats import mean_ci
from storebench.core.timing import harness_overhead, measure
from storebench.data.workloads import Workload
from storebench.core.repeats import RepeatPolicy


@pytest.fixture
def rocks_reader(tmp_path, small_dataset):
    store = open_store("rocksdb", tmp_path / "db")
    yield ObjectReader.ingest(store, small_dataset, get_format("pickle"), 1, progress=False)
    store.close()


def test_measure_records_one_event_per_request(rocks_reader):
    passes = measure(rocks_reader, Workload("random", 16, 1, 300, 1), policy=RepeatPolicy.exactly(3), cold=False)
    assert [p.repeat for p in passes] == [0, 1, 2]
    for p in passes:
        assert len(p.events) == -(-300 // 16) and p.events.n_samples.sum() == 300
        assert (p.events.end_ns >= p.events.start_ns).all() and p.seconds > 0
        assert p.events.bytes.sum() == rocks_reader.sizes.sum() and p.cpu_seconds > 0 and p.peak_rss_bytes > 0


def test_corrupted_store_fails_loudly(rocks_reader):
    rocks_reader.store.put_many([(5, b"not what was written")])  # really change the stored bytes
    with pytest.raises(VerificationError, match="object 5"):
        measure(rocks_reader, Workload("sequential", 1, 1, 300), policy=RepeatPolicy.exactly(1), cold=False)


def test_missing_object_fails_loudly(rocks_reader):
    rocks_reader.store.db.delete(b"\0" * 7 + b"\x09")  # key 9, deleted behind the reader's back
    with pytest.raises(KeyError):
        measure(rocks_reader, Workload("random", 4, 1, 300), policy=RepeatPolicy.exactly(1), cold=False)


def test_packed_objects_deliver_each_sample_once(tmp_path, small_dataset):
    store = open_store("localfs", tmp_path / "fs")
    reader = ObjectReader.ingest(store, small_dataset, get_format("blob"), 8, progress=False)
    (p,) = measure(reader, Workload("random", 4, 8, 300, 3), policy=RepeatPolicy.exactly(1), cold=False)
    assert p.events.n_samples.sum() == 300
    assert p.events.bytes.sum() > p.events.needed_bytes.sum()  # coarse objects fetch unneeded bytes


def test_disk_cold_evicts_the_page_cache(tmp_path, small_dataset):
    store = open_store("localfs", tmp_path / "fs")
    reader = ObjectReader.ingest(store, small_dataset, get_format("pickle"), 1, progress=False)
    (cold,) = measure(reader, Workload("sequential", 1, 1, 300), policy=RepeatPolicy.exactly(1), cold=True)
    assert cold.resident_fraction is not None and cold.resident_fraction < 0.1


def test_full_set_unsupported_is_reported_not_faked(tmp_path, small_dataset):
    from storebench.stores.readers import NotSupported

    store = open_store("localfs", tmp_path / "fs")
    reader = ObjectReader.ingest(store, small_dataset, get_format("pickle"), 1, progress=False)
    with pytest.raises(NotSupported):
        measure(reader, Workload("full", 0, 1, 300), policy=RepeatPolicy.exactly(1), cold=False)


def test_harness_overhead_is_reported(rocks_reader):
    result = harness_overhead(rocks_reader, Workload("random", 16, 1, 300), rounds=2)
    assert result["harness_seconds"] > 0 and result["bare_loop_seconds"] > 0 and result["ratio"] > 0


def test_mean_ci():
    mean, half, n = mean_ci([1.0, 2.0, 3.0])
    assert mean == 2.0 and n == 3
    assert half == pytest.approx(4.302653 * 1.0 / np.sqrt(3), rel=1e-5)  # t(0.975, 2) * s / sqrt(n)
    assert np.isnan(mean_ci([5.0])[1])
