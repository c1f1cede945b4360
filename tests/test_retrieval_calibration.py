"""Calibration metrics (ECE with its support, reliability data, risk-coverage / AURC), fixed-direction Platt maps,
signals and the calibration study (per-fold parameters, "not computed" with a reason)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from normscope.errors import InputError
from normscope.retrieval.calibration import aurc, ece, ece_support, reliability_data, risk_coverage
from normscope.retrieval.confidence import DIRECTION, PlattMap, calibration_study, evaluate_signals, query_signals


def _ece_reference(conf, y, n_bins=15):
    """Independent loop in the torchmetrics style: bins (lo, hi], 0 in the first bin."""
    edges = np.linspace(0, 1, n_bins + 1)
    total = 0.0
    for b, (lo, hi) in enumerate(zip(edges[:-1], edges[1:])):
        m = (conf > lo) & (conf <= hi)
        if b == 0:
            m |= conf == 0
        if m.any():
            total += m.mean() * abs(y[m].mean() - conf[m].mean())
    return total


def test_ece_hand_computed():
    # every confidence in its own bin: ECE = mean |y - c| = (0.1 + 0.75 + 0.1 + 0.05 + 0.5) / 5
    assert ece([0.1, 0.25, 0.9, 0.95, 0.5], [0, 1, 1, 1, 0]) == pytest.approx(0.3, abs=1e-12)
    # one shared bin (9/15, 10/15]: |2/3 - mean(0.61, 0.62, 0.64)|
    assert ece([0.61, 0.62, 0.64], [1, 0, 1]) == pytest.approx(abs(2 / 3 - (0.61 + 0.62 + 0.64) / 3), abs=1e-12)
    assert ece([0.0, 1.0], [0, 1]) == 0.0


def test_ece_matches_independent_loop(rng):
    conf = rng.random(500)
    conf[:5] = [0.0, 1.0, 1 / 15, 2 / 15, 0.5]  # bin edges
    y = (rng.random(500) < conf**1.5).astype(int)
    assert ece(conf, y) == pytest.approx(_ece_reference(conf, y), abs=1e-12)
    r = reliability_data(conf, y)
    assert sum(r["count"]) == 500 and len(r["edges"]) == 16
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        ece([1.5], [1])


def test_aurc_hand_computed_and_ties():
    # risks after 1..4 answered: 0, 1/2, 1/3, 2/4
    assert aurc([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0]) == pytest.approx((0 + 1 / 2 + 1 / 3 + 1 / 2) / 4, abs=1e-12)
    assert risk_coverage([0.5, 0.5], [1, 0])["risk"] == [0.5, 0.5]
    assert aurc([0.5, 0.5], [1, 0]) == aurc([0.5, 0.5], [0, 1])


def test_aurc_ties_equal_average_over_orderings(rng):
    conf = np.array([0.9, 0.5, 0.5, 0.5, 0.2, 0.2])
    y = np.array([1, 0, 1, 0, 1, 0])
    vals = []
    for p1 in itertools.permutations([1, 2, 3]):
        for p2 in itertools.permutations([4, 5]):
            order = [0, *p1, *p2]
            err = 1 - y[order]
            vals.append(np.mean(np.cumsum(err) / np.arange(1, 7)))
    assert aurc(conf, y) == pytest.approx(np.mean(vals), abs=1e-12)
    perm = rng.permutation(6)
    assert aurc(conf[perm], y[perm]) == pytest.approx(aurc(conf, y), abs=1e-12)


def test_platt_fixed_direction(rng):
    """The map never flips: with the data in the fixed direction it is sklearn's free fit; against it, the flat base rate."""
    from sklearn.linear_model import LogisticRegression

    s = rng.normal(size=400)
    y = (rng.random(400) < 1 / (1 + np.exp(2 * s))).astype(int)  # lower s -> more often correct
    down = PlattMap(-1).fit(s, y)  # direction -1 agrees with the data
    z = -(s - s.mean()) / s.std()
    free = LogisticRegression(C=1e6, max_iter=1000).fit(z[:, None], y)
    np.testing.assert_allclose(down.transform(s), free.predict_proba(z[:, None])[:, 1], atol=1e-12)
    assert down.info()["slope"] > 0 and not down.info()["flat"]
    assert roc_auc_score(y, down.transform(s)) == pytest.approx(1 - roc_auc_score(y, s), abs=1e-12)
    up = PlattMap(+1).fit(s, y)  # direction +1 goes against the data: the constrained optimum is flat at the base rate
    assert up.info()["flat"] and up.info()["slope"] == 0.0
    np.testing.assert_allclose(up.transform(s), y.mean(), atol=1e-12)
    with pytest.raises(InputError, match="both"):
        PlattMap().fit(s, np.ones(400))
    with pytest.raises(InputError, match="direction"):
        PlattMap(0)


