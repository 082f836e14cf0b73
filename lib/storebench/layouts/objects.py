"""L1: one S3 object per image, found through a client-side metadata index (a Parquet file):
a query filters the index, then GETs each selected object, ``parallel`` in flight."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from storebench.layouts.queries import COLUMNS, Query
from storebench.layouts.base import Layout, Written, put_objects, read_index, write_index


class ObjectPerImage(Layout):
    name = "L1-objects"
    description = "one S3 object per image + a client-side Parquet index of the metadata"

    def object_name(self, key: int) -> str:
        return self.place.key(f"{key:09d}.jpg")

    def write(self, meta, image) -> Written:
        store = self.place.object_store(self.parallel)
        stored = put_objects(store, ((self.object_name(k), image(f)) for k, f in zip(meta.key, meta.filename)),
                             self.parallel)
        index_bytes = write_index(meta[["key", *COLUMNS]], self.index_path)
        return Written(objects=len(meta), stored_bytes=stored, index_bytes=index_bytes)

    def query(self, query: Query, copies: int):
        import obstore

        chosen = query.select(read_index(self.index_path), copies)
        store = self.place.object_store(self.parallel)

        def get(key):
            return int(key), obstore.get(store, self.object_name(key)).bytes().to_bytes()

        with ThreadPoolExecutor(self.parallel) as pool:
            yield from pool.map(get, chosen.key)
