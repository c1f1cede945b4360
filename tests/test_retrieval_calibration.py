"""Calibration metrics: ECE (15 bins), reliability data, risk-coverage / AURC, Platt maps, signals."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from normscope.errors import InputError
from normscope.retrieval.calibration import (
    PlattMap,
    aurc,
    ece,
    evaluate_signals,
    query_signals,
    reliability_data,
    risk_coverage,
)


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


def test_platt_direction_and_auroc(rng):
    s = rng.normal(size=400)
    y = (rng.random(400) < 1 / (1 + np.exp(2 * s))).astype(int)  # lower s -> more often correct
    pm = PlattMap().fit(s, y)
    assert pm.direction == -1
    p = pm.transform(s)
    assert ((p >= 0) & (p <= 1)).all()
    assert roc_auc_score(y, p) == pytest.approx(1 - roc_auc_score(y, s), abs=1e-12)
    with pytest.raises(InputError, match="both"):
        PlattMap().fit(s, np.ones(400))


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
    out = evaluate_signals(train, test)
    y = test["top1_relevant"].to_numpy()
    assert set(out) == {"query_norm", "top_doc_norm", "top1_score", "margin", "learned_scores", "learned_scores_norms"}
    assert out["query_norm"]["direction"] == -1
    assert out["query_norm"]["auroc_raw"] == pytest.approx(roc_auc_score(y, test["query_norm"]), abs=1e-12)
    assert out["query_norm"]["auroc"] == pytest.approx(1 - out["query_norm"]["auroc_raw"], abs=1e-12)
    # the planted norm effect makes the norm-augmented combination better than the score-only one
    assert out["learned_scores_norms"]["auroc"] > out["learned_scores"]["auroc"]
    for sig, e in out.items():
        assert 0 <= e["ece"] <= 1 and e["aurc_optimal"] <= e["aurc"] + 1e-12
        assert len(e["risk_coverage"]["risk"]) == 300


def test_query_signals_from_run():
    run = {"a": {"x": 0.9, "y": 0.7, "z": 0.1}, "b": {"z": 0.4, "x": 0.39}}
    df = query_signals(
        run, query_ids=["a", "b"], query_norms=[2.0, 3.0], doc_ids=["x", "y", "z"], doc_norms=[1.0, 2.0, 3.0], qrels={"a": {"y": 1}, "b": {"z": 1}}
    )
    assert df["margin"].tolist() == pytest.approx([0.2, 0.01])
    assert df["top_doc_norm"].tolist() == [1.0, 3.0]
    assert df["top1_relevant"].tolist() == [0, 1]
    with pytest.raises(InputError, match="needs 2"):
        query_signals({"a": {"x": 1.0}}, query_ids=["a"], query_norms=[1.0], doc_ids=["x"], doc_norms=[1.0])
