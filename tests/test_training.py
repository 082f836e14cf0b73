"""The training loaders against real embedded stores, and the training notebook at smoke scale."""
import json
import zlib

import numpy as np
import pandas as pd
import pytest

import torch  # noqa: E402,F401  (in env/requirements: always there)

from storebench.data import datasets
from storebench import loaders
from storebench.pipeline import notebooks
from storebench.data.formats import get_format  # noqa: E402
from storebench.stores.readers import ObjectReader, VerificationError  # noqa: E402
from storebench.core.results import ROW_COLUMNS  # noqa: E402
from storebench.stores import get_store_class  # noqa: E402
from storebench.stores.localfs import LocalFSStore  # noqa: E402

N = 300


class CountingLocalFS(LocalFSStore):
    """A real localfs store that logs each read call made on it to a file (one line per call, any
    process). localfs has no native multi-read: its get_many loops over get, which is not logged."""

    inside_get_many = False

    def _log(self, line: str) -> None:
        with open(self.root.parent / f"{self.root.name}.calls", "a") as f:
            f.write(line + "\n")

    def get(self, key):
        if not self.inside_get_many:
            self._log(f"get {key}")
        return super().get(key)

    def get_many(self, keys):
        self._log(f"get_many {len(keys)}")
        self.inside_get_many = True
        try:
            return super().get_many(keys)
        finally:
            self.inside_get_many = False

    def calls(self) -> list[str]:
        path = self.root.parent / f"{self.root.name}.calls"
        return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(scope="module")
def synthetic():
    return datasets.synthetic(N)


def ingest(store_class, root, dataset, spo=1):
    store = store_class(root)
    return store, ObjectReader.ingest(store, dataset, get_format("pickle"), spo, progress=False)


def sample_ids(dataset):
    """image bytes -> sample index (synthetic images are distinct)."""
    ids = {dataset.images[i].tobytes(): i for i in range(len(dataset))}
    assert len(ids) == len(dataset)
    return ids


def undo_normalisation(x: torch.Tensor) -> np.ndarray:
    return np.rint((x.squeeze(1).numpy() * loaders.MNIST_STD + loaders.MNIST_MEAN) * 255).astype(np.uint8)


@pytest.mark.parametrize("system", ["rocksdb", "localfs"])
@pytest.mark.parametrize("loader", loaders.LOADERS)
@pytest.mark.parametrize("workers", [0, 2])
def test_every_sample_exactly_once_per_shuffled_epoch(system, loader, workers, synthetic, tmp_path):
    store, reader = ingest(get_store_class(system), tmp_path / system, synthetic, spo=3)  # 3 samples per object
    try:
        ids = sample_ids(synthetic)
        dataset = loaders.make_dataset(loader, reader)
        generator = torch.Generator().manual_seed(0)
        data = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True, num_workers=workers,
                                           generator=generator)
        orders = []
        for _ in range(2):
            delivered = []
            for x, y in data:
                assert x.dtype == torch.float32 and x.shape[1:] == (1, 28, 28) and y.dtype == torch.int64
                batch = [ids[img.tobytes()] for img in undo_normalisation(x)]
                assert y.tolist() == synthetic.labels[batch].tolist()
                delivered += batch
            assert sorted(delivered) == list(range(N))  # each sample exactly once in this epoch
            orders.append(delivered)
        assert orders[0] != orders[1] and orders[0] != list(range(N))  # shuffled, differently per epoch
        dataset.close()
    finally:
        store.close()


