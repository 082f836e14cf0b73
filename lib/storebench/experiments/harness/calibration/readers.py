"""The layout readers' references (issue 22, LayoutBench): the ImageNet sample written once in a layout
on MinIO, then read by storebench's layout class and by the library a user of that layout would read
it with instead.

- L2 tar shards: ``TarShards.query`` of the whole set vs ``webdataset.WebDataset`` iterating the same
  shards from presigned GET URLs (``http://``, which webdataset opens with its own ``curl`` pipe).
- L4 Lance: ``LanceDataset.query`` (filtered scan of the metadata, then ``_take_rows`` of the images)
  vs ``lance.dataset(uri).take(offsets, columns=["key", "image"])`` of the same rows.

Every read returns ``[(key, JPEG bytes)]`` in key order, to be compared with ``expected``.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pandas as pd

from storebench.data import imagetiers
from storebench.layouts import S3Place
from storebench.layouts.queries import Condition, Query, get_queries

WHOLE_SET = Query("all", "Whole set", "the whole set", (Condition("key", ">=", 0),))


def queries(names: list[str]) -> list[Query]:
    """LayoutBench's queries by name, and ``all`` for the whole set."""
    return [WHOLE_SET if n == WHOLE_SET.name else get_queries([n])[0] for n in names]


@dataclass(frozen=True)
class Sample:
    """A tier of the ImageNet sample as LayoutBench builds it (storebench.data.imagetiers: at x1 the 1,000
    real JPEGs, at a larger tier each with its re-encoded copies): its metadata (key, filename, label, bytes,
    width, height) and the tier's files."""
    tier: str
    copies: int
    meta: pd.DataFrame
    built: imagetiers.ImageTier

    def image(self, filename: str) -> bytes:
        return self.built.image(filename)

    def expected(self, query: Query) -> list[tuple[int, bytes]]:
        """What ``query`` must return: (key, the bytes written), in key order."""
        chosen = query.select(self.meta, self.copies)
        return [(int(k), self.image(f)) for k, f in zip(chosen.key, chosen.filename)]

    @property
    def mean_image_bytes(self) -> int:
        return round(self.meta["bytes"].mean())


def sample(tier: str) -> Sample:
    built = imagetiers.image_tier(tier)
    return Sample(tier, built.copies, built.meta, built)


def empty_bucket(endpoint: dict, bucket: str) -> None:
    """``bucket`` on ``endpoint``, made or emptied."""
    from minio.deleteobjects import DeleteObject

    from storebench.stores.s3 import minio_client

    client = minio_client(endpoint, 4)
    if not client.bucket_exists(bucket):
        client.make_bucket(bucket)
        return
    names = [DeleteObject(o.object_name) for o in client.list_objects(bucket, recursive=True)]
    for error in client.remove_objects(bucket, names):
        raise RuntimeError(f"could not empty {bucket}: {error}")


def presigned_urls(place: S3Place, names: list[str]) -> list[str]:
    """A presigned GET URL (http://) of each object ``names`` of ``place``'s bucket."""
    from storebench.stores.s3 import minio_client

    client = minio_client(place.endpoint, 4)
    return [client.presigned_get_object(place.bucket, n, expires=timedelta(hours=12)) for n in names]


def webdataset_read(urls: list[str]) -> list[tuple[int, bytes]]:
    """Every sample of the shards at ``urls``, in order, as webdataset yields them."""
    import webdataset as wds

    return [(int(s["__key__"]), s["jpg"]) for s in wds.WebDataset(urls, shardshuffle=False)]


def lance_take(uri: str, storage_options: dict, offsets: list[int]) -> list[tuple[int, bytes]]:
    """The rows at ``offsets`` of the Lance dataset at ``uri``, in one ``take``."""
    import lance

    table = lance.dataset(uri, storage_options=storage_options).take(offsets, columns=["key", "image"])
    part = table.to_pydict()
    return [(int(k), bytes(v)) for k, v in zip(part["key"], part["image"])]


def row_offsets(meta: pd.DataFrame, query: Query, copies: int) -> list[int]:
    """The positions of ``query``'s rows in a dataset written in ``meta``'s order."""
    position = pd.Series(range(len(meta)), index=meta["key"])
    return position[query.select(meta, copies).key].tolist()
