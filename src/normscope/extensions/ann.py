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
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from normscope._io import OutsideFolder, inside_folder, open_inside, read_inside, write_json
from normscope.engine.shards import check_out_dir, replace_dir
from normscope.errors import InputError
from normscope.inputs import JUNK_ZERO, Junk, zero_vector_rows
from normscope.scoring import PARAM_NAMES, check_scorer, fold_documents, fold_queries, pair_dot, validate_param
from normscope.retrieval.search import _check_ids, order_run
from normscope.validate import write_failure

__all__ = ["ANN_KINDS", "AnnParams", "FoldedAnnIndex", "build_ann_index", "check_index_out", "compare_with_exact",
           "recall_at_k", "time_exact"]

ANN_KINDS = ("hnsw", "ivf", "flat")
_FILES = ("index.faiss", "ids.parquet", "meta.json")


@dataclass(frozen=True)
class AnnParams:
    """Build and default search settings of a :class:`FoldedAnnIndex`.

    Attributes
    ----------
    kind : {'hnsw', 'ivf', 'flat'}
    m : int
        HNSW neighbours per node (faiss ``M``); memory ``~ 8 m`` bytes a vector on top of the vector.
    ef_construction : int
        HNSW candidate list while inserting.
    ef_search : int
        HNSW candidate list while searching (>= k); larger is slower and more exact.
    nlist : int or None
        IVF lists (k-means centroids); default ``round(sqrt(n))`` clipped to ``[1, n // 39]``.
    nprobe : int or None
        IVF lists scanned per query (<= nlist; default ``min(16, nlist)``); ``nprobe = nlist`` is exact.
    train_size : int or None
        IVF k-means training vectors, a seeded sample; default ``min(n, 64 nlist)``.
    seed : int
        Seed of the training sample and of faiss k-means.
    """

    kind: str = "hnsw"
    m: int | None = 32
    ef_construction: int | None = 200
    ef_search: int | None = 128
    nlist: int | None = None
    nprobe: int | None = None
    train_size: int | None = None
    seed: int = 0

    def resolved(self, n: int) -> "AnnParams":
        """These settings validated for ``n`` documents, defaults filled in.

        Raises
        ------
        InputError
            Unknown kind; a non-positive setting; ``nlist`` above ``n``; ``nprobe`` above ``nlist``;
            ``train_size`` below ``nlist`` or above ``n``. Settings of other kinds become None.
        """
        if self.kind not in ANN_KINDS:
            raise InputError(f"unknown index kind '{self.kind}' (choose from {', '.join(ANN_KINDS)})")
        knobs = {"hnsw": ("m", "ef_construction", "ef_search"), "ivf": ("nprobe",), "flat": ()}[self.kind]
        for name in knobs:
            if name == "nprobe" and self.nprobe is None:
                continue
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise InputError(f"{name} must be an integer >= 1, got {v!r}")
        unused = {name: None for name in ("m", "ef_construction", "ef_search", "nprobe", "nlist", "train_size")
                  if name not in knobs}
        if self.kind != "ivf":
            return replace(self, **unused)
        nlist = self.nlist if self.nlist is not None else min(max(1, round(math.sqrt(n))), max(1, n // 39))
        if nlist < 1 or nlist > n:
            raise InputError(f"nlist must lie in [1, {n}] (the number of documents), got {nlist}")
        train = self.train_size if self.train_size is not None else min(n, 64 * nlist)
        if not nlist <= train <= n:
            raise InputError(f"train_size must lie in [nlist={nlist}, n={n}], got {train}")
        nprobe = min(16, nlist) if self.nprobe is None else self.nprobe
        if nprobe > nlist:
            raise InputError(f"nprobe={nprobe} exceeds nlist={nlist}")
        unused.pop("nlist"), unused.pop("train_size")
        return replace(self, nlist=int(nlist), train_size=int(train), nprobe=int(nprobe), **unused)


def _chunks(vectors, rows: int) -> Iterator[tuple[list[str] | None, np.ndarray]]:
    if hasattr(vectors, "chunks"):  # a normscope.engine.shards.VectorSource
        yield from vectors.chunks(rows)
        return
    for s in range(0, vectors.shape[0], rows):
        yield None, np.asarray(vectors[s : s + rows], dtype=np.float32)


_SLACK = 8  # candidates beyond k, so ties at rank k are ordered by the tie rule among them


class FoldedAnnIndex:
    """An approximate (HNSW, IVF) or exact (flat) faiss index over folded document vectors.

    Build one with :func:`build_ann_index`, or :meth:`load` a saved one. :meth:`search` returns
    runs in the format of :meth:`normscope.retrieval.search.FoldedIndex.search`: candidates found by
    faiss, scored by :func:`~normscope.scoring.pair_dot` of the folded float32 vectors
    (reconstructed from the index) and ordered by :data:`~normscope.retrieval.search.TIE_RULE`.

    Attributes
    ----------
    index : faiss.Index
        Inner-product index holding the folded float32 vectors.
    doc_ids : list of str
    scorer : str
    param : float or None
    params : AnnParams
    fingerprint : dict or None
        The model fingerprint of the vectors, when known.
    """

    def __init__(self, index, doc_ids: Sequence[str], scorer: str, param: float | None, params: AnnParams,
                 fingerprint: dict | None = None):
        self.index = index
        self.doc_ids = _check_ids(doc_ids, int(index.ntotal), "document")
        self.scorer, self.param, self.params, self.fingerprint = scorer, param, params, fingerprint
        self.junk = Junk()  # documents left out as junk (zero) vectors when the index was built
        if params.kind == "ivf":  # reconstruct() of candidates needs the id -> list map (8 bytes a vector)
            import faiss

            faiss.extract_index_ivf(index).make_direct_map()

    @property
    def dim(self) -> int:
        return int(self.index.d)

    def set_search(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """Set the search knobs on the faiss index (None: the index's defaults).

        Raises
        ------
        InputError
            ``nprobe`` outside ``[1, nlist]``, ``ef_search < 1``, or a knob of another kind of index.
        """
        import faiss

        kind = self.params.kind
        if ef_search is not None and kind != "hnsw":
            raise InputError(f"--ef-search applies to hnsw indexes; this one is {kind}")
        if nprobe is not None and kind != "ivf":
            raise InputError(f"--nprobe applies to ivf indexes; this one is {kind}")
        if kind == "hnsw":
            ef = int(ef_search or self.params.ef_search)
            if ef < 1:
                raise InputError(f"ef_search must be >= 1, got {ef}")
            faiss.downcast_index(self.index).hnsw.efSearch = ef
        elif kind == "ivf":
            nprobe = int(nprobe or self.params.nprobe)
            if not 1 <= nprobe <= self.params.nlist:
                raise InputError(f"nprobe must lie in [1, nlist={self.params.nlist}], got {nprobe}")
            faiss.downcast_index(self.index).nprobe = nprobe

    def search(self, Q, query_ids: Sequence[str], k: int = 100, *, ef_search: int | None = None,
               nprobe: int | None = None) -> dict[str, dict[str, float]]:
        """Top-``k`` documents of each query (approximate for hnsw/ivf).

        Parameters
        ----------
        Q : array-like of shape (n_queries, d)
            Raw query vectors (folded here).
        query_ids : sequence of str
        k : int
        ef_search, nprobe : int, optional, keyword-only
            Override the index's search settings for this call (not thread-safe).

        Returns
        -------
        dict of {qid: {docid: float score}}
            Inner dicts in rank order (score, then document id, descending); at most ``k`` documents
            (fewer when an IVF search finds fewer candidates).

        Raises
        ------
        InputError
            ``k < 1``, ids of the wrong number or duplicated, bad search settings, queries of another
            dimension than the index's, a junk (zero) query vector (:func:`normscope.inputs.zero_vector_rows`).
        """
        Q = np.asarray(Q)
        if Q.ndim != 2 or Q.shape[1] != self.dim:
            raise InputError(f"the queries have dimension {Q.shape[-1] if Q.ndim else 0}, the index {self.dim}: "
                             "embed them with the index's model")
        zero = zero_vector_rows(np.linalg.norm(Q.astype(np.float64), axis=1))
        if zero.size:
            raise InputError(f"{zero.size} query vector(s) are junk ({JUNK_ZERO}), e.g. query "
                             f"{list(query_ids)[zero[0]]!r}: nothing to rank them by; leave them out")
        Qf = fold_queries(Q, self.scorer)
        query_ids = _check_ids(query_ids, Qf.shape[0], "query")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        k = min(int(k), len(self.doc_ids))
        _, ids = self.search_folded(Qf, min(len(self.doc_ids), k + _SLACK), ef_search=ef_search, nprobe=nprobe)
        run = {}
        for q, qf, cand in zip(query_ids, Qf, ids):
            cand = cand[cand >= 0]
            scores = pair_dot(self.index.reconstruct_batch(cand), qf[None, :]) if cand.size else []
            run[q] = {self.doc_ids[i]: float(s) for i, s in zip(cand, scores)}
        return {q: dict(list(docs.items())[:k]) for q, docs in order_run(run).items()}

    def search_folded(self, Qf: np.ndarray, k: int, *, ef_search: int | None = None,
                      nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """faiss's raw ``(scores, positions)`` of already folded queries, each (n_queries, k); -1 pads."""
        self.set_search(ef_search, nprobe)
        return self.index.search(np.ascontiguousarray(Qf, dtype=np.float32), int(k))

    def exact_index(self):
        """A faiss ``IndexFlatIP`` over the same folded vectors (reconstructed from this index)."""
        import faiss

        inner = faiss.downcast_index(self.index)
        if self.params.kind == "ivf":
            inner.make_direct_map()
        flat = faiss.IndexFlatIP(self.dim)
        step = 1 << 16
        for s in range(0, int(self.index.ntotal), step):
            flat.add(inner.reconstruct_n(s, min(step, int(self.index.ntotal) - s)))
        return flat

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path, *, shown: str | Path | None = None) -> Path:
        """Write ``index.faiss``, ``ids.parquet`` and ``meta.json`` into the directory ``path`` (atomic).

        Raises
        ------
        OutputError
            A full disk, a file size limit or a read-only place (one line naming ``shown``, default
            ``path``); nothing is left behind.
        """
        import faiss
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = Path(path)
        check_index_out(path)
        tmp = path.parent / f".{path.name}.tmp-{time.time_ns()}"
        tmp.mkdir()
        try:
            # serialised here and written by Python: faiss.write_index only prints a failed close (a full disk,
            # a file size limit) and leaves a truncated file; Python's write raises
            with open(tmp / "index.faiss", "wb") as f:
                f.write(faiss.serialize_index(self.index).tobytes())
            pq.write_table(pa.table({"id": pa.array(self.doc_ids, type=pa.string())}), tmp / "ids.parquet")
            write_json({"kind": self.params.kind, "scorer": self.scorer, "param": self.param,
                        "param_name": PARAM_NAMES[self.scorer], "n": len(self.doc_ids), "dim": self.dim,
                        "params": asdict(self.params), "fingerprint": self.fingerprint}, tmp / "meta.json")
            replace_dir(tmp, path)
        except (OSError, RuntimeError) as exc:  # faiss reports a full disk as a RuntimeError naming errno's text

            raise (write_failure(exc, shown or path, "-o/--out") or exc) from None
        finally:
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "FoldedAnnIndex":
        """Read an index written by :meth:`save`.

        Raises
        ------
        InputError
            Not a normscope index directory, or its files disagree.
        """
        import faiss
        import pyarrow.parquet as pq

        path = Path(path)
        if not path.is_dir() or any(not (path / f).is_file() for f in _FILES):
            raise InputError(f"{path} is not a normscope index directory ({', '.join(_FILES)})")
        for f in _FILES:  # never read through a symbolic link out of the index folder (OutsideFolder: one line)
            inside_folder(path / f, path)
        try:
            meta = json.loads(read_inside(path / "meta.json", path, text=True))
            index = faiss.deserialize_index(np.frombuffer(read_inside(path / "index.faiss", path), dtype=np.uint8))
            with open_inside(path / "ids.parquet", path) as f:
                ids = [str(x) for x in pq.read_table(f).column("id").to_pylist()]
        except OutsideFolder:
            raise
        except (OSError, ValueError, KeyError, RuntimeError) as exc:
            raise InputError(f"cannot read the index in {path}: {str(exc).splitlines()[0]}") from None
        if int(index.ntotal) != len(ids) or int(index.d) != int(meta["dim"]):
            raise InputError(f"{path}: index.faiss holds {index.ntotal} x {index.d} vectors but the ids/meta say "
                             f"{len(ids)} x {meta['dim']}")
        return cls(index, ids, meta["scorer"], meta["param"], AnnParams(**meta["params"]), meta.get("fingerprint"))


def check_index_out(path: str | Path) -> Path:
    """Check an index output directory before any work (see :func:`normscope.engine.shards.check_out_dir`).

    Raises
    ------
    InputError
    """
    return check_out_dir(path, "meta.json", "a normscope index")


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
    params: AnnParams = AnnParams(),
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
