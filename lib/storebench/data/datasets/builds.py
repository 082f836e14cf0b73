"""How a public route's downloads become the file the suite reads (``routes.Route.build``). Each
build writes ``out`` from the downloaded files, in the route's order; the caller checks ``out``
against the route's pin, which these builds reproduce byte for byte (checked against the offline
mirror's copies)."""
from __future__ import annotations

import hashlib
import io
import shutil
import subprocess
import tarfile
import zipfile
from pathlib import Path

TIMM_INFO = "timm/data/_info/"


def copy(downloads: list[Path], out: Path) -> None:
    shutil.copyfile(downloads[0], out)


def gzip_file(downloads: list[Path], out: Path) -> None:
    _gzip(downloads[0].read_bytes(), out)


def openke_triples(downloads: list[Path], out: Path) -> None:
    entity_file, relation_file, train_file = downloads
    entities, relations = _openke_names(entity_file), _openke_names(relation_file)
    lines = train_file.read_text(encoding="utf-8").splitlines()
    triples = [line.split() for line in lines[1:]]
    if len(triples) != int(lines[0]):
        raise ValueError(f"{train_file}: header says {lines[0]} triples, file has {len(triples)}")
    text = "".join(f"{entities[int(h)]}\t{relations[int(r)]}\t{entities[int(t)]}\n" for h, t, r in triples)
    _gzip(text.encode("utf-8"), out)


def imagenet_tar(downloads: list[Path], out: Path) -> None:
    with tarfile.open(out, "w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(_member("images", tarfile.DIRTYPE, 0o755))
        for name, data in sorted(_jpegs(downloads[0]).items()):
            tar.addfile(_member(f"images/{name}", tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))


def imagenet_classes(downloads: list[Path], out: Path) -> None:
    synsets, lemmas = _timm_classes(downloads[0])
    rows = "".join(f"{index}\t{synset}\t{lemmas[synset]}\n" for index, synset in enumerate(synsets))
    out.write_text("class_index\tsynset\tlemmas\n" + rows, encoding="utf-8")


def imagenet_manifest(downloads: list[Path], out: Path) -> None:
    from PIL import Image

    tarball, wheel = downloads
    class_index = {synset: index for index, synset in enumerate(_timm_classes(wheel)[0])}
    rows = []
    for name, data in _jpegs(tarball).items():
        synset = name.split("_")[0]
        with Image.open(io.BytesIO(data)) as image:
            (width, height), mode = image.size, image.mode
        rows.append((class_index[synset], f"{name}\t{synset}\t{class_index[synset]}\t{len(data)}\t{width}\t{height}\t"
                                          f"{mode}\t{hashlib.sha256(data).hexdigest()}\n"))
    header = "filename\tsynset\tclass_index\tbytes\twidth\theight\tmode\tsha256\n"
    out.write_text(header + "".join(row for _, row in sorted(rows)), encoding="utf-8")


BUILDS = {"copy": copy, "gzip": gzip_file, "openke-triples": openke_triples, "imagenet-tar": imagenet_tar,
          "imagenet-classes": imagenet_classes, "imagenet-manifest": imagenet_manifest}


def _gzip(data: bytes, out: Path) -> None:
    # GNU gzip, as the mirror was packed: Python's zlib makes a different (equally valid) stream,
    # and data/ should hold the same bytes whichever route filled it.
    if shutil.which("gzip") is None:
        raise OSError("the public route packs files with GNU gzip (`gzip -n -9`), which is not on PATH")
    with open(out, "wb") as packed:
        subprocess.run(["gzip", "-n", "-9", "-c"], input=data, stdout=packed, check=True)


def _openke_names(path: Path) -> dict[int, str]:
    lines = path.read_text(encoding="utf-8").splitlines()  # OpenKE's vocabularies end lines with CRLF
    names = {int(index): name for name, index in (line.split("\t") for line in lines[1:])}
    if len(names) != int(lines[0]):
        raise ValueError(f"{path}: header says {lines[0]} names, file has {len(names)}")
    return names


def _jpegs(tarball: Path) -> dict[str, bytes]:
    """The JPEGs at the top of a GitHub codeload tarball (``<repo>-<commit>/<name>.JPEG``), by name."""
    with tarfile.open(tarball, "r:gz") as tar:
        return {Path(member.name).name: tar.extractfile(member).read() for member in tar
                if member.isfile() and member.name.count("/") == 1 and member.name.endswith(".JPEG")}


def _member(name: str, kind: bytes, mode: int, size: int = 0) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.mode, member.size, member.mtime = kind, mode, size, 0
    member.uid = member.gid = 0
    member.uname = member.gname = ""
    return member


def _timm_classes(wheel: Path) -> tuple[list[str], dict[str, str]]:
    with zipfile.ZipFile(wheel) as archive:
        synsets = archive.read(TIMM_INFO + "imagenet_synsets.txt").decode("utf-8").split()
        lemma_lines = archive.read(TIMM_INFO + "imagenet_synset_to_lemma.txt").decode("utf-8").splitlines()
    return synsets, dict(line.split("\t", 1) for line in lemma_lines)
