"""QPP predictors against hand-computed values on a tiny run; their evaluation; the cross-fitted incremental value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from normscope.errors import InputError
from normscope.retrieval.incremental import draw_folds, incremental_value
from normscope.retrieval.qpp import (QPP_SIGNALS, corpus_scores, evaluate_qpp, nqc, qpp_signals, score_matrix, sigma_k,
                                     sigma_max, smv, wig)

# two queries, depth 4; q2 has a negative cosine at rank 4
RUN = {"q1": {"a": 0.9, "b": 0.6, "c": 0.3, "d": 0.2},
       "q2": {"c": 0.5, "a": 0.4, "d": 0.1, "b": -0.2}}
CORPUS = np.array([0.1, -0.05])  # s(C) of q1, q2
NORMS = {"a": 2.0, "b": 3.0, "c": 1.0, "d": 4.0}


def _pop_sd(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def test_each_formula_equals_its_hand_computed_value():
    S, docs = score_matrix(RUN, ["q1", "q2"])
    assert docs == [["a", "b", "c", "d"], ["c", "a", "d", "b"]]
    # sigma_k at k = 3: q1 {0.9, 0.6, 0.3}: mean 0.6, var (0.09 + 0 + 0.09)/3 = 0.06
    np.testing.assert_allclose(sigma_k(S, 3), [math.sqrt(0.06), _pop_sd([0.5, 0.4, 0.1])], rtol=1e-12)
    # NQC = sigma_k / |s(C)|
    np.testing.assert_allclose(nqc(S, CORPUS, 3), [math.sqrt(0.06) / 0.1, _pop_sd([0.5, 0.4, 0.1]) / 0.05], rtol=1e-12)
    # WIG at k = 2: mean of the top 2 minus s(C)
    np.testing.assert_allclose(wig(S, CORPUS, 2), [0.75 - 0.1, 0.45 + 0.05], rtol=1e-12)
    # sigma_max over m = 2..4: q1 sd at m=2: 0.15, m=3: sqrt(.06)=.2449, m=4: sd{.9,.6,.3,.2}
    q1 = max(_pop_sd([0.9, 0.6]), _pop_sd([0.9, 0.6, 0.3]), _pop_sd([0.9, 0.6, 0.3, 0.2]))
    q2 = max(_pop_sd([0.5, 0.4]), _pop_sd([0.5, 0.4, 0.1]), _pop_sd([0.5, 0.4, 0.1, -0.2]))
    np.testing.assert_allclose(sigma_max(S, 4), [q1, q2], rtol=1e-12)
    # SMV at k = 4: q1 all positive; q2 uses its 3 positive scores
    m1 = (0.9 + 0.6 + 0.3 + 0.2) / 4
    v1 = sum(s * abs(math.log(s / m1)) for s in (0.9, 0.6, 0.3, 0.2)) / 4 / 0.1
    m2 = (0.5 + 0.4 + 0.1) / 3
    v2 = sum(s * abs(math.log(s / m2)) for s in (0.5, 0.4, 0.1)) / 3 / 0.05
    vals, used = smv(S, CORPUS, 4)
    np.testing.assert_allclose(vals, [v1, v2], rtol=1e-12)
    assert used.tolist() == [4, 3]


def test_qpp_signals_table_and_norm_signals():
    df = qpp_signals(RUN, query_ids=["q1", "q2"], query_texts=["two words", "one more three"], query_norms=[5.0, 6.0],
                     doc_ids=list(NORMS), doc_norms=list(NORMS.values()), corpus_score=CORPUS,
                     doc_hubness=[0.1, 0.2, 0.3, 0.4])
    assert list(df.columns) == ["query_id", *QPP_SIGNALS]
    np.testing.assert_allclose(df["margin_1_3"], [0.6, 0.4])
    assert df["query_length"].tolist() == [2, 3]
    assert df["query_norm"].tolist() == [5.0, 6.0]
    np.testing.assert_allclose(df["top1_score"], [0.9, 0.5])
    np.testing.assert_allclose(df["margin"], [0.3, 0.1])
    assert df["top_doc_norm"].tolist() == [2.0, 1.0]
    np.testing.assert_allclose(df["doc_norm_spread"], [_pop_sd([2, 3, 1, 4])] * 2)  # the same 4 documents, another order
    # the default depths exceed the run: every statistic uses the 4 results it has
    S, _ = score_matrix(RUN, ["q1", "q2"])
    np.testing.assert_allclose(df["sigma_k"], sigma_k(S, 4))
    np.testing.assert_allclose(df["wig"], wig(S, CORPUS, 4))
    assert df.attrs["smv_cut"] == 1


def test_missing_inputs_and_bad_runs_are_one_line_errors():
    with pytest.raises(InputError, match="'nqc' needs corpus score"):
        qpp_signals(RUN, query_ids=["q1", "q2"], signals=["nqc"])
    with pytest.raises(InputError, match="unknown signal"):
        qpp_signals(RUN, query_ids=["q1"], signals=["clarity"])
    with pytest.raises(InputError, match="descending"):
        score_matrix({"q": {"a": 0.1, "b": 0.5}}, ["q"])
    with pytest.raises(InputError, match="margin needs 2"):
        qpp_signals({"q": {"a": 0.1}}, query_ids=["q"], signals=["margin"])


def test_corpus_score_is_the_mean_cosine():
    rng = np.random.default_rng(0)
    Q, D = rng.normal(size=(3, 5)) * 3, rng.normal(size=(7, 5)) * rng.uniform(0.5, 4, size=(7, 1))
    cos = (Q / np.linalg.norm(Q, axis=1, keepdims=True)) @ (D / np.linalg.norm(D, axis=1, keepdims=True)).T
    np.testing.assert_allclose(corpus_scores(Q, D), cos.mean(axis=1), rtol=1e-12)


def test_evaluate_qpp_orients_and_matches_scipy():
    from scipy.stats import kendalltau, spearmanr
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    n = 80
    g = rng.uniform(size=n)
    df = pd.DataFrame({"query_id": [f"q{i}" for i in range(n)], "margin": g + rng.normal(scale=0.3, size=n),
                       "query_norm": -g + rng.normal(scale=0.3, size=n)})
    y = (g > 0.5).astype(int)
    ev = evaluate_qpp(df, top1_relevant=y, ndcg=g, n_boot=200, seed=1)
    assert ev["margin"]["auroc"] == pytest.approx(roc_auc_score(y, df["margin"]))
    # query_norm's direction is -1: a norm that falls with quality reads as a good predictor
    assert ev["query_norm"]["auroc"] == pytest.approx(roc_auc_score(y, -df["query_norm"]))
    assert ev["query_norm"]["kendall_tau"] == pytest.approx(kendalltau(-df["query_norm"], g).statistic)
    assert ev["margin"]["spearman_rho"] == pytest.approx(spearmanr(df["margin"], g).statistic)
    for s in ("margin", "query_norm"):
        lo, hi = ev[s]["kendall_tau_ci"]
        assert lo < ev[s]["kendall_tau"] < hi and lo > 0
    bad = df.assign(margin=np.r_[np.inf, df["margin"].to_numpy()[1:]])
    assert evaluate_qpp(bad, ndcg=g, n_boot=50)["margin"]["status"] == "not computed"


def test_folds_are_fixed_by_the_seed_and_partition_the_queries():
    a, b = draw_folds(23, seed=4, draws=3), draw_folds(23, seed=4, draws=3)
    for pa, pb in zip(a, b):
        assert all(np.array_equal(x, y) for x, y in zip(pa, pb))
        assert np.array_equal(np.sort(np.concatenate(pa)), np.arange(23))
    with pytest.raises(InputError, match="at least 10"):
        draw_folds(9)


def _synthetic(seed, n=300):
    rng = np.random.default_rng(seed)
    a, noise, planted = rng.normal(size=n), rng.normal(size=n), rng.normal(size=n)
    z = a + 1.5 * planted + rng.normal(size=n)
    return pd.DataFrame({"a": a, "noise": noise, "planted": planted}), (z > 0).astype(int), 1 / (1 + np.exp(-z))


def test_a_signal_that_adds_nothing_gives_a_ci_around_zero():
    df, y, g = _synthetic(11)
    r = incremental_value(df, baseline=["a"], added=["noise"], top1_relevant=y, ndcg=g, n_boot=400, seed=0,
                          fold_draws=8)
    assert r["task"] == "top1_relevant" and r["resamples"] == "queries" and r["n_queries"] == 300
    assert r["ci"][0] < 0 < r["ci"][1] and abs(r["diff"]) < 0.02
    assert r["auroc_with"] - r["auroc_without"] == pytest.approx(r["diff"])
    t = r["ndcg@10"]
    assert t["ci"][0] < 0 < t["ci"][1] and abs(t["diff"]) < 0.02


def test_a_planted_signal_is_found():
    df, y, g = _synthetic(12)
    r = incremental_value(df, baseline=["a"], added=["planted"], top1_relevant=y, ndcg=g, n_boot=400, seed=0,
                          fold_draws=8)
    assert r["ci"][0] > 0.1 and r["auroc_with"] > 0.85 and r["auroc_without"] < 0.7
    assert r["ndcg@10"]["ci"][0] > 0.2 and r["ndcg@10"]["diff"] > 0.3


def test_incremental_value_is_deterministic_and_checks_its_input():
    df, y, g = _synthetic(13, n=60)
    kw = dict(baseline=["a"], added=["noise"], top1_relevant=y, n_boot=50, fold_draws=3, seed=5)
    assert incremental_value(df, **kw) == incremental_value(df, **kw)
    with pytest.raises(InputError, match="both in baseline and added"):
        incremental_value(df, baseline=["a"], added=["a"], top1_relevant=y)
    with pytest.raises(InputError, match="unknown signal"):
        incremental_value(df, baseline=["a"], added=["b"], top1_relevant=y)


def test_retrieval_json_carries_the_contract_and_the_per_query_predictors(tmp_path):
    """``calibration_incremental`` has the fields the scorecard reads; the per-query table holds every predictor, equal
    to recomputing it from the run; qpp's AUROC is that of the per-query column."""
    from _retrieval_data import calibration_beir
    from sklearn.metrics import roc_auc_score

    from _retrieval_call import run_retrieval
    from normscope.retrieval.qpp import QPP_DIRECTION

    d, enc = calibration_beir(tmp_path, np.random.default_rng(2), n_train=20, n_test=60)
    res = run_retrieval(d, encoder=enc, scorers=["cosine"], n_boot=50, n_permutations=100)
    inc = res.to_dict()["calibration_incremental"]
    for k in ("task", "baseline", "added", "auroc_without", "auroc_with", "diff", "ci", "resamples", "folds", "n_queries",
              "seed"):
        assert k in inc, k
    assert inc["task"] == "top1_relevant" and inc["resamples"] == "queries" and inc["n_queries"] == 60
    assert inc["added"] == ["query_norm", "top_doc_norm", "doc_norm_spread"] and "margin" in inc["baseline"]
    assert inc["ndcg@10"]["task"] == "ndcg@10" and len(inc["single_baselines"]) == len(inc["baseline"])
    pq = res.per_query
    for s in QPP_SIGNALS:
        assert s in pq.columns
        assert res.qpp[s]["auroc"] == pytest.approx(roc_auc_score(pq["top1_relevant"], QPP_DIRECTION[s] * pq[s]))
    from _retrieval_data import run_dict

    run = run_dict(res.items, "cosine")
    S, _ = score_matrix(run, list(pq["query_id"]))
    np.testing.assert_allclose(pq["nqc"], nqc(S, pq["corpus_score"]), rtol=1e-12)
    np.testing.assert_allclose(pq["sigma_max"], sigma_max(S), rtol=1e-12)


