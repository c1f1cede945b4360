"""Content-addressed, atomic, resumable embedding cache.

Raw vectors are cached per model under
``cache_dir()/embeddings/<fingerprint.key>/`` (see
:func:`normscope.encoders.bundled.cache_dir`; ``$NORMSCOPE_CACHE`` moves it).
Each encoded batch becomes one shard file ``shard-<digest>.npz`` holding

- ``hashes``: uint8 array of shape (m, 32), the sha256 of each text's UTF-8 bytes;
- ``vectors``: float32 array of shape (m, d), the raw vectors of those texts.

A shard is written to a temporary file in the same directory and renamed into
place (``os.replace``), so a crash or SIGKILL leaves either the whole shard or
nothing under a ``shard-*.npz`` name; leftover ``.tmp`` files and unreadable or
inconsistent shards are ignored. A cache entry is looked up by
``(fingerprint.key, sha256(text))``: the same text under the same model is never
encoded twice, and a run killed half way resumes from its finished batches.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from normscope._progress import progress_bar
from normscope.encoders.bundled import cache_dir
from normscope.errors import InputError

if TYPE_CHECKING:  # typing only: the cache never imports the encoder classes
    from normscope.encoders.base import Encoder

__all__ = ["encode_cached", "model_cache_dir", "text_hashes", "load_cache_index", "shard_path", "read_shard", "write_shard"]

_HASH_BYTES = 32


def model_cache_dir(fingerprint) -> Path:
    """Cache directory of one model: ``cache_dir()/embeddings/<fingerprint.key>`` (not created)."""
    return cache_dir() / "embeddings" / fingerprint.key


def text_hashes(texts: Sequence[str]) -> np.ndarray:
    """sha256 digests of the texts' UTF-8 bytes, uint8 array of shape (n, 32)."""
    out = np.empty((len(texts), _HASH_BYTES), dtype=np.uint8)
    for i, t in enumerate(texts):
        out[i] = np.frombuffer(hashlib.sha256(t.encode("utf-8")).digest(), dtype=np.uint8)
    return out


