"""IR metrics against a hand-written trec_eval loop (ties included, graded and binary); paired tests and CIs;
parameter fitting."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from normscope.errors import InputError
from normscope.retrieval.evaluate import (
    compare_to_baseline,
    evaluate_run,
    fit_parameter,
    paired_bootstrap_ci,
    paired_randomization_test,
    per_query_scores,
)


def _loop_metrics(qrels, run, binary=False):
    """trec_eval's definitions written out: rank by (score, doc id) descending; linear gains; relevant = score >= 1."""
    out = {}
    for q, judged in qrels.items():
        gain = {d: (int(v >= 1) if binary else max(v, 0)) for d, v in judged.items()}
        ranked = [d for _, d in sorted(((s, d) for d, s in run.get(q, {}).items()), reverse=True)]
        dcg = sum(gain.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
        ideal = sorted((g for g in gain.values() if g > 0), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        rel = {d for d, v in judged.items() if v >= 1}
        first = next((i + 1 for i, d in enumerate(ranked[:10]) if d in rel), None)
        out[q] = {"ndcg@10": dcg / idcg if idcg else 0.0, "mrr@10": 1 / first if first else 0.0,
                  "recall@100": len(rel & set(ranked[:100])) / len(rel) if rel else 0.0}
    return out


def _random_case(rng, n_q=40, n_d=300, graded=False, ties=False):
    qrels, run = {}, {}
    for i in range(n_q):
        q = f"q{i}"
        rel_docs = rng.choice(n_d, size=rng.integers(1, 8), replace=False)
        qrels[q] = {f"d{j}": int(rng.integers(1, 4) if graded else 1) for j in rel_docs}
        for j in rng.choice(n_d, size=3, replace=False):  # explicit non-relevant judgements
            qrels[q].setdefault(f"d{j}", 0)
        cand = rng.choice(n_d, size=rng.integers(5, 150), replace=False)
        scores = rng.random(cand.size)  # continuous: no ties
        if ties:
            scores = np.round(scores, 1)  # about 10 documents per score value
        order = np.argsort(-scores)
        run[q] = {f"d{cand[j]}": float(scores[j]) for j in order}
    return qrels, run


@pytest.mark.parametrize("graded,ties", [(False, False), (True, False), (False, True), (True, True)])
def test_metrics_equal_the_trec_eval_loop(rng, graded, ties):
    qrels, run = _random_case(rng, graded=graded, ties=ties)
    for binary in (False, True):
        ours = per_query_scores(qrels, run, relevance="binary" if binary else "graded")
        ref = _loop_metrics(qrels, run, binary=binary)
        for i, q in enumerate(qrels):
            for m in ("ndcg@10", "mrr@10", "recall@100"):
                assert ours[m][i] == pytest.approx(ref[q][m], abs=1e-9), (q, m, binary)


def test_metrics_hand_computed():
    qrels = {"a": {"d1": 1, "d2": 1, "dx": 1}, "b": {"d9": 1}}  # dx absent from the run
    run = {"a": {"d5": 0.9, "d1": 0.8, "d7": 0.7, "d2": 0.6}, "b": {f"d{i}": 1 - i / 100 for i in range(20, 40)}}
    m = per_query_scores(qrels, run)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert m["ndcg@10"][0] == pytest.approx(dcg / idcg, abs=1e-12)
    assert m["mrr@10"][0] == pytest.approx(0.5, abs=1e-12)
    assert m["recall@100"][0] == pytest.approx(2 / 3, abs=1e-12)
    assert list(m["ndcg@10"][1:]) == [0.0] and m["mrr@10"][1] == 0.0
    means = evaluate_run(qrels, run)
    assert means["mrr@10"] == pytest.approx(0.25)
    # a judged query missing from the run scores 0 (not dropped)
    m2 = per_query_scores(qrels, {"a": run["a"]})
    assert m2["ndcg@10"][1] == 0.0 and m2["ndcg@10"][0] == pytest.approx(dcg / idcg)
    with pytest.raises(InputError):
        per_query_scores({}, run)


def test_randomization_test_exact_enumeration():
    x = np.array([0.9, 0.5, 0.7, 0.3, 0.8, 0.6, 0.4, 0.95])
    y = np.array([0.7, 0.5, 0.4, 0.35, 0.6, 0.5, 0.3, 0.7])
    d = x - y
    # independent enumeration with itertools
    import itertools

    obs = abs(d.mean())
    cnt = sum(abs(np.dot(s, d)) / d.size >= obs - 1e-12 for s in itertools.product((1, -1), repeat=d.size))
    assert paired_randomization_test(x, y, n_permutations=10000) == pytest.approx(cnt / 2**d.size, abs=1e-15)
    # Monte Carlo version (forced by n_permutations < 2**n) is within 4 SE of the exact value, and seeded
    exact = cnt / 2**d.size
    p1 = paired_randomization_test(x, y, n_permutations=200, seed=3)
    assert p1 == paired_randomization_test(x, y, n_permutations=200, seed=3)
    assert abs(p1 - exact) < 4 * math.sqrt(exact * (1 - exact) / 200) + 1 / 201
    assert paired_randomization_test(x, x) == 1.0


def test_paired_bootstrap_ci_equals_a_loop(rng):
    x, y = rng.random(30), rng.random(30) * 0.8
    ci = paired_bootstrap_ci(x, y, n_boot=300, seed=4)
    idx = np.random.default_rng(4).integers(0, 30, size=(300, 30))
    diffs = [x[i].mean() - y[i].mean() for i in idx]
    rels = [x[i].mean() / y[i].mean() - 1 for i in idx]
    assert ci["mean_diff_ci"] == pytest.approx([np.quantile(diffs, 0.025), np.quantile(diffs, 0.975)], abs=1e-12)
    assert ci["relative_ci"] == pytest.approx([np.quantile(rels, 0.025), np.quantile(rels, 0.975)], abs=1e-12)
    assert ci["relative"] == pytest.approx(x.mean() / y.mean() - 1) and ci["resampled"] == "queries"
    assert paired_bootstrap_ci(x, np.zeros(30), n_boot=50)["relative"] is None


def test_compare_to_baseline_t_test_matches_scipy(rng):
    qrels, run_a = _random_case(rng, n_q=30)
    _, run_b = _random_case(np.random.default_rng(5), n_q=30)
    comp = compare_to_baseline(qrels, {"cosine": run_a, "other": run_b}, n_permutations=2000, seed=1)
    pa, pb = per_query_scores(qrels, run_a), per_query_scores(qrels, run_b)
    for m in ("ndcg@10", "mrr@10", "recall@100"):
        ref = scipy.stats.ttest_rel(pb[m], pa[m]).pvalue
        assert comp["other"][m]["p_t_test"] == pytest.approx(ref, rel=1e-9)
        assert comp["other"][m]["mean_diff"] == pytest.approx((pb[m] - pa[m]).mean(), abs=1e-12)
        assert 0 < comp["other"][m]["p_randomization"] <= 1
    with pytest.raises(InputError, match="baseline"):
        compare_to_baseline(qrels, {"x": run_a})


def test_fit_parameter_recovers_planted_preference(rng):
    """Relevant documents are the low-norm copies: the fit must choose a norm discount (alpha > 0, beta < 0)."""
    d = 12
    n_q = 30
    Q = rng.normal(size=(n_q, d))
    docs, ids, qrels = [], [], {}
    for i in range(n_q):
        u = Q[i] / np.linalg.norm(Q[i])
        noise = rng.normal(size=(2, d)) * 0.05
        good = (u + noise[0]) * 1.0  # low norm, slightly worse angle
        bad = (u + 0.6 * noise[1] + 0.0) * 5.0  # high norm, closer angle
        docs += [good, bad]
        ids += [f"g{i}", f"b{i}"]
        qrels[f"q{i}"] = {f"g{i}": 1}
    docs += list(rng.normal(size=(100, d)))
    ids += [f"n{j}" for j in range(100)]
    D = np.array(docs, dtype=np.float32)
    qids = [f"q{i}" for i in range(n_q)]
    alpha, curve = fit_parameter("inverse_norm", Q, D, query_ids=qids, doc_ids=ids, qrels=qrels)
    beta, _ = fit_parameter("power", Q, D, query_ids=qids, doc_ids=ids, qrels=qrels)
    assert alpha > 0 and beta < 0
    at0 = [c["ndcg@10"] for c in curve if c["param"] == 0.0][0]
    assert max(c["ndcg@10"] for c in curve) > at0
    # values that would flip signs are skipped, not errors
    a2, c2 = fit_parameter("inverse_norm", Q, D, query_ids=qids, doc_ids=ids, qrels=qrels, grid=[-10.0, 0.0])
    assert a2 == 0.0 and len(c2) == 1
    with pytest.raises(InputError, match="no valid parameter"):
        fit_parameter("inverse_norm", Q, D, query_ids=qids, doc_ids=ids, qrels=qrels, grid=[-10.0])
