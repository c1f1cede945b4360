"""Per-item quantities, comparisons with the observed norm, and caveats (THEORY sections 4, 6, 9)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from normscope._io import to_jsonable
from normscope.errors import InputError
from normscope.probes.moments import ProbeMoments
from normscope.probes.result import ProbeResult

__all__ = ["summarize_probe"]


def _corr(x, y, *, n_boot: int, seed: int) -> dict:
    """Pearson and Spearman with bootstrap CIs via :func:`normscope.stats.correlation`."""
    from normscope.stats import correlation

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return {"pearson": None, "spearman": None, "ci": {"pearson": [None, None], "spearman": [None, None]},
                "n": int(ok.sum()), "p_value": None, "note": "fewer than 3 valid items or a constant column"}
    res = correlation(x, y, n_boot=n_boot, n_perm=min(n_boot, 1000), seed=seed).to_dict()
    return {
        "pearson": res["pearson"],
        "spearman": res["spearman"],
        "ci": {"pearson": res["pearson_ci"], "spearman": res["spearman_ci"], "level": res.get("ci_level", 0.95)},
        "n": res["n"],
        "p_value": res["p_value"],
    }


def _split_half(per_batch: np.ndarray) -> float:
    """Spearman-Brown corrected split-half reliability across items (even vs odd batches)."""
    if per_batch.shape[0] < 2:
        return float("nan")
    a = per_batch[0::2].mean(axis=0)
    b = per_batch[1::2].mean(axis=0)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    r = float(np.corrcoef(a, b)[0, 1])
    return 2 * r / (1 + r) if r > 0 else r  # Spearman-Brown is meaningless for r <= 0: report r itself


def summarize_probe(
    m: ProbeMoments,
    *,
    eta: float | None,
    weight_decay: float | None,
    model: str = "model",
    ids: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    extra: dict | None = None,
    caveats: Sequence[str] = (),
    eta_source: str | None = None,
) -> ProbeResult:
    """Per-item quantities (E4, E7, E8, E9), the section-6 step-6 comparisons and circularity guards.

    Parameters
    ----------
    m : ProbeMoments
    eta : float or None
        Learning rate. None: taken from the (E11) least-squares fit when that gives eta > 0, else
        quantities are reported per unit eta (eta = 1) with a caveat.
    weight_decay : float or None
        lambda. None: ``lambda_rad`` is unknown; only the ``c_fit`` route is used.
    model : str
    ids, texts : sequences of length P, optional
    n_boot : int
        Bootstrap resamples of every correlation.
    seed : int
    extra : dict, optional
        Merged into the summary (B, tau and why they were chosen, ...).
    caveats : sequence of str
        Prepended to the computed caveats.
    eta_source : str, optional
        Where a given ``eta`` came from, reported as ``lr_source`` (e.g. ``"given (--lr)"`` or
        ``"known training value of <model>"``); default ``"given"``. Ignored when ``eta`` is None.

    Returns
    -------
    ProbeResult
    """
    from normscope import theory

    r = m.r
    r2 = r**2
    p = r.size
    k = m.za.shape[0]
    d1, d2, s = m.d1, m.d2, m.s
    disp = m.aa.mean(axis=0)
    caveats = list(caveats)

    # (E11) fit of one lambda_rad and one eta
    try:
        fit = theory.fit_decay_and_lr(r, d1, d2, s)
        fit_d = {"lambda_rad": fit.lambda_rad, "eta": fit.eta, "error": None}
    except InputError as exc:
        fit = None
        fit_d = {"lambda_rad": None, "eta": None, "error": str(exc)}
    if eta is not None:
        eta_used, eta_source = float(eta), (eta_source or "given")
    elif fit is not None and fit.eta > 0:
        eta_used, eta_source = float(fit.eta), "fitted by least squares on (E11)"
    else:
        eta_used, eta_source = 1.0, "unknown (E11 fit not positive): heat and drift are per unit eta"
        caveats.append("the learning rate is unknown and the (E11) fit gave no positive eta: heat and drift are reported per unit eta")
    if fit is not None and (fit.eta <= 0 or fit.lambda_rad <= 0):
        caveats.append(
            f"the (E11) least-squares fit gives lambda_rad = {fit.lambda_rad:.3g}, eta = {fit.eta:.3g}: "
            "not a physical pair (THEORY section 9: expected for AdamW-trained checkpoints); it is reported, not used"
        )

    heat = eta_used**2 * s
    drift = eta_used * d1 + eta_used**2 * d2
    heat_b = eta_used**2 * r2[None, :] * m.aa
    drift_b = eta_used * m.za + eta_used**2 * m.zc
    q = theory.implied_decay(drift, heat, r)
    a_bar = m.a_sum / k
    s_var = s - r2 * (np.sum(a_bar**2, axis=1) - (m.aa.mean(axis=0) - np.sum(a_bar**2, axis=1)) / max(k - 1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        heat_cancel = -2.0 * d2 * r2 / s
    zjd_r2 = m.zjd / r2  # lambda_rad per unit lambda (= k for k-homogeneous f)
    neg_q = q < 0
    if weight_decay is not None:
        lam_rad = float(weight_decay) * zjd_r2
        c_item = eta_used * lam_rad
        with np.errstate(divide="ignore", invalid="ignore"):
            q_over_c = np.where(c_item > 0, q / c_item, np.nan)
        r_eq = theory.equilibrium_radius(drift, heat, c=np.where(c_item > 0, c_item, np.nan))
        flag = np.where(lam_rad <= 0, "lambda_rad<=0", np.where(neg_q, "q<0", ""))
        r_eq = np.where(flag == "", r_eq, np.nan)
        neg_lam = int(np.sum(lam_rad < 0))
    else:
        lam_rad = np.full(p, np.nan)
        c_item = np.full(p, np.nan)
        q_over_c = np.full(p, np.nan)
        r_eq = np.full(p, np.nan)
        flag = np.where(neg_q, "q<0", "")
        neg_lam = int(np.sum(zjd_r2 < 0))
    finite_q = q[np.isfinite(q)]
    c_fit = float(np.median(finite_q)) if finite_q.size else float("nan")
    if c_fit > 0:
        r_eq_cfit = theory.equilibrium_radius(drift, heat, c=c_fit)
        r_eq_cfit = np.where(neg_q, np.nan, r_eq_cfit)
    else:
        r_eq_cfit = np.full(p, np.nan)
        caveats.append(f"c_fit = median q = {c_fit:.3g} is not positive: no decay balances the median item, so R_eq(x; c_fit) is undefined")

    se = math.sqrt(k)
    df = pd.DataFrame(
        {
            "id": list(ids) if ids is not None else [str(i) for i in range(p)],
            **({"text": list(texts)} if texts is not None else {}),
            "r": r,
            "d1": d1,
            "d2": d2,
            "s": s,
            "displacement": disp,
            "heat_rate": s / r2**2,
            "heat": heat,
            "heat_se": heat_b.std(axis=0, ddof=1) / se,
            "drift": drift,
            "drift_se": drift_b.std(axis=0, ddof=1) / se,
            "s_var": s_var,
            "heat_cancelled_by_d2": heat_cancel,
            "lambda_rad_per_lambda": zjd_r2,
            "lambda_rad": lam_rad,
            "q": q,
            "q_over_c": q_over_c,
            "r_eq": r_eq,
            "r_eq_cfit": r_eq_cfit,
            "r_eq_flag": flag,
        }
    )

    n_neg_q = int(neg_q.sum())
    if n_neg_q:
        caveats.append(
            f"{n_neg_q} of {p} items have q < 0: their measured radial motion (drift + heat/2R^2) is inward even "
            "without decay, so no positive decay balances it at the observed norm; (E7) would only return the "
            "collapsed inward-drift root, so their R_eq is NaN (flag 'q<0')"
        )
    if neg_lam:
        caveats.append(
            f"{neg_lam} of {p} items have lambda_rad < 0 under this decay mask: decaying the masked weights "
            "increases their norm at first order, so (E7) has no stable equilibrium for them (R_eq NaN, flag "
            "'lambda_rad<=0'); THEORY section 9"
        )
    corr = {
        "corr_norm_heat": _corr(r, heat, n_boot=n_boot, seed=seed),
        "corr_norm_drift": _corr(r, drift, n_boot=n_boot, seed=seed),
        "corr_req_norm": _corr(r_eq_cfit, r, n_boot=n_boot, seed=seed),
        "corr_norm_displacement": _corr(r, disp, n_boot=n_boot, seed=seed),
        "corr_norm_heat_rate": _corr(r, s / r2**2, n_boot=n_boot, seed=seed),
        "corr_norm_d2": _corr(r, d2, n_boot=n_boot, seed=seed),
    }
    if weight_decay is not None:
        corr["corr_req_lambda_rad_norm"] = _corr(r_eq, r, n_boot=n_boot, seed=seed)
    hc = float(np.nanmedian(heat_cancel))
    if hc > 0.5:
        caveats.append(
            f"the second-order radial term cancels a median {hc:.0%} of the heat (-2 D2 R^2 / S): any heat-only "
            "reading is incomplete without D2 (THEORY section 9)"
        )
    ch, cd = corr["corr_norm_heat"]["spearman"], corr["corr_norm_displacement"]["spearman"]
    if ch is not None and cd is not None and abs(ch) > abs(cd) + 0.2:
        caveats.append(
            f"circularity: Spearman(R, heat) = {ch:.2f} but Spearman(R, E||a||^2) = {cd:.2f}; heat = R^2 E||a||^2 "
            "contains R^2, and the difference between the two is that mechanical factor"
        )
    rel_drift, rel_heat = _split_half(drift_b), _split_half(heat_b)
    if np.isfinite(rel_drift) and rel_drift < 0.5:
        caveats.append(
            f"drift split-half reliability is {rel_drift:.2f}: the batch-to-batch variation of the radial "
            "displacement is comparable with the variation between items; more batches are needed (THEORY B3)"
        )
    caveats.append(
        "single checkpoint: the drift of one snapshot is dominated by the momentary full-batch motion "
        "(THEORY B3); heat is the robust signal"
    )
    if m.fd_check is not None and m.fd_check["max_rel_diff"] > 0.02:
        caveats.append(
            f"D2 in float32 differs from a float64 spot check by up to {m.fd_check['max_rel_diff']:.1%} of mean |D2|: "
            "rerun with fd_dtype='float64' (--fd-dtype float64) for accurate second-order terms"
        )
    valid_qc = q_over_c[np.isfinite(q_over_c)]
    if weight_decay is not None:
        qc = {"mean": float(np.mean(valid_qc)) if valid_qc.size else None,
              "median": float(np.median(valid_qc)) if valid_qc.size else None,
              "sd": float(np.std(valid_qc)) if valid_qc.size > 1 else None,
              "n": int(valid_qc.size), "c": "eta * lambda_rad(x)"}
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            qcf = q / c_fit
        qcf = qcf[np.isfinite(qcf)]
        qc = {"mean": float(np.mean(qcf)) if qcf.size else None, "median": float(np.median(qcf)) if qcf.size else None,
              "sd": float(np.std(qcf)) if qcf.size > 1 else None, "n": int(qcf.size), "c": "c_fit"}
    rel_err = (r_eq_cfit - r) / r
    summary = {
        "model": model,
        "n_items": p,
        "batches": k,
        **(extra or {}),
        "lr": eta_used,
        "lr_source": eta_source,
        "weight_decay": weight_decay,
        **corr,
        "heat_cancelled_by_d2": hc,
        "n_negative_q": n_neg_q,
        "n_negative_lambda_rad": neg_lam,
        "c_fit": c_fit,
        "q_over_c_mean": qc["mean"],
        "q_over_c": qc,
        "r_eq_cfit_mean_abs_rel_error": float(np.nanmean(np.abs(rel_err))) if np.isfinite(rel_err).any() else None,
        "fit_e11": fit_d,
        "lambda_rad_per_lambda": {"median": float(np.median(zjd_r2)), "min": float(np.min(zjd_r2)), "max": float(np.max(zjd_r2))},
        "reliability": {"drift_split_half": rel_drift, "heat_split_half": rel_heat,
                        "method": "Pearson r across items of even- vs odd-batch means, Spearman-Brown corrected 2r/(1+r) when r > 0 (r itself when r <= 0)"},
        "median_rel_se": {"heat": float(np.median(df["heat_se"] / np.abs(heat))),
                          "drift": float(np.median(df["drift_se"] / np.abs(drift)))},
        "norm": {"mean": float(r.mean()), "sd": float(r.std()), "min": float(r.min()), "max": float(r.max())},
        "fd": {"dtype": m.fd_dtype, "target": m.fd_target, "eps_median": float(np.median(m.eps)), "check": m.fd_check},
        "loss_mean": float(m.losses.mean()),
        "timings_s": {k2: round(v, 3) for k2, v in m.timings.items()},
        "caveats": caveats,
    }
    return ProbeResult(summary=to_jsonable(summary), items=df, moments=m)
