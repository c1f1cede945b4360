"""Tests of the decisive transformer design (issue 27): pure functions first, then a tiny design end to end.

- the stationarity detector on constructed trajectories (stationary, drifting, collapsed; the audit's
  pilot collapse);
- the lambda-scaling fit recovers known exponents (a simulated free table under SGD: -1/4; an
  outward-drift-dominated table: -1/2);
- the snapshot prediction against (E7) by hand, every q < 0 item kept, the permutation null's power;
- a tiny design (a 32-wide BERT on a synthetic pairs file) end to end: the per-item outputs permute
  with the probe items and the summary does not change; a killed run resumes to the same record; a
  rerun recomputes nothing; bad input is refused before any work; the CLI and the report section.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from _close import assert_item_columns_match

from normscope import theory
from normscope.claims import CLAIMS
from normscope.errors import InputError
from normscope.lab.prediction import snapshot_prediction
from normscope.lab.scaling import growth_without_decay, lambda_scaling_fit, predicted_exponent
from normscope.lab.stationarity import classify_window


# ---------------------------------------------------------------- stationarity detector
def _window(n=200, p=16, trend=0.0, noise=0.02, seed=0, equal=False):
    rng = np.random.default_rng(seed)
    base = np.full(p, 4.0) if equal else 2.0 + rng.random(p) * 4.0
    t = np.linspace(0, 1, n)[:, None]
    r2 = base[None, :] * (1 + trend * t) * (1 + noise * rng.normal(size=(n, p)))
    return r2


def test_stationarity_detector_labels_constructed_trajectories():
    b = 32
    loss = np.full(400, 1.2)
    st = classify_window(_window(), loss, batch_size=b, accuracy=0.30, n_eval=256, burn_in=2000, relaxation_steps=500)
    assert st["label"] == "stationary" and st["passed"] and not st["reasons"]
    assert abs(st["relative_change"]) <= 0.03 and st["relaxations_before_window"] == 4.0
    # a 10 % drift of mean R^2 over the window: drifting, whatever the other checks
    dr = classify_window(_window(trend=0.10), loss, batch_size=b, accuracy=0.30, n_eval=256)
    assert dr["label"] == "drifting" and "changed by" in dr["reasons"][0]
    assert dr["relative_change"] == pytest.approx(np.mean(_window(trend=0.1)[100:]) / np.mean(_window(trend=0.1)[:100]) - 1)
    # a constant drift: the longer the window, the larger the change between its halves (the rule tightens)
    short = classify_window(_window(n=100, trend=0.02), loss, batch_size=b)
    long = classify_window(_window(n=400, trend=0.08), loss, batch_size=b)
    assert abs(long["relative_change"]) > abs(short["relative_change"])
    # stable norms, but the window starts before one relaxation time: drifting
    early = classify_window(_window(), loss, batch_size=b, burn_in=100, relaxation_steps=500)
    assert early["label"] == "drifting" and "relaxation" in early["reasons"][0]
    # the audit's pilot: chance loss ln B, identical embeddings (norm variation 1e-5 relative) while the mean R^2
    # doubled; the old rule |median q/c - 1| <= 0.25 called it stationary
    pilot = _window(trend=1.0, noise=1e-5, equal=True)
    col = classify_window(pilot, np.full(400, math.log(b)) + 1e-3, batch_size=b, accuracy=1 / 256, n_eval=256)
    assert col["label"] == "collapsed" and not col["passed"]
    assert {k for k, c in col["checks"].items() if not c["passed"]} >= {"loss_below_chance", "norms_differ",
                                                                          "retrieval_above_chance", "mean_r2_stable"}
    # stable norms and a working loss, but retrieval at chance: collapsed (never stationary)
    acc = classify_window(_window(), loss, batch_size=b, accuracy=0.004, n_eval=256)
    assert acc["label"] == "collapsed" and "chance" in acc["reasons"][0]
    nan = _window()
    nan[5, 3] = np.nan
    assert classify_window(nan, loss, batch_size=b)["label"] == "collapsed"


# ---------------------------------------------------------------- lambda scaling
def _free_table(lam, *, eta=1.0, p=24, d=8, steps=3000, every=5, seed=0, start_r=None):
    """Free vectors under SGD with decoupled decay and a tangent gradient of size gamma_i / R (E1, E10):
    the heat eta^2 E gamma_b^2 does not depend on R, so R_eq^4 = Sigma^2 / (2c) and R ~ lambda^(-1/4)."""
    rng = np.random.default_rng(seed)
    gamma = 0.02 * (1 + 3 * np.arange(p) / p)
    z = rng.normal(size=(p, d))
    r0 = (gamma[:, None] ** 2 / (2 * eta * lam)) ** 0.25 if start_r is None else start_r  # default: near R_eq
    z *= r0 / np.linalg.norm(z, axis=1, keepdims=True)
    out = []
    for t in range(steps):
        r = np.linalg.norm(z, axis=1, keepdims=True)
        g = rng.normal(size=(p, d))
        g -= (g * z).sum(1, keepdims=True) * z / r**2  # tangent
        size2 = rng.exponential(size=(p, 1))  # ||g||^2 R^2 / gamma^2 ~ Exp(1): noisy kicks, mean heat eta^2 gamma^2
        g *= (gamma[:, None] * np.sqrt(size2) / r) / np.linalg.norm(g, axis=1, keepdims=True)
        z = (1 - eta * lam) * z - eta * g
        if t >= steps // 2 and t % every == 0:
            out.append((z * z).sum(1))
    return np.array(out)


def test_lambda_scaling_fit_recovers_known_exponents():
    lams = [0.5e-3, 1e-3, 2e-3]
    blocks = [_free_table(lam).reshape(10, -1, 24).mean(axis=1) for lam in lams]  # 10 time blocks of the window
    fit = lambda_scaling_fit(lams, blocks, n_boot=500, seed=1)
    # exact discrete balance (E1): R^4 = gamma^2 / (1 - (1 - eta lambda)^2), slope -1/4 up to O(eta lambda)
    x = np.log(lams)
    y = -0.25 * np.log(1 - (1 - np.asarray(lams)) ** 2)
    exact = float(np.polyfit(x, y, 1)[0])
    assert exact == pytest.approx(-0.25, abs=1e-3) and fit["slope"] == pytest.approx(exact, abs=0.01)
    assert fit["ci"][0] <= exact <= fit["ci"][1] and fit["ci"][1] - fit["ci"][0] < 0.05
    assert fit["n_items"] == 24 and fit["n_blocks"] == [10, 10, 10]
    assert predicted_exponent("sgd", 1.0)["exponent"] == -0.25  # heat-dominated free vector (h = 1)
    assert predicted_exponent("sgd", 0.0)["exponent"] == -0.5 and predicted_exponent("adamw", None)["exponent"] == -0.5
    assert predicted_exponent("momentum", 3.0)["exponent"] == pytest.approx(-1 / 8)
    # outward drift dominates: R^2 = D* = D~ / (eta lambda), slope -1/2 (blocks built from the closed form + noise)
    rng = np.random.default_rng(2)
    dstar = 1 + rng.random(30)
    blocks = [(dstar / lam)[None, :] * (1 + 0.01 * rng.normal(size=(8, 30))) for lam in lams]
    fit2 = lambda_scaling_fit(lams, blocks, n_boot=500, seed=1)
    assert fit2["slope"] == pytest.approx(-0.5, abs=0.005) and fit2["ci"][0] <= -0.5 <= fit2["ci"][1]
    with pytest.raises(InputError, match="distinct positive"):
        lambda_scaling_fit([1e-3, 1e-3], blocks[:2])


def test_growth_without_decay_free_vectors_grow():
    r2 = _free_table(0.0, steps=2000, every=10, start_r=0.1)  # lambda ~ 0: R^2 grows by eta^2 gamma^2 / R^2 per step (E1)
    g = growth_without_decay(r2, n_boot=300)
    assert g["grew"] and g["fraction_grew"] == 1.0 and g["ratio"] > 1 and g["ci"][0] > 1


# ---------------------------------------------------------------- snapshot prediction
def _moments(seed=0, s=4, k=6, p=12, equilibrium=False):
    """Probe moments at S snapshots of P items; with ``equilibrium`` the items sit at their free-vector R_eq."""
    rng = np.random.default_rng(seed)
    eta, lam = 0.05, 0.02
    zjd = np.ones((s, p))  # lambda_rad = lambda (R^2 = zjd at r = 1; rescaled below)
    e = 0.5 + 2 * rng.random(p)  # E||a||^2 per unit eta^2
    if equilibrium:  # R^4 = Sigma^2 / (2c) with Sigma^2 = eta^2 R^2 e, i.e. R^2 = eta e / (2 lam)
        r = np.sqrt(eta * e / (2 * lam))
        d1 = np.zeros(p)
    else:
        r = 1 + rng.random(p)
        d1 = rng.normal(size=p) * 2.0
    r_snap = r[None, :] * (1 + 0.005 * rng.normal(size=(s, p)))
    aa = e[None, None, :] * (1 + 0.05 * rng.normal(size=(s, k, p)))
    za = d1[None, None, :] * r[None, None, :] ** 2 + 0.01 * rng.normal(size=(s, k, p))
    zc = 0.1 * rng.normal(size=(s, k, p))
    zjd = zjd * r_snap**2
    r2_blocks = r[None, :] ** 2 * (1 + 0.005 * rng.normal(size=(s, p)))
    return dict(za=za, zc=zc, aa=aa, r_snap=r_snap, zjd=zjd, r2_blocks=r2_blocks), eta, lam


def test_snapshot_prediction_matches_e7_by_hand_and_keeps_negative_q():
    m, eta, lam = _moments()
    res = snapshot_prediction(**m, eta=eta, weight_decay=lam, n_boot=300, n_perm=300, seed=0)
    # by hand: heat and drift averaged over snapshots and batches, c = eta lambda_rad (E4), (E7) root
    r2 = m["r_snap"] ** 2
    heat = (eta**2 * r2[:, None, :] * m["aa"]).mean(axis=(0, 1))
    drift = (eta * m["za"] + eta**2 * m["zc"]).mean(axis=(0, 1))
    c = eta * lam * (m["zjd"] / r2).mean(axis=0)
    r_eq = theory.equilibrium_radius(drift, heat, c=c)
    np.testing.assert_allclose(res["items"]["r_eq"], r_eq, rtol=1e-12)
    r_bar = np.sqrt(m["r2_blocks"].mean(axis=0))
    rel = (r_eq - r_bar) / r_bar
    assert res["stats"]["mean_abs_rel_error"] == pytest.approx(np.mean(np.abs(rel)))
    assert res["stats"]["pearson"] == pytest.approx(np.corrcoef(r_eq, r_bar)[0, 1])
    q = theory.implied_decay(drift, heat, np.sqrt(r2.mean(axis=0)))
    neg = q < 0
    assert neg.any() and res["n_negative_q"] == int(neg.sum())  # inward drift beats heat for some items ...
    assert np.isfinite(res["items"]["r_eq"]).all() and res["n_items"] == 12  # ... and none is dropped:
    assert (res["items"]["r_eq"][neg] < np.sqrt(r2.mean(axis=0))[neg]).all()  # (E7) puts R_eq below their norm
    assert f"{int(neg.sum())} of 12 items have q < 0" in res["negative_q"]
    for name, ci in res["ci"].items():
        assert ci[0] <= res["stats"][name] <= ci[1] or name == "median_rel_error", name
    # momentum: (E12) on heat and drift
    mom = snapshot_prediction(**m, eta=eta, weight_decay=lam, optimizer="momentum", beta=0.9, n_boot=20, n_perm=20)
    np.testing.assert_allclose(mom["items"]["heat"], heat / 0.01, rtol=1e-12)
    np.testing.assert_allclose(mom["items"]["drift"], drift / 0.1, rtol=1e-12)


def test_snapshot_prediction_is_permutation_equivariant_and_the_null_has_power():
    m, eta, lam = _moments(seed=3, p=20, equilibrium=True)
    perm = np.random.default_rng(5).permutation(20)
    texts = np.array([f"w{i:02d}" for i in range(20)])
    a = snapshot_prediction(**m, eta=eta, weight_decay=lam, order=np.argsort(texts), n_boot=300, n_perm=300)
    mp = {k: v[..., perm] for k, v in m.items()}
    b = snapshot_prediction(**mp, eta=eta, weight_decay=lam, order=np.argsort(texts[perm]), n_boot=300, n_perm=300)
    for key in ("r_eq", "r_bar", "heat", "drift", "rel_error", "q_over_c"):
        np.testing.assert_allclose(b["items"][key], a["items"][key][perm], rtol=1e-12, err_msg=key)
    assert json.dumps(b["stats"]) == json.dumps(a["stats"]) and json.dumps(b["ci"]) == json.dumps(a["ci"])
    assert json.dumps(b["null"]) == json.dumps(a["null"])
    # items at their own equilibrium: own statistics predict within noise, other items' do not
    assert a["stats"]["mean_abs_rel_error"] < 0.03
    assert a["null"]["mean_abs_rel_error"]["median"] > 5 * a["stats"]["mean_abs_rel_error"]
    assert a["null"]["mean_abs_rel_error"]["p"] <= 2 / 301


# ---------------------------------------------------------------- scorecard rows (pure)
def _claim_input(label="stationary", stat=0.05, ci=(0.03, 0.07), p=0.001, p_above=0.999, step=0.02,
                 gain_ci=(0.01, 0.05), scale=None):
    return {"design": "full", "stationary": label == "stationary", "mean_abs_rel_error": stat,
            "mean_abs_rel_error_ci": list(ci), "null_p_mean_abs_rel_error": p, "probe_items": 64,
            "decay_mask": "final-layernorm", "encoder": {"config": {"hidden": 128}},
            "base": {"sgd": {"label": label, "reasons": [] if label == "stationary" else ["mean R^2 changed by +9%"],
                             "eta": 0.03, "lambda": 0.03, "steps": 10000, "burn_in": 5000, "relaxation_steps": 1000.0,
                             "relaxation_unit": "1/(4 eta lambda_rad)", "relative_step": step, "scale": scale,
                             "stationarity": {"relative_change": 0.01, "loss_mean": 1.0, "chance_loss": 3.47,
                                              "accuracy": 0.3, "checks": {}},
                             "prediction": {"n_items": 64, "design": {"snapshots": 16, "batches": 16}, "n_perm": 2000,
                                            "stats": {"gain_over_constant": 0.03, "constant_mean_abs_rel_error": 0.08},
                                            "ci": {"gain_over_constant": list(gain_ci)},
                                            "null": {"mean_abs_rel_error": {"median": 0.2, "p": p,
                                                                            "p_above": p_above}}}}}}


@pytest.mark.parametrize("kw, verdict, direction, size", [
    ({}, "reproduced", "reproduced", "consistent"),                               # beats the null, within 0.10
    ({"stat": 0.3, "ci": (0.2, 0.4)}, "refuted", "reproduced", "larger"),          # beats the null, misses the size
    ({"stat": 0.1, "ci": (0.05, 0.15)}, "inconclusive", "reproduced", "undetermined"),  # size neither shown nor excluded
    ({"p": 0.4, "p_above": 0.6}, "inconclusive", "inconclusive", "consistent"),  # other items' statistics do as well
    ({"p": 0.99, "p_above": 0.01, "stat": 0.3, "ci": (0.2, 0.4)}, "refuted", "refuted", "larger"),
])
def test_items_claim_row_follows_the_shared_rules(kw, verdict, direction, size):
    from normscope.lab.claims import REL_TOL, transformer_items_claim_row

    row = transformer_items_claim_row(_claim_input(**kw))
    assert (row["verdict"], row["direction"], row["size"]) == (verdict, direction, size)
    assert row["key"] == "theorem1_transformer_items" and row["claimed_size"] == f"at most {REL_TOL:g}" and REL_TOL == 0.10
    assert "outside Theorem 1's derivation" in row["what"]  # the paper's caveat travels with the row
    if direction != "reproduced":
        assert "permutation null" in row["reason"]


def test_items_claim_row_needs_stationarity_the_step_gate_and_to_beat_a_constant_predictor():
    from normscope.lab.claims import transformer_items_claim_row

    nd = transformer_items_claim_row(_claim_input(label="drifting"), full_command="normscope lab --size full")
    assert nd["verdict"] == "not decided at this size" and nd["reason"].startswith("the SGD base run's items are drifting")
    assert "+9%" in nd["why"] and "10,000 steps = 10 relaxation units 1/(4 eta lambda_rad)" in nd["tested_on"]
    assert "normscope lab --size full" in nd["needs"]
    big = transformer_items_claim_row(_claim_input(step=0.24))  # items move 24 % of their norm per step
    assert big["verdict"] == "not decided at this size" and big["measured"] is None and "step-size gate" in big["reason"]
    const = transformer_items_claim_row(_claim_input(gain_ci=(-0.01, 0.02)))  # as good as every item the same R_eq
    assert const["verdict"] == "not decided at this size" and "constant predictor" in const["reason"]
    assert all(len(r["reason"].split()) <= 30 for r in (nd, big, const))


def _scale(rel=0.01, ci=(0.005, 0.02), label="stationary"):
    return {"abs_rel_error": abs(rel), "abs_rel_error_ci": list(ci), "rel_error": rel, "rel_error_ci": list(ci),
            "s_observed": 1.0, "s_predicted": 1 + rel, "window_steps": 5000, "resamples": "10 time blocks", "n_blocks": 10,
            "e1": {"max_abs_cos": 1e-7, "balance": 1.001}, "stationarity": {"label": label, "reasons": [] if
                                                                              label == "stationary" else ["changed"]}}


def _scale_input(sgd_slope_ok=True, adamw_ci=(0.3, 0.5), grew=True, adamw_drifting=False, **kw):
    d = _claim_input(scale=_scale(**kw))
    d["base"]["adamw"] = {"scale": _scale(rel=0.4, ci=adamw_ci)}
    sgd_ci = [-0.3, -0.2] if sgd_slope_ok else [-0.36, -0.30]  # inside / outside -0.25 +- 0.0704
    d["scaling"] = {"sgd": {"prediction_in_ci": sgd_slope_ok, "scale_fit": {"slope": -0.26, "ci": sgd_ci}},
                    "adamw": {"prediction_in_ci": True, "scale_fit": {"slope": -0.5, "ci": [-0.55, -0.45]}}}
    d["nodecay"] = {"scale": {"ratio": 1.2, "fraction_of_steps_grew": 1.0, "grew": grew}}
    if adamw_drifting:  # the slope is within -1/2 +- 0.070, but it joins runs whose scale still drifts
        d["scaling"]["adamw"]["scale_all_stationary"] = False
        d["scaling"]["adamw"]["runs"] = [{"name": "scale_adamw_x0.5", "scale_label": "drifting"},
                                         {"name": "base_adamw", "scale_label": "stationary"}]
    return d


@pytest.mark.parametrize("kw, verdict", [
    ({}, "reproduced"),                                              # within 5 %, every condition met
    ({"rel": 0.08, "ci": (0.06, 0.1)}, "refuted"),                   # the whole CI above 5 %
    ({"rel": 0.04, "ci": (0.02, 0.07)}, "inconclusive"),             # straddles 5 %
    ({"sgd_slope_ok": False}, "inconclusive"),                       # slope CI of s outside -1/4 +- 0.070
    ({"adamw_ci": (0.01, 0.03)}, "inconclusive"),                    # AdamW does not fail the SGD form
    ({"grew": False}, "inconclusive"),                               # the no-decay control does not grow
    ({"label": "drifting"}, "not decided at this size"),             # the scale is not stationary
    ({"adamw_drifting": True}, "inconclusive"),                      # AdamW's slope within the margin, runs drifting
])
def test_scale_claim_row(kw, verdict):
    from normscope.lab.claims import SCALE_TOL, transformer_claim_row

    row = transformer_claim_row(_scale_input(**kw))
    assert row["verdict"] == verdict and row["key"] == "theorem1_transformer" and SCALE_TOL == 0.05
    assert row["claimed_size"] == "at most 0.05" and len(row["reason"].split()) <= 30  # the page's one-line reason
    if verdict == "inconclusive" and "ci" not in kw:
        assert "not met:" in row["why"]
    # a window of fewer than 4 relaxation units (blocks) gives no usable CI: not decided
    short = _scale_input(**kw)
    short["base"]["sgd"]["scale"]["n_blocks"] = 2
    assert transformer_claim_row(short)["verdict"] in ("not decided at this size",)
        # a result without a theta_D record (the first, batch-replaying design) is not decided
    old = transformer_claim_row(_claim_input())
    assert old["verdict"] == "not decided at this size" and "replayed" in old["reason"]


# ---------------------------------------------------------------- the decayed scale (pure)
def _free_vector_record(lam, *, eta=0.5, d=64, steps=6000, seed=0, s0=None):
    """A free vector theta under SGD with decoupled decay and a tangent gradient of R-free size gamma / s (E1): the
    record of :mod:`normscope.lab.decisive_run` (theta2, g2, <theta, g>, s2, <theta, s>, theta2 after the step)."""
    rng = np.random.default_rng(seed)
    gamma = 0.05
    th = rng.normal(size=d)
    th *= (s0 or (gamma**2 / (2 * eta * lam)) ** 0.25) / np.linalg.norm(th)
    rec = np.zeros((steps, 6))
    for t in range(steps):
        g = rng.normal(size=d)
        g -= (g @ th) * th / (th @ th)
        g *= gamma * np.sqrt(rng.exponential()) / np.sqrt(th @ th) / np.linalg.norm(g)
        rec[t, :5] = th @ th, g @ g, th @ g, g @ g, th @ g
        th = (1 - eta * lam) * th - eta * g
        rec[t, 5] = th @ th
    return rec


def test_scale_summary_predicts_a_free_vector_with_no_fitted_constant_and_the_slope_is_minus_a_quarter():
    from normscope.lab.decisive_scale import scale_blocks, scale_summary

    lams = [1e-3, 2e-3, 4e-3]
    recs = [_free_vector_record(lam) for lam in lams]
    sm = scale_summary(recs[1], eta=0.5, weight_decay=2e-3, optimizer="sgd", burn_in=3000, relaxation_steps=250,
                       n_boot=300)
    assert sm["e1"]["max_abs_cos"] < 1e-12 and sm["e1"]["max_abs_step_residual"] < 1e-12  # (E1) exactly
    assert sm["e1"]["balance"] - sm["e1"]["boundary"] == pytest.approx(1.0, abs=1e-9)  # the telescoped balance
    assert abs(sm["rel_error"]) < 0.02 and sm["rel_error_ci"][0] <= 0 <= sm["rel_error_ci"][1] + 0.01
    assert sm["stationarity"]["label"] == "stationary"
    fit = lambda_scaling_fit(lams, [scale_blocks(r, 3000) for r in recs], n_boot=300, seed=0)
    assert fit["slope"] == pytest.approx(-0.25, abs=0.02) and fit["ci"][0] - 0.01 <= -0.25 <= fit["ci"][1] + 0.01
    # AdamW's SGD-form prediction on the same record is the same number: the form, not the record, is what differs
    assert scale_summary(recs[1], eta=0.5, weight_decay=2e-3, optimizer="adamw", burn_in=3000)["sgd_form_expected"] is False


def test_scale_stationarity_labels_constructed_trajectories():
    from normscope.lab.decisive_scale import scale_growth, scale_stationarity

    stat = _free_vector_record(2e-3, steps=4000)
    assert scale_stationarity(stat, 2000, 250)["label"] == "stationary"
    # arrival not finished: started 3x above R_eq, the window begins after 0.4 relaxation units and s^2 still falls
    arr = _free_vector_record(2e-3, steps=400, s0=3 * (0.05**2 / (2 * 0.5 * 2e-3)) ** 0.25)
    a = scale_stationarity(arr, 100, 250)
    assert a["label"] == "drifting" and any("relaxation units" in r for r in a["reasons"])
    assert a["relative_change"] < -0.03
    # drifting: a window long enough, but a trend of +10 % in s^2
    drift = stat.copy()
    drift[:, 0] *= np.linspace(1, 1.1, len(drift))
    assert "changed by +" in scale_stationarity(drift, 2000, 250)["reasons"][0]
    # collapsed runs are labelled by the items' detector (above); with no decay the scale can only grow (E1)
    nd = _free_vector_record(1e-12, steps=400, s0=0.5)
    g = scale_growth(nd)
    assert g["grew"] and g["fraction_of_steps_grew"] == 1.0 and g["ratio"] > 1


def test_scale_over_seeds_is_the_mean_of_the_runs_with_a_ci_over_seeds_and_blocks():
    """Runs of constant theta_D and g_D: each run's relative error is known by hand, (eta^2 g2 th2 / 2c)^(1/4) /
    sqrt(th2) - 1, blocks add no spread, so the CI over seeds spans the runs' errors; one run is scale_summary's."""
    from normscope.lab.decisive_scale import scale_over_seeds, scale_summary

    eta, lam = 0.5, 2e-3
    two_c = 1 - (1 - eta * lam) ** 2

    def const(th2, g2, n=400):
        r = np.zeros((n, 6))
        r[:, 0], r[:, 1], r[:, 5] = th2, g2, th2
        return r

    runs = [const(1.0, 4e-3), const(1.0, 5e-3), const(1.2, 4e-3)]
    hand = [(eta**2 * r[0, 1] * r[0, 0] / two_c) ** 0.25 / np.sqrt(r[0, 0]) - 1 for r in runs]
    out = scale_over_seeds([(r, 100, 30) for r in runs], eta=eta, weight_decay=lam, optimizer="sgd", n_boot=400)
    assert out["n_seeds"] == 3 and out["rel_error"] == pytest.approx(np.mean(hand), rel=1e-12)
    assert [x["rel_error"] for x in out["per_seed"]] == pytest.approx(hand, rel=1e-12)
    assert min(hand) - 1e-12 <= out["rel_error_ci"][0] < out["rel_error_ci"][1] <= max(hand) + 1e-12
    assert out["between_seed_sd"] == pytest.approx(np.std(hand, ddof=1), rel=1e-9) and "seeds" in out["resamples"]
    # one run: the same point and the same block bootstrap as scale_summary
    rec = _free_vector_record(2e-3, steps=3000)
    one = scale_over_seeds([(rec, 1500, 250)], eta=0.5, weight_decay=2e-3, optimizer="sgd", n_boot=300, seed=3)
    sm = scale_summary(rec, eta=0.5, weight_decay=2e-3, optimizer="sgd", burn_in=1500, relaxation_steps=250,
                       n_boot=300, seed=3)
    assert one["rel_error"] == pytest.approx(sm["rel_error"], rel=1e-12) and one["between_seed_sd"] is None
    # free vectors on three batch seeds: each within 2 % of (E2), the CI of the mean covers 0
    many = scale_over_seeds([(_free_vector_record(2e-3, steps=3000, seed=s), 1500, 250) for s in range(3)],
                            eta=0.5, weight_decay=2e-3, optimizer="sgd", n_boot=300)
    assert abs(many["rel_error"]) < 0.02 and many["rel_error_ci"][0] - 0.005 <= 0 <= many["rel_error_ci"][1] + 0.005
    with pytest.raises(ValueError):
        scale_over_seeds([], eta=0.5, weight_decay=2e-3, optimizer="sgd")


def test_slope_condition_is_an_equivalence_test_with_the_5_percent_margin():
    """A slope matches when its whole CI lies within ln(1.05)/ln 2 = 0.0704 of the stated exponent (scale within 5 %
    over lambda x 1/2 and x 2), whether or not the CI contains the exponent itself (the full run: -0.2395
    [-0.2416, -0.2376] matches -1/4; a CI of [-0.33, -0.31] does not)."""
    from normscope.lab.claims import slope_tolerance, transformer_claim_row

    assert slope_tolerance((0.5, 2.0)) == pytest.approx(math.log(1.05) / math.log(2), rel=1e-12)
    assert slope_tolerance((2.0, 4.0)) == pytest.approx(math.log(1.05) / math.log(4), rel=1e-12)
    d = _scale_input()
    d["sizes"] = {"scaling_factors": [0.5, 2.0]}
    d["scaling"]["sgd"] = {"prediction_in_ci": False, "scale_predicted_slope": -0.239,
                           "scale_fit": {"slope": -0.2395, "ci": [-0.2416, -0.2376]}}
    row = transformer_claim_row(d)
    assert row["verdict"] == "reproduced" and "excludes -0.25 itself" in row["why"] and "give -0.239" in row["why"]
    d["scaling"]["sgd"]["scale_fit"] = {"slope": -0.32, "ci": [-0.33, -0.31]}
    row = transformer_claim_row(d)
    assert row["verdict"] == "inconclusive" and "sgd slope of log s on log lambda within -0.25 +- 0.070" in row["why"]


def test_scale_claim_row_uses_the_seeds_when_there_are_replicates():
    from normscope.lab.claims import transformer_claim_row

    d = _scale_input()
    d["base"]["sgd"]["scale_seeds"] = {"n_seeds": 3, "rel_error": -0.08, "rel_error_ci": [-0.1, -0.06],
                                       "abs_rel_error": 0.08, "abs_rel_error_ci": [0.06, 0.1], "between_seed_sd": 0.01,
                                       "per_seed": [{"rel_error": x} for x in (-0.07, -0.08, -0.09)],
                                       "resamples": "3 runs on different batch seeds"}
    d["base"]["sgd"]["replicates"] = [{"name": f"base_sgd_rep{r}", "scale_label": "stationary"} for r in (1, 2)]
    row = transformer_claim_row(d)
    assert row["measured"] == 0.08 and row["ci"] == [0.06, 0.1] and row["verdict"] == "refuted"
    assert "3 runs on different batch seeds" in row["what"] and "per seed -7.00%, -8.00%, -9.00%" in row["why"]
    d["base"]["sgd"]["replicates"][1]["scale_label"] = "drifting"  # a replicate whose scale moves: not decided
    row = transformer_claim_row(d)
    assert row["verdict"] == "not decided at this size" and "base_sgd_rep2" in row["reason"]


# ---------------------------------------------------------------- a tiny design end to end
WORDS = ("cat dog bird fish tree rock river cloud house car road book pen cup door wall hand foot star moon sun rain "
         "snow wind fire").split()
PROBES = ["lantern", "a quiet harbour at dawn", "violin", "red brick chimney", "owl"]  # mixed token lengths


def _tiny_sizes(**over):
    from normscope.lab.decisive import DesignSizes

    kw = dict(hidden=32, heads=2, pretrain_steps=12, probe_items=5, n_eval=16, batch_size=8, max_tokens=32,
              grid=((0.05, 0.2),), grid_relaxations=1, base_relaxations=1, scaling_relaxations=1, min_steps=8,
              max_steps=16, nodecay_steps=8, scaling_factors=(2.0,), snapshots=2, probe_batches=2, track_every=2,
              lambda_every=4, n_boot=100, n_perm=100, equilibrate_batches=16, base_replicates=1)
    kw.update(over)
    return DesignSizes("test", **kw)


@pytest.fixture(scope="module")
def tiny_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("decisive")
    rng = np.random.default_rng(0)
    lines = ["left\tright"]
    for i in range(160):
        a, b = rng.choice(WORDS, 2)
        lines.append(f"{a} {i}\tthe {b} near a {a} {i % 7}")
    lines.append("lantern\ta lamp")  # a probe item in the pairs: held out of training
    (d / "pairs.tsv").write_text("\n".join(lines) + "\n")
    (d / "probes.txt").write_text("\n".join(PROBES) + "\n")
    return d


@pytest.fixture(scope="module")
def tiny_design(tiny_files):
    from normscope.lab import run_decisive_design

    return run_decisive_design(directory=tiny_files / "run", design=_tiny_sizes(), pairs=str(tiny_files / "pairs.tsv"),
                               probe_items=tiny_files / "probes.txt", seed=1)


def test_tiny_design_end_to_end(tiny_design):
    from normscope._io import dumps

    r = tiny_design
    d = r.to_dict()
    dumps(d)  # strict JSON
    assert set(r.base) == {"sgd", "momentum", "adamw"} and set(r.scaling) == {"sgd", "momentum", "adamw"}
    assert r.n_held_out_probe_pairs == 1 and r.probe_items == 5 and list(r.items["text"]) == PROBES
    for b in r.base.values():
        assert b["label"] in ("stationary", "drifting", "collapsed")
        pr = b["prediction"]
        assert pr.n_items == 5 and (pr.design.snapshots, pr.design.batches, pr.design.items) == (2, 2, 5)
        assert len(pr["per_item"]["r_eq"]) == 5
    # momentum and AdamW keep SGD's eta * lambda (same relaxation time); momentum's eta/(1 - beta) = SGD's eta
    s, m, a = (r.base[o] for o in ("sgd", "momentum", "adamw"))
    assert m["eta"] / (1 - 0.9) == pytest.approx(s["eta"]) and m["eta"] * m["lambda"] == pytest.approx(s["eta"] * s["lambda"])
    assert a["eta"] * a["lambda"] == pytest.approx(s["eta"] * s["lambda"])
    # the predictions of the scale's slope were stated before the scaled runs (file written first): -1/4, -1/4, -1/2
    pred = json.loads((Path(tiny_design.directory) / "predictions.json").read_text())
    runs = Path(tiny_design.directory) / "runs"
    assert min((runs / f"scale_{o}_x2.json").stat().st_mtime for o in ("sgd", "momentum", "adamw")) >= \
        (runs.parent / "predictions.json").stat().st_mtime
    assert [pred[o]["exponent"] for o in ("sgd", "momentum", "adamw")] == [-0.25, -0.25, -0.5]
    assert r.scaling["adamw"]["prediction"]["exponent"] == -0.5
    for opt in ("sgd", "momentum", "adamw"):  # the slope of s over lambda x {1, 2}: the exact slope of the two RMS scales
        sc = r.scaling[opt]
        s1, s2 = (x["s_observed"] for x in sc["runs"])
        assert sc["scale_fit"]["slope"] == pytest.approx(math.log(s2 / s1) / math.log(2), rel=1e-9)
    # relaxation units per optimizer: 1/(4 eta lambda) SGD and heavy ball, 1/(2 eta lambda) AdamW (lambda_rad = lambda)
    assert s["relaxation_steps"] == pytest.approx(1 / (4 * s["eta"] * s["lambda"] * s["lambda_rad_per_lambda"]))
    assert a["relaxation_steps"] == pytest.approx(1 / (2 * a["eta"] * a["lambda"] * a["lambda_rad_per_lambda"]))
    assert s["lambda_rad_per_lambda"] == pytest.approx(1.0, rel=1e-4)  # the final LayerNorm: J theta_D = z (E4)
    # the scorecard rows: not decided unless the SGD base run passed every check
    row, items = r.claim, r.claim_items
    assert row["key"] == "theorem1_transformer" and items["key"] == "theorem1_transformer_items"
    if s["label"] != "stationary":
        assert items["verdict"] == "not decided at this size" and s["label"] in items["why"]
    if s["label"] == "collapsed" or s["scale"]["stationarity"]["label"] != "stationary":
        assert row["verdict"] == "not decided at this size"
    assert r.nodecay["steps"] == 8 and r.nodecay["start"] == "base_sgd"
    # the replicate of the SGD base run: same setting and length, its own batches; the scale over both seeds
    rep = json.loads((runs / "base_sgd_rep1.json").read_text())["spec"]
    assert rep["replicate"] == 1 and rep["steps"] == s["steps"] and rep["start"] == s["start"]
    assert "replicate" not in json.loads((runs / "base_sgd.json").read_text())["spec"]  # old hashes unchanged
    seeds = s["scale_seeds"]
    assert seeds["n_seeds"] == 2 and len(s["replicates"]) == 1
    assert seeds["rel_error"] == pytest.approx(np.mean([s["scale"]["rel_error"], s["replicates"][0]["rel_error"]]))
    # the per-item table: a row per probe item, nothing dropped (q < 0 included)
    assert np.isfinite(r.items["sgd_r_eq"]).sum() + (r.items["sgd_flag"] != "").sum() == 5


def test_no_phase_replays_another_phases_batches(tiny_design):
    """Issue 35: every phase draws its batches from its own seed domain; the base run's first-step loss is the loss
    of a fresh batch at its start (the grid run's end), not that of a batch an earlier phase trained on."""
    import torch

    from normscope import encoders
    from normscope.lab.decisive import grid_name
    from normscope.lab.decisive_run import batch_seed
    from normscope.pairs import sample_pair_batches
    from normscope.probes import symmetric_info_nce

    d, sz = Path(tiny_design.directory), _tiny_sizes()
    data = json.loads((d / "data.json").read_text())
    n = len(data["train_left"])

    def idx(kind, t):
        return [int(i) for i in sample_pair_batches(n, sz.batch_size, 1, batch_seed(1, kind, t))[0]]

    for t in range(4):  # the first design drew batch t of every phase from one seed: the same batches
        batches = [idx(k, t) for k in ("pretrain", "grid", "base", "scaling", "nodecay")]
        # a replicate of the base run on another batch seed draws its own batches too
        batches.append([int(i) for i in sample_pair_batches(n, sz.batch_size, 1, batch_seed(1, "base", t, 1))[0]])
        assert all(a != b for i, a in enumerate(batches) for b in batches[i + 1:]), t
    enc = encoders.load_encoder(str(d / "encoder"), fresh=True)
    params = [p for _n, p in enc.module.named_parameters() if p.requires_grad]
    state = torch.load(d / "runs" / f"{grid_name(0.05, 0.2)}.final.pt", weights_only=True)
    with torch.no_grad():
        for p, v in zip(params, state):
            p.copy_(v)
    enc.module.eval()

    def loss(bidx):  # the loss does not depend on the scale of theta_D (the equilibrated start rescales it)
        with torch.no_grad():
            zq = enc.forward(enc.tokenize([data["train_left"][i] for i in bidx]))
            zd = enc.forward(enc.tokenize([data["train_right"][i] for i in bidx]))
            return float(symmetric_info_nce(zq.float(), zd.float(), sz.tau))

    first = float(np.load(d / "runs" / "base_sgd.npz")["loss"][0])
    assert first == pytest.approx(loss(idx("base", 0)), rel=1e-4, abs=1e-6)
    for kind in ("pretrain", "grid"):  # not the batch the pre-training or the grid run trained on at step 0
        assert abs(first - loss(idx(kind, 0))) > 1e-4, kind


def test_theta_d_obeys_e1_every_step_on_a_tiny_bert(tiny_design):
    """theta_D (the last LayerNorm's gain and bias) is exactly scale invariant: <theta_D, g_D> = 0 for every batch, so
    under SGD ||theta+||^2 = (1 - eta lambda)^2 ||theta||^2 + eta^2 ||g_D||^2 (E1) step by step, far inside 1 %; the
    window balance telescopes exactly; and every decayed run starts at its (E2) equilibrium from K fresh batches."""
    runs = Path(tiny_design.directory) / "runs"
    for name in ("grid_sgd_eta0.05_lam0.2", "base_sgd", "scale_sgd_x2", "nodecay_sgd", "base_momentum", "base_adamw"):
        z = np.load(runs / f"{name}.npz")
        spec = json.loads((runs / f"{name}.json").read_text())["spec"]
        eta, lam, td = spec["lr"], spec["weight_decay"], z["theta_d"]
        assert td.shape == (spec["steps"], 6) and (td[:, 0] > 0).all()
        np.testing.assert_allclose(td[1:, 0], td[:-1, 5], rtol=1e-12)  # one continuous record
        cos = np.abs(td[:, 2]) / np.sqrt(td[:, 0] * td[:, 1])
        assert cos.max() < 1e-4, name  # no first-order radial term (A1)
        step = (1 - eta * lam) ** 2 * td[:, 0] - 2 * eta * (1 - eta * lam) * td[:, 4] + eta**2 * td[:, 3]
        np.testing.assert_allclose(td[:, 5], step, rtol=1e-5, err_msg=name)  # the exact decoupled step
        if spec["optimizer"] == "sgd":  # (E1): the same with the cross term dropped and s = g
            e1 = (1 - eta * lam) ** 2 * td[:, 0] + eta**2 * td[:, 1]
            assert np.max(np.abs(td[:, 5] / e1 - 1)) < 1e-4, name
        eq = z["equilibrate"]
        if lam > 0:  # the equilibrated start: s_eq^4 = eta^2 E||g_D||^2 s^2 / (2c) (E2), (E12) for heavy ball
            assert td[0, 0] == pytest.approx(eq[1], rel=1e-5) and eq[4] == 16
            two_c = 1 - (1 - eta * lam) ** 2
            if spec["optimizer"] != "adamw":
                heat = eta**2 * eq[2] / ((1 - spec["beta"]) ** 2 if spec["optimizer"] == "momentum" else 1)
                assert eq[1] == pytest.approx(math.sqrt(heat / two_c), rel=1e-12)
        else:
            assert not eq.any()
    sc = tiny_design.base["sgd"]["scale"]
    assert sc["e1"]["balance"] - sc["e1"]["boundary"] == pytest.approx(1.0, abs=1e-4)  # the window's (E1) balance


def test_permuting_probe_items_permutes_every_per_item_output(tiny_design, tiny_files, tmp_path):
    from normscope.lab import run_decisive_design

    perm = [3, 0, 4, 1, 2]
    (tmp_path / "probes.txt").write_text("\n".join(PROBES[i] for i in perm) + "\n")
    b = run_decisive_design(directory=tmp_path / "run", design=_tiny_sizes(), pairs=str(tiny_files / "pairs.tsv"),
                            probe_items=tmp_path / "probes.txt", seed=1)
    a = tiny_design
    assert list(b.items["text"]) == [PROBES[i] for i in perm]
    assert_item_columns_match(a.items, b.items, PROBES, rtol=2e-5)
    # summaries computed in a canonical item order: the same up to float32 batching rounding of the forwards
    sa, sb = a.to_dict(), b.to_dict()
    assert sb["stationarity_label"] == sa["stationarity_label"] and sb["claim"]["verdict"] == sa["claim"]["verdict"]
    for k in ("mean_abs_rel_error", "pearson", "spearman"):
        assert (sa[k] is None and sb[k] is None) or sb[k] == pytest.approx(sa[k], rel=1e-4, abs=1e-6), k
    for opt in ("sgd", "momentum", "adamw"):
        assert sb["scaling"][opt]["fit"]["slope"] == pytest.approx(sa["scaling"][opt]["fit"]["slope"], rel=1e-4, abs=1e-6)


def _finished_copy(tiny_design, tmp_path, optimizer: str):
    """A copy of the finished tiny design whose runs folder keeps only the final checkpoints, and the base run
    ``optimizer``'s spec, the sizes and the design key: a run to execute again from its start."""
    from pathlib import Path

    from normscope.lab.decisive import design_specs

    src = Path(tiny_design.directory)
    d = tmp_path / "copy"
    shutil.copytree(src, d, ignore=shutil.ignore_patterns("runs"))
    (d / "runs").mkdir()
    for f in (src / "runs").glob("*.final.pt"):
        shutil.copy(f, d / "runs" / f.name)
    sz = _tiny_sizes()
    lam0 = json.loads((src / "lambda0.json").read_text())["median_lambda_rad_per_lambda"]
    spec = next(s for s in design_specs("base", sz, lam_per_lambda=lam0, selected=tiny_design.selected)
                if s.optimizer == optimizer)
    return d, spec, sz, json.loads((src / "design.json").read_text())["key"]


def test_killed_run_resumes_to_the_same_record(tiny_design, tmp_path):
    """A run killed after a checkpoint continues from it; the record equals an uninterrupted run's."""
    import dataclasses

    from normscope.lab.decisive_run import RunContext, load_run, run_one

    d, spec, sz, key = _finished_copy(tiny_design, tmp_path, "momentum")
    ctx = RunContext(d, sz.batch_size, sz.tau, sz.decay_mask, 1, "cpu", checkpoint_every=4, key=key)

    class Killed(Exception):
        pass

    def kill_at(n):
        if n >= 10:
            raise Killed

    import torch

    seen = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the design ran it (num_threads=1): float32 sums depend on the thread count
    try:
        with pytest.raises(Killed):
            run_one(spec, ctx, progress=lambda n: (seen.append(n), kill_at(n)))
        assert (d / "runs" / f"{spec.name}.ckpt").is_file() and not (d / "runs" / f"{spec.name}.npz").exists()
        resumed_from = []
        res = run_one(spec, ctx, progress=lambda n: resumed_from.append(n))
    finally:
        torch.set_num_threads(threads)
    assert resumed_from[0] == 8  # continued from the checkpoint at step 8, not from 0
    ref = load_run(spec, dataclasses.replace(ctx, directory=Path(tiny_design.directory)))
    for k in ("loss", "track_steps", "r2", "zd", "dd", "dec", "lam", "snap_za", "snap_aa", "snap_r", "eval_acc"):
        np.testing.assert_array_equal(res[k], ref[k], err_msg=k)
    assert not (d / "runs" / f"{spec.name}.ckpt").exists()


def test_rerun_recomputes_nothing_and_other_settings_are_refused(tiny_design, tiny_files):
    from pathlib import Path

    from normscope._io import dumps
    from normscope.lab import run_decisive_design

    runs = Path(tiny_design.directory) / "runs"
    before = {p.name: p.stat().st_mtime_ns for p in runs.iterdir()}
    again = run_decisive_design(directory=tiny_design.directory, design=_tiny_sizes(), pairs=str(tiny_files / "pairs.tsv"),
                                probe_items=tiny_files / "probes.txt", seed=1)
    assert {p.name: p.stat().st_mtime_ns for p in runs.iterdir()} == before
    assert dumps(again.to_dict()) == dumps(tiny_design.to_dict())
    with pytest.raises(InputError, match="other data or encoder settings.*seed"):
        run_decisive_design(directory=tiny_design.directory, design=_tiny_sizes(), pairs=str(tiny_files / "pairs.tsv"),
                            probe_items=tiny_files / "probes.txt", seed=2)


def test_bad_input_is_refused_before_any_work(tmp_path):
    from normscope.lab import run_decisive_design

    for kw, match in (({"design": "huge"}, "unknown design"), ({"device": "cuda:7"}, "device"),
                      ({"workers": 0}, "workers"), ({"probe_items": tmp_path / "none.txt"}, "does not exist")):
        with pytest.raises(InputError, match=match):
            run_decisive_design(directory=tmp_path / "never", **kw)
        assert not (tmp_path / "never").exists()
    with pytest.raises(InputError, match="not writable.*no such file"):
        run_decisive_design(directory=tmp_path / "no" / "dir")


def test_cli_decisive_and_report_section(tiny_design, tiny_files, tmp_path, monkeypatch, capsys):
    """The CLI on the finished tiny design (nothing recomputed); the report section from its JSON and a stored one."""
    from normscope.cli import run
    from normscope.lab import decisive
    from normscope.report.stages.transformer import transformer_section

    monkeypatch.setitem(decisive.DESIGNS, "quick", _tiny_sizes())
    js, pq = tmp_path / "d.json", tmp_path / "d.parquet"
    argv = ["lab", "--encoder", "transformer", "--design", "decisive", "--size", "quick", "--run-dir",
            str(tiny_design.directory), "--pairs", str(tiny_files / "pairs.tsv"), "--probe-items",
            str(tiny_files / "probes.txt"), "--seed", "1", "--json", str(js), "-o", str(pq), "--fig",
            str(tmp_path / "lab_decisive.png")]
    assert run(argv) == 0
    out = capsys.readouterr()
    s = json.loads(js.read_text())
    assert list(s)[-1] == "timings" and s["claim"]["verdict"] == tiny_design.claim["verdict"]
    assert "scorecard (theorem1_transformer)" in out.out and "[phase 6/6] analysis" in out.err
    assert "1 replicate of the SGD base run" in out.err
    assert (tmp_path / "lab_decisive_lambda_scaling.png").stat().st_size > 1000  # beside --fig (the prediction)
    assert (tmp_path / "lab_decisive.png").stat().st_size > 1000
    for bad in (["--lr", "0.1"], ["--steps", "10"], ["--size", "huge"]):
        assert run(argv[:4] + ["decisive", "--run-dir", str(tmp_path / "x")] + bad) == 2
    assert run(["lab", "--encoder", "transformer", "--workers", "2"]) == 2
    assert run(["lab", "--encoder", "table", "--design", "decisive"]) == 2
    # the report section: a smaller design shows the stored full result and says so
    own = tiny_design.to_dict()
    from normscope.lab.claims import transformer_claim_row

    from normscope.lab.claims import transformer_items_claim_row

    stored = dict(own, design="full", stationary=True)  # the rows are recomputed from the stored numbers
    sec = transformer_section(own, stored, figure_path=lambda n: tmp_path / n)
    row, items = sec.claims
    assert row["verdict"] == transformer_claim_row(stored)["verdict"]
    assert items["verdict"] == transformer_items_claim_row(stored)["verdict"]
    assert "items are" not in items["reason"]  # the stored numbers' stationarity decides, not this run's
    assert row["tested_on"].startswith("the full design's stored result")
    assert "smaller than the full one" in sec.notes[0] and sec.derived["shown"] == "full design (stored)"
    assert len(sec.figures) == 3 and all((tmp_path / f.file).is_file() for f in sec.figures)
    from normscope._format import num
    from normscope.report.stages.transformer import TransformerStage

    head = TransformerStage().headline(sec)  # the CLI summary's line: which design, its label, its statistic
    assert head.startswith(f"full design (stored): SGD base run {sec.derived['stored_full']['stationarity_label']}; "), head
    assert f"mean |R_eq - R-bar| / R-bar {num(stored['mean_abs_rel_error'])} [" in head
    alone = transformer_section(own, None, figure_path=lambda n: tmp_path / n, stored_note="the stored full result "
                                "came from design version 1, whose runs replayed the pre-training batches")
    assert alone.claims[0]["verdict"] == own["claim"]["verdict"] and "no stored full result" in alone.notes[0]
    assert alone.claims[1]["verdict"] == own["claim_items"]["verdict"] and "replayed" in alone.notes[1]
    # a stored full result of the first (batch-replaying) design is never shown and gives no verdict
    from normscope.lab.decisive import STORED_RESULT
    from normscope.report.stages.transformer import stored_full_status

    if json.loads(STORED_RESULT.read_text()).get("design_version") is None:  # the stored file today (version 1)
        stored_now, why = stored_full_status()
        assert stored_now is None and "replayed the pre-training batches" in why


def test_report_transformer_stage_renders_and_feeds_the_scorecard(tiny_design, tiny_files, tmp_path, monkeypatch):
    """The report's transformer stage through run_report (the design redirected to the finished tiny one)."""
    import normscope.lab as lab
    import normscope.report.stages.transformer as stage
    from normscope.report import ReportConfig, Sizes, run_report

    real = lab.run_decisive_design

    def tiny(**kw):  # the stage's call, redirected to the finished tiny design (nothing recomputed)
        assert kw["design"] == "report" and kw["pairs"] == "wordnet"
        return real(directory=tiny_design.directory, design=_tiny_sizes(), pairs=str(tiny_files / "pairs.tsv"),
                    probe_items=tiny_files / "probes.txt", seed=1)

    monkeypatch.setattr(stage, "run_decisive_design", tiny)  # what the stage calls
    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(words=30), only=("transformer",), seed=1)
    res = run_report(cfg, progress=False)
    summary = json.loads((cfg.out / "summary.json").read_text())
    row = next(c for c in summary["claims"] if c["key"] == "theorem1_transformer")
    stored, _why = stage.stored_full_status()
    from normscope.lab.claims import transformer_claim_row

    # the row is the stored full design's (it belongs to this version of the design), judged by today's rule
    want = transformer_claim_row(stored if stored is not None else tiny_design.to_dict())
    assert row["verdict"] == want["verdict"] and row["claim"] == CLAIMS["theorem1_transformer"].claim
    assert (stored is None) or row["tested_on"].startswith("the full design's stored result")
    sec = summary["transformer_lab"]
    assert sec["result"]["design"] == "test" and sec["key_numbers"]
    assert sec["derived"]["shown"] == ("this run" if stored is None else "full design (stored)")
    html = (cfg.out / "index.html").read_text()
    assert "Stationarity checks of the base runs" in html and "transformer_lab_prediction.png" in html
    assert res is not None