def _frame(rng, n):
    qn = rng.normal(5, 1, n)
    top1 = rng.normal(0.5, 0.1, n)
    margin = np.abs(rng.normal(0.05, 0.03, n))
    logit = 8 * (top1 - 0.5) - 1.5 * (qn - 5)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return pd.DataFrame(
        {"query_norm": qn, "top_doc_norm": rng.normal(4, 0.5, n), "top1_score": top1, "margin": margin, "top1_relevant": y}
    )


def test_evaluate_signals_consistent(rng):
    train, test = _frame(rng, 600), _frame(rng, 300)
    out = evaluate_signals(train, test, n_boot=200)
    y = test["top1_relevant"].to_numpy()
    assert set(out) == {"query_norm", "top_doc_norm", "top1_score", "margin", "learned_scores", "learned_scores_norms",
                        "top1_score_uncalibrated"}
    # query_norm has the pre-specified direction -1 (a larger norm read as less reliable), which this data agrees with
    assert out["query_norm"]["direction"] == DIRECTION["query_norm"] == -1
    assert out["query_norm"]["auroc_raw"] == pytest.approx(roc_auc_score(y, -test["query_norm"]), abs=1e-12)
    assert out["query_norm"]["auroc"] == pytest.approx(out["query_norm"]["auroc_raw"], abs=1e-12)
    lo, hi = out["query_norm"]["auroc_ci"]
    assert lo < out["query_norm"]["auroc"] < hi
    # the uncalibrated cosine: confidence = top1 clipped to [0, 1], ECE by hand
    conf = np.clip(test["top1_score"].to_numpy(), 0, 1)
    assert out["top1_score_uncalibrated"]["ece"] == pytest.approx(_ece_reference(conf, y), abs=1e-12)
    # the planted norm effect makes the norm-augmented combination better than the score-only one
    assert out["learned_scores_norms"]["auroc"] > out["learned_scores"]["auroc"]
    for e in out.values():
        assert 0 <= e["ece"] <= 1 and e["aurc_optimal"] <= e["aurc"] + 1e-12
        assert len(e["risk_coverage"]["risk"]) == 300


def test_ece_support_flags_one_or_two_bins():
    r = reliability_data([0.51, 0.52, 0.53, 0.9], [1, 0, 1, 1])  # bins (7/15, 8/15] and (13/15, 1]
    sup = ece_support(r)
    assert sup["populated_bins"] == 2 and sup["largest_bin"] == 3 and sup["n"] == 4
    assert "2 populated bins of 15" in sup["flag"] and "3 of 4 queries" in sup["flag"]
    assert ece_support(reliability_data(np.linspace(0.01, 0.99, 30), np.arange(30) % 2))["flag"] is None


def test_calibration_study_folds_and_not_computed(rng):
    ev = _frame(rng, 200)
    ev.insert(0, "query_id", [f"q{i:03d}" for i in range(200)])
    folds = [np.arange(i, 200, 5) for i in range(5)]
    cal, conf = calibration_study(ev, folds=folds, n_boot=100)
    qn = cal["query_norm"]
    assert qn["status"] == "ok" and [f["part"] for f in qn["fit"]["folds"]] == [f"fold {i}" for i in range(1, 6)]
    assert all(f["n_fit"] == 160 for f in qn["fit"]["folds"])
    assert qn["fit"]["mean"]["slope"] == pytest.approx(np.mean([f["slope"] for f in qn["fit"]["folds"]]))
    # each fold's confidences come from a map fitted on the other folds (checked for fold 1)
    pm = PlattMap(-1).fit(ev.drop(index=folds[0])["query_norm"], ev.drop(index=folds[0])["top1_relevant"])
    np.testing.assert_allclose(conf["query_norm"][folds[0]], pm.transform(ev["query_norm"].to_numpy()[folds[0]]), atol=1e-12)
    # a fitting split whose top-1 results are all non-relevant: every fitted signal says why, the study goes on
    bad = ev.assign(top1_relevant=0)
    cal2, conf2 = calibration_study(ev, sig_fit=bad, n_boot=100)
    for s in ("query_norm", "margin", "learned_scores_norms"):
        assert cal2[s]["status"] == "not computed" and "all non-relevant" in cal2[s]["reason"]
    assert cal2["top1_score_uncalibrated"]["status"] == "ok" and set(conf2) == {"top1_score_uncalibrated"}


