"""The public route of every dataset file the suite uses, as data: where it is downloaded from (a
pinned URL at a pinned revision), the SHA-256 of what is downloaded, how the downloads become the
file under ``data/<dataset>/`` (a build in ``builds.BUILDS``) and the SHA-256 of that file.

Two digests, checked at two steps:

- ``Download.sha256``: the bytes the URL serves, checked as soon as they are downloaded (before
  anything is built from them). The GitHub files' digests are those of their git blobs at the
  pinned commit (no LFS, no eol attributes in those repositories), so they are what
  raw.githubusercontent.com serves. ``None`` only where the server makes the bytes itself (a
  codeload tarball, whose gzip stream GitHub does not promise to keep): there the built file's
  digest checks every byte that matters.
- ``Route.sha256``: the file the suite reads, after the build. It is the same pin as the offline
  mirror's copy (``../shared/datasets``), so ``data/`` holds identical bytes whichever route filled
  it. Every build was checked offline to reproduce the mirror's file exactly.

``REFERENCE_ARCHIVES`` are the papers' full releases (issue 24): their digests are not known here,
so they are never downloaded unless the user allows unpinned downloads (see ``obtain``).
"""
from __future__ import annotations

from dataclasses import dataclass

GITHUB_RAW = "https://raw.githubusercontent.com"
CODELOAD = "https://codeload.github.com"
PYPI_FILES = "https://files.pythonhosted.org/packages"

SENTIMENT140_REPO = f"{GITHUB_RAW}/geraldzakwan/iykra-sentiment-analysis/0f8dae787c1e4d239f8b03a04dccfd6ddb77a6cc"
OPENKE_FB15K237 = f"{GITHUB_RAW}/thunlp/OpenKE/64c4ec8157abfc39112772e9825a349091da45f1/benchmarks/FB15K237"
IMAGENET_SAMPLE_COMMIT = "bc69043e2862758a1906c6a24a792bb28c6bb2ff"
IMAGENET_SAMPLE_TARBALL = f"{CODELOAD}/EliSchwartz/imagenet-sample-images/tar.gz/{IMAGENET_SAMPLE_COMMIT}"
TIMM_WHEEL = f"{PYPI_FILES}/py3/t/timm/timm-1.0.31-py3-none-any.whl"  # PyPI's stable per-file address


@dataclass(frozen=True)
class Download:
    url: str
    sha256: str | None  # of the bytes served; None: not knowable here (see the module doc)


@dataclass(frozen=True)
class Route:
    dataset: str
    file: str  # under data/<dataset>/
    sha256: str  # of that file after the build (the mirror's pin)
    downloads: tuple[Download, ...]
    build: str  # a key of builds.BUILDS
    how: str  # the build in words, for error messages and people without this code


TIMM = Download(TIMM_WHEEL, "5bd50f7d0fe6d09bf9285ac2523234a1b7e6bf075c0be3e7aed09139fcb617c7")
IMAGENET_TARBALL = Download(IMAGENET_SAMPLE_TARBALL, None)

