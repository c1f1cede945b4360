"""Is the top-1 result relevant? Per-query confidence signals and their calibration.

Signals, each computed per query from the raw vectors and a first-stage run
(higher = more confident, as given):

- ``query_norm``: ``||q||`` of the raw query embedding (the norm R of THEORY.md read
  as a confidence signal);
- ``top_doc_norm``: ``||d||`` of the top-1 document;
- ``top1_score``: the top-1 score;
- ``margin``: top-1 score minus top-2 score;
- ``learned_scores``: logistic regression on (top1_score, margin), fitted on the
  fitting split's queries (standardised features);
- ``learned_scores_norms``: the same with (query_norm, top_doc_norm) added, so the
  value of the norm features is the difference between the two learned signals.

Metrics, for the label "top-1 document is relevant":

- AUROC (``sklearn.metrics.roc_auc_score``), rank-based. ``auroc_raw`` uses the signal
  as given; ``auroc`` uses the mapped confidence, whose direction was fitted on the
  fitting split (so a signal that predicts *errors* on train keeps its meaning on test).
- ECE with 15 equal-width bins ``((m-1)/15, m/15]`` (0 goes to the first bin):
  ``sum_m (n_m / n) |acc_m - conf_m|`` (Guo et al., ICML 2017). Non-probability signals
  are first mapped to [0, 1] by Platt scaling: a one-feature logistic regression fitted on
  the fitting split (monotone, either direction). Learned signals are probabilities already.
- Risk-coverage curve and AURC (Geifman & El-Yaniv, NeurIPS 2017): queries sorted by
  confidence, descending; ``risk(i)`` = error rate among the ``i`` most confident;
  ``AURC = (1/n) sum_i risk(i)``. Tied confidences are handled by expectation over a
  random order within the tie (errors spread evenly inside each tied block), so the value
  does not depend on input order. ``aurc_optimal`` is the AURC of a perfect ordering.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import rankdata

from normscope.errors import InputError

__all__ = [
    "SIGNALS",
    "N_BINS",
    "query_signals",
    "ece",
    "reliability_data",
    "risk_coverage",
    "aurc",
    "PlattMap",
    "fit_predict_signals",
    "score_signal",
    "evaluate_signals",
]

N_BINS = 15
RAW_SIGNALS: tuple[str, ...] = ("query_norm", "top_doc_norm", "top1_score", "margin")
LEARNED: dict[str, tuple[str, ...]] = {
    "learned_scores": ("top1_score", "margin"),
    "learned_scores_norms": ("top1_score", "margin", "query_norm", "top_doc_norm"),
}
SIGNALS: tuple[str, ...] = RAW_SIGNALS + tuple(LEARNED)


def _check_pair(conf, correct, name="confidence"):
    c = np.asarray(conf, dtype=np.float64).ravel()
    y = np.asarray(correct).ravel()
    if c.shape != y.shape:
        raise InputError(f"{name} and labels differ in length: {c.size} vs {y.size}")
    if c.size == 0:
        raise InputError(f"no {name} values")
    if not np.isfinite(c).all():
        raise InputError(f"{name} has non-finite values")
    if not np.isin(y, (0, 1, True, False)).all():
        raise InputError("labels must be 0/1")
    return c, y.astype(np.float64)


def query_signals(
    run: Mapping[str, Mapping[str, float]],
    *,
    query_ids: Sequence[str],
    query_norms,
    doc_ids: Sequence[str],
    doc_norms,
    qrels: Mapping[str, Mapping[str, int]] | None = None,
):
    """Per-query confidence signals (and the label "top-1 is relevant" when ``qrels`` is given).

    Parameters
    ----------
    run : dict of {qid: {docid: score}}
        Ranked results (inner dicts in rank order, at least 2 per query).
    query_ids : sequence of str
    query_norms : array-like of shape (n_queries,)
        Raw query norms ``||q||``, aligned with ``query_ids``.
    doc_ids : sequence of str
    doc_norms : array-like of shape (n_docs,)
        Raw document norms, aligned with ``doc_ids``.
    qrels : dict, optional

    Returns
    -------
    pandas.DataFrame
        One row per query: ``query_id, query_norm, top_doc_norm, top1_score, margin,
        top1_doc`` and ``top1_relevant`` (0/1) when ``qrels`` is given.

    Raises
    ------
    InputError
        A query with fewer than 2 results.
    """
    import pandas as pd

    dnorm = dict(zip([str(d) for d in doc_ids], np.asarray(doc_norms, dtype=np.float64)))
    rows = []
    for q, qn in zip(query_ids, np.asarray(query_norms, dtype=np.float64)):
        res = list((run.get(q) or {}).items())
        if len(res) < 2:
            raise InputError(f"query '{q}' has {len(res)} result(s); the margin signal needs 2")
        (d1, s1), (_, s2) = res[0], res[1]
        row = {
            "query_id": q,
            "query_norm": float(qn),
            "top_doc_norm": float(dnorm[d1]),
            "top1_score": float(s1),
            "margin": float(s1 - s2),
            "top1_doc": d1,
        }
        if qrels is not None:
            row["top1_relevant"] = int((qrels.get(q) or {}).get(d1, 0) > 0)
        rows.append(row)
    return pd.DataFrame(rows)


def _bin_index(c: np.ndarray, n_bins: int) -> np.ndarray:
    return np.clip(np.ceil(c * n_bins).astype(np.int64) - 1, 0, n_bins - 1)


def reliability_data(confidence, correct, *, n_bins: int = N_BINS) -> dict:
    """Reliability-diagram data: per equal-width bin, count, mean confidence and accuracy.

    Parameters
    ----------
    confidence : array-like of shape (n,)
        Probabilities in [0, 1].
    correct : array-like of shape (n,)
        1 if the top-1 result is relevant.
    n_bins : int, keyword-only

    Returns
    -------
    dict
        ``edges`` (n_bins + 1), ``count``, ``mean_confidence``, ``accuracy`` (n_bins lists;
        NaN for empty bins).

    Raises
    ------
    InputError
        Confidences outside [0, 1], length mismatch.
    """
    c, y = _check_pair(confidence, correct)
    if (c < 0).any() or (c > 1).any():
        raise InputError(f"confidences must lie in [0, 1] (range {c.min():g}..{c.max():g})")
    b = _bin_index(c, n_bins)
    count = np.bincount(b, minlength=n_bins).astype(np.float64)
    sc = np.bincount(b, weights=c, minlength=n_bins)
    sy = np.bincount(b, weights=y, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mc = np.where(count > 0, sc / count, np.nan)
        acc = np.where(count > 0, sy / count, np.nan)
    return {
        "edges": np.linspace(0.0, 1.0, n_bins + 1).tolist(),
        "count": count.astype(int).tolist(),
        "mean_confidence": mc.tolist(),
        "accuracy": acc.tolist(),
    }


def ece(confidence, correct, *, n_bins: int = N_BINS) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins ``((m-1)/M, m/M]``.

    ``ECE = sum_m (n_m / n) |acc_m - conf_m|`` (Guo et al., ICML 2017).

    Parameters
    ----------
    confidence : array-like of shape (n,), values in [0, 1]
    correct : array-like of shape (n,), 0/1
    n_bins : int, keyword-only
        15 by default.

    Returns
    -------
    float in [0, 1]
    """
    r = reliability_data(confidence, correct, n_bins=n_bins)
    n = sum(r["count"])
    total = 0.0
    for cnt, mc, acc in zip(r["count"], r["mean_confidence"], r["accuracy"]):
        if cnt:
            total += cnt / n * abs(acc - mc)
    return float(total)


