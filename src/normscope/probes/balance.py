"""Theorem 1's own requirement on a probed checkpoint: one decay rate balances every item (docs/theory.md (E9)).

At equilibrium each item's implied decay ``q(x) = D~/R^2 + Sigma^2/(2 R^4)`` (E9) equals the decay
per step ``c`` (``eta lambda_rad``), the same for every item of a k-homogeneous encoder. With no
known decay, ``c`` is fitted as ``c_fit = median q`` (docs/theory.md section 6, step 6(ii)). The
statistics of :func:`balance_test`:

- ``dispersion``: ``mean_x |q(x)/c_fit - 1|``, 0 when the theorem holds exactly (the primary
  statistic: it is defined for every item, also where ``q < 0``);
- ``share_negative_q``: the share of items with ``q < 0`` (no positive decay can balance them);
- ``mean_abs_rel_error``: ``mean |R_eq(x; c_fit) - R| / R`` over the items with an (E7) root;
- ``heat_share``: the median share of heat in the balance, ``rho_H / (|rho_D| + rho_H)`` with
  ``rho_H = Sigma^2/(2R^4)`` and ``rho_D = D~/R^2``. When it is negligible, R_eq ranks the items
  as drift does, so a rank correlation of R_eq with R is the drift correlation again.

**Permutation null.** The R-free per-item statistics (the radial displacements per unit norm
``E<u, a>`` and ``E<u, c>`` and the displacement ``E||a||^2``) are shuffled jointly across items
while every item keeps its own R; q, c_fit and R_eq are recomputed. This is the distribution of
each statistic when an item's norm has nothing to do with its own training motion. The one-sided
p-values ``(1 + #{T* <= T}) / (n_perm + 1)`` (below the null: closer to the theorem than chance)
and ``(1 + #{T* >= T}) / (n_perm + 1)`` decide the direction (Phipson & Smyth 2010).

**CI.** The two-stage bootstrap over batches then items of :mod:`normscope.probes.uncertainty`
(every replicate recomputes q and c_fit), percentile intervals.
"""

from __future__ import annotations

import numpy as np

from normscope.probes.quantities import item_quantities
from normscope.probes.uncertainty import CI_BATCHES_ITEMS, crossed_bootstrap, percentile_ci

__all__ = ["balance_test", "balance_statistics", "STATISTICS"]

#: The statistics of :func:`balance_test`, in column order of :func:`balance_statistics`.
STATISTICS: tuple[str, ...] = ("dispersion", "share_negative_q", "mean_abs_rel_error", "heat_share")


def balance_statistics(q: dict) -> np.ndarray:
    """The :data:`STATISTICS` of quantities ``q`` (:func:`item_quantities` output, 1-D or replicate rows).

    Returns
    -------
    ndarray of shape (4,) or (m, 4), float64
        NaN where undefined (``c_fit <= 0``: no dispersion; no item with a root: no error).
    """
    r, qq = np.asarray(q["r"], dtype=float), np.asarray(q["q"], dtype=float)
    c = np.atleast_1d(np.asarray(q["c_fit"], dtype=float))
    if qq.ndim == 1:
        c = c[:1]
    c_col = c[:, None] if qq.ndim == 2 else c
    with np.errstate(divide="ignore", invalid="ignore"):
        disp = np.where(c > 0, np.mean(np.abs(qq / np.where(c_col > 0, c_col, np.nan) - 1.0), axis=-1), np.nan)
        neg = np.mean(qq < 0, axis=-1)
        rel = np.abs(np.asarray(q["r_eq_cfit"], dtype=float) - r) / r
        fin = np.isfinite(rel)
        cnt = fin.sum(axis=-1)
        err = np.where(cnt > 0, np.where(fin, rel, 0.0).sum(axis=-1) / np.maximum(cnt, 1), np.nan)
        r2 = r * r
        rho_h = np.asarray(q["heat"], dtype=float) / (2.0 * r2 * r2)
        rho_d = np.asarray(q["drift"], dtype=float) / r2
        share = np.nanmedian(rho_h / (np.abs(rho_d) + rho_h), axis=-1)
    out = np.stack(np.broadcast_arrays(disp, neg, err, share), axis=-1).astype(np.float64)
    return out[0] if qq.ndim == 1 else out


