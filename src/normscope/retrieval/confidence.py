"""Is the top-1 result relevant? Per-query confidence signals, their maps to [0, 1], and the calibration study.

Signals, each computed per query from the raw vectors and the cosine run (:func:`query_signals`):

- ``query_norm``: ``||q||`` of the raw query embedding (the norm R read as a confidence signal);
- ``top_doc_norm``: ``||d||`` of the top-1 document;
- ``top1_score``: the top-1 score;
- ``margin``: top-1 score minus top-2 score;
- ``learned_scores``: logistic regression (C = 1, standardised features) on (top1_score, margin);
- ``learned_scores_norms``: the same with (query_norm, top_doc_norm) added, so the value of the
  norm features is the difference between the two learned signals;
- ``top1_score_uncalibrated``: the cosine top-1 score clipped to [0, 1] and read as a probability
  with no map (the ECE of a user who takes the cosine at face value).

**Direction, fixed once per signal.** :data:`DIRECTION` is set before any fit and never flips
between folds: +1 (a higher value means more confidence) for ``top1_score`` and ``margin``, the
usual reading; -1 for ``query_norm`` and ``top_doc_norm``: the paper's norm-aware score
``cos / (1 + alpha ||z||)`` with ``alpha > 0`` discounts high-norm items, i.e. reads a larger norm as
less reliable, and the calibration test takes the same reading. The Platt map
``sigmoid(a z + b)`` of the oriented, standardised signal ``z = direction * (s - mean) / sd`` is
fitted by maximum likelihood with the slope constrained to ``a >= 0`` (sklearn's
LogisticRegression, C = 1e6; when the free fit gives ``a < 0``, the constrained optimum of the
concave log-likelihood is the flat map ``a = 0`` at the fitting queries' base rate). So a fold can
never flip a signal's meaning. ``auroc_raw`` is the AUROC of the oriented signal
``direction * s`` (above 0.5: the data agree with the pre-specified direction; below 0.5: the signal
works the other way, and then its calibrated map is flat); ``auroc`` is that of the mapped
confidence (equal to ``auroc_raw`` with one map whose slope is positive, 0.5 when every map is
flat). Under cross-validation each fold has its own map, so ``auroc`` is computed within each fold
and averaged (:func:`~normscope.retrieval.calibration.auroc_within_groups`): a pooled ranking of
confidences from different maps mixes their intercepts, which follow the training folds' base
rates, and gave AUROCs below 0.5 for signals that discriminate nothing.

Metrics (:mod:`normscope.retrieval.calibration`): AUROC (``sklearn.metrics.roc_auc_score``) with a
percentile bootstrap CI over evaluation queries (maps held fixed), ECE (15 bins) with its number of
populated bins, AURC.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope._format import plural
from normscope.errors import InputError
from normscope.retrieval.calibration import (
    N_BINS,
    aurc,
    auroc_bootstrap_ci,
    auroc_within_groups,
    check_pair,
    ece,
    ece_support,
    reliability_data,
    risk_coverage,
)

__all__ = [
    "RAW_SIGNALS",
    "LEARNED",
    "SIGNALS",
    "DIRECTION",
    "query_signals",
    "PlattMap",
    "fit_predict_signals",
    "score_signal",
    "evaluate_signals",
    "calibration_study",
]

RAW_SIGNALS: tuple[str, ...] = ("query_norm", "top_doc_norm", "top1_score", "margin")
LEARNED: dict[str, tuple[str, ...]] = {
    "learned_scores": ("top1_score", "margin"),
    "learned_scores_norms": ("top1_score", "margin", "query_norm", "top_doc_norm"),
}
#: Every signal of the study, in table order (``top1_score_uncalibrated`` has no fitted map).
SIGNALS: tuple[str, ...] = RAW_SIGNALS + tuple(LEARNED) + ("top1_score_uncalibrated",)
#: Pre-specified direction of each raw signal: +1 = a higher value is read as more confidence (see above).
DIRECTION: dict[str, int] = {"query_norm": -1, "top_doc_norm": -1, "top1_score": +1, "margin": +1}


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
        One row per query: ``query_id, query_norm, top_doc_norm, top1_score, margin, top1_doc`` and
        ``top1_relevant`` (0/1: judgement score >= 1) when ``qrels`` is given.

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
            raise InputError(f"query '{q}' has {plural(len(res), 'result')}; the margin signal needs 2")
        (d1, s1), (_, s2) = res[0], res[1]
        row = {"query_id": q, "query_norm": float(qn), "top_doc_norm": float(dnorm[d1]), "top1_score": float(s1),
               "margin": float(s1 - s2), "top1_doc": d1}
        if qrels is not None:
            row["top1_relevant"] = int((qrels.get(q) or {}).get(d1, 0) >= 1)
        rows.append(row)
    return pd.DataFrame(rows)


class PlattMap:
    """Monotone map ``sigmoid(a z + b)`` of a signal to [0, 1], in a fixed direction.

    ``z = direction * (s - mean) / sd`` on the fitting split; ``a >= 0`` (see the module docstring).

    Parameters
    ----------
    direction : {+1, -1}
        +1: a higher signal means more confidence.
    """

    def __init__(self, direction: int = +1):
        if direction not in (1, -1):
            raise InputError(f"direction must be +1 or -1, got {direction}")
        self.direction = int(direction)

    def fit(self, s, y) -> "PlattMap":
        from sklearn.linear_model import LogisticRegression

        s, y = check_pair(s, y, "signal")
        if len(np.unique(y)) < 2:
            raise InputError("Platt scaling needs both relevant and non-relevant top-1 results on the fitting split")
        self.mean_ = float(s.mean())
        self.scale_ = float(s.std()) or 1.0
        z = self.direction * (s - self.mean_) / self.scale_
        m = LogisticRegression(C=1e6, max_iter=1000).fit(z[:, None], y)
        self.slope_, self.intercept_ = float(m.coef_[0, 0]), float(m.intercept_[0])
        self.flat_ = self.slope_ < 0
        if self.flat_:  # constrained MLE on the boundary a = 0: the base rate
            p = float(y.mean())
            self.slope_, self.intercept_ = 0.0, float(np.log(p / (1 - p)))
        return self

    def transform(self, s) -> np.ndarray:
        z = self.direction * (np.asarray(s, dtype=np.float64).ravel() - self.mean_) / self.scale_
        return 1.0 / (1.0 + np.exp(-(self.slope_ * z + self.intercept_)))

    def info(self) -> dict:
        return {"slope": self.slope_, "intercept": self.intercept_, "flat": bool(self.flat_)}


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
        Output of :func:`query_signals` with ``top1_relevant`` (fitting and evaluation queries).
    signals : sequence of str, keyword-only
        Subset of :data:`SIGNALS`.

    Returns
    -------
    dict of {signal: {"confidence": ndarray (n_test,), "raw": ndarray or None, "info": dict}}
        ``raw``: the oriented signal ``DIRECTION * s`` (None for learned signals). ``info``: ``mapping`` and the fitted parameters (``slope``, ``intercept``, ``flat`` for Platt
        maps; ``coefficients`` on standardised features for learned signals).

    Raises
    ------
    InputError
        Unknown signal, or a fitting set whose top-1 results are all relevant or all non-relevant.
    """
    y_tr = train["top1_relevant"].to_numpy()
    if len(np.unique(y_tr)) < 2:
        which = "relevant" if y_tr.size and y_tr[0] else "non-relevant"
        raise InputError(f"the fitting queries' top-1 results are all {which} ({y_tr.size} queries)")
    out: dict[str, dict] = {}
    for sig in signals:
        if sig in RAW_SIGNALS:
            pm = PlattMap(DIRECTION[sig]).fit(train[sig].to_numpy(), y_tr)
            raw = test[sig].to_numpy(np.float64)
            out[sig] = {"confidence": pm.transform(raw), "raw": DIRECTION[sig] * raw,
                        "info": {"mapping": "platt", "direction": DIRECTION[sig], **pm.info()}}
        elif sig in LEARNED:
            conf, coefs = _learned(train, test, LEARNED[sig])
            out[sig] = {"confidence": conf, "raw": None,
                        "info": {"mapping": "logistic_regression", "features": list(LEARNED[sig]), "coefficients": coefs}}
        elif sig == "top1_score_uncalibrated":
            raw = test["top1_score"].to_numpy(np.float64)
            out[sig] = {"confidence": np.clip(raw, 0.0, 1.0), "raw": raw,
                        "info": {"mapping": "none: the cosine top-1 score clipped to [0, 1]"}}
        else:
            raise InputError(f"unknown confidence signal '{sig}' (choose from {', '.join(SIGNALS)})")
    return out


