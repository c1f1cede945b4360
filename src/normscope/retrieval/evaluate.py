"""IR metrics (ranx), paired significance tests, and fitting alpha/beta on a fitting split.

Metrics (binary relevance: a judgement score >= 1 is relevant; computed by ``ranx``,
Bassani, ECIR 2022, and checked against ``pytrec_eval`` in the tests):

- ``ndcg@10``: ``DCG@10 / IDCG@10`` with ``DCG@k = sum_{i<=k} rel_i / log2(i + 1)``
  (Järvelin & Kekäläinen 2002, linear gain, as trec_eval's ``ndcg_cut``);
- ``mrr@10``: ``1 / rank`` of the first relevant document within the top 10, else 0;
- ``recall@100``: relevant documents in the top 100 / all relevant documents of the query
  (documents judged relevant but absent from the corpus count in the denominator).

Significance: every scorer is compared with cosine on the same queries by
(i) the two-sided paired Student t-test that ``ranx.compare(stat_test="student")`` runs
(``ranx.statistical_tests.paired_student_t_test``, i.e. ``scipy.stats.ttest_rel``; deterministic;
1.0 when the per-query scores are identical), and (ii) a two-sided paired randomisation (sign-flip) test of the mean
difference, Fisher's randomisation test as in Smucker et al., CIKM 2007, implemented
here with ``numpy.random.default_rng(seed)`` and ``p = (1 + #{|mean*| >= |mean|}) /
(1 + n_permutations)`` (Phipson & Smyth 2010), exact enumeration when
``2**n_queries <= n_permutations``. ranx's own Fisher test is not used: its numba
``prange`` workers draw from unseeded per-thread generators, so its p-values are not
reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError
from normscope.retrieval.scoring import NEUTRAL_PARAM, PARAM_NAMES, check_scorer, validate_param
from normscope.retrieval.search import FoldedIndex

__all__ = [
    "METRICS",
    "evaluate_run",
    "per_query_scores",
    "paired_randomization_test",
    "compare_to_baseline",
    "default_grid",
    "fit_parameter",
]

METRICS: tuple[str, ...] = ("ndcg@10", "mrr@10", "recall@100")


def _ranx_pair(qrels: Mapping, run: Mapping, name: str = "run"):
    import ranx

    q = ranx.Qrels({str(k): {str(d): int(v) for d, v in docs.items()} for k, docs in qrels.items()})
    run_d = {}
    for k in qrels:
        docs = run.get(k) or {}
        run_d[str(k)] = {str(d): float(s) for d, s in docs.items()}
    # ranx cannot hold a query with an empty result list; such a query scores 0 on every metric
    empty = [k for k, v in run_d.items() if not v]
    run_d = {k: v for k, v in run_d.items() if v}
    r = ranx.Run(run_d, name=name)
    return q, r, empty


def per_query_scores(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
) -> dict[str, np.ndarray]:
    """Per-query metric values with ranx, aligned with ``list(qrels)``.

    Parameters
    ----------
    qrels : dict of {qid: {docid: int}}
        Judgements; every query here is evaluated (a query missing from ``run`` scores 0).
    run : dict of {qid: {docid: score}}
        Queries of ``run`` absent from ``qrels`` are ignored.
    metrics : sequence of str
        ranx metric names (``ndcg@10``, ``mrr@10``, ``recall@100`` ...).

    Returns
    -------
    dict of {metric: ndarray of shape (n_queries,), float64}

    Raises
    ------
    InputError
        Empty qrels.
    """
    import ranx

    if not qrels:
        raise InputError("no judged queries to evaluate")
    present = {k: v for k, v in qrels.items() if run.get(k)}
    out = {m: np.zeros(len(qrels)) for m in metrics}
    if present:  # queries without results score 0 on every metric
        q, r, _ = _ranx_pair(present, run)
        ranx.evaluate(q, r, list(metrics))
        for m in metrics:
            sc = r.scores[m]
            out[m] = np.array([float(sc[str(k)]) if k in present else 0.0 for k in qrels], dtype=np.float64)
    return out


def evaluate_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = METRICS,
) -> dict[str, float]:
    """Mean of each metric over the queries of ``qrels`` (see :func:`per_query_scores`)."""
    per = per_query_scores(qrels, run, metrics)
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


def compare_to_baseline(
    qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    baseline: str = "cosine",
    metrics: Sequence[str] = METRICS,
    n_permutations: int = 10000,
    seed: int = 0,
) -> dict[str, dict[str, dict[str, float]]]:
    """p-values of every run against ``baseline``, per metric.

    Parameters
    ----------
    qrels : dict of {qid: {docid: int}}
    runs : dict of {name: run}
        Must contain ``baseline``.
    baseline : str, keyword-only
    metrics : sequence of str, keyword-only
    n_permutations, seed : int, keyword-only
        Of the randomisation test.

    Returns
    -------
    dict of {name: {metric: {"p_t_test": float, "p_randomization": float, "mean_diff": float}}}
        For every run except the baseline. ``p_t_test``: two-sided paired t-test (ranx's
        ``paired_student_t_test``, as in ``ranx.compare``); ``mean_diff``: run minus baseline.

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
    from ranx.statistical_tests import paired_student_t_test

    per = {n: per_query_scores(qrels, r, metrics) for n, r in runs.items()}
    out: dict[str, dict[str, dict[str, float]]] = {}
    for n in others:
        out[n] = {}
        for m in metrics:
            diff = per[n][m] - per[baseline][m]
            p_t = float(paired_student_t_test(per[baseline][m], per[n][m])[0]) if np.any(diff) else 1.0
            out[n][m] = {
                "p_t_test": float(p_t) if p_t == p_t else float("nan"),
                "p_randomization": paired_randomization_test(per[n][m], per[baseline][m], n_permutations=n_permutations, seed=seed),
                "mean_diff": float(diff.mean()),
            }
    return out


