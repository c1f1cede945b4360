"""Scorers, exact folding and faiss search (normscope.scoring / search)."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.scoring import fold_documents, fold_queries, folded_scores, pair_dot, score, score_pairwise
from normscope.retrieval.search import FoldedIndex, brute_force_search, exact_search, order_run, rerank


@pytest.fixture
def vecs(rng):
    Q = rng.normal(size=(7, 16)).astype(np.float32)
    D = (rng.normal(size=(50, 16)) * rng.uniform(0.5, 3.0, size=(50, 1))).astype(np.float32)
    return Q, D


def test_formulas_by_hand():
    q = np.array([[3.0, 4.0]])  # ||q|| = 5
    d = np.array([[1.0, 0.0], [0.0, 2.0]])  # norms 1, 2; cos = 0.6, 0.8
    np.testing.assert_allclose(score(q, d, "cosine"), [[0.6, 0.8]], atol=1e-15)
    np.testing.assert_allclose(score(q, d, "dot"), [[3.0, 8.0]], atol=1e-15)
    # cos / (1 + alpha ||d||), alpha = 0.5: 0.6/1.5, 0.8/2
    np.testing.assert_allclose(score(q, d, "inverse_norm", 0.5), [[0.4, 0.4]], atol=1e-15)
    # cos * ||d||^beta, beta = -1: 0.6, 0.4
    np.testing.assert_allclose(score(q, d, "power", -1.0), [[0.6, 0.4]], atol=1e-15)
    np.testing.assert_allclose(score(q, d, "power", 2.0), [[0.6, 3.2]], atol=1e-15)


@pytest.mark.parametrize("scorer,param", [("cosine", None), ("dot", None), ("inverse_norm", 0.3), ("inverse_norm", -0.05), ("power", 1.7), ("power", -2.5)])
def test_fold_is_exact(vecs, scorer, param):
    Q, D = vecs
    ref = score(Q, D, scorer, param)
    folded = fold_queries(Q, scorer).astype(np.float64) @ fold_documents(D, scorer, param).astype(np.float64).T
    np.testing.assert_allclose(folded, ref, rtol=2e-6, atol=2e-6 * np.abs(ref).max())
    # explicit closed form of the inverse-norm fold: d / (||d|| (1 + alpha ||d||))
    if scorer == "inverse_norm":
        n = np.linalg.norm(D.astype(np.float64), axis=1, keepdims=True)
        np.testing.assert_allclose(fold_documents(D, scorer, param), D / (n * (1 + param * n)), rtol=1e-6)


@pytest.mark.parametrize("scorer,param", [("cosine", None), ("dot", None), ("inverse_norm", 0.3), ("power", -1.5)])
def test_faiss_search_matches_brute_force(vecs, scorer, param):
    Q, D = vecs
    qids = [f"q{i}" for i in range(len(Q))]
    dids = [f"d{i}" for i in range(len(D))]
    fast = exact_search(Q, D, query_ids=qids, doc_ids=dids, scorer=scorer, param=param, k=20)
    slow = brute_force_search(Q, D, query_ids=qids, doc_ids=dids, scorer=scorer, param=param, k=20)
    ref = score(Q, D, scorer, param)
    for i, q in enumerate(qids):
        assert list(fast[q]) == list(slow[q])
        # the returned scores are the true scores
        for d, s in fast[q].items():
            assert s == pytest.approx(ref[i, int(d[1:])], rel=1e-5, abs=1e-5)
        assert list(fast[q]) == [f"d{j}" for j in np.argsort(-ref[i], kind="stable")[:20]]


def test_ties_follow_trec_eval_order():
    """Equal scores: document id descending (trec_eval), whatever the corpus order."""
    D = np.array([[1.0, 0.0]] * 5 + [[0.0, 1.0]], dtype=np.float32)
    Q = np.array([[1.0, 0.0]], dtype=np.float32)
    dids = ["b", "e", "a", "d", "c", "z"]
    run = exact_search(Q, D, query_ids=["q"], doc_ids=dids, scorer="cosine", k=3)
    assert list(run["q"]) == ["e", "d", "c"]
    assert list(brute_force_search(Q, D, query_ids=["q"], doc_ids=dids, k=3)["q"]) == ["e", "d", "c"]
    assert list(order_run({"q": {"a": 1.0, "b": 2.0, "c": 1.0, "ab": 1.0}})["q"]) == ["b", "c", "ab", "a"]


def test_many_ties_past_the_first_window_are_exact(rng):
    """40 identical documents tie across rank k = 10 (more than the first fetched window): the top k is exact."""
    base = rng.normal(size=16)
    D = np.vstack([np.tile(base, (40, 1)), rng.normal(size=(60, 16))]).astype(np.float32)
    dids = [f"dup{j:02d}" for j in range(40)] + [f"n{j}" for j in range(60)]
    perm = rng.permutation(100)
    Q = (base + rng.normal(size=16) * 0.01)[None].astype(np.float32)
    for order in (np.arange(100), perm):
        run = exact_search(Q, D[order], query_ids=["q"], doc_ids=[dids[i] for i in order], k=10)
        assert list(run["q"]) == [f"dup{j:02d}" for j in range(39, 29, -1)]
        assert len(set(run["q"].values())) == 1  # bit-identical scores for identical vectors


def test_ignore_identical_ids(vecs):
    Q, D = vecs
    dids = [f"d{i}" for i in range(len(D))]
    qids = ["d3", "d7", "x"] + [f"q{i}" for i in range(len(Q) - 3)]
    Q = Q.copy()
    Q[0], Q[1] = D[3], D[7]  # the queries are their own documents
    kept = exact_search(Q, D, query_ids=qids, doc_ids=dids, k=5)
    assert next(iter(kept["d3"])) == "d3" and next(iter(kept["d7"])) == "d7"
    dropped = exact_search(Q, D, query_ids=qids, doc_ids=dids, k=5, ignore_identical_ids=True)
    assert "d3" not in dropped["d3"] and len(dropped["d3"]) == 5
    assert list(dropped["d3"]) == [d for d in exact_search(Q[:1], D, query_ids=["d3"], doc_ids=dids, k=6)["d3"] if d != "d3"]
    assert dropped["x"] == kept["x"]
    ref = brute_force_search(Q, D, query_ids=qids, doc_ids=dids, k=5, ignore_identical_ids=True)
    assert all(list(ref[q]) == list(dropped[q]) for q in qids)


def test_pair_dot_is_position_independent(vecs):
    Q, D = vecs
    Qf, Df = fold_queries(Q, "power"), fold_documents(D, "power", -0.7)
    S = folded_scores(Qf, Df)
    np.testing.assert_allclose(S, score(Q, D, "power", -0.7), rtol=1e-5, atol=1e-6)
    perm = np.random.default_rng(1).permutation(len(D))
    assert np.array_equal(folded_scores(Qf, Df[perm], block=64), S[:, perm])  # bit for bit, other blocking too
    assert np.array_equal(pair_dot(Df[perm], Qf[2]), S[2, perm])
    np.testing.assert_allclose(score_pairwise(Q, D[: len(Q)], "power", -0.7), np.diag(score(Q, D[: len(Q)], "power", -0.7)),
                               rtol=1e-5)


def test_rerank_rescoring(vecs):
    Q, D = vecs
    qids = [f"q{i}" for i in range(len(Q))]
    dids = [f"d{i}" for i in range(len(D))]
    cand = exact_search(Q, D, query_ids=qids, doc_ids=dids, scorer="cosine", k=15)
    rr = rerank(cand, Q, D, query_ids=qids, doc_ids=dids, scorer="power", param=2.0, k=5)
    ref = score(Q, D, "power", 2.0)
    for i, q in enumerate(qids):
        cidx = [int(d[1:]) for d in cand[q]]
        best = sorted(cidx, key=lambda j: -ref[i, j])[:5]
        assert [int(d[1:]) for d in rr[q]] == best
    with pytest.raises(InputError, match="unknown document 'nope'"):
        rerank({"q0": {"nope": 1.0}}, Q, D, query_ids=qids, doc_ids=dids, scorer="cosine")


def test_invalid_parameters_named():
    D = np.array([[2.0, 0.0], [0.0, 4.0]])  # max norm 4 -> alpha must be > -0.25
    with pytest.raises(InputError, match=r"alpha=-0.25 .*-0.25"):
        fold_documents(D, "inverse_norm", -0.25)  # 1 + alpha*4 = 0: division by zero
    with pytest.raises(InputError, match=r"alpha=-0.5"):
        fold_documents(D, "inverse_norm", -0.5)  # sign flip
    fold_documents(D, "inverse_norm", -0.2)  # allowed
    with pytest.raises(InputError, match=r"beta=200"):
        fold_documents(D, "power", 200.0)  # 4**200 overflows
    with pytest.raises(InputError, match="beta=-1"):
        fold_documents(np.array([[0.0, 0.0], [1.0, 0.0]]), "power", -1.0)  # zero norm ** negative
    with pytest.raises(InputError, match="nan"):
        fold_documents(D, "power", float("nan"))
    with pytest.raises(InputError, match="unknown scorer 'bm25'"):
        score(D, D, "bm25")
    with pytest.raises(InputError, match="empty corpus"):
        FoldedIndex(np.zeros((0, 2)), [], "cosine")
    with pytest.raises(InputError, match="duplicate document id 'x'"):
        FoldedIndex(D, ["x", "x"], "cosine")
    with pytest.raises(InputError, match="non-finite"):
        fold_documents(np.array([[np.nan, 1.0]]), "cosine")