def balance_test(moments, *, eta: float, n_perm: int = 1000, n_boot: int = 1000, seed: int = 0,
                 block: int = 250) -> dict:
    """Theorem 1's requirement ``q(x) = c`` for every probe item, against a permutation null.

    Parameters
    ----------
    moments : ProbeMoments
        The probe's per-batch quantities (``r``, ``za``, ``zc``, ``aa``, ``zjd``).
    eta : float
        The learning rate the probe used (held fixed).
    n_perm : int, keyword-only
        Permutations of the R-free statistics across items (0: no test).
    n_boot : int, keyword-only
        Replicates of the two-stage bootstrap CIs (0: none).
    seed : int, keyword-only
        Seeds the permutations (``default_rng([seed, 1])``) and the bootstrap (``seed``).
    block : int, keyword-only
        Permutations per vectorised block (memory ~ block x P values per array).

    Returns
    -------
    dict
        ``statistics`` (name -> value), ``ci`` (name -> [lo, hi]), ``null`` (name -> ``{"mean",
        "range"}``: mean and 2.5-97.5 % quantiles under the permutation null), ``p_below`` /
        ``p_above`` (name -> one-sided permutation p), ``n_perm``, ``n_boot``, ``n_items``,
        ``c_fit``, ``c``, ``primary`` (``"dispersion"``), ``method`` and ``ci_resamples`` (what the
        CIs resample).
    """
    r = np.asarray(moments.r, dtype=float)
    za, zc, aa = (np.asarray(a, dtype=float) for a in (moments.za, moments.zc, moments.aa))
    k, p = za.shape
    d1, d2, a2 = za.mean(axis=0), zc.mean(axis=0), aa.mean(axis=0)
    q = item_quantities(r, d1, d2, a2, moments.zjd, eta=eta)
    obs = balance_statistics(q)
    out: dict = {
        "primary": "dispersion", "n_items": int(p), "c": "c_fit = median q over the probe items (one fitted decay)",
        "c_fit": float(q["c_fit"]) if np.isfinite(q["c_fit"]) else None,
        "statistics": {s: (float(v) if np.isfinite(v) else None) for s, v in zip(STATISTICS, obs)},
        "method": ("permutation null: the R-free statistics E<u,a>, E<u,c> and E||a||^2 shuffled jointly across items, "
                   "each item keeping its own R; q, c_fit and R_eq recomputed per permutation; one-sided p = "
                   "(1 + #{T* <= T}) / (n_perm + 1) below, (1 + #{T* >= T}) / (n_perm + 1) above"),
        "ci_resamples": CI_BATCHES_ITEMS, "n_perm": int(n_perm), "n_boot": int(n_boot),
    }
    if n_perm > 0:
        u1, u2 = d1 / r, d2 / r  # radial displacement per unit norm: R-free
        rng = np.random.default_rng([int(seed), 1])
        null = []
        for s in range(0, n_perm, block):
            m = min(block, n_perm - s)
            pi = rng.permuted(np.tile(np.arange(p), (m, 1)), axis=1)
            qp = item_quantities(r, r * u1[pi], r * u2[pi], a2[pi], moments.zjd, eta=eta)
            null.append(balance_statistics(qp))
        null = np.vstack(null)
        out["null"], out["p_below"], out["p_above"] = {}, {}, {}
        for j, s in enumerate(STATISTICS):
            col, t = null[:, j], obs[j]
            ok = np.isfinite(col)
            if not np.isfinite(t) or not ok.any():
                out["null"][s], out["p_below"][s], out["p_above"][s] = None, None, None
                continue
            tol = 1e-12 * max(abs(t), 1.0)
            out["null"][s] = {"mean": float(col[ok].mean()),
                              "range": [float(x) for x in np.quantile(col[ok], [0.025, 0.975])]}
            out["p_below"][s] = float((1 + np.sum(col[ok] <= t + tol)) / (ok.sum() + 1))
            out["p_above"][s] = float((1 + np.sum(col[ok] >= t - tol)) / (ok.sum() + 1))
    if n_boot > 0 and k >= 2:
        def stat(counts, idx):
            w = counts / counts.sum(axis=1, keepdims=True)
            qb = item_quantities(r, w @ za, w @ zc, w @ aa, moments.zjd, eta=eta, idx=idx)
            return balance_statistics(qb)

        boot = crossed_bootstrap(stat, k, p, n_boot=n_boot, seed=seed)
        out["ci"] = dict(zip(STATISTICS, percentile_ci(boot)))
    else:
        out["ci"] = {s: [None, None] for s in STATISTICS}
    return out
