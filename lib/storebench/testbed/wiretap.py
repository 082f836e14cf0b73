"""What a client really moved over the network: a TCP relay, in a process of its own, between a client
and an HTTP server (an S3 endpoint), counting the bytes in each direction, the connections opened and
the HTTP requests sent.

Every S3 client (obstore, DuckDB's httpfs, Lance) is pointed at the relay, so one definition of
"bytes transferred" covers them all: every byte of every response, headers included, as it reaches
the client. Requests are counted by parsing the request stream (request line, headers, then
``Content-Length`` bytes of body), so keep-alive connections are counted right.

    with Wiretap("127.0.0.1", 9000) as tap:        # the client connects to tap.host:tap.port
        before = tap.counters()
        ...
        moved = tap.counters() - before              # Counters(bytes_down, bytes_up, requests, connections)

The counters live in a small shared file (/dev/shm) written by the relay and read by anyone.
Run as ``python -m storebench.testbed.wiretap UPSTREAM_HOST UPSTREAM_PORT COUNTER_FILE``.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

FIELDS = ("bytes_down", "bytes_up", "requests", "connections")


@dataclass(frozen=True)
class Counters:
    bytes_down: int = 0   # server -> client, headers included
    bytes_up: int = 0
    requests: int = 0
    connections: int = 0

    def __sub__(self, other: "Counters") -> "Counters":
        return Counters(*(getattr(self, f) - getattr(other, f) for f in FIELDS))


def read_counters(path: Path) -> Counters:
    values = np.fromfile(path, dtype=np.int64, count=len(FIELDS))
    return Counters(*(int(v) for v in values))


class Wiretap:
    """The relay process to ``host:port``; the client connects to ``self.host:self.port``."""

    def __init__(self, upstream_host: str, upstream_port: int):
        self.upstream = (upstream_host, int(upstream_port))
        self.host, self.port = "127.0.0.1", 0
        self.proc = None
        self.counter_file = None

    def start(self) -> "Wiretap":
        shm = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
        fd, name = tempfile.mkstemp(prefix="storebench-wiretap-", dir=shm)
        os.close(fd)
        self.counter_file = Path(name)
        np.zeros(len(FIELDS), dtype=np.int64).tofile(self.counter_file)
        self.proc = subprocess.Popen([sys.executable, "-m", "storebench.testbed.wiretap", *map(str, self.upstream),
                                      str(self.counter_file)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening "):
            self.stop()
            raise RuntimeError(f"wiretap to {self.upstream[0]}:{self.upstream[1]} did not start (got {line!r})")
        self.port = int(line.split()[1])
        return self

    def counters(self) -> Counters:
        return read_counters(self.counter_file)

    def endpoint(self, endpoint: dict) -> dict:
        """An S3 endpoint dict rewritten to reach its server through this relay."""
        return {**endpoint, "host": self.host, "port": self.port}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.counter_file is not None:
            self.counter_file.unlink(missing_ok=True)

    def __enter__(self) -> "Wiretap":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ------------------------------------------------------------------ the relay (runs in its own process)
class RequestCounter:
    """Counts HTTP/1.1 requests in a client's byte stream: headers to the blank line, then the body."""

    def __init__(self):
        self.buffer = b""
        self.body_left = 0

    def feed(self, data: bytes) -> int:
        found = 0
        while data:
            if self.body_left:
                used = min(self.body_left, len(data))
                self.body_left -= used
                data = data[used:]
                continue
            self.buffer += data
            data = b""
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return found
            head, data = self.buffer[:end], self.buffer[end + 4:]
            self.buffer = b""
            found += 1
            self.body_left = _content_length(head)
        return found


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def _serve(upstream_host: str, upstream_port: int, counter_file: Path) -> None:
    counters = np.memmap(counter_file, dtype=np.int64, mode="r+", shape=(len(FIELDS),))

    async def pump(reader, writer, index: int, requests: RequestCounter | None):
        try:
            while data := await reader.read(1 << 16):
                counters[index] += len(data)
                if requests is not None:
                    counters[2] += requests.feed(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def relay(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(upstream_host, upstream_port)
        except OSError:
            client_writer.close()
            return
        counters[3] += 1
        await asyncio.gather(pump(client_reader, server_writer, 1, RequestCounter()),
                             pump(server_reader, client_writer, 0, None))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    print(f"listening {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv=None):
    host, port, counter_file = (argv or sys.argv[1:])[:3]
    asyncio.run(_serve(host, int(port), Path(counter_file)))


if __name__ == "__main__":
    main()