@pytest.mark.server
@pytest.mark.parametrize("system", ["minio", "minio-obstore"])
def test_s3_clients_feed_two_workers(system, servers, synthetic):
    """Two DataLoader workers over each S3 client deliver every sample, verified: obstore's workers start from
    the forkserver (its Rust runtime does not survive a fork: a forked worker's first GET used to wait forever)."""
    svc = servers.get("minio", "disk")
    store = get_store_class(system)(svc.endpoint(), namespace=f"workers-{system}")
    try:
        reader = ObjectReader.ingest(store, synthetic, get_format("pickle"), 1, progress=False)
        dataset = loaders.make_dataset("batched", reader)
        plan = loaders.batch_plan(N, N, 32, seed=0)
        got = [label for _, labels in loaders.data_loader(dataset, plan, 2, loaders.start_method(system))
               for label in labels.tolist()]
        assert got == [int(synthetic.labels[i]) for batch in plan for i in batch]
        dataset.close()
    finally:
        store.clear()
        store.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_getitems_is_one_get_many_per_batch_and_getitem_one_get_per_sample(workers, synthetic, tmp_path):
    store, reader = ingest(CountingLocalFS, tmp_path / "counted", synthetic)
    plan = loaders.batch_plan(N, N, 64, seed=1)
    for loader, expected in (("batched", [f"get_many {len(b)}" for b in plan]),
                             ("per-sample", [f"get {i}" for b in plan for i in b])):
        before = len(store.calls())
        dataset = loaders.make_dataset(loader, reader)
        assert hasattr(dataset, "__getitems__") == (loader == "batched")
        batches = sum(1 for _ in loaders.data_loader(dataset, plan, workers))
        assert batches == len(plan)
        calls = store.calls()[before:]
        assert sorted(calls) == sorted(expected), f"{loader}: {len(calls)} calls, expected {len(expected)}"


@pytest.mark.parametrize("loader", loaders.LOADERS)
@pytest.mark.parametrize("workers", [0, 2])
def test_corrupted_stored_bytes_raise(loader, workers, synthetic, tmp_path):
    store, reader = ingest(LocalFSStore, tmp_path / "fs", synthetic)
    value = bytearray(store.get(7))
    value[-3] ^= 0xFF  # one flipped byte inside the pickled image
    store.put_many([(7, bytes(value))])
    assert zlib.crc32(bytes(value)) != reader.checksums[7]
    dataset = loaders.make_dataset(loader, reader)
    plan = [[1, 2, 3], [4, 7, 9]]
    with pytest.raises(VerificationError, match="object 7"):
        for _ in loaders.data_loader(dataset, plan, workers):
            pass


def test_store_opener_reopens_after_fork_and_pickles_without_the_handle(synthetic, tmp_path):
    import pickle

    store, reader = ingest(get_store_class("rocksdb"), tmp_path / "rocks", synthetic)
    dataset = loaders.make_dataset("batched", reader)
    assert dataset.store is not store  # its own (read-only) handle, the ingest handle stays usable
    assert dataset.__getitems__([5, 6])[1][1].item() == synthetic.labels[6]
    clone = pickle.loads(pickle.dumps(dataset))
    assert clone.handle._store is None and clone[5][1].item() == synthetic.labels[5]
    store.put_many([(0, store.get(0))])  # the ingesting handle can still write
    store.close()


def test_spawned_workers_read_through_the_opener(synthetic, tmp_path):
    store, reader = ingest(LocalFSStore, tmp_path / "fs", synthetic)
    dataset = loaders.make_dataset("batched", reader)
    plan = loaders.batch_plan(N, 64, 32, seed=2)
    labels = [y for _, y in loaders.data_loader(dataset, plan, 1, start_method="spawn")]
    assert torch.cat(labels).tolist() == synthetic.labels[sum(plan, [])].tolist()


def test_loader_names_match_the_settings():
    from typing import get_args

    from storebench.experiments.dl_storage_benchmarking.training.measure import Settings

    (literal,) = get_args(Settings.model_fields["loaders"].annotation)
    assert get_args(literal) == loaders.LOADERS


