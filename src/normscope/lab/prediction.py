"""Theorem 1's prediction with no fitted constant, from probes at several snapshots of a stationary window.

At S snapshots of a run's window the section-6 probe (:func:`normscope.probes.probe_moments`) is run
with K fresh batches at the run's own eta, lambda, B, tau and decay mask. Per probe item, per unit eta
(E8), it gives ``za = <z, a>``, ``zc = <z, c>``, ``aa = ||a||^2`` for every (snapshot, batch) and
``zjd = <z, J_x theta_D>`` (E4) at every snapshot. :func:`snapshot_prediction` averages them into

- heat ``Sigma^2 = mean_s eta^2 R_s^2 mean_k aa`` and drift ``D~ = mean_s (eta mean_k za + eta^2 mean_k zc)``
  (E6, E8; for momentum times ``1/(1-beta)^2`` and ``1/(1-beta)``, E12);
- ``c = eta lambda_rad``, ``lambda_rad = lambda mean_s zjd_s / R_s^2`` (E4, first-order row of the
  section-4 table): measured, not fitted;
- ``R_eq`` from (E7), compared with each item's time-averaged norm over the window, ``R-bar =
  sqrt(<R^2>)`` (time-RMS of every tracked step).

**Every item is kept.** (E7) has a unique positive root whenever ``c > 0`` and ``Sigma^2 > 0``, also
for inward drift: an item with ``q < 0`` (E9: inward drift beats heat at its snapshot norm) gets a
positive ``R_eq`` below that norm. Only an item with ``lambda_rad <= 0`` has no root with ``c > 0``;
it is counted and named by its flag (the same mask as the statistics).

**Statistics** (probe items in a canonical order, so the summary is invariant under a permutation of
the items): relative error ``(R_eq - R-bar)/R-bar`` (mean of its absolute value, median), Pearson and
Spearman of R_eq and R-bar, the mean |rel| of a constant predictor (every item the geometric mean of
R_eq) and the gain over it (issue 34: a prediction must beat it to show per-item content), with percentile CIs of a three-stage bootstrap that resamples snapshots,
then the K batches within each drawn snapshot (and the time block of the window that belongs to the
snapshot), then the items.

**Permutation null.** ``Sigma^2 = R^2 E||Delta||^2`` carries R^2 by construction and ``D~ = E<z, Delta> =
R E<u, Delta>`` carries R (docs/theory.md section 9): R_eq follows R mechanically. The null keeps each
item's own snapshot norm R and its own c and gives it another item's R-free displacement statistics
``e = E||Delta||^2 = Sigma^2/R^2`` and ``d = E<u, Delta> = D~/R`` (one permutation of the items for
both), then recomputes (E7) and the statistics. p is the share of permutations doing at least as
well as the items' own statistics (``(1 + count) / (1 + n_perm)``).
"""

from __future__ import annotations

import numpy as np

from normscope import theory
from normscope.errors import InputError
from normscope.probes.uncertainty import rowwise_correlations

__all__ = ["snapshot_prediction", "prediction_arrays"]


