"""The public routes, without the internet: a real HTTP server on 127.0.0.1 serves copies of the
mirror's files at the public URLs' paths (STOREBENCH_DATASETS_URL points at it)."""
import gzip
import io
import tarfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from storebench.data.datasets import corpora, imagenet
from storebench.data.datasets.builds import openke_triples
from storebench.data.datasets.download import ChecksumMismatch, public_url
from storebench.data.datasets.mirror import DatasetMissing, datasets_mirror, sha256
from storebench.data.datasets.obtain import fetch_reference
from storebench.data.datasets.routes import IMAGENET_SAMPLE_TARBALL, ROUTES, route

REAL_MIRROR = datasets_mirror()


class Server:
    def __init__(self, root: Path):
        self.root, self.requests = root, []
        handler = partial(self._Handler, self, directory=str(root))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def put(self, public: str, data: bytes) -> None:
        """``data`` served where ``public`` (an https URL of a route) is redirected to."""
        path = self.root / urlsplit(public_url_on(public, "")).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    class _Handler(SimpleHTTPRequestHandler):
        def __init__(self, server, *args, **kwargs):
            self.owner = server
            super().__init__(*args, **kwargs)

        def do_GET(self):
            self.owner.requests.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass


def public_url_on(url: str, base: str) -> str:
    parts = urlsplit(url)
    return f"{base}/{parts.netloc}{parts.path}"


@pytest.fixture
def server(tmp_path, monkeypatch):
    (tmp_path / "www").mkdir()
    served = Server(tmp_path / "www")
    monkeypatch.setenv("STOREBENCH_DATASETS_URL", served.url)
    monkeypatch.setenv("STOREBENCH_DATASETS_MIRROR", str(tmp_path / "no-mirror"))
    monkeypatch.setenv("STOREBENCH_CACHE", str(tmp_path / "cache"))
    yield served
    served.httpd.shutdown()
    served.httpd.server_close()


def serve_sentiment140(server):
    for file in ("positive.txt.gz", "negative.txt.gz"):
        server.put(route("sentiment140", file).downloads[0].url,
                   gzip.decompress((REAL_MIRROR / "sentiment140-sample" / file).read_bytes()))


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*")) if folder.exists() else []


def test_public_urls_are_redirected_by_host(monkeypatch):
    monkeypatch.setenv("STOREBENCH_DATASETS_URL", "http://127.0.0.1:9/files/")
    assert public_url("https://raw.githubusercontent.com/a/b/c.txt") == "http://127.0.0.1:9/files/raw.githubusercontent.com/a/b/c.txt"
    monkeypatch.delenv("STOREBENCH_DATASETS_URL")
    assert public_url("https://raw.githubusercontent.com/a/b/c.txt") == "https://raw.githubusercontent.com/a/b/c.txt"


def test_every_route_is_pinned_at_a_revision():
    for each in ROUTES:
        assert len(each.sha256) == 64
        for item in each.downloads:
            assert item.url.startswith("https://")
            assert item.sha256 is None and item.url == IMAGENET_SAMPLE_TARBALL or len(item.sha256) == 64
            if "github" in item.url:
                assert any(len(part) == 40 for part in item.url.split("/")), item.url  # a commit, not a branch


def test_without_the_mirror_sentiment140_comes_from_the_public_route(server, tmp_path):
    serve_sentiment140(server)
    folder = corpora.fetch("sentiment140", tmp_path / "data")
    assert len(server.requests) == 2 and all("/raw.githubusercontent.com/" in r for r in server.requests)
    for file in ("positive.txt.gz", "negative.txt.gz"):  # the same bytes as the mirror's (GNU gzip -n -9)
        assert sha256(folder / file) == sha256(REAL_MIRROR / "sentiment140-sample" / file)
    assert leftovers(tmp_path / "data") == ["negative.txt.gz", "positive.txt.gz", "sentiment140"]
    from_route = np.load(corpora.prepare("sentiment140", tmp_path / "data", tmp_path / "route"))
    corpora.fetch("sentiment140", tmp_path / "mirror-data", mirror=REAL_MIRROR)
    from_mirror = np.load(corpora.prepare("sentiment140", tmp_path / "mirror-data", tmp_path / "mirror"))
    assert all(np.array_equal(from_route[k], from_mirror[k]) for k in ("text_data", "text_offsets", "label"))