def risk_coverage(confidence, correct) -> dict:
    """Risk-coverage curve of selective prediction by ``confidence`` (descending).

    Parameters
    ----------
    confidence : array-like of shape (n,)
        Any real-valued confidence (higher = keep first).
    correct : array-like of shape (n,), 0/1

    Returns
    -------
    dict
        ``coverage`` (i/n for i = 1..n) and ``risk`` (expected error rate among the i most
        confident, ties averaged), lists of length n.
    """
    c, y = _check_pair(confidence, correct)
    n = c.size
    err = 1.0 - y
    order = np.argsort(-c, kind="stable")
    cs, es = c[order], err[order]
    # expected cumulative errors under a random order within tied blocks
    cum = np.empty(n)
    start = 0
    done_err = 0.0
    while start < n:
        stop = start
        while stop + 1 < n and cs[stop + 1] == cs[start]:
            stop += 1
        size = stop - start + 1
        block_err = es[start : stop + 1].sum()
        cum[start : stop + 1] = done_err + block_err * np.arange(1, size + 1) / size
        done_err += block_err
        start = stop + 1
    i = np.arange(1, n + 1)
    return {"coverage": (i / n).tolist(), "risk": (cum / i).tolist()}


def aurc(confidence, correct) -> float:
    """Area under the risk-coverage curve, ``(1/n) sum_i risk(i)`` (see :func:`risk_coverage`)."""
    return float(np.mean(risk_coverage(confidence, correct)["risk"]))


