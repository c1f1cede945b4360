"""Sources of training-like pairs for the probes (:mod:`normscope.probes`).

A :class:`PairSource` is two aligned lists of texts (``left[i]``, ``right[i]`` form a positive
pair). Sources:

- :func:`beir_pairs`: BEIR (query, relevant document) pairs of a qrels split, e.g. SciFact train;
- :func:`wordnet_pairs`: (term, gloss) pairs from WordNet 3.0 (Miller 1995) through NLTK;
- :func:`file_pairs`: a user's two-column ``.tsv``/``.csv`` file;
- :func:`load_pairs`: one string spec for all of them (used by the CLI).

Batches are drawn deterministically from a seed by :meth:`PairSource.batches`.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normscope._format import plural
from normscope.data import data_path
from normscope.errors import DataError, InputError
from normscope.inputs import csv_records
from normscope.lexicons.wordnet import load_wordnet

__all__ = ["PairSource", "sample_pair_batches", "beir_pairs", "wordnet_pairs", "file_pairs", "load_pairs", "pair_source_path"]


def sample_pair_batches(n_pairs: int, batch_size: int, batches: int, seed: int) -> list[np.ndarray]:
    """Deterministic probe batches: ``batches`` index arrays of ``batch_size`` distinct pairs.

    Each batch is drawn without replacement from ``numpy.random.default_rng(seed)``.

    Raises
    ------
    InputError
        If there are fewer than ``batch_size`` pairs or ``batch_size < 2``.
    """
    if batch_size < 2:
        raise InputError(f"batch_size must be >= 2 (in-batch negatives), got {batch_size}")
    if n_pairs < batch_size:
        raise InputError(f"only {n_pairs} pairs for a batch size of {batch_size}")
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n_pairs, size=batch_size, replace=False)) for _ in range(batches)]




@dataclass(frozen=True)
class PairSource:
    """Aligned positive pairs.

    Attributes
    ----------
    left, right : list of str
        ``(left[i], right[i])`` is a positive pair (query side, document side).
    name : str
        Human-readable origin, reported in probe summaries.
    """

    left: list
    right: list
    name: str = "pairs"

    def __post_init__(self):
        if len(self.left) != len(self.right):
            raise InputError(f"pair source {self.name}: {len(self.left)} left but {len(self.right)} right members")

    def __len__(self) -> int:
        return len(self.left)

    def batches(self, batch_size: int, n_batches: int, seed: int = 0) -> list[np.ndarray]:
        """``n_batches`` index arrays of ``batch_size`` distinct pairs, deterministic in ``seed``.

        Raises
        ------
        InputError
            If ``batch_size < 2`` or fewer pairs than ``batch_size``.
        """
        return sample_pair_batches(len(self), batch_size, n_batches, seed)


# ----------------------------------------------------------------------------- BEIR
def beir_pairs(path: str | Path, split: str = "train", *, min_score: int = 1) -> PairSource:
    """(query text, relevant document text) pairs of a BEIR dataset's qrels split.

    The directory is read by :func:`normscope.data.beir.load_beir` (``queries.jsonl[.gz]``,
    ``corpus.jsonl[.gz]`` with document text :func:`~normscope.data.beir.doc_text`, i.e.
    ``title + " " + text`` when a title exists, as BEIR does, and ``qrels/{split}.tsv``; CRLF
    line endings tolerated). Pairs with ``score >= min_score`` are kept, in qrels order (queries
    in order of first appearance, each query's documents in file order).

    Parameters
    ----------
    path : str or Path
        BEIR dataset directory (e.g. ``shared_data_dir() / "scifact"``; Thakur et al. 2021).
    split : str
        qrels split name.
    min_score : int, keyword-only

    Returns
    -------
    PairSource

    Raises
    ------
    DataError
        Missing files, malformed lines (see :func:`~normscope.data.beir.load_beir`), qrels
        ids absent from the queries or corpus, or no pair with ``score >= min_score``.
    """
    from normscope.data.beir import load_beir  # deferred: only BEIR pairs need it (keeps start-up light)

    path = Path(path)
    ds = load_beir(path, splits=[split])
    corpus = dict(zip(ds.doc_ids, ds.doc_texts))
    rfile = path / "qrels" / f"{split}.tsv"
    left, right = [], []
    for qid, judged in ds.qrels[split].items():
        for did, score in judged.items():
            if score < min_score:
                continue
            if qid not in ds.queries:
                raise DataError(f"{rfile}: query id {qid!r} not in the queries file")
            if did not in corpus:
                raise DataError(f"{rfile}: corpus id {did!r} (query {qid!r}) not in the corpus")
            left.append(ds.queries[qid])
            right.append(corpus[did])
    if not left:
        raise DataError(f"{rfile} has no pairs with score >= {min_score}")
    return PairSource(left, right, name=f"beir:{path.name}:{split}")


# ----------------------------------------------------------------------------- WordNet
def _wordnet_reader():
    """WordNet 3.0 through :func:`normscope.lexicons.wordnet.load_wordnet` (the one place it is located)."""
    return load_wordnet()


def wordnet_pairs(*, pos: str | None = "n", max_pairs: int | None = None, seed: int = 0) -> PairSource:
    """(term, gloss) pairs from WordNet 3.0: every lemma of every synset with the synset's definition.

    Multi-word lemmas have ``_`` replaced by spaces. A term with several senses gives several
    pairs (conflicting positives, i.e. ambiguity, which is what raises heat, docs/theory.md section 5).

    Parameters
    ----------
    pos : {'n', 'v', 'a', 'r'} or None, keyword-only
        Part of speech (None: all).
    max_pairs : int, optional, keyword-only
        Keep a deterministic random subset of this many pairs (``default_rng(seed)``).
    seed : int, keyword-only

    Returns
    -------
    PairSource
        Named ``wordnet-3.0:POS`` (``all`` when ``pos`` is None).

    Raises
    ------
    InputError
        Unknown ``pos``, or WordNet not found (see :func:`normscope.lexicons.wordnet.load_wordnet`).
    DataError
        WordNet database unreadable.
    """
    if pos not in (None, "n", "v", "a", "r"):
        raise InputError(f"unknown WordNet part of speech {pos!r}: use n, v, a, r or None")
    wn = _wordnet_reader()
    left, right = [], []
    for syn in wn.all_synsets(pos):
        gloss = syn.definition()
        for lemma in syn.lemma_names():
            left.append(lemma.replace("_", " "))
            right.append(gloss)
    if max_pairs is not None and max_pairs < len(left):
        keep = np.sort(np.random.default_rng(seed).choice(len(left), size=max_pairs, replace=False))
        left = [left[i] for i in keep]
        right = [right[i] for i in keep]
    return PairSource(left, right, name=f"wordnet-3.0:{pos or 'all'}")


# ----------------------------------------------------------------------------- user files
_HEADER_NAMES = frozenset({
    "left", "right", "query", "doc", "document", "anchor", "positive", "text", "text_a", "text_b", "term",
    "gloss", "sentence1", "sentence2", "question", "answer", "passage", "query-id", "corpus-id", "a", "b",
})

def file_pairs(path: str | Path, *, delimiter: str | None = None, header: bool | None = None) -> PairSource:
    """Pairs from a two-column ``.tsv`` or ``.csv`` file (extra columns are ignored).

    Parameters
    ----------
    path : str or Path
    delimiter : str, optional, keyword-only
        Default: tab for ``.tsv``/``.txt``, comma otherwise.
    header : bool, optional, keyword-only
        Whether the first row is a header; default: only when its first two cells are usual
        column names (``query``/``doc``, ``left``/``right``, ``anchor``/``positive``, ``term``/``gloss``,
        ``sentence1``/``sentence2``, ``text_a``/``text_b``, ...).

    Returns
    -------
    PairSource

    Raises
    ------
    InputError
        Missing or empty file, a row with fewer than two columns (line named), an empty member.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"pair file does not exist: {path}")
    raw = path.read_bytes()
    if not raw:
        raise InputError(f"pair file is empty: {path}")
    try:
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"pair file {path} is not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise InputError(f"pair file is empty: {path}")
    name = path.name.removesuffix(".gz")
    if delimiter is None:
        delimiter = "\t" if name.endswith((".tsv", ".txt")) else ","
    if delimiter == "\t":  # tab-separated pairs carry no quoting: a quote is text (it never joins lines)
        rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE)
                if any(c.strip() for c in r)]
    else:
        rows = [r for _, r in csv_records(text, path, delimiter=delimiter) if any(c.strip() for c in r)]
    if header is None:  # a header is recognised by its column names only (predictable, unlike sniffing)
        header = bool(rows) and len(rows[0]) >= 2 and all(c.strip().lower() in _HEADER_NAMES for c in rows[0][:2])
    first_line = 1
    if header and rows:
        rows = rows[1:]
        first_line = 2
    left, right = [], []
    for ln, row in enumerate(rows, first_line):
        if len(row) < 2:
            raise InputError(
                f"pair file {path}: line {ln} has {plural(len(row), 'column')}; a pair file needs two columns "
                f"(left, right) separated by {delimiter!r}"
            )
        a, b = row[0].strip(), row[1].strip()
        if not a or not b:
            raise InputError(f"pair file {path}: line {ln} has an empty member")
        left.append(a)
        right.append(b)
    if not left:
        raise InputError(f"pair file {path} has no pairs")
    return PairSource(left, right, name=f"file:{path.name}")


