"""Approximate norm-aware search for large corpora: faiss HNSW and IVF over folded document vectors.

Every normscope scorer is an inner product of a folded query and a folded document
(:func:`~normscope.scoring.fold_documents`), so a norm-aware index is an ordinary
maximum-inner-product index over the folded vectors; nothing changes at query time but
:func:`~normscope.scoring.fold_queries`. Three kinds, all with
``faiss.METRIC_INNER_PRODUCT``:

========  ==========================================  ==========================================
kind      faiss index                                 knobs (build / search)
========  ==========================================  ==========================================
``hnsw``  ``IndexHNSWFlat(d, m, METRIC_INNER_PRODUCT)``  ``m``, ``ef_construction`` / ``ef_search``
``ivf``   ``IndexIVFFlat(IndexFlatIP(d), d, nlist,    ``nlist``, ``train_size`` / ``nprobe``
          METRIC_INNER_PRODUCT)``
``flat``  ``IndexFlatIP(d)`` (exact)                  none
========  ==========================================  ==========================================

HNSW: Malkov & Yashunin (2018), "Efficient and robust approximate nearest neighbor search using
Hierarchical Navigable Small World graphs", IEEE TPAMI. IVF: Jegou, Douze & Schmid (2011), "Product
quantization for nearest neighbor search", IEEE TPAMI (the inverted file with exact distances).
At full-recall settings (``ef_search >= n`` on a connected graph, ``nprobe = nlist``) both return
the exact top-k (tested). :func:`compare_with_exact` reports recall@k and queries per second against
exact search (``IndexFlatIP``) over the same folded vectors.

Reproducibility: IVF training uses ``seed`` (faiss k-means) on a seeded sample; HNSW levels use
faiss's fixed generator. faiss inserts each added batch of HNSW nodes level by level, so the graph
depends on ``chunk_rows``, and with ``threads > 1`` on thread timing; with the same ``chunk_rows``
and ``threads=1`` (the default) a build is reproducible.

This module builds indexes and measures them against exact search; the index class, its settings and its files
are in :mod:`normscope.extensions.ann_index` (every name importable from here too).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence

import numpy as np

from normscope.errors import InputError
from normscope.inputs import JUNK_ZERO, Junk, zero_vector_rows
from normscope.scoring import PARAM_NAMES, check_scorer, fold_documents, fold_queries, validate_param
from normscope.retrieval.search import _check_ids
from normscope.extensions.ann_index import ANN_KINDS, AnnParams, FoldedAnnIndex, check_index_out

__all__ = ["ANN_KINDS", "AnnParams", "FoldedAnnIndex", "build_ann_index", "check_index_out", "compare_with_exact",
           "recall_at_k", "time_exact"]


def _chunks(vectors, rows: int) -> Iterator[tuple[list[str] | None, np.ndarray]]:
    if hasattr(vectors, "chunks"):  # a normscope.engine.shards.VectorSource
        yield from vectors.chunks(rows)
        return
    for s in range(0, vectors.shape[0], rows):
        yield None, np.asarray(vectors[s : s + rows], dtype=np.float32)


def _make_index(kind: str, d: int, p: AnnParams):
    import faiss

    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(d, int(p.m), faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = int(p.ef_construction)
        index.hnsw.efSearch = int(p.ef_search)
        return index
    if kind == "ivf":
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, int(p.nlist), faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = int(p.seed)
        index.nprobe = int(p.nprobe)
        return index
    return faiss.IndexFlatIP(d)


def build_ann_index(
    vectors,
    doc_ids: Sequence[str] | None = None,
    *,
    scorer: str = "cosine",
    param: float | None = None,
    params: AnnParams = AnnParams(),  # noqa: B008 (a frozen dataclass: immutable)
    threads: int = 1,
    chunk_rows: int = 65536,
    fingerprint: dict | None = None,
) -> FoldedAnnIndex:
    """Build a norm-aware faiss index, reading the vectors in chunks (two passes).

    Pass 1 computes every norm (8 bytes a document) to validate the scorer's parameter on the whole
    corpus before anything is built, finds the junk (zero) vectors (:func:`normscope.inputs.zero_vector_rows`:
    left out of the index, listed in the result's ``junk``, never ranked) and draws the IVF training
    sample; pass 2 folds each chunk (:func:`~normscope.scoring.fold_documents`) and adds it.
    Peak memory is the index itself plus one chunk.

    Parameters
    ----------
    vectors : ndarray of shape (n, d) or VectorSource
        Raw document vectors, in memory or on disk (:func:`normscope.engine.shards.open_vectors`:
        parquet file, Ray shard directory, ``.npy``).
    doc_ids : sequence of str, length n, optional
        Required for an array; taken from the source otherwise (given ids override it).
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` (inverse_norm, units 1/||d||) or ``beta`` (power); required for those two.
    params : AnnParams
    threads : int
        faiss OpenMP threads while building (1: reproducible).
    chunk_rows : int
        Vectors read and folded at a time.
    fingerprint : dict, optional
        Model fingerprint to record (default: the source's).

    Returns
    -------
    FoldedAnnIndex

    Raises
    ------
    InputError
        Unknown scorer or kind, a missing or invalid parameter (checked on every norm before
        building), ids missing, of the wrong number or duplicated, bad settings (:meth:`AnnParams.resolved`).
    """
    vectors, n, d, params = _check_build_args(vectors, doc_ids, scorer=scorer, param=param, params=params,
                                              threads=threads)
    if fingerprint is None and hasattr(vectors, "chunks") and vectors.fingerprint is not None:
        fingerprint = vectors.fingerprint.to_dict()
    norms, ids, want, sample = _first_pass(vectors, chunk_rows, n, d, params)
    ids = [str(i) for i in doc_ids] if doc_ids is not None else ids
    ids = _check_ids(ids, n, "document")
    zero = zero_vector_rows(norms)  # junk (zero) vectors: left out of the index, listed, never ranked
    if zero.size == n:
        raise InputError(f"every one of the {n} document vectors is junk ({JUNK_ZERO})")
    good = np.ones(n, dtype=bool)
    good[zero] = False
    validate_param(scorer, param, norms[good])
    junk = Junk().merged(zero, [ids[i] for i in zero], JUNK_ZERO)
    ids = [d for d, g in zip(ids, good) if g]
    if want is not None:
        sample = sample[good[want]]
    del norms
    index = _fill_index(vectors, good, sample, d=d, scorer=scorer, param=param, params=params, threads=threads,
                        chunk_rows=chunk_rows)
    out = FoldedAnnIndex(index, ids, scorer, param, params, fingerprint)
    out.junk = junk
    return out


def _check_build_args(vectors, doc_ids, *, scorer: str, param, params: AnnParams, threads: int):
    """(vectors as an array or the source, n, d, the settings resolved for n); :class:`InputError` for a
    parameter missing or not taken, an empty or non-2-D array, an array without ids, ``threads < 1``."""
    check_scorer(scorer)
    if PARAM_NAMES[scorer] is not None and param is None:
        raise InputError(f"scorer {scorer} needs --{PARAM_NAMES[scorer]}")
    if PARAM_NAMES[scorer] is None and param is not None:
        raise InputError(f"scorer {scorer} takes no parameter, got {param}")
    is_source = hasattr(vectors, "chunks")
    if not is_source:
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[0] == 0:
            raise InputError(f"empty corpus or bad shape for documents: {vectors.shape}")
        if doc_ids is None:
            raise InputError("doc_ids are required with an array of vectors")
    n, d = (len(vectors), vectors.dim) if is_source else vectors.shape
    params = params.resolved(n)
    if threads < 1:
        raise InputError(f"threads must be >= 1, got {threads}")
    return vectors, n, d, params


def _first_pass(vectors, chunk_rows: int, n: int, d: int, params: AnnParams):
    """Pass 1 over the chunks: every norm (float64), the source's ids and, for IVF, the seeded training sample
    (float32) with its row positions. Returns (norms, ids, positions or None, sample or None)."""
    norms = np.empty(n, dtype=np.float64)
    ids: list[str] = []
    want = sample = None
    if params.kind == "ivf":
        want = np.sort(np.random.default_rng(params.seed).choice(n, size=params.train_size, replace=False))
        sample = np.empty((params.train_size, d), dtype=np.float32)
    s = t = 0
    for chunk_ids, v in _chunks(vectors, chunk_rows):
        e = s + len(v)
        norms[s:e] = np.linalg.norm(v.astype(np.float64), axis=1)
        if chunk_ids is not None:
            ids += chunk_ids
        if want is not None:
            pick = want[(want >= s) & (want < e)] - s
            sample[t : t + len(pick)] = v[pick]
            t += len(pick)
        s = e
    return norms, ids, want, sample


def _fill_index(vectors, good: np.ndarray, sample, *, d: int, scorer: str, param, params: AnnParams, threads: int,
                chunk_rows: int):
    """Pass 2: the faiss index (IVF trained on the folded sample), every non-junk vector folded and added
    chunk by chunk, with ``threads`` OpenMP threads (restored after)."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(threads))
    try:
        index = _make_index(params.kind, d, params)
        if params.kind == "ivf":
            index.train(fold_documents(sample, scorer, param))
            del sample
        s = 0
        for _, v in _chunks(vectors, chunk_rows):  # pass 2: fold and add
            keep = good[s : s + len(v)]
            s += len(v)
            if keep.any():
                index.add(fold_documents(v[keep] if not keep.all() else v, scorer, param))
    finally:
        faiss.omp_set_num_threads(before)
    return index


def recall_at_k(approx: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Mean over queries of ``|approx top-k & exact top-k| / k``.

    Parameters
    ----------
    approx, exact : ndarray of shape (n_queries, >= k), int
        Document positions per query, best first (faiss ``-1`` padding never matches).
    k : int

    Returns
    -------
    float in [0, 1]
    """
    hits = [len(set(a[:k].tolist()) & set(e[:k].tolist()) - {-1}) for a, e in zip(approx, exact)]
    return float(np.mean(hits) / k) if hits else math.nan


def _best_of(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def time_exact(exact, Qf: np.ndarray, k: int, *, repeats: int = 3, threads: int = 1
               ) -> tuple[float, np.ndarray, np.ndarray]:
    """Best-of-``repeats`` seconds, top-``k`` positions and scores of an exact faiss search of folded queries.

    Parameters
    ----------
    exact : faiss.Index
        Exact inner-product index over folded documents (``IndexFlatIP``).
    Qf : ndarray of shape (n_queries, d), float32
        Folded queries (:func:`~normscope.scoring.fold_queries`).

    Returns
    -------
    seconds : float
    positions : ndarray of shape (n_queries, k), int64
    scores : ndarray of shape (n_queries, k), float32
    """
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(threads))
    try:
        t, (scores, positions) = _best_of(lambda: exact.search(np.ascontiguousarray(Qf, dtype=np.float32), int(k)), repeats)
    finally:
        faiss.omp_set_num_threads(before)
    return t, positions, scores


def compare_with_exact(ann: FoldedAnnIndex, Q, *, k: int = 10, repeats: int = 3, threads: int = 1,
                       exact=None, exact_run: tuple[float, np.ndarray] | None = None,
                       settings: Sequence[dict] | None = None) -> list[dict]:
    """Recall@k and queries per second of ``ann`` against exact search on the same folded vectors.

    Both sides are timed on the faiss search call alone, with the same pre-folded float32 queries in
    one batch and ``threads`` OpenMP threads; the best of ``repeats`` timings is kept (other load only
    ever adds time).

    Parameters
    ----------
    ann : FoldedAnnIndex
    Q : array-like of shape (n_queries, d)
        Raw query vectors.
    k : int
    repeats : int
    threads : int
    exact : faiss.Index, optional
        Exact index over the same folded vectors (default :meth:`FoldedAnnIndex.exact_index`).
    exact_run : (float, ndarray, ndarray), optional
        :func:`time_exact` of these queries measured by the caller (once for several indexes).
    settings : sequence of dict, optional
        Search settings to sweep, e.g. ``[{"ef_search": 16}, {"ef_search": 64}]`` (default: the index's).

    Returns
    -------
    list of dict
        One per setting: ``kind``, the setting, ``k``, ``n_queries``, ``recall_at_k``, ``qps``,
        ``qps_exact``, ``speedup_vs_exact`` (``qps / qps_exact``) and ``score_ratio_at_k``: the mean
        over queries of (sum of the scores of the approximate top-k) / (sum of the exact top-k scores),
        1 when every approximate result scores as high as the exact one it replaces (near-ties
        swapped cost recall but not score).
    """
    import faiss

    if k < 1 or repeats < 1:
        raise InputError(f"k and repeats must be >= 1, got {k}, {repeats}")
    Qf = fold_queries(Q, ann.scorer)
    if exact_run is None:
        exact_run = time_exact(exact if exact is not None else ann.exact_index(), Qf, k, repeats=repeats, threads=threads)
    t_exact, i_exact, s_exact = exact_run
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(threads))
    try:
        rows = []
        for setting in settings or [{}]:
            t_ann, (s_ann, i_ann) = _best_of(lambda setting=setting: ann.search_folded(Qf, k, **setting), repeats)
            s_ann = np.where(i_ann >= 0, s_ann, 0.0).astype(np.float64)  # faiss pads missing results with -1
            ratio = float(np.mean(s_ann[:, :k].sum(1) / s_exact[:, :k].astype(np.float64).sum(1)))
            rows.append({"kind": ann.params.kind, **setting, "k": k, "n_queries": len(Qf),
                         "recall_at_k": recall_at_k(i_ann, i_exact, k), "qps": len(Qf) / t_ann,
                         "qps_exact": len(Qf) / t_exact, "speedup_vs_exact": t_exact / t_ann,
                         "score_ratio_at_k": ratio})
    finally:
        faiss.omp_set_num_threads(before)
    return rows
