"""Seed 002's layouts on a real MinIO: the five layouts answer every query with the same images
(keys and SHA-256) as the metadata says; the wiretap counts what a client moved; the tar shards are
real webdataset shards; L3 sorted by label reads only the row groups its statistics cannot exclude;
a fresh client over its memory tier is recorded as did not finish; a tier's copies are re-encodings
whose metadata is measured."""
import hashlib
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from storebench.core.repeats import RepeatPolicy
from storebench.data import imagetiers
from storebench.data.datasets import imagenet
from storebench.core.settings import ParamsError
from storebench.experiments.layoutbench.layouts import measure as lb
from storebench.pipeline import run
from storebench.layouts import LAYOUTS, S3Place, get_layout
from storebench.layouts.tarshards import coalesce, cut_members
from storebench.layouts.queries import FOOTPRINT, QUERIES, get_queries
from storebench.stores.s3 import minio_client
from storebench.testbed.wiretap import RequestCounter, Wiretap

COPIES = 2


@pytest.fixture(scope="module")
def tier(tmp_path_factory):
    """Tier x2 (each real image and a re-encoded copy): the images of every class some query names,
    plus those of every 20th other image."""
    whole = imagetiers.image_tier("x2", cache=tmp_path_factory.mktemp("tiers"))
    meta = whole.meta
    named = pd.Series(False, index=meta.index)
    for q in QUERIES.values():
        named |= meta.label.isin(q.select(meta, COPIES).label)
    meta = meta[named | (meta.key // COPIES % 20 == 0)].reset_index(drop=True)
    return meta, whole.image


@pytest.fixture(scope="module")
def written(servers, tier, tmp_path_factory):
    meta, images = tier
    svc = servers.get("minio")
    endpoint = svc.endpoint()
    client = minio_client(endpoint, 4)
    if not client.bucket_exists("sb-test-layouts"):
        client.make_bucket("sb-test-layouts")
    index_dir = tmp_path_factory.mktemp("layout-index")
    layouts = {}
    for name, cls in LAYOUTS.items():
        options = {"L2-tar": {"shard_bytes": 4_000_000}, "L3-parquet": {"file_bytes": 8_000_000,
                                                                          "row_group_rows": 16}}.get(name, {})
        layout = cls(S3Place(endpoint, "sb-test-layouts", f"t/{name}"), index_dir, **options)
        layouts[name] = (layout, layout.write(meta, images), options)
    return endpoint, layouts, index_dir


def answer(layout, query) -> dict:
    return {key: hashlib.sha256(data).hexdigest() for key, data in layout.query(query, COPIES)}


@pytest.mark.server
def test_every_layout_answers_every_query_with_the_same_images(written, tier):
    meta, _ = tier
    endpoint, layouts, _ = written
    with Wiretap(endpoint["host"], endpoint["port"]) as tap:
        for query in get_queries([FOOTPRINT.name, *QUERIES]):
            expected = dict(zip(*query.select(meta, COPIES)[["key", "sha256"]].T.values))
            for name, (layout, _, _) in layouts.items():
                before = tap.counters()
                got = answer(layout.reading_from(layout.place.via(tap.endpoint(endpoint))), query)
                moved = tap.counters() - before
                assert got == expected, f"{name} {query.name}"
                needed = int(meta[meta.key.isin(list(expected))]["bytes"].sum())
                assert moved.bytes_down >= needed and (moved.requests >= 1 or not expected), f"{name} {query.name}"


@pytest.mark.server
def test_what_each_layout_wrote(written, tier):
    meta, _ = tier
    _, layouts, _ = written
    assert layouts["L1-objects"][1].objects == len(meta)
    for name in LAYOUTS:
        # every copy stored (deduplicating the two copies would halve it; Lance compresses JPEG headers a little)
        assert layouts[name][1].stored_bytes >= 0.95 * meta["bytes"].sum(), name
    assert layouts["L1-objects"][1].index_bytes > 0 and layouts["L3-parquet"][1].index_bytes == 0


@pytest.mark.server
def test_tar_shards_are_webdataset_shards(written, tier):
    import obstore
    import webdataset as wds

    meta, images = tier
    _, layouts, _ = written
    layout = layouts["L2-tar"][0]
    shard = obstore.get(layout.place.object_store(), layout.shard_name(0)).bytes().to_bytes()
    path = Path(layout.index_dir) / "shard-0.tar"
    path.write_bytes(shard)
    samples = list(wds.WebDataset(str(path), shardshuffle=False))
    by_key = meta.set_index("key")
    assert samples and all(s["jpg"] == images(by_key.filename[int(s["__key__"])]) for s in samples)
    assert all(s["cls"].decode() == by_key.label[int(s["__key__"])] for s in samples)


def test_coalescing_merges_close_neighbours_only():
    chosen = pd.DataFrame({"key": [1, 2, 3, 4], "shard": [0, 0, 0, 1], "offset": [512, 2048, 900_000, 512],
                           "length": [1000, 1000, 1000, 10]})
    requests = coalesce(chosen, gap=64 * 1024)
    assert [(s, a, b, [k for k, _, _ in m]) for s, a, b, m in requests] == [
        (0, 512, 3048, [1, 2]), (0, 900_000, 901_000, [3]), (1, 512, 522, [4])]


def test_request_counter_follows_keep_alive_requests_with_bodies():
    stream = (b"PUT /b/k HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"
              b"GET /b/k HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b/k HTTP/1.1\r\n\r\n")
    counter = RequestCounter()
    assert sum(counter.feed(stream[i:i + 7]) for i in range(0, len(stream), 7)) == 3


def test_query_definitions_agree_between_pandas_and_sql(tier):
    meta, _ = tier
    con = duckdb.connect()
    con.register("meta", meta)
    for query in QUERIES.values():
        limit = query.limit(COPIES)
        sql = f"SELECT key FROM meta WHERE {query.where()} ORDER BY key" + (f" LIMIT {limit}" if limit else "")
        assert [k for k, in con.execute(sql).fetchall()] == query.select(meta, COPIES).key.tolist(), query.name


@pytest.mark.server
def test_a_fresh_client_over_its_memory_tier_did_not_finish_and_the_next_still_ran(written, tmp_path, tier):
    meta, _ = tier
    endpoint, layouts, index_dir = written
    meta_path = tmp_path / "meta.parquet"
    meta.to_parquet(meta_path)
    config = {"queries": ["Q1", "Q8", "Q3"], "parallel": 16, "shard_bytes": 1, "coalesce_gap": 0,
              "parquet_file_bytes": 1, "row_group_rows": 1, "lance_rows_per_group": 1}
    with Wiretap(endpoint["host"], endpoint["port"]) as tap:
        place = S3Place(tap.endpoint(endpoint), "sb-test-layouts", "t/L1-objects")
        client = lb.Client(config, index_dir, meta_path, tap, COPIES, tmp_path)
        footprint = client.fresh("L1-objects", place, FOOTPRINT.name, None)["peak_bytes"]
        # the whole client is charged (interpreter, pandas, obstore: ~100 MB); Q1 and Q3 add ~2 MB to
        # it, Q8 (two copies of 181 images, 16 in flight) ~20 MB. The tier goes midway between Q1's and
        # Q8's own peaks, unlimited, so that run-to-run variation of a few MB cannot move either across it
        q1, q8 = (client.fresh("L1-objects", place, q, None)["peak_bytes"] for q in ("Q1", "Q8"))
        assert q8 - q1 > 8 * 2**20
        limit = (q1 + q8) // 2
        rows = {q: client.fresh("L1-objects", place, q, limit) for q in config["queries"]}
    assert footprint > 30 * 2**20
    assert rows["Q1"]["status"] == "ok" and rows["Q8"]["status"] == "did not finish" and rows["Q3"]["status"] == "ok"
    assert "OOM-killed" in rows["Q8"]["reason"] and rows["Q1"]["peak_bytes"] <= limit


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ValueError, match="valid: L1-objects, L2-tar"):
        get_layout("L9")
    with pytest.raises(ValueError, match="valid: Q1, Q2"):
        get_queries(["Q12"])
    with pytest.raises(ValueError, match="valid: x1, x2, mini"):
        imagenet.tier_copies("huge")
    for key, bad in (("layouts", ["L1-objects", "L9"]), ("tier", "full"), ("queries", ["Q0x"]),
                     ("net_profiles", ["moon"])):
        with pytest.raises(ParamsError, match=rf"override {key}.*unknown .*valid: "):
            run.settings("layouts", "small", overrides={key: bad})


def test_what_this_machine_cannot_provide_is_not_measured():
    config = run.settings("layouts", "small").as_dict()
    result = lb.LayoutRun(config)
    sweeps = lb._sweeps(config, result, has_hop=False, cgroups="no memory controller")
    assert sweeps == []  # every profile of the small preset has a link rate
    assert {item["what"] for item in result.not_measured} == {f"profile {p}" for p in config["net_profiles"]} | {
        "memory tiers"}
    both = lb._sweeps({**config, "net_profiles": ["unshaped"], "memory_profile": "unshaped"}, lb.LayoutRun(config),
                      has_hop=False, cgroups=None)
    assert both == [("unshaped", [lb.UNLIMITED, *config["memory_tiers"]])]


def test_a_tiers_copies_are_re_encodings_with_measured_metadata(tier):
    meta, images = tier
    originals = dict(imagenet.images())
    for row in meta.head(6).itertuples():
        data = images(row.filename)
        assert hashlib.sha256(data).hexdigest() == row.sha256 and len(data) == row.bytes
        assert (data == originals[row.original]) == (row.copy == 0)
        if row.copy:
            from PIL import Image
            import io
            assert Image.open(io.BytesIO(data)).size == (row.width, row.height)
    # the aspect ratio is kept to the pixel: a 500x333 photo stays wider than 3:2, a 3:2 one is exactly 3:2
    assert imagetiers.scaled_size(500, 333, 0.75)[0] / imagetiers.scaled_size(500, 333, 0.75)[1] > 1.5
    assert [imagetiers.scaled_size(450, 300, s) for s in (0.5, 1.0)] == [(225, 150), (450, 300)]


def test_members_are_cut_from_a_range_in_chunks_of_any_size():
    data = bytes(range(256)) * 8
    members = [(1, 110, 40), (2, 150, 1), (3, 600, 300), (4, 1500, 10)]  # offsets in the shard; the range from 100
    expected = [(key, data[offset - 100:offset - 100 + length]) for key, offset, length in members]
    for size in (1, 7, 64, 2000):
        chunks = [data[i:i + size] for i in range(0, 1410, size)]
        assert list(cut_members(chunks, 100, members)) == expected, size
    with pytest.raises(RuntimeError, match="short"):
        list(cut_members([data[:500]], 100, members))
