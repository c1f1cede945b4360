"""The decayed scale of the decisive design: theta_D is a free vector, so (E1) and (E2) hold for it exactly.

The design decays only theta_D = the gain and bias of the encoder's last LayerNorm. The pooled
embedding is ``z = mean_t(gamma * n_t) + beta`` with ``n_t`` normalised, so z is linear in theta_D and
the cosine InfoNCE loss is exactly invariant to the scale ``s = ||theta_D||``. Every item's output norm
is therefore ``R(x) = s rho(x)``: one shared decayed scale times a geometric factor set by the
undecayed weights (issue 35). For theta_D the theorem's conditions hold exactly:

- **(E1), every step.** ``<theta_D, g_D> = 0`` for every batch (A1), so under SGD
  ``||theta+||^2 = (1 - eta lambda)^2 ||theta||^2 + eta^2 ||g_D||^2`` with no first-order radial term.
  The run records ``||theta_D||^2``, ``||g_D||^2``, ``<theta_D, g_D>``, the actual direction's
  ``||s_D||^2`` and ``<theta_D, s_D>`` and the norm after the update
  (:mod:`normscope.lab.decisive_run`), so the cosine of theta_D and g_D and the residual of the exact
  step are measured, not assumed.
- **(E2), no fitted constant.** On a stationary window ``2c <s^2> = eta^2 <||g_D||^2>`` (the
  trajectory form, docs/theory.md section 2), and with the R-free heat ``gamma^2 = ||g_D||^2 s^2``
  ``s_eq^4 = eta^2 <gamma^2> / (2c)``, ``2c = 1 - (1 - eta lambda)^2``; heavy ball with decay outside the
  buffer divides the heat by ``(1 - beta)^2`` (E12). AdamW is not the SGD form: its SGD-form prediction
  is reported as the control that must fail.

:func:`scale_summary` computes these over a run's window with a CI over time blocks of the window
(the blocks are resampled with replacement; with one seed no between-seed variation is included, and
the summary says so). :func:`scale_stationarity` labels the window of s^2 with the 3 % rule of
:mod:`normscope.lab.stationarity`.
"""

from __future__ import annotations

import math

import numpy as np

from normscope.lab.stationarity import MIN_RELAXATIONS, STATIONARITY_TOL

__all__ = ["scale_summary", "scale_over_seeds", "scale_stationarity", "scale_blocks", "scale_growth", "window_blocks", "SCALE_BLOCKS",
           "SCALE_EXPONENTS", "THETA_D_COLUMNS"]

#: columns of a run's ``theta_d`` record (one row per step, float64)
THETA_D_COLUMNS = ("theta2", "g2", "theta_g", "s2", "theta_s", "theta2_next")
#: time blocks of a window for the scale's CI
SCALE_BLOCKS = 16
#: the slope of log s on log lambda at fixed eta, stated before the scaled runs: the free-vector (E2) form
#: s^4 = eta^2 gamma^2 / (2 eta lambda) gives -1/4 (SGD; heavy ball with (E12), decay outside the buffer), AdamW's
#: s^2 = eta ||u||^2 / (2 lambda) gives -1/2 (docs/theory.md C3; Kosson et al. 2024)
SCALE_EXPONENTS = {"sgd": -0.25, "momentum": -0.25, "adamw": -0.5}


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def window_blocks(window_steps: int, relaxation_steps: float | None, max_blocks: int = SCALE_BLOCKS) -> int:
    """Blocks of a window for the scale's bootstrap: one per relaxation unit (blocks shorter than the correlation
    time of s^2 are not independent, and resampling them would give too narrow a CI), at least 2, at most
    ``max_blocks``; ``max_blocks`` when the unit is unknown."""
    if not relaxation_steps or not math.isfinite(relaxation_steps) or relaxation_steps <= 0:
        return int(max_blocks)
    return int(min(max(math.floor(window_steps / relaxation_steps + 1e-6), 2), max_blocks))  # 2.9999999 units: 3


