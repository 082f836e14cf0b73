"""Seed 004 on a real Cassandra (its own node, port 9242 + STOREBENCH_PORT_OFFSET, data on tmpfs) and real stores:
the three tables, splits read from metadata_by_nat, the prefetching loader's two faces reading
every sample of a split exactly once (2 ranks x 2 DataLoader workers), checksums, corruption,
split files of another table, unreachable and killed nodes. No Cassandra is left running."""
import os
import signal
import threading
import time
import uuid

import psutil
import pytest
import torch

from storebench.stores import cassandra_model as cm
from storebench.data import imagesets
from storebench.data import splits as sp
from storebench.loaders.opener import StoreOpener
from storebench.loaders.prefetch import (Catalog, CassandraBlobs, LoaderError, PrefetchIterableDataset,
                                         PrefetchLoader, StoreBlobs)
from storebench.stores.readers import VerificationError
from storebench.services import local_service
from storebench.services.base import port_offset
from storebench.stores import get_store_class

# Tier markers are per test: `server` on each test that needs it, none on the pure ones.
# apart from the session's servers (9042) and storebench.experiments.cassandra_dl.ring's nodes; moved like them by STOREBENCH_PORT_OFFSET
PORT, REDIS_PORT = 9242 + port_offset(), 6396 + port_offset()
KEYSPACE = "seed004_test"


@pytest.fixture(scope="module")
def cassandra(tmp_path_factory):
    svc = local_service("cassandra", tmp_path_factory.mktemp("seed004"), "memory", port=PORT)
    svc.start()
    try:
        yield svc
    finally:
        pids = svc.pids()
        svc.stop()
        assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


@pytest.fixture(scope="module")
def images():
    return imagesets.image_set(200, "jpeg", n_originals=50)  # 50 real images x 4 copies


@pytest.fixture(scope="module")
def ingested(cassandra, images):
    report = cm.ingest_endpoint(cassandra.endpoint(), KEYSPACE, images, progress=False)
    assert report["samples"] == 200
    return cassandra.endpoint()


@pytest.fixture(scope="module")
def session(ingested):
    with cm.session_for(ingested) as s:
        yield s


@pytest.fixture(scope="module")
def splits(session):
    return sp.make_splits(sp.CassandraMetadata(session, KEYSPACE), [3, 1], group_by=["original"], label="kind",
                          seed=4)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory, images):
    """localfs and rocksdb holding the same samples under their integer keys."""
    stores = {}
    for name in ("localfs", "rocksdb"):
        store = get_store_class(name)(tmp_path_factory.mktemp(name) / name)
        store.put_many(images.items())
        store.flush()
        stores[name] = store
    yield stores
    for store in stores.values():
        store.close()


@pytest.fixture(scope="module")
def redis_store(tmp_path_factory, images):
    """A server store other than Cassandra (its own Redis), holding the samples by integer key."""
    with local_service("redis", tmp_path_factory.mktemp("redis"), "memory", port=REDIS_PORT) as svc:
        store = get_store_class("redis")(svc.endpoint(), namespace="seed004", service=svc)
        store.put_many(images.items())
        yield store
        store.close()


def source_for(name, ingested, embedded, in_flight=32):
    if name == "cassandra":
        return CassandraBlobs(ingested, KEYSPACE, in_flight=in_flight, request_timeout=5)
    return StoreBlobs(StoreOpener.of(embedded[name]), in_flight=in_flight)


SYSTEMS = ["cassandra", "localfs", "rocksdb", "redis"]


# ------------------------------------------------------------------------------ data model
@pytest.mark.server
def test_three_tables_hold_every_sample_with_its_checksum(session, images):
    count = lambda table: session.execute(f"SELECT COUNT(*) FROM {KEYSPACE}.{table}").one()[0]  # noqa: E731
    assert [count(t) for t in cm.TABLES] == [200, 200, 200]
    partitions = sp.CassandraMetadata(session, KEYSPACE).partitions()
    assert len(partitions) == 50  # (original, label): one per real image
    meta = cm.read_metadata(session, KEYSPACE)
    assert meta["id"].tolist() == images.table["id"].tolist()
    assert (meta["checksum"] == images.table["checksum"]).all()
    row = session.execute(f"SELECT data, checksum FROM {KEYSPACE}.data_by_uuid WHERE id = %s",
                          (images.table["id"][7],)).one()
    assert row.data == images.blobs[7] and row.checksum == imagesets.checksum(images.blobs[7])
    assert images.blobs[7] is images.blobs[57]  # copies share their original's bytes


