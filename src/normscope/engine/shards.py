"""Vectors on disk, read in bounded chunks: a parquet table, a directory of parquet shards, or ``.npy``.

The local engine writes one parquet file (:meth:`normscope.EmbeddingTable.to_parquet`); the Ray engine
writes a directory of parquet shards with the same columns (``id, text, norm, vector, tokens``, plus
``truncated``) and the model fingerprint in every shard's schema metadata, and a manifest
``_normscope.json``. :func:`open_vectors` reads any of them (and ``.npy`` arrays, ids ``0..n-1``)
chunk by chunk, so a corpus larger than memory can be folded into an index or summarised without
ever being held whole.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from normscope._format import plural
from normscope.errors import InputError
from normscope.table import EmbeddingTable, ModelFingerprint, _vectors_from_arrow
from normscope.validate import check_writable_dir

__all__ = ["VectorSource", "open_vectors", "read_table", "check_out_dir", "replace_dir", "MANIFEST", "FINGERPRINT_KEY"]

#: Manifest of a Ray engine output directory (summary JSON, written last).
MANIFEST = "_normscope.json"
#: Parquet schema-metadata key of the model fingerprint (same key as :mod:`normscope.table`).
FINGERPRINT_KEY = b"normscope.fingerprint"


class VectorSource:
    """A table of raw vectors on disk, read in chunks of at most ``rows`` rows.

    Use :func:`open_vectors` to create one.

    Attributes
    ----------
    path : Path
    n : int
        Rows.
    dim : int
        Vector dimension d.
    fingerprint : ModelFingerprint or None
        The model that made the vectors (None for a bare ``.npy``/parquet without metadata).
    """

    def __init__(self, path: Path, n: int, dim: int, fingerprint: ModelFingerprint | None, kind: str, dataset=None):
        self.path, self.n, self.dim, self.fingerprint = path, n, dim, fingerprint
        self._kind, self._dataset = kind, dataset

    def __len__(self) -> int:
        return self.n

    def chunks(self, rows: int = 65536, *, with_ids: bool = True) -> Iterator[tuple[list[str] | None, np.ndarray]]:
        """Yield ``(ids, vectors)`` chunks in row order.

        Parameters
        ----------
        rows : int
            Upper bound on the rows of a chunk.
        with_ids : bool, keyword-only
            Read the ``id`` column (else ``ids`` is None).

        Yields
        ------
        ids : list of str (length m) or None
        vectors : ndarray of shape (m, d), float32

        Raises
        ------
        InputError
            A chunk holding NaN/Inf values.
        """
        if self._kind == "npy":
            arr = np.load(self.path, mmap_mode="r", allow_pickle=False)
            for s in range(0, self.n, rows):
                v = np.array(arr[s : s + rows], dtype=np.float32)
                yield ([str(i) for i in range(s, s + len(v))] if with_ids else None), _finite(v, self.path, s)
            return
        import pyarrow as pa

        has_id = "id" in self._dataset.schema.names
        cols = ["id", "vector"] if (with_ids and has_id) else ["vector"]
        start = 0
        for batch in self._dataset.to_batches(columns=cols, batch_size=rows):
            if batch.num_rows == 0:
                continue
            v = _vectors_from_arrow(pa.chunked_array([batch.column("vector")]), self.path)
            if with_ids:
                ids = [str(x) for x in batch.column("id").to_pylist()] if has_id else [str(i) for i in range(start, start + len(v))]
            else:
                ids = None
            yield ids, _finite(v, self.path, start)
            start += len(v)

    def norms(self, rows: int = 65536) -> np.ndarray:
        """Norms ``||z||`` of every row, ndarray of shape (n,), float64 (8 bytes a row; the vectors are not kept)."""
        out = np.empty(self.n, dtype=np.float64)
        s = 0
        for _, v in self.chunks(rows, with_ids=False):
            out[s : s + len(v)] = np.linalg.norm(v.astype(np.float64), axis=1)
            s += len(v)
        return out


def _finite(v: np.ndarray, path: Path, start: int) -> np.ndarray:
    ok = np.isfinite(v).all(axis=1)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        raise InputError(f"{path}: vectors hold NaN/Inf in {plural(bad.size, 'row')}, first rows "
                         f"{(bad[:5] + start).tolist()}")
    return v


def open_vectors(path: str | Path) -> VectorSource:
    """Open stored vectors for chunked reading.

    Parameters
    ----------
    path : str or Path
        A parquet file or a directory of parquet shards with a ``vector`` column (fixed-size list
        of float; optional ``id``), or a ``.npy`` float array of shape (n, d).

    Returns
    -------
    VectorSource

    Raises
    ------
    InputError
        Missing path, unknown suffix, unreadable parquet, no ``vector`` column, no rows.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"vectors not found: {path}")
    if path.is_file() and path.suffix.lower() == ".npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise InputError(f"cannot read {path} as .npy ({exc})") from None
        if arr.ndim != 2 or arr.shape[0] == 0 or arr.dtype.kind not in "fiu":
            raise InputError(f"{path} has shape {arr.shape} and dtype {arr.dtype}; expected a float array (n, d), n >= 1")
        return VectorSource(path, int(arr.shape[0]), int(arr.shape[1]), None, "npy")
    if path.is_file() and path.suffix.lower() != ".parquet":
        raise InputError(f"vectors must be a .parquet file, a directory of parquet shards or a .npy file, got {path}")
    import pyarrow as pa
    import pyarrow.dataset as pads

    try:
        ds = pads.dataset(str(path), format="parquet")
        n = ds.count_rows()
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read parquet {path}: {str(exc).splitlines()[0]}") from None
    if "vector" not in ds.schema.names:
        raise InputError(f"{path} has no 'vector' column (columns: {ds.schema.names})")
    if n == 0:
        raise InputError(f"{path} holds no rows")
    vtype = ds.schema.field("vector").type
    if pa.types.is_fixed_size_list(vtype):
        dim = int(vtype.list_size)
    else:  # variable-length lists: read one row to learn d (chunks check consistency)
        first = next(b for b in ds.to_batches(columns=["vector"], batch_size=1) if b.num_rows)
        dim = int(_vectors_from_arrow(pa.chunked_array([first.column("vector")]), path).shape[1])
    meta = ds.schema.metadata or {}
    fp = ModelFingerprint.from_dict(json.loads(meta[FINGERPRINT_KEY])) if FINGERPRINT_KEY in meta else None
    if fp is None and path.is_dir() and (path / MANIFEST).is_file():
        fp = ModelFingerprint.from_dict(json.loads((path / MANIFEST).read_text())["fingerprint"])
    return VectorSource(path, int(n), dim, fp, "parquet", ds)


