"""Analysis of a tracked transformer run: from the record and the step-0 probe to the typed result.

Every sentence of the summary's caveats is built from the same arrays and masks as the numbers it
describes. Correlations and their bootstrap CIs are computed with the probe items in a canonical
order (sorted by text, then id), so the whole summary is invariant under a permutation of the
probe items and the per-item table permutes with them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from normscope.errors import InputError
from normscope.lab.result import TransformerLabResult
from normscope.lab.trajectory import motion, trajectory_estimates
from normscope.stats import correlation, partial_spearman

__all__ = ["analyse_transformer_run", "wilson_interval", "relaxation_steps", "STATIONARY_TOL"]

#: the window's norms count as stationary when the median probe item has |q/c_realised - 1| <= this
#: (q/c_realised - 1 is the window's change of mean R^2 in units of the decay's flow, exactly)
STATIONARY_TOL = 0.25


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def wilson_interval(k: int, n: int, z: float = 1.959963984540054) -> list | None:
    """95 % Wilson score interval of a binomial proportion k/n (None for n = 0)."""
    if n <= 0:
        return None
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return [max(0.0, centre - half), min(1.0, centre + half)]


def relaxation_steps(lr: float, lambda_rad) -> float | None:
    """``1 / (2 eta lambda_rad)`` for the median item (None when the median lambda_rad <= 0).

    The leading-order relaxation time of R^2 near (E7) is ``1/(2c(1 + h))`` with ``c = eta lambda_rad``
    and h the heat share (E9): ``1/(2c)`` is its upper bound for h >= 0 (``1/(4c)`` for a free vector,
    section 2).
    """
    lam = np.asarray(lambda_rad, dtype=float)
    lam = lam[np.isfinite(lam)]
    if lam.size == 0:
        return None
    med = float(np.median(lam))
    return 1.0 / (2.0 * lr * med) if med > 0 else None


def _spearman(x, y, *, n_boot, seed, order):
    """Spearman rho with a bootstrap CI over probe items (canonical item order), or (None, None, n)."""
    x = np.asarray(x, dtype=float)[order]
    y = np.asarray(y, dtype=float)[order]
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return None, None, int(ok.sum())
    try:
        res = correlation(x[ok], y[ok], n_boot=n_boot, n_perm=0, seed=seed)
    except InputError:
        return None, None, int(ok.sum())
    d = res.to_dict()
    return _num(d["spearman"]), d["spearman_ci"], int(ok.sum())


def _partial(x, y, z, *, n_boot, seed, order):
    """Partial Spearman rho(x, y | z) with bootstrap CI and Freedman-Lane p (canonical item order), or Nones."""
    x, y, z = (np.asarray(a, dtype=float)[order] for a in (x, y, z))
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    if ok.sum() < 4:
        return None, None, None, int(ok.sum())
    try:
        res = partial_spearman(x[ok], y[ok], z[ok], n_boot=n_boot, n_perm=n_boot, seed=seed, control_names=["R_0"])
    except InputError:
        return None, None, None, int(ok.sum())
    d = res.to_dict()
    return d["rho"], d["ci"], d["p_value"], int(ok.sum())


def _stat(a) -> dict:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return {"median": None, "mean": None, "sd": None, "n": 0}
    return {"median": float(np.median(a)), "mean": float(np.mean(a)), "sd": float(np.std(a, ddof=1)) if a.size > 1 else None,
            "n": int(a.size)}


def analyse_transformer_run(info: dict, probes, record, probe0: dict, timings: dict, *, n_boot: int = 2000):
    """The :class:`TransformerLabResult` of a run (``record`` None: tracking was off)."""
    lr, lam, steps, burn_in = info["lr"], info["weight_decay"], info["steps"], info["burn_in"]
    base = {k: info.get(k) for k in ("model", "optimizer", "lr", "weight_decay", "steps", "precision", "burn_in",
                                     "batch_size", "tau", "decay_mask", "n_decayed", "n_params", "dropout", "pairs",
                                     "n_pairs", "n_source_pairs", "n_long_pairs", "n_held_out_pairs", "max_tokens",
                                     "probe_batches", "seed", "device", "probe_set")}
    base["beta"] = info.get("beta")
    base["probe_items"] = len(probes)
    if record is None:
        return TransformerLabResult(**base, estimator="none (tracking off)", caveats=["tracking off: no estimates"],
                                    timings=timings)
    order = np.lexsort((np.asarray(probes.ids, dtype=str), np.asarray(probes.texts, dtype=str)))
    caveats: list[str] = []
    seed = int(info.get("seed") or 0)
    p = len(probes)

    est = trajectory_estimates(record, eta=lr, weight_decay=lam, burn_in=burn_in)
    r_all = np.sqrt(record.r2)
    r0, r_final = r_all[0], r_all[-1]
    r_eq0 = np.asarray(probe0["r_eq"], dtype=float)
    flag = np.asarray(probe0["flag"], dtype=str)
    mot = motion(r0, r_final, r_eq0)
    lam0 = np.asarray(probe0["lambda_rad"], dtype=float)
    relax = relaxation_steps(lr, lam0)
    long_enough = relax is not None and burn_in >= relax

    with np.errstate(divide="ignore", invalid="ignore"):  # D~ / (<R^2> c): q/c = heat share + drift share (E9)
        drift_share = np.where(est["c"] > 0, est["drift"] / (est["r_window"] ** 2 * est["c"]), np.nan)
    items = pd.DataFrame({
        "id": list(probes.ids), "text": list(probes.texts), "r0": r0, "r_final": r_final, "r_window": est["r_window"],
        "r_eq0": r_eq0, "r_eq0_flag": flag, "lambda_rad0": lam0, "heat0": probe0["heat"], "drift0": probe0["drift"],
        "q0": probe0["q"], **mot, "drift": est["drift"], "heat": est["heat"], "q": est["q"],
        "lambda_rad": est["lambda_rad"], "c": est["c"], "q_over_c": est["q_over_c"], "c_realised": est["c_realised"],
        "q_over_c_realised": est["q_over_c_realised"], "heat_share": est["heat_share"], "drift_share": drift_share,
        "r_eq_trajectory": est["r_eq"],
    })
    pred = _prediction(r0, r_final, r_eq0, flag, mot, order, n_boot=n_boot, seed=seed, caveats=caveats)
    qc = est["q_over_c"][order]
    qc_ok = qc[np.isfinite(qc)]
    stat = _stationarity(est, r_final, order, relax=relax, long_enough=long_enough, burn_in=burn_in, steps=steps,
                         caveats=caveats)
    traj = _trajectory(est, record, qc, drift_share, order, burn_in=burn_in, steps=steps, stationary=stat["stationary"])
    _trajectory_caveats(traj, qc_ok, p, caveats)
    _optimizer_caveats(info["optimizer"], caveats)
    loss = record.loss
    k = max(1, min(50, steps // 10))
    loss_d = {"first": _num(loss[:k].mean()), "last": _num(loss[-k:].mean()), "steps_averaged": k}
    s0 = dict(probe0.get("summary") or {})
    s0["q_over_c"] = _stat((np.asarray(probe0["q"]) / np.where(lr * lam0 > 0, lr * lam0, np.nan))[order])
    s0["heat"], s0["drift"] = _stat(np.asarray(probe0["heat"], dtype=float)[order]), _stat(
        np.asarray(probe0["drift"], dtype=float)[order])
    rho, rho_ci, frac, k_toward, n_decided, motion_d = (pred["rho"], pred["rho_ci"], pred["frac"], pred["k_toward"],
                                                        pred["n_decided"], pred["motion"])
    pear, pear_reason = stat["pearson"], stat["reason"]
    return TransformerLabResult(
        **base,
        relaxation_steps=relax,
        long_enough=bool(long_enough),
        q_over_c_mean=float(np.mean(qc_ok)) if qc_ok.size else None,
        q_over_c_median=float(np.median(qc_ok)) if qc_ok.size else None,
        spearman_predicted_vs_final=rho,
        spearman_predicted_vs_final_ci=rho_ci,
        fraction_moved_toward_req=frac,
        fraction_moved_toward_req_ci=wilson_interval(k_toward, n_decided),
        pearson_final_vs_req_trajectory=pear,
        pearson_final_vs_req_trajectory_reason=pear_reason,
        estimator="trajectory",
        motion=motion_d,
        trajectory=traj,
        step0=s0,
        loss=loss_d,
        caveats=caveats,
        items=items,
        norms=r_all,
        record=record,
        timings=timings,
    )


def _prediction(r0, r_final, r_eq0, flag, mot, order, *, n_boot: int, seed: int, caveats: list[str]) -> dict:
    """The step-0 prediction against the end of the run: Spearman, the partial given R_0, the direction of motion
    and its common-target baseline (``motion`` block), with their caveats."""
    def _st(a) -> dict:  # summary of a per-item array, in the canonical item order (sums are order-sensitive)
        return _stat(np.asarray(a, dtype=float)[order])

    p = len(r0)
    has_pred = np.isfinite(r_eq0)
    n_pred = int(has_pred.sum())
    n_flag = {f: int((flag == f).sum()) for f in ("lambda_rad<=0", "q<0")}
    tw = mot["toward"]
    decided = np.isfinite(tw)
    k_toward = int(np.nansum(tw))
    n_decided = int(decided.sum())
    frac = k_toward / n_decided if n_decided else None
    rho, rho_ci, n_rho = _spearman(r_eq0, r_final, n_boot=n_boot, seed=seed, order=order)
    rho0, rho0_ci, _ = _spearman(r0, r_final, n_boot=n_boot, seed=seed, order=order)
    # final norms persist from the start, and R_eq0 - R_0 and R_T - R_0 share -R_0 (a common target alone would
    # correlate them): the per-item test is R_eq0 vs R_T with R_0 partialled out, and the direction test has a
    # common-target baseline (every item's target = the median step-0 R_eq)
    prho, prho_ci, prho_p, n_prho = _partial(r_eq0, r_final, r0, n_boot=n_boot, seed=seed, order=order)
    common = float(np.median(r_eq0[has_pred])) if n_pred else float("nan")
    tw_c = motion(r0, r_final, np.where(has_pred, common, np.nan))["toward"]
    k_c, n_c = int(np.nansum(tw_c)), int(np.isfinite(tw_c).sum())
    excluded = [f"{n} with {f}" for f, n in n_flag.items() if n]
    if p - n_pred:
        caveats.append(f"{p - n_pred} of {p} probe items have no step-0 R_eq ({', '.join(excluded)}; docs/theory.md section 9) "
                       f"and are left out of the comparisons with R_eq")
    motion_d = {
        "n_with_prediction": n_pred, "n_decided": n_decided, "n_toward": k_toward, "excluded": n_flag,
        "spearman_start_vs_final": rho0, "spearman_start_vs_final_ci": rho0_ci,
        "partial_spearman_predicted_vs_final_given_start": prho,
        "partial_spearman_predicted_vs_final_given_start_ci": prho_ci,
        "partial_spearman_predicted_vs_final_given_start_p": prho_p,
        "n_spearman": n_rho, "n_partial": n_prho,
        "ci_resamples": f"probe items (pairs bootstrap, {n_boot} resamples; partial: re-ranked per resample, "
                        f"p by {n_boot} Freedman-Lane permutations)",
        "common_target": _num(common),
        "fraction_moved_toward_common_target": k_c / n_c if n_c else None,
        "fraction_moved_toward_common_target_ci": wilson_interval(k_c, n_c),
        "fraction_of_distance": _st(np.where(has_pred, mot["fraction_of_distance"], np.nan)),
        "predicted_change": _st(np.where(has_pred, mot["predicted_change"], np.nan)), "moved": _st(mot["moved"]),
        "r0": _st(r0), "r_final": _st(r_final), "r_eq0": _st(r_eq0),
        "n_predicted_up": int(np.sum(mot["predicted_change"][has_pred] > 0)),
        "n_moved_up": int(np.sum(mot["moved"] > 0)),
    }
    if n_pred and (motion_d["n_predicted_up"] in (0, n_pred)):
        way = "up" if motion_d["n_predicted_up"] else "down"
        caveats.append(f"every probe item with a prediction is predicted to move {way}: the fraction moved toward R_eq "
                       f"then only tests the common direction; the partial Spearman(R_eq0, R_T | R_0) = "
                       f"{'n/a' if prho is None else format(prho, '.2f')} tests the per-item differences")
    return {"rho": rho, "rho_ci": rho_ci, "frac": frac, "k_toward": k_toward, "n_decided": n_decided,
            "motion": motion_d}


def _stationarity(est, r_final, order, *, relax, long_enough: bool, burn_in: int, steps: int,
                  caveats: list[str]) -> dict:
    """Whether the window's norms are stationary (measured), and the final-vs-trajectory-R_eq Pearson r or why not."""
    # stationarity, measured: q/c_realised = 1 + (R_T^2 - R_t0^2) / (2 W c_real <R^2>) (exact); the window's norms
    # count as stationary when the median item's |q/c_realised - 1| <= STATIONARY_TOL
    qcr = est["q_over_c_realised"]
    qcr_med = float(np.median(qcr[np.isfinite(qcr)])) if np.isfinite(qcr).any() else float("nan")
    stationary = bool(np.isfinite(qcr_med) and abs(qcr_med - 1.0) <= STATIONARY_TOL)
    pear, pear_reason = None, None
    if relax is None:
        pear_reason = ("the median probe item has lambda_rad <= 0 at step 0 (E4): decay exerts no restoring force on "
                       "its norm, so there is no relaxation time and no stationary norm to compare")
    elif not long_enough:
        pear_reason = (f"run too short: the window starts at step {burn_in}, before one relaxation time "
                       f"1/(2 eta lambda_rad) = {relax:.0f} steps; directions of motion are compared instead")
    elif not stationary:
        pear_reason = (f"norms not stationary over the window: median q/c_realised = {qcr_med:.3g} (|.-1| > "
                       f"{STATIONARY_TOL}), i.e. the window's mean R^2 still moves at a rate comparable with the decay, "
                       "although the window starts after one relaxation time; directions of motion are compared instead")
    else:
        ok = np.isfinite(est["r_eq"])
        if ok.sum() >= 3 and np.ptp(est["r_eq"][ok]) > 0:
            pear = float(np.corrcoef(r_final[order][ok[order]], est["r_eq"][order][ok[order]])[0, 1])
        else:
            pear_reason = "fewer than 3 probe items with a positive c, or a constant R_eq"
    if relax is None or (long_enough and not stationary):
        caveats.append(pear_reason)
    elif not long_enough:
        caveats.append(f"the run ({steps} steps, window from step {burn_in}) is shorter than needed for stationary norms "
                       f"(window start >= relaxation time {relax:.0f} steps): the comparison is of directions of "
                       f"motion, not of stationary values")
    return {"stationary": stationary, "pearson": pear, "reason": pear_reason}


