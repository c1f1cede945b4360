"""Locate and open WordNet 3.0 with NLTK's reader, offline.

Search order: ``$NORMSCOPE_WORDNET`` (a ``wordnet/`` database folder, a root holding
``corpora/wordnet``, or a ``.tgz`` archive of the ``wordnet/`` folder); NLTK's own data path
(``nltk.data.find("corpora/wordnet")``); the shared archive
``<shared data>/wordnet-3.0/wordnet-3.0.tgz`` (see its SOURCE.md), extracted once into
``<normscope cache>/nltk_data/corpora/wordnet``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

from normscope.errors import DataError

__all__ = ["find_wordnet_dir", "load_wordnet"]


def _is_db(p: Path) -> bool:
    return (p / "data.noun").is_file() and (p / "index.noun").is_file()


def _extract(archive: Path) -> Path:
    from normscope.encoders.bundled import cache_dir

    target = cache_dir() / "nltk_data" / "corpora" / "wordnet"
    if _is_db(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".wordnet.", dir=target.parent))
    try:
        try:
            with tarfile.open(archive) as tf:
                tf.extractall(tmp, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise DataError(f"cannot extract WordNet archive {archive}: {exc}") from exc
        found = [p for p in [tmp / "wordnet", tmp] + list(tmp.glob("*/")) if _is_db(p)]
        if not found:
            raise DataError(f"WordNet archive {archive} holds no data.noun/index.noun")
        with contextlib.suppress(OSError):
            os.replace(found[0], target)  # atomic; a concurrent extractor may have won
        if not _is_db(target):
            raise DataError(f"could not install WordNet into {target}")
        return target
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def find_wordnet_dir() -> Path:
    """Directory of the WordNet 3.0 database files (``data.noun``, ``index.noun``, ...).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    DataError
        When no WordNet is found (the message lists where it looked), or an archive is broken.
    """
    looked = []
    env = os.environ.get("NORMSCOPE_WORDNET")
    if env:
        p = Path(env)
        looked.append(f"$NORMSCOPE_WORDNET={p}")
        if p.is_file():
            return _extract(p)
        for cand in (p, p / "wordnet", p / "corpora" / "wordnet"):
            if _is_db(cand):
                return cand
        raise DataError(f"$NORMSCOPE_WORDNET={p} is neither a WordNet database folder nor an archive")
    try:
        import nltk

        ptr = nltk.data.find("corpora/wordnet")
        p = Path(str(ptr))
        if _is_db(p):
            return p
    except (LookupError, ImportError, OSError):
        looked.append("nltk.data.path")
    from normscope.datasets import shared_data_dir

    shared = shared_data_dir()
    if shared is not None:
        archive = shared / "wordnet-3.0" / "wordnet-3.0.tgz"
        looked.append(str(archive))
        if archive.is_file():
            return _extract(archive)
    else:
        looked.append("shared data dir (absent)")
    raise DataError("WordNet 3.0 not found; looked in " + ", ".join(looked) + " (set $NORMSCOPE_WORDNET)")


@functools.lru_cache(maxsize=2)
def _reader(path: str):
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    # NLTK >= 3.9 only reads corpora below a root on nltk.data.path, and the reader looks itself
    # up as ``corpora/wordnet`` there: expose the folder in that layout
    db = Path(path)
    if not (db.name == "wordnet" and db.parent.name == "corpora"):
        from normscope.encoders.bundled import cache_dir

        target = cache_dir() / "nltk_data_copy" / "corpora" / "wordnet"
        if not _is_db(target):
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".wordnet.", dir=target.parent))
            shutil.copytree(db, tmp / "wordnet")
            with contextlib.suppress(OSError):
                os.replace(tmp / "wordnet", target)
            shutil.rmtree(tmp, ignore_errors=True)
        db = target
    root = str(db.parent.parent)
    if root not in nltk.data.path:
        nltk.data.path.append(root)
    path = str(db)
    try:
        return WordNetCorpusReader(path, None)
    except Exception as exc:  # nltk raises various errors on a broken database
        raise DataError(f"cannot read WordNet at {path}: {exc}") from exc


def load_wordnet():
    """An ``nltk`` WordNet reader over :func:`find_wordnet_dir` (cached per process).

    Raises
    ------
    DataError
        WordNet not found or unreadable.
    """
    return _reader(str(find_wordnet_dir()))