class PlattMap:
    """Monotone map of a real signal to [0, 1]: ``sigmoid(a s + b)`` fitted by logistic regression.

    Fitted with ``sklearn.linear_model.LogisticRegression`` (lbfgs, C = 1e6, i.e. nearly
    unregularised) on the standardised signal of the fitting split (Platt 1999). ``a`` may be
    negative: then lower signal means higher confidence.
    """

    def fit(self, s, y) -> "PlattMap":
        from sklearn.linear_model import LogisticRegression

        s, y = _check_pair(s, y, "signal")
        if len(np.unique(y)) < 2:
            raise InputError("Platt scaling needs both relevant and non-relevant top-1 results on the fitting split")
        self.mean_ = float(s.mean())
        self.scale_ = float(s.std()) or 1.0
        self.model_ = LogisticRegression(C=1e6, max_iter=1000).fit(((s - self.mean_) / self.scale_)[:, None], y)
        return self

    @property
    def direction(self) -> int:
        """+1 if the map increases with the signal, -1 if it decreases."""
        return 1 if float(self.model_.coef_[0, 0]) >= 0 else -1

    def transform(self, s) -> np.ndarray:
        s = np.asarray(s, dtype=np.float64).ravel()
        return self.model_.predict_proba(((s - self.mean_) / self.scale_)[:, None])[:, 1]


def _learned(train, test, cols):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
    model.fit(train[list(cols)].to_numpy(np.float64), train["top1_relevant"].to_numpy())
    coef = model[-1].coef_[0]
    return model.predict_proba(test[list(cols)].to_numpy(np.float64))[:, 1], dict(zip(cols, coef.tolist()))


def fit_predict_signals(train, test, *, signals: Sequence[str] = SIGNALS) -> dict:
    """Fit each signal's map to [0, 1] on ``train`` and apply it to ``test``.

    Parameters
    ----------
    train, test : pandas.DataFrame
        Output of :func:`query_signals` with ``top1_relevant`` (fitting and evaluation split).
    signals : sequence of str, keyword-only
        Subset of :data:`SIGNALS`.

    Returns
    -------
    dict of {signal: {"confidence": ndarray (n_test,), "raw": ndarray or None, "info": dict}}
        ``info`` holds ``mapping`` (``platt`` or ``logistic_regression``) and ``direction`` or
        ``coefficients`` (on standardised features).

    Raises
    ------
    InputError
        Unknown signal, or a fitting split whose labels are all equal.
    """
    y_tr = train["top1_relevant"].to_numpy()
    if len(np.unique(y_tr)) < 2:
        raise InputError("the fitting split's top-1 results are all relevant or all non-relevant; cannot fit confidence maps")
    out: dict[str, dict] = {}
    for sig in signals:
        if sig in RAW_SIGNALS:
            pm = PlattMap().fit(train[sig].to_numpy(), y_tr)
            raw = test[sig].to_numpy(np.float64)
            out[sig] = {"confidence": pm.transform(raw), "raw": raw, "info": {"mapping": "platt", "direction": pm.direction}}
        elif sig in LEARNED:
            conf, coefs = _learned(train, test, LEARNED[sig])
            out[sig] = {
                "confidence": conf,
                "raw": None,
                "info": {"mapping": "logistic_regression", "features": list(LEARNED[sig]), "coefficients": coefs},
            }
        else:
            raise InputError(f"unknown confidence signal '{sig}' (choose from {', '.join(SIGNALS)})")
    return out


