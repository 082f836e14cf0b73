"""TEMPLATE: copy to lib/storebench/stores/<system>.py, rename, fill in every TODO, register.

A store is a thin binding (like a YCSB binding): it talks to its system and knows nothing about
timing, key choice or verification. Keys are non-negative integers, values are bytes.
See docs/adding-a-store.md for the steps; tests/test_stores_contract.py is the contract it must pass.
"""
from __future__ import annotations

from storebench.stores.base import Capabilities, Store, check_key

# import mysystem  # TODO: the system's Python client (add it to env/requirements.in)


class MySystemStore(Store):  # a networked server: subclass storebench.stores.base.ServerStore instead
    name = "mysystem"  # TODO: the name used in params.yaml and in STORES
    # TODO: say honestly what the system does; the contract suite checks these claims
    capabilities = Capabilities(native_multi_get=False, full_scan=False, in_memory_only=False)
    client_package = "mysystem"  # TODO: the Python distribution whose version is recorded with every row

    def __init__(self, root):
        super().__init__(root)
        self.root.mkdir(parents=True, exist_ok=True)
        # TODO: open the system's data under self.root (a fresh directory per experiment and location)

    def put_many(self, items):
        for key, value in items:
            check_key(key)
            raise NotImplementedError("TODO: store value under key (overwrite if present)")

    def get(self, key):
        check_key(key)
        raise NotImplementedError("TODO: return the bytes of key; raise KeyError(key) if absent")

    def get_many(self, keys):
        # TODO: use the system's native multi-read and set native_multi_get=True, or delete this method
        # (the default loops over get)
        return [self.get(k) for k in keys]

    def scan(self):
        raise NotImplementedError("TODO: yield (key, value) for every object, in key order")

    def clear(self):
        raise NotImplementedError("TODO: remove every object; the store stays usable")

    def flush(self):
        """TODO: make written data durable, so evicting the page cache has an effect (cold reads)."""

    def reopen(self):
        """TODO: close and open again, dropping the client's caches (cold reads)."""

    def close(self):
        """TODO: release the client."""

    def system_version(self):
        # TODO: the system's own version, as the system reports it, e.g. f"MySystem {client.version()}"
        return super().system_version()
