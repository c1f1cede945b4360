"""Concreteness ratings of Brysbaert, Warriner & Kuperman (2014).

"Concreteness ratings for 40 thousand generally known English word lemmas", Behavior Research
Methods 46:904-911: mean rating ``Conc.M`` on a 1 (abstract) to 5 (concrete) scale, about 25-30
raters per word; 37,058 single words and 2,896 two-word expressions.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from normscope._format import noun
from normscope.errors import DataError, InputError
from normscope.data.files import data_file

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["load_concreteness", "concreteness", "concreteness_words"]

_FILE = "Concreteness_ratings_Brysbaert_et_al_BRM.txt"
_REQUIRED = ("Word", "Bigram", "Conc.M")


@functools.lru_cache(maxsize=2)
def _read(path: str) -> pd.DataFrame:
    import pandas as pd  # deferred: pandas is not needed to start the CLI (benchmarks/cli_startup.py)

    try:
        # keep_default_na=False: words such as "null", "nan" and "NA" are real entries;
        # the file is tab-separated with CRLF endings (handled by the C parser).
        df = pd.read_csv(path, sep="\t", dtype={"Word": str}, keep_default_na=False, na_values={"Conc.M": [""]},
                         encoding="utf-8", encoding_errors="replace")
    except (OSError, pd.errors.ParserError, UnicodeError) as exc:
        raise DataError(f"cannot read concreteness file {path}: {exc}") from exc
    df.columns = [c.strip() for c in df.columns]
    missing = [c for c in _REQUIRED if c not in df.columns]
    if missing:
        raise InputError(f"{path} lacks {noun(len(missing), 'column')} {missing}; found {list(df.columns)}")
    out = pd.DataFrame({
        "word": df["Word"].astype(str).str.strip(),
        "bigram": pd.to_numeric(df["Bigram"], errors="coerce").fillna(0).astype(int).astype(bool),
        "conc_m": pd.to_numeric(df["Conc.M"], errors="coerce"),
        "conc_sd": pd.to_numeric(df.get("Conc.SD"), errors="coerce") if "Conc.SD" in df else np.nan,
    })
    out = out[out["word"] != ""].reset_index(drop=True)
    out["key"] = out["word"].str.lower()
    return out


def load_concreteness(path: str | os.PathLike | None = None) -> pd.DataFrame:
    """Read the Brysbaert et al. (2014) concreteness ratings.

    Parameters
    ----------
    path : path-like, optional
        Tab-separated file with columns ``Word``, ``Bigram``, ``Conc.M`` (and optionally
        ``Conc.SD``). Default: ``<shared data>/concreteness_brysbaert2014/`` + the original name.

    Returns
    -------
    pandas.DataFrame
        Columns ``word`` (str), ``bigram`` (bool, two-word expression), ``conc_m`` (float64,
        1-5), ``conc_sd`` (float64), ``key`` (lower-cased word). Words like "null" are kept.

    Raises
    ------
    InputError
        No file and no shared data, or a file without the required columns.
    DataError
        Unreadable file.
    """
    p = data_file(path, subdir="concreteness_brysbaert2014", name=_FILE, what="concreteness ratings")
    return _read(str(p))


def concreteness(words: Sequence[str], *, path: str | os.PathLike | None = None) -> np.ndarray:
    """Mean concreteness rating (``Conc.M``, 1 = abstract .. 5 = concrete) of each word.

    Parameters
    ----------
    words : sequence of str, length n
        Words or two-word expressions; matched case-insensitively after stripping spaces.
    path : path-like, optional, keyword-only
        Ratings file (see :func:`load_concreteness`).

    Returns
    -------
    ndarray of shape (n,), float64; NaN for words not rated.
    """
    import pandas as pd  # deferred (start-up)

    df = load_concreteness(path)
    lut = df.drop_duplicates("key").set_index("key")["conc_m"]
    keys = pd.Index([" ".join(str(w).lower().split()) for w in words])
    return lut.reindex(keys).to_numpy(dtype=np.float64)


def concreteness_words(*, path: str | os.PathLike | None = None, n: int | None = None, seed: int = 0) -> list[str]:
    """Single words (``Bigram == 0``) of the ratings file, all or a seeded random sample of ``n``.

    Returns
    -------
    list of str, in file order (a sample keeps file order too).
    """
    df = load_concreteness(path)
    words = df.loc[~df["bigram"] & df["conc_m"].notna(), "word"].drop_duplicates().tolist()
    if n is not None and n < len(words):
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(len(words), size=n, replace=False))
        words = [words[i] for i in keep]
    return words
