"""The trajectory estimator of a tracked training run (docs/theory.md sections 2, 4, 6), in numpy.

A tracked run records, for every probe item x and every step t (``z_t = f_{theta_t}(x)``):

- ``r2[t] = R_t^2`` for ``t = 0..T``;
- the decay-free step ``Delta_t = f_{theta_t - eta s_t}(x) - z_t`` (``s_t`` the optimizer's actual
  direction) through ``zd[t] = <z_t, Delta_t>`` and ``dd[t] = ||Delta_t||^2``;
- the decay's radial effect ``dec[t] = R_{t+1}^2 - ||z_t + Delta_t||^2``, exact, so that
  ``R_{t+1}^2 - R_t^2 = 2 zd[t] + dd[t] + dec[t]``.

Over a window ``t0 <= t < T`` (W steps) the estimator gives per item (the trajectory form: every
actual step is a probe with K = 1)

- drift ``D~ = <zd>_t`` and heat ``Sigma^2 = <R^2>_t <dd>_t`` (E6);
- ``q = D~/<R^2> + Sigma^2/(2 <R^2>^2)`` (E9, :func:`normscope.theory.implied_decay` at
  ``R = sqrt(<R^2>)``);
- ``c = eta lambda_rad`` (first-order row of the section-4 table, lambda_rad from (E4)) and q/c;
- the realised decay rate ``c_real = -<dec>_t / (2 <R^2>)``; by telescoping, exactly
  ``q - c_real = (R_T^2 - R_t0^2) / (2 W <R^2>)``: q/c_real = 1 is stationarity, and c_real/c
  checks the first-order decay rate (E4) against the decay's measured effect;
- ``R_eq`` of the window from (E7) with these D~, Sigma^2 and c.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from normscope import theory
from normscope.errors import InputError

__all__ = ["TrajectoryRecord", "trajectory_estimates", "motion"]


@dataclass
class TrajectoryRecord:
    """Per-step, per-item quantities recorded by a tracked run (float64 arrays).

    Attributes
    ----------
    r2 : ndarray of shape (T + 1, P)
        ``R_t^2`` before step t (row T: after the last step).
    zd, dd, dec : ndarray of shape (T, P)
        ``<z_t, Delta_t>``, ``||Delta_t||^2`` and ``R_{t+1}^2 - ||z_t + Delta_t||^2`` (units R^2).
    loss : ndarray of shape (T,)
        Training loss of each step.
    lam_steps : ndarray of shape (L,), int
        Steps at which lambda_rad per unit lambda was measured (E4).
    lam : ndarray of shape (L, P)
        ``<z, J_x theta_D> / R^2`` at those steps (lambda_rad / lambda).
    batches : ndarray of shape (T, B), int
        Pair indices of each training batch.
    """

    r2: np.ndarray
    zd: np.ndarray
    dd: np.ndarray
    dec: np.ndarray
    loss: np.ndarray
    lam_steps: np.ndarray
    lam: np.ndarray
    batches: np.ndarray

    @property
    def steps(self) -> int:
        return int(self.zd.shape[0])

    def take(self, order) -> TrajectoryRecord:
        """The record with its probe items (columns) reordered by ``order``."""
        o = np.asarray(order)
        return TrajectoryRecord(self.r2[:, o], self.zd[:, o], self.dd[:, o], self.dec[:, o], self.loss,
                                self.lam_steps, self.lam[:, o], self.batches)


def trajectory_estimates(rec: TrajectoryRecord, *, eta: float, weight_decay: float, burn_in: int) -> dict:
    """Per-item heat, drift, q, c, q/c, realised decay and R_eq over the window ``burn_in <= t < T``.

    Parameters
    ----------
    rec : TrajectoryRecord
    eta : float
        Learning rate (the decay-free probe step is the actual step ``eta s_t``).
    weight_decay : float
        lambda; ``lambda_rad = lambda * mean over the window's E4 measurements`` (all of them
        when none falls in the window).
    burn_in : int
        First step of the window (0 <= burn_in < T).

    Returns
    -------
    dict of ndarray of shape (P,)
        ``r_window`` (time-RMS R over the window, ``sqrt(<R^2>)``), ``drift``, ``heat``, ``q``,
        ``lambda_rad``, ``c``, ``q_over_c``, ``c_realised``, ``q_over_c_realised``, ``r_eq``
        (E7 with c; NaN where c <= 0), ``heat_share`` (``Sigma^2/(2 <R^2>^2 c)``, h of E9).

    Raises
    ------
    InputError
        ``burn_in`` outside ``[0, T)``.
    """
    t_all = rec.steps
    if not 0 <= burn_in < t_all:
        raise InputError(f"burn_in must be in [0, {t_all}), got {burn_in}")
    w = slice(burn_in, t_all)
    r2m = rec.r2[w].mean(axis=0)  # <R^2> over the window's step starts t0..T-1
    drift = rec.zd[w].mean(axis=0)
    heat = r2m * rec.dd[w].mean(axis=0)
    r_win = np.sqrt(r2m)
    q = theory.implied_decay(drift, heat, r_win)
    in_win = (rec.lam_steps >= burn_in) & (rec.lam_steps <= t_all)
    lam_rows = rec.lam[in_win] if in_win.any() else rec.lam
    lam_rad = float(weight_decay) * lam_rows.mean(axis=0)
    c = float(eta) * lam_rad
    with np.errstate(divide="ignore", invalid="ignore"):
        q_over_c = np.where(c > 0, q / c, np.nan)
        c_real = -rec.dec[w].mean(axis=0) / (2.0 * r2m)
        q_over_c_real = np.where(c_real > 0, q / c_real, np.nan)
        heat_share = np.where(c > 0, heat / (2.0 * r2m**2 * c), np.nan)
    r_eq = theory.equilibrium_radius(drift, heat, c=np.where(c > 0, c, np.nan))
    return {"r_window": r_win, "drift": drift, "heat": heat, "q": q, "lambda_rad": lam_rad, "c": c,
            "q_over_c": q_over_c, "c_realised": c_real, "q_over_c_realised": q_over_c_real, "r_eq": r_eq,
            "heat_share": heat_share}


def motion(r0: np.ndarray, r_final: np.ndarray, r_eq0: np.ndarray) -> dict:
    """How each item's norm moved relative to its predicted R_eq.

    Parameters
    ----------
    r0, r_final, r_eq0 : ndarray of shape (P,)
        Norm at step 0, at the end, and the step-0 prediction (NaN where none).

    Returns
    -------
    dict of ndarray of shape (P,)
        ``predicted_change = r_eq0 - r0``, ``moved = r_final - r0``, ``toward`` (1.0 when the norm
        moved in the predicted direction, 0.0 when against it, NaN without a prediction or when
        either change is exactly 0), ``fraction_of_distance = moved / predicted_change`` (1 = arrived,
        > 1 overshot, < 0 moved away).
    """
    r0 = np.asarray(r0, dtype=float)
    pred = np.asarray(r_eq0, dtype=float) - r0
    moved = np.asarray(r_final, dtype=float) - r0
    ok = np.isfinite(pred) & (pred != 0) & (moved != 0)
    toward = np.where(ok, (np.sign(pred) == np.sign(moved)).astype(float), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(np.isfinite(pred) & (pred != 0), moved / pred, np.nan)
    return {"predicted_change": pred, "moved": moved, "toward": toward, "fraction_of_distance": frac}