def test_query_signals_from_run():
    run = {"a": {"x": 0.9, "y": 0.7, "z": 0.1}, "b": {"z": 0.4, "x": 0.39}}
    df = query_signals(
        run, query_ids=["a", "b"], query_norms=[2.0, 3.0], doc_ids=["x", "y", "z"], doc_norms=[1.0, 2.0, 3.0], qrels={"a": {"y": 1}, "b": {"z": 1}}
    )
    assert df["margin"].tolist() == pytest.approx([0.2, 0.01])
    assert df["top_doc_norm"].tolist() == [1.0, 3.0]
    assert df["top1_relevant"].tolist() == [0, 1] and df["top1_doc"].tolist() == ["x", "z"]
    with pytest.raises(InputError, match="needs 2"):
        query_signals({"a": {"x": 1.0}}, query_ids=["a"], query_norms=[1.0], doc_ids=["x"], doc_norms=[1.0])


def test_cross_fitted_auroc_is_not_a_pooling_artefact():
    """A signal that works against its pre-specified direction gets flat Platt maps (the constrained fit) in every
    fold: each fold's confidence is then its training folds' base rate, which falls as the fold's own base rate
    rises. Ranking all folds together (the old pooled AUROC) scored that 0.26 ("worse than chance"); within each fold
    a constant has AUROC 0.5 exactly, and so has their average. Fails on the pooled code."""
    rates = [0.2, 0.35, 0.5, 0.65, 0.8]
    y = np.concatenate([(np.arange(40) < 40 * r).astype(int) for r in rates])
    qn = np.where(y == 1, 2.0, 1.0) + np.linspace(0, 0.1, y.size)  # a larger norm on the right results: direction -1 fails
    ev = pd.DataFrame({"query_id": [f"q{i:03d}" for i in range(y.size)], "query_norm": qn, "top_doc_norm": qn,
                       "top1_score": qn, "margin": qn, "top1_relevant": y})
    folds = [np.arange(40 * i, 40 * (i + 1)) for i in range(5)]
    cal, conf = calibration_study(ev, folds=folds, n_boot=200)
    e = cal["query_norm"]
    assert e["fit"]["mean"]["flat_folds"] == 5
    base = [ev.drop(index=f)["top1_relevant"].mean() for f in folds]  # each fold's flat confidence
    np.testing.assert_allclose([conf["query_norm"][f][0] for f in folds], base, atol=1e-9)
    assert roc_auc_score(y, conf["query_norm"]) == pytest.approx(0.26, abs=1e-12)  # the pooled ranking: the artefact
    assert e["auroc"] == pytest.approx(0.5, abs=1e-12) and e["auroc_per_fold"] == [0.5] * 5
    assert e["auroc_ci"][0] <= 0.5 <= e["auroc_ci"][1]
    assert e["auroc_raw"] < 0.01  # the raw signal in its pre-specified direction: truly reversed, pooled is right
    # a signal that works: within-fold AUROCs average to the mean of the folds' own AUROCs (hand-computed)
    m = cal["margin"]
    per = [roc_auc_score(y[f], ev["margin"].to_numpy()[f]) for f in folds]
    assert m["auroc_per_fold"] == pytest.approx(per, abs=1e-12) and m["auroc"] == pytest.approx(np.mean(per), abs=1e-12)


def test_auroc_within_groups_matches_sklearn_per_group(rng):
    from normscope.retrieval.calibration import auroc_within_groups

    x, y = rng.normal(size=300), rng.integers(0, 2, 300)
    g = rng.integers(0, 3, 300)
    res = auroc_within_groups(x, y, g, n_boot=300, seed=1)
    per = [roc_auc_score(y[g == k], x[g == k]) for k in range(3)]
    sizes = [int((g == k).sum()) for k in range(3)]
    assert res["per_group"] == pytest.approx(per, abs=1e-12)
    assert res["auroc"] == pytest.approx(np.average(per, weights=sizes), abs=1e-12)
    assert res["ci"][0] < res["auroc"] < res["ci"][1]
    one = auroc_within_groups(x, np.where(g == 0, 1, y), g, n_boot=0)  # group 0 holds one class: left out
    assert one["per_group"][0] is None and one["n_groups_used"] == 2 and one["ci"] is None
