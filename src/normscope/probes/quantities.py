"""Per-item quantities of the probe from per-item batch means: (E4), (E7), (E8), (E9).

:func:`item_quantities` is the one place where heat, drift, q, c_fit and the three readings of
R_eq are computed; the point estimates (:mod:`normscope.probes.summary`) and every bootstrap
replicate (:mod:`normscope.probes.uncertainty`) call it, so a resample recomputes exactly what the
summary reports. It is pure numpy and works on any subset of items (``idx``), in the order given.

Which items have an R_eq: the root of (E7) ``2 c R^4 - 2 D~ R^2 - Sigma^2 = 0`` is positive and
unique for every item whenever ``c > 0`` and ``Sigma^2 > 0``, also for inward drift (docs/theory.md
section 4); an item is left out only where the root is undefined, and its flag says why:

- ``r_eq_cfit`` (one fitted ``c = c_fit = median q``): undefined for every item when ``c_fit <= 0``;
- ``r_eq`` (``c = eta lambda_rad(x)``): undefined where ``lambda_rad(x) <= 0`` (decay does not pull
  the norm in, no stable root);
- ``r_eq_nodecay`` (``c = 0``, a checkpoint trained without decay): ``R^2 = Sigma^2 / (2|D~|)``,
  defined only for inward drift ``D~ < 0`` (docs/theory.md section 8).
"""

from __future__ import annotations

import numpy as np

from normscope import theory

__all__ = ["item_quantities", "FLAG_CFIT", "FLAG_LAMBDA", "FLAG_NO_LAMBDA", "FLAG_OUTWARD"]

#: Flags saying why an R_eq is undefined (empty string: defined).
FLAG_CFIT = "c_fit<=0"
FLAG_LAMBDA = "lambda_rad<=0"
FLAG_NO_LAMBDA = "no lambda"
FLAG_OUTWARD = "drift>=0 (no decay)"


def _gather(a: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``a[..., idx]`` with one row of ``idx`` per row of ``a`` when both are 2-D."""
    if a.ndim == 2 and idx.ndim == 2:
        return np.take_along_axis(a, idx, axis=-1)
    return a[..., idx]


def item_quantities(r, d1, d2, aa, zjd, *, eta: float, weight_decay: float | None = None,
                    without_decay: bool = False, idx=None) -> dict:
    """Heat, drift, q, c_fit and R_eq of each item from its batch means.

    Every input may carry leading replicate rows: ``d1, d2, aa`` of shape (m, P) are m sets of
    batch means (bootstrap replicates), computed row by row (``c_fit`` per row).

    Parameters
    ----------
    r : ndarray of shape (P,)
        Observed norm R (> 0).
    d1, d2 : ndarray of shape (P,) or (m, P)
        Batch means ``E<z, a>`` and ``E<z, c>`` (per unit eta, (E8)).
    aa : ndarray of shape (P,) or (m, P)
        Batch mean ``E||a||^2`` (the R-free displacement).
    zjd : ndarray of shape (P,)
        ``<z, J_x theta_D>``; ``lambda_rad = lambda zjd / R^2`` (E4).
    eta : float
        Learning rate.
    weight_decay : float or None, keyword-only
        lambda for lambda_rad, q/c and ``r_eq``; None leaves them NaN (flag ``no lambda``).
    without_decay : bool, keyword-only
        Add ``r_eq_nodecay`` (c = 0) for a checkpoint trained without decay.
    idx : ndarray of int of shape (P',) or (m, P'), optional, keyword-only
        Compute for these items only, in this order (repeats allowed: a bootstrap resample, one
        row per replicate); ``c_fit`` is then the median q of these items.

    Returns
    -------
    dict of str -> ndarray of shape (P',) or (m, P'), plus ``c_fit`` (float, or ndarray (m,))
        ``r, d1, d2, s, displacement, heat_rate, heat, drift, q, c_fit, r_eq_cfit, r_eq_cfit_flag,
        lambda_rad_per_lambda, lambda_rad, q_over_c, r_eq, r_eq_flag`` and, with ``without_decay``,
        ``r_eq_nodecay, r_eq_nodecay_flag``. Units: R in ||z||, heat in R^4 per step, drift in
        R^2 per step, q and c per step.
    """
    d1, d2, aa = np.asarray(d1, dtype=float), np.asarray(d2, dtype=float), np.asarray(aa, dtype=float)
    rows = max(d1.ndim, np.ndim(idx) if idx is not None else 1) == 2
    r, zjd = np.asarray(r, dtype=float), np.asarray(zjd, dtype=float)
    if idx is not None:
        idx = np.asarray(idx)
        r, zjd = r[idx], zjd[idx]
        d1, d2, aa = (_gather(a, idx) for a in (d1, d2, aa))
    r2 = r * r
    s = r2 * aa
    heat = eta**2 * s
    drift = eta * d1 + eta**2 * d2
    q = drift / r2 + heat / (2.0 * r2 * r2)
    with np.errstate(all="ignore"):
        c_fit = np.nanmedian(np.where(np.isfinite(q), q, np.nan), axis=-1)  # NaN only when no finite q
    c_col = c_fit[..., None] if rows else c_fit
    ok = np.broadcast_to(c_col > 0, q.shape)
    r_eq_cfit = np.where(ok, theory.equilibrium_radius(drift, heat, c=np.where(c_col > 0, c_col, np.nan)), np.nan)
    cfit_flag = np.where(ok, np.where(np.isfinite(r_eq_cfit), "", "non-finite"), FLAG_CFIT)
    c_fit = c_fit if rows else float(c_fit)
    n = q.shape
    lam_per = zjd / r2
    out = {
        "r": np.broadcast_to(r, n), "d1": d1, "d2": d2, "s": s, "displacement": aa, "heat_rate": s / (r2 * r2),
        "heat": heat, "drift": drift, "q": q, "c_fit": c_fit, "r_eq_cfit": r_eq_cfit, "r_eq_cfit_flag": cfit_flag,
        "lambda_rad_per_lambda": np.broadcast_to(lam_per, n),
    }
    if weight_decay is not None:
        lam_rad = float(weight_decay) * lam_per
        c_item = eta * lam_rad
        pos = c_item > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            out["q_over_c"] = np.where(pos, q / np.where(pos, c_item, 1.0), np.nan)
        r_eq = theory.equilibrium_radius(drift, heat, c=np.where(pos, c_item, np.nan))
        out.update(lambda_rad=np.broadcast_to(lam_rad, n), r_eq=np.where(pos, r_eq, np.nan),
                   r_eq_flag=np.broadcast_to(np.where(pos, "", FLAG_LAMBDA), n))
    else:
        out.update(lambda_rad=np.full(n, np.nan), q_over_c=np.full(n, np.nan), r_eq=np.full(n, np.nan),
                   r_eq_flag=np.full(n, FLAG_NO_LAMBDA))
    if without_decay:
        inward = drift < 0
        r0 = theory.equilibrium_radius(drift, heat, c=0.0)  # sqrt(Sigma^2 / (2|D~|)) for D~ < 0, inf otherwise
        out.update(r_eq_nodecay=np.where(inward, r0, np.nan), r_eq_nodecay_flag=np.where(inward, "", FLAG_OUTWARD))
    return out
