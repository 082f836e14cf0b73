"""The ImageNet sample from the real mirror: pinned files, the manifest joined to the class list,
every JPEG checked as it is read; a missing or corrupted mirror is a clear error."""
import shutil

import pytest

from storebench.data.datasets import imagenet
from storebench.data.datasets import DatasetMissing, datasets_mirror


def test_manifest_has_every_class_with_its_first_lemma():
    table = imagenet.manifest()
    assert len(table) == 1000 and table["synset"].is_unique
    streetcar = table[table["label"] == "streetcar"]
    assert len(streetcar) == 1 and streetcar["lemmas"].iloc[0].startswith("streetcar, tram")
    assert table["bytes"].sum() == 109_576_417 and (table["bytes"] >= 500_000).sum() == 4


def test_images_are_the_manifest_files_byte_for_byte():
    table = imagenet.manifest().set_index("filename")
    seen = {name: len(data) for name, data in imagenet.images()}
    assert seen == table["bytes"].to_dict()


def test_a_missing_mirror_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("STOREBENCH_DATASETS_URL", "http://127.0.0.1:1")  # the public route unreachable, offline
    monkeypatch.setenv("STOREBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DatasetMissing, match="on neither route(.|\n)*nowhere"):
        imagenet.fetch(tmp_path / "data", mirror=tmp_path / "nowhere")
    with pytest.raises(DatasetMissing, match="datasets fetch imagenet-sample"):
        imagenet.manifest(tmp_path / "data")


def test_a_corrupted_mirror_file_is_refused(tmp_path):
    mirror = tmp_path / "mirror" / imagenet.NAME
    mirror.mkdir(parents=True)
    for name in imagenet.FILES:
        shutil.copyfile(datasets_mirror() / imagenet.NAME / name, mirror / name)
    with open(mirror / "manifest.tsv", "ab") as f:
        f.write(b"\n")
    with pytest.raises(RuntimeError, match="SHA-256"):
        imagenet.fetch(tmp_path / "data", mirror=tmp_path / "mirror")
