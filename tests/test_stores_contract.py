"""The contract every bytes store keeps, run against each real system."""
import numpy as np
import pytest

from storebench.stores import STORES, Store, get_store_class, open_store
from storebench.stores.base import ServerStore

from conftest import value_for


def test_put_get_round_trip(store):
    store.put_many((k, value_for(k)) for k in range(50))
    assert all(store.get(k) == value_for(k) for k in range(50))


def test_get_many_keeps_request_order(store):
    store.put_many((k, value_for(k)) for k in range(50))
    keys = [42, 3, 17, 0, 49, 8]
    assert store.get_many(keys) == [value_for(k) for k in keys]


def test_one_handle_serves_many_threads(store):
    """The loaders share one handle among their reader threads: every thread's reads come back whole and
    its own, never another thread's reply."""
    from concurrent.futures import ThreadPoolExecutor

    store.put_many((k, value_for(k)) for k in range(400))
    rng = np.random.default_rng(0)
    requests = [rng.choice(400, size=int(rng.integers(1, 17)), replace=False).tolist() for _ in range(400)]
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(store.get_many, requests))
    assert replies == [[value_for(k) for k in keys] for keys in requests]


def test_scan_returns_everything_in_key_order(store):
    keys = [5, 1, 30, 2]
    store.put_many((k, value_for(k)) for k in keys)
    assert list(store.scan()) == [(k, value_for(k)) for k in sorted(keys)]


def test_empty_value(store):
    store.put_many([(1, b"")])
    assert store.get(1) == b""
    assert store.get_many([1]) == [b""]


def test_missing_keys_raise_key_error(store):
    store.put_many([(1, b"x")])
    with pytest.raises(KeyError):
        store.get(2)
    with pytest.raises(KeyError):
        store.get_many([1, 2])


def test_large_value(store):
    big = np.random.default_rng(0).integers(0, 256, 8 << 20, dtype=np.uint8).tobytes()
    store.put_many([(7, big)])
    assert store.get(7) == big


def test_overwrite(store):
    store.put_many([(1, b"old")])
    store.put_many([(1, b"new")])
    assert store.get(1) == b"new"


def test_clear_empties_and_store_stays_usable(store):
    store.put_many((k, value_for(k)) for k in range(10))
    store.clear()
    assert list(store.scan()) == []
    with pytest.raises(KeyError):
        store.get(3)
    store.put_many([(3, b"again")])
    assert store.get(3) == b"again"


def test_disk_usage_is_positive_and_says_how(store):
    store.put_many((k, value_for(k, 4000)) for k in range(100))
    usage = store.disk_usage()
    assert usage.bytes > 0 and usage.how


def test_disk_usage_follows_the_data_not_its_history(store):
    """After clear and a smaller dataset, the usage shrinks: it measures what is stored now."""
    store.put_many((k, value_for(k, 40_000)) for k in range(20))
    big = store.disk_usage().bytes
    store.clear()
    store.put_many((k, value_for(k, 100)) for k in range(20))
    small = store.disk_usage().bytes
    assert 0 < small < big, (small, big)


def test_data_survives_reopen(store):
    store.put_many((k, value_for(k)) for k in range(20))
    store.flush()
    store.reopen()
    assert store.get_many(list(range(20))) == [value_for(k) for k in range(20)]


def test_capabilities_are_honest(store):
    caps, cls = store.capabilities, type(store)
    # get_many is the base-class loop exactly when the store claims neither a native nor a concurrent batch
    assert (caps.native_multi_get or caps.concurrent_multi_get) == (cls.get_many is not Store.get_many)
    assert not (caps.native_multi_get and caps.concurrent_multi_get) and not caps.array_native
    assert caps.has_server == isinstance(store, ServerStore)
    assert store.system_version()


def test_in_memory_only_systems_refuse_disk_locations(store):
    from storebench.stores.systems import LocationNotSupported, open_system

    if store.capabilities.in_memory_only:
        with pytest.raises(LocationNotSupported, match="memory only"):
            with open_system(store.name, "disk-warm"):
                pass


