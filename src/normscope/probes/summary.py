"""Per-item table, correlations with their CIs, and caveats of the probe (docs/theory.md sections 4, 6, 9)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from normscope import theory
from normscope.errors import InputError
from normscope.probes.balance import balance_test
from normscope.probes.moments import ProbeMoments
from normscope.probes.quantities import item_quantities
from normscope.probes.result import ProbeResult
from normscope.probes.uncertainty import (
    CI_BATCHES_ITEMS,
    CI_ITEMS_ONLY,
    CorrSpec,
    batch_item_cis,
    k_convergence,
)

from normscope.stats import correlation, p_text  # re-exported: the one p formatter

__all__ = ["summarize_probe", "correlation_specs", "p_text"]


def correlation_specs(*, weight_decay: float | None, without_decay: bool) -> list[CorrSpec]:
    """The probe's correlations ``(key, x, y)`` in display order (R_eq readings only where they exist)."""
    specs: list[CorrSpec] = [("corr_norm_heat", "r", "heat"), ("corr_norm_drift", "r", "drift"),
                             ("corr_req_norm", "r_eq_cfit", "r")]
    if weight_decay is not None:
        specs.append(("corr_req_lambda_rad_norm", "r_eq", "r"))
    if without_decay:
        specs.append(("corr_req_nodecay_norm", "r_eq_nodecay", "r"))
    specs += [("corr_norm_displacement", "r", "displacement"), ("corr_norm_heat_rate", "r", "heat_rate"),
              ("corr_norm_d2", "r", "d2")]
    return specs


def _excluded(q: dict, x: str, y: str) -> tuple[int, dict]:
    """Items a correlation leaves out (x or y undefined), counted by the flag saying why (the same mask)."""
    bad = ~(np.isfinite(np.asarray(q[x], dtype=float)) & np.isfinite(np.asarray(q[y], dtype=float)))
    reasons: Counter = Counter()
    for col in (x, y):
        flag = q.get(f"{col}_flag")
        col_bad = bad & ~np.isfinite(np.asarray(q[col], dtype=float))
        for i in np.flatnonzero(col_bad):
            reasons[str(flag[i]) if flag is not None and flag[i] else f"{col} not finite"] += 1
    return int(bad.sum()), dict(reasons)


