"""Uncertainty of the probe's correlations: a two-stage bootstrap over batches, then items.

Every probe correlation (R vs heat, R vs drift, R_eq vs R, ...) depends on two random samples:
the K probe batches (every item's D1, D2 and ``E||a||^2`` are means over the same K batches) and
the P probe items. Batches and items are *crossed* (each item is measured in every batch), so an
interval that resamples items with the batches held fixed misses the batch-to-batch variability,
which dominates at small K (issue 10: over 4-of-8 subsets of the same batches, Spearman(R, D1)
ranged from 0.02 to 0.51).

Method (:func:`crossed_bootstrap`): each replicate

1. draws K batches with replacement (multinomial counts ``c_k``) and recomputes every item's batch
   means as ``sum_k c_k X_k / sum_k c_k``, then every derived quantity (heat, drift, q, c_fit,
   R_eq) with :func:`~normscope.probes.quantities.item_quantities`;
2. draws P items with replacement and recomputes each correlation on them.

This is the pigeonhole bootstrap for crossed random factors (McCullagh 2000, "Resampling and
exchangeable arrays", Bernoulli 6; Owen 2007, "The pigeonhole bootstrap", Ann. Appl. Stat. 1):
for the grand mean of a K x P array it has exactly the variance
``mean(a_k^2)/K + mean(b_i^2)/P + mean(e_ki^2)/(KP)`` (row, column and interaction effects),
i.e. it includes both sources and is mildly conservative for the interaction term (tested in
``tests/test_probe_uncertainty.py``). It was chosen over a delete-one-batch jackknife because
the statistics are non-linear (ranks, a median-based c_fit, the (E7) root), for which percentile
intervals need no normal approximation, and because a jackknife at K = 8 has only 8 replicates.
Intervals are percentile intervals; eta, lambda and the decay mask are held at the values used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as _sps

from normscope.errors import InputError
from normscope.probes.quantities import item_quantities

__all__ = ["crossed_bootstrap", "percentile_ci", "CorrSpec", "rowwise_correlations", "point_correlations",
           "batch_item_cis",
           "k_convergence", "HEADLINE", "CI_BATCHES_ITEMS", "CI_ITEMS_ONLY"]

#: What the ``ci`` of a probe correlation resamples (written beside every interval).
CI_BATCHES_ITEMS = ("batches and items: two-stage (pigeonhole) bootstrap, K batches with replacement, then P items "
                    "with replacement; percentile interval")
#: What ``ci_items_only`` resamples.
CI_ITEMS_ONLY = "items only: percentile bootstrap of the P items with the K batches held fixed"

#: Headline statistics of ``k_convergence`` and of the report's default sizes.
HEADLINE = ("corr_norm_heat", "corr_norm_drift", "corr_req_norm", "corr_norm_displacement")

#: A correlation of the probe: (key, x column, y column) of :func:`item_quantities`'s output.
CorrSpec = tuple[str, str, str]


def crossed_bootstrap(statistic: Callable[[np.ndarray, np.ndarray], np.ndarray], n_batches: int, n_items: int, *,
                      n_boot: int = 1000, seed: int | None = 0, draw_batches: int | None = None,
                      draw_items: int | None = None, block: int = 250) -> np.ndarray:
    """Two-stage bootstrap of a statistic of a crossed batches x items design.

    Parameters
    ----------
    statistic : callable (counts, idx) -> ndarray of shape (m, s)
        Called on blocks of m replicates: ``counts`` int ndarray of shape (m, K), how often each
        batch was drawn (each row sums to ``draw_batches``); ``idx`` int ndarray of shape
        (m, draw_items), the drawn items of each replicate.
    n_batches, n_items : int
        K and P of the measured design.
    n_boot : int, keyword-only
        Replicates.
    seed : int or None, keyword-only
        Seed of :func:`numpy.random.default_rng`. The stream is: one
        ``multinomial(draw_batches, [1/K] * K, size=n_boot)`` draw, then the item indices as one
        ``integers(0, P, size=(n_boot, draw_items))`` draw (taken in blocks; the result does not
        depend on ``block``).
    draw_batches, draw_items : int, optional, keyword-only
        Batches and items per replicate (default K and P). Smaller values give the sampling
        distribution at a smaller design (an m-out-of-n bootstrap), used to choose default sizes.
    block : int, keyword-only
        Replicates per call of ``statistic`` (memory ~ block x P values per array).

    Returns
    -------
    ndarray of shape (n_boot, s), float64

    Raises
    ------
    InputError
        ``n_batches``, ``n_items``, ``n_boot`` or ``block`` < 1.
    """
    if min(n_batches, n_items, n_boot, block) < 1:
        raise InputError(f"crossed_bootstrap needs n_batches, n_items, n_boot, block >= 1, got {n_batches}, "
                         f"{n_items}, {n_boot}, {block}")
    kb = int(draw_batches or n_batches)
    pi = int(draw_items or n_items)
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(kb, np.full(n_batches, 1.0 / n_batches), size=n_boot)
    out = []
    for s in range(0, n_boot, block):
        idx = rng.integers(0, n_items, size=(min(block, n_boot - s), pi))
        out.append(np.asarray(statistic(counts[s : s + len(idx)], idx), dtype=np.float64).reshape(len(idx), -1))
    return np.vstack(out)


def percentile_ci(samples: np.ndarray, level: float = 0.95) -> list:
    """Percentile interval ``[lo, hi]`` of each column of ``samples`` (n_boot, m), NaN replicates dropped.

    Returns
    -------
    list of [lo, hi] (float, or None where a column has no finite replicate)
    """
    out = []
    for col in np.atleast_2d(samples.T):
        col = col[np.isfinite(col)]
        if col.size == 0:
            out.append([None, None])
            continue
        lo, hi = np.quantile(col, [(1 - level) / 2, (1 + level) / 2])
        out.append([float(lo), float(hi)])
    return out


def _rowwise_pearson_nan(a: np.ndarray, b: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Pearson r of each row of ``a`` and ``b`` over the entries where ``ok``; NaN below 3 or for a constant row."""
    n = ok.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        am = np.where(ok, a, 0.0).sum(axis=-1, keepdims=True) / n[..., None]
        bm = np.where(ok, b, 0.0).sum(axis=-1, keepdims=True) / n[..., None]
        a0 = np.where(ok, a - am, 0.0)
        b0 = np.where(ok, b - bm, 0.0)
        den = np.sqrt((a0 * a0).sum(axis=-1) * (b0 * b0).sum(axis=-1))
        r = (a0 * b0).sum(axis=-1) / den
    return np.where((n >= 3) & (den > 0), r, np.nan)