def prediction_arrays(za, zc, aa, r_snap, zjd, *, eta: float, weight_decay: float, optimizer: str = "sgd",
                      beta: float = 0.9, w=None, ws=None) -> dict:
    """Per-item heat, drift, lambda_rad, c, snapshot RMS norm and R_eq from snapshot probe moments.

    Parameters
    ----------
    za, zc, aa : ndarray of shape (S, K, P)
        Per-unit-eta probe moments (E8) of K batches at each of S snapshots.
    r_snap : ndarray of shape (S, P)
        The items' norms at the snapshots.
    zjd : ndarray of shape (S, P)
        ``<z, J_x theta_D>`` at the snapshots (E4).
    eta, weight_decay : float
    optimizer : {"sgd", "momentum", "adamw"}
        ``momentum`` applies (E12) with ``beta``; AdamW uses the SGD formula (not expected to hold).
    w : ndarray of shape (m, S, K), optional
        Bootstrap weights of the (snapshot, batch) cells, each row summing to 1 (default uniform).
    ws : ndarray of shape (m, S), optional
        Weights of the snapshots (rows summing to 1; default uniform).

    Returns
    -------
    dict of ndarray of shape (P,) or (m, P)
        ``heat, drift, lambda_rad, c, r_ref`` (snapshot RMS norm), ``r_eq`` (NaN where c <= 0),
        ``q`` (E9 at ``r_ref``), ``e`` (``Sigma^2 / r_ref^2``) and ``d`` (``D~ / r_ref``).
    """
    s, k, _p = za.shape
    if w is None:
        w = np.full((1, s, k), 1.0 / (s * k))
        ws = np.full((1, s), 1.0 / s)
        squeeze = True
    else:
        squeeze = False
    r2 = r_snap**2
    heat = np.einsum("msk,ski->mi", w, eta**2 * r2[:, None, :] * aa)
    drift = np.einsum("msk,ski->mi", w, eta * za + eta**2 * zc)
    if optimizer == "momentum":
        heat = theory.momentum_heat_correction(heat, beta)
        drift = theory.momentum_drift_correction(drift, beta)
    lam_rad = float(weight_decay) * (ws @ (zjd / r2))
    c = float(eta) * lam_rad
    r_ref = np.sqrt(ws @ r2)
    pos = c > 0
    r_eq = np.where(pos, theory.equilibrium_radius(drift, heat, c=np.where(pos, c, np.nan)), np.nan)
    out = {"heat": heat, "drift": drift, "lambda_rad": lam_rad, "c": c, "r_ref": r_ref, "r_eq": r_eq,
           "q": theory.implied_decay(drift, heat, r_ref), "e": heat / r_ref**2, "d": drift / r_ref}
    return {key: v[0] for key, v in out.items()} if squeeze else out


def _stats_rows(r_eq: np.ndarray, r_bar: np.ndarray) -> np.ndarray:
    """Rows of ``[mean |rel|, median rel, Pearson, Spearman, mean |rel| of the constant predictor, gain over it]``
    over the finite items of each row. The constant predictor gives every item the geometric mean of the row's
    R_eq (issue 34: a prediction must beat it to show per-item content); the gain is its mean |rel| minus the
    per-item prediction's (positive: the per-item prediction is better)."""
    r_eq, r_bar = np.atleast_2d(r_eq), np.atleast_2d(r_bar)
    rel = (r_eq - r_bar) / r_bar
    with np.errstate(all="ignore"):
        mae = np.nanmean(np.abs(rel), axis=1)
        med = np.nanmedian(rel, axis=1)
        const = np.exp(np.nanmean(np.log(np.where(r_eq > 0, r_eq, np.nan)), axis=1))
        rel_c = np.where(np.isfinite(r_eq), (const[:, None] - r_bar) / r_bar, np.nan)  # the same items as rel
        mae_c = np.nanmean(np.abs(rel_c), axis=1)
    pear, spear = rowwise_correlations(r_eq, r_bar)
    return np.stack([mae, med, pear, spear, mae_c, mae_c - mae], axis=1)


STAT_NAMES = ("mean_abs_rel_error", "median_rel_error", "pearson", "spearman", "constant_mean_abs_rel_error",
              "gain_over_constant")


