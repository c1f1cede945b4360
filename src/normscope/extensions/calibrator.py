"""A deployable calibrator: P(relevant) from per-query signals, with thresholds measured or guaranteed.

**Map.** A logistic regression on the standardised signals (scikit-learn ``LogisticRegression``, C = 1)
is calibrated by ``CalibratedClassifierCV(method="isotonic" | "sigmoid", ensemble=False)`` with a seeded
5-fold split: the regression is refitted on all fitting queries and the isotonic (or Platt sigmoid) map
is fitted on its out-of-fold decision values. The fitted numbers (scaler, coefficients, isotonic
thresholds or Platt ``a, b``) are stored as plain JSON and applied by :meth:`Calibrator.predict_proba`
in numpy: the file holds no pickle, and its probabilities equal scikit-learn's ``predict_proba``
(tests/test_retrieval_calibrator.py).

**Guarantee** ("precision >= 1 - alpha with probability >= 1 - delta"). Learn-then-Test (Angelopoulos,
Bates, Candes, Jordan & Lei, 2021) through MAPIE's ``BinaryClassificationController`` (risk
``precision``, Hoeffding-Bentkus p-values, Bonferroni-Holm over a fixed grid of thresholds on
P(relevant)), on **calibration queries that the map was not fitted on**. Its assumption: the
calibration queries and the future queries are exchangeable (i.i.d. from one distribution, with the
same model, corpus and run); the guarantee is on the precision over the population of future
queries that the threshold answers, and holds with probability 1 - delta over the draw of the
calibration queries. It says nothing once queries shift (docs/retrieval.md, "Shift"). Why MAPIE and
not crepes: crepes builds conformal classifiers and predictive systems (prediction sets, p-values
for labels), with no risk control of a selective precision; MAPIE implements Learn-then-Test for
exactly this binary precision risk with a documented FWER procedure.

**Document thresholds** ("keep documents whose score >= t"): the smallest cosine ``t`` on a fixed
grid whose micro precision over the calibration queries' top-k documents reaches the target;
measured, with **no** distribution-free guarantee: the documents of one query are not exchangeable
units (they share the query), so a per-document binomial argument does not hold.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope._format import noun
from normscope.errors import InputError
from normscope.requests.retrieval import DEFAULT_CALIBRATE_SIGNALS
from normscope.retrieval.qpp import QPP_SIGNALS, QPP_SPECS, qpp_signals
from normscope.extensions.calibrator_file import (FORMAT, METHODS, VERSION, Calibrator, check_calibrator_dict,
                                                 check_fingerprint, load_calibrator)

__all__ = [
    "FORMAT",
    "VERSION",
    "DEFAULT_SIGNALS",
    "METHODS",
    "LAMBDA_GRID",
    "SCORE_GRID",
    "Calibrator",
    "fit_calibrator",
    "target_labels",
    "ltt_threshold",
    "answer_stats",
    "score_threshold",
    "keep_stats",
    "load_calibrator",
    "check_calibrator_dict",
    "check_fingerprint",
    "apply_to_run",
]

#: Signals of the default calibrator: the run's top-1 score and margin and the query's raw norm (defined with the
#: command's request; ``run_calibrate`` leaves the norm out, with a note, where the input has no raw norms).
DEFAULT_SIGNALS: tuple[str, ...] = DEFAULT_CALIBRATE_SIGNALS
#: Thresholds on P(relevant) tested by Learn-then-Test (fixed before any data; Bonferroni-Holm over all 10).
LAMBDA_GRID: tuple[float, ...] = tuple(float(round(x, 2)) for x in np.arange(0.5, 0.96, 0.05))
#: Cosine thresholds of "keep documents whose score >= t".
SCORE_GRID: tuple[float, ...] = tuple(float(round(x, 3)) for x in np.arange(-1.0, 1.0001, 0.005))


def _f(x) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=np.float64).ravel()]


def target_labels(run, qrels, query_ids: Sequence[str], target_k: int = 1) -> np.ndarray:
    """1 where a relevant document (judgement >= 1) is among the first ``target_k`` results, else 0; shape (n,)."""
    out = []
    for q in query_ids:
        docs = list((run.get(q) or {}))[:target_k]
        rel = qrels.get(q) or {}
        out.append(int(any(rel.get(d, 0) >= 1 for d in docs)))
    return np.asarray(out, dtype=np.int64)


def target_name(target_k: int) -> str:
    """``top1_relevant`` or ``any_relevant_at_K``."""
    return "top1_relevant" if target_k == 1 else f"any_relevant_at_{target_k}"


def fit_calibrator(features, y, *, signals: Sequence[str] = DEFAULT_SIGNALS, method: str = "isotonic", seed: int = 0,
                   model: dict, target_k: int = 1, fitted_on: dict | None = None) -> Calibrator:
    """Fit the map on the fitting queries (see the module docstring).

    Parameters
    ----------
    features : pandas.DataFrame
        :func:`normscope.retrieval.qpp.qpp_signals` of the fitting queries.
    y : array-like of shape (n,), 0/1
        :func:`target_labels` of those queries.
    signals : sequence of str, keyword-only
    method : {'isotonic', 'platt'}, keyword-only
    seed : int, keyword-only
        Of the 5-fold split inside ``CalibratedClassifierCV``.
    model : dict, keyword-only
        ``ModelFingerprint.to_dict()`` of the embeddings.
    target_k : int, keyword-only
    fitted_on : dict, keyword-only, optional

    Returns
    -------
    Calibrator

    Raises
    ------
    InputError
        Unknown method or signal, fewer than 10 queries, labels of one class, fewer than 2 of a class per fold.
    """
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if method not in METHODS:
        raise InputError(f"unknown method '{method}' (choose from {', '.join(METHODS)})")
    signals = list(dict.fromkeys(signals))
    unknown = [s for s in signals if s not in QPP_SPECS]
    if not signals or unknown:
        raise InputError(f"unknown {noun(len(unknown), 'signal')} {', '.join(unknown) or '(none given)'} (choose from {', '.join(QPP_SIGNALS)})")
    y = np.asarray(y).ravel().astype(np.int64)
    X = features[signals].to_numpy(np.float64)
    if len(y) != len(X) or len(y) < 10:
        raise InputError(f"fitting a calibrator needs at least 10 queries with labels, got {len(y)}")
    counts = np.bincount(y, minlength=2)
    if counts.min() < 5:
        raise InputError(f"the fitting queries have {counts[1]} relevant and {counts[0]} non-relevant results; "
                         "a 5-fold calibration needs at least 5 of each (more fitting queries, so that at least "
                         "5 top-1 results are relevant and 5 are not)")
    if not np.isfinite(X).all():
        raise InputError("non-finite signal values among the fitting queries")
    cv = StratifiedKFold(5, shuffle=True, random_state=seed)
    clf = CalibratedClassifierCV(make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)),
                                 method=METHODS[method], cv=cv, ensemble=False).fit(X, y)
    cc = clf.calibrated_classifiers_[0]
    scaler, lr = cc.estimator[0], cc.estimator[-1]
    c = cc.calibrators[0]
    mp = ({"x": _f(c.X_thresholds_), "y": _f(c.y_thresholds_)} if method == "isotonic"
          else {"a": float(c.a_), "b": float(c.b_)})
    depth = max([QPP_SPECS[s].k or 1 for s in signals] + [target_k, 2])
    return Calibrator(signals=signals, method=method, target=target_name(target_k), scaler_mean=_f(scaler.mean_),
                      scaler_scale=_f(scaler.scale_), coef=_f(lr.coef_[0]), intercept=float(lr.intercept_[0]), map=mp,
                      model=dict(model), depth=int(depth), fitted_on=dict(fitted_on or {}))


def ltt_threshold(p, y, *, precision: float = 0.8, delta: float = 0.1, grid: Sequence[float] = LAMBDA_GRID) -> dict:
    """Learn-then-Test threshold on P(relevant): "answer only when P >= lambda" with precision >= ``precision``.

    MAPIE ``BinaryClassificationController(risk="precision", target_level=precision, confidence_level=1 - delta,
    fwer_method="bonferroni_holm", list_predict_params=grid)``; the predicted positives are the answered
    queries (P >= lambda).

    Parameters
    ----------
    p : array-like of shape (n,)
        Calibrated P(relevant) of calibration queries the map was **not** fitted on.
    y : array-like of shape (n,), 0/1
    precision, delta : float, keyword-only
        Target precision 1 - alpha and error probability delta, each in (0, 1).
    grid : sequence of float, keyword-only
        Thresholds tested (fixed before the data).

    Returns
    -------
    dict
        ``threshold`` (the smallest valid lambda: most queries answered; None when none can be guaranteed),
        ``valid`` (every valid lambda), ``p_values`` (per grid value), ``precision``, ``delta``, ``n_calibration``,
        ``calibration_precision`` / ``calibration_coverage`` at the threshold, ``method``, ``assumption``.

    Raises
    ------
    InputError
        Levels outside (0, 1), lengths that differ.
    """
    import warnings

    from mapie.risk_control import BinaryClassificationController

    for name, v in (("precision", precision), ("delta", delta)):
        if not 0 < v < 1:
            raise InputError(f"{name} must lie in (0, 1), got {v}")
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(y).ravel().astype(np.int64)
    if p.shape != y.shape or p.size == 0:
        raise InputError(f"probabilities and labels differ in length or are empty: {p.size} vs {y.size}")
    grid = np.asarray(sorted(grid), dtype=np.float64)
    ctl = BinaryClassificationController(predict_function=lambda X: np.column_stack([1 - X[:, 0], X[:, 0]]),
                                         risk="precision", target_level=float(precision), confidence_level=1 - float(delta),
                                         list_predict_params=grid, fwer_method="bonferroni_holm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no threshold controls the risk": reported as threshold None
        ctl.calibrate(p[:, None], y)
    valid = sorted(float(v) for v in np.atleast_1d(ctl.valid_predict_params))
    lam = valid[0] if valid else None
    out = {"threshold": lam, "valid": valid, "grid": grid.tolist(),
           "p_values": [float(v) for v in np.asarray(ctl.p_values).ravel()],
           "precision": float(precision), "delta": float(delta), "n_calibration": int(p.size),
           "method": "Learn-then-Test (Angelopoulos et al. 2021) with MAPIE BinaryClassificationController: risk "
                     "precision, Hoeffding-Bentkus p-values, Bonferroni-Holm over the grid",
           "assumption": "calibration and future queries exchangeable (i.i.d. from one distribution; same model, corpus "
                         "and run); the map was fitted on other queries",
           "statement": (f"with probability >= {1 - delta:g} over the calibration queries, answering only when "
                         f"P(relevant) >= {lam:g} has precision >= {precision:g} on future exchangeable queries"
                         if lam is not None else
                         f"no threshold on the grid guarantees precision >= {precision:g} at 1 - delta = {1 - delta:g} "
                         f"with {p.size} calibration queries")}
    out.update(answer_stats(p, y, lam, prefix="calibration_") if lam is not None else
               {"calibration_precision": None, "calibration_coverage": None})
    return out


def answer_stats(p, y, threshold: float, *, prefix: str = "", n_boot: int = 0, seed: int = 0) -> dict:
    """Precision and coverage of "answer only when P(relevant) >= threshold".

    Returns
    -------
    dict
        ``{prefix}precision`` (relevant among answered queries; None when none is answered), ``{prefix}coverage``
        (answered / all), ``{prefix}n_answered``; with ``n_boot`` > 0 also ``{prefix}precision_ci`` and
        ``{prefix}coverage_ci`` (percentile bootstrap over queries).
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    y = np.asarray(y).ravel().astype(np.float64)
    a = p >= threshold
    out = {f"{prefix}precision": float(y[a].mean()) if a.any() else None, f"{prefix}coverage": float(a.mean()),
           f"{prefix}n_answered": int(a.sum())}
    if n_boot:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(p), size=(n_boot, len(p)))
        A, Y = a[idx], y[idx]
        na = A.sum(axis=1)
        prec = (A * Y).sum(axis=1)[na > 0] / na[na > 0]
        cov = A.mean(axis=1)
        out[f"{prefix}precision_ci"] = ([float(np.quantile(prec, 0.025)), float(np.quantile(prec, 0.975))]
                                        if len(prec) >= 0.9 * n_boot else None)
        out[f"{prefix}coverage_ci"] = [float(np.quantile(cov, 0.025)), float(np.quantile(cov, 0.975))]
    return out