def test_grid_reads_a_batch_of_one_once_and_emulates_at_its_batch_sizes():
    from storebench.core.settings import load
    from storebench.experiments.dl_storage_benchmarking.training.measure import Settings, grid

    config = load(Settings, "training", "reference", overrides={
        "batch_sizes": [1, 4], "workers": [0], "emulated_compute_s": [0, 0.01], "emulated_batch_sizes": [64]})
    cells = {(p["loader"], p["batch_size"], p["emulated_compute_s"]) for p in grid(config)}
    assert cells == {("per-sample", 1, 0.0), ("per-sample", 4, 0.0), ("batched", 4, 0.0),
                     ("per-sample", 64, 0.01), ("batched", 64, 0.01)}  # batch 1: one read either way
    batched_only = load(Settings, "training", "reference", overrides={"batch_sizes": [1], "loaders": ["batched"]})
    assert {p["loader"] for p in grid(batched_only)} == {"batched"}


def test_train_epoch_measures_wait_compute_and_utilisation(synthetic, tmp_path):
    from storebench.experiments.dl_storage_benchmarking.training import measure as training

    store, reader = ingest(LocalFSStore, tmp_path / "fs", synthetic)
    plan = loaders.batch_plan(N, N, 50, seed=3)
    dataset = loaders.make_dataset("batched", reader)
    model = training.lenet5()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    real = training.train_epoch(loaders.data_loader(dataset, plan, 0), plan, synthetic.labels.astype(np.int64),
                                model, optimizer)
    assert len(real.wait_ns) == len(plan) and np.isfinite(real.final_loss)
    assert 0 < real.utilisation <= 1
    assert real.wait_ns.sum() / 1e9 + real.compute_ns.sum() / 1e9 <= real.seconds
    slept = training.train_epoch(loaders.data_loader(dataset, plan, 0), plan, synthetic.labels.astype(np.int64),
                                 model, optimizer, emulated_s=0.02)
    assert slept.compute_ns[1:].min() >= 0.02e9 and np.isnan(slept.final_loss)
    assert 0.5 < slept.utilisation <= 1  # 20 ms per batch dwarfs reading 50 small files


# ------------------------------------------------------------------------------- measure and report
def check_training_results(rows: pd.DataFrame, settings):
    from storebench.experiments.dl_storage_benchmarking.training.measure import TRAINING_COLUMNS

    assert set(ROW_COLUMNS + TRAINING_COLUMNS) <= set(rows.columns)
    assert rows.verified.all() and (rows.scale == settings.scale).all()
    assert set(rows.system) == set(settings.systems)
    assert set(rows.batch_size) == set(settings.batch_sizes) and set(rows.workers) == set(settings.workers)
    assert set(rows.loader) == set(settings.loaders)
    keys = ["system", "loader", "batch_size", "workers", "emulated_compute_s"]
    assert (rows.groupby(keys).size() == settings.repeats).all()
    emulated = [c for c in settings.emulated_compute_s if c > 0]
    per_system = len(settings.loaders) * len(settings.workers) * (
        len(settings.batch_sizes) + len(emulated) * len(settings.emulated_batch_sizes or [1]))
    assert rows.groupby("system").size().eq(per_system * settings.repeats).all()
    assert set(rows.emulated_compute_s) == {0, *emulated}
    assert (rows.epoch_seconds > 0).all()
    assert (rows.data_wait_seconds + rows.compute_seconds <= rows.epoch_seconds).all()
    assert rows.utilisation.dropna().between(0, 1).all()
    assert rows[rows.emulated_compute_s == 0].final_loss.notna().all()
    batched = rows[rows.loader == "batched"]
    assert (batched.n_requests == np.ceil(batched.n_samples / batched.batch_size)).all()
    per_sample = rows[rows.loader == "per-sample"]
    assert (per_sample.n_requests == per_sample.n_samples).all()
    assert set(rows[rows.system == "redis"].location) == {"memory"}
    assert set(rows[rows.system == "redis"].has_server) == {True} and set(rows[rows.system == "localfs"].has_server) == {False}


