"""One file per object on the local filesystem: the ext4 baseline of seed 003 ("LocalFS")."""
from __future__ import annotations

import os
import shutil

from storebench.testbed.locations import filesystem_type
from storebench.stores.base import Capabilities, Store, check_key

_FANOUT = 1000  # files per directory, so 60k objects do not share one directory


class LocalFSStore(Store):
    name = "localfs"
    capabilities = Capabilities(native_multi_get=False, full_scan=False, in_memory_only=False)
    client_package = "storebench"

    def __init__(self, root):
        super().__init__(root)
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, key: int) -> str:
        key = check_key(key)
        return os.path.join(self.root, str(key // _FANOUT), f"{key}.bin")

    def put_many(self, items):
        made = set()
        for key, value in items:
            path = self._path(key)
            folder = os.path.dirname(path)
            if folder not in made:
                os.makedirs(folder, exist_ok=True)
                made.add(folder)
            with open(path, "wb") as f:
                f.write(value)

    def get(self, key):
        try:
            with open(self._path(key), "rb") as f:
                return f.read()
        except FileNotFoundError:
            raise KeyError(key) from None

    def scan(self):
        keys = sorted(int(p.stem) for p in self.root.glob("*/*.bin"))
        for key in keys:
            yield key, self.get(key)

    def clear(self):
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)

    def flush(self):
        os.sync()

    def system_version(self):
        return f"{filesystem_type(self.root)} (kernel {os.uname().release})"