def score_signal(confidence, correct, *, raw=None, n_bins: int = N_BINS, n_boot: int = 1000, seed: int = 0) -> dict:
    """AUROC (with bootstrap CIs over queries), ECE and its support, AURC, reliability and risk-coverage data.

    Parameters
    ----------
    confidence : array-like of shape (n,), in [0, 1]
    correct : array-like of shape (n,), 0/1
    raw : array-like of shape (n,), optional
        The unmapped signal, oriented so that higher = more confident; adds ``auroc_raw`` and ``auroc_raw_ci``.
    n_bins : int, keyword-only
    n_boot, seed : int, keyword-only
        Of :func:`~normscope.retrieval.calibration.auroc_bootstrap_ci` (queries resampled).

    Returns
    -------
    dict
        ``auroc``, ``auroc_ci``, ``auroc_raw``, ``auroc_raw_ci`` (None, with ``auroc_note``, when the
        labels are all equal), ``ece``, ``ece_bins`` (:func:`~normscope.retrieval.calibration.ece_support`),
        ``aurc``, ``aurc_optimal``, ``reliability``, ``risk_coverage``.
    """
    from sklearn.metrics import roc_auc_score

    conf, y = check_pair(confidence, correct)
    two = len(np.unique(y)) == 2
    entry: dict = {"auroc": float(roc_auc_score(y, conf)) if two else None,
                   "auroc_ci": auroc_bootstrap_ci(conf, y, n_boot=n_boot, seed=seed) if two else None}
    if raw is not None:
        r = np.asarray(raw, dtype=np.float64)
        entry["auroc_raw"] = float(roc_auc_score(y, r)) if two else None
        entry["auroc_raw_ci"] = auroc_bootstrap_ci(r, y, n_boot=n_boot, seed=seed) if two else None
    if not two:
        entry["auroc_note"] = (f"not computed: every evaluated top-1 is {'relevant' if y[0] else 'non-relevant'}, "
                               "so no ranking of correct above wrong exists")
    entry["ece"] = ece(conf, y, n_bins=n_bins)
    entry["reliability"] = reliability_data(conf, y, n_bins=n_bins)
    entry["ece_bins"] = ece_support(entry["reliability"])
    entry["aurc"] = aurc(conf, y)
    entry["aurc_optimal"] = aurc(y, y)
    entry["risk_coverage"] = risk_coverage(conf, y)
    return entry