def _doc_arrays(run, qrels, query_ids, k):
    S = np.full((len(query_ids), k), np.nan)
    R = np.zeros((len(query_ids), k))
    for i, q in enumerate(query_ids):
        rel = qrels.get(q) or {}
        for j, (d, s) in enumerate(list((run.get(q) or {}).items())[:k]):
            S[i, j] = s
            R[i, j] = float(rel.get(d, 0) >= 1)
    return S, R


def keep_stats(run, qrels, query_ids: Sequence[str], threshold: float, *, k: int = 10, n_boot: int = 0,
               seed: int = 0) -> dict:
    """Precision and coverage of "keep the top-k documents whose score >= threshold".

    Returns
    -------
    dict
        ``precision`` (relevant kept / kept over all queries, micro; None when nothing is kept), ``coverage``
        (queries keeping at least one document / all), ``recall`` (relevant kept / relevant in the top k),
        ``kept_per_query``; with ``n_boot`` the CIs of precision and coverage (bootstrap over queries).
    """
    S, R = _doc_arrays(run, qrels, query_ids, k)
    keep = np.nan_to_num(S, nan=-np.inf) >= threshold
    kq, rq = keep.sum(axis=1), (keep * R).sum(axis=1)
    out = {"threshold": float(threshold), "k": int(k), "precision": float(rq.sum() / kq.sum()) if kq.sum() else None,
           "coverage": float((kq > 0).mean()), "recall": float(rq.sum() / R.sum()) if R.sum() else None,
           "kept_per_query": float(kq.mean())}
    if n_boot:
        rng = np.random.default_rng(seed)
        idx = rng.integers(0, len(kq), size=(n_boot, len(kq)))
        K, Rr = kq[idx].sum(axis=1), rq[idx].sum(axis=1)
        prec = Rr[K > 0] / K[K > 0]
        cov = (kq[idx] > 0).mean(axis=1)
        out["precision_ci"] = [float(np.quantile(prec, 0.025)), float(np.quantile(prec, 0.975))] if len(prec) >= 0.9 * n_boot else None
        out["coverage_ci"] = [float(np.quantile(cov, 0.025)), float(np.quantile(cov, 0.975))]
    return out


