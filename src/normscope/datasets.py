"""Dataset locators and loaders: shared-data directory, wordfreq word lists.

``shared_data_dir()`` finds the data folder given by ``--data`` (:func:`data_root`), else
``$NORMSCOPE_DATA``, else ``../shared/data``; tests and commands that need it skip or say so when it
is absent.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path

from normscope.errors import DataError, InputError

__all__ = ["shared_data_dir", "data_root", "set_data_root", "data_root_given", "wordfreq_words", "wordfreq_spec"]

_ROOT: contextvars.ContextVar[Path | None] = contextvars.ContextVar("normscope_data_root", default=None)


@contextlib.contextmanager
def data_root(path: str | os.PathLike | None) -> Iterator[None]:
    """Inside the block, :func:`shared_data_dir` is ``path`` (``--data DIR``; None changes nothing).

    A context variable, like ``--offline`` and ``--mirror`` (:func:`normscope.data.settings`): the
    process environment is not touched.
    """
    if path is None:
        yield
        return
    token = _ROOT.set(Path(path).resolve())
    try:
        yield
    finally:
        _ROOT.reset(token)


def set_data_root(path: str | os.PathLike) -> None:
    """:func:`shared_data_dir` is ``path`` for the rest of the current context (the CLI's global ``--data``;
    each command runs in its own :mod:`contextvars` context).

    Raises
    ------
    InputError
        ``path`` is not a directory.
    """
    if not Path(path).is_dir():
        raise InputError(f"--data directory does not exist: {path}")
    _ROOT.set(Path(path).resolve())


def data_root_given() -> Path | None:
    """The folder set by :func:`data_root` (``--data``) in this context, or None."""
    return _ROOT.get()


def shared_data_dir() -> Path | None:
    """The shared real-data directory, or None when absent.

    The ``--data`` folder (:func:`set_data_root`) when one was given; otherwise ``$NORMSCOPE_DATA`` when
    it is set (it must then be a folder: a set but missing or misspelt value is an error, never a silent
    fall back to another folder); otherwise ``../shared/data`` relative to the current directory, then to
    the repository root of this source tree.

    Raises
    ------
    DataError
        ``$NORMSCOPE_DATA`` is set but is not a folder.
    """
    root = _ROOT.get()
    if root is not None:
        return root if root.is_dir() else None
    env = os.environ.get("NORMSCOPE_DATA")
    if env:
        if not Path(env).is_dir():
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
    lang : str, keyword-only
        wordfreq language code (default ``"en"``).
    alphabetic : bool, keyword-only
        Keep only purely alphabetic tokens (drops numbers and punctuation).
    min_len : int, keyword-only
        Shortest word kept, in characters (applies with ``alphabetic``).

    Returns
    -------
    list of str, length <= n, most frequent first.
    """
    from wordfreq import top_n_list

    words = top_n_list(lang, n * 3 if alphabetic else n)
    if alphabetic:
        words = [w for w in words if w.isalpha() and len(w) >= min_len]
    return words[:n]


def wordfreq_spec(spec: str | os.PathLike) -> int | None:
    """N of an items spec ``wordfreq:N`` (the N most frequent English words), None for any other spec (a path).

    Raises
    ------
    InputError
        ``wordfreq:`` followed by anything but a positive integer.
    """
    spec = str(spec)
    if not spec.startswith("wordfreq:"):
        return None
    n = spec.split(":", 1)[1]
    if not n.isdigit() or int(n) < 1:
        raise InputError(f"wordfreq:N needs a positive integer N, got {spec!r}")
    return int(n)