def evaluate_signals(train, test, *, signals: Sequence[str] = SIGNALS, n_bins: int = N_BINS, n_boot: int = 1000,
                     seed: int = 0) -> dict:
    """Fit maps and learned combinations on ``train``; score every signal on ``test``.

    Returns
    -------
    dict of {signal: dict}
        :func:`score_signal` output merged with the fit ``info`` of :func:`fit_predict_signals`.
    """
    y_te = test["top1_relevant"].to_numpy()
    fitted = fit_predict_signals(train, test, signals=signals)
    return {sig: {**f["info"], **score_signal(f["confidence"], y_te, raw=f["raw"], n_bins=n_bins, n_boot=n_boot, seed=seed)}
            for sig, f in fitted.items()}


def _mean_info(infos: list[dict]) -> dict:
    """Mean of the fitted parameters over folds (slope/intercept, or each coefficient)."""
    if not infos:
        return {}
    if "coefficients" in infos[0]:
        keys = list(infos[0]["coefficients"])
        return {"coefficients": {k: float(np.mean([i["coefficients"][k] for i in infos])) for k in keys}}
    if "slope" in infos[0]:
        return {"slope": float(np.mean([i["slope"] for i in infos])),
                "intercept": float(np.mean([i["intercept"] for i in infos])),
                "flat_folds": int(sum(i["flat"] for i in infos))}
    return {}