def pair_source_path(spec: str) -> Path | None:
    """The file or directory a pair-source spec of :func:`load_pairs` reads, or None for a dataset name.

    Used to check, before any work, that no output of a command names its pair file.
    """
    spec = str(spec)
    if spec in ("wordnet", "scifact") or spec.startswith(("wordnet:", "scifact:")):
        return None
    if spec.startswith("beir:"):
        rest = spec[5:]
        return Path(rest.rpartition(":")[0] if rest.count(":") and not Path(rest).is_dir() else rest)
    return Path(spec)


def load_pairs(spec: str) -> PairSource:
    """Resolve a pair-source spec (used by ``normscope probe --pairs``).

    Parameters
    ----------
    spec : str
        - ``wordnet`` or ``wordnet:POS`` (POS in n, v, a, r, all): (term, gloss) pairs;
        - ``scifact`` or ``scifact:SPLIT``: SciFact from the shared data folder;
        - ``beir:DIR`` or ``beir:DIR:SPLIT``: any BEIR directory (default split ``train``);
        - a path to a two-column ``.tsv``/``.csv`` file, or to a BEIR directory.

    Returns
    -------
    PairSource

    Raises
    ------
    InputError, DataError
    """
    spec = str(spec)
    if spec == "wordnet" or spec.startswith("wordnet:"):
        pos = spec.split(":", 1)[1] if ":" in spec else "n"
        return wordnet_pairs(pos=None if pos == "all" else pos)
    if spec == "scifact" or spec.startswith("scifact:"):
        split = spec.split(":", 1)[1] if ":" in spec else "train"
        return beir_pairs(data_path("scifact"), split)
    if spec.startswith("beir:"):
        rest = spec[5:]
        d, _, split = rest.rpartition(":") if rest.count(":") and not Path(rest).is_dir() else (rest, "", "")
        return beir_pairs(d, split or "train")
    p = Path(spec)
    if p.is_dir():
        return beir_pairs(p, "train")
    if p.is_file():
        return file_pairs(p)
    if p.suffix.lower() in (".tsv", ".csv", ".txt", ".gz") or "/" in spec:
        raise InputError(f"pair file not found: {spec}")
    raise InputError(f"unknown pair source {spec!r}: use wordnet, scifact[:split], beir:DIR[:split] or a .tsv/.csv file")