def _trajectory(est, record, qc, drift_share, order, *, burn_in: int, steps: int, stationary: bool) -> dict:
    """The trajectory estimator over the window (``trajectory`` block)."""
    def _st(a) -> dict:
        return _stat(np.asarray(a, dtype=float)[order])

    nonstat = est["q"] - est["c_realised"]
    return {
        "window": [burn_in, steps], "c_definition": "eta * lambda_rad(x), lambda_rad by (E4) averaged over the window",
        "stationary": stationary, "stationary_rule": f"|median q/c_realised - 1| <= {STATIONARY_TOL}",
        "q_over_c": _stat(qc), "q_over_c_realised": _st(est["q_over_c_realised"]),
        "c_realised_over_c": _st(est["c_realised"] / np.where(est["c"] > 0, est["c"], np.nan)),
        "nonstationarity_over_c": _st(nonstat / np.where(est["c"] > 0, est["c"], np.nan)),
        "heat": _st(est["heat"]), "drift": _st(est["drift"]), "heat_share": _st(est["heat_share"]),
        "drift_share": _st(drift_share),
        "c_fit": _num(np.median(est["q"][np.isfinite(est["q"])])) if np.isfinite(est["q"]).any() else None,
        "c_median": _num(np.median(est["c"])),
        "lambda_rad_per_lambda": {"step0": _st(record.lam[0]), "end": _st(record.lam[-1])},
        "n_negative_c": int(np.sum(est["c"] <= 0)),
    }


