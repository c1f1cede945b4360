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

_CHUNK = 64


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


class _Ranking:
    """The sort of one score vector (its order and tie groups), reused for every resample's average ranks."""

    def __init__(self, x: np.ndarray):
        self.order = np.argsort(x, kind="stable")
        xs = x[self.order]
        new = np.r_[True, xs[1:] != xs[:-1]]
        self.starts = np.flatnonzero(new)
        self.grp = np.cumsum(new) - 1
        self.ties = self.starts.size < x.size

    def sorted_counts(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts in sorted order (B, n), counts per tie group (B, k), average rank of each group (B, k))."""
        ws = np.take(w, self.order, axis=1)
        gs = np.add.reduceat(ws, self.starts, axis=1) if self.ties else ws
        return ws, gs, np.cumsum(gs, axis=1) - (gs - 1) / 2

    def ranks(self, w: np.ndarray) -> np.ndarray:
        """Average ranks (1-based, ties averaged) each item has in the resample of counts ``w``, (B, n)."""
        _, _, avg = self.sorted_counts(w)
        out = np.empty_like(w)
        out[:, self.order] = np.take(avg, self.grp, axis=1)
        return out

    def rho(self, w: np.ndarray, wry: np.ndarray, syy: np.ndarray) -> np.ndarray:
        """Spearman rho of this vector with another whose resample ranks are ``ry`` (B, n, original order), given
        ``wry = w * ry`` and ``syy = sum w ry**2``. Average ranks of N values sum to N(N + 1)/2, so both weighted
        means are (N + 1)/2."""
        _, gs, avg = self.sorted_counts(w)
        tot = w.sum(axis=1)
        c2 = tot * ((tot + 1) / 2) ** 2
        wry_s = np.take(wry, self.order, axis=1)
        sxy = (avg * (np.add.reduceat(wry_s, self.starts, axis=1) if self.ties else wry_s)).sum(axis=1)
        vx, vy = (gs * avg * avg).sum(axis=1) - c2, syy - c2
        tiny = 1e-9 * c2
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (sxy - c2) / np.sqrt(vx * vy)
        return np.where((vx <= tiny) | (vy <= tiny), np.nan, r)


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
    wry = w * _Ranking(y).ranks(w)
    return _Ranking(x).rho(w, wry, (wry * wry / np.where(w > 0, w, 1)).sum(axis=1))


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
    fit_rank = [_Ranking(fs[:, g]) for g in range(p.size)]
    ev_rank = {}
    fh_rank, eh_rank, ec_rank = _Ranking(fh), _Ranking(eh), _Ranking(ec)
    for s in range(0, n_boot, _CHUNK):
        v = bootstrap_counts(jf[s : s + _CHUNK], m)
        wrh = v * fh_rank.ranks(v)
        syy = (wrh * fh_rank.ranks(v)).sum(axis=1)
        g_b = choose_param(np.column_stack([fr.rho(v, wrh, syy) for fr in fit_rank]), p, 0.0)
        w = bootstrap_counts(ie[s : s + _CHUNK], n)
        rh = eh_rank.ranks(w)
        wrh, syy = w * rh, (w * rh * rh).sum(axis=1)
        rho_c[s : s + len(w)] = ec_rank.rho(w, wrh, syy)
        for g in np.unique(g_b):
            rows = np.flatnonzero(g_b == g)
            er = ev_rank.setdefault(int(g), _Ranking(es[:, g]))
            rho_s[s + rows] = er.rho(w[rows], wrh[rows], syy[rows])
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
