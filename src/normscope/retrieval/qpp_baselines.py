"""The QPP baselines issue 40 added beside the field's classic predictors (:mod:`normscope.retrieval.qpp`).

``margin_1_3`` is the top-1 minus top-3 cosine. ``autocut_kept`` ports Weaviate's ``Autocut(yValues, cutOff=1)``
exactly: over the top k scores ``y_0..y_{k-1}``, ``diff_i = (y_i - y_0) / (y_{k-1} - y_0) - i / (k - 1)``; the
result is the first ``i >= 1`` where ``diff_i`` exceeds both neighbours (the last point: both predecessors), else
k (also when all k scores are equal); a cut after few results means a clear score jump, so its direction is -1.
``csls_top1`` is the top-1 of the run re-scored by the cross-domain similarity local scaling of Conneau, Lample,
Ranzato, Denoyer & Jegou (ICLR 2018, "Word translation without parallel data"): ``CSLS(q, d) = 2 cos(q, d) - r_D(q)
- r_Q(d)`` with ``r_D(q)`` the mean cosine of q to its k = 10 nearest documents (the mean of its top-10 scores) and
``r_Q(d)`` the mean cosine of d to its k = 10 nearest queries of a query bank (:func:`csls_hubness`; in
``normscope retrieval`` the evaluated queries themselves, their vectors only, never their judgements), the maximum
over the run's top K = 100 (a hub, close to many queries, is pushed down). ``model_agreement``
(:func:`topk_agreement`) is the Jaccard overlap of the top-k document sets of two models' cosine runs of the
same query (k = 10): where two encoders agree, the ranking is read as more reliable (direction +1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError

__all__ = ["AUTOCUT_K", "CSLS_K", "CSLS_DEPTH", "AGREEMENT_K", "margin_1_3", "autocut", "autocut_kept", "csls_hubness",
           "csls_top1", "topk_agreement", "AgreementSpec", "AGREEMENT_SPEC"]

#: Depth of the autocut baseline; k nearest neighbours and re-scored depth of CSLS.
AUTOCUT_K, CSLS_K, CSLS_DEPTH = 10, 10, 100
#: Depth of the cross-model agreement (the top-k sets compared).
AGREEMENT_K = 10


def _top(S: np.ndarray, k: int) -> np.ndarray:
    S = np.asarray(S, dtype=np.float64)
    if S.ndim != 2 or S.shape[1] < 1:
        raise InputError(f"scores must be a (n_queries, depth) matrix, got shape {S.shape}")
    return S[:, :k]

def margin_1_3(S) -> np.ndarray:
    """``s_1 - s_3`` (``s_1 - s_K`` for a query with K < 3 results), shape (n,)."""
    T = _top(S, 3)
    last = np.array([row[np.isfinite(row)][-1] for row in T])
    return T[:, 0] - last


def autocut(y: Sequence[float], cut_off: int = 1) -> int:
    """Weaviate's ``Autocut(yValues, cutOff)``, ported line by line: the number of results kept.

    Parameters
    ----------
    y : sequence of float
        Scores in rank order (similarities descending or distances ascending: the min-max normalisation makes
        the two the same).
    cut_off : int
        Extrema (score jumps) to pass before cutting (>= 1).

    Returns
    -------
    int
        Results kept, in 1..len(y) (len(y) when no jump is found or every score is equal).
    """
    y = [float(v) for v in y]
    n = len(y)
    if n <= 1:
        return n
    span = y[-1] - y[0]
    if span == 0:  # Go divides 0/0 into NaN, every comparison false: nothing is cut
        return n
    diff = [(y[i] - y[0]) / span - i / (n - 1) for i in range(n)]
    extrema = 0
    for i in range(1, n):
        last = i == n - 1
        if (diff[i] > diff[i - 1] and diff[i] > diff[i - 2]) if last else (diff[i] > diff[i - 1] and diff[i] > diff[i + 1]):
            extrema += 1
            if extrema >= cut_off:
                return i
    return n


def autocut_kept(S, k: int = AUTOCUT_K) -> np.ndarray:
    """:func:`autocut` (1 jump) of each query's top-k scores, float64 shape (n,)."""
    T = _top(S, k)
    return np.array([autocut(row[np.isfinite(row)]) for row in T], dtype=np.float64)


