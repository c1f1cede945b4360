"""The ``embed`` stage as Python: items in, :class:`EmbeddingTable` and norm summary out.

:func:`embed_input` is what ``normscope embed`` runs; the CLI only parses
options and prints. It returns the same summary dict the CLI writes with
``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from normscope._io import check_output_path, write_json
from normscope.encoders.base import Encoder
from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.encoders.cache import encode_cached
from normscope.errors import InputError
from normscope.table import EmbeddingTable

__all__ = ["embed_texts", "embed_input", "check_parquet_out", "PRECOMPUTED_SUFFIXES"]

PRECOMPUTED_SUFFIXES = (".npy", ".parquet")


def check_parquet_out(path: str | Path, option: str = "-o/--out") -> Path:
    """Check a per-item table output path before any work: existing directory and a ``.parquet`` name.

    Parameters
    ----------
    path : str or Path
    option : str
        How the path was given, named in the error (``"-o/--out"``).

    Returns
    -------
    Path

    Raises
    ------
    InputError
        The name does not end in ``.parquet`` (the table is always written as
        parquet, so ``o.csv`` would hold parquet bytes), the directory does not
        exist, or the path is a directory.
    """
    path = Path(path)
    if path.suffix.lower() != ".parquet":
        raise InputError(f"{option} must be a .parquet file (the table is written as parquet), got '{path}'")
    return check_output_path(path)


def embed_texts(
    texts: Sequence[str],
    ids: Sequence[str] | None = None,
    *,
    encoder: Encoder | None = None,
    model: str = DEFAULT_MODEL,
    batch_size: int = 64,
    device: str = "cpu",
    cache: bool = True,
    progress: bool = False,
    trust_remote_code: bool = False,
) -> EmbeddingTable:
    """Raw embeddings of ``texts`` through the cache (:func:`~normscope.encoders.cache.encode_cached`).

    Parameters
    ----------
    texts : sequence of str, length n
    ids : sequence of str, optional
        Default ``"0".."n-1"``.
    encoder : Encoder, optional, keyword-only
        Use this encoder; otherwise ``load_encoder(model, device=..., trust_remote_code=...)``.

    Returns
    -------
    EmbeddingTable
        vectors float32 (n, d), norms (n,), the encoder's fingerprint.

    Raises
    ------
    InputError
        Empty or whitespace-only items (0-based indices named, as
        :func:`normscope.inputs.check_items`), or ``ids`` of another length.
    """
    from normscope.encoders import load_encoder
    from normscope.encoders.base import _item_ids
    from normscope.inputs import check_items

    texts = check_items(texts)
    ids = _item_ids(ids, len(texts))
    if encoder is None:
        encoder = load_encoder(model, device=device, trust_remote_code=trust_remote_code)
    vectors = encode_cached(encoder, texts, batch_size=batch_size, progress=progress, cache=cache)
    return EmbeddingTable(ids=ids, texts=texts, vectors=vectors, fingerprint=encoder.fingerprint)


def embed_input(
    input: str | Path | None = None,
    *,
    out: str | Path | None = None,
    json_path: str | Path | None = None,
    model: str = DEFAULT_MODEL,
    backend: str = "auto",
    pooling: str | None = None,
    batch_size: int = 64,
    device: str = "cpu",
    wordfreq_top: int = 0,
    cache: bool = True,
    progress: bool = False,
    trust_remote_code: bool = False,
) -> tuple[dict, EmbeddingTable]:
    """Embed a file of items (or the top wordfreq words) and summarise the norms.

    Parameters
    ----------
    input : str or Path, optional
        Items (see :func:`normscope.inputs.read_items`), or a ``.npy``/``.parquet``
        of precomputed vectors (then no model runs). Exactly one of ``input`` and
        ``wordfreq_top > 0`` is required.
    out, json_path : str or Path, optional
        Parquet table (``id, text, norm, vector``; the name must end in
        ``.parquet``) and JSON summary, written atomically; both are checked
        before any work is done.
    wordfreq_top : int
        Embed the ``wordfreq_top`` most frequent alphabetic English words of
        ``wordfreq`` (Speer et al.) instead of ``input``.

    Returns
    -------
    summary : dict
        ``n``, ``dim``, ``model``, ``fingerprint``, ``norm_mean``, ``norm_std``
        (ddof=1), ``norm_min``, ``norm_max`` (units of ||z||), plus ``input``,
        ``n_truncated`` (items cut at the model's max sequence length, or None)
        and ``cache``.
    table : EmbeddingTable

    Raises
    ------
    InputError
        Bad input file, output directory missing, ``out`` not ending in
        ``.parquet``, both or neither of input and ``wordfreq_top``.
    ModelError
        Unknown or unreachable model.
    """
    from normscope.encoders import load_encoder
    from normscope.inputs import read_items

    if out is not None:
        check_parquet_out(out)
    if json_path is not None:
        check_output_path(json_path)
    if batch_size < 1:
        raise InputError(f"--batch-size must be >= 1, got {batch_size}")
    if wordfreq_top and input is not None:
        raise InputError("give either INPUT or --wordfreq-top, not both")
    n_truncated = None
    if wordfreq_top > 0:
        from normscope.datasets import wordfreq_words

        texts = wordfreq_words(wordfreq_top)
        ids = [str(i) for i in range(len(texts))]
        source = f"wordfreq:en:top{wordfreq_top}"
    elif input is None:
        raise InputError("give INPUT or --wordfreq-top N")
    else:
        source = str(input)
        if Path(input).suffix.lower() in PRECOMPUTED_SUFFIXES and Path(input).is_file():
            from normscope.encoders.precomputed import load_precomputed

            table = load_precomputed(input)
            return _finish(table, source, None, False, out, json_path)
        if Path(input).suffix.lower() in PRECOMPUTED_SUFFIXES:
            raise InputError(f"input does not exist: {input}")
        ids, texts = read_items(input)
    encoder = load_encoder(model, backend=backend, pooling=pooling, device=device, trust_remote_code=trust_remote_code)
    if hasattr(encoder, "count_truncated") and getattr(encoder, "max_seq_length", None):
        n_truncated = int(encoder.count_truncated(texts))
    table = embed_texts(texts, ids, encoder=encoder, batch_size=batch_size, cache=cache, progress=progress)
    return _finish(table, source, n_truncated, cache and getattr(encoder, "cacheable", True), out, json_path)


def _finish(table: EmbeddingTable, source: str, n_truncated, cached: bool, out, json_path) -> tuple[dict, EmbeddingTable]:
    summary = table.summary()
    summary.update({"input": source, "n_truncated": n_truncated, "cache": bool(cached)})
    if out is not None:
        table.to_parquet(out)
    if json_path is not None:
        write_json(summary, json_path)
    return summary, table
