"""Word frequency covariates: wordfreq Zipf frequency and SUBTLEX-US Zipf values.

The Zipf scale (van Heuven, Mandera, Keuleers & Brysbaert 2014) is ``log10`` of the frequency
per billion words: 1 = one per 100 million words, 7 = one per thousand ("the" is about 7.5).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import functools
import gzip
import math
import os
from collections.abc import Sequence

import numpy as np

from normscope.errors import DataError, InputError
from normscope.data.files import data_file

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["zipf_frequency", "load_subtlex", "subtlex_zipf", "SUBTLEX_CORPUS_MILLIONS"]

SUBTLEX_CORPUS_MILLIONS = 51.0
"""Size of the SUBTLEX-US subtitle corpus in millions of words (Brysbaert & New 2009)."""

_SUBTLEX_FILE = "SUBTLEXus74286wordstextversion.txt.gz"


def _tokens(text: str, lang: str) -> list[str]:
    from wordfreq import tokenize

    return tokenize(str(text), lang)


def zipf_frequency(items: Sequence[str], *, lang: str = "en") -> np.ndarray:
    """Zipf frequency of each item from ``wordfreq`` (Speer et al.; wordfreq 3 English lists).

    Parameters
    ----------
    items : sequence of str, length n
        Words, phrases or sentences. Each item is split with ``wordfreq.tokenize`` (which drops
        punctuation); a one-token item gets ``wordfreq.zipf_frequency(token)``, a multi-token
        item the *mean* Zipf frequency of its tokens that wordfreq knows.
    lang : str, keyword-only
        wordfreq language code.

    Returns
    -------
    ndarray of shape (n,), float64
        Zipf values (log10 frequency per 10^9 words; wordfreq floors rare words at about 1).
        NaN for an item with no token known to wordfreq (wordfreq reports 0 for unknown words,
        which is "undefined" here, not "very rare").
    """
    from wordfreq import zipf_frequency as _zipf

    out = np.full(len(items), np.nan)
    cache: dict[str, float] = {}
    for i, it in enumerate(items):
        vals = []
        for tok in _tokens(it, lang):
            z = cache.get(tok)
            if z is None:
                z = cache[tok] = float(_zipf(tok, lang))
            if z > 0:
                vals.append(z)
        if vals:
            out[i] = float(np.mean(vals))
    return out


@functools.lru_cache(maxsize=2)
def _read_subtlex(path: str) -> pd.DataFrame:
    import pandas as pd  # deferred: the CLI starts without pandas (benchmarks/cli_startup.py)

    opener = gzip.open if path.endswith(".gz") else open
    words: list[str] = []
    counts: list[int] = []
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace", newline=None) as f:
            header = f.readline().rstrip("\r\n").split("\t")
            if "Word" not in header or "FREQcount" not in header:
                raise InputError(f"{path} is not a SUBTLEX-US file: header {header[:9]} lacks Word and FREQcount")
            iw, ic = header.index("Word"), header.index("FREQcount")
            for line in f:
                parts = line.rstrip("\r\n").split("\t")
                if len(parts) != len(header):  # e.g. the trailing 'seatbelts ____' line
                    continue
                try:
                    counts.append(int(parts[ic]))
                except ValueError:
                    continue
                words.append(parts[iw])
    except (OSError, EOFError) as exc:
        raise DataError(f"cannot read SUBTLEX-US file {path}: {exc}") from exc
    if not words:
        raise InputError(f"{path} holds no SUBTLEX-US rows")
    df = pd.DataFrame({"word": words, "count": np.asarray(counts, dtype=np.int64)})
    df["key"] = df["word"].str.lower()
    return df


def load_subtlex(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Read SUBTLEX-US word counts (Brysbaert & New 2009).

    Parameters
    ----------
    path : path-like, optional
        The tab-separated SUBTLEX-US text file (``.gz`` allowed) with header columns ``Word`` and
        ``FREQcount``. Default: ``<shared data>/subtlex_us/SUBTLEXus74286wordstextversion.txt.gz``.
        Lines without the header's number of fields are skipped.

    Returns
    -------
    pandas.DataFrame
        Columns ``word`` (str, as in the file), ``count`` (int64), ``key`` (lower-cased word).

    Raises
    ------
    InputError
        No file given and no shared data; a file without ``Word``/``FREQcount`` columns or rows.
    DataError
        Unreadable (corrupt gzip) file.
    """
    p = data_file(path, subdir="subtlex_us", name=_SUBTLEX_FILE, what="SUBTLEX-US")
    return _read_subtlex(str(p))


def subtlex_zipf(
    words: Sequence[str],
    *,
    path: str | os.PathLike | None = None,
    corpus_millions: float = SUBTLEX_CORPUS_MILLIONS,
) -> np.ndarray:
    """SUBTLEX-US Zipf value of each word (van Heuven et al. 2014, eq. for the Zipf scale).

    ``Zipf = log10((count + 1) / (corpus_millions + n_types / 1e6)) + 3``, with ``count`` the
    word's SUBTLEX-US frequency (case-insensitive: counts of case variants are summed),
    ``n_types`` the number of word types in the file (74,286) and ``corpus_millions`` the corpus
    size (51.0 million words). The +1 (Laplace) smoothing gives words absent from the list the
    value ``log10(1 / 51.074) + 3 = 1.29``, as in van Heuven et al.

    Parameters
    ----------
    words : sequence of str, length n
        Single words; a multi-word item gets the mean Zipf value of its whitespace tokens.
    path : path-like, optional, keyword-only
        SUBTLEX-US file (see :func:`load_subtlex`).
    corpus_millions : float, keyword-only
        Corpus size in millions of words.

    Returns
    -------
    ndarray of shape (n,), float64; NaN only for empty items.
    """
    df = load_subtlex(path)
    counts = df.groupby("key")["count"].sum()
    denom = corpus_millions + len(df) / 1e6
    lut = counts.to_dict()
    out = np.full(len(words), np.nan)
    for i, w in enumerate(words):
        toks = str(w).lower().split()
        if toks:
            out[i] = float(np.mean([math.log10((lut.get(t, 0) + 1) / denom) + 3 for t in toks]))
    return out
