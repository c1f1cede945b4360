"""Dataset locators and loaders: shared-data directory, wordfreq word lists.

``shared_data_dir()`` finds ``../shared/data`` (or ``$NORMSCOPE_DATA``); tests and
commands that need it skip or say so when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_data_dir", "wordfreq_words"]


def shared_data_dir() -> Path | None:
    """The shared real-data directory, or None when absent.

    ``$NORMSCOPE_DATA`` when it is set (it must then be a folder: a set but missing or misspelt
    value is an error, never a silent fall back to another folder); otherwise ``../shared/data``
    relative to the current directory, then to the repository root of this source tree.

    Raises
    ------
    DataError
        ``$NORMSCOPE_DATA`` is set but is not a folder.
    """
    env = os.environ.get("NORMSCOPE_DATA")
    if env:
        if not Path(env).is_dir():
            from normscope.errors import DataError

            raise DataError(f"$NORMSCOPE_DATA={env} is not a folder (misspelt or missing?): set it to a data folder "
                            "or unset it")
        return Path(env)
    for c in (Path.cwd().parent / "shared" / "data", Path(__file__).resolve().parents[3] / "shared" / "data"):
        if c.is_dir():
            return c
    return None


def wordfreq_words(n: int, *, lang: str = "en", alphabetic: bool = True, min_len: int = 1) -> list[str]:
    """Top-``n`` words of ``wordfreq``'s frequency list for ``lang`` (Speer et al., wordfreq 3).

    Parameters
    ----------
    n : int
        Number of words returned.
    alphabetic : bool, keyword-only
        Keep only purely alphabetic tokens (drops numbers and punctuation).

    Returns
    -------
    list of str, length <= n, most frequent first.
    """
    from wordfreq import top_n_list

    words = top_n_list(lang, n * 3 if alphabetic else n)
    if alphabetic:
        words = [w for w in words if w.isalpha() and len(w) >= min_len]
    return words[:n]