def csls_hubness(doc_vectors, bank_vectors, k: int = CSLS_K) -> np.ndarray:
    """``r_Q(d)``: the mean cosine of each document to its ``k`` nearest vectors of a query bank (CSLS).

    Parameters
    ----------
    doc_vectors : array-like of shape (N, d)
    bank_vectors : array-like of shape (m, d)
        The query bank (raw vectors, any norm > 0); ``k`` is cut to m when m < k.
    k : int

    Returns
    -------
    ndarray of shape (N,), float64

    Raises
    ------
    InputError
        A zero vector, dimensions that differ, k < 1.
    """
    D = np.asarray(doc_vectors, dtype=np.float64)
    B = np.asarray(bank_vectors, dtype=np.float64)
    if D.ndim != 2 or B.ndim != 2 or D.shape[1] != B.shape[1] or len(B) == 0 or k < 1:
        raise InputError(f"CSLS needs (N, d) documents and a non-empty (m, d) query bank and k >= 1, got {D.shape}, "
                         f"{B.shape}, k = {k}")
    dn, bn = np.linalg.norm(D, axis=1), np.linalg.norm(B, axis=1)
    if (dn == 0).any() or (bn == 0).any():
        raise InputError("a zero vector has no cosine")
    kk = min(k, len(B))
    Bu = (B / bn[:, None]).T
    out = np.empty(len(D))
    for s in range(0, len(D), 4096):
        C = (D[s : s + 4096] / dn[s : s + 4096, None]) @ Bu
        out[s : s + 4096] = np.sort(np.partition(C, len(B) - kk, axis=1)[:, len(B) - kk:], axis=1).mean(axis=1)
    return out


def csls_top1(S, docs: list, doc_ids: Sequence[str], hubness, k: int = CSLS_K, depth: int = CSLS_DEPTH) -> np.ndarray:
    """The run's top-``depth`` re-scored by CSLS, its best score: ``max_i (2 s_i - r_Q(d_i)) - r_D(q)``.

    ``r_D(q)`` is the mean of the query's top-``k`` scores (its k nearest documents: the run is exhaustive
    cosine search); ``r_Q`` is :func:`csls_hubness`, aligned with ``doc_ids``.

    Returns
    -------
    ndarray of shape (n,), float64

    Raises
    ------
    InputError
        A document of the run without a hubness value, lengths that differ.
    """
    h = np.asarray(hubness, dtype=np.float64).ravel()
    if len(doc_ids) != len(h):
        raise InputError("document ids and CSLS hubness values differ in length")
    hd = dict(zip(map(str, doc_ids), h))
    T = _top(S, depth)
    rq = np.nanmean(_top(S, k), axis=1)
    out = np.empty(len(T))
    for i, row in enumerate(T):
        ids = docs[i][: depth]
        absent = next((d for d in ids if d not in hd), None)
        if absent is not None:
            raise InputError(f"document '{absent}' of the run has no CSLS hubness value")
        out[i] = np.max(2 * row[: len(ids)] - np.array([hd[d] for d in ids])) - rq[i]
    return out


@dataclasses.dataclass(frozen=True)
class AgreementSpec:
    """The ``model_agreement`` predictor's row of the QPP table (the fields of
    :class:`normscope.retrieval.qpp.QppSpec`); it is not in ``QPP_SPECS`` because it needs a second model's run."""

    kind: str = "post"
    direction: int = +1
    formula: str = (f"|top-{AGREEMENT_K}(A) & top-{AGREEMENT_K}(B)| / |top-{AGREEMENT_K}(A) | top-{AGREEMENT_K}(B)| "
                    "(Jaccard of two models' cosine top-k document sets)")
    reference: str = "cross-model agreement (issue 40); ranking agreement as a QPP signal"
    k: int = AGREEMENT_K
    needs: tuple[str, ...] = ("agreement_run",)

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "needs": list(self.needs)}


#: The spec of ``model_agreement``.
AGREEMENT_SPEC = AgreementSpec()


def topk_agreement(run_a: Mapping[str, Mapping[str, float]], run_b: Mapping[str, Mapping[str, float]],
                   query_ids: Sequence[str], k: int = AGREEMENT_K) -> np.ndarray:
    """Jaccard overlap of the top-``k`` document sets of two runs of the same queries, float64 shape (n,).

    ``|A_k & B_k| / |A_k | B_k|`` with ``A_k`` the first ``k`` documents of ``run_a[q]`` (its inner dict in rank
    order) and ``B_k`` likewise: 1 when both models return the same ``k`` documents in any order, 0 when they
    share none. The order inside the top k is ignored (a set statistic, not rank-biased overlap).

    Parameters
    ----------
    run_a, run_b : dict of {qid: {docid: score}}
        Two runs (e.g. two encoders' cosine runs over the same corpus), inner dicts in rank order.
    query_ids : sequence of str
        Row order of the output.
    k : int
        Depth compared (>= 1).

    Returns
    -------
    ndarray of shape (n,), float64, in [0, 1]

    Raises
    ------
    InputError
        k < 1, a query missing from either run or with no result in it.
    """
    if k < 1:
        raise InputError(f"the agreement depth k must be >= 1, got {k}")
    out = np.empty(len(query_ids))
    for i, q in enumerate(query_ids):
        if q not in run_a or q not in run_b or not run_a[q] or not run_b[q]:
            raise InputError(f"query '{q}' has no results in both runs of the agreement")
        a, b = set(list(run_a[q])[:k]), set(list(run_b[q])[:k])
        out[i] = len(a & b) / len(a | b)
    return out