def _trajectory_caveats(traj: dict, qc_ok, p: int, caveats: list[str]) -> None:
    hs, ds = traj["heat_share"]["median"], traj["drift_share"]["median"]
    if hs is not None and ds is not None and hs > 0 and ds < 0 and -ds / hs > 0.5:
        ratio = -ds / hs
        how = f"cancels {ratio:.0%} of the heat" if ratio <= 1 else f"exceeds the heat {ratio:.3g}-fold"
        caveats.append(f"over the window the inward drift {how} (median drift share {ds:.3g} of c against heat "
                       f"share {hs:.3g}; q/c = heat share + drift share, E9)"
                       + (": with q/c < 1 the norms shrink faster than heat can restore them" if (qc_ok.size and
                          float(np.median(qc_ok)) < 1) else ""))
    if traj["n_negative_c"]:
        caveats.append(f"{traj['n_negative_c']} of {p} probe items have lambda_rad <= 0 over the window (E4): their q/c "
                       "is undefined and they are left out of the q/c statistics")


def _optimizer_caveats(optimizer: str, caveats: list[str]) -> None:
    if optimizer == "adamw":
        caveats.insert(0, "AdamW: the SGD form of Theorem 1 is not expected to hold (docs/theory.md C3, section 8); the step-0 "
                          "probe uses plain-gradient SGD steps, while the trajectory estimator uses AdamW's actual step")
    elif optimizer == "momentum":
        caveats.insert(0, "momentum: the step-0 prediction uses (E12) heat/(1-beta)^2 and drift/(1-beta) (the drift "
                          "factor is untested in docs/theory.md); the trajectory estimator uses the actual step, without (E12)")
    caveats.append("q/c uses c = eta lambda_rad from (E4), the first-order decay rate; q/c_realised uses the decay's "
                   "measured radial effect, so it equals 1 exactly when the window's mean R^2 does not change")
