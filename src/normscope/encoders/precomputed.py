"""Precomputed vectors from ``.npy`` or ``.parquet`` files.

- ``.npy``: a 2-D float array of shape (n, d) read with ``np.load(allow_pickle=False)``
  (object arrays are refused, never unpickled); ids are given by the caller or
  default to ``0..n-1``.
- ``.parquet``: a ``vector`` column (fixed-size or variable lists of floats of one
  length), optional ``id`` and ``text`` columns; a file written by
  :meth:`normscope.EmbeddingTable.to_parquet` keeps its model fingerprint.

The fingerprint of a bare file is ``precomputed:<file name>`` with the file's
sha256 as revision.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._format import plural
from normscope.encoders.base import Encoder
from normscope.errors import InputError
from normscope.inputs import JUNK_ZERO, Junk, zero_vector_rows
from normscope.table import EmbeddingTable, ModelFingerprint, file_sha256

__all__ = ["PrecomputedEncoder", "load_precomputed", "load_npy_vectors"]


def load_npy_vectors(path: str | Path) -> np.ndarray:
    """Vectors of a ``.npy`` file as float32 (n, d).

    Raises
    ------
    InputError
        Missing or unreadable file, object/pickled or non-numeric arrays, a shape
        other than 2-D (n >= 1, d >= 1), or NaN/Inf values (rows named).
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such .npy file: {path}")
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":  # np.load takes any other file for a pickle
            raise InputError(f"{path} is not a .npy file (no NumPy header); give an array saved with numpy.save")
    try:
        arr = np.load(path, allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "pickled" in str(exc):
            raise InputError(f"{path} holds an object (pickled) array; normscope never unpickles: save a float array") from None
        raise InputError(f"cannot read {path} as .npy ({exc})") from None
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read {path} as .npy ({exc})") from None
    if not isinstance(arr, np.ndarray):
        raise InputError(f"{path} is not a single .npy array")
    if arr.dtype.kind not in "fiu":
        raise InputError(f"{path} has dtype {arr.dtype}; expected a float array of shape (n, d)")
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"{path} has shape {arr.shape}; expected a 2-D array (n, d) with n, d >= 1")
    arr = arr.astype(np.float32)
    finite = np.isfinite(arr).all(axis=1)
    if not finite.all():
        bad = np.flatnonzero(~finite)
        raise InputError(f"{path} holds NaN/Inf values in {plural(bad.size, 'row')}, first rows {bad[:5].tolist()}")
    return arr


def load_precomputed(path: str | Path, ids: Sequence[str] | None = None, *, drop_zero: bool = True) -> EmbeddingTable:
    """An :class:`EmbeddingTable` from a ``.npy`` or ``.parquet`` vector file.

    float16 (and integer) arrays are read as float32; a float16 value that overflowed (inf) is refused
    with the NaN/Inf rows. Zero and near-zero vectors (:func:`normscope.inputs.zero_vector_rows`) are
    junk vectors: left out of the table and listed in ``table.junk`` (``drop_zero=False`` keeps every
    row, for positional lookups).

    Parameters
    ----------
    path : str or Path
    ids : sequence of str, optional
        Item ids (length n); default: the parquet ``id`` column, else ``0..n-1``.
    drop_zero : bool, keyword-only
        Leave junk (zero) vectors out (default) or keep every row.

    Returns
    -------
    EmbeddingTable
        Texts are the parquet ``text`` column when present, else the ids.

    Raises
    ------
    InputError
        Unknown suffix, bad array (see :func:`load_npy_vectors`), no ``vector``
        column, or ids of the wrong length or with duplicates.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        vectors = load_npy_vectors(path)
        fp = ModelFingerprint(
            name=f"precomputed:{path.name}", revision="sha256:" + file_sha256(path)[:16],
            pooling="precomputed", backend="precomputed",
        )
        n = vectors.shape[0]
        table_ids = [str(i) for i in range(n)]
        table = EmbeddingTable(ids=table_ids, texts=list(table_ids), vectors=vectors, fingerprint=fp)
    elif suffix == ".parquet":
        table = EmbeddingTable.from_parquet(path)
        if len(table) == 0:
            raise InputError(f"{path} has no rows")
    else:
        raise InputError(f"unknown precomputed-vector format '{suffix}' of {path}: use .npy or .parquet")
    if ids is not None:
        ids = [str(i) for i in ids]
        if len(ids) != len(table):
            raise InputError(f"{len(ids)} ids given for {len(table)} vectors in {path}")
        texts = ids if table.texts == table.ids else table.texts
        table = EmbeddingTable(ids=ids, texts=texts, vectors=table.vectors, fingerprint=table.fingerprint)
    if len(set(table.ids)) != len(table.ids):
        seen: set[str] = set()
        dup = next(i for i in table.ids if i in seen or seen.add(i))
        raise InputError(f"{path}: duplicate id '{dup}'")
    if not np.isfinite(table.vectors).all():
        bad = np.flatnonzero(~np.isfinite(table.vectors).all(axis=1))
        raise InputError(f"{path} holds NaN/Inf values in {plural(bad.size, 'row')}, first rows {bad[:5].tolist()}")
    zero = zero_vector_rows(table.norms) if drop_zero else np.empty(0, np.int64)
    if zero.size:
        if zero.size == len(table):
            raise InputError(f"every one of the {len(table)} vectors in {path} is junk ({JUNK_ZERO})")
        ok = np.setdiff1d(np.arange(len(table)), zero)
        junk = Junk().merged(zero, [table.ids[i] for i in zero], JUNK_ZERO)
        table = EmbeddingTable(ids=[table.ids[i] for i in ok], texts=[table.texts[i] for i in ok],
                               vectors=table.vectors[ok], fingerprint=table.fingerprint,
                               tokens=table.tokens[ok] if table.tokens is not None else None, junk=junk)
    return table


class PrecomputedEncoder(Encoder):
    """Serve vectors from a file as if they were encoded.

    ``encode(texts)`` looks each text up in the file's ``text`` column when the
    file has one (parquet); otherwise row i of the file is item i, and the number
    of texts must equal the number of rows.

    Parameters
    ----------
    path : str or Path
        ``.npy`` or ``.parquet`` (see :func:`load_precomputed`).
    ids : sequence of str, optional

    Raises
    ------
    InputError
        See :func:`load_precomputed`; on :meth:`encode`, a text absent from the
        file or a count mismatch.
    """

    cacheable = False  # the vectors are already on disk

    def __init__(self, path: str | Path, *, ids: Sequence[str] | None = None):
        self.path = Path(path)
        self.table = load_precomputed(self.path, ids, drop_zero=False)  # positional: zero rows are junk downstream
        self.fingerprint = self.table.fingerprint
        self._has_texts = self.table.texts != self.table.ids
        self._row_of = {t: i for i, t in enumerate(self.table.texts)} if self._has_texts else {}

    @property
    def dim(self) -> int:
        return self.table.dim

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Stored vectors for ``texts``, ndarray of shape (n, d), float32."""
        texts = [str(t) for t in texts]
        if self._has_texts:
            missing = [t for t in texts if t not in self._row_of]
            if missing:
                raise InputError(f"{plural(len(missing), 'text')} not in {self.path}, e.g. {missing[0][:60]!r}")
            return self.table.vectors[[self._row_of[t] for t in texts]].copy()
        if len(texts) != len(self.table):
            raise InputError(f"{self.path} has {len(self.table)} vectors but {len(texts)} items were given")
        return self.table.vectors.copy()
