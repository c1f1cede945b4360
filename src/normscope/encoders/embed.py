"""The ``embed`` stage as Python: items in, :class:`EmbeddingTable` and norm summary out.

:func:`embed_input` is what ``normscope embed`` runs; the CLI only parses
options and prints. It returns the same summary dict the CLI writes with
``--json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._io import write_json, write_outputs
from normscope.encoders import load_encoder
from normscope.validate import check_paths, check_room
from normscope.encoders.base import Encoder
from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.encoders.cache import encode_cached
from normscope.errors import InputError
from normscope.inputs import JUNK_ZERO, check_items, find_junk, read_items, zero_vector_rows
from normscope.table import EmbeddingTable

__all__ = ["embed_texts", "embed_input", "PRECOMPUTED_SUFFIXES"]

PRECOMPUTED_SUFFIXES = (".npy", ".parquet")


def _item_ids(ids: Sequence[str] | None, n: int) -> list[str]:
    """``ids`` as strings (default ``"0".."n-1"``); :class:`InputError` if their number is not ``n``."""
    if ids is None:
        return [str(i) for i in range(n)]
    ids = [str(i) for i in ids]
    if len(ids) != n:
        raise InputError(f"got {len(ids)} ids for {n} texts")
    return ids


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
    junk: str = "drop",
    what: str = "items",
    precision: str = "fp32",
    precision_sample: int = 64,
    encode=None,
    runtime: str = "auto",
) -> EmbeddingTable:
    """Raw embeddings of ``texts``: the one path from texts to vectors (through the embedding cache).

    Junk items (:func:`normscope.inputs.find_junk`, with the encoder's tokenizer) and junk vectors
    (zero or near zero, :func:`normscope.inputs.zero_vector_rows`) are left out of the table and
    listed in ``table.junk``; the tokens each item gives the model after truncation are counted
    (``table.tokens``, ``table.n_truncated``).

    Parameters
    ----------
    texts : sequence of str, length n
    ids : sequence of str, length n, optional
        Default ``"0".."n-1"``; must be unique for the per-item outputs to be joined by id.
    encoder : Encoder, optional, keyword-only
        Use this encoder (at its own precision); otherwise ``load_encoder(model, device=...,
        trust_remote_code=..., precision=...)``.
    batch_size : int, keyword-only
        Texts per encoder call and per cache shard.
    cache : bool, keyword-only
        Read and fill the content-addressed cache (:func:`~normscope.encoders.cache.encode_cached`).
    junk : {'drop', 'error'}, keyword-only
        ``'drop'``: leave junk out (listed in ``table.junk``); ``'error'``: raise instead.
    what : str, keyword-only
        Name of the items in messages (``"queries"``, ``"documents"``).
    precision : {"fp32", "bf16"}, keyword-only
        Precision of the forward pass when ``encoder`` is not given (see :func:`load_encoder`).
    runtime : {"auto", "torch", "openvino"}, keyword-only
        Runtime of the forward pass when ``encoder`` is not given (see :func:`load_encoder`); ``auto`` (default,
        as every command): OpenVINO f32 when installed and measured equal to torch, else torch.
    precision_sample : int, keyword-only
        With a reduced-precision encoder, items re-embedded in fp32 to measure the norm error
        (:func:`normscope.encoders.precision.norm_error_vs_fp32`; 0: not measured).
    encode : callable, optional, keyword-only
        ``encode(encoder, texts, batch_size=, progress=, cache=) -> (n, d) float32`` computing the
        vectors of the non-junk items; default :func:`~normscope.encoders.cache.encode_cached` (an
        engine such as :func:`normscope.engine.encode_vectors` plugs in here).

    Returns
    -------
    EmbeddingTable
        The non-junk items in input order: vectors float32 (m, d), norms (m,), ``tokens`` (m,)
        int64 or None, ``n_truncated``, ``junk``, the encoder's fingerprint (with its precision),
        ``norm_rel_error_vs_fp32`` (None in fp32).

    Raises
    ------
    InputError
        ``texts`` a single string or holding None; ``ids`` of another length; junk items with
        ``junk='error'``; every item junk; ``batch_size < 1``.
    """
    if junk not in ("drop", "error"):
        raise InputError(f"junk must be 'drop' or 'error', got {junk!r}")
    texts = check_items(texts)
    ids = _item_ids(ids, len(texts))
    if encoder is None:
        encoder = load_encoder(model, device=device, trust_remote_code=trust_remote_code, precision=precision,
                               runtime=runtime)
    # one tokenization for the junk rule and the token counts (find_junk reuses it where that is exact)
    token_ids = encoder.token_ids(texts) if encoder.hf_tokenizer is not None else None
    found = find_junk(texts, ids, tokenizer=encoder.hf_tokenizer, token_ids=token_ids)
    if found and junk == "error":
        raise found.error(what)
    if found.count == len(texts) and texts:
        raise InputError(f"every one of the {len(texts)} {what} is junk ({'; '.join(sorted(set(found.reasons)))})")
    keep = np.setdiff1d(np.arange(len(texts)), np.asarray(found.index, dtype=np.int64))
    kept_texts = [texts[i] for i in keep]
    tokens = None
    n_truncated = None
    if encoder.hf_tokenizer is not None:
        tokens, raw = encoder.token_counts(kept_texts, token_ids=[token_ids[i] for i in keep])
        n_truncated = int(np.sum(raw > tokens))
    vectors = (encode or encode_cached)(encoder, kept_texts, batch_size=batch_size, progress=progress, cache=cache)
    zero = zero_vector_rows(np.linalg.norm(vectors.astype(np.float64), axis=1)) if len(vectors) else np.empty(0, np.int64)
    if zero.size:  # junk vectors: left out and listed like junk texts
        found = found.merged(keep[zero], [ids[i] for i in keep[zero]], JUNK_ZERO)
        if junk == "error":
            raise found.error(what)
        if found.count == len(texts):
            raise InputError(f"every one of the {len(texts)} {what} is junk ({'; '.join(sorted(set(found.reasons)))})")
        ok = np.setdiff1d(np.arange(len(keep)), zero)
        keep, vectors = keep[ok], vectors[ok]
        kept_texts = [kept_texts[i] for i in ok]
        if tokens is not None:
            tokens = tokens[ok]
            n_truncated = int(np.sum(raw[ok] > tokens))

    from normscope.encoders.precision import norm_error_vs_fp32  # deferred: not loaded by `import normscope` (start-up)

    error = norm_error_vs_fp32(encoder, kept_texts, vectors, sample=precision_sample, cache=cache)
    return EmbeddingTable(
        ids=[ids[i] for i in keep], texts=kept_texts, vectors=vectors, fingerprint=encoder.fingerprint,
        tokens=tokens, n_truncated=n_truncated, junk=found, norm_rel_error_vs_fp32=error,
    )


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
    junk: str = "drop",
    precision: str = "fp32",
    runtime: str = "auto",
) -> tuple[dict, EmbeddingTable]:
    """Embed a file of items (or the top wordfreq words) and summarise the norms.

    Parameters
    ----------
    input : str or Path, optional
        Items (see :func:`normscope.inputs.read_items`), a ``.npy``/``.parquet``
        of precomputed vectors (then no model runs), or a folder of PNG/JPEG images
        embedded by an image model (:func:`normscope.encoders.images.embed_image_folder`). Exactly one of ``input`` and
        ``wordfreq_top > 0`` is required.
    out, json_path : str or Path, optional
        Parquet table (``id, text, norm, vector``; the name must end in
        ``.parquet``) and JSON summary, written as a set (both or neither,
        :func:`normscope._io.write_outputs`). Before any work: both directories
        are checked writable (a temp file is created there); before embedding:
        the estimated table size is checked against the free space and the file
        size limit (``ulimit -f``).
    wordfreq_top : int
        Embed the ``wordfreq_top`` most frequent alphabetic English words of
        ``wordfreq`` (Speer et al.) instead of ``input``.
    precision : {"fp32", "bf16"}
        Precision of the model's forward pass (:func:`normscope.encoders.load_encoder`).
    runtime : {"auto", "torch", "openvino"}
        Runtime of the model's forward pass (:func:`normscope.encoders.load_encoder`; ``auto``, the default as
        in every command: OpenVINO f32 when installed and measured equal to torch, else torch; ``openvino``
        not for precomputed vectors or image folders).

    Returns
    -------
    summary : dict
        ``n``, ``dim``, ``model``, ``fingerprint``, ``norm_mean``, ``norm_std``
        (ddof=1), ``norm_min``, ``norm_max`` (units of ||z||), plus ``input``,
        ``n_truncated`` (items cut at the model's max sequence length, or None),
        ``cache``, ``warnings`` (list of str: e.g. that every norm is the same
        within rounding, so the vectors were normalised and no norm analysis applies),
        ``precision`` and ``norm_rel_error_vs_fp32`` (``{"median", "max", "cosine_min",
        "n_sample", "seed"}`` for bf16, None for fp32).
    table : EmbeddingTable

    Raises
    ------
    InputError
        Bad input file, output directory missing, ``out`` not ending in
        ``.parquet``, both or neither of input and ``wordfreq_top``, unknown precision.
    OutputError
        An output directory is read-only, or the table would not fit (free space, file size
        limit), checked before the work; or writing failed (disk full): nothing is written.
    ModelError
        Unknown or unreachable model.
    """
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json")], inputs=[("INPUT", input)])
    if batch_size < 1:
        raise InputError(f"--batch-size must be >= 1, got {batch_size}")
    if wordfreq_top and input is not None:
        raise InputError("give either INPUT or wordfreq:N, not both")
    if wordfreq_top > 0:
        from normscope.datasets import wordfreq_words  # deferred: not loaded by `import normscope` (start-up)

        texts = wordfreq_words(wordfreq_top)
        ids = [str(i) for i in range(len(texts))]
        source = f"wordfreq:en:top{wordfreq_top}"
    elif input is None:
        raise InputError("give INPUT or wordfreq:N")
    else:
        source = str(input)
        if Path(input).suffix.lower() in PRECOMPUTED_SUFFIXES and Path(input).is_file():
            from normscope.encoders.precomputed import load_precomputed  # deferred: a back-end's module loads when its input is given (keeps `import normscope` light)

            if precision != "fp32":
                raise InputError(f"--precision {precision} applies to models; {input} holds precomputed vectors "
                                 "(used as stored): use fp32")
            if runtime == "openvino":
                raise InputError(f"--runtime {runtime} applies to models; {input} holds precomputed vectors "
                                 "(used as stored): use --runtime torch")
            table = load_precomputed(input)
            return _finish(table, source, False, out, json_path)
        if Path(input).suffix.lower() in PRECOMPUTED_SUFFIXES:
            raise InputError(f"input does not exist: {input}")
        from normscope.encoders.images import embed_image_folder, is_image_folder  # deferred: a back-end's module loads when its input is given (keeps `import normscope` light)

        if is_image_folder(input):  # a directory that is not a BEIR dataset: its PNG/JPEG images
            from normscope.encoders.images import list_images  # deferred: a back-end's module loads when its input is given (keeps `import normscope` light)

            list_images(Path(input), hint=" (and no corpus.jsonl[.gz]: not a BEIR dataset either)")  # before the model
            encoder = load_encoder(model, backend=backend, pooling=pooling, device=device, trust_remote_code=trust_remote_code,
                                   precision=precision, runtime=runtime)
            table = embed_image_folder(input, encoder=encoder, batch_size=batch_size, cache=cache, progress=progress)
            return _finish(table, source, cache, out, json_path)
        ids, texts = read_items(input)
    encoder = load_encoder(model, backend=backend, pooling=pooling, device=device, trust_remote_code=trust_remote_code,
                           precision=precision, runtime=runtime)
    if out is not None:  # vectors dominate the table: a lower bound of its size, checked before embedding
        check_room(out, int(0.9 * 4 * len(texts) * int(encoder.dim)), "-o/--out")
    table = embed_texts(texts, ids, encoder=encoder, batch_size=batch_size, cache=cache, progress=progress, junk=junk)
    return _finish(table, source, cache and getattr(encoder, "cacheable", True), out, json_path)


def summary_warnings(summary: dict) -> list[str]:
    """The ``warnings`` of an embed summary: one sentence when items repeat a vector (duplicates), one when
    the distinct vectors were normalised.

    Parameters
    ----------
    summary : dict
        An embed summary (:meth:`normscope.table.EmbeddingTable.summary` keys ``normalised``,
        ``norm_mean``, ``norm_min``, ``norm_max``; norms in embedding units).

    Returns
    -------
    list of str
        Empty unless ``summary["n_distinct"] < summary["n"]`` or ``summary["normalised"]``.
    """
    n, distinct = summary.get("n") or 0, summary.get("n_distinct")
    out = []
    if distinct is not None and distinct < n:
        out.append(f"{n - distinct} of the {n} items repeat the vector of another item (the same text embedded twice, or "
                   f"identical vectors): {distinct} distinct" + (": the norm has no spread to analyse" if distinct < 2 else ""))
    if not summary.get("normalised"):
        return out
    return out + [f"every norm is {summary['norm_mean']:.6g} within rounding (spread {summary['norm_max'] - summary['norm_min']:.2g}): "
            "these vectors were normalised (or have constant norm), so the norm carries no per-item information "
            "and normscope's norm analyses will refuse them; give raw vectors"]


def _finish(table: EmbeddingTable, source: str, cached: bool, out, json_path) -> tuple[dict, EmbeddingTable]:
    summary = table.summary()
    summary.update({"input": source, "cache": bool(cached)})
    summary["warnings"] = summary_warnings(summary)
    write_outputs({out: table.to_parquet, json_path: lambda p: write_json(summary, p)},
                  options={out: "-o/--out", json_path: "--json"})
    return summary, table