def score_signal(confidence, correct, *, raw=None, n_bins: int = N_BINS) -> dict:
    """AUROC, ECE, AURC, reliability and risk-coverage data of one confidence signal.

    Parameters
    ----------
    confidence : array-like of shape (n,), in [0, 1]
    correct : array-like of shape (n,), 0/1
    raw : array-like of shape (n,), optional
        The unmapped signal; adds ``auroc_raw``.
    n_bins : int, keyword-only

    Returns
    -------
    dict
        ``auroc`` (NaN when the labels are all equal), ``auroc_raw``, ``ece``, ``aurc``,
        ``aurc_optimal``, ``reliability``, ``risk_coverage``.
    """
    from sklearn.metrics import roc_auc_score

    conf, y = _check_pair(confidence, correct)
    two = len(np.unique(y)) == 2
    entry: dict = {"auroc": float(roc_auc_score(y, conf)) if two else float("nan")}
    if raw is not None:
        entry["auroc_raw"] = float(roc_auc_score(y, np.asarray(raw, dtype=np.float64))) if two else float("nan")
    entry["ece"] = ece(conf, y, n_bins=n_bins)
    entry["aurc"] = aurc(conf, y)
    entry["aurc_optimal"] = aurc(y, y)
    entry["reliability"] = reliability_data(conf, y, n_bins=n_bins)
    entry["risk_coverage"] = risk_coverage(conf, y)
    return entry


def evaluate_signals(train, test, *, signals: Sequence[str] = SIGNALS, n_bins: int = N_BINS) -> dict:
    """Fit maps and learned combinations on ``train``; score every signal on ``test``.

    Returns
    -------
    dict of {signal: dict}
        :func:`score_signal` output merged with the fit ``info`` of
        :func:`fit_predict_signals`.
    """
    y_te = test["top1_relevant"].to_numpy()
    fitted = fit_predict_signals(train, test, signals=signals)
    return {
        sig: {**f["info"], **score_signal(f["confidence"], y_te, raw=f["raw"], n_bins=n_bins)} for sig, f in fitted.items()
    }


def auroc_bootstrap_ci(score, label, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> list | None:
    """Percentile bootstrap CI of the AUROC of ``score`` for the binary ``label`` (resampling items).

    The AUROC of each resample is the Mann-Whitney form ``(sum of positive ranks - n1(n1+1)/2) /
    (n1 n0)`` with average ranks for ties (equal to :func:`sklearn.metrics.roc_auc_score`), computed
    for all resamples at once. Resamples with one class only are dropped.

    Parameters
    ----------
    score : array-like of shape (n,)
    label : array-like of shape (n,), 0/1
    n_boot : int, keyword-only
    seed : int, keyword-only
    level : float, keyword-only

    Returns
    -------
    [lo, hi] or None (fewer than 2 items of a class, or too few valid resamples)
    """
    x = np.asarray(score, dtype=np.float64)
    y = np.asarray(label, dtype=np.int64)
    ok = np.isfinite(x)
    x, y = x[ok], y[ok]
    if y.sum() < 2 or (1 - y).sum() < 2 or n_boot < 10:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(n_boot, len(x)))
    xs, ys = x[idx], y[idx]
    n1 = ys.sum(axis=1)
    n0 = ys.shape[1] - n1
    valid = (n1 > 0) & (n0 > 0)
    ranks = rankdata(xs, axis=1)
    auc = ((ranks * ys).sum(axis=1) - n1 * (n1 + 1) / 2) / np.where(valid, n1 * n0, 1)
    auc = auc[valid]
    if len(auc) < 0.9 * n_boot:
        return None
    a = (1 - level) / 2
    return [float(np.quantile(auc, a)), float(np.quantile(auc, 1 - a))]
