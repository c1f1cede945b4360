"""Exact norm-aware search with faiss, and re-ranking of candidate lists, under one tie rule.

Results are runs in the ranx / BEIR / pytrec_eval format ``{qid: {docid: score}}``, each inner
dict inserted in rank order.

**Tie rule** (:data:`TIE_RULE`): documents are ranked by score, descending, and documents with
equal scores by document id, descending in byte (code point) order. This is the order trec_eval
and pytrec_eval impose on any run they evaluate (Lin & Yang, SIGIR 2019, "The impact of score ties
on repeatability"), and what MTEB's own MRR follows; normscope applies it when the run is made
and evaluates exactly that order (:func:`normscope.retrieval.evaluate.per_query_scores`), so the
rank column of ``-o``, normscope's metrics and pytrec_eval agree on tied runs.

**Scores.** faiss (``IndexFlatIP`` on folded float32 vectors) finds candidates; each candidate is
then scored by :func:`~normscope.scoring.pair_dot` (float64 sum of exact float32
products, the same bits for the same pair wherever it sits), so identical documents tie exactly
and the result does not depend on the order of the corpus or of the queries. Candidates are
fetched until no document outside them can reach the k-th score (float32 error bound
``d * 2**-24 * ||q'|| * max||d'||``), so the top ``k`` is exact under the rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError
from normscope.scoring import fold_documents, fold_queries, pair_dot, score

__all__ = ["TIE_RULE", "FoldedIndex", "exact_search", "brute_force_search", "rerank", "order_run", "run_to_frame"]

#: The one tie rule of every run normscope makes or evaluates.
TIE_RULE = "score descending, then document id descending (trec_eval / pytrec_eval order)"

_TIE_SLACK = 8  # extra neighbours fetched first; more are fetched while ties or rounding could reach rank k
_U32 = 2.0**-24


def _check_ids(ids, n: int, what: str) -> list[str]:
    ids = [str(i) for i in ids]
    if len(ids) != n:
        raise InputError(f"{len(ids)} {what} ids for {n} {what} vectors")
    if len(set(ids)) != len(ids):
        seen, dup = set(), None
        for i in ids:
            if i in seen:
                dup = i
                break
            seen.add(i)
        raise InputError(f"duplicate {what} id '{dup}'")
    return ids


def _id_rank(ids: Sequence[str]) -> np.ndarray:
    """Position of each id in ascending code-point order (int64): ``-rank`` ascending is id descending."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(ids))
    return rank


def _rule_order(scores: np.ndarray, id_rank: np.ndarray) -> np.ndarray:
    """Indices sorting the last axis by :data:`TIE_RULE` (NaN-free scores; -inf marks an absent entry)."""
    return np.lexsort((-id_rank, -scores), axis=-1)