_INVERSE_S = (-0.9, -0.75, -0.5, -0.25, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
_POWER_BETA = (-4.0, -3.0, -2.0, -1.5, -1.0, -0.75, -0.5, -0.3, -0.2, -0.1, -0.05, 0.0,
               0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)


def default_grid(scorer: str, doc_norms) -> list[float]:
    """Grid searched when fitting ``scorer``'s parameter (denser near the neutral value 0).

    ``inverse_norm``: ``alpha = s / max||d||`` for ``s`` in
    {-0.9, -0.75, -0.5, -0.25, -0.1, -0.05, -0.02, 0, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32}
    (``s > -1`` keeps every denominator positive; large ``s`` approaches ``cos/||d||``).
    ``power``: ``beta`` in {0, ±0.05, ±0.1, ±0.2, ±0.3, ±0.5, ±0.75, ±1, ±1.5, ±2, ±3, ±4}.
    ``cosine``/``dot``: no parameter, ``[None]``.
    """
    check_scorer(scorer)
    if PARAM_NAMES[scorer] is None:
        return [None]
    if scorer == "inverse_norm":
        m = float(np.max(np.asarray(doc_norms, dtype=np.float64)))
        return [s / m for s in _INVERSE_S]
    return list(_POWER_BETA)


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
        ranx metric to maximise.
    k : int
        Depth of the search while fitting (10 suffices for ``@10`` metrics).

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
        run = FoldedIndex(D, doc_ids, scorer, p).search(Q, query_ids, k=k)
        curve.append({"param": None if p is None else float(p), metric: evaluate_run(qrels, run, [metric])[metric]})
    if not curve:
        raise InputError(f"{scorer}: no valid parameter in the grid {grid}")
    best_val = max(c[metric] for c in curve)
    neutral = NEUTRAL_PARAM[scorer] or 0.0
    best = min(
        (c for c in curve if c[metric] >= best_val - 1e-12),
        key=lambda c: 0.0 if c["param"] is None else abs(c["param"] - neutral),
    )
    return best["param"], curve