def test_the_mirror_comes_first(server, tmp_path):
    corpora.fetch("sentiment140", tmp_path / "data", mirror=REAL_MIRROR)
    assert server.requests == []
    assert sha256(tmp_path / "data" / "sentiment140" / "positive.txt.gz") == corpora.SENTIMENT140_FILES["positive.txt.gz"]


def test_a_corrupted_download_is_rejected_and_leaves_nothing(server, tmp_path):
    serve_sentiment140(server)
    url = route("sentiment140", "positive.txt.gz").downloads[0].url
    good = gzip.decompress((REAL_MIRROR / "sentiment140-sample" / "positive.txt.gz").read_bytes())
    server.put(url, good[:1000] + bytes([good[1000] ^ 1]) + good[1001:])
    with pytest.raises(ChecksumMismatch) as error:
        corpora.fetch("sentiment140", tmp_path / "data")
    message = str(error.value)
    assert public_url_on(url, server.url) in message
    assert route("sentiment140", "positive.txt.gz").downloads[0].sha256 in message
    assert sha256_of(good[:1000] + bytes([good[1000] ^ 1]) + good[1001:]) in message
    assert not (tmp_path / "data" / "sentiment140" / "positive.txt.gz").exists()
    assert [p for p in leftovers(tmp_path / "data") if p.endswith(".part")] == []
    assert [p for p in leftovers(tmp_path / "cache") if "positive" in p] == []


def sha256_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_a_file_on_neither_route_names_both(server, tmp_path):
    with pytest.raises(DatasetMissing) as error:
        corpora.fetch("fb15k237", tmp_path / "data")
    message = str(error.value)
    assert str(tmp_path / "no-mirror" / "fb15k-237" / "train.txt.gz") in message  # the mirror path it looked in
    assert public_url_on(route("fb15k237", "train.txt.gz").downloads[0].url, server.url) in message  # the URL tried
    assert "404" in message  # the underlying error
    assert "train2id.txt" in message and str(tmp_path / "data" / "fb15k237" / "train.txt.gz") in message  # what, where
    assert leftovers(tmp_path / "data" / "fb15k237") == []


def test_an_unreachable_server_is_a_missing_dataset(server, tmp_path, monkeypatch):
    monkeypatch.setenv("STOREBENCH_DATASETS_URL", "http://127.0.0.1:1")  # nothing listens on port 1
    with pytest.raises(DatasetMissing, match="Connection refused|refused"):
        imagenet.fetch(tmp_path / "data")
    assert server.requests == []


def test_imagenet_route_checks_what_it_builds_from_an_unpinned_tarball(server, tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:  # a codeload-shaped tarball with one wrong JPEG
        member = tarfile.TarInfo("imagenet-sample-images-x/n01440764_tench.JPEG")
        member.size = 4
        tar.addfile(member, io.BytesIO(b"\xff\xd8no"))
    server.put(IMAGENET_SAMPLE_TARBALL, buffer.getvalue())
    with pytest.raises(ChecksumMismatch, match="imagenet-sample.tar .*does not match its pin"):
        imagenet.fetch(tmp_path / "data")
    assert leftovers(tmp_path / "data" / "imagenet-sample") == []
    assert leftovers(tmp_path / "cache" / "downloads") == []  # the unpinned tarball is not reused


def test_openke_ids_become_text_triples(tmp_path):
    (tmp_path / "e.txt").write_bytes(b"3\r\n/m/a\t0\r\n/m/b\t1\r\n/m/c\t2\r\n")
    (tmp_path / "r.txt").write_bytes(b"2\r\n/x\t0\r\n/y\t1\r\n")
    (tmp_path / "t.txt").write_bytes(b"2\n0 1 1\n2 0 0\n")  # head tail relation
    openke_triples([tmp_path / "e.txt", tmp_path / "r.txt", tmp_path / "t.txt"], tmp_path / "out.gz")
    assert gzip.decompress((tmp_path / "out.gz").read_bytes()) == b"/m/a\t/y\t/m/b\n/m/c\t/x\t/m/a\n"


def test_the_papers_full_archives_are_not_fetched_without_a_pin(server, tmp_path, monkeypatch):
    monkeypatch.delenv("STOREBENCH_ALLOW_UNPINNED", raising=False)
    for dataset in ("sentiment140", "fb15k237"):
        with pytest.raises(PermissionError, match="no pinned SHA-256"):
            fetch_reference(dataset, tmp_path)
    assert server.requests == [] and leftovers(tmp_path / "cache") == []