def read_table(path: str | Path) -> EmbeddingTable:
    """A parquet file or Ray shard directory as an in-memory :class:`EmbeddingTable` (small outputs).

    Columns ``id``, ``text`` (default: the ids), ``vector``, ``tokens`` (optional) in row order.

    Raises
    ------
    InputError
        As :func:`open_vectors`; also for a shard directory without a fingerprint.
    """
    src = open_vectors(path)
    if src._kind != "parquet":
        raise InputError(f"read_table needs parquet (file or shard directory), got {path}")
    cols = [c for c in ("id", "text", "vector", "tokens") if c in src._dataset.schema.names]
    tbl = src._dataset.to_table(columns=cols)
    vectors = _vectors_from_arrow(tbl.column("vector"), src.path)
    ids = [str(x) for x in tbl.column("id").to_pylist()] if "id" in cols else [str(i) for i in range(len(vectors))]
    texts = [str(x) for x in tbl.column("text").to_pylist()] if "text" in cols else list(ids)
    tokens = np.asarray(tbl.column("tokens").to_numpy(), dtype=np.int64) if "tokens" in cols else None
    if src.fingerprint is None:
        raise InputError(f"{path} carries no model fingerprint (not written by normscope)")
    return EmbeddingTable(ids=ids, texts=texts, vectors=vectors, fingerprint=src.fingerprint, tokens=tokens)


def check_out_dir(path: str | Path, marker: str, what: str, option: str = "-o/--out") -> Path:
    """Check an output *directory* before any work: its parent exists and is writable; if it exists, it is
    empty or a previous output of the same kind (holding ``marker``), which will be replaced.

    Raises
    ------
    InputError
        Missing parent, an existing file, or a foreign non-empty directory.
    OutputError
        The parent directory cannot be written (:func:`normscope.validate.check_writable_dir`).
    """
    path = Path(path)
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"output directory does not exist: {parent}")
    check_writable_dir(parent, f"{option} {path}")
    if path.exists() and not path.is_dir():
        raise InputError(f"{path} exists and is a file; {what} is a directory ({option})")
    if path.is_dir() and any(path.iterdir()) and not (path / marker).is_file():
        raise InputError(f"{path} is a directory that does not hold {what}; choose a new {option} path")
    return path


def replace_dir(tmp: Path, out: Path) -> None:
    """Move the finished directory ``tmp`` to ``out`` (same filesystem); a previous ``out`` is moved aside
    first and removed after, so ``out`` is never a half-written directory."""
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{uuid.uuid4().hex[:12]}"
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