ROUTES = (
    Route("sentiment140", "positive.txt.gz", "0386ffaaac3f040691de7a314d9d0c5febd16ea6dffd6a26ae7e4a30a6ecdcf2",
          (Download(f"{SENTIMENT140_REPO}/data/tweets_100k/positive.txt",
                    "9974fca006a8ba35d363f2444712b16479948ba2fc9613a2d42cdd143251769d"),),
          "gzip", "gzip -n -9 of the downloaded file"),
    Route("sentiment140", "negative.txt.gz", "73d1c788520ee10f70ef70d3ba4228d5fd2f99a37978a17279905658beabcd97",
          (Download(f"{SENTIMENT140_REPO}/data/tweets_100k/negative.txt",
                    "91305124952116f2a29e1b1024eb74f74f6bfdf566189ffed2f0bfa9b181a3b7"),),
          "gzip", "gzip -n -9 of the downloaded file"),
    Route("fb15k237", "train.txt.gz", "2748477d4fedf097fa7886f60ba41d501d53bea9e9d603e94a90be9c49d12f7e",
          (Download(f"{OPENKE_FB15K237}/entity2id.txt", "e4546cfdcd0b9bd0151cc0f6ef2edee29eb2bb55a3d47e668194999c036fba0d"),
           Download(f"{OPENKE_FB15K237}/relation2id.txt",
                    "fefd26d6cd5ff9d360efe5360c11bf112d019f42b3acf165a5c04aa2b66a42d9"),
           Download(f"{OPENKE_FB15K237}/train2id.txt", "5f44223a02b39b8e398e77a787feb4f06e9ffccf1ae87047bbf38fcc8cc08bd2")),
          "openke-triples", "train2id.txt's (head, tail, relation) ids written back as head_mid<TAB>relation<TAB>"
                            "tail_mid lines in file order (names from entity2id.txt, relation2id.txt), then gzip -n -9"),
    Route("imagenet-sample", "imagenet-sample.tar", "d11cfac0be0caa8432cb70260d442da072996630ea5b9b1b49394295359f2f3b",
          (IMAGENET_TARBALL,), "imagenet-tar",
          "the repository's 1,000 JPEGs as images/<name>, GNU tar sorted by name, mtime 0, owner 0:0, "
          "modes 0644/0755 (tar --format=gnu --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner)"),
    Route("imagenet-sample", "imagenet1k_classes.tsv", "d09df8ed8bd17ce403b3aedef4b6ccf020e8a5020546d6719c44f4f5275b284e",
          (TIMM,), "imagenet-classes",
          "class_index<TAB>synset<TAB>lemmas from timm/data/_info/imagenet_synsets.txt (order) and "
          "imagenet_synset_to_lemma.txt (lemmas) in the wheel"),
    Route("imagenet-sample", "manifest.tsv", "3fddd43e2f801f0e242117ac5294e7f3cc6e31e5bdbe6d377372e9129e6c1785",
          (IMAGENET_TARBALL, TIMM), "imagenet-manifest",
          "one row per JPEG in class-index order: filename, synset, class_index, bytes, width, height, "
          "Pillow mode, sha256"),
    Route("cifar10", "cifar-10-python.tar.gz", "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
          (Download("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                    "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"),),  # Keras pins the same
          "copy", "the official archive as downloaded (the PNG mirror's files have no public archive)"),
)


@dataclass(frozen=True)
class ReferenceArchive:
    dataset: str
    url: str
    what: str
    sha256: str | None = None  # not known here: never fetched without STOREBENCH_ALLOW_UNPINNED=1


# The papers' full data (issue 24's reference run). Until each is fetched once and its digest pinned
# here, the reference run uses the substitute: the mirror's 100,000-tweet sample / 272,115 triples
# scaled by concatenation (Samples.scaled), labelled as such in the reports.
REFERENCE_ARCHIVES = (
    ReferenceArchive("sentiment140", "http://cs.stanford.edu/people/alecmgo/trainingandtestdata.zip",
                     "the full Sentiment140: 1.6M training tweets + the 498-tweet manual test set (Go et al. 2009)"),
    ReferenceArchive("fb15k237", "https://download.microsoft.com/download/8/7/0/8700516A-AB3D-4850-B4BB-805C515AECE1/"
                                 "FB15K-237.2.zip",
                     "FB15k-237's original release (Toutanova & Chen 2015): Release/{train,valid,test}.txt + text"),
)


def route(dataset: str, file: str) -> Route:
    for candidate in ROUTES:
        if (candidate.dataset, candidate.file) == (dataset, file):
            return candidate
    raise KeyError(f"no public route declared for {dataset}/{file}")


def reference_archive(dataset: str) -> ReferenceArchive:
    for archive in REFERENCE_ARCHIVES:
        if archive.dataset == dataset:
            return archive
    raise KeyError(f"no reference archive declared for {dataset}")
