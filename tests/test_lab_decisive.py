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

import numpy as np
import pytest

from normscope import theory
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


# ---------------------------------------------------------------- scorecard row (pure)
def _claim_input(label="stationary", stat=0.05, ci=(0.03, 0.07), p=0.001):
    return {"design": "full", "stationary": label == "stationary", "mean_abs_rel_error": stat,
            "mean_abs_rel_error_ci": list(ci), "null_p_mean_abs_rel_error": p, "probe_items": 64,
            "decay_mask": "no-embeddings", "encoder": {"config": {"hidden": 128}},
            "base": {"sgd": {"label": label, "reasons": [] if label == "stationary" else ["mean R^2 changed by +9%"],
                             "eta": 0.03, "lambda": 0.03, "steps": 10000, "relaxation_steps": 1000.0,
                             "stationarity": {"relative_change": 0.01, "loss_mean": 1.0, "chance_loss": 3.47,
                                              "accuracy": 0.3, "checks": {}},
                             "prediction": {"n_items": 64, "design": {"snapshots": 16, "batches": 16},
                                            "null": {"mean_abs_rel_error": {"median": 0.2, "p": p}}}}}}


def test_claim_row_follows_the_checks_and_the_numbers():
    from normscope.lab.claims import NOT_DECIDED, REL_TOL, transformer_claim_row

    assert transformer_claim_row(_claim_input())["verdict"] == "reproduced"
    assert transformer_claim_row(_claim_input(stat=0.3, ci=(0.2, 0.4)))["verdict"] == "refuted"
    assert transformer_claim_row(_claim_input(stat=0.1, ci=(0.05, 0.15)))["verdict"] == "inconclusive"
    row = transformer_claim_row(_claim_input(p=0.4))  # agreement in size, but other items' statistics do as well
    assert row["verdict"] == "inconclusive" and "not per item" in row["why"]
    nd = transformer_claim_row(_claim_input(label="drifting"))
    assert nd["verdict"] == NOT_DECIDED and "drifting" in nd["why"] and "+9%" in nd["why"]
    assert "10,000 steps = 10 relaxation times" in nd["why"] and REL_TOL == 0.10