def score_threshold(run, qrels, query_ids: Sequence[str], *, precision: float = 0.8, k: int = 10,
                    grid: Sequence[float] = SCORE_GRID) -> dict:
    """The smallest cosine threshold on ``grid`` whose micro precision over the top-k documents of these queries
    reaches ``precision`` (measured; no distribution-free guarantee, see the module docstring).

    Returns
    -------
    dict
        ``threshold`` (None when no grid value reaches the target), ``precision`` (target), ``k``,
        ``n_queries``, ``calibration`` (:func:`keep_stats` at the threshold), ``guarantee`` (None) and ``why``.
    """
    S, R = _doc_arrays(run, qrels, query_ids, k)
    chosen = None
    for t in sorted(grid):
        keep = np.nan_to_num(S, nan=-np.inf) >= t
        if keep.sum() and (keep * R).sum() / keep.sum() >= precision:
            chosen = float(t)
            break
    return {"threshold": chosen, "precision": float(precision), "k": int(k), "n_queries": len(query_ids),
            "calibration": keep_stats(run, qrels, query_ids, chosen, k=k) if chosen is not None else None,
            "guarantee": None,
            "why": "measured on the calibration queries only: documents of one query share it and are not exchangeable "
                   "units, so no per-document finite-sample guarantee is claimed"}