@pytest.mark.slow
@pytest.mark.server
def test_training_at_smoke_scale(prepared_mnist, servers, tmp_path, monkeypatch):
    from storebench.pipeline import run

    monkeypatch.setenv("STOREBENCH_WORK", str(tmp_path / "work"))  # stores of this test only
    monkeypatch.setenv("STOREBENCH_MEMORY_DIR", str(tmp_path / "shm"))
    redis = servers.get("redis", "memory")  # the session's server, as an endpoint
    overrides = {"endpoints": {"redis": redis.endpoint()["url"]}}
    recorded = run.measure("training", "smoke", results_root=tmp_path / "results", overrides=overrides,
                           progress=False)
    settings = run.settings("training", "smoke", overrides=overrides)
    rows = recorded["training"]
    check_training_results(rows, settings)
    assert len(list((tmp_path / "results" / "raw" / "training").glob("*.parquet"))) == rows.run_id.nunique()

    html = notebooks.run("training", out_dir=tmp_path, results_dir=tmp_path / "results", progress=False)
    page = html.read_text()
    assert "Findings" in page and "Traceback" not in page and "1.2-3.4x" in page
    assert max(p.stat().st_size for p in (tmp_path / "figures" / "training").glob("*.png")) > 10_000
    recorded_findings = json.loads((tmp_path / "training.findings.json").read_text())
    assert "paper: 1.2-3.4x" in recorded_findings["headline"]
    assert {c["statement"][:20] for c in recorded_findings["claims"]} >= {"At batch sizes 1 and", "As the batch grows, "}


def epochs(system, loader, batch, workers, seconds, repeats=3, compute=0.0):
    return [dict(system=system, location="disk-warm", samples_per_object=1, loader=loader, batch_size=batch,
                 workers=workers, emulated_compute_s=compute, epoch_seconds=s, data_wait_seconds=s / 2,
                 compute_seconds=s / 3, utilisation=0.5, final_loss=1.0, system_version="v",
                 has_server=system != "localfs") for s in np.linspace(seconds * 0.99, seconds * 1.01, repeats)]


def test_analyse_judges_the_papers_statements():
    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.training import analysis

    rows = []
    for loader in ("per-sample", "batched"):
        for workers, speed in ((0, 1.0), (2, 0.5)):
            for batch, local, remote in ((1, 10.0, 10.5), (256, 1.0, 2.0)):
                rows += epochs("localfs", loader, batch, workers, local * speed)
                rows += epochs("redis", loader, batch, workers, remote * speed * (0.5 if loader == "batched" else 1))
    findings = analysis.analyse(ResultTables({"training": pd.DataFrame(rows)}, {}))
    verdicts = [c.verdict for c in findings.claims]
    assert verdicts == ["holds", "holds", "holds", "holds"], findings.claims
    assert "paper: 1.2-3.4x" in findings.headline and len(findings.metrics) == 4


def test_a_speed_up_names_only_the_worker_counts_that_measured_both_loaders():
    from storebench.core.experiment import ResultTables
    from storebench.experiments.dl_storage_benchmarking.training import analysis

    rows = []
    for workers in (0, 2):
        rows += epochs("tiledb", "batched", 256, workers, 1.0)
    rows += epochs("tiledb", "per-sample", 256, 0, 3.0)  # per-sample at 2 workers not measured
    text = analysis.analyse(ResultTables({"training": pd.DataFrame(rows)}, {})).markdown
    assert ("| tiledb, batch 256: per-sample / batched `__getitems__` epoch time (>1: batched faster) | 3.00x "
            "(workers 0) |") in text


def test_the_remote_vs_local_ratios_run_in_batch_order_whatever_systems_measured_fewer_batches():
    from storebench.experiments.dl_storage_benchmarking.training import analysis

    rows = epochs("cassandra", "per-sample", 16, 0, 3.0) + epochs("cassandra", "per-sample", 256, 0, 3.0)
    for batch in (1, 4, 16, 64, 256):  # the pair's whole grid; cassandra (first by name) only 16 and 256
        rows += epochs("localfs", "per-sample", batch, 0, 1.0) + epochs("redis", "per-sample", batch, 0, 2.0)
    ratio = analysis.ratios(analysis.summary(pd.DataFrame(rows)))
    assert ratio.batch_size.tolist() == [1, 4, 16, 64, 256] and ratio.remote_vs_local.round(2).tolist() == [2.0] * 5