def test_device_plumbing_on_cpu(tiny_design, tmp_path, monkeypatch):
    """``device`` reaches every model load and the run is unchanged by an explicit device index ("cpu:0")."""
    import dataclasses

    import normscope.encoders as encoders
    from normscope.lab.decisive_run import RunContext, load_run, run_one

    d, spec, sz, key = _finished_copy(tiny_design, tmp_path, "sgd")
    ctx = RunContext(d, sz.batch_size, sz.tau, sz.decay_mask, 1, "cpu:0", key=key)
    seen = []
    real = encoders.load_encoder
    monkeypatch.setattr(encoders, "load_encoder", lambda *a, **kw: (seen.append(kw.get("device")), real(*a, **kw))[1])
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the design ran it (num_threads=1): float32 sums depend on the thread count
    try:
        res = run_one(spec, ctx)
    finally:
        torch.set_num_threads(threads)
    assert seen == ["cpu:0"]
    ref = load_run(spec, dataclasses.replace(ctx, directory=Path(tiny_design.directory), device="cpu"))
    for k in ("loss", "r2", "zd", "dd", "snap_za", "snap_zc", "snap_aa", "snap_zjd", "eval_acc"):
        np.testing.assert_array_equal(res[k], ref[k], err_msg=k)
    import torch

    final = torch.load(d / "runs" / f"{spec.name}.final.pt", weights_only=True)
    assert all(t.device.type == "cpu" for t in final)  # parameters are saved from CPU copies