def apply_to_run(cal: Calibrator, run, *, fingerprint, query_ids: Sequence[str] | None = None, query_texts=None,
                 query_norms=None, doc_ids=None, doc_norms=None, corpus_score=None, n_docs: int | None = None):
    """P(relevant), the answer decision and the kept documents of every query of a ranked cosine run.

    Parameters
    ----------
    cal : Calibrator
    run : dict of {qid: {docid: score}}
        Cosine scores, inner dicts in rank order, at least ``cal.depth`` results per query (fewer only when
        the corpus has fewer documents, ``n_docs``).
    fingerprint : Encoder, ModelFingerprint or dict, keyword-only
        The model that embedded queries and documents; a calibrator fitted for another is refused.
    query_ids : sequence of str, keyword-only, optional
        Row order (default: the run's).
    query_texts, query_norms, doc_ids, doc_norms, corpus_score : keyword-only, optional
        What the calibrator's signals need (:data:`normscope.retrieval.qpp.QPP_SPECS` ``needs``).
    n_docs : int, keyword-only, optional
        Corpus size (a run shorter than ``cal.depth`` is accepted when it holds the whole corpus).

    Returns
    -------
    pandas.DataFrame
        One row per query: ``query_id``, the signals, ``p_relevant``, ``answer`` (P >= the Learn-then-Test
        threshold; False for every query when the calibrator has none: abstain), ``kept`` (the document ids whose cosine reaches the
        document threshold, among the top ``keep_documents.k``; None when it has none).

    Raises
    ------
    InputError
        Another model's calibrator, a signal whose input is missing, a run shorter than the signals need.
    """
    check_fingerprint(cal, fingerprint)
    qids = list(run) if query_ids is None else [str(q) for q in query_ids]
    need = cal.depth if n_docs is None else min(cal.depth, int(n_docs))
    short = next((q for q in qids if len(run.get(q) or {}) < need), None)
    if short is not None:
        raise InputError(f"query '{short}' has {len(run.get(short) or {})} results; this calibrator's signals "
                         f"({', '.join(cal.signals)}) use the top {cal.depth}: search with top_k >= {cal.depth}")
    feats = qpp_signals(run, query_ids=qids, query_texts=query_texts, query_norms=query_norms, doc_ids=doc_ids,
                        doc_norms=doc_norms, corpus_score=corpus_score, signals=cal.signals)
    p = cal.predict_proba(feats)
    lam = (cal.thresholds.get("answer") or {}).get("threshold")
    kd = cal.thresholds.get("keep_documents") or {}
    t, k = kd.get("threshold"), kd.get("k", 10)
    feats["p_relevant"] = p
    feats["answer"] = [lam is not None and bool(x >= lam) for x in p]
    feats["kept"] = ([[d for d, s in list(run[q].items())[:k] if s >= t] for q in qids] if t is not None else None)
    return feats
