"""Query performance prediction (QPP) baselines beside the norm signals, for a dense (cosine) run.

Each predictor is computed per query from the run's own scores ``s_1 >= s_2 >= ... >= s_K`` (the
cosine run in rank order), the corpus score ``s(C)``, the query text and the raw norms. The field's
predictors were defined for lexical runs whose scores are query-likelihood log-probabilities; here
the scores are cosines in [-1, 1], and each adaptation is stated with its formula:

==================  ======  ==============================================================  =========================
signal              kind    formula (top-k of the cosine run; population moments)          reference
==================  ======  ==============================================================  =========================
``query_length``    pre     number of whitespace-separated words of the query text         (the classic pre-retrieval baseline)
``query_norm``      pre     ``||q||`` of the raw query embedding                           docs/theory.md (R = ||z||)
``top1_score``      post    ``s_1``                                                        -
``margin``          post    ``s_1 - s_2``                                                  -
``margin_1_3``      post    ``s_1 - s_3``                                                  (production gate reports, issue 40)
``autocut_kept``    post    results kept by Weaviate's autocut (1 jump) on the top k = 10   Weaviate ``autocut`` (usecases/autocut)
``csls_top1``       post    ``max_{i<=K} (2 s_i - r_Q(d_i)) - r_D(q)``, k = 10, K = 100       Conneau et al., ICLR 2018 (CSLS)
``nqc``             post    ``sqrt((1/k) sum_i (s_i - mu_k)^2) / |s(C)|``, k = 100          Shtok et al., TOIS 2012
``wig``             post    ``(1/k) sum_i (s_i - s(C))``, k = 5                              Zhou & Croft, SIGIR 2007
``smv``             post    ``(1/k) sum_i s_i |ln(s_i / mu_k)| / |s(C)|``, k = 100          Tao & Wu, CIKM 2014
``sigma_k``         post    ``sqrt((1/k) sum_i (s_i - mu_k)^2)``, k = 100                   Cummins et al., SIGIR 2011
``sigma_max``       post    ``max_{2 <= m <= k} sigma_m``, k = 100                          Cummins et al., SIGIR 2011
``top_doc_norm``    post    ``||d_1||`` of the raw top-1 document embedding                docs/theory.md
``doc_norm_spread`` post    ``sqrt((1/k) sum_i (||d_i|| - mean)^2)`` over the top k = 10    (the norms' spread)
==================  ======  ==============================================================  =========================

**New baselines** (issue 40): ``margin_1_3``, ``autocut_kept`` (Weaviate's autocut ported) and ``csls_top1``
(CSLS, Conneau et al. 2018) are defined in :mod:`normscope.retrieval.qpp_baselines`, with the cross-model
agreement ``model_agreement`` that ``normscope retrieval --agreement-model M`` adds to the table.

``mu_k = (1/k) sum_{i<=k} s_i``. **Corpus score** ``s(C)``: the score of the whole corpus read as one
document. For a lexical run it is the query likelihood of the collection language model; for a cosine
run normscope takes the mean cosine of the query with every corpus document,
``s(C) = (1/N) sum_j cos(q, d_j) = <q/||q||, (1/N) sum_j d_j/||d_j||>`` (exact, one inner product with
the centroid of the unit document vectors). Adaptations, each forced by cosine scores:

- **WIG** drops its ``1/sqrt(|q|)`` factor, which corrects the growth of query-likelihood log-probabilities
  with the number of query terms; a cosine does not grow with the query's length (the length is its own
  signal, ``query_length``).
- **NQC** and **SMV** divide by ``|s(C)|`` (a log-probability is negative, so the lexical form divides by
  its magnitude; a mean cosine can have either sign).
- **SMV** takes ``ln(s_i / mu_k)``, defined for positive scores only: a query's top-k is cut to its
  documents with a positive cosine (a prefix of the ranking; all 100 on SciFact), and ``mu_k`` is their
  mean; :func:`qpp_signals` counts the queries where this cut happens.
- When a query has fewer than ``k`` results (a corpus smaller than ``k``), every top-k statistic uses the
  results it has.

**Direction**, fixed before any data are seen (:data:`QPP_DIRECTION`): +1 (a larger value predicts a
better result) for the score-based predictors, as in the QPP literature, and for ``query_length`` (a
longer query is more specific); -1 for the norms, the paper's reading of a large norm as less reliable
(``cos/(1 + alpha ||z||)`` with alpha > 0, :data:`normscope.retrieval.confidence.DIRECTION`), and for the
spread of the top documents' norms (a top-10 mixing norms reads as less coherent). Every statistic is
reported for the oriented signal ``direction * s``: an AUROC above 0.5 or a Kendall tau above 0 says the
data agree with the pre-specified direction.

**Tasks** (:func:`evaluate_qpp`): whether the top-1 document is relevant (AUROC, AURC) and the per-query
nDCG@10 (Kendall tau-b and Spearman rho, the QPP convention), each with a percentile bootstrap CI
resampling queries (one set of resamples shared by every signal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from normscope._format import noun, plural
from normscope.errors import InputError
from normscope.retrieval.calibration import aurc, auroc_bootstrap_ci
# the issue-40 baselines live in their own module; their names stay importable here
from normscope.retrieval.qpp_baselines import (AGREEMENT_SPEC, AUTOCUT_K, CSLS_DEPTH, _top, autocut, autocut_kept, csls_hubness,
                                              csls_top1, margin_1_3)

__all__ = [
    "QppSpec",
    "QPP_SPECS",
    "QPP_SIGNALS",
    "QPP_DIRECTION",
    "NORM_SIGNALS",
    "BASELINE_SIGNALS",
    "score_matrix",
    "corpus_scores",
    "nqc",
    "wig",
    "smv",
    "sigma_k",
    "sigma_max",
    "margin_1_3",
    "autocut_kept",
    "autocut",
    "csls_hubness",
    "csls_top1",
    "qpp_signals",
    "evaluate_qpp",
]

NQC_K, WIG_K, SMV_K, SIGMA_K, SPREAD_K = 100, 5, 100, 100, 10


@dataclasses.dataclass(frozen=True)
class QppSpec:
    """One predictor: ``kind`` ('pre' or 'post' retrieval), fixed ``direction``, ``formula``, ``reference``,
    ``k`` (depth used, None when not a top-k statistic) and ``needs`` (what computing it takes:
    ``scores``, ``corpus_score``, ``query_norm``, ``doc_norms``, ``query_text``, ``doc_hubness``)."""

    kind: str
    direction: int
    formula: str
    reference: str
    k: int | None
    needs: tuple[str, ...]

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "needs": list(self.needs)}


QPP_SPECS: dict[str, QppSpec] = {
    "query_length": QppSpec("pre", +1, "number of whitespace-separated words of the query", "classic pre-retrieval baseline",
                            None, ("query_text",)),
    "query_norm": QppSpec("pre", -1, "||q|| of the raw query embedding", "docs/theory.md (R = ||z||)", None, ("query_norm",)),
    "top1_score": QppSpec("post", +1, "s_1 (cosine of the top-1 document)", "-", 1, ("scores",)),
    "margin": QppSpec("post", +1, "s_1 - s_2", "-", 2, ("scores",)),
    "margin_1_3": QppSpec("post", +1, "s_1 - s_3", "production gate reports (issue 40)", 3, ("scores",)),
    "autocut_kept": QppSpec("post", -1, "results kept by Weaviate's autocut (1 jump) on the top 10 scores",
                            "Weaviate autocut", AUTOCUT_K, ("scores",)),
    "csls_top1": QppSpec("post", +1, "max_{i<=100} (2 s_i - r_Q(d_i)) - r_D(q), k = 10 (CSLS re-scored top-1)",
                         "Conneau, Lample, Ranzato, Denoyer & Jegou, ICLR 2018", CSLS_DEPTH, ("scores", "doc_hubness")),
    "nqc": QppSpec("post", +1, "sqrt((1/k) sum_i (s_i - mu_k)^2) / |s(C)|, s(C) = mean cosine to the corpus",
                   "Shtok, Kurland, Carmel, Raiber & Markovits, TOIS 2012", NQC_K, ("scores", "corpus_score")),
    "wig": QppSpec("post", +1, "(1/k) sum_i (s_i - s(C)) (no 1/sqrt(|q|): cosines do not grow with query length)",
                   "Zhou & Croft, SIGIR 2007", WIG_K, ("scores", "corpus_score")),
    "smv": QppSpec("post", +1, "(1/k) sum_i s_i |ln(s_i / mu_k)| / |s(C)| over the top-k with s_i > 0",
                   "Tao & Wu, CIKM 2014", SMV_K, ("scores", "corpus_score")),
    "sigma_k": QppSpec("post", +1, "sqrt((1/k) sum_i (s_i - mu_k)^2)", "Cummins, Jose & O'Riordan, SIGIR 2011", SIGMA_K,
                       ("scores",)),
    "sigma_max": QppSpec("post", +1, "max over m = 2..k of sigma_m", "Cummins, Jose & O'Riordan, SIGIR 2011", SIGMA_K,
                         ("scores",)),
    "top_doc_norm": QppSpec("post", -1, "||d_1|| of the raw top-1 document embedding", "docs/theory.md", 1, ("doc_norms",)),
    "doc_norm_spread": QppSpec("post", -1, "population standard deviation of ||d_i|| over the top k", "docs/theory.md",
                               SPREAD_K, ("doc_norms",)),
}
#: Predictors outside :data:`QPP_SPECS` that :func:`evaluate_qpp` knows: they need more than one run
#: (``model_agreement``: a second model's, :func:`normscope.retrieval.qpp_baselines.topk_agreement`).
EXTRA_SPECS = {"model_agreement": AGREEMENT_SPEC}
#: Every predictor, in table order.
QPP_SIGNALS: tuple[str, ...] = tuple(QPP_SPECS)
#: Pre-specified direction of each predictor (+1: a larger value predicts a better result).
QPP_DIRECTION: dict[str, int] = {k: v.direction for k, v in QPP_SPECS.items()}
#: The norm signals, whose incremental value is the question (docs/retrieval.md).
NORM_SIGNALS: tuple[str, ...] = ("query_norm", "top_doc_norm", "doc_norm_spread")
#: The free baselines: every predictor that is not a norm.
BASELINE_SIGNALS: tuple[str, ...] = tuple(s for s in QPP_SIGNALS if s not in NORM_SIGNALS)


def score_matrix(run: Mapping[str, Mapping[str, float]], query_ids: Sequence[str], depth: int | None = None):
    """The run's scores as a float64 matrix in rank order, NaN-padded.

    Parameters
    ----------
    run : dict of {qid: {docid: score}}
        Inner dicts in rank order (as :mod:`normscope.retrieval.search` writes them).
    query_ids : sequence of str
        Row order.
    depth : int, optional
        Columns kept (default: the longest result list).

    Returns
    -------
    scores : ndarray of shape (n_queries, depth), float64
        ``scores[i, j]`` = score of the rank-(j+1) document of query i, NaN beyond its list.
    docs : list of list of str
        The ranked document ids of each query, cut at ``depth``.

    Raises
    ------
    InputError
        A query without results, or scores that are not in descending order.
    """
    lists = []
    for q in query_ids:
        res = list((run.get(q) or {}).items())
        if not res:
            raise InputError(f"query '{q}' has no results")
        lists.append(res)
    K = depth or max(len(r) for r in lists)
    S = np.full((len(lists), K), np.nan)
    docs = []
    for i, res in enumerate(lists):
        res = res[:K]
        S[i, : len(res)] = [float(s) for _, s in res]
        docs.append([str(d) for d, _ in res])
    d = np.diff(S, axis=1)
    if (d[np.isfinite(d)] > 0).any():
        raise InputError("run scores must be in descending rank order")
    return S, docs


def corpus_scores(query_vectors, doc_vectors) -> np.ndarray:
    """``s(C)`` of each query: its mean cosine with every corpus document (float64).

    Parameters
    ----------
    query_vectors : array-like of shape (n, d)
        Raw query embeddings (any norm > 0).
    doc_vectors : array-like of shape (N, d)
        Raw document embeddings of the whole corpus (any norm > 0).

    Returns
    -------
    ndarray of shape (n,)
        ``<q/||q||, (1/N) sum_j d_j/||d_j||>``, exactly the mean of the N cosines.

    Raises
    ------
    InputError
        A zero vector, or dimensions that differ.
    """
    Q = np.asarray(query_vectors, dtype=np.float64)
    D = np.asarray(doc_vectors, dtype=np.float64)
    if Q.ndim != 2 or D.ndim != 2 or Q.shape[1] != D.shape[1]:
        raise InputError(f"query and document vectors must be (n, d) with equal d, got {Q.shape} and {D.shape}")
    qn, dn = np.linalg.norm(Q, axis=1), np.linalg.norm(D, axis=1)
    if (qn == 0).any() or (dn == 0).any():
        raise InputError("a zero vector has no cosine")
    centroid = (D / dn[:, None]).mean(axis=0)
    return (Q / qn[:, None]) @ centroid


def _sd(T: np.ndarray) -> np.ndarray:
    """Population standard deviation of each row over its finite entries."""
    n = np.isfinite(T).sum(axis=1)
    mu = np.nansum(T, axis=1) / n
    return np.sqrt(np.nansum((T - mu[:, None]) ** 2, axis=1) / n)


def _corpus(cs, n: int) -> np.ndarray:
    c = np.asarray(cs, dtype=np.float64).ravel()
    if c.shape != (n,):
        raise InputError(f"corpus scores must have one value per query ({n}), got {c.size}")
    return c


def sigma_k(S, k: int = SIGMA_K) -> np.ndarray:
    """``sigma_k``: population standard deviation of the top-k scores (Cummins et al., SIGIR 2011).

    Parameters
    ----------
    S : array-like of shape (n, K)
        Scores in rank order (:func:`score_matrix`; NaN beyond a query's list).
    k : int

    Returns
    -------
    ndarray of shape (n,)
    """
    return _sd(_top(S, k))


def sigma_max(S, k: int = SIGMA_K) -> np.ndarray:
    """``sigma_max``: the largest ``sigma_m`` over m = 2..k (Cummins et al., SIGIR 2011).

    Returns
    -------
    ndarray of shape (n,)
        0 for a query with one result.
    """
    T = _top(S, k)
    ok = np.isfinite(T)
    x = np.where(ok, T, 0.0)
    m = np.cumsum(ok, axis=1)
    s1, s2 = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(m >= 2, s2 / m - (s1 / m) ** 2, np.nan)
    var = np.where(ok, np.maximum(var, 0.0), np.nan)
    out = np.sqrt(np.nanmax(np.where(np.isfinite(var), var, -1.0), axis=1))
    return np.where(np.isnan(out), 0.0, out)


def nqc(S, corpus_score, k: int = NQC_K) -> np.ndarray:
    """Normalised Query Commitment (Shtok et al., TOIS 2012): ``sigma_k / |s(C)|``.

    Parameters
    ----------
    S : array-like of shape (n, K)
    corpus_score : array-like of shape (n,)
        ``s(C)`` per query (:func:`corpus_scores`).
    k : int

    Returns
    -------
    ndarray of shape (n,)
        ``inf`` where ``s(C) = 0``.
    """
    sd = sigma_k(S, k)
    with np.errstate(divide="ignore"):
        return sd / np.abs(_corpus(corpus_score, len(sd)))


def wig(S, corpus_score, k: int = WIG_K) -> np.ndarray:
    """Weighted Information Gain (Zhou & Croft, SIGIR 2007) for cosines: ``(1/k) sum_i (s_i - s(C))``.

    The lexical form's ``1/sqrt(|q|)`` is dropped (see the module docstring).

    Returns
    -------
    ndarray of shape (n,)
    """
    T = _top(S, k)
    return np.nanmean(T, axis=1) - _corpus(corpus_score, T.shape[0])


def smv(S, corpus_score, k: int = SMV_K) -> tuple[np.ndarray, np.ndarray]:
    """Score Magnitude and Variance (Tao & Wu, CIKM 2014): ``(1/k) sum_i s_i |ln(s_i / mu_k)| / |s(C)|``.

    Over the top-k documents with a positive score (a prefix of the ranking).

    Returns
    -------
    values : ndarray of shape (n,)
        NaN for a query none of whose top-k scores is positive.
    n_used : ndarray of shape (n,), int
        Scores used per query (k unless the cut applied).
    """
    T = _top(S, k)
    T = np.where(np.isfinite(T) & (T > 0), T, np.nan)
    n = np.isfinite(T).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.nansum(T, axis=1) / n
        v = np.nansum(T * np.abs(np.log(T / mu[:, None])), axis=1) / n
        v = v / np.abs(_corpus(corpus_score, T.shape[0]))
    return np.where(n > 0, v, np.nan), n


def qpp_signals(
    run: Mapping[str, Mapping[str, float]],
    *,
    query_ids: Sequence[str],
    query_texts: Sequence[str] | None = None,
    query_norms=None,
    doc_ids: Sequence[str] | None = None,
    doc_norms=None,
    corpus_score=None,
    doc_hubness=None,
    signals: Sequence[str] = QPP_SIGNALS,
):
    """Every requested predictor per query, from a ranked run.

    Parameters
    ----------
    run : dict of {qid: {docid: score}}
        The cosine run, inner dicts in rank order (depth >= 2; the top-k predictors use up to their k).
    query_ids : sequence of str
        Row order of the output.
    query_texts : sequence of str, optional
        Aligned with ``query_ids``; needed for ``query_length``.
    query_norms : array-like of shape (n,), optional
        Raw query norms; needed for ``query_norm``.
    doc_ids : sequence of str, optional
    doc_norms : array-like of shape (N,), optional
        Raw document norms aligned with ``doc_ids``; needed for ``top_doc_norm`` and ``doc_norm_spread``.
    corpus_score : array-like of shape (n,), optional
        ``s(C)`` per query (:func:`corpus_scores`); needed for ``nqc``, ``wig``, ``smv``.
    doc_hubness : array-like of shape (N,), optional
        ``r_Q(d)`` aligned with ``doc_ids`` (:func:`csls_hubness`); needed for ``csls_top1``.
    signals : sequence of str
        Subset of :data:`QPP_SIGNALS`.

    Returns
    -------
    pandas.DataFrame
        ``query_id`` and one float64 column per signal, in ``query_ids`` order. ``attrs["smv_cut"]``: the
        number of queries whose SMV used fewer than k scores (non-positive cosines in the top-k).

    Raises
    ------
    InputError
        Unknown signal, a signal whose input is missing (named), a query with fewer than 2 results, a
        document of the run without a norm, lengths that differ.
    """
    import pandas as pd

    _check_signals(signals, query_texts=query_texts, query_norms=query_norms, doc_ids=doc_ids, doc_norms=doc_norms,
                   corpus_score=corpus_score, doc_hubness=doc_hubness)
    S, docs = score_matrix(run, query_ids)
    short = [q for q, r in zip(query_ids, docs) if len(r) < 2]
    if short:
        raise InputError(f"query '{short[0]}' has {plural(len(docs[query_ids.index(short[0])]), 'result')}; the margin needs 2")
    cols: dict[str, np.ndarray] = {}
    attrs = {"smv_cut": 0}
    for s in signals:
        if s == "csls_top1":
            cols[s], cut = csls_top1(S, docs, doc_ids, doc_hubness), None
        else:
            cols[s], cut = _signal_column(s, S, docs, n=len(query_ids), query_texts=query_texts,
                                          query_norms=query_norms, doc_ids=doc_ids, doc_norms=doc_norms,
                                          corpus_score=corpus_score)
        if cut is not None:
            attrs["smv_cut"] = cut
    df = pd.DataFrame({"query_id": list(query_ids), **cols})
    df.attrs.update(attrs)
    return df


def _check_signals(signals: Sequence[str], **inputs) -> None:
    """:class:`InputError` for an unknown signal or one whose input (named) was not given."""
    unknown = [s for s in signals if s not in QPP_SPECS]
    if unknown:
        raise InputError(f"unknown {noun(len(unknown), 'signal')} {', '.join(unknown)} (choose from {', '.join(QPP_SIGNALS)})")
    given = {"scores": True, "query_text": inputs["query_texts"] is not None,
             "query_norm": inputs["query_norms"] is not None,
             "doc_norms": inputs["doc_norms"] is not None and inputs["doc_ids"] is not None,
             "corpus_score": inputs["corpus_score"] is not None,
             "doc_hubness": inputs["doc_hubness"] is not None and inputs["doc_ids"] is not None}
    for s in signals:
        missing = [n for n in QPP_SPECS[s].needs if not given[n]]
        if missing:
            raise InputError(f"signal '{s}' needs {' and '.join(missing).replace('_', ' ')}, which was not given")


def _aligned(x, what: str, n: int) -> np.ndarray:
    """``x`` as float64 with one value per query, else :class:`InputError`."""
    a = np.asarray(x, dtype=np.float64).ravel()
    if a.shape != (n,):
        raise InputError(f"{what} must have one value per query ({n}), got {a.size}")
    return a


def _signal_column(s: str, S: np.ndarray, docs: list, *, n: int, query_texts, query_norms, doc_ids, doc_norms,
                   corpus_score) -> tuple[np.ndarray, int | None]:
    """One predictor's values per query (float64) and, for ``smv``, the number of queries whose SMV used fewer
    than k scores (else None)."""
    if s == "query_length":
        if len(query_texts) != n:
            raise InputError(f"query texts must have one value per query ({n}), got {len(query_texts)}")
        return np.array([len(str(t).split()) for t in query_texts], dtype=np.float64), None
    if s == "query_norm":
        return _aligned(query_norms, "query norms", n), None
    if s == "top1_score":
        return S[:, 0].copy(), None
    if s == "margin":
        return S[:, 0] - S[:, 1], None
    if s == "margin_1_3":
        return margin_1_3(S), None
    if s == "autocut_kept":
        return autocut_kept(S), None
    if s == "nqc":
        return nqc(S, _aligned(corpus_score, "corpus scores", n)), None
    if s == "wig":
        return wig(S, _aligned(corpus_score, "corpus scores", n)), None
    if s == "smv":
        v, used = smv(S, _aligned(corpus_score, "corpus scores", n))
        return v, int((used < np.minimum(SMV_K, np.isfinite(S).sum(axis=1))).sum())
    if s == "sigma_k":
        return sigma_k(S), None
    if s == "sigma_max":
        return sigma_max(S), None
    return _doc_norm_signal(s, docs, doc_ids, doc_norms), None


def _doc_norm_signal(s: str, docs: list, doc_ids, doc_norms) -> np.ndarray:
    """``top_doc_norm`` (the top document's norm) or ``doc_norm_spread`` (SD of the top-:data:`SPREAD_K` norms)."""
    if len(doc_ids) != len(np.asarray(doc_norms).ravel()):
        raise InputError("document ids and norms differ in length")
    dn = dict(zip(map(str, doc_ids), np.asarray(doc_norms, dtype=np.float64).ravel()))
    absent = next((d for r in docs for d in r[:SPREAD_K] if d not in dn), None)
    if absent is not None:
        raise InputError(f"document '{absent}' of the run has no norm")
    if s == "top_doc_norm":
        return np.array([dn[r[0]] for r in docs])
    return np.array([np.std([dn[d] for d in r[:SPREAD_K]]) for r in docs])


def _kendall_rows(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row of X with the same row of Y."""
    from scipy.stats import kendalltau

    return np.array([kendalltau(x, y).statistic for x, y in zip(X, Y)])


def evaluate_qpp(
    signals,
    *,
    top1_relevant=None,
    ndcg=None,
    names: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Each predictor on the two tasks, with bootstrap CIs over queries.

    Parameters
    ----------
    signals : pandas.DataFrame
        :func:`qpp_signals` output (one row per query).
    top1_relevant : array-like of shape (n,), 0/1, optional
        Whether each query's top-1 document is relevant.
    ndcg : array-like of shape (n,), optional
        Per-query nDCG@10 of the same run.
    names : sequence of str, optional
        Columns to evaluate (default: every :data:`QPP_SIGNALS` column present; ``model_agreement`` of
        :data:`EXTRA_SPECS` only when named).
    n_boot : int
        Bootstrap resamples (queries drawn with replacement; one index set shared by every signal).
    seed : int
    level : float

    Returns
    -------
    dict of {signal: dict}
        ``kind``, ``direction``, ``formula``, ``reference``, ``k``; for the top-1 task ``auroc`` (of
        ``direction * s``), ``auroc_ci``, ``aurc``; for nDCG@10 ``kendall_tau`` (tau-b, scipy), ``kendall_tau_ci``,
        ``spearman_rho``, ``spearman_rho_ci``; ``status`` "ok" or "not computed" with ``reason`` (a signal with
        non-finite values, e.g. SMV without a positive score, or NQC with s(C) = 0).

    Raises
    ------
    InputError
        Neither task given, lengths that differ.
    """
    from scipy.stats import kendalltau, rankdata, spearmanr
    from sklearn.metrics import roc_auc_score

    if top1_relevant is None and ndcg is None:
        raise InputError("give top1_relevant, ndcg or both")
    n = len(signals)
    y = None if top1_relevant is None else np.asarray(top1_relevant).ravel()
    g = None if ndcg is None else np.asarray(ndcg, dtype=np.float64).ravel()
    for what, v in (("top1_relevant", y), ("ndcg", g)):
        if v is not None and v.shape != (n,):
            raise InputError(f"{what} must have one value per query ({n}), got {v.size}")
    names = [s for s in (names or QPP_SIGNALS) if s in signals.columns and (s in QPP_SPECS or s in EXTRA_SPECS)]
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    a = (1 - level) / 2
    two = y is not None and len(np.unique(y)) == 2
    out: dict[str, dict] = {}
    for s in names:
        spec = QPP_SPECS.get(s) or EXTRA_SPECS[s]
        x = spec.direction * signals[s].to_numpy(np.float64)
        entry: dict = {"kind": spec.kind, "direction": spec.direction, "formula": spec.formula,
                       "reference": spec.reference, "k": spec.k}
        if not np.isfinite(x).all():
            bad = int((~np.isfinite(x)).sum())
            out[s] = {**entry, "status": "not computed", "reason": f"{bad} of {n} queries have no finite value"}
            continue
        entry.update(status="ok", reason=None)
        if y is not None:
            entry["auroc"] = float(roc_auc_score(y, x)) if two else None
            entry["auroc_ci"] = auroc_bootstrap_ci(x, y, n_boot=n_boot, seed=seed, level=level) if two else None
            entry["aurc"] = aurc(x, y)
        if g is not None:
            const = np.ptp(x) == 0 or np.ptp(g) == 0
            entry["kendall_tau"] = None if const else float(kendalltau(x, g).statistic)
            entry["spearman_rho"] = None if const else float(spearmanr(x, g).statistic)
            if const or n < 3:
                entry["kendall_tau_ci"] = entry["spearman_rho_ci"] = None
            else:
                taus = _kendall_rows(x[idx], g[idx])
                rx, rg = rankdata(x[idx], axis=1), rankdata(g[idx], axis=1)
                rx -= rx.mean(axis=1, keepdims=True)
                rg -= rg.mean(axis=1, keepdims=True)
                with np.errstate(invalid="ignore", divide="ignore"):
                    rhos = (rx * rg).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (rg * rg).sum(axis=1))
                taus, rhos = taus[np.isfinite(taus)], rhos[np.isfinite(rhos)]
                entry["kendall_tau_ci"] = ([float(np.quantile(taus, a)), float(np.quantile(taus, 1 - a))]
                                           if len(taus) >= 0.9 * n_boot else None)
                entry["spearman_rho_ci"] = ([float(np.quantile(rhos, a)), float(np.quantile(rhos, 1 - a))]
                                            if len(rhos) >= 0.9 * n_boot else None)
        out[s] = entry
    return out
