"""Content-addressed, atomic, resumable embedding cache, shared safely by concurrent runs.

Raw vectors are cached per model under
``cache_dir()/embeddings/<fingerprint.key>/`` (see
:func:`normscope.encoders.bundled.cache_dir`; ``$NORMSCOPE_CACHE`` moves it).
Each encoded batch becomes one shard file ``shard-<digest>.npz`` holding

- ``hashes``: uint8 array of shape (m, 32), the sha256 of each text's UTF-8 bytes;
- ``vectors``: float32 array of shape (m, d), the raw vectors of those texts;
- ``checksum``: uint8 array of shape (32,), the sha256 of the ``hashes`` and ``vectors`` bytes,
  computed when the shard is written: a shard whose vectors were changed afterwards (a well-formed
  file with other numbers in it) no longer matches and is recomputed.

A shard is written to a temporary file in the same directory, flushed and renamed into
place (``os.replace``), so a crash or SIGKILL leaves either the whole shard or
nothing under a ``shard-*.npz`` name; leftover ``.tmp`` files are ignored. A cache entry is
looked up by ``(fingerprint.key, sha256(text))``: the same text under the same model is never
encoded twice, and a run killed half way resumes from its finished batches.

Faults (``docs/reliability.md``):

- a damaged shard (unreadable, inconsistent, NaN/Inf, checksum mismatch or none) is removed and its
  items recomputed; one
  ``note:`` line on stderr says how many;
- a cache that cannot be written (read-only, full, size limit) is used read-only: one ``note:``
  line says so and the run continues; nothing it computes is kept;
- concurrent runs over one cache share finished batches: a batch is claimed with an advisory lock
  (``fcntl.flock`` on ``.lock-<digest>``, released by the kernel when its holder dies), a run skips
  batches another run holds and reads them when that run has written them, and new shards are
  picked up before each batch. Where locks are not supported, runs compute independently (same
  vectors, no data lost).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from normscope._format import plural
from normscope._io import open_inside
from normscope._progress import progress_bar, step
from normscope.encoders import bundled
from normscope.encoders.bundled import cache_dir
from normscope.errors import InputError
from normscope.validate import write_failure

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: no locks, runs compute independently
    fcntl = None

if TYPE_CHECKING:  # typing only: the cache never imports the encoder classes
    from normscope.encoders.base import Encoder

__all__ = ["encode_cached", "model_cache_dir", "text_hashes", "load_cache_index", "notice", "shard_path", "read_shard",
           "write_shard", "shard_checksum"]

_HASH_BYTES = 32


def notice(message: str) -> None:
    """One ``note: ...`` line on stderr (what the cache did about a fault; never a traceback)."""
    print(f"note: {message}", file=sys.stderr, flush=True)


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
        with open_inside(path, path.parent) as f, np.load(f, allow_pickle=False) as z:  # never a link out of the cache
            hashes = z["hashes"]
            if hashes.dtype != np.uint8 or hashes.ndim != 2 or hashes.shape[1] != _HASH_BYTES:
                return None
            if wanted is not None and not any(h.tobytes() in wanted for h in hashes):
                return hashes, np.empty((0, dim or 0), dtype=np.float32)
            vectors = z["vectors"]
            checksum = z["checksum"]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if (
        vectors.dtype != np.float32
        or vectors.ndim != 2
        or vectors.shape[0] != hashes.shape[0]
        or (dim is not None and vectors.shape[1] != dim)
        or not np.isfinite(vectors).all()
        or checksum.dtype != np.uint8
        or checksum.tobytes() != shard_checksum(hashes, vectors)
    ):
        return None
    return hashes, vectors


def shard_checksum(hashes: np.ndarray, vectors: np.ndarray) -> bytes:
    """sha256 of a shard's ``hashes`` (uint8 (m, 32)) and ``vectors`` (float32 (m, d), C order) bytes."""
    h = hashlib.sha256(np.ascontiguousarray(hashes, dtype=np.uint8).tobytes())
    h.update(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    return h.digest()


def _scan(root: Path, names, dim: int | None, wanted: set[bytes] | None, index: dict, damaged: list) -> None:
    """Add the wanted vectors of the shards ``names`` (in ``root``) to ``index``; damaged ones to ``damaged``."""
    for name in sorted(names):
        got = _read_shard(root / name, dim, wanted)
        if got is None:
            if (root / name).exists():  # vanished meanwhile: not damage
                damaged.append(root / name)
            continue
        for h, v in zip(*got):
            k = h.tobytes()
            if wanted is None or k in wanted:
                index[k] = v


def _shard_names(root: Path) -> set[str]:
    try:
        return {e.name for e in os.scandir(root) if e.name.startswith("shard-") and e.name.endswith(".npz")}
    except OSError:
        return set()


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

    Corrupt, partial or foreign files in the directory are skipped (read-only: nothing is removed).
    """
    index: dict[bytes, np.ndarray] = {}
    root = model_cache_dir(fingerprint)
    if root.is_dir():
        _scan(root, _shard_names(root), dim, wanted, index, [])
    return index


def shard_path(root: Path, hashes: np.ndarray) -> Path:
    """Path of the shard holding exactly the texts of ``hashes`` (uint8 (m, 32)): named by their digest."""
    return root / f"shard-{hashlib.sha256(hashes.tobytes()).hexdigest()[:32]}.npz"


def _write_shard(root: Path, hashes: np.ndarray, vectors: np.ndarray) -> Path:
    """Write one shard atomically (temp file + fsync + ``os.replace``); returns its final path."""
    root.mkdir(parents=True, exist_ok=True)
    final = shard_path(root, hashes)
    fd, tmp = tempfile.mkstemp(prefix=".shard-", suffix=".tmp", dir=root)
    try:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        checksum = np.frombuffer(shard_checksum(hashes, vectors), dtype=np.uint8)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, hashes=hashes, vectors=vectors, checksum=checksum)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return final


#: Shard primitives for engines that batch deterministically and look a batch up by its own digest
#: (:mod:`normscope.extensions.ray_engine`).
read_shard, write_shard = _read_shard, _write_shard


class _Store:
    """One model's cache directory during one :func:`encode_cached` call: index, refresh, locks, writes."""

    def __init__(self, fingerprint, dim: int, wanted: set[bytes]) -> None:
        self.dim = dim
        self.wanted = wanted
        self.index: dict[bytes, np.ndarray] = {}
        self.damaged: list[Path] = []
        self.seen: set[str] = set()
        self.mtime: int | None = None
        self.writable = True
        try:
            self.root = model_cache_dir(fingerprint)
        except OSError as exc:  # the cache root itself cannot be created

            self.root = bundled.cache_dir(create=False) / "embeddings" / fingerprint.key
            self._read_only(exc, "is not writable")
        else:
            try:
                self.root.mkdir(parents=True, exist_ok=True)
                fd, probe = tempfile.mkstemp(prefix=".probe-", suffix=".tmp", dir=self.root)
                os.close(fd)
                os.unlink(probe)
            except OSError as exc:
                self._read_only(exc, "is not writable")
        self.refresh()
        self.report_damage()

    def _read_only(self, exc: BaseException, what: str) -> None:
        if self.writable:
            failure = write_failure(exc, self.root, "embedding cache")
            reason = getattr(failure, "reason", None) or str(exc).splitlines()[0]
            notice(f"the embedding cache {self.root} {what} ({reason}): continuing without writing to it "
                   "(what this run computes is not kept)")
        self.writable = False

    def refresh(self, force: bool = False) -> None:
        """Read shards written since the last look (by this run or a concurrent one).

        Without ``force`` the directory is listed only when its mtime changed (cheap before every
        batch); mtimes are coarse (a clock tick), so a look that must not miss a shard forces it.
        """
        try:
            mtime = os.stat(self.root).st_mtime_ns
        except OSError:
            return
        if mtime == self.mtime and not force:
            return
        self.mtime = mtime
        names = _shard_names(self.root) - self.seen
        self.seen |= names
        missing = self.wanted - self.index.keys()
        if missing:
            _scan(self.root, names, self.dim, missing, self.index, self.damaged)

    def report_damage(self) -> None:
        """Remove damaged shards (when writable) and say so once, with their count."""
        if not self.damaged:
            return
        removed = 0
        if self.writable:
            for p in self.damaged:
                with contextlib.suppress(OSError):
                    p.unlink()
                    removed += 1
        n = len(self.damaged)
        what = f"{n} damaged shard{'s' if n != 1 else ''} (unreadable, inconsistent, non-finite or not matching its checksum)"
        done = "removed" if removed == n else f"ignored ({removed} removed)"
        notice(f"embedding cache {self.root}: {what} {done}; the items they held are recomputed")
        self.damaged = []

    @contextlib.contextmanager
    def claim(self, batch: list[bytes], *, wait: bool):
        """Lock a batch (yields True) or, without ``wait``, yield False if another run holds it."""
        if not self.writable or fcntl is None:
            yield True
            return
        path = self.root / f".lock-{hashlib.sha256(b''.join(batch)).hexdigest()[:32]}"
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0), 0o666)  # never through a link
        except OSError:
            yield True
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            except OSError:  # no locks on this file system: compute independently
                yield True
                return
            try:
                yield True
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        finally:
            os.close(fd)

    def write(self, keys: list[bytes], vectors: np.ndarray) -> None:
        if not self.writable:
            return
        try:
            final = _write_shard(self.root, np.stack([np.frombuffer(k, dtype=np.uint8) for k in keys]), vectors)
        except OSError as exc:
            self._read_only(exc, "cannot be written any more")
            return
        self.seen.add(final.name)


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
    de-duplicated, sorted by length (longest first: by the tokens the model sees where the
    encoder has a Hugging Face tokenizer, else by characters as sentence-transformers does;
    so batches pad little) and encoded ``batch_size`` at a time, each finished
    batch being written as one atomic shard before the next starts. Before each batch,
    shards written meanwhile by a concurrent run are read, and a batch that a concurrent run
    is computing (its lock is held) is left to it and read when it is written. Damaged shards
    and an unwritable cache are handled as the module docstring says (a ``note:`` line on
    stderr, never an exception).

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
    keys = [h.tobytes() for h in text_hashes(texts)]
    rows_of: dict[bytes, list[int]] = {}
    for i, k in enumerate(keys):
        rows_of.setdefault(k, []).append(i)
    store = _Store(encoder.fingerprint, dim, set(rows_of)) if cache else None
    found = store.index if store is not None else {}
    todo = _longest_first(encoder, texts, rows_of, [k for k in rows_of if k not in found])
    batches = [todo[s : s + batch_size] for s in range(0, len(todo), batch_size)]

    def run_batch(batch: list[bytes]) -> None:
        _encode_batch(encoder, texts, rows_of, batch, found=found, store=store, dim=dim)

    n_cached = n - sum(len(rows_of[k]) for k in todo)
    with step(f"embedding {plural(n - n_cached, 'text')} ({n_cached:,} cached)" if n_cached
              else f"embedding {plural(n, 'text')}"), \
            progress_bar(progress and len(batches) > 1, len(batches), note=f"({n_cached} cached)" if n_cached else "") as advance:
        _run_batches(batches, run_batch, store, found, advance)
    if store is not None:
        store.report_damage()
    for k, rows in rows_of.items():
        out[rows] = found[k]
    return out