def test_selection_rule():
    from normscope.lab.decisive import STEP_TOL, DesignSizes, select_setting

    sz = DesignSizes("t", max_steps=3000, base_relaxations=10)
    row = lambda eta, lam, label="drifting", step=0.01, mask=None: {  # noqa: E731
        "eta": eta, "lambda": lam, "relaxation_steps": 1 / (2 * eta * lam), "label": label, "relative_step": step,
        "mask": mask}
    rows = [row(0.003, 2 / 3), row(0.01, 0.2), row(0.03, 1 / 15, step=0.2), row(0.01, 0.4),
            row(0.03, 0.1, "collapsed", mask="all"), row(0.01, 0.05)]  # the last: 10 x 1000 steps do not fit
    sel = select_setting(rows, sz)
    # smallest eta*lambda that fits (2e-3), then the largest eta whose steps are small (0.03 moves too much)
    assert (sel["eta"], sel["lambda"]) == (0.01, 0.2) and not sel["fallback"]
    assert "3 of 5 settings" in sel["reason"] or "qualify" in sel["reason"]
    big = [row(0.01, 0.2, step=2 * STEP_TOL), row(0.03, 1 / 15, step=3 * STEP_TOL)]
    sel = select_setting(big, sz)  # none qualifies: the setting whose items move least (not the largest eta)
    assert sel["fallback"] and sel["eta"] == 0.01 and "expansion may not hold" in sel["reason"]
    dead = [row(0.01, 0.2, "collapsed"), row(0.01, 0.4, "collapsed")]
    sel = select_setting(dead, sz)
    assert sel["fallback"] and (sel["eta"], sel["lambda"]) == (0.01, 0.2) and "collapsed" in sel["reason"]


def test_the_stored_full_run_judges_no_slope_of_drifting_runs():
    """The stored full design (decisive_full.json): SGD's (E2) holds to -0.029 % over 3 seeds, but the three AdamW runs
    of the lambda series drift (scale halves +5.3 %, +3.2 %, +4.9 %; an independent check found it): their slope,
    -0.492 inside -1/2 +- 0.070, is not judged, so the row is inconclusive, not reproduced; every CI beside a
    percentage is printed in percent."""
    import json

    from normscope.lab.claims import transformer_claim_row
    from normscope.report.stages.transformer import STORED_RESULT

    d = json.loads(STORED_RESULT.read_text(encoding="utf-8"))
    assert d["scaling"]["adamw"]["scale_all_stationary"] is False and d["scaling"]["sgd"]["scale_all_stationary"]
    row = transformer_claim_row(d)
    assert row.verdict == "inconclusive" and row.size == "consistent"
    assert "adamw slope not judged: the scale of 3 runs of its lambda series" in row.why
    assert "rel. error -0.029% [-0.147%, +0.084%]" in row.why  # the CI in the figure's unit
    assert d["claim"]["verdict"] == row.verdict  # the stored file was re-analysed with this rule