def order_run(run: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """``run`` with each query's documents re-inserted in :data:`TIE_RULE` order (score, then id, descending).

    Parameters
    ----------
    run : dict of {qid: {docid: score}}

    Returns
    -------
    dict of {qid: {docid: float}}
        Same queries, documents and scores; inner dicts in rank order.
    """
    return {str(q): dict(sorted(((str(d), float(s)) for d, s in docs.items()), key=lambda x: (x[1], x[0]), reverse=True))
            for q, docs in run.items()}


def _self_positions(query_ids: Sequence[str], doc_ids: Sequence[str], ignore: bool) -> np.ndarray:
    if not ignore:
        return np.full(len(query_ids), -1, dtype=np.int64)
    pos = {d: i for i, d in enumerate(doc_ids)}
    return np.array([pos.get(q, -1) for q in query_ids], dtype=np.int64)


class FoldedIndex:
    """Exact search under one scorer: a faiss ``IndexFlatIP`` over folded document vectors.

    Parameters
    ----------
    D : array-like of shape (n_docs, d)
        Raw document vectors.
    doc_ids : sequence of str, length n_docs
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` / ``beta`` (see :mod:`normscope.scoring`).

    Raises
    ------
    InputError
        Empty corpus, duplicate ids, or an invalid scorer parameter.
    """

    def __init__(self, D, doc_ids: Sequence[str], scorer: str = "cosine", param: float | None = None):
        import faiss

        D = np.asarray(D)
        if D.ndim != 2 or D.shape[0] == 0:
            raise InputError(f"empty corpus or bad shape for documents: {D.shape}")
        self.doc_ids = _check_ids(doc_ids, D.shape[0], "document")
        self.scorer = scorer
        self.param = param
        self.vectors = fold_documents(D, scorer, param)
        self._id_rank = _id_rank(self.doc_ids)
        self._max_norm = float(np.linalg.norm(self.vectors.astype(np.float64), axis=1).max())
        self.index = faiss.IndexFlatIP(self.vectors.shape[1])
        self.index.add(self.vectors)

    def search(self, Q, query_ids: Sequence[str], k: int = 100, *, ignore_identical_ids: bool = False
               ) -> dict[str, dict[str, float]]:
        """Top-``k`` documents of each query, ranked by :data:`TIE_RULE`.

        Parameters
        ----------
        Q : array-like of shape (n_queries, d)
            Raw query vectors (folded here with :func:`fold_queries`).
        query_ids : sequence of str, length n_queries
        k : int
            Results per query (capped at the number of candidate documents).
        ignore_identical_ids : bool, keyword-only
            Leave out the document whose id equals the query id (BEIR's convention for sets where
            a query is also a corpus document); the query still gets ``k`` other documents.

        Returns
        -------
        dict of {qid: {docid: float score}}
            Inner dicts in rank order; scores are :func:`~normscope.scoring.pair_dot` of
            the folded float32 vectors (float64).
        """
        Qf = fold_queries(Q, self.scorer)
        query_ids = _check_ids(query_ids, Qf.shape[0], "query")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        if Qf.shape[0] == 0:
            return {}
        n, d = len(self.doc_ids), Qf.shape[1]
        excl = _self_positions(query_ids, self.doc_ids, ignore_identical_ids)
        k_eff = np.minimum(int(k), n - (excl >= 0))
        qnorm = np.linalg.norm(Qf.astype(np.float64), axis=1)
        tol = 1.01 * d * _U32 * qnorm * self._max_norm + 1e-300
        result: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(query_ids)
        todo = np.arange(len(query_ids))
        fetch = min(n, int(k) + 1 + _TIE_SLACK)
        while todo.size:
            chunk = max(1, (1 << 22) // (fetch * d))  # rows rescored at once (float64 temporary of about 32 MB)
            again = []
            S_all, I_all = self.index.search(Qf[todo], fetch)  # one faiss call per round: its batches are efficient
            for c0 in range(0, todo.size, chunk):
                rows = todo[c0 : c0 + chunk]
                S, ids = S_all[c0 : c0 + chunk], I_all[c0 : c0 + chunk]
                valid = (ids >= 0) & (ids != excl[rows, None])
                Ic = np.where(valid, ids, 0)
                s64 = np.where(valid, pair_dot(self.vectors[Ic], Qf[rows][:, None, :]), -np.inf)
                order = _rule_order(s64, np.where(valid, self._id_rank[Ic], -1))
                for j, r in enumerate(rows):
                    top = order[j, : k_eff[r]]
                    if top.size == 0:  # the only document is the query itself
                        result[r] = (top, s64[j, top])
                        continue
                    kth = s64[j, top[-1]]
                    # complete when every document was a candidate, or none outside can reach the k-th score
                    if fetch >= n or S[j, fetch - 1] + tol[r] < kth:
                        result[r] = (Ic[j, top], s64[j, top])
                    else:
                        again.append(r)
            todo = np.asarray(again, dtype=np.int64)
            fetch = min(n, 2 * fetch)
        return {q: {self.doc_ids[i]: float(s) for i, s in zip(*result[r])} for r, q in enumerate(query_ids)}


def exact_search(
    Q,
    D,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    scorer: str = "cosine",
    param: float | None = None,
    k: int = 100,
    ignore_identical_ids: bool = False,
) -> dict[str, dict[str, float]]:
    """Exact top-``k`` search under ``scorer`` and :data:`TIE_RULE` (see :class:`FoldedIndex`).

    Parameters
    ----------
    Q : array-like of shape (n_queries, d)
        Raw query vectors.
    D : array-like of shape (n_docs, d)
        Raw document vectors.
    query_ids, doc_ids : sequence of str
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
    k : int
    ignore_identical_ids : bool
        Leave out each query's own id from its results (BEIR convention).

    Returns
    -------
    dict of {qid: {docid: score}}
        Scores are :func:`~normscope.scoring.pair_dot` of the folded vectors (equal to
        :func:`normscope.scoring.score` up to float32 rounding of the folded vectors).

    Raises
    ------
    InputError
        Empty corpus, id/vector mismatch, duplicate ids, invalid parameter.
    """
    return FoldedIndex(D, doc_ids, scorer, param).search(Q, query_ids, k, ignore_identical_ids=ignore_identical_ids)


def brute_force_search(
    Q,
    D,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    scorer: str = "cosine",
    param: float | None = None,
    k: int = 100,
    ignore_identical_ids: bool = False,
) -> dict[str, dict[str, float]]:
    """Reference top-``k`` search from the float64 score matrix of the raw vectors (no folding, no faiss).

    Same arguments, return format and tie rule as :func:`exact_search`; scores are
    :func:`normscope.scoring.score`.
    """
    D = np.asarray(D)
    if D.ndim != 2 or D.shape[0] == 0:
        raise InputError(f"empty corpus or bad shape for documents: {D.shape}")
    doc_ids = _check_ids(doc_ids, D.shape[0], "document")
    S = score(Q, D, scorer, param)
    query_ids = _check_ids(query_ids, S.shape[0], "query")
    excl = _self_positions(query_ids, doc_ids, ignore_identical_ids)
    S[np.arange(S.shape[0])[excl >= 0], excl[excl >= 0]] = -np.inf
    order = _rule_order(S, np.broadcast_to(_id_rank(doc_ids), S.shape))
    out = {}
    for i, q in enumerate(query_ids):
        top = order[i, : min(int(k), len(doc_ids) - int(excl[i] >= 0))]
        out[q] = {doc_ids[j]: float(S[i, j]) for j in top}
    return out


def rerank(
    candidates: Mapping[str, Mapping[str, float]],
    Q,
    D,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    scorer: str,
    param: float | None = None,
    k: int | None = None,
) -> dict[str, dict[str, float]]:
    """Re-score each query's candidate documents with ``scorer`` and re-sort them by :data:`TIE_RULE`.

    Parameters
    ----------
    candidates : dict of {qid: {docid: score}}
        A first-stage run (e.g. cosine top-100); its scores are ignored.
    Q : array-like of shape (n_queries, d)
        Raw query vectors, rows aligned with ``query_ids``.
    D : array-like of shape (n_docs, d)
        Raw document vectors, rows aligned with ``doc_ids``.
    query_ids, doc_ids : sequence of str
    scorer : str
    param : float or None
    k : int or None
        Keep the top ``k`` after re-ranking (None: all candidates).

    Returns
    -------
    dict of {qid: {docid: score}}
        Only queries present in ``candidates``; scores as in :func:`exact_search`.

    Raises
    ------
    InputError
        A candidate names an unknown query or document.
    """
    query_ids = _check_ids(query_ids, np.asarray(Q).shape[0], "query")
    doc_ids = _check_ids(doc_ids, np.asarray(D).shape[0], "document")
    qpos = {q: i for i, q in enumerate(query_ids)}
    dpos = {d: i for i, d in enumerate(doc_ids)}
    rank = _id_rank(doc_ids)
    Qf = fold_queries(Q, scorer)
    Df = fold_documents(D, scorer, param)
    out: dict[str, dict[str, float]] = {}
    for q, cands in candidates.items():
        if q not in qpos:
            raise InputError(f"candidate run names unknown query '{q}'")
        try:
            idx = np.array([dpos[d] for d in cands], dtype=np.int64)
        except KeyError as exc:
            raise InputError(f"candidate run of query '{q}' names unknown document '{exc.args[0]}'") from None
        s = pair_dot(Df[idx], Qf[qpos[q]])
        order = _rule_order(s, rank[idx])
        if k is not None:
            order = order[: int(k)]
        out[q] = {doc_ids[idx[j]]: float(s[j]) for j in order}
    return out


def run_to_frame(run: Mapping[str, Mapping[str, float]], *, scorer: str | None = None):
    """A run as a long pandas DataFrame with columns ``query_id, rank, doc_id, score`` (+ ``scorer``).

    ``rank`` starts at 1 and follows the inner dict order.
    """
    import pandas as pd

    rows = [(q, r, d, float(s)) for q, docs in run.items() for r, (d, s) in enumerate(docs.items(), start=1)]
    df = pd.DataFrame(rows, columns=["query_id", "rank", "doc_id", "score"])
    if scorer is not None:
        df.insert(0, "scorer", scorer)
    return df
