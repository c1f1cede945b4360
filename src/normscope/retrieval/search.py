"""Exact norm-aware search with faiss, and re-ranking of candidate lists.

Results are runs in the ranx / BEIR / pytrec_eval format ``{qid: {docid: score}}``,
with each inner dict inserted in rank order (score descending). Ties are broken
deterministically by document position in the corpus (earlier first): faiss returns
``k + n_extra`` neighbours and the final order is a stable sort on
``(-score, doc position)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError
from normscope.retrieval.scoring import fold_documents, fold_queries, score

__all__ = ["FoldedIndex", "exact_search", "brute_force_search", "rerank", "run_to_frame"]

_TIE_SLACK = 8  # extra neighbours fetched so ties at the k-th position are resolved by doc position


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


def _topk_sorted(scores: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Stable order on (-score, index) of each row, truncated to k. idx < 0 entries (faiss padding) dropped."""
    out_s, out_i = [], []
    for s_row, i_row in zip(scores, idx):
        keep = i_row >= 0
        s_row, i_row = s_row[keep], i_row[keep]
        order = np.lexsort((i_row, -s_row))[:k]
        out_s.append(s_row[order])
        out_i.append(i_row[order])
    return out_s, out_i


class FoldedIndex:
    """A faiss ``IndexFlatIP`` over folded document vectors (exact search).

    Parameters
    ----------
    D : array-like of shape (n_docs, d)
        Raw document vectors.
    doc_ids : sequence of str, length n_docs
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` / ``beta`` (see :mod:`normscope.retrieval.scoring`).

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
        self.index = faiss.IndexFlatIP(self.vectors.shape[1])
        self.index.add(self.vectors)

    def search(self, Q, query_ids: Sequence[str], k: int = 100) -> dict[str, dict[str, float]]:
        """Top-``k`` documents of each query.

        Parameters
        ----------
        Q : array-like of shape (n_queries, d)
            Raw query vectors (folded here with :func:`fold_queries`).
        query_ids : sequence of str, length n_queries
        k : int
            Number of results per query (capped at the corpus size).

        Returns
        -------
        dict of {qid: {docid: float score}}, inner dicts in rank order.
        """
        Qf = fold_queries(Q, self.scorer)
        query_ids = _check_ids(query_ids, Qf.shape[0], "query")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        n = len(self.doc_ids)
        k = min(int(k), n)
        kk = min(k + _TIE_SLACK, n)
        if Qf.shape[0] == 0:
            return {}
        S, I = self.index.search(Qf, kk)
        ss, ii = _topk_sorted(S, I, k)
        return {
            q: {self.doc_ids[j]: float(s) for s, j in zip(s_row, i_row)} for q, s_row, i_row in zip(query_ids, ss, ii)
        }


def exact_search(
    Q,
    D,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    scorer: str = "cosine",
    param: float | None = None,
    k: int = 100,
) -> dict[str, dict[str, float]]:
    """Exact top-``k`` search under ``scorer`` (faiss ``IndexFlatIP`` on folded vectors).

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

    Returns
    -------
    dict of {qid: {docid: score}}
        Scores are float32 inner products of folded vectors (equal to
        :func:`normscope.retrieval.scoring.score` up to float32 rounding).

    Raises
    ------
    InputError
        Empty corpus, id/vector mismatch, duplicate ids, invalid parameter.
    """
    return FoldedIndex(D, doc_ids, scorer, param).search(Q, query_ids, k)


def brute_force_search(
    Q,
    D,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    scorer: str = "cosine",
    param: float | None = None,
    k: int = 100,
) -> dict[str, dict[str, float]]:
    """Reference top-``k`` search from the float64 score matrix (no folding, no faiss).

    Same arguments, return format and tie rule as :func:`exact_search`.
    """
    D = np.asarray(D)
    if D.ndim != 2 or D.shape[0] == 0:
        raise InputError(f"empty corpus or bad shape for documents: {D.shape}")
    doc_ids = _check_ids(doc_ids, D.shape[0], "document")
    S = score(Q, D, scorer, param)
    query_ids = _check_ids(query_ids, S.shape[0], "query")
    k = min(int(k), len(doc_ids))
    idx = np.broadcast_to(np.arange(len(doc_ids)), S.shape)
    ss, ii = _topk_sorted(S, idx, k)
    return {q: {doc_ids[j]: float(s) for s, j in zip(s_row, i_row)} for q, s_row, i_row in zip(query_ids, ss, ii)}


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
    """Re-score each query's candidate documents with ``scorer`` and re-sort them.

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
        Only queries present in ``candidates``; ties broken by corpus position.

    Raises
    ------
    InputError
        A candidate names an unknown query or document.
    """
    query_ids = _check_ids(query_ids, np.asarray(Q).shape[0], "query")
    doc_ids = _check_ids(doc_ids, np.asarray(D).shape[0], "document")
    qpos = {q: i for i, q in enumerate(query_ids)}
    dpos = {d: i for i, d in enumerate(doc_ids)}
    Qf = fold_queries(Q, scorer).astype(np.float64)
    Df = fold_documents(D, scorer, param).astype(np.float64)
    out: dict[str, dict[str, float]] = {}
    for q, cands in candidates.items():
        if q not in qpos:
            raise InputError(f"candidate run names unknown query '{q}'")
        try:
            idx = np.array([dpos[d] for d in cands], dtype=np.int64)
        except KeyError as exc:
            raise InputError(f"candidate run of query '{q}' names unknown document '{exc.args[0]}'") from None
        s = Df[idx] @ Qf[qpos[q]]
        order = np.lexsort((idx, -s))
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
