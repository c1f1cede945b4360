"""Calibration metrics for "is the top-1 result relevant?": ECE, reliability data, risk-coverage, AURC, AUROC CIs.

- ECE with 15 equal-width bins ``((m-1)/15, m/15]`` (0 goes to the first bin):
  ``sum_m (n_m / n) |acc_m - conf_m|`` (Guo et al., ICML 2017). :func:`ece_support` says how many
  bins hold queries: an ECE from one or two populated bins measures one global offset between
  mean confidence and accuracy, not calibration across confidence levels.
- Risk-coverage curve and AURC (Geifman & El-Yaniv, NeurIPS 2017): queries sorted by
  confidence, descending; ``risk(i)`` = error rate among the ``i`` most confident;
  ``AURC = (1/n) sum_i risk(i)``. Tied confidences are handled by expectation over a
  random order within the tie (errors spread evenly inside each tied block), so the value
  does not depend on input order.
- AUROC bootstrap CI: percentile bootstrap over queries (:func:`auroc_bootstrap_ci`).
- AUROC of cross-fitted confidences (:func:`auroc_within_groups`): each fold's confidences come
  from a map fitted on the other folds, so confidences of different folds are on different
  scales (a map's intercept follows its training folds' base rate, and a flat map is the
  training folds' base rate itself). Pooling them into one ranking mixes those offsets into the
  AUROC (it can fall below 0.5 for a signal that discriminates nothing); the AUROC is therefore
  computed within each fold and averaged, weighted by fold size (Forman & Scholz 2010,
  "Apples-to-apples in cross-validation studies", SIGKDD Explorations 12:49), with a CI that
  resamples queries within folds.

The signals, their maps to [0, 1] and the study live in :mod:`normscope.retrieval.confidence`.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from normscope._format import noun
from normscope.errors import InputError

__all__ = ["N_BINS", "ece", "ece_support", "reliability_data", "risk_coverage", "aurc", "auroc_bootstrap_ci",
           "ece_bootstrap_ci", "auroc_within_groups", "check_pair"]

N_BINS = 15


def check_pair(conf, correct, name="confidence"):
    """(confidence, labels) as float64 arrays; :class:`InputError` on length mismatch, emptiness, non-finite
    values or labels other than 0/1."""
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
    c, y = check_pair(confidence, correct)
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


def ece_support(reliability: dict) -> dict:
    """How many bins an ECE rests on, with a flag when it is one or two.

    Parameters
    ----------
    reliability : dict
        :func:`reliability_data` output.

    Returns
    -------
    dict
        ``populated_bins`` (bins holding a query), ``largest_bin`` (queries in the fullest bin),
        ``n``, and ``flag``: None, or a sentence when 1 or 2 bins are populated (the ECE is then one
        global offset, not calibration across confidence levels).
    """
    counts = [int(c) for c in reliability["count"]]
    k, top, n = sum(1 for c in counts if c), max(counts), sum(counts)
    flag = None
    if k <= 2:
        flag = (f"ECE from {k} populated {noun(k, 'bin')} of {len(counts)} (the fullest holds {top} of {n} queries): "
                "it measures one offset between mean confidence and accuracy, not calibration across confidence levels")
    return {"populated_bins": k, "largest_bin": top, "n": n, "flag": flag}


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
    c, y = check_pair(confidence, correct)
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
        Resamples the items (queries) only; anything fitted before (a confidence map) is held fixed.
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


def ece_bootstrap_ci(confidence, correct, *, n_bins: int = N_BINS, n_boot: int = 1000, seed: int = 0,
                     level: float = 0.95) -> list | None:
    """Percentile bootstrap CI of :func:`ece`, resampling items (queries); the confidences are held fixed.

    Parameters
    ----------
    confidence : array-like of shape (n,), in [0, 1]
    correct : array-like of shape (n,), 0/1
    n_bins, n_boot, seed : int, keyword-only
    level : float, keyword-only

    Returns
    -------
    [lo, hi] or None (``n_boot`` < 10)
    """
    c, y = check_pair(confidence, correct)
    if (c < 0).any() or (c > 1).any():
        raise InputError(f"confidences must lie in [0, 1] (range {c.min():g}..{c.max():g})")
    if n_boot < 10:
        return None
    b = _bin_index(c, n_bins)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, c.size, size=(n_boot, c.size))
    offs = (np.arange(n_boot)[:, None] * n_bins + b[idx]).ravel()
    size = n_boot * n_bins
    sc = np.bincount(offs, weights=c[idx].ravel(), minlength=size).reshape(n_boot, n_bins)
    sy = np.bincount(offs, weights=y[idx].ravel(), minlength=size).reshape(n_boot, n_bins)
    e = np.abs(sy - sc).sum(axis=1) / c.size  # sum_m (n_m/n) |acc_m - conf_m| = sum_m |sum y - sum c| / n
    a = (1 - level) / 2
    return [float(np.quantile(e, a)), float(np.quantile(e, 1 - a))]


def _rank_auroc(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Mann-Whitney AUROC of each row of ``xs`` (scores) for ``ys`` (0/1); NaN for a row with one class."""
    n1 = ys.sum(axis=-1)
    n0 = ys.shape[-1] - n1
    valid = (n1 > 0) & (n0 > 0)
    ranks = rankdata(xs, axis=-1)
    auc = ((ranks * ys).sum(axis=-1) - n1 * (n1 + 1) / 2) / np.where(valid, n1 * n0, 1)
    return np.where(valid, auc, np.nan)