def calibration_study(sig_ev, *, sig_fit=None, folds: Sequence[np.ndarray] | None = None, n_bins: int = N_BINS,
                      n_boot: int = 1000, seed: int = 0) -> tuple[dict, dict]:
    """Every signal's map fitted on the fitting queries (a split, or the other folds) and scored on the evaluation queries.

    Parameters
    ----------
    sig_ev : pandas.DataFrame
        :func:`query_signals` of the evaluation queries (with ``top1_relevant``).
    sig_fit : pandas.DataFrame, keyword-only, optional
        Of the fitting split; exactly one of ``sig_fit`` and ``folds`` is given.
    folds : sequence of int arrays, keyword-only, optional
        Cross-validation: positions (rows of ``sig_ev``) of each fold; each fold's confidences come
        from maps fitted on the other folds.
    n_bins, n_boot, seed : int, keyword-only

    Returns
    -------
    calibration : dict of {signal: dict}
        ``status`` ("ok" or "not computed"), ``reason`` (None or why), ``fit`` (``mapping``,
        ``folds``: per-fold parameters with ``n_fit``, ``mean``) and the :func:`score_signal` fields.
        A signal that cannot be fitted never stops the others (nor the retrieval metrics).
    confidence : dict of {signal: ndarray (n_eval,)}
        The mapped confidences of the signals that were computed (aligned with ``sig_ev``).
    """
    if (sig_fit is None) == (folds is None):
        raise InputError("give either a fitting split or cross-validation folds")
    y = sig_ev["top1_relevant"].to_numpy()
    fold_of = np.zeros(len(sig_ev), dtype=np.int64)
    for i, f in enumerate(folds or []):
        fold_of[np.asarray(f)] = i
    parts = [(sig_fit, np.arange(len(sig_ev)), "fit split")] if folds is None else [
        (sig_ev.drop(index=sig_ev.index[f]), np.asarray(f), f"fold {i + 1}") for i, f in enumerate(folds)]
    conf = {s: np.full(len(sig_ev), np.nan) for s in SIGNALS}
    raw = {s: np.full(len(sig_ev), np.nan) for s in SIGNALS}
    infos: dict[str, list] = {s: [] for s in SIGNALS}
    failed: dict[str, str] = {}
    for train, idx, label in parts:
        try:
            fitted = fit_predict_signals(train, sig_ev.iloc[idx])
        except InputError as exc:
            for s in SIGNALS:
                failed.setdefault(s, f"{label}: {exc}")
            continue
        for s, f in fitted.items():
            conf[s][idx] = f["confidence"]
            if f["raw"] is not None:
                raw[s][idx] = f["raw"]
            infos[s].append({"part": label, "n_fit": int(len(train)), **{k: v for k, v in f["info"].items() if k != "mapping"}})
    out: dict[str, dict] = {}
    for s in SIGNALS:
        mapping = ("platt" if s in RAW_SIGNALS else "logistic_regression" if s in LEARNED
                   else "none: the cosine top-1 score clipped to [0, 1]")
        fit = {"mapping": mapping, "direction": DIRECTION.get(s), "folds": infos[s], "mean": _mean_info(infos[s])}
        if s == "top1_score_uncalibrated":  # nothing is fitted: computable whenever the run exists
            r = sig_ev["top1_score"].to_numpy(np.float64)
            conf[s], raw[s] = np.clip(r, 0.0, 1.0), r
            failed.pop(s, None)
        if s in failed:
            out[s] = {"status": "not computed", "reason": failed[s], "fit": fit, "auroc": None, "ece": None, "aurc": None}
            continue
        entry = score_signal(conf[s], y, raw=raw[s] if s in RAW_SIGNALS or s == "top1_score_uncalibrated" else None,
                             n_bins=n_bins, n_boot=n_boot, seed=seed)
        if folds is not None and s != "top1_score_uncalibrated":  # one map per fold: never rank across folds
            wf = auroc_within_groups(conf[s], y, fold_of, n_boot=n_boot, seed=seed)
            entry.update(auroc=wf["auroc"], auroc_ci=wf["ci"], auroc_per_fold=wf["per_group"], auroc_method=wf["method"])
        else:
            entry["auroc_method"] = ("one ranking of all evaluation queries" + (
                " (one map, fitted on the fitting split)" if folds is None and s != "top1_score_uncalibrated" else ""))
        out[s] = {"status": "ok", "reason": None, "fit": fit, **entry}
    return out, {s: conf[s] for s in SIGNALS if s not in failed}
