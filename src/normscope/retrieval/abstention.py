"""nAUC: the norm on MTEB's abstention yardstick, beside the field's own confidence functions.

MTEB reports, for every retrieval task, the normalised area under the metric-vs-abstention curve
(nAUC; Gisserot-Boukhlef, Faysse, Malherbe, Hudelot & Colombo, "Towards trustworthy reranking: a
simple yet effective abstention mechanism", arXiv 2402.12997; mteb PR #854) of three confidence
functions of a query's retrieved scores ``s_1 >= s_2 >= ... >= s_K``:

- ``max``: ``s_1``;
- ``std``: the population standard deviation of the K scores;
- ``diff1``: ``s_1 - s_2``.

The abstention curve at rate ``r`` is the mean per-query metric (here nDCG@10 of the cosine run) over
the queries kept after abstaining on the fraction ``r`` of least-confident queries, at
``r = 0, 0.1, ..., 0.9``; nAUC scales its area between the flat curve (confidence unrelated to the
metric: 0) and the oracle's (abstaining on the worst queries first: 1). Equal confidences count
with their group's mean metric (mteb #5613). Negative values mean abstaining by the signal removes
the better queries first.

Computed by mteb's own functions (``mteb._evaluators.retrieval_metrics.nauc`` and
``confidence_scores``, imported when called) so the numbers read as MTEB's published ones; when mteb
is not importable, by :func:`nauc_normscope` and :func:`confidence_normscope`, the same algorithm
(tests check them equal to mteb's on the same inputs). MTEB takes the scores of its own retrieval
depth (``top_k``); here ``std`` is over the run's depth ``k`` (stated in the output).

Norm signals beside them, each oriented so that a larger value reads as more confidence:
``query_norm`` (direction -1: the paper's ``cos/(1 + alpha ||z||)`` reads a larger norm as less reliable,
:data:`normscope.retrieval.confidence.DIRECTION`), ``query_norm_reversed`` (+1, the other sign, shown, never
judged) and ``top_doc_norm`` (-1).

CIs: percentile bootstrap over queries (one index set shared by every signal, so the difference of two
signals' nAUC is paired).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError

__all__ = ["MTEB_CONFIDENCES", "NORM_CONFIDENCES", "ABSTENTION_RATES", "CLAIM_SIGNAL", "mteb_functions",
           "nauc", "nauc_normscope", "confidence_normscope", "confidence_table", "abstention_study"]

#: MTEB's confidence functions (``confidence_scores``), in table order.
MTEB_CONFIDENCES: tuple[str, ...] = ("max", "std", "diff1")
#: The norm signals: name -> (column of the per-query signals, direction).
NORM_CONFIDENCES: dict[str, tuple[str, int]] = {"query_norm": ("query_norm", -1),
                                                "query_norm_reversed": ("query_norm", +1),
                                                "top_doc_norm": ("top_doc_norm", -1)}
#: The norm signal judged against the best MTEB confidence (its pre-specified direction).
CLAIM_SIGNAL = "query_norm"
#: MTEB's abstention rates (``_DEFAULT_ABSTENTION_RATES``): 0, 0.1, ..., 0.9.
ABSTENTION_RATES = np.linspace(0, 1, 11)[:-1]

_FORMULA = {"max": "s_1 (top-1 cosine)", "std": "population SD of the run's k scores", "diff1": "s_1 - s_2",
            "query_norm": "-||q||", "query_norm_reversed": "+||q|| (the other sign; shown, not judged)",
            "top_doc_norm": "-||d_1||"}


def mteb_functions():
    """mteb's ``(nauc, confidence_scores, version)``, or None when mteb is not importable."""
    try:
        import mteb
        from mteb._evaluators.retrieval_metrics import confidence_scores, nauc as mteb_nauc
    except Exception:  # noqa: BLE001 - any failure to import means: use normscope's own implementation
        return None
    return mteb_nauc, confidence_scores, str(getattr(mteb, "__version__", "?"))