def auroc_within_groups(score, label, groups, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """AUROC computed within each group (cross-validation fold) and averaged, weighted by group size.

    The AUROC of scores that come from different fitted maps (one per fold): see the module
    docstring for why a pooled ranking is biased. Groups holding one class only have no AUROC and
    are left out of the average (and counted).

    Parameters
    ----------
    score : array-like of shape (n,)
    label : array-like of shape (n,), 0/1
    groups : array-like of shape (n,)
        Group (fold) of each item.
    n_boot : int, keyword-only
        Replicates of the CI: each resamples items with replacement within every group and
        recomputes the weighted mean (replicates where no group has both classes are dropped).
    seed : int, keyword-only
    level : float, keyword-only

    Returns
    -------
    dict
        ``auroc`` (float or None), ``ci`` ([lo, hi] or None), ``per_group`` (AUROC of each group in
        sorted group order, None where undefined), ``n_groups_used``, ``method``.
    """
    x = np.asarray(score, dtype=np.float64)
    y = np.asarray(label, dtype=np.int64)
    g = np.asarray(groups)
    if not (x.shape == y.shape == g.shape):
        raise InputError(f"score, label and groups differ in length: {x.size}, {y.size}, {g.size}")
    keys = sorted(set(g.tolist()))
    per, sizes = [], []
    rng = np.random.default_rng(seed)
    boot_num = np.zeros(max(n_boot, 0))
    boot_den = np.zeros(max(n_boot, 0))
    for k in keys:
        m = (g == k) & np.isfinite(x)
        xk, yk = x[m], y[m]
        a = _rank_auroc(xk[None, :], yk[None, :])[0] if xk.size else np.nan
        per.append(None if not np.isfinite(a) else float(a))
        sizes.append(int(m.sum()))
        if n_boot > 0 and xk.size:
            idx = rng.integers(0, xk.size, size=(n_boot, xk.size))
            ab = _rank_auroc(xk[idx], yk[idx])
            ok = np.isfinite(ab)
            boot_num += np.where(ok, ab * xk.size, 0.0)
            boot_den += np.where(ok, xk.size, 0.0)
    w = np.array([s if a is not None else 0 for a, s in zip(per, sizes)], dtype=float)
    used = int((w > 0).sum())
    auroc = float(np.dot(w, [a or 0.0 for a in per]) / w.sum()) if w.sum() > 0 else None
    ci = None
    if n_boot >= 10 and auroc is not None:
        ok = boot_den > 0
        if ok.sum() >= 0.9 * n_boot:
            b = boot_num[ok] / boot_den[ok]
            a_ = (1 - level) / 2
            ci = [float(np.quantile(b, a_)), float(np.quantile(b, 1 - a_))]
    return {"auroc": auroc, "ci": ci, "per_group": per, "n_groups_used": used,
            "method": ("AUROC within each fold (each fold's confidences from a map fitted on the other folds), "
                       "averaged weighted by fold size; CI: percentile bootstrap resampling queries within folds")}