def rowwise_correlations(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pearson and Spearman of each row of ``x`` and ``y`` (shape (m, n)), on the pairs where both are finite.

    Ranks are average ranks of the jointly finite entries of each row (ties share their mean rank,
    as :func:`scipy.stats.spearmanr`). A row with fewer than 3 such pairs, or a constant side, gives NaN.

    Returns
    -------
    pearson, spearman : ndarray of shape (m,)
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    ok = np.isfinite(x) & np.isfinite(y)
    rx = _sps.rankdata(np.where(ok, x, np.nan), axis=-1, nan_policy="omit")
    ry = _sps.rankdata(np.where(ok, y, np.nan), axis=-1, nan_policy="omit")
    return _rowwise_pearson_nan(x, y, ok), _rowwise_pearson_nan(rx, ry, ok)


def point_correlations(q: dict, specs: Sequence[CorrSpec]) -> np.ndarray:
    """Pearson and Spearman of each correlation in ``specs`` on quantities ``q`` (1-D or replicate rows).

    Returns
    -------
    ndarray of shape (2 * len(specs),) or (m, 2 * len(specs))
        ``[pearson_1, spearman_1, pearson_2, ...]``.
    """
    cols = []
    for _, xk, yk in specs:
        cols += list(rowwise_correlations(q[xk], q[yk]))
    out = np.stack(cols, axis=-1)
    return out[0] if np.ndim(q[specs[0][1]]) == 1 else out


def batch_item_cis(moments, specs: Sequence[CorrSpec], *, eta: float, weight_decay: float | None,
                   without_decay: bool, n_boot: int, seed: int, level: float = 0.95, batches=None) -> dict:
    """Two-stage (batches, then items) percentile CIs of every correlation in ``specs``.

    Parameters
    ----------
    moments : ProbeMoments
    specs : sequence of (key, x, y)
    eta, weight_decay, without_decay
        As for :func:`item_quantities` (held fixed across replicates).
    n_boot, seed : int
    level : float
    batches : ndarray of int, optional
        Use only these batches (rows of the moments); default all K.

    Returns
    -------
    dict
        ``{key: {"pearson": [lo, hi], "spearman": [lo, hi], "n_undefined": int}}``; ``n_undefined``
        counts replicates where the statistic could not be computed (e.g. ``c_fit <= 0``).
    """
    za, zc, aa = moments.za, moments.zc, moments.aa
    if batches is not None:
        za, zc, aa = za[batches], zc[batches], aa[batches]
    k, p = za.shape

    def stat(counts, idx):
        w = counts / counts.sum(axis=1, keepdims=True)
        q = item_quantities(moments.r, w @ za, w @ zc, w @ aa, moments.zjd, eta=eta, weight_decay=weight_decay,
                            without_decay=without_decay, idx=idx)
        return point_correlations(q, specs)

    boot = crossed_bootstrap(stat, k, p, n_boot=n_boot, seed=seed)
    cis = percentile_ci(boot, level)
    out = {}
    for j, (key, _, _) in enumerate(specs):
        out[key] = {"pearson": cis[2 * j], "spearman": cis[2 * j + 1],
                    "n_undefined": int(np.sum(~np.isfinite(boot[:, 2 * j + 1])))}
    return out


def k_convergence(moments, specs: Sequence[CorrSpec], *, eta: float, weight_decay: float | None,
                  without_decay: bool, n_boot: int, seed: int, level: float = 0.95) -> dict:
    """The headline Spearman statistics on the first K/4, K/2 and K batches, each with its two-stage CI.

    Settings with fewer than 2 batches are left out (a batch bootstrap needs two).

    Returns
    -------
    dict
        ``{"method": str, "rows": [{"batches": k, key: {"spearman": rho, "ci": [lo, hi]}, ...}]}``.
    """
    k_all = moments.za.shape[0]
    ks = sorted({k for k in (k_all // 4, k_all // 2, k_all) if k >= 2})
    heads = [s for s in specs if s[0] in HEADLINE]
    rows = []
    for k in ks:
        sel = np.arange(k)
        w = np.full(k, 1.0 / k)
        q = item_quantities(moments.r, w @ moments.za[sel], w @ moments.zc[sel], w @ moments.aa[sel], moments.zjd,
                            eta=eta, weight_decay=weight_decay, without_decay=without_decay)
        est = point_correlations(q, heads)
        cis = batch_item_cis(moments, heads, eta=eta, weight_decay=weight_decay, without_decay=without_decay,
                             n_boot=n_boot, seed=seed, level=level, batches=sel)
        row: dict = {"batches": k}
        for j, (key, _, _) in enumerate(heads):
            rho = est[2 * j + 1]
            row[key] = {"spearman": None if not np.isfinite(rho) else float(rho), "ci": cis[key]["spearman"]}
        rows.append(row)
    return {"method": f"the first K/4, K/2 and K batches of this run (nested); Spearman rho with its {level:.0%} CI "
                      f"over {CI_BATCHES_ITEMS.split(':')[0]}",
            "rows": rows}