def _read_shard(path: Path, dim: int | None, wanted: set[bytes] | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """(hashes, vectors) of a shard, or None when it is unreadable or inconsistent.

    With ``wanted``, the vectors are read only if the shard holds one of those
    hashes (an ``.npz`` member is read lazily); otherwise ``(hashes, empty)`` is returned.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            hashes = z["hashes"]
            if hashes.dtype != np.uint8 or hashes.ndim != 2 or hashes.shape[1] != _HASH_BYTES:
                return None
            if wanted is not None and not any(h.tobytes() in wanted for h in hashes):
                return hashes, np.empty((0, dim or 0), dtype=np.float32)
            vectors = z["vectors"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if (
        vectors.dtype != np.float32
        or vectors.ndim != 2
        or vectors.shape[0] != hashes.shape[0]
        or (dim is not None and vectors.shape[1] != dim)
        or not np.isfinite(vectors).all()
    ):
        return None
    return hashes, vectors


def load_cache_index(fingerprint, dim: int | None = None, wanted: set[bytes] | None = None) -> dict[bytes, np.ndarray]:
    """Cached vectors of one model: ``{sha256 digest (bytes): vector (d,) float32}``.

    Parameters
    ----------
    fingerprint : ModelFingerprint
    dim : int, optional
        Expected dimension; shards of another width are skipped.
    wanted : set of bytes, optional
        Only these digests are returned, and shards holding none of them are not
        read beyond their hash list.

    Corrupt, partial or foreign files in the directory are skipped.
    """
    index: dict[bytes, np.ndarray] = {}
    root = model_cache_dir(fingerprint)
    if not root.is_dir():
        return index
    for shard in sorted(root.glob("shard-*.npz")):
        got = _read_shard(shard, dim, wanted)
        if got is None:
            continue
        hashes, vectors = got
        for h, v in zip(hashes, vectors):
            k = h.tobytes()
            if wanted is None or k in wanted:
                index[k] = v
    return index


def shard_path(root: Path, hashes: np.ndarray) -> Path:
    """Path of the shard holding exactly the texts of ``hashes`` (uint8 (m, 32)): named by their digest."""
    return root / f"shard-{hashlib.sha256(hashes.tobytes()).hexdigest()[:32]}.npz"


def _write_shard(root: Path, hashes: np.ndarray, vectors: np.ndarray) -> Path:
    """Write one shard atomically (temp file + ``os.replace``); returns its final path."""
    root.mkdir(parents=True, exist_ok=True)
    final = shard_path(root, hashes)
    fd, tmp = tempfile.mkstemp(prefix=".shard-", suffix=".tmp", dir=root)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, hashes=hashes, vectors=np.ascontiguousarray(vectors, dtype=np.float32))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return final


#: Shard primitives for engines that batch deterministically and look a batch up by its own digest
#: (:mod:`normscope.engine.ray_engine`).
read_shard, write_shard = _read_shard, _write_shard


def encode_cached(
    encoder: Encoder,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    progress: bool = False,
    cache: bool = True,
) -> np.ndarray:
    """Raw vectors of ``texts``, reusing and filling the on-disk cache.

    Texts already cached under ``encoder.fingerprint`` are read back; the rest are
    de-duplicated, sorted by length (longest first, as sentence-transformers does,
    so batches pad little) and encoded ``batch_size`` at a time, each finished
    batch being written as one atomic shard before the next starts.

    Parameters
    ----------
    encoder : Encoder
        Any normscope encoder; its ``fingerprint.key`` names the cache namespace.
        Encoders with ``cacheable = False`` (precomputed vectors) bypass the cache.
    texts : sequence of str, length n
    batch_size : int, keyword-only
        Texts per encoder call and per shard (>= 1).
    progress : bool, keyword-only
        Show a rich progress bar on stderr, advanced once per batch.
    cache : bool, keyword-only
        False: read and write nothing on disk (still de-duplicates and batches).

    Returns
    -------
    ndarray of shape (n, d), float32
        Raw (un-normalised) vectors, row i for ``texts[i]``.

    Raises
    ------
    InputError
        If ``batch_size < 1``.
    """
    if batch_size < 1:
        raise InputError(f"batch_size must be >= 1, got {batch_size}")
    texts = [str(t) for t in texts]
    dim = int(encoder.dim)
    n = len(texts)
    out = np.empty((n, dim), dtype=np.float32)
    if n == 0:
        return out
    if not getattr(encoder, "cacheable", True):  # e.g. precomputed vectors: already on disk, positional
        return np.ascontiguousarray(encoder.encode(texts, batch_size=batch_size, progress=progress), dtype=np.float32)
    use_cache = cache
    hashes = text_hashes(texts)
    keys = [h.tobytes() for h in hashes]
    rows_of: dict[bytes, list[int]] = {}
    for i, k in enumerate(keys):
        rows_of.setdefault(k, []).append(i)

    if use_cache:
        index = load_cache_index(encoder.fingerprint, dim, wanted=set(rows_of))
        for k, rows in rows_of.items():
            v = index.get(k)
            if v is not None:
                out[rows] = v
        todo = [k for k in rows_of if k not in index]
        del index
    else:
        todo = list(rows_of)
    # longest first (character length, like SentenceTransformer.encode), stable for determinism
    todo.sort(key=lambda k: -len(texts[rows_of[k][0]]))
    root = model_cache_dir(encoder.fingerprint)
    batches = [todo[s : s + batch_size] for s in range(0, len(todo), batch_size)]

    n_cached = n - sum(len(rows_of[k]) for k in todo)
    with progress_bar(progress and len(batches) > 1, len(batches), note=f"({n_cached} cached)" if n_cached else "") as advance:
        for batch in batches:
            first_rows = [rows_of[k][0] for k in batch]
            vecs = np.asarray(encoder.encode([texts[i] for i in first_rows], batch_size=len(batch)), dtype=np.float32)
            if vecs.shape != (len(batch), dim):
                raise RuntimeError(f"encoder returned shape {vecs.shape}, expected {(len(batch), dim)}")
            if use_cache:
                _write_shard(root, np.stack([np.frombuffer(k, dtype=np.uint8) for k in batch]), vecs)
            for k, v in zip(batch, vecs):
                out[rows_of[k]] = v
            advance()
    return out
