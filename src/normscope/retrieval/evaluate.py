"""IR metrics (trec_eval through pytrec_eval) of the run's own order, paired tests and CIs, and fitting alpha/beta.

Metrics (computed by ``pytrec_eval``, Van Gysel & de Rijke, SIGIR 2018: trec_eval itself, as BEIR and
MTEB evaluate; checked in the tests against a hand-written loop of trec_eval's definitions):

- ``ndcg@10``: trec_eval's ``ndcg_cut_10``, ``DCG@10 / IDCG@10`` with ``DCG@k = sum_{i<=k} g_i /
  log2(i + 1)`` (Järvelin & Kekäläinen 2002, linear gain). With ``relevance="graded"`` (default, as
  BEIR and MTEB) ``g_i`` is the judgement score; with ``"binary"`` it is 1 for a score >= 1; scores
  <= 0 give no gain either way;
- ``mrr@10``: ``1 / rank`` of the first document with score >= 1 within the top 10, else 0
  (trec_eval's ``recip_rank`` cut at 10, as MTEB's MRR@10);
- ``recall@100``: trec_eval's ``recall_100``: documents with score >= 1 in the top 100 / all of them
  for the query (documents judged relevant but absent from the corpus count in the denominator).

**Order.** trec_eval ranks each query's documents by score, then by document id, both descending:
the one tie rule of :data:`normscope.retrieval.search.TIE_RULE`, which normscope applies when it
makes a run. So the metrics are those of exactly the order the runs (and the ``-o`` table) hold.

Significance: every scorer is compared with cosine on the same queries by
(i) the two-sided paired Student t-test (``scipy.stats.ttest_rel``, the test ``ranx.compare(stat_test=
"student")`` runs; 1.0 when the per-query scores are identical), (ii) a two-sided paired
randomisation (sign-flip) test of the mean difference, Fisher's randomisation test as in Smucker et
al., CIKM 2007, with ``numpy.random.default_rng(seed)`` and ``p = (1 + #{|mean*| >= |mean|}) /
(1 + n_permutations)`` (Phipson & Smyth 2010), exact enumeration when ``2**n_queries <=
n_permutations``, and (iii) a paired percentile bootstrap CI over queries of the mean difference and
of the relative difference ``mean(x) / mean(y) - 1`` (:func:`paired_bootstrap_ci`).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError
from normscope.scoring import NEUTRAL_PARAM, check_scorer, default_grid, validate_param
from normscope.retrieval.search import FoldedIndex

__all__ = [
    "METRICS",
    "RELEVANCE",
    "evaluate_run",
    "per_query_scores",
    "relevance_qrels",
    "paired_randomization_test",
    "paired_bootstrap_ci",
    "compare_to_baseline",
    "default_grid",
    "fit_parameter",
]

METRICS: tuple[str, ...] = ("ndcg@10", "mrr@10", "recall@100")
#: Relevance levels: ``graded`` (gains are the judgement scores, BEIR / MTEB default) or ``binary``.
RELEVANCE: tuple[str, ...] = ("graded", "binary")
_TREC = {"ndcg": "ndcg_cut_{k}", "recall": "recall_{k}", "precision": "P_{k}", "map": "map_cut_{k}", "mrr": "recip_rank"}


def relevance_qrels(qrels: Mapping[str, Mapping[str, int]], relevance: str = "graded") -> dict[str, dict[str, int]]:
    """Judgements under a relevance level: ``graded`` keeps the scores, ``binary`` maps score >= 1 to 1, else 0.

    Raises
    ------
    InputError
        Unknown ``relevance``.
    """
    if relevance not in RELEVANCE:
        raise InputError(f"unknown relevance {relevance!r} (choose from {', '.join(RELEVANCE)})")
    if relevance == "graded":
        return {str(q): {str(d): int(v) for d, v in docs.items()} for q, docs in qrels.items()}
    return {str(q): {str(d): int(int(v) >= 1) for d, v in docs.items()} for q, docs in qrels.items()}


def _trec_measure(metric: str) -> tuple[str, str, int]:
    m = re.fullmatch(r"(ndcg|recall|precision|map|mrr)@([1-9][0-9]*)", metric)
    if m is None:
        raise InputError(f"unknown metric '{metric}' (use ndcg@K, mrr@K, recall@K, precision@K or map@K)")
    fam, k = m.group(1), int(m.group(2))
    return fam, _TREC[fam].format(k=k), k


def per_query_scores(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
    *,
    relevance: str = "graded",
) -> dict[str, np.ndarray]:
    """Per-query metric values by trec_eval (pytrec_eval) in :data:`~normscope.retrieval.search.TIE_RULE` order.

    Parameters
    ----------
    qrels : dict of {qid: {docid: int}}
        Judgements; every query here is evaluated (a query missing from ``run`` scores 0).
    run : dict of {qid: {docid: score}}
        Queries of ``run`` absent from ``qrels`` are ignored. Its documents are ranked by score, then
        id, descending (trec_eval's order), whatever the dict order.
    metrics : sequence of str
        ``ndcg@K``, ``mrr@K``, ``recall@K``, ``precision@K``, ``map@K``.
    relevance : {'graded', 'binary'}, keyword-only
        See :func:`relevance_qrels`.

    Returns
    -------
    dict of {metric: ndarray of shape (n_queries,), float64}
        Aligned with ``list(qrels)``.

    Raises
    ------
    InputError
        Empty qrels; unknown metric or relevance.
    """
    import pytrec_eval

    if not qrels:
        raise InputError("no judged queries to evaluate")
    qrels = relevance_qrels(qrels, relevance)
    spec = {m: _trec_measure(m) for m in metrics}
    present = {q: {str(d): float(s) for d, s in run[q].items()} for q in qrels if run.get(q)}
    got = pytrec_eval.RelevanceEvaluator(qrels, {t for _, t, _ in spec.values()}).evaluate(present) if present else {}
    out = {}
    for m, (fam, trec, k) in spec.items():
        vals = np.array([got.get(q, {}).get(trec, 0.0) for q in qrels], dtype=np.float64)
        if fam == "mrr":  # recip_rank of the whole run, kept only when the first relevant rank is <= k
            vals = np.where(vals >= 1.0 / k - 1e-12, vals, 0.0)
        out[m] = vals
    return out


def evaluate_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
    *,
    relevance: str = "graded",
) -> dict[str, float]:
    """Mean of each metric over the queries of ``qrels`` (see :func:`per_query_scores`)."""
    per = per_query_scores(qrels, run, metrics, relevance=relevance)
    return {m: float(v.mean()) for m, v in per.items()}


def paired_randomization_test(x, y, *, n_permutations: int = 10000, seed: int = 0) -> float:
    """Two-sided paired randomisation (sign-flip) test of ``mean(x - y) = 0``.

    Under the null each per-query difference is equally likely to have either sign
    (Fisher's randomisation test for IR, Smucker et al., CIKM 2007).

    Parameters
    ----------
    x, y : array-like of shape (n,)
        Paired per-query scores.
    n_permutations : int, keyword-only
        Random sign vectors drawn; when ``2**n <= n_permutations`` all sign vectors are
        enumerated and the p-value is exact.
    seed : int, keyword-only
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    float
        Exact: fraction of sign vectors with ``|mean| >= |observed mean|`` (identity
        included). Monte Carlo: ``(1 + count) / (1 + n_permutations)``. 1.0 when all
        differences are 0.

    Raises
    ------
    InputError
        Shapes differ or are empty.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise InputError(f"paired test needs two equal-length 1-D arrays, got shapes {x.shape} and {y.shape}")
    diff = x - y
    n = diff.size
    obs = abs(diff.mean())
    if not np.any(diff):
        return 1.0
    tol = 1e-12 * max(1.0, np.abs(diff).max())
    if n <= 20 and 2**n <= n_permutations:
        signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1)
        means = np.abs(signs @ diff) / n
        return float(np.mean(means >= obs - tol))
    rng = np.random.default_rng(seed)
    count = 0
    chunk = 2000
    done = 0
    while done < n_permutations:
        m = min(chunk, n_permutations - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8) * 2 - 1
        count += int(np.sum(np.abs(signs @ diff) / n >= obs - tol))
        done += m
    return float((1 + count) / (1 + n_permutations))


def paired_bootstrap_ci(x, y, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Percentile bootstrap CIs of ``mean(x - y)`` and of ``mean(x) / mean(y) - 1``, resampling pairs (queries).

    Parameters
    ----------
    x, y : array-like of shape (n,)
        Paired per-query scores (``x`` the scorer, ``y`` the baseline).
    n_boot : int, keyword-only
        Resamples (each draws ``n`` query indices with replacement, ``numpy.random.default_rng(seed)``).
    seed : int, keyword-only
    level : float, keyword-only

    Returns
    -------
    dict
        ``mean_diff``, ``mean_diff_ci`` ([lo, hi]), ``relative`` and ``relative_ci`` (None when the
        baseline mean is 0), ``n``, ``n_boot``, ``resampled`` ("queries").

    Raises
    ------
    InputError
        Shapes differ or are empty; ``n_boot < 10``.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or x.size == 0:
        raise InputError(f"paired CI needs two equal-length 1-D arrays, got shapes {x.shape} and {y.shape}")
    if n_boot < 10:
        raise InputError(f"n_boot must be >= 10, got {n_boot}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    mx, my = x[idx].mean(axis=1), y[idx].mean(axis=1)
    a = (1 - level) / 2
    diff = mx - my
    out = {"mean_diff": float((x - y).mean()), "mean_diff_ci": [float(np.quantile(diff, a)), float(np.quantile(diff, 1 - a))],
           "relative": None, "relative_ci": None, "n": int(x.size), "n_boot": int(n_boot), "level": level,
           "resampled": "queries"}
    if y.mean() > 0:
        ok = my > 0
        rel = mx[ok] / my[ok] - 1
        out["relative"] = float(x.mean() / y.mean() - 1)
        if rel.size >= 0.9 * n_boot:
            out["relative_ci"] = [float(np.quantile(rel, a)), float(np.quantile(rel, 1 - a))]
    return out


def compare_to_baseline(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    baseline: str = "cosine",
    metrics: Sequence[str] = METRICS,
    n_permutations: int = 10000,
    seed: int = 0,
    relevance: str = "graded",
    n_boot: int = 2000,
    per_query: Mapping[str, Mapping[str, np.ndarray]] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """p-values and paired CIs of every run against ``baseline``, per metric.

    Parameters
    ----------
    qrels : dict of {qid: {docid: int}}
    runs : dict of {name: run}
        Must contain ``baseline``.
    baseline : str, keyword-only
    metrics : sequence of str, keyword-only
    n_permutations, seed : int, keyword-only
        Of the randomisation test (and the bootstrap's seed).
    relevance : {'graded', 'binary'}, keyword-only
    n_boot : int, keyword-only
        Resamples of :func:`paired_bootstrap_ci`.
    per_query : dict of {name: {metric: ndarray}}, keyword-only, optional
        Per-query scores already computed by :func:`per_query_scores` (aligned with ``qrels``).

    Returns
    -------
    dict of {name: {metric: dict}}
        For every run except the baseline: ``p_t_test`` (two-sided paired t-test,
        ``scipy.stats.ttest_rel``), ``p_randomization``, ``mean_diff`` (run
        minus baseline) and the :func:`paired_bootstrap_ci` fields ``mean_diff_ci``, ``relative``,
        ``relative_ci``.

    Raises
    ------
    InputError
        ``baseline`` missing from ``runs``.
    """
    if baseline not in runs:
        raise InputError(f"baseline run '{baseline}' missing (runs: {', '.join(runs)})")
    others = [n for n in runs if n != baseline]
    if not others:
        return {}
    from scipy.stats import ttest_rel

    per = dict(per_query or {})
    for n, r in runs.items():
        if n not in per:
            per[n] = per_query_scores(qrels, r, metrics, relevance=relevance)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for n in others:
        out[n] = {}
        for m in metrics:
            diff = per[n][m] - per[baseline][m]
            with warnings.catch_warnings():  # scipy's "precision loss" note on nearly equal pairs is not the user's concern
                warnings.simplefilter("ignore", RuntimeWarning)
                p_t = float(ttest_rel(per[n][m], per[baseline][m]).pvalue) if np.any(diff) else 1.0
            ci = paired_bootstrap_ci(per[n][m], per[baseline][m], n_boot=n_boot, seed=seed)
            out[n][m] = {
                "p_t_test": float(p_t) if p_t == p_t else float("nan"),
                "p_randomization": paired_randomization_test(per[n][m], per[baseline][m], n_permutations=n_permutations, seed=seed),
                "mean_diff": float(diff.mean()),
                "mean_diff_ci": ci["mean_diff_ci"],
                "relative": ci["relative"],
                "relative_ci": ci["relative_ci"],
            }
    return out


def fit_parameter(
    scorer: str,
    Q,
    D,
    *,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    grid: Sequence[float] | None = None,
    metric: str = "ndcg@10",
    k: int = 10,
    relevance: str = "graded",
    ignore_identical_ids: bool = False,
) -> tuple[float | None, list[dict]]:
    """Grid-search ``scorer``'s parameter maximising mean ``metric`` on the given (fitting) queries.

    Call it with the queries of a train or dev split only, never the test queries.

    Parameters
    ----------
    scorer : str
    Q : array-like of shape (n_queries, d)
        Raw vectors of the fitting queries.
    D : array-like of shape (n_docs, d)
    query_ids, doc_ids : sequence of str
    qrels : dict of {qid: {docid: int}}
        Judgements of the fitting queries.
    grid : sequence of float, optional
        Default :func:`default_grid`. Values that are invalid for these documents
        (e.g. ``alpha <= -1/max||d||``) are skipped.
    metric : str
        Metric to maximise (see :func:`per_query_scores`).
    k : int
        Depth of the search while fitting (10 suffices for ``@10`` metrics).
    relevance : {'graded', 'binary'}
    ignore_identical_ids : bool
        As in :meth:`FoldedIndex.search`.

    Returns
    -------
    best : float or None
        Best parameter; ties go to the value closest to the neutral value 0.
    curve : list of dict
        ``{"param": value, metric: mean}`` for every grid value tried.

    Raises
    ------
    InputError
        Every grid value invalid.
    """
    check_scorer(scorer)
    D = np.asarray(D)
    norms = np.linalg.norm(D.astype(np.float64), axis=1)
    grid = default_grid(scorer, norms) if grid is None else list(grid)
    curve = []
    for p in grid:
        if p is not None:
            try:
                validate_param(scorer, p, norms)
            except InputError:
                continue
        run = FoldedIndex(D, doc_ids, scorer, p).search(Q, query_ids, k=k, ignore_identical_ids=ignore_identical_ids)
        value = evaluate_run(qrels, run, [metric], relevance=relevance)[metric]
        curve.append({"param": None if p is None else float(p), metric: value})
    if not curve:
        raise InputError(f"{scorer}: no valid parameter in the grid {grid}")
    best_val = max(c[metric] for c in curve)
    neutral = NEUTRAL_PARAM[scorer] or 0.0
    best = min(
        (c for c in curve if c[metric] >= best_val - 1e-12),
        key=lambda c: 0.0 if c["param"] is None else abs(c["param"] - neutral),
    )
    return best["param"], curve
