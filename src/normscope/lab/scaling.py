"""Scaling of the stationary norm with the weight decay lambda, a check that needs no probe.

At a balance ``q(R) = c`` (E9) with drift D~ and heat Sigma^2 held fixed (A5), ``c = eta lambda_rad``
and the heat share ``h = rho_H / c``, differentiating ``q = D~/R^2 + Sigma^2/(2 R^4)`` gives

    d log R_eq / d log c = -1 / (2 rho_D/c + 4 h) = -1 / (2 (1 + h))       (at q = c)

so at fixed eta the stationary norm scales as ``lambda^(-1/(2(1+h)))``: ``-1/4`` for a free vector
(heat-dominated, h = 1; docs/theory.md section 4, the free-table simulation gives -0.264), ``-1/2``
when outward drift dominates (h -> 0), and flatter when inward drift cancels heat (h > 1). Under
AdamW it is R^2, not R^4, that scales as eta/lambda: ``-1/2`` (docs/theory.md C3, -0.525 in the
simulation; the rotational equilibrium of Kosson et al. 2024, "Rotational equilibrium: how weight
decay balances learning across neural networks", ICML). With no decay the SGD norm of a free vector
can only grow (E1 with lambda = 0; Draganov et al. 2025).

:func:`predicted_exponent` states the prediction from a run's measured heat share;
:func:`lambda_scaling_fit` measures the slope of log R-bar on log lambda over runs at several lambda
with a CI over probe items and time blocks of each run's window.
"""

from __future__ import annotations

import numpy as np

from normscope.errors import InputError

__all__ = ["predicted_exponent", "lambda_scaling_fit", "growth_without_decay"]


def predicted_exponent(optimizer: str, heat_share: float | None) -> dict:
    """The predicted slope of log R on log lambda at fixed eta, stated before the slope is measured.

    Parameters
    ----------
    optimizer : {"sgd", "momentum", "adamw"}
    heat_share : float or None
        The base run's measured heat share h = Sigma^2 / (2 R^4 c) (E9; median over probe items of
        the trajectory estimator, the optimizer's actual steps, so (E12) is included for momentum).

    Returns
    -------
    dict
        ``exponent`` (float or None), ``heat_share``, ``basis`` (the formula and its source) and
        ``free_vector`` (the heat-dominated value the simulation reproduces).
    """
    if optimizer == "adamw":
        return {"exponent": -0.5, "heat_share": heat_share, "free_vector": -0.5,
                "basis": "AdamW: R^2 ~ eta/lambda (docs/theory.md C3, simulation -0.525; Kosson et al. 2024)"}
    if heat_share is None or not np.isfinite(heat_share) or heat_share <= -1:
        return {"exponent": None, "heat_share": heat_share, "free_vector": -0.25,
                "basis": "-1/(2(1+h)) needs a measured heat share h > -1"}
    h = float(heat_share)
    return {"exponent": -1.0 / (2.0 * (1.0 + h)), "heat_share": h, "free_vector": -0.25,
            "basis": f"-1/(2(1+h)) at the balance q = c (E9) with the measured heat share h = {h:.3g}, drift and "
                     "heat held fixed (A5); -1/4 for a free vector (h = 1, docs/theory.md section 4)"}


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """OLS slopes of the rows of ``y`` (m, J) on ``x`` (J,)."""
    xc = x - x.mean()
    return (y - y.mean(axis=-1, keepdims=True)) @ xc / float(xc @ xc)