def test_negative_keys_are_refused(store):
    with pytest.raises(KeyError):
        store.get(-1)


def test_unknown_store_lists_valid_ones():
    with pytest.raises(ValueError, match="valid stores: cassandra, .*localfs, .*rocksdb"):
        open_store("cassandara", "/tmp/x")


def test_registry_names_match_classes():
    for name in STORES:
        assert get_store_class(name).name == name


# --- array-native layouts -------------------------------------------------------------------
def test_array_store_reads_by_index(array_store, small_dataset):
    array_store.write(small_dataset.images, small_dataset.labels)
    idx = np.array([299, 0, 17, 17, 150])
    images, labels = array_store.read(idx)
    assert np.array_equal(images, small_dataset.images[idx]) and np.array_equal(labels, small_dataset.labels[idx])
    images, labels = array_store.read_all()
    assert np.array_equal(images, small_dataset.images) and np.array_equal(labels, small_dataset.labels)
    assert array_store.disk_usage().bytes >= small_dataset.images.nbytes * 0.5


def test_array_store_out_of_range(array_store, small_dataset):
    array_store.write(small_dataset.images, small_dataset.labels)
    with pytest.raises(IndexError):
        array_store.read(np.array([300]))


@pytest.mark.parametrize("name", [n for n in STORES if get_store_class(n).capabilities.array_native])
def test_array_layout_chunks_the_sample_axis_by_samples_per_object(name, tmp_path, small_dataset):
    """Granularity on an array layout: ``layout_for(k)`` makes tiles / chunks of k samples (what a read
    fetches whole); reads stay exact whatever the chunk, the last one partial."""
    cls = get_store_class(name)
    with cls(tmp_path / name, **cls.layout_for(7)) as store:
        store.write(small_dataset.images, small_dataset.labels)
        idx = np.array([299, 0, 6, 7, 150])
        images, labels = store.read(idx)
        assert np.array_equal(images, small_dataset.images[idx]) and np.array_equal(labels, small_dataset.labels[idx])
        extent = (store.images.schema.domain.dim(0).tile if name == "tiledb-array"
                  else store.images.chunk_layout.read_chunk.shape[0])
        assert extent == store.samples_per_chunk == 7 and "7 samples per" in store.client_config()
    with pytest.raises(ValueError, match="samples_per_chunk"):
        cls(tmp_path / "bad", samples_per_chunk=0)


def test_tiledb_cells_of_several_samples_keep_a_tile_near_64_samples(tmp_path):
    cls = get_store_class("tiledb")
    assert [cls.layout_for(k) for k in (1, 16, 64, 256)] == [{"tile": 64}, {"tile": 4}, {"tile": 1}, {"tile": 1}]
    with cls(tmp_path / "t", **cls.layout_for(16)) as store:
        assert store.array.schema.capacity == 4 and "4 cells per tile" in store.client_config()
    assert get_store_class("redis").layout_for(16) == {}  # one object is the unit already


def test_array_store_survives_reopen(array_store, small_dataset):
    array_store.write(small_dataset.images, small_dataset.labels)
    array_store.reopen()
    images, _ = array_store.read(np.arange(10))
    assert np.array_equal(images, small_dataset.images[:10])


@pytest.mark.server
@pytest.mark.parametrize("in_flight", [1, 3])
def test_ceph_reads_through_a_sliding_window(servers, in_flight):
    """``in_flight`` bounds the reads in flight (the window slides: one issued as each completes) and the
    batch still comes back whole and in request order, a missing key still a KeyError."""
    svc = servers.get("ceph", "disk")
    with get_store_class("ceph")(svc.endpoint(), namespace=f"window{in_flight}", in_flight=in_flight) as store:
        store.put_many((k, value_for(k)) for k in range(40))
        keys = [39, 0, 7, 7, 21, *range(10)]
        assert store.get_many(keys) == [value_for(k) for k in keys]
        with pytest.raises(KeyError):
            store.get_many([1, 2, 99, 3])
        store.clear()
    with pytest.raises(ValueError, match="in_flight"):
        get_store_class("ceph")(svc.endpoint(), in_flight=0)