def _edges(n: int, n_blocks: int) -> list[int]:
    nb = max(1, min(n_blocks, n))
    return [n * i // nb for i in range(nb)] + [n]


def scale_blocks(theta_d: np.ndarray, burn_in: int, n_blocks: int = SCALE_BLOCKS) -> np.ndarray:
    """Block means of ``||theta_D||^2`` over the window ``[burn_in, T)``: shape (n_blocks, 1), the layout of
    :func:`normscope.lab.scaling.lambda_scaling_fit` (one "item": the scale)."""
    s2 = np.asarray(theta_d, dtype=float)[burn_in:, 0]
    e = _edges(len(s2), n_blocks)
    return np.array([[s2[a:b].mean()] for a, b in zip(e[:-1], e[1:])])


def scale_stationarity(theta_d: np.ndarray, burn_in: int, relaxation_steps: float | None,
                       tol: float = STATIONARITY_TOL) -> dict:
    """The 3 % rule on the scale: mean ``||theta_D||^2`` of the window's second half vs its first half, and the
    window starting at least one relaxation unit into the run (after the arrival).

    Returns
    -------
    dict
        ``label`` (``stationary`` / ``drifting``), ``relative_change``, ``arrival_units`` (window start in
        relaxation units), ``reasons``.
    """
    s2 = np.asarray(theta_d, dtype=float)[burn_in:, 0]
    reasons = []
    h = len(s2) // 2
    rel = float(s2[len(s2) - h:].mean() / s2[:h].mean() - 1.0) if h and s2[:h].mean() > 0 else float("nan")
    if not (math.isfinite(rel) and abs(rel) <= tol):
        reasons.append(f"the scale's mean ||theta_D||^2 changed by {rel:+.2%} between the window's halves "
                       f"(allowed {tol:.0%})")
    units = burn_in / relaxation_steps if relaxation_steps and math.isfinite(relaxation_steps) else None
    if units is None or units < MIN_RELAXATIONS:
        reasons.append(f"the window starts after {units if units is None else round(units, 3)} relaxation units "
                       f"(needs {MIN_RELAXATIONS:g})")
    return {"label": "drifting" if reasons else "stationary", "relative_change": _num(rel), "arrival_units": _num(units),
            "reasons": reasons}


def _pred_s(gamma2_mean: np.ndarray, eta: float, two_c: float, heat_factor: float) -> np.ndarray:
    return (eta**2 * gamma2_mean * heat_factor / two_c) ** 0.25


def scale_summary(theta_d, *, eta: float, weight_decay: float, optimizer: str, beta: float = 0.9, burn_in: int = 0,
                  relaxation_steps: float | None = None, n_blocks: int = SCALE_BLOCKS, n_boot: int = 2000,
                  seed: int = 0, level: float = 0.95) -> dict:
    """(E1) checks and the no-fitted-constant (E2) prediction of the decayed scale over a run's window.

    Parameters
    ----------
    theta_d : array_like of shape (T, 6)
        The run's per-step record (:data:`THETA_D_COLUMNS`).
    eta, weight_decay : float
        The run's eta and lambda (> 0).
    optimizer : {"sgd", "momentum", "adamw"}
    beta : float
        Heavy-ball coefficient (E12).
    burn_in : int
        First step of the window.
    relaxation_steps : float, optional
        The run's relaxation unit (for the stationarity label).
    n_blocks, n_boot, seed, level
        Most time blocks of the window (:func:`window_blocks`: one per relaxation unit), bootstrap resamples of
        the blocks, seed, CI level.

    Returns
    -------
    dict
        ``s_observed`` (time-RMS ``sqrt(<||theta_D||^2>)``), ``s_predicted`` (E2; (E12) for momentum; the SGD
        form for AdamW, ``sgd_form_expected`` False), ``rel_error`` = ``s_predicted / s_observed - 1`` with
        ``rel_error_ci`` and ``abs_rel_error`` with ``abs_rel_error_ci`` (block bootstrap), ``e1`` (``max_abs_cos``
        of theta_D and g_D, ``max_abs_step_residual`` of the exact decoupled step relative to ``||theta+||^2``,
        ``balance`` = (eta^2 <||s_D||^2> - 2 eta (1 - eta lambda) <theta_D, s_D>) / (2c <||theta_D||^2>), 1 on a
        stationary window, and ``boundary``, its exact deviation (||theta_T||^2 - ||theta_t0||^2) / (2c W <s^2>)),
        ``stationarity`` (:func:`scale_stationarity`), ``window_steps``, ``resamples``.
    """
    td = np.asarray(theta_d, dtype=float)
    w = td[burn_in:]
    n = len(w)
    lam_eta = eta * weight_decay
    two_c = 1.0 - (1.0 - lam_eta) ** 2
    th2, g2, tg, s2d, ts, th2n = (w[:, j] for j in range(6))
    cos = tg / np.sqrt(np.maximum(th2 * g2, 1e-300))
    step = (1 - lam_eta) ** 2 * th2 - 2 * eta * (1 - lam_eta) * ts + eta**2 * s2d
    resid = np.abs(th2n - step) / np.maximum(th2n, 1e-300)
    gamma2 = g2 * th2
    factor = 1.0 / (1.0 - beta) ** 2 if optimizer == "momentum" else 1.0
    s_obs = float(np.sqrt(th2.mean()))
    s_pred = float(_pred_s(gamma2.mean(), eta, two_c, factor))
    rel = s_pred / s_obs - 1.0
    e = _edges(n, window_blocks(n, relaxation_steps, n_blocks))
    b_th2 = np.array([th2[a:b].mean() for a, b in zip(e[:-1], e[1:])])
    b_g2 = np.array([gamma2[a:b].mean() for a, b in zip(e[:-1], e[1:])])
    nb = len(b_th2)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, nb, size=(n_boot, nb))
    boot = _pred_s(b_g2[idx].mean(1), eta, two_c, factor) / np.sqrt(b_th2[idx].mean(1)) - 1.0
    q = [(1 - level) / 2, (1 + level) / 2]
    balance = (eta**2 * s2d.mean() - 2 * eta * (1 - lam_eta) * ts.mean()) / (two_c * th2.mean())
    boundary = (th2n[-1] - th2[0]) / (two_c * n * th2.mean())
    return {
        "optimizer": optimizer, "eta": eta, "lambda": weight_decay, "window_steps": int(n),
        "s_observed": s_obs, "s_predicted": s_pred, "sgd_form_expected": optimizer != "adamw",
        "heat_factor": factor, "rel_error": float(rel), "rel_error_ci": [float(x) for x in np.quantile(boot, q)],
        "abs_rel_error": abs(float(rel)), "abs_rel_error_ci": [float(x) for x in np.quantile(np.abs(boot), q)],
        "e1": {"max_abs_cos": float(np.max(np.abs(cos))), "median_abs_cos": float(np.median(np.abs(cos))),
               "max_abs_step_residual": float(np.max(resid)), "balance": float(balance), "boundary": float(boundary)},
        "stationarity": scale_stationarity(td, burn_in, relaxation_steps),
        "n_blocks": int(nb),
        "resamples": (f"{nb} time blocks of the window (one per relaxation unit, at least 2), with replacement (one "
                      "seed: no between-seed variation); percentile"),
        "rule": ("s_eq^4 = eta^2 <||g_D||^2 ||theta_D||^2> / (2c), 2c = 1 - (1 - eta lambda)^2 (E2)"
                 + ("; heat / (1 - beta)^2 (E12)" if optimizer == "momentum" else "")
                 + ("; the SGD form, not expected to hold for AdamW (docs/theory.md C3)" if optimizer == "adamw" else "")),
    }