def _block(q: dict, spec: CorrSpec, ci: dict, *, n_boot: int, seed: int) -> dict:
    _, x, y = spec
    n_excl, reasons = _excluded(q, x, y)
    base = {"x": x, "y": y, "n_excluded": n_excl, "excluded": reasons}
    xa, ya = np.asarray(q[x], dtype=float), np.asarray(q[y], dtype=float)
    try:
        res = correlation(xa, ya, n_boot=n_boot, n_perm=min(n_boot, 1000), seed=seed)
    except InputError as exc:
        return {**base, "pearson": None, "spearman": None, "n": int(np.sum(np.isfinite(xa) & np.isfinite(ya))),
                "ci": {"pearson": [None, None], "spearman": [None, None], "resamples": CI_BATCHES_ITEMS},
                "ci_items_only": {"pearson": [None, None], "spearman": [None, None], "resamples": CI_ITEMS_ONLY},
                "p_value": None, "p_text": "no p-value", "note": str(exc)}
    return {
        **base,
        "pearson": res.pearson, "spearman": res.spearman, "n": res.n,
        "ci": {"pearson": ci["pearson"], "spearman": ci["spearman"], "level": res.ci_level, "n_boot": n_boot,
               "n_undefined": ci["n_undefined"], "resamples": CI_BATCHES_ITEMS},
        "ci_items_only": {"pearson": list(res.pearson_ci), "spearman": list(res.spearman_ci), "level": res.ci_level,
                          "n_boot": n_boot, "resamples": CI_ITEMS_ONLY},
        "p_value": res.p_value, "p_text": p_text(res.p_value, res.n_perm),
        "p_method": f"Spearman, two-sided, {res.n_perm} permutations of the items with the K batches held fixed",
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


def _stats(v: np.ndarray, what: str) -> dict:
    v = v[np.isfinite(v)]
    return {"mean": float(np.mean(v)) if v.size else None, "median": float(np.median(v)) if v.size else None,
            "sd": float(np.std(v)) if v.size > 1 else None, "n": int(v.size), "c": what}


def _fit_eta(m: ProbeMoments, eta: float | None, eta_source: str | None, caveats: list) -> tuple[float, str, dict]:
    """eta: the given value, else the (E11) fit when positive, else 1 (per unit eta); with the fit itself."""
    try:
        fit = theory.fit_decay_and_lr(m.r, m.d1, m.d2, m.s)
        fit_d = {"lambda_rad": fit.lambda_rad, "eta": fit.eta, "error": None}
    except InputError as exc:
        fit, fit_d = None, {"lambda_rad": None, "eta": None, "error": str(exc)}
    if fit is not None and (fit.eta <= 0 or fit.lambda_rad <= 0):
        caveats.append(f"the (E11) least-squares fit gives lambda_rad = {fit.lambda_rad:.3g}, eta = {fit.eta:.3g}: not a "
                       "physical pair (docs/theory.md section 9: expected for AdamW-trained checkpoints); reported, not used")
    if eta is not None:
        return float(eta), eta_source or "given", fit_d
    if fit is not None and fit.eta > 0:
        return float(fit.eta), "fitted by least squares on (E11)", fit_d
    caveats.append("the learning rate is unknown and the (E11) fit gave no positive eta: heat and drift are per unit eta")
    return 1.0, "unknown (E11 fit not positive): heat and drift are per unit eta", fit_d


def summarize_probe(
    m: ProbeMoments,
    *,
    eta: float | None,
    weight_decay: float | None,
    without_decay: bool = False,
    ids: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    fields: dict | None = None,
    caveats: Sequence[str] = (),
    eta_source: str | None = None,
):
    """Per-item quantities (E4, E7, E8, E9), the correlations of section 6 step 6 with batch-aware CIs,
    the K-convergence table, and the circularity guards of docs/theory.md section 9.

    Parameters
    ----------
    m : ProbeMoments
    eta : float or None
        Learning rate. None: the (E11) least-squares fit when it gives eta > 0, else per unit eta.
    weight_decay : float or None
        lambda for lambda_rad, q/c and R_eq(lambda_rad) (the checkpoint's own value or the user's
        what-if value; None: not computed).
    without_decay : bool
        The checkpoint was trained without decay: add the c = 0 reading ``r_eq_nodecay``.
    ids, texts : sequences of length P, optional
    n_boot : int
        Replicates of every bootstrap (two-stage and items-only).
    seed : int
    fields : dict, optional
        The other :class:`ProbeResult` fields (model, settings and their sources, junk...).
    caveats : sequence of str
        Prepended to the computed caveats.
    eta_source : str, optional
        Where a given ``eta`` came from (``lr_source``).

    Returns
    -------
    ProbeResult
    """
    r, p, k = m.r, m.r.size, m.za.shape[0]
    caveats = list(caveats)
    eta_used, eta_source, fit_d = _fit_eta(m, eta, eta_source, caveats)
    kw = dict(eta=eta_used, weight_decay=weight_decay, without_decay=without_decay)
    q = item_quantities(r, m.d1, m.d2, m.aa.mean(axis=0), m.zjd, **kw)
    specs = correlation_specs(weight_decay=weight_decay, without_decay=without_decay)
    cis = batch_item_cis(m, specs, n_boot=n_boot, seed=seed, **kw) if k >= 2 else {
        s[0]: {"pearson": [None, None], "spearman": [None, None], "n_undefined": 0} for s in specs}
    corr = {spec[0]: _block(q, spec, cis[spec[0]], n_boot=n_boot, seed=seed) for spec in specs}

    r2 = r**2
    heat_b = eta_used**2 * r2[None, :] * m.aa
    drift_b = eta_used * m.za + eta_used**2 * m.zc
    a_bar = m.a_sum / k
    abar2 = np.sum(a_bar**2, axis=1)
    s_var = q["s"] - r2 * (abar2 - (q["displacement"] - abar2) / max(k - 1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        heat_cancel = -2.0 * m.d2 * r2 / q["s"]
    se = math.sqrt(k)
    cols = {"id": list(ids) if ids is not None else [str(i) for i in range(p)]}
    if texts is not None:
        cols["text"] = list(texts)
    for c in ("r", "d1", "d2", "s", "displacement", "heat_rate", "heat"):
        cols[c] = q[c]
    cols["heat_se"] = heat_b.std(axis=0, ddof=1) / se if k > 1 else np.full(p, np.nan)
    cols["drift"] = q["drift"]
    cols["drift_se"] = drift_b.std(axis=0, ddof=1) / se if k > 1 else np.full(p, np.nan)
    cols.update(s_var=s_var, heat_cancelled_by_d2=heat_cancel)
    for c in ("lambda_rad_per_lambda", "lambda_rad", "q", "q_over_c", "r_eq", "r_eq_flag", "r_eq_cfit",
              "r_eq_cfit_flag", "r_eq_nodecay", "r_eq_nodecay_flag"):
        if c in q:
            cols[c] = q[c]
    df = pd.DataFrame(cols)

    neg_q = int(np.sum(q["q"] < 0))
    neg_lam = int(np.sum(q["lambda_rad_per_lambda"] < 0))
    hc = float(np.nanmedian(heat_cancel)) if np.isfinite(heat_cancel).any() else None
    caveats += _caveats(corr, m, p, hc, neg_q, neg_lam, weight_decay, without_decay)
    rel_drift, rel_heat = _split_half(drift_b), _split_half(heat_b)
    if np.isfinite(rel_drift) and rel_drift < 0.5:
        caveats.append(f"drift split-half reliability is {rel_drift:.2f}: the batch-to-batch variation of the radial "
                       "displacement is comparable with the variation between items; more batches are needed "
                       "(docs/theory.md B3)")
    c_fit = q["c_fit"]
    rel_err = (q["r_eq_cfit"] - r) / r
    with np.errstate(divide="ignore", invalid="ignore"):
        qc = _stats(q["q_over_c"], "eta * lambda_rad(x)") if weight_decay is not None else \
            _stats(q["q"] / c_fit if c_fit and c_fit > 0 else np.full(p, np.nan), "c_fit")
    summary = dict(
        **(fields or {}),
        n_items=p, batches=k, lr=eta_used, lr_source=eta_source, weight_decay=weight_decay,
        **{key: corr.get(key) for key in ProbeResult.CORRELATIONS},
        k_convergence=k_convergence(m, specs, n_boot=n_boot, seed=seed, **kw),
        heat_cancelled_by_d2=hc, n_negative_q=neg_q, n_negative_lambda_rad=neg_lam,
        c_fit=c_fit, q_over_c_mean=qc["mean"], q_over_c=qc,
        r_eq_cfit_mean_abs_rel_error=float(np.nanmean(np.abs(rel_err))) if np.isfinite(rel_err).any() else None,
        balance=balance_test(m, eta=eta_used, n_perm=n_boot, n_boot=n_boot if k >= 2 else 0, seed=seed),
        fit_e11=fit_d,
        lambda_rad_per_lambda={"median": float(np.median(q["lambda_rad_per_lambda"])),
                               "min": float(np.min(q["lambda_rad_per_lambda"])),
                               "max": float(np.max(q["lambda_rad_per_lambda"]))},
        reliability={"drift_split_half": rel_drift, "heat_split_half": rel_heat,
                     "method": "Pearson r across items of even- vs odd-batch means, Spearman-Brown corrected "
                               "2r/(1+r) when r > 0 (r itself when r <= 0)"},
        median_rel_se={"heat": float(np.median(df["heat_se"] / np.abs(df["heat"]))),
                       "drift": float(np.median(df["drift_se"] / np.abs(df["drift"])))},
        norm={"mean": float(r.mean()), "sd": float(r.std()), "min": float(r.min()), "max": float(r.max())},
        second_order=_second_order(m),
        fd=({"dtype": m.fd_dtype, "target": m.fd_target, "eps_median": float(np.nanmedian(m.eps)), "check": m.fd_check}
            if m.second_order == "fd" else None),
        loss_mean=float(m.losses.mean()),
        timings_s={k2: round(v, 3) for k2, v in m.timings.items()},
        caveats=caveats,
    )
    return ProbeResult(**summary, items=df, moments=m)


def _second_order(m) -> dict:
    """How D2's term ``c`` was computed, with its float64 check and the reason of a fallback."""
    if m.second_order == "jvp":
        method = "forward-over-forward AD (torch.func.jvp of a jvp): exact, float32, no step size"
    else:
        method = f"central finite differences in {m.fd_dtype}, step target eps ||a||/R = {m.fd_target:g}"
    return {"method": m.second_order, "description": method, "check": m.second_order_check,
            "fallback": m.second_order_note}


def _caveats(corr, m, p, hc, neg_q, neg_lam, weight_decay, without_decay) -> list[str]:
    out = []
    if neg_q:
        out.append(f"{neg_q} of {p} items have q < 0: their measured radial motion (drift + heat/2R^2) is inward even "
                   "without decay; (E7) still has a positive root for them (docs/theory.md section 4), so they stay "
                   "in the prediction check")
    if weight_decay is not None:
        n_l = corr["corr_req_lambda_rad_norm"]["excluded"].get("lambda_rad<=0", 0)
        if n_l:
            out.append(f"{n_l} of {p} items have lambda_rad <= 0 under this decay mask: decaying the masked weights does "
                       "not shrink their norm at first order, so (E7) with c = eta lambda_rad has no stable root; they "
                       "are left out of the R_eq(lambda_rad) check only (docs/theory.md section 9)")
    elif neg_lam:
        out.append(f"lambda_rad/lambda < 0 for {neg_lam} of {p} items under this decay mask (a property of the model "
                   "and the mask, docs/theory.md section 9; no lambda is used here)")
    if without_decay:
        n_o = corr["corr_req_nodecay_norm"]["excluded"].get("drift>=0 (no decay)", 0)
        out.append(f"without decay (c = 0) Theorem 1 balances heat only by inward drift, R^2 = Sigma^2/(2|D~|) "
                   f"(docs/theory.md section 8): {n_o} of {p} items have drift >= 0 and no such root")
    if hc is not None and hc > 0.5:
        out.append(f"the second-order radial term cancels a median {hc:.0%} of the heat (-2 D2 R^2 / S): any heat-only "
                   "reading is incomplete without D2 (docs/theory.md section 9)")
    ch, cd = corr["corr_norm_heat"]["spearman"], corr["corr_norm_displacement"]["spearman"]
    if ch is not None and cd is not None and abs(ch) > abs(cd) + 0.2:
        out.append(f"circularity: Spearman(R, heat) = {ch:.2f} but Spearman(R, E||a||^2) = {cd:.2f}; heat = R^2 E||a||^2 "
                   "contains R^2, and the difference between the two is that mechanical factor")
    out.append("single checkpoint: the drift of one snapshot is dominated by the momentary full-batch motion "
               "(docs/theory.md B3); heat is the robust signal")
    if m.second_order_note is not None:
        out.append(m.second_order_note)
    chk2 = m.second_order_check
    if m.second_order == "jvp" and chk2 is not None and chk2.get("verdict") == "undecided":
        out.append(f"the float64 check of the exact second-order term was undecided: finite differences at two steps "
                   f"disagree with each other by up to {chk2['fd_own_error']:.2g} of mean |D2| (the model is not smooth "
                   "at the step's scale, e.g. ReLU kinks), so they are no reference; D2 is the nested JVP's, the exact "
                   "derivative wherever it exists")
    if m.fd_check is not None:
        chk = m.fd_check
        out.append(f"D2 by float32 finite differences differs from a float64 spot check ({chk['items']} items, first "
                   f"batch) by a median {chk['median_rel_diff']:.2%} and at most {chk['max_rel_diff']:.2%} of mean |D2|"
                   + ("; rerun with --fd-dtype float64 for accurate second-order terms" if chk["max_rel_diff"] > 0.02
                      else ""))
    return out