@pytest.mark.server
def test_images_are_224_rgb_in_both_encodings(images):
    raw = imagesets.image_set(4, "raw", n_originals=4)
    assert {len(b) for b in raw.blobs} == {imagesets.RAW_BYTES}
    pixels = imagesets.decode(images.blobs[0], "jpeg")
    assert pixels.shape == (224, 224, 3) and pixels.dtype.name == "uint8"
    assert 5_000 < images.table["bytes"].mean() < 40_000
    smaller = imagesets.image_set(120, "jpeg", n_originals=50)
    assert smaller.table["id"].tolist() == images.table["id"][:120].tolist()  # seeded, prefix-stable UUIDs
    assert imagesets.image_set(120, "jpeg", seed=1, n_originals=50).table["id"][0] != smaller.table["id"][0]
    assert images.table.groupby("original").size().eq(4).all() and set(images.table["kind"]) == {"animal", "object"}


@pytest.mark.server
def test_splits_from_cassandra_equal_splits_from_the_same_rows_in_memory(splits, images):
    in_memory = sp.make_splits(sp.FrameMetadata(images.table), [3, 1], group_by=["original"], label="kind", seed=4)
    assert splits.ids == in_memory.ids and sum(splits.sizes()) == 200
    groups = [set(images.table.set_index("id").loc[ids, "original"]) for ids in splits.ids]
    assert not groups[0] & groups[1]


@pytest.mark.server
def test_a_split_file_of_another_table_is_rejected(tmp_path, splits, session, ingested, images):
    path = splits.save(tmp_path / "splits.json")
    assert sp.Splits.load(path, sp.CassandraMetadata(session, KEYSPACE)).ids == splits.ids
    other = "seed004_test_other"
    cm.ingest_endpoint(ingested, other, imagesets.image_set(120, "jpeg", n_originals=50), progress=False)
    try:
        with pytest.raises(sp.SplitMismatch, match=r"200 rows.* seed004_test_other.metadata_by_nat has 120 rows.*"
                                                   r"80 of the split's 200 UUIDs are not in it"):
            sp.Splits.load(path, sp.CassandraMetadata(session, other))
    finally:
        session.execute(f"DROP KEYSPACE {other}", timeout=60)


# ------------------------------------------------------------------------------ the loop face
@pytest.mark.server
@pytest.mark.parametrize("system", SYSTEMS)
def test_load_batch_reads_every_sample_of_each_split_once_verified(system, ingested, embedded, images, splits,
                                                                   request):
    if system == "redis":
        embedded = {"redis": request.getfixturevalue("redis_store")}
    catalog = Catalog.from_frame(images.table)
    blob_of = dict(zip(images.table["id"], images.blobs))
    with PrefetchLoader(source_for(system, ingested, embedded), catalog, splits, batch_size=16) as loader:
        assert loader.readers == {}  # nothing opened before the first batch
        for split in (0, 1):
            seen = []
            for _ in range(loader.num_batches[split]):
                batch = loader.load_batch(split)
                assert all(blob_of[u] == b for u, b in zip(batch.ids, batch.blobs))
                assert list(batch.labels) == list(catalog.labels[catalog.rows(batch.ids)])
                seen += batch.ids
            assert seen == splits.ids[split]
            with pytest.raises(StopIteration, match="rewind_splits"):
                loader.load_batch(split)
        loader.rewind_splits(shuffle=True)
        again = [u for _ in range(loader.num_batches[0]) for u in loader.load_batch(0).ids]
        assert sorted(again) == sorted(splits.ids[0]) and again != splits.ids[0]


@pytest.mark.server
def test_redis_reads_from_many_threads_at_once_are_each_their_own(redis_store, images, splits):
    """32 reader threads, batches of 256 cut into 32 reads: every batch verified, epoch after epoch (a store
    whose handle reads over one held connection is opened per thread: threads sharing one socket would
    read each other's replies)."""
    catalog = Catalog.from_frame(images.table)
    blob_of = dict(zip(images.table["id"], images.blobs))
    source = StoreBlobs(StoreOpener.of(redis_store), in_flight=32)
    with PrefetchLoader(source, catalog, splits, batch_size=256, depth=4) as loader:
        for _ in range(5):
            for _ in range(loader.num_batches[0]):
                batch = loader.load_batch(0)
                assert all(blob_of[u] == b for u, b in zip(batch.ids, batch.blobs))
            loader.rewind_splits(shuffle=True)