def _curve(conf: np.ndarray, metric: np.ndarray, rates: np.ndarray) -> np.ndarray:
    order = np.argsort(conf, kind="stable")
    c, m = conf[order], metric[order]
    start = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    size = np.diff(np.r_[start, len(c)])
    m = np.repeat(np.add.reduceat(m, start) / size, size)
    n = len(c)
    return np.array([m[min(round(r * n), n - 1):].mean() for r in rates])


def nauc_normscope(conf, metric, rates=ABSTENTION_RATES) -> float:
    """nAUC of ``metric`` abstaining by ``conf`` (the algorithm of mteb's ``nauc``, for when mteb is absent).

    Parameters
    ----------
    conf : array-like of shape (n,)
        Confidence per query (larger = more confident).
    metric : array-like of shape (n,)
        Per-query metric (e.g. nDCG@10).
    rates : array-like
        Abstention rates (default MTEB's 0, 0.1, ..., 0.9).

    Returns
    -------
    float
        ``(AUC - AUC_flat) / (AUC_oracle - AUC_flat)`` with trapezoidal areas over ``rates``; NaN when the
        oracle curve is flat (every query has the same metric).
    """
    c, m, r = np.asarray(conf, float).ravel(), np.asarray(metric, float).ravel(), np.asarray(rates, float)
    if c.size == 0:
        return float("nan")
    curve, oracle = _curve(c, m, r), _curve(m, m, r)
    a, o = np.trapezoid(curve, r), np.trapezoid(oracle, r)
    flat = oracle[0] * (r[-1] - r[0])
    return float("nan") if o == flat else float((a - flat) / (o - flat))


def confidence_normscope(scores: Sequence[float]) -> dict[str, float]:
    """``max``, ``std``, ``diff1`` of one query's scores (mteb's ``confidence_scores``, for when mteb is absent)."""
    s = sorted((float(x) for x in scores), reverse=True)
    if not s:
        return {"max": 0.0, "std": 0.0, "diff1": 0.0}
    return {"max": s[0], "std": float(np.std(s)), "diff1": s[0] - s[1] if len(s) > 1 else 0.0}


def nauc(conf, metric, *, use_mteb: bool = True) -> float:
    """nAUC by mteb's ``nauc`` when importable (``use_mteb``), else :func:`nauc_normscope`."""
    f = mteb_functions() if use_mteb else None
    c, m = np.asarray(conf, float).ravel(), np.asarray(metric, float).ravel()
    return float(f[0](c, m)) if f else nauc_normscope(c, m)


def confidence_table(run: Mapping[str, Mapping[str, float]], query_ids: Sequence[str], *,
                     use_mteb: bool = True) -> dict[str, np.ndarray]:
    """MTEB's three confidences of each query's retrieved scores.

    Parameters
    ----------
    run : dict of {qid: {docid: score}}
        The run whose scores are read (all of a query's results, as MTEB reads its top_k).
    query_ids : sequence of str
        Output order.
    use_mteb : bool
        Use mteb's ``confidence_scores`` when importable.

    Returns
    -------
    dict of {"max", "std", "diff1": ndarray of shape (n,), float64}
    """
    f = mteb_functions() if use_mteb else None
    fn = f[1] if f else confidence_normscope
    rows = [fn([float(s) for s in (run.get(q) or {}).values()]) for q in query_ids]
    return {k: np.array([r[k] for r in rows], dtype=np.float64) for k in MTEB_CONFIDENCES}


