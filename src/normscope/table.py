"""The embedding table: ids, texts, raw vectors, norms and the model fingerprint.

Every stage of normscope reads or writes this artefact. On disk it is a parquet
file with columns ``id`` (string), ``text`` (string), ``norm`` (float32) and
``vector`` (fixed-size list of float32); the fingerprint is stored as JSON in the
parquet schema metadata under the key ``normscope.fingerprint``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._io import atomic_path
from normscope.errors import InputError
from normscope.inputs import Junk

__all__ = ["ModelFingerprint", "EmbeddingTable", "PRECISIONS", "norms_look_normalised", "require_raw_norms"]

#: Relative spread of the norms below which vectors count as normalised (or constant in norm):
#: float32 rounding of unit vectors gives a spread of about 1e-7; real raw norms vary by percent.
NORMALISED_RTOL = 1e-4


def norms_look_normalised(norms) -> bool:
    """True when every norm equals the others within :data:`NORMALISED_RTOL` (unit vectors, or constant norm).

    Parameters
    ----------
    norms : array-like of shape (n,)

    Returns
    -------
    bool
        ``(max - min) <= NORMALISED_RTOL * median`` (True also for n < 2).
    """
    r = np.asarray(norms, dtype=np.float64)
    if r.size < 2:
        return True
    med = float(np.median(np.abs(r)))
    return bool(np.ptp(r) <= NORMALISED_RTOL * max(med, 1e-300))


def require_raw_norms(norms, what: str = "this analysis") -> None:
    """Stop an analysis of norms on normalised vectors with a one-line :class:`InputError`.

    Raises
    ------
    InputError
        When :func:`norms_look_normalised` holds: the norms carry no information beyond float32
        rounding, so a correlation, CI or p-value on them would describe rounding noise. Norms that are
        all bitwise equal are copies of one vector (a repeated text), said so rather than "normalised".
    """
    r = np.asarray(norms, dtype=np.float64)
    distinct = np.unique(r[np.isfinite(r)])
    if r.size >= 2 and distinct.size == 1:  # bitwise one value: copies of one vector, not normalisation
        raise InputError(
            f"{what} needs norms that differ, but all {r.size} norms are exactly {float(distinct[0]):.6g}: the items "
            "are copies of one vector (the same text repeated?); give distinct items")
    if r.size >= 2 and norms_look_normalised(r):
        raise InputError(
            f"{what} needs raw (un-normalised) vectors, but every norm is {float(np.median(r)):.6g} within "
            f"{NORMALISED_RTOL:g} relative (spread {float(np.ptp(r)):.2g}): the vectors were normalised "
            "(e.g. by a vector store or a Normalize module); embed the texts with normscope to get raw vectors"
        )

_META_KEY = b"normscope.fingerprint"


#: Numeric precisions of a model's forward pass (``load_encoder(..., precision=)``).
PRECISIONS = ("fp32", "bf16")
#: Inference runtimes of a model's forward pass (``load_encoder(..., runtime=)``): ``auto`` picks one of the other two
#: by measurement (:func:`normscope.encoders.openvino_runtime.choose_runtime`); a fingerprint records the one that ran.
RUNTIMES = ("auto", "torch", "openvino")


@dataclasses.dataclass(frozen=True)
class ModelFingerprint:
    """Identity of the model that produced a set of raw embeddings.

    Attributes
    ----------
    name : str
        Model name as given by the user (hub id, path or ``precomputed:<file>``).
    revision : str
        Hub revision, or the sha256 of the weights/vector file when loaded from disk.
    pooling : str
        Pooling that produced the vector (``mean``, ``cls``, ``precomputed`` ...).
    dropped_modules : tuple of str
        Pipeline modules removed to obtain raw vectors (e.g. ``("Normalize",)``).
    backend : str
        Adapter that produced the vectors (``sentence-transformers``, ``huggingface``,
        ``open_clip``, ``precomputed``).
    precision : {"fp32", "bf16"}
        Precision of the forward pass (``bf16``: matrix products under ``torch.autocast``); part
        of :attr:`key`, so a bf16 cache entry never serves an fp32 request.
    config : str
        ``sha256:<16 hex>`` of the configuration and tokenizer files (``config.json``,
        ``sentence_bert_config.json``, ``modules.json``, ``tokenizer.json``, ``vocab.txt`` ...) and the
        effective ``max_seq_length`` (:func:`normscope.encoders.sentence_transformers.config_hash`);
        ``""`` where nothing but the weights determines the vectors (precomputed files). Part of
        :attr:`key`: a changed ``max_seq_length`` or tokenizer never serves stale cached vectors.
    runtime : str
        Runtime of the forward pass: ``"torch"``, or ``"openvino:<INFERENCE_PRECISION_HINT>"``
        (``"openvino:f32"``, ``"openvino:bf16"``: the hint read back from the compiled model,
        :mod:`normscope.encoders.openvino_runtime`). Left out of :meth:`to_dict` (hence of
        :attr:`key`) when ``"torch"``, so torch fingerprints read and hash as before.
    """

    name: str
    revision: str
    pooling: str
    dropped_modules: tuple[str, ...] = ()
    backend: str = "sentence-transformers"
    precision: str = "fp32"
    config: str = ""
    runtime: str = "torch"

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["dropped_modules"] = list(self.dropped_modules)
        if d["runtime"] == "torch":  # the default is left out: fingerprints written before runtimes existed read the same
            del d["runtime"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "ModelFingerprint":
        return cls(
            name=str(d["name"]),
            revision=str(d["revision"]),
            pooling=str(d["pooling"]),
            dropped_modules=tuple(d.get("dropped_modules", ())),
            backend=str(d.get("backend", "sentence-transformers")),
            precision=str(d.get("precision", "fp32")),
            config=str(d.get("config", "")),
            runtime=str(d.get("runtime", "torch")),
        )

    @property
    def key(self) -> str:
        """Hex sha256 of the canonical JSON form; the cache namespace of this model.

        The default precision ``fp32``, an empty ``config`` and the runtime ``torch`` are left out of the hashed form, so
        such keys equal those of fingerprints written before these fields existed; any other value
        is hashed in.
        """
        d = self.to_dict()
        if d["precision"] == "fp32":
            del d["precision"]
        if not d["config"]:
            del d["config"]
        blob = json.dumps(d, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()

    @property
    def model_key(self) -> str:
        """:attr:`key` with an fp32 runtime read as torch: ``"openvino:f32"`` vectors equal torch fp32 ones to
        1e-6 relative in norm (checked before ``runtime="auto"`` takes it), so what compares models -- a saved
        calibrator, the sections kept on a report page -- takes either; the embedding cache keeps :attr:`key`."""
        if self.runtime == "openvino:f32":
            return dataclasses.replace(self, runtime="torch").key
        return self.key


@dataclasses.dataclass
class EmbeddingTable:
    """Raw (un-normalised) embeddings of ``n`` inputs.

    Attributes
    ----------
    ids : list of str, length n
    texts : list of str, length n
    vectors : ndarray of shape (n, d), float32
        Raw model outputs; never normalised by normscope.
    fingerprint : ModelFingerprint
    tokens : ndarray of shape (n,), int64, or None
        Tokens the model saw per item (after truncation, special tokens included); None when the
        encoder has no Hugging Face tokenizer (precomputed vectors).
    n_truncated : int or None
        Items longer than the model's maximum sequence length (cut before embedding).
    junk : Junk
        Input items left out as junk (:func:`normscope.inputs.find_junk`); not rows of the table.
    norm_rel_error_vs_fp32 : dict or None
        With a reduced-precision encoder: ``{"median", "max", "n_sample", "cosine_min"}``, the
        relative error ``| ||z|| - ||z_fp32|| | / ||z_fp32||`` of the norms on a seeded sample of
        the table's own items against the same model in fp32 (:func:`normscope.encoders.precision.
        norm_error_vs_fp32`); None for fp32 encoders and precomputed vectors.

    Raises
    ------
    InputError
        If lengths disagree, ``vectors`` is not 2-D or holds NaN/Inf.
    """

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    fingerprint: ModelFingerprint
    tokens: np.ndarray | None = None
    n_truncated: int | None = None
    junk: Junk = dataclasses.field(default_factory=Junk)
    norm_rel_error_vs_fp32: dict | None = None

    def __post_init__(self) -> None:
        self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        if self.vectors.ndim != 2:
            raise InputError(f"vectors must have shape (n, d), got {self.vectors.shape}")
        n = self.vectors.shape[0]
        if len(self.ids) != n or len(self.texts) != n:
            raise InputError(
                f"ids ({len(self.ids)}), texts ({len(self.texts)}) and vectors ({n}) differ in length"
            )
        if not np.isfinite(self.vectors).all():
            bad = np.flatnonzero(~np.isfinite(self.vectors).all(axis=1))
            raise InputError(f"vectors hold NaN/Inf in rows {bad[:10].tolist()}")
        if self.tokens is not None:
            self.tokens = np.asarray(self.tokens, dtype=np.int64)
            if self.tokens.shape != (n,):
                raise InputError(f"tokens has shape {self.tokens.shape}, expected ({n},)")

    def subset(self, index) -> "EmbeddingTable":
        """The rows ``index`` (array of int positions, in that order) as a new table (same fingerprint)."""
        index = np.asarray(index, dtype=np.int64)
        return EmbeddingTable(
            ids=[self.ids[i] for i in index], texts=[self.texts[i] for i in index], vectors=self.vectors[index],
            fingerprint=self.fingerprint, tokens=None if self.tokens is None else self.tokens[index],
            n_truncated=None, junk=Junk(),
        )

    @property
    def norms(self) -> np.ndarray:
        """Euclidean norms ``||z||`` of the raw vectors, ndarray of shape (n,), float32."""
        return np.linalg.norm(self.vectors.astype(np.float64), axis=1).astype(np.float32)

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return int(self.vectors.shape[0])

    def summary(self) -> dict:
        """Norm summary: ``n``, ``dim``, ``model``, ``norm_mean/std/min/max`` (float, units of ||z||),
        ``n_truncated``, ``junk`` (:meth:`Junk.to_dict`), ``normalised`` (:func:`norms_look_normalised` over
        the distinct vectors; None with fewer than two), ``n_distinct`` (distinct vectors: exact copies, e.g.
        a repeated text, count once), ``precision`` (of the forward pass) and ``norm_rel_error_vs_fp32``
        (None in fp32)."""
        r = self.norms.astype(np.float64)
        uniq = np.unique(self.vectors, axis=0, return_index=True)[1] if len(self) else np.empty(0, np.int64)
        return {
            "n": len(self),
            "dim": self.dim,
            "model": self.fingerprint.name,
            "fingerprint": self.fingerprint.to_dict(),
            "norm_mean": float(r.mean()) if len(r) else float("nan"),
            "norm_std": float(r.std(ddof=1)) if len(r) > 1 else float("nan"),
            "norm_min": float(r.min()) if len(r) else float("nan"),
            "norm_max": float(r.max()) if len(r) else float("nan"),
            "n_truncated": self.n_truncated,
            "junk": self.junk.to_dict(),
            "normalised": norms_look_normalised(r[uniq]) if uniq.size > 1 else None,
            "n_distinct": int(uniq.size),
            "precision": self.fingerprint.precision,
            "norm_rel_error_vs_fp32": self.norm_rel_error_vs_fp32,
        }

    def to_pandas(self, *, vectors: bool = False):
        """The table as a :class:`pandas.DataFrame`, one row per item in table order: ``id``, ``text``, ``norm``
        (float32, ``||z||``), ``tokens`` when known, and with ``vectors=True`` a ``vector`` column (each a float32
        ndarray of shape (d,)); the columns of :meth:`to_parquet` read back with pandas."""
        import pandas as pd

        cols = {"id": list(self.ids), "text": list(self.texts), "norm": self.norms}
        if self.tokens is not None:
            cols["tokens"] = self.tokens
        if vectors:
            cols["vector"] = list(self.vectors)
        return pd.DataFrame(cols)

    # ------------------------------------------------------------------ parquet
    def to_parquet(self, path: str | Path, option: str = "output") -> Path:
        """Write the table atomically (temp file + rename) to ``path``; returns the path.

        Raises
        ------
        InputError, OutputError
            As :func:`normscope._io.atomic_path` (missing or read-only directory, full disk,
            file size limit): one line, nothing left behind.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        n, d = self.vectors.shape
        flat = pa.array(self.vectors.reshape(-1), type=pa.float32())
        vec = pa.FixedSizeListArray.from_arrays(flat, d)
        tbl = pa.table(
            {
                "id": pa.array(self.ids, type=pa.string()),
                "text": pa.array(self.texts, type=pa.string()),
                "norm": pa.array(self.norms, type=pa.float32()),
                "vector": vec,
                **({"tokens": pa.array(self.tokens, type=pa.int64())} if self.tokens is not None else {}),
            }
        )
        tbl = tbl.replace_schema_metadata({_META_KEY: json.dumps(self.fingerprint.to_dict()).encode()})
        with atomic_path(path, option) as tmp:
            pq.write_table(tbl, tmp)
        return Path(path)

    @classmethod
    def from_parquet(cls, path: str | Path) -> "EmbeddingTable":
        """Read a table written by :meth:`to_parquet` (or any parquet with ``id``/``vector``)."""
        import pyarrow.parquet as pq

        path = Path(path)
        if not path.is_file():
            raise InputError(f"no such parquet file: {path}")
        try:
            tbl = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several types
            raise InputError(f"cannot read parquet {path}: {exc}") from None
        if "vector" not in tbl.column_names:
            raise InputError(f"{path} has no 'vector' column (columns: {tbl.column_names})")
        vectors = _vectors_from_arrow(tbl.column("vector"), path)
        n = vectors.shape[0]
        ids = [str(x) for x in tbl.column("id").to_pylist()] if "id" in tbl.column_names else [str(i) for i in range(n)]
        texts = [str(x) for x in tbl.column("text").to_pylist()] if "text" in tbl.column_names else ids
        meta = tbl.schema.metadata or {}
        if _META_KEY in meta:
            fp = ModelFingerprint.from_dict(json.loads(meta[_META_KEY]))
        else:
            fp = ModelFingerprint(
                name=f"precomputed:{path.name}",
                revision=file_sha256(path),
                pooling="precomputed",
                backend="precomputed",
            )
        tokens = np.asarray(tbl.column("tokens").to_numpy(), dtype=np.int64) if "tokens" in tbl.column_names else None
        return cls(ids=ids, texts=texts, vectors=vectors, fingerprint=fp, tokens=tokens)


def _vectors_from_arrow(col, path: Path) -> np.ndarray:
    import pyarrow as pa

    if len(col) == 0:
        raise InputError(f"{path} has no rows")
    col = col.combine_chunks()
    if pa.types.is_fixed_size_list(col.type):
        d = col.type.list_size
        arr = np.asarray(col.flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
        return arr.reshape(-1, d)
    rows = col.to_pylist()
    lengths = {len(r) if r is not None else -1 for r in rows}
    if len(lengths) > 1 or -1 in lengths:
        raise InputError(f"{path}: 'vector' rows have differing or missing lengths {sorted(lengths)[:5]}")
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def as_list(x: Sequence[str]) -> list[str]:
    return [str(s) for s in x]