# ------------------------------------------------------------------------------ the PyTorch face
@pytest.mark.server
@pytest.mark.parametrize("system", ["cassandra", "rocksdb"])
def test_two_ranks_with_two_workers_each_read_the_split_exactly_once(system, ingested, embedded, images, splits):
    catalog = Catalog.from_frame(images.table)
    seen = []
    for rank in (0, 1):
        dataset = PrefetchIterableDataset(source_for(system, ingested, embedded, in_flight=8), catalog, splits, 0,
                                          batch_size=10, rank=rank, world=2, decode="jpeg", epoch=1)
        loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2)
        for batch in loader:
            assert batch["x"].shape[1:] == (224, 224, 3) and batch["x"].dtype == torch.uint8
            assert len(batch["id"]) == len(batch["y"]) == len(batch["x"])
            seen += [uuid.UUID(u) for u in batch["id"]]
    assert len(seen) == len(set(seen)) == len(splits.ids[0]) and set(seen) == set(splits.ids[0])


@pytest.mark.server
def test_the_next_depth_batches_are_requested_before_the_current_one_is_awaited(embedded, images, splits):
    from storebench.loaders.prefetch import BatchStream, cut

    catalog = Catalog.from_frame(images.table)
    reader = StoreBlobs(StoreOpener.of(embedded["localfs"]), in_flight=4).open()
    submitted = []
    submit = reader.submit
    reader.submit = lambda ids, keys: submitted.append(ids) or submit(ids, keys)
    try:
        batches = cut(splits.ids[0], 8)
        stream = BatchStream(reader, catalog, batches, depth=2)
        assert len(submitted) == 2  # nothing taken yet: two batches requested
        next(stream)
        assert len(submitted) == 3  # taking batch 0 requested batch 2 first
        assert sum(len(b.ids) for b in stream) == len(splits.ids[0]) - 8 and submitted == batches
    finally:
        reader.close()


# ------------------------------------------------------------------------------ faults
@pytest.mark.server
def test_a_corrupted_blob_is_detected_naming_its_uuid(session, ingested, embedded, images, splits):
    catalog = Catalog.from_frame(images.table)
    victim = splits.ids[1][3]
    key = int(images.table.set_index("id").loc[victim, "key"])
    original = images.blobs[key]
    cm.corrupt(session, KEYSPACE, victim, original[:-1] + bytes([original[-1] ^ 1]))
    local = embedded["localfs"]
    local.put_many([(key, original[:100])])
    try:
        for system in ("cassandra", "localfs"):
            with PrefetchLoader(source_for(system, ingested, embedded), catalog, splits, batch_size=32) as loader:
                with pytest.raises(VerificationError, match=f"sample {victim} differs from what was written"):
                    for _ in range(loader.num_batches[1]):
                        loader.load_batch(1)
    finally:
        cm.corrupt(session, KEYSPACE, victim, original)
        local.put_many([(key, original)])


def test_an_unreachable_node_is_named():
    nobody = PORT + 57  # nothing listens there
    source = CassandraBlobs({"contact_points": ["127.0.0.1"], "port": nobody}, KEYSPACE)
    with pytest.raises(LoaderError, match=rf"cassandra at 127.0.0.1:{nobody}: cannot connect"):
        source.open()


@pytest.mark.server
def test_a_node_killed_during_reads_fails_clearly_naming_it(cassandra, ingested, images, splits):
    """Last test of the module: it kills the module's node (the fixture's stop copes)."""
    catalog = Catalog.from_frame(images.table)
    many = sp.Splits([splits.ids[0] * 200], splits.header)  # long enough to be killed mid-way
    loader = PrefetchLoader(CassandraBlobs(ingested, KEYSPACE, request_timeout=3), catalog, many, batch_size=64,
                            timeout=30)
    loader.load_batch(0)
    killer = threading.Timer(0.3, os.kill, (cassandra.pids()[0], signal.SIGKILL))
    killer.start()
    start = time.monotonic()
    try:
        with pytest.raises(LoaderError, match=rf"cassandra at 127.0.0.1:{PORT} seed004_test.data_by_uuid: reading "
                                              r"sample .* failed") as failure:
            for _ in range(loader.num_batches[0] - 1):
                loader.load_batch(0)
        print(failure.value)
        assert time.monotonic() - start < 15  # fails within about a request timeout, never hangs
    finally:
        killer.cancel()
        loader.close()

