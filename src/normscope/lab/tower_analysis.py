"""The frozen-tower arm's analysis (:mod:`normscope.lab.tower`): the no-fitted-constant prediction (E2, E7), its CI
and null, stationarity, and the figures by number of senses."""

import math

import numpy as np

from normscope import theory
from normscope.lab.stationarity import classify_window
from normscope.lab.tower_design import CHUNK, TowerRun, TowerSizes

# --------------------------------------------------------------------------------------------------- analysis
def _pearson(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    return (a * b).sum(axis) / np.sqrt((a * a).sum(axis) * (b * b).sum(axis))


def predict(r_obs: np.ndarray, r2_final: np.ndarray, g2_blocks: np.ndarray, zg_blocks: np.ndarray, *, eta: float,
            c: float, heat_factor: float = 1.0, drift_factor: float = 1.0, n_boot: int = 0, n_perm: int = 0,
            seed: int = 0) -> dict:
    """Heat, drift and R_eq (E7) per noun from probe block sums, and their agreement with the observed norm.

    Parameters
    ----------
    r_obs : ndarray of shape (N,)
        Observed norms (the window's time-RMS R-bar).
    r2_final : ndarray of shape (N,)
        R^2 at the probed state.
    g2_blocks, zg_blocks : ndarray of shape (blocks, N)
        :func:`probe_heat`'s block means (equal numbers of batches per block).
    eta, c : float
        The probe step and the decay per step (the exact free row).
    heat_factor, drift_factor : float, keyword-only
        (E12) for momentum: ``1/(1-beta)^2`` and ``1/(1-beta)``; 1 otherwise.
    n_boot, n_perm : int, keyword-only
        Bootstrap resamples (nouns and probe blocks, both with replacement) and permutations of the null
        (another noun's heat, each noun keeping its own R-bar).
    seed : int, keyword-only

    Returns
    -------
    dict
        ``heat, heat_se, drift, r_eq, rel`` (arrays, N), ``mean_abs_rel_error`` (+ ``_ci``),
        ``median_rel_error``, ``pearson`` (+ ``_ci``), ``spearman``, ``null`` (``median``, ``p``, ``p_above``,
        ``n_perm``), ``max_abs_drift_over_heat``.
    """
    from scipy import stats

    nb, n = g2_blocks.shape
    heat = heat_factor * eta**2 * r2_final * g2_blocks.mean(0)
    drift = -drift_factor * eta * zg_blocks.mean(0)
    r_eq = theory.equilibrium_radius(drift, heat, c=c)
    rel = (r_eq - r_obs) / r_obs
    block_heat = heat_factor * eta**2 * r2_final * g2_blocks
    heat_se = block_heat.std(0, ddof=1) / math.sqrt(nb) if nb > 1 else np.full(n, np.nan)
    out = {"heat": heat, "heat_se": heat_se, "drift": drift, "r_eq": r_eq, "rel": rel,
           "mean_abs_rel_error": float(np.mean(np.abs(rel))), "median_rel_error": float(np.median(rel)),
           "pearson": float(_pearson(r_eq, r_obs)) if np.ptp(r_eq) > 0 and np.ptp(r_obs) > 0 else None,
           "spearman": float(stats.spearmanr(r_eq, r_obs)[0]) if np.ptp(r_eq) > 0 and np.ptp(r_obs) > 0 else None,
           "max_abs_drift_over_heat": float(np.max(np.abs(drift) * r2_final / np.where(heat > 0, heat, np.inf))),
           "mean_abs_rel_error_ci": None, "pearson_ci": None, "null": None}
    rng = np.random.default_rng([seed, 3])
    if n_boot:
        counts = rng.multinomial(nb, np.full(nb, 1.0 / nb), size=n_boot)  # (n_boot, nb)
        hb = heat_factor * eta**2 * r2_final * (counts @ g2_blocks) / nb  # (n_boot, N)
        db = -drift_factor * eta * (counts @ zg_blocks) / nb
        items = rng.integers(0, n, size=(n_boot, n))
        reqb = theory.equilibrium_radius(np.take_along_axis(db, items, 1), np.take_along_axis(hb, items, 1), c=c)
        robs = r_obs[items]
        mar = np.abs((reqb - robs) / robs).mean(1)
        pr = _pearson(reqb, robs)
        out["mean_abs_rel_error_ci"] = [float(x) for x in np.percentile(mar, [2.5, 97.5])]
        pr = pr[np.isfinite(pr)]
        out["pearson_ci"] = [float(x) for x in np.percentile(pr, [2.5, 97.5])] if pr.size else None
    if n_perm:
        perm = np.argsort(rng.random((n_perm, n)), axis=1)
        reqp = theory.equilibrium_radius(drift[perm], heat[perm], c=c)
        nul = np.abs((reqp - r_obs) / r_obs).mean(1)
        t = out["mean_abs_rel_error"]
        out["null"] = {"median": float(np.median(nul)), "p": float((1 + np.sum(nul <= t)) / (n_perm + 1)),
                       "p_above": float((1 + np.sum(nul >= t)) / (n_perm + 1)), "n_perm": int(n_perm)}
    return out


def _spearman_ci(x: np.ndarray, y: np.ndarray, n_boot: int, seed: int) -> tuple[float, list | None]:
    from scipy import stats

    rho = float(stats.spearmanr(x, y)[0])
    if not n_boot:
        return rho, None
    rng = np.random.default_rng([seed, 4])
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    rx = stats.rankdata(x[idx], axis=1)
    ry = stats.rankdata(y[idx], axis=1)
    r = _pearson(rx, ry)
    r = r[np.isfinite(r)]
    return rho, ([float(v) for v in np.percentile(r, [2.5, 97.5])] if r.size else None)


def _stationarity(rec: dict, run: TowerRun, sizes: TowerSizes, batch_size: int) -> dict:
    """The toolkit's window label on the run's two halves, plus the relative change of mean R between them."""
    h = sizes.window // 2
    r2_halves = rec["sum_r2"] / h  # (2, N): each noun's mean R^2 per half
    w0 = sizes.burn_in // CHUNK
    # a free vector's R^2 relaxes in 1/(4 eta lambda) steps under SGD and heavy ball, 1/(2 eta lambda) under AdamW
    relax = 1.0 / ((2 if run.optimizer == "adamw" else 4) * run.eta * run.lam) if run.lam > 0 else math.inf
    st = classify_window(r2_halves, rec["loss"][w0:], batch_size=batch_size, burn_in=sizes.burn_in,
                         relaxation_steps=relax)
    rbar = np.sqrt(r2_halves).mean(1)
    st["mean_r_halves"] = [float(rbar[0]), float(rbar[1])]
    st["mean_r_change"] = float(rbar[1] / rbar[0] - 1.0)
    st["relaxation_steps"] = relax if math.isfinite(relax) else None
    st["relaxation_rule"] = ("1/(4 eta lambda) (SGD, heavy ball; docs/theory.md section 2), 1/(2 eta lambda) (AdamW); "
                             "the window must start one relaxation time in")
    return st


def _groups(senses, r_obs, heat, r_eq, rel) -> list[dict]:
    out = []
    for a in np.unique(senses):
        m = senses == a
        out.append({"senses": int(a), "n": int(m.sum()), "r_obs": float(r_obs[m].mean()),
                    "heat": float(heat[m].mean()) if heat is not None else None,
                    "r_eq": float(r_eq[m].mean()) if r_eq is not None else None,
                    "mean_abs_rel_error": float(np.abs(rel[m]).mean()) if rel is not None else None})
    return out