def scale_over_seeds(records, *, eta: float, weight_decay: float, optimizer: str, beta: float = 0.9,
                     n_blocks: int = SCALE_BLOCKS, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """The (E2) prediction of the decayed scale over runs on different batch seeds, with a CI over seeds and blocks.

    Each run gives its own relative error ``s_pred / s_obs - 1`` over its window (as :func:`scale_summary`); the
    statistic is their mean over runs. The CI is a two-level (hierarchical) bootstrap: each resample draws the runs
    with replacement, then within each drawn run its time blocks (one per relaxation unit, :func:`window_blocks`)
    with replacement, and recomputes every drawn run's relative error; percentile interval. With one run it reduces
    to :func:`scale_summary`'s block bootstrap.

    Parameters
    ----------
    records : sequence of (theta_d, burn_in, relaxation_steps)
        Each run's per-step record (:data:`THETA_D_COLUMNS`, shape (T, 6)), the first step of its window and its
        relaxation unit in steps (None: unknown).
    eta, weight_decay, optimizer, beta
        The runs' common setting (as :func:`scale_summary`).
    n_blocks, n_boot, seed, level
        Most blocks per window, resamples, seed, CI level.

    Returns
    -------
    dict
        ``n_seeds``, ``per_seed`` (``rel_error``, ``s_observed``, ``s_predicted``, ``n_blocks`` of each run),
        ``rel_error`` (mean over runs) with ``rel_error_ci``, ``abs_rel_error`` = ``|rel_error|`` with
        ``abs_rel_error_ci``, ``between_seed_sd`` (sample SD of the runs' relative errors), ``resamples``.

    Raises
    ------
    ValueError
        No run, or a window shorter than 2 steps.
    """
    if not records:
        raise ValueError("scale_over_seeds needs at least one run")
    lam_eta = eta * weight_decay
    two_c = 1.0 - (1.0 - lam_eta) ** 2
    factor = 1.0 / (1.0 - beta) ** 2 if optimizer == "momentum" else 1.0
    per, bth, bg = [], [], []
    for theta_d, burn_in, relax in records:
        w = np.asarray(theta_d, dtype=float)[int(burn_in):]
        if len(w) < 2:
            raise ValueError("a run's window is shorter than 2 steps")
        th2, gamma2 = w[:, 0], w[:, 1] * w[:, 0]
        e = _edges(len(w), window_blocks(len(w), relax, n_blocks))
        bth.append(np.array([th2[a:b].mean() for a, b in zip(e[:-1], e[1:])]))
        bg.append(np.array([gamma2[a:b].mean() for a, b in zip(e[:-1], e[1:])]))
        s_obs, s_pred = float(np.sqrt(th2.mean())), float(_pred_s(gamma2.mean(), eta, two_c, factor))
        per.append({"rel_error": s_pred / s_obs - 1.0, "s_observed": s_obs, "s_predicted": s_pred,
                    "n_blocks": len(e) - 1})
    rels = np.array([x["rel_error"] for x in per])
    rng = np.random.default_rng(seed)
    k = len(records)
    boot = np.empty(n_boot)
    for i in range(n_boot):
        pick = rng.integers(0, k, size=k)
        vals = []
        for j in pick:
            nb = len(bth[j])
            idx = rng.integers(0, nb, size=nb)
            vals.append(_pred_s(bg[j][idx].mean(), eta, two_c, factor) / np.sqrt(bth[j][idx].mean()) - 1.0)
        boot[i] = np.mean(vals)
    q = [(1 - level) / 2, (1 + level) / 2]
    rel = float(rels.mean())
    return {"n_seeds": int(k), "per_seed": per, "rel_error": rel,
            "rel_error_ci": [float(x) for x in np.quantile(boot, q)], "abs_rel_error": abs(rel),
            "abs_rel_error_ci": [float(x) for x in np.quantile(np.abs(boot), q)],
            "between_seed_sd": float(rels.std(ddof=1)) if k > 1 else None,
            "resamples": (f"{k} runs on different batch seeds (with replacement), then the time blocks of each drawn "
                          "run's window (one per relaxation unit, with replacement); the mean of the runs' relative "
                          "errors; percentile")}


def scale_growth(theta_d) -> dict:
    """The scale of a run without decay: ``s_end / s_start`` (RMS over the last and first quarter of the steps)
    and the share of steps in which ``||theta_D||^2`` grew (by (E1) with lambda = 0 it can only grow)."""
    td = np.asarray(theta_d, dtype=float)
    n = len(td)
    q = max(1, n // 4)
    ratio = float(np.sqrt(td[-q:, 0].mean() / td[:q, 0].mean()))
    grew = float(np.mean(td[:, 5] > td[:, 0]))
    return {"ratio": ratio, "fraction_of_steps_grew": grew, "grew": bool(ratio > 1 and grew >= 0.99),
            "steps": int(n)}
