"""Bootstrap CIs of a fitted pair scorer that refit its parameter on every draw of the fit pairs.

The parameter of ``inverse_norm`` / ``power`` is fitted on fit pairs (grid search of Spearman rho,
:func:`~normscope.similarity.fit.fit_pair_param`). A CI that resamples the evaluated pairs with the
fitted value held fixed leaves out the uncertainty of the fit. :func:`refit_pair_cis` draws the fit
pairs and the evaluated pairs jointly: draw ``b`` refits the parameter on its resample of the fit
pairs and scores its resample of the evaluated pairs with it.

Vectorised, without re-embedding: each grid value's scores are computed once; the Spearman rho of
a resample is the Pearson correlation of the resample's average ranks, and a resample is a vector
of counts ``w``, so the average rank of a value is ``(sum of the counts of smaller values) +
(count of the values tied with it + 1) / 2`` (:func:`weighted_spearman`), no sort per draw.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope.errors import InputError
from normscope.scoring import bootstrap_counts, choose_param

__all__ = ["weighted_spearman", "weighted_pearson", "refit_pair_cis", "REFIT_RESAMPLES"]

#: What the refitted CIs resample, in words.
REFIT_RESAMPLES = ("evaluated pairs and fit pairs resampled jointly; the parameter refitted (largest Spearman rho on "
                   "the fit pairs' draw) on each draw")

_CHUNK = 256


def weighted_pearson(x, y, w) -> np.ndarray:
    """Pearson r of each resample given as counts: ``x``, ``y`` (n,) or (B, n), ``w`` (B, n) -> (B,) (NaN when constant)."""
    w = np.asarray(w, dtype=np.float64)
    x = np.broadcast_to(np.asarray(x, dtype=np.float64), w.shape)
    y = np.broadcast_to(np.asarray(y, dtype=np.float64), w.shape)
    tot = w.sum(axis=1, keepdims=True)
    cx = x - (w * x).sum(axis=1, keepdims=True) / tot
    cy = y - (w * y).sum(axis=1, keepdims=True) / tot
    vx, vy = (w * cx * cx).sum(axis=1), (w * cy * cy).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w * cx * cy).sum(axis=1) / np.sqrt(vx * vy)
    scale = np.maximum(np.abs(x).max(axis=1), np.abs(y).max(axis=1)) if x.size else 0
    return np.where((vx <= 1e-24 * np.maximum(scale, 1) ** 2) | (vy <= 1e-24 * np.maximum(scale, 1) ** 2), np.nan, r)


def _weighted_ranks(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Average ranks (1-based, ties averaged) each item would have in the resample of counts ``w`` (B, n)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    new = np.r_[True, xs[1:] != xs[:-1]]
    starts = np.flatnonzero(new)
    grp = np.cumsum(new) - 1
    gs = np.add.reduceat(w[:, order], starts, axis=1)
    avg = np.cumsum(gs, axis=1) - gs + (gs + 1) / 2
    out = np.empty_like(w)
    out[:, order] = avg[:, grp]
    return out


def weighted_spearman(x, y, w) -> np.ndarray:
    """Spearman rho of each resample given as counts (average ranks of ties, as ``scipy.stats.spearmanr``).

    Parameters
    ----------
    x, y : array_like of shape (n,)
    w : array_like of shape (B, n)
        Counts of each item in each resample (:func:`normscope.scoring.bootstrap_counts`).

    Returns
    -------
    ndarray of shape (B,), float64
        ``spearmanr(x[idx_b], y[idx_b])`` for the index draw ``idx_b`` behind ``w[b]``; NaN when either
        side of a resample is constant.
    """
    w = np.asarray(w, dtype=np.float64)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return weighted_pearson(_weighted_ranks(x, w), _weighted_ranks(y, w), w)


def refit_pair_cis(params: Sequence[float], fit_scores, fit_human, eval_scores, eval_human, eval_cosine, *,
                   n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """CIs of a fitted pair scorer (its correlations and its difference to cosine) with the parameter refitted per draw.

    Parameters
    ----------
    params : sequence of float, length G
        The grid values tried (valid on every item).
    fit_scores : ndarray of shape (m, G)
        The scorer's score of each fit pair at each grid value, pairs in a fixed (content) order.
    fit_human : ndarray of shape (m,)
    eval_scores : ndarray of shape (n, G)
        The same for the evaluated pairs, in content order.
    eval_human, eval_cosine : ndarray of shape (n,)
        Human scores and cosine's scores of the evaluated pairs (the baseline).
    n_boot, seed : int, keyword-only
        Evaluated pairs: ``default_rng(seed).integers(0, n, (n_boot, n))`` (the draws of
        :func:`normscope.stats_designs.correlation_difference`); fit pairs: ``default_rng([seed, 1])``.
    level : float, keyword-only

    Returns
    -------
    dict
        ``spearman_ci``, ``pearson_ci`` (the scorer's correlations with the human scores), ``delta_ci``
        (Spearman scorer minus cosine), ``relative_ci`` (``rho(scorer) / rho(cosine) - 1`` over draws with
        ``rho(cosine) > 0``), ``param_draws`` (2.5/50/97.5 % quantiles of the refitted value,
        ``share_neutral``: fits at 0) and ``resamples``.

    Raises
    ------
    InputError
        Shapes that do not match; ``n_boot < 10``.
    """
    p = np.asarray(params, dtype=np.float64)
    fs, es = np.asarray(fit_scores, dtype=np.float64), np.asarray(eval_scores, dtype=np.float64)
    fh, eh, ec = (np.asarray(v, dtype=np.float64) for v in (fit_human, eval_human, eval_cosine))
    if fs.ndim != 2 or es.ndim != 2 or fs.shape[1] != p.size or es.shape[1] != p.size or fh.shape != (fs.shape[0],) \
            or eh.shape != (es.shape[0],) or ec.shape != eh.shape:
        raise InputError(f"refit: fit scores {fs.shape}, evaluated scores {es.shape}, {p.size} parameters do not match")
    if n_boot < 10:
        raise InputError(f"n_boot must be >= 10, got {n_boot}")
    m, n = fs.shape[0], es.shape[0]
    ie = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    jf = np.random.default_rng([seed, 1]).integers(0, m, size=(n_boot, m))
    rho_s, r_s, rho_c, fitted = (np.empty(n_boot) for _ in range(4))
    for s in range(0, n_boot, _CHUNK):
        v = bootstrap_counts(jf[s : s + _CHUNK], m)
        crit = np.column_stack([weighted_spearman(fs[:, g], fh, v) for g in range(p.size)])
        g_b = choose_param(crit, p, 0.0)
        w = bootstrap_counts(ie[s : s + _CHUNK], n)
        rho_c[s : s + len(w)] = weighted_spearman(ec, eh, w)
        for g in np.unique(g_b):
            rows = np.flatnonzero(g_b == g)
            rho_s[s + rows] = weighted_spearman(es[:, g], eh, w[rows])
            r_s[s + rows] = weighted_pearson(es[:, g], eh, w[rows])
        fitted[s : s + len(w)] = p[g_b]
    a = (1 - level) / 2

    def interval(v):
        v = v[np.isfinite(v)]
        return [float(x) for x in np.quantile(v, [a, 1 - a])] if v.size else [float("nan")] * 2

    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(rho_c > 0, rho_s / rho_c - 1.0, np.nan)
    return {"spearman_ci": interval(rho_s), "pearson_ci": interval(r_s), "delta_ci": interval(rho_s - rho_c),
            "relative_ci": interval(rel),
            "param_draws": {"quantiles": [float(x) for x in np.quantile(fitted, [0.025, 0.5, 0.975])],
                            "share_neutral": float(np.mean(fitted == 0.0)), "n": int(n_boot)},
            "resamples": REFIT_RESAMPLES}