def lambda_scaling_fit(lambdas, blocks, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Slope of log R-bar on log lambda over runs at several lambda, with a bootstrap CI.

    Each run's window is cut into time blocks; ``R-bar_i = sqrt(mean over blocks of the block-mean
    R^2)`` per probe item, and the statistic is the OLS slope of ``mean_i log R-bar_i`` (the same
    probe items in every run) on ``log lambda``.

    Parameters
    ----------
    lambdas : array_like of shape (J,)
        Weight decays (> 0, at least 2 distinct values).
    blocks : sequence of J arrays of shape (n_j, P)
        Block-mean R^2 of the P probe items in ``n_j`` consecutive time blocks of each run's window
        (same items, same order, in every run).
    n_boot : int
        Bootstrap replicates: each draws P items with replacement (the same items for every lambda:
        paired) and, independently for every run, ``n_j`` blocks with replacement.
    seed : int
    level : float

    Returns
    -------
    dict
        ``slope``, ``ci`` ([lo, hi], percentile), ``intercept``, ``log_lambda``, ``mean_log_r`` per run,
        ``per_item_slope`` (median and IQR over items), ``n_items``, ``n_blocks``, ``resamples``.

    Raises
    ------
    InputError
        Fewer than 2 distinct lambdas, non-positive lambda, mismatched item counts, or a block
        array with no finite positive value.
    """
    lam = np.asarray(lambdas, dtype=float)
    if lam.ndim != 1 or np.unique(lam).size < 2 or np.any(lam <= 0):
        raise InputError(f"lambda scaling needs at least 2 distinct positive lambdas, got {lam.tolist()}")
    if len(blocks) != lam.size:
        raise InputError(f"{len(blocks)} block arrays for {lam.size} lambdas")
    bl = [np.atleast_2d(np.asarray(b, dtype=float)) for b in blocks]
    p = bl[0].shape[1]
    if any(b.shape[1] != p for b in bl) or any(not (np.isfinite(b).all() and (b > 0).all()) for b in bl):
        raise InputError("every run needs finite positive block-mean R^2 for the same probe items")
    x = np.log(lam)
    log_r = np.stack([0.5 * np.log(b.mean(axis=0)) for b in bl], axis=1)  # (P, J)
    y = log_r.mean(axis=0)
    slope = float(_slope(x, y[None, :])[0])
    intercept = float(y.mean() - slope * x.mean())
    per_item = _slope(x, log_r)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, p, size=(n_boot, p))
    boot_y = np.empty((n_boot, lam.size))
    for j, b in enumerate(bl):
        bi = rng.integers(0, b.shape[0], size=(n_boot, b.shape[0]))
        r2 = b[bi].mean(axis=1)  # (n_boot, P): block-bootstrap mean R^2 per item
        boot_y[:, j] = 0.5 * np.log(np.take_along_axis(r2, idx, axis=1)).mean(axis=1)
    boot = _slope(x, boot_y)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return {"slope": slope, "ci": [float(lo), float(hi)], "intercept": intercept, "log_lambda": x.tolist(),
            "mean_log_r": y.tolist(), "per_item_slope": {"median": float(np.median(per_item)),
                                                         "iqr": [float(q) for q in np.quantile(per_item, [0.25, 0.75])]},
            "n_items": int(p), "n_blocks": [int(b.shape[0]) for b in bl], "n_boot": int(n_boot),
            "resamples": "probe items (paired across lambdas) and, per run, time blocks of its window; percentile"}


def growth_without_decay(r2, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """How the probe items' norms changed over a run without decay (SGD, lambda = 0).

    Parameters
    ----------
    r2 : array_like of shape (n, P)
        R^2 of the P probe items at n tracked steps in time order (n >= 4).

    Returns
    -------
    dict
        ``ratio`` (mean over items of R_end / R_start, each the RMS over the first and last quarter of
        the tracked steps) with a bootstrap CI over items, ``fraction_grew`` (items whose norm grew),
        ``mean_r2_start`` / ``mean_r2_end``, and ``grew`` (the CI of the ratio lies above 1).
    """
    r2 = np.atleast_2d(np.asarray(r2, dtype=float))
    n, p = r2.shape
    if n < 4:
        raise InputError(f"the no-decay check needs at least 4 tracked steps, got {n}")
    q = max(1, n // 4)
    ratio_i = np.sqrt(r2[-q:].mean(axis=0) / r2[:q].mean(axis=0))
    rng = np.random.default_rng(seed)
    boot = ratio_i[rng.integers(0, p, size=(n_boot, p))].mean(axis=1)
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return {"ratio": float(ratio_i.mean()), "ci": [float(lo), float(hi)], "fraction_grew": float(np.mean(ratio_i > 1)),
            "mean_r2_start": float(r2[:q].mean()), "mean_r2_end": float(r2[-q:].mean()), "grew": bool(lo > 1),
            "n_items": int(p), "resamples": "probe items; percentile"}
