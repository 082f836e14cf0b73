"""L2: images packed into tar shards (webdataset naming: ``<key>.jpg`` and ``<key>.cls`` members,
readable by the ``webdataset`` package) plus a client index of (shard, offset, length) and the
metadata. A query filters the index and reads the selected members with HTTP byte-range GETs,
merging neighbours whose gap is at most ``coalesce_gap`` bytes into one request; each response is cut
into its members as it streams in."""
from __future__ import annotations

import io
import tarfile
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from storebench.layouts.queries import COLUMNS, Query
from storebench.layouts.base import Layout, Written, read_index, write_index


class TarShards(Layout):
    name = "L2-tar"
    description = "tar shards (webdataset) + a client index of byte ranges; range GETs, neighbours coalesced"

    def __init__(self, place, index_dir, parallel: int = 16, shard_bytes: int = 60_000_000,
                 coalesce_gap: int = 64 * 1024):
        super().__init__(place, index_dir, parallel)
        if shard_bytes < 1 or coalesce_gap < 0:
            raise ValueError(f"shard_bytes must be >= 1 and coalesce_gap >= 0, got {shard_bytes}, {coalesce_gap}")
        self.shard_bytes, self.coalesce_gap = shard_bytes, coalesce_gap

    def shard_name(self, shard: int) -> str:
        return self.place.key(f"shard-{shard:06d}.tar")

    def write(self, meta, image) -> Written:
        import obstore

        store = self.place.object_store(self.parallel)
        ranges, stored, shard, buffer, tar = [], 0, 0, None, None

        def close_shard():
            nonlocal stored, shard
            tar.close()
            obstore.put(store, self.shard_name(shard), buffer.getvalue())
            stored += buffer.tell()
            shard += 1

        for row in meta.itertuples(index=False):
            if tar is None or buffer.tell() >= self.shard_bytes:
                if tar is not None:
                    close_shard()
                buffer = io.BytesIO()
                tar = tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT)
            data = image(row.filename)
            offset = _add_member(tar, f"{row.key:09d}.jpg", data)
            _add_member(tar, f"{row.key:09d}.cls", row.label.encode())
            ranges.append((row.key, shard, offset, len(data)))
        close_shard()
        index = meta[["key", *COLUMNS]].merge(pd.DataFrame(ranges, columns=["key", "shard", "offset", "length"]),
                                              on="key")
        return Written(objects=shard, stored_bytes=stored, index_bytes=write_index(index, self.index_path),
                       details={"shard_bytes": self.shard_bytes, "coalesce_gap": self.coalesce_gap})

    def query(self, query: Query, copies: int):
        import obstore

        chosen = query.select(read_index(self.index_path), copies)
        store = self.place.object_store(self.parallel)
        requests = coalesce(chosen, self.coalesce_gap)

        def get(request):
            shard, start, end, members = request
            response = obstore.get(store, self.shard_name(shard), options={"range": (start, end)})
            return list(cut_members(response.stream(min_chunk_size=1 << 20), start, members))

        with ThreadPoolExecutor(self.parallel) as pool:
            for part in pool.map(get, requests):
                for key, data in part:
                    yield int(key), data


def cut_members(chunks, start: int, members):
    """``(key, bytes)`` of each member of a range that begins at ``start``, cut from its chunks as they
    arrive (the members of a coalesced range are in offset order)."""
    buffer, base, todo = bytearray(), start, iter(members)
    member = next(todo, None)
    for chunk in chunks:
        buffer += chunk
        while member is not None and member[1] + member[2] <= base + len(buffer):
            key, offset, length = member
            yield key, bytes(memoryview(buffer)[offset - base:offset - base + length])
            member = next(todo, None)
        if member is not None:
            done = min(member[1] - base, len(buffer))  # bytes before the next member are not needed again
            del buffer[:done]
            base += done
    if member is not None:
        missing = member[1] + member[2] - base - len(buffer)
        raise RuntimeError(f"a range GET ended {missing:,} bytes short of its members")


def _add_member(tar: tarfile.TarFile, name: str, data: bytes) -> int:
    """Append a member; the offset of its data in the tar."""
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    offset = tar.offset + len(info.tobuf(tar.format, tar.encoding, tar.errors))  # after its header block(s)
    tar.addfile(info, io.BytesIO(data))
    return offset


def coalesce(chosen: pd.DataFrame, gap: int) -> list[tuple[int, int, int, list]]:
    """Byte-range requests ``(shard, start, end, [(key, offset, length)])``: members of a shard in
    offset order, neighbours closer than ``gap`` merged into one range."""
    requests = []
    for shard, rows in chosen.sort_values(["shard", "offset"]).groupby("shard", sort=True):
        current = None
        for key, offset, length in zip(rows.key, rows.offset, rows.length):
            if current is not None and offset - current[2] <= gap:
                current[2] = offset + length
                current[3].append((key, offset, length))
            else:
                current = [int(shard), int(offset), int(offset + length), [(key, offset, length)]]
                requests.append(current)
    return [tuple(r) for r in requests]