def _longest_first(encoder: Encoder, texts: list[str], rows_of: dict[bytes, list[int]], todo: list[bytes]) -> list[bytes]:
    """The keys to encode, longest text first (stable, for determinism; the batches are slices of this order,
    so runs over the same texts form the same batches). By tokens the model sees (then characters) where the
    encoder has a tokenizer: each batch pads to a tight length (2,000 SciFact titles in batches of 64: 48,560
    padded tokens against 65,744 by characters alone); else by characters, like SentenceTransformer.encode."""
    todo.sort(key=lambda k: -len(texts[rows_of[k][0]]))
    if todo and getattr(encoder, "hf_tokenizer", None) is not None:
        seen = encoder.token_counts([texts[rows_of[k][0]] for k in todo])[0]
        todo = [todo[j] for j in np.argsort(-seen, kind="stable")]
    return todo


def _encode_batch(encoder: Encoder, texts: list[str], rows_of: dict[bytes, list[int]], batch: list[bytes], *,
                  found: dict, store, dim: int) -> None:
    """Encode the keys of ``batch`` not yet in ``found`` (one encoder call), write them as one shard and add
    them to ``found``."""
    missing = [k for k in batch if k not in found]
    if missing:
        first_rows = [rows_of[k][0] for k in missing]
        vecs = np.asarray(encoder.encode([texts[i] for i in first_rows], batch_size=len(missing)), dtype=np.float32)
        if vecs.shape != (len(missing), dim):
            raise RuntimeError(f"encoder returned shape {vecs.shape}, expected {(len(missing), dim)}")
        if store is not None:
            store.write(missing, vecs)
        found.update(zip(missing, vecs))


def _run_batches(batches: list[list[bytes]], run_batch, store, found: dict, advance) -> None:
    """Each batch in turn: shards written meanwhile by a concurrent run are read first, a batch whose lock a
    concurrent run holds is left to it and done last (waiting for its lock, then read or computed)."""
    deferred = []
    for batch in batches:
        if store is None:
            run_batch(batch)
            advance()
            continue
        store.refresh()
        if all(k in found for k in batch):
            advance()
            continue
        with store.claim(batch, wait=False) as mine:
            if mine:
                store.refresh(force=True)  # the batch may have been finished by the run that held it
                run_batch(batch)
                advance()
            else:
                deferred.append(batch)
    for batch in deferred:  # held by a concurrent run: wait for it, then read (or compute if it died)
        with store.claim(batch, wait=True):
            store.refresh(force=True)
            run_batch(batch)
        advance()