def snapshot_prediction(za, zc, aa, r_snap, zjd, r2_blocks, *, eta: float, weight_decay: float,
                        optimizer: str = "sgd", beta: float = 0.9, order=None, n_boot: int = 2000,
                        n_perm: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """R_eq (E7) from probes at S snapshots vs each item's time-averaged norm, with CIs and a permutation null.

    Parameters
    ----------
    za, zc, aa : array_like of shape (S, K, P)
        Probe moments per unit eta (E8): ``<z, a>``, ``<z, c>``, ``||a||^2`` of K fresh batches at S snapshots.
    r_snap, zjd : array_like of shape (S, P)
        Norms and ``<z, J_x theta_D>`` (E4) at the snapshots.
    r2_blocks : array_like of shape (S, P)
        Mean R^2 over the tracked steps of the window's time block that belongs to each snapshot
        (the window cut into S consecutive blocks); ``R-bar = sqrt(mean_s r2_blocks)``.
    eta, weight_decay : float
        The run's own eta and lambda.
    optimizer : {"sgd", "momentum", "adamw"}
    beta : float
        Momentum coefficient (E12).
    order : array_like of int, optional
        Canonical item order used for every statistic and resample (default: as given).
    n_boot, n_perm : int
        Bootstrap replicates and permutations.
    seed : int
    level : float

    Returns
    -------
    dict
        ``items`` (per-item arrays in the order given: ``heat, drift, lambda_rad, c, r_ref, r_bar,
        r_eq, rel_error, q, q_over_c, flag``), ``stats`` (name -> value), ``ci`` (name -> [lo, hi]),
        ``null`` (name -> ``{median, p}``), ``n_items``, ``n_excluded`` and ``excluded`` (flag -> count),
        ``n_negative_q`` and the sentence ``negative_q`` saying what (E7) gives there, ``design``
        (S, K, P) and ``resamples``.

    Raises
    ------
    InputError
        Mismatched shapes, fewer than 2 snapshots or batches, or fewer than 3 items.
    """
    za, zc, aa = (np.asarray(a, dtype=float) for a in (za, zc, aa))
    r_snap, zjd, r2_blocks = (np.asarray(a, dtype=float) for a in (r_snap, zjd, r2_blocks))
    if za.ndim != 3 or za.shape != zc.shape or za.shape != aa.shape:
        raise InputError("za, zc and aa must have the same shape (snapshots, batches, items)")
    s, k, p = za.shape
    if r_snap.shape != (s, p) or zjd.shape != (s, p) or r2_blocks.shape != (s, p):
        raise InputError(f"r_snap, zjd and r2_blocks must have shape ({s}, {p})")
    if s < 2 or k < 2 or p < 3:
        raise InputError(f"the snapshot prediction needs >= 2 snapshots, >= 2 batches and >= 3 items, got {s}, {k}, {p}")
    kw = dict(eta=eta, weight_decay=weight_decay, optimizer=optimizer, beta=beta)
    # everything is computed with the items in the canonical order, so the summary does not depend on the input
    # order even in the last bit; per-item outputs are mapped back to the input order at the end
    o = np.arange(p) if order is None else np.asarray(order)
    back = np.argsort(o)
    za, zc, aa, r_snap, zjd, r2_blocks = (a[..., o] for a in (za, zc, aa, r_snap, zjd, r2_blocks))
    pt = prediction_arrays(za, zc, aa, r_snap, zjd, **kw)
    r_bar = np.sqrt(r2_blocks.mean(axis=0))
    flag = np.where(pt["c"] > 0, "", "lambda_rad<=0")
    rel = (pt["r_eq"] - r_bar) / r_bar
    with np.errstate(divide="ignore", invalid="ignore"):
        qc = np.where(pt["c"] > 0, pt["q"] / pt["c"], np.nan)
    point = _stats_rows(pt["r_eq"], r_bar)[0]

    rng = np.random.default_rng(seed)
    ci = _bootstrap_ci((za, zc, aa, r_snap, zjd), r2_blocks, kw, rng, n_boot=n_boot, level=level)
    null_d = _permutation_null(pt, r_bar, point, rng, n_perm=n_perm)
    n_neg_q = int(np.sum(pt["q"] < 0))
    excluded = {"lambda_rad<=0": int(np.sum(flag != ""))}
    return {
        "items": {k: v[back] for k, v in (("heat", pt["heat"]), ("drift", pt["drift"]), ("lambda_rad", pt["lambda_rad"]),
                                          ("c", pt["c"]), ("r_ref", pt["r_ref"]), ("r_bar", r_bar), ("r_eq", pt["r_eq"]),
                                          ("rel_error", rel), ("q", pt["q"]), ("q_over_c", qc), ("flag", flag))},
        "stats": {name: (float(point[j]) if np.isfinite(point[j]) else None) for j, name in enumerate(STAT_NAMES)},
        "ci": ci, "null": null_d, "n_items": int(p), "n_excluded": int(np.sum(flag != "")), "excluded": excluded,
        "n_negative_q": n_neg_q,
        "negative_q": (f"{n_neg_q} of {p} items have q < 0 (E9: inward drift beats heat at their snapshot norm); they are "
                       "kept: (E7) gives each a positive R_eq below that norm"),
        "design": {"snapshots": int(s), "batches": int(k), "items": int(p)},
        "resamples": ("snapshots (with their time blocks of the window), then the K batches within each drawn snapshot, "
                      "then probe items; percentile intervals"),
        "null_method": ("each item keeps its own snapshot norm R and c and gets another item's R-free displacement "
                        "statistics e = Sigma^2/R^2 and d = D~/R (one permutation for both); p = (1 + #permutations at "
                        f"least as good) / (1 + {n_perm}); p_above the same with 'at least as bad' (the other side)"),
        "n_boot": int(n_boot), "n_perm": int(n_perm),
    }


def _bootstrap_ci(moments: tuple, r2_blocks: np.ndarray, kw: dict, rng: np.random.Generator, *, n_boot: int,
                  level: float) -> dict:
    """Percentile intervals of the agreement statistics (name -> [lo, hi] or None): snapshots (with their time
    blocks) resampled, then the batches within each drawn snapshot, then probe items; draws from ``rng`` in
    blocks of 250 replicates."""
    za, zc, aa, r_snap, zjd = moments
    s, k, p = za.shape
    boot = np.empty((n_boot, len(STAT_NAMES)))
    block = 250
    for b0 in range(0, n_boot, block):
        m = min(block, n_boot - b0)
        cs = rng.multinomial(s, np.full(s, 1.0 / s), size=m)  # snapshots (and their time blocks)
        cb = rng.multinomial(k, np.full(k, 1.0 / k), size=(m, s))  # batches within each snapshot
        ws = cs / s
        w = ws[:, :, None] * cb / k
        rep = prediction_arrays(za, zc, aa, r_snap, zjd, w=w, ws=ws, **kw)
        rbar_b = np.sqrt(ws @ r2_blocks)
        idx = rng.integers(0, p, size=(m, p))
        boot[b0:b0 + m] = _stats_rows(np.take_along_axis(rep["r_eq"], idx, axis=1),
                                      np.take_along_axis(rbar_b, idx, axis=1))
    ci = {}
    for j, name in enumerate(STAT_NAMES):
        col = boot[:, j][np.isfinite(boot[:, j])]
        ci[name] = [float(q) for q in np.quantile(col, [(1 - level) / 2, (1 + level) / 2])] if col.size else None
    return ci


def _permutation_null(pt: dict, r_bar: np.ndarray, point: np.ndarray, rng: np.random.Generator, *,
                      n_perm: int) -> dict:
    """Permutation null of each statistic (name -> median, one-sided p and p_above): every item keeps its own R
    and c and gets another item's R-free displacement statistics (e, d)."""
    e, d, c, r_ref = pt["e"], pt["d"], pt["c"], pt["r_ref"]
    p = len(r_bar)
    perms = np.argsort(rng.random((n_perm, p)), axis=1)
    heat_n = r_ref[None, :] ** 2 * e[perms]
    drift_n = r_ref[None, :] * d[perms]
    cc = np.broadcast_to(c, heat_n.shape)
    req_n = np.where(cc > 0, theory.equilibrium_radius(drift_n, heat_n, c=np.where(cc > 0, cc, np.nan)), np.nan)
    null = _stats_rows(req_n, np.broadcast_to(r_bar, req_n.shape))
    better = {"mean_abs_rel_error": lambda x, v: x <= v, "median_rel_error": lambda x, v: np.abs(x) <= abs(v),
              "pearson": lambda x, v: x >= v, "spearman": lambda x, v: x >= v,
              "constant_mean_abs_rel_error": lambda x, v: x <= v, "gain_over_constant": lambda x, v: x >= v}
    null_d = {}
    for j, name in enumerate(STAT_NAMES):
        col = null[:, j]
        ok = np.isfinite(col)
        if not ok.any() or not np.isfinite(point[j]):
            null_d[name] = {"median": None, "p": None, "p_above": None}
            continue
        cnt = int(np.sum(better[name](col[ok], point[j])))
        worse = int(np.sum(better[name](np.full(int(ok.sum()), point[j]), col[ok])))  # null at least as bad
        null_d[name] = {"median": float(np.median(col[ok])), "p": (1 + cnt) / (1 + int(ok.sum())),
                        "p_above": (1 + worse) / (1 + int(ok.sum()))}
    return null_d
