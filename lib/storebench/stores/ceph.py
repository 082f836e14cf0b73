"""Ceph RADOS: one object per key in a pool, read with librados.

A batch is read with ``aio_read`` (RADOS has no multi-object read; async reads are how its clients
overlap requests): every read of the batch in flight at once, or, with ``in_flight``, a sliding window
of that many (a read is issued as soon as one completes, as ``rados bench -t`` keeps its window full).
"""
from __future__ import annotations

import errno
import os
import threading

import rados

from storebench.stores.base import Capabilities, DiskUsage, ServerStore, StoreConnectionError, check_key

_FIRST_READ = 1 << 16  # the first read of an object asks for this much, at first; larger ones are read on
_MAX_FIRST_READ = 1 << 22
# python-rados allocates (and zeroes) the whole buffer a read asks for: 1 MiB per 4 KiB object cost more
# client CPU than the read itself (calibration report). So the first read starts at 64 KiB and grows to the
# largest object met so far (a power of two, at most 4 MiB): one read per object after the first large one.


def _name(key) -> str:
    return f"{check_key(key):012d}"


class CephStore(ServerStore):
    name = "ceph"
    capabilities = Capabilities(native_multi_get=False, full_scan=False, in_memory_only=False,
                                concurrent_multi_get=True, has_server=True)
    client_package = "rados"
    service = "ceph"

    def __init__(self, endpoint: dict, namespace: str = "storebench", service=None, timeout: float = 60.0,
                 in_flight: int | None = None):
        super().__init__(endpoint, namespace, service)
        if in_flight is not None and in_flight < 1:
            raise ValueError(f"ceph: in_flight must be at least 1 (or None: the whole batch), got {in_flight}")
        self.in_flight = in_flight
        # An operation the OSDs (or monitors) do not answer within ``timeout`` s fails with ETIMEDOUT
        # (librados waits forever by default): a hung cluster is an error, not a hang.
        conf = {"rados_osd_op_timeout": str(max(1, round(timeout))), "rados_mon_op_timeout": str(max(1, round(timeout)))}
        if endpoint.get("keyring"):
            conf["keyring"] = endpoint["keyring"]
        self.cluster = rados.Rados(conffile=endpoint["conffile"], name=endpoint.get("name", "client.admin"), conf=conf)
        try:
            self.cluster.connect(timeout=30)
        except (rados.PermissionDeniedError, rados.Error) as error:
            kind = "authentication failed" if isinstance(error, rados.PermissionDeniedError) else "cannot connect"
            raise StoreConnectionError(f"ceph at {endpoint.get('mon_host', endpoint['conffile'])}: {kind} "
                                       f"({error}); check conffile and keyring") from None
        self.pool = endpoint["pool"]
        if not self.cluster.pool_exists(self.pool):
            self.cluster.create_pool(self.pool)
        self.ioctx = self.cluster.open_ioctx(self.pool)
        self.ioctx.set_namespace(namespace)
        self._first_read = _FIRST_READ

    def put_many(self, items):
        completions = [self.ioctx.aio_write_full(_name(k), v) for k, v in items]
        for c in completions:
            c.wait_for_complete()
            if c.get_return_value() < 0:
                raise OSError(-c.get_return_value(), "ceph: aio_write_full failed")

    def _read_rest(self, name: str, head: bytes, asked: int) -> bytes:
        if len(head) < asked:
            return head
        parts = [head]
        while len(parts[-1]) == asked:
            parts.append(self.ioctx.read(name, asked, sum(len(p) for p in parts)))
        whole = b"".join(parts)
        self._first_read = min(_MAX_FIRST_READ, max(self._first_read, 1 << len(whole).bit_length()))
        return whole

    def get(self, key):
        name, asked = _name(key), self._first_read
        try:
            return self._read_rest(name, self.ioctx.read(name, asked, 0), asked)
        except rados.ObjectNotFound:
            raise KeyError(key) from None
        except rados.TimedOut as error:
            raise TimeoutError(errno.ETIMEDOUT, f"ceph: read of {name} timed out ({error})") from None

    def get_many(self, keys):
        names = [_name(k) for k in keys]
        if not names:
            return []
        asked = self._first_read
        window = _Window(len(names), self.in_flight or len(names))
        completions = []
        for i, name in enumerate(names):
            window.enter()
            completions.append(self.ioctx.aio_read(name, asked, 0, window.callback(i)))
        window.wait()
        for c in completions:
            c.wait_for_complete_and_cb()
        if window.errors:
            i, code = next(iter(window.errors.items()))
            error = TimeoutError if code == errno.ETIMEDOUT else OSError
            raise error(code, f"ceph: aio_read of {names[i]} failed ({os.strerror(code)}; {len(window.errors)} "
                              f"of {len(names)} reads of the batch failed)")
        values = [window.results.get(i) for i in range(len(names))]
        self._all_found(keys, values)
        return [self._read_rest(n, v, asked) for n, v in zip(names, values)]

    def scan(self):
        keys = sorted(int(o.key) for o in self.ioctx.list_objects())
        yield from zip(keys, self.get_many(keys))

    def clear(self):
        for obj in list(self.ioctx.list_objects()):
            self.ioctx.remove_object(obj.key)

    def disk_usage(self):
        """Bytes of this namespace's objects as RADOS reports them (stat per object). Pool statistics
        would include other namespaces and reach the monitors only seconds after a write or delete."""
        total = sum(self.ioctx.stat(obj.key)[0] for obj in self.ioctx.list_objects())
        return DiskUsage(int(total), "sum of RADOS object sizes (stat), logical bytes before BlueStore allocation")

    def close(self):
        self.ioctx.close()
        self.cluster.shutdown()

    def system_version(self):
        version = self.local.version() if self.local is not None else self.cluster.version()
        objectstore = self.endpoint.get("objectstore", "")
        return f"Ceph {version}" + (f" ({objectstore})" if objectstore else "")


class _Window:
    """``size`` reads, at most ``limit`` of them in flight. ``enter`` before issuing one: when the window is
    full it waits until half of it has completed (waking the issuing thread once per half window, not once
    per read: each wake-up is a GIL hand-off between librados's callback thread and this one). A read's
    callback records its bytes (or its error)."""

    def __init__(self, size: int, limit: int):
        self.results: dict[int, bytes | None] = {}
        self.errors: dict[int, int] = {}
        self._limit, self._low = limit, limit // 2
        self._in_flight, self._left = 0, size
        self._cond = threading.Condition()

    def enter(self) -> None:
        with self._cond:
            if self._in_flight >= self._limit:
                self._cond.wait_for(lambda: self._in_flight <= self._low)
            self._in_flight += 1

    def callback(self, i: int):
        def finished(completion, data):
            length = completion.get_return_value()  # bytes read; python-rados hands a 0-byte read
            self.results[i] = data[:length] if length >= 0 else None  # the whole zeroed buffer
            if length < 0 and length != -errno.ENOENT:
                self.errors[i] = -length
            with self._cond:
                self._in_flight -= 1
                self._left -= 1
                if self._in_flight == self._low or self._left == 0:
                    self._cond.notify()
        return finished

    def wait(self) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._left == 0)