def test_new_baselines_by_hand():
    from normscope.retrieval.qpp import autocut, autocut_kept, csls_hubness, csls_top1

    # Weaviate's autocut on (1.0, 0.95, 0.9, 0.3, 0.25, 0.2): normalised (0, .0625, .125, .875, .9375, 1) minus
    # i/5 = (0, -.1375, -.275, .275, .1375, 0): the first local maximum is i = 3 -> keep 3 results
    assert autocut([1.0, 0.95, 0.9, 0.3, 0.25, 0.2]) == 3
    assert autocut([0.2, 0.25, 0.3, 0.9, 0.95, 1.0]) == 3  # distances ascending: the same cut
    assert autocut([0.9, 0.2, 0.19, 0.18]) == 1            # one clear jump after the top hit
    assert autocut([0.5, 0.5, 0.5]) == 3 and autocut([0.7]) == 1
    assert autocut([1.0, 0.75, 0.5, 0.25]) == 4            # evenly spaced (exact in binary): no jump
    S, docs = score_matrix(RUN, ["q1", "q2"])
    # q1 (.9, .6, .3, .2): diff = (0, -1/3 + 3/7, ..): normalised (0, 3/7, 6/7, 1) - (0, 1/3, 2/3, 1) = (0, .095, .190, 0)
    # -> i = 2 is the first point above both neighbours: keep 2
    assert autocut_kept(S).tolist() == [2.0, autocut([0.5, 0.4, 0.1, -0.2])]
    # CSLS: hubness of 2 documents against a bank of 3 unit queries, k = 2
    D = np.array([[1.0, 0.0], [0.0, 2.0]])
    bank = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])
    # d1 cosines (1, 0, .6): top-2 mean .8; d2 cosines (0, 1, .8): .9
    np.testing.assert_allclose(csls_hubness(D, bank, k=2), [0.8, 0.9])
    # q1's run re-scored with hubness a .1, b .2, c .3, d .4, k = 2: r_D(q1) = (.9 + .6)/2 = .75;
    # 2 s - h = (1.7, 1.0, .3, 0) -> 1.7 - .75; q2: (c 1.0 - .3 = .7, a .8 - .1 = .7, ...) - (.5 + .4)/2
    got = csls_top1(S, docs, ["a", "b", "c", "d"], [0.1, 0.2, 0.3, 0.4], k=2)
    np.testing.assert_allclose(got, [1.7 - 0.75, 0.7 - 0.45])
    # a hub (high r_Q) loses its rank: with b's hubness 0 and a's 1.6, q1's CSLS top is b: 1.2 - .75
    np.testing.assert_allclose(csls_top1(S, docs, ["a", "b", "c", "d"], [1.6, 0.0, 0.3, 0.4], k=2)[0], 1.2 - 0.75)
    with pytest.raises(InputError, match="no CSLS hubness"):
        csls_top1(S, docs, ["a", "b"], [0.1, 0.2])
    with pytest.raises(InputError, match="'csls_top1' needs doc hubness"):
        qpp_signals(RUN, query_ids=["q1", "q2"], signals=["csls_top1"])