def abstention_study(confidences: Mapping[str, object], metric, *, metric_name: str = "ndcg@10", depth: int | None = None,
                     n_boot: int = 1000, seed: int = 0, level: float = 0.95, use_mteb: bool = True) -> dict:
    """nAUC of every signal with bootstrap CIs, and the claim signal against the best MTEB confidence.

    Parameters
    ----------
    confidences : dict of {name: array-like of shape (n,)}
        Oriented signals (larger = more confident): the :data:`MTEB_CONFIDENCES` and the norm signals.
    metric : array-like of shape (n,)
        Per-query metric of the same queries.
    metric_name : str
    depth : int, optional
        Scores per query that ``std`` was computed over (stated in the output).
    n_boot, seed, level
        Percentile bootstrap over queries (one index set for every signal: differences are paired).
    use_mteb : bool
        Compute with mteb's ``nauc`` when importable.

    Returns
    -------
    dict
        ``status`` ("ok"), ``metric``, ``implementation``, ``abstention_rates``, ``depth``, ``ci``, ``n_queries``, ``signals``
        (``{name: {kind, direction, formula, nauc, nauc_ci}}``) and ``comparison``: ``signal``,
        ``best_baseline`` (highest nAUC of the MTEB confidences on these queries), ``nauc``, ``baseline_nauc``,
        ``baseline_ci``, ``position`` ("within", "below" or "above" the best baseline's CI), ``diff``
        (signal minus best baseline), ``ci`` (paired bootstrap), ``n_queries`` (None fields and a ``reason``
        when it cannot be computed).

    Raises
    ------
    InputError
        Lengths that differ, fewer than 10 queries, a non-finite value.
    """
    m = np.asarray(metric, dtype=np.float64).ravel()
    n = m.size
    if n < 10:
        raise InputError(f"nAUC needs at least 10 queries (one per abstention rate), got {n}")
    X = {}
    for name, v in confidences.items():
        x = np.asarray(v, dtype=np.float64).ravel()
        if x.shape != (n,):
            raise InputError(f"confidence '{name}' has {x.size} values for {n} queries")
        if not np.isfinite(x).all() or not np.isfinite(m).all():
            raise InputError(f"confidence '{name}' or the metric has a non-finite value")
        X[name] = x
    f = mteb_functions() if use_mteb else None
    fn = f[0] if f else nauc_normscope
    impl = (f"mteb {f[2]} (mteb._evaluators.retrieval_metrics.nauc, confidence_scores)" if f else
            "normscope.retrieval.abstention.nauc_normscope (mteb is not importable; the same algorithm)")
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    a = (1 - level) / 2
    point = {k: float(fn(x, m)) for k, x in X.items()}
    boot = {k: np.array([fn(x[i], m[i]) for i in idx], dtype=np.float64) for k, x in X.items()}

    def ci(v):
        v = v[np.isfinite(v)]
        return [float(np.quantile(v, a)), float(np.quantile(v, 1 - a))] if v.size >= 0.9 * n_boot else None

    signals = {k: {"kind": "mteb" if k in MTEB_CONFIDENCES else "norm",
                   "direction": +1 if k in MTEB_CONFIDENCES else NORM_CONFIDENCES.get(k, (k, +1))[1],
                   "formula": _FORMULA.get(k, k), "nauc": point[k], "nauc_ci": ci(boot[k])} for k in X}
    return {"status": "ok", "metric": metric_name, "implementation": impl, "abstention_rates": [float(r) for r in ABSTENTION_RATES],
            "depth": depth, "ci": f"percentile bootstrap over queries ({n_boot} resamples, one index set for every signal)",
            "n_queries": int(n), "signals": signals, "comparison": _compare(point, boot, signals, ci, n)}


def _compare(point: dict, boot: dict, signals: dict, ci, n: int) -> dict:
    base = [k for k in MTEB_CONFIDENCES if k in point and np.isfinite(point[k])]
    out = {"signal": CLAIM_SIGNAL, "best_baseline": None, "nauc": point.get(CLAIM_SIGNAL), "baseline_nauc": None,
           "baseline_ci": None, "position": None, "diff": None, "ci": None, "n_queries": int(n),
           "rule": "best baseline: the MTEB confidence with the highest nAUC on these queries (fixed before the "
                   "bootstrap); diff = nAUC(signal) - nAUC(best), paired percentile bootstrap over queries"}
    if CLAIM_SIGNAL not in point or not base or not np.isfinite(point[CLAIM_SIGNAL]):
        return {**out, "reason": "the claim signal or every MTEB confidence has no nAUC"}
    best = max(base, key=point.__getitem__)
    bci = signals[best]["nauc_ci"]
    v = point[CLAIM_SIGNAL]
    pos = None if bci is None else "below" if v < bci[0] else "above" if v > bci[1] else "within"
    return {**out, "best_baseline": best, "baseline_nauc": point[best], "baseline_ci": bci, "position": pos,
            "diff": v - point[best], "ci": ci(boot[CLAIM_SIGNAL] - boot[best])}