def test_topk_agreement_by_hand():
    from normscope.retrieval.qpp_baselines import topk_agreement

    a = {"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7}, "q2": {"d1": 0.9, "d2": 0.8}}
    b = {"q1": {"d3": 0.5, "d1": 0.4, "d9": 0.3}, "q2": {"d7": 0.9, "d8": 0.1}}
    # q1: {d1, d2, d3} vs {d3, d1, d9}: 2 shared of 4 -> 0.5; q2: nothing shared -> 0; k = 1: {d1} vs {d3} -> 0
    np.testing.assert_allclose(topk_agreement(a, b, ["q1", "q2"], k=3), [0.5, 0.0])
    np.testing.assert_allclose(topk_agreement(a, b, ["q2", "q1"], k=3), [0.0, 0.5])  # rows follow query_ids
    np.testing.assert_allclose(topk_agreement(a, a, ["q1", "q2"], k=2), [1.0, 1.0])
    assert topk_agreement(a, b, ["q1"], k=1)[0] == 0.0
    with pytest.raises(InputError, match="no results in both runs"):
        topk_agreement(a, b, ["q3"])
    with pytest.raises(InputError, match="k must be >= 1"):
        topk_agreement(a, b, ["q1"], k=0)


def test_agreement_model_joins_the_qpp_table_and_the_incremental_study(tmp_path, monkeypatch):
    """--agreement-model: a second model's top-10 is searched, the per-query Jaccard equals an independent numpy
    search of both models, and model_agreement joins the QPP table (its AUROC that of the column) and the baselines."""
    from _retrieval_data import LookupEncoder, calibration_beir, run_dict
    from sklearn.metrics import roc_auc_score

    from _retrieval_call import run_retrieval
    from normscope import encoders

    d, enc = calibration_beir(tmp_path, np.random.default_rng(4), n_train=20, n_test=60)
    rng = np.random.default_rng(9)
    other = LookupEncoder({t: v + rng.normal(size=v.size) * 0.15 for t, v in enc.table.items()})  # a noisier model
    monkeypatch.setattr(encoders, "load_encoder", lambda name, **kw: other)
    res = run_retrieval(d, encoder=enc, scorers=["cosine"], n_boot=50, n_permutations=100, agreement_model="other")
    pq = res.per_query
    qids = list(pq["query_id"])
    docs = list(res.doc_titles)  # the kept documents' ids

    def top10(e, q):
        D = np.array([e.table[x] for x in docs], dtype=np.float64)
        v = np.asarray(e.table[q], dtype=np.float64)
        cos = D @ v / np.linalg.norm(D, axis=1) / np.linalg.norm(v)
        return {docs[i] for i in np.argsort(-cos, kind="stable")[:10]}

    want = [len(top10(enc, q) & top10(other, q)) / len(top10(enc, q) | top10(other, q)) for q in qids]
    np.testing.assert_allclose(pq["model_agreement"], want)
    assert 0 < np.mean(want) < 1
    assert res.qpp["model_agreement"]["auroc"] == pytest.approx(roc_auc_score(pq["top1_relevant"], pq["model_agreement"]))
    assert res.qpp["model_agreement"]["k"] == 10 and res.qpp["model_agreement"]["direction"] == 1
    inc = res.to_dict()["calibration_incremental"]
    assert inc["baseline"][-1] == "model_agreement" and len(inc["single_baselines"]) == len(inc["baseline"])
    info = res.to_dict()["qpp_info"]["agreement"]
    assert info["model"] == "test/lookup" and info["k"] == 10 and "Jaccard" in info["statistic"]
    assert set(run_dict(res.items, "cosine")) == set(qids)
    plain = run_retrieval(d, encoder=enc, scorers=["cosine"], n_boot=50, n_permutations=100)
    assert "model_agreement" not in plain.qpp and "agreement" not in plain.to_dict()["qpp_info"]
