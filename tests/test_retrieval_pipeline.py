"""run_retrieval end to end on planted BEIR folders (ties, junk, self-hits, fixed parameters, relevance levels,
cross-validation, permutation of the inputs) and on a SciFact subset with the real model; every metric is checked
against pytrec_eval on the run the command wrote."""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
from _retrieval_data import GRIDS, planted, run_dict, write_beir

from normscope.errors import InputError
from _retrieval_call import run_retrieval
from normscope.scoring import score

FAST = {"n_permutations": 500, "n_boot": 100, "grids": GRIDS}


def _pytrec(qrels, run):
    """nDCG@10, MRR@10 (recip_rank of the top-10, trec_eval order), Recall@100 per query, by pytrec_eval."""
    import pytrec_eval

    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100", "recip_rank"}).evaluate(run)
    out = {}
    for q in qrels:
        r = ev.get(q, {})
        rr = r.get("recip_rank", 0.0)
        out[q] = {"ndcg@10": r.get("ndcg_cut_10", 0.0), "mrr@10": rr if rr >= 0.1 - 1e-12 else 0.0,
                  "recall@100": r.get("recall_100", 0.0)}
    return out


def _check_against_pytrec(res, qrels):
    """Every scorer's metrics (means and per query) equal pytrec_eval on the -o table's run, to 1e-9."""
    for s, r in res.scorers.items():
        ref = _pytrec(qrels, run_dict(res.items, s))
        for m in ("ndcg@10", "mrr@10", "recall@100"):
            assert r[m] == pytest.approx(np.mean([ref[q][m] for q in qrels]), abs=1e-9), (s, m)
        per = dict(zip(res.per_query["query_id"], res.per_query[f"ndcg@10_{s}"]))
        for q in qrels:
            assert per[q] == pytest.approx(ref[q]["ndcg@10"], abs=1e-9)


def test_planted_geometry_and_exact_scores(tmp_path, rng):
    ddir, enc = planted(tmp_path, rng)
    res = run_retrieval(ddir, encoder=enc, **FAST)
    sc = res.scorers
    assert list(sc) == ["cosine", "dot", "inverse_norm", "power"]
    assert res.fit_split == "train" and sc["inverse_norm"]["fitted_on"] == "train"
    assert (res.n_queries.eval, res.n_queries.fit) == (40, 60)
    # the planted geometry: discounting the norm must help, and the fit on train must find it
    assert sc["inverse_norm"]["param"] > 0 and sc["power"]["param"] < 0
    assert sc["inverse_norm"]["delta_ci"][0] > 0 and sc["dot"]["delta_ci"][1] < 0
    assert sc["inverse_norm"]["p_value"] < 0.05
    # fit curve of the fit split is kept (one part) with every grid value
    assert [c["param"] for c in sc["inverse_norm"]["fit_curves"][0]["curve"]] == GRIDS["inverse_norm"]
    _check_against_pytrec(res, {f"test-q{i}": {f"test-g{i}": 1} for i in range(40)})
    # scores in the run are the exact scores of the fitted scorer
    row = res.items[(res.items.scorer == "power") & (res.items["rank"] == 1)].iloc[0]
    ref = score(enc.table[row.query_id][None], enc.table[row.doc_id][None], "power", sc["power"]["param"])[0, 0]
    assert row.score == pytest.approx(ref, rel=1e-5)
    # strict JSON (no NaN token)
    json.loads(json.dumps(res.to_dict(), allow_nan=False))


def test_ties_follow_trec_eval_order(tmp_path, rng):
    """Each relevant document appears 20 more times with identical text: exact ties, evaluated in trec_eval order."""
    ddir, enc = planted(tmp_path, rng, dup_docs=20)
    res = run_retrieval(ddir, encoder=enc, scorers=("cosine", "inverse_norm"), **FAST)
    qrels = {f"test-q{i}": {f"test-g{i}": 1} for i in range(40)}
    _check_against_pytrec(res, qrels)
    # the -o ranks are the trec_eval order: score descending, then document id descending
    for _, g in res.items.groupby(["scorer", "query_id"]):
        want = sorted(zip(g["score"], g["doc_id"]), reverse=True)
        assert list(g.sort_values("rank")["doc_id"]) == [d for _, d in want]
    # ties are real: the 21 copies of a relevant document share one score bit for bit
    cos = res.items[res.items.scorer == "cosine"]
    copies = cos[cos.doc_id.str.startswith("test-g0")]
    assert copies.query_id.value_counts().max() == 21 and copies.groupby("query_id")["score"].nunique().max() == 1
    # hand check: the copies' ids sort above "test-g0", so a tied relevant document sits below its 20 copies
    q0 = cos[cos.query_id == "test-q0"].sort_values("rank")
    if q0.doc_id.iloc[0].startswith("test-g0"):
        assert q0.doc_id.iloc[20] == "test-g0" and res.per_query.set_index("query_id").loc["test-q0", "ndcg@10_cosine"] == 0


def test_permuted_inputs_give_identical_outputs(tmp_path, rng):
    """Shuffling corpus, queries and qrels lines (ties present) changes no per-query output and no summary number."""
    a, enc = planted(tmp_path / "a", rng, dup_docs=3, n_train=30, n_test=20)
    b = tmp_path / "b"
    (b / "qrels").mkdir(parents=True)
    shuffle = random.Random(7)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/train.tsv", "qrels/test.tsv"):
        lines = (a / name).read_text().splitlines()
        head, body = (lines[:1], lines[1:]) if name.startswith("qrels") else ([], lines)
        shuffle.shuffle(body)
        (b / name).write_text("\n".join(head + body) + "\n")
    ra = run_retrieval(a, encoder=enc, **FAST)
    rb = run_retrieval(b, encoder=enc, **FAST)
    da, db = ra.to_dict(), rb.to_dict()
    for k in ("dataset", "dataset_name"):
        da.pop(k), db.pop(k)
    for ca, cb in zip(da["claims"], db["claims"]):  # the claims rows name the dataset (folders a and b)
        for k in ("tested_on", "statistic"):
            assert (ca.pop(k) or "").replace("(a)", "(b)").replace(" a '", " b '") == (cb.pop(k) or "")
    assert json.dumps(da, sort_keys=True) == json.dumps(db, sort_keys=True)
    pd.testing.assert_frame_equal(ra.per_query.sort_values("query_id").reset_index(drop=True),
                                  rb.per_query.sort_values("query_id").reset_index(drop=True))
    key = ["scorer", "query_id", "rank"]
    pd.testing.assert_frame_equal(ra.items.sort_values(key).reset_index(drop=True), rb.items.sort_values(key).reset_index(drop=True))


def test_junk_left_out_everywhere(tmp_path, rng):
    ddir, enc = planted(tmp_path, rng, junk_query=True, n_train=30, n_test=20)
    lines = (ddir / "corpus.jsonl").read_text().splitlines()
    (ddir / "corpus.jsonl").write_text("\n".join(lines + [json.dumps({"_id": "junkdoc", "title": "", "text": " \ufeff "})]) + "\n")
    res = run_retrieval(ddir, encoder=enc, **FAST)
    assert res.junk["queries"]["ids"] == ["test-junk"] and res.junk["documents"]["ids"] == ["junkdoc"]
    assert res.excluded_queries["eval"]["excluded_junk"] == 1 and res.n_queries["eval"] == 20
    assert "test-junk" not in set(res.per_query.query_id) and "junkdoc" not in set(res.items.doc_id)
    assert res.n_docs == 20 * 2 + 30 * 2 + 150
    with pytest.raises(InputError, match="junk"):
        run_retrieval(ddir, encoder=enc, junk="error", **FAST)


def _arguana_like(root, rng, n=24, d=10):
    """Every query is also a corpus document with the same id and text (as in ArguAna); its counter-argument is relevant."""
    from _retrieval_data import LookupEncoder

    table, corpus, queries, qrels = {}, [], [], {"train": [], "test": []}
    for i in range(2 * n):
        split = "train" if i < n else "test"
        v = rng.normal(size=d)
        table[f"arg{i}"] = v
        table[f"counter{i}"] = v + rng.normal(size=d) * 0.5
        corpus += [{"_id": f"a{i}", "text": f"arg{i}"}, {"_id": f"c{i}", "text": f"counter{i}"}]
        queries.append({"_id": f"a{i}", "text": f"arg{i}"})
        qrels[split].append((f"a{i}", f"c{i}", 1))
    return write_beir(root, corpus, queries, qrels), LookupEncoder(table)


def test_self_hits_ignored_by_default_and_calibration_never_blocks_metrics(tmp_path, rng):
    ddir, enc = _arguana_like(tmp_path, rng)
    with pytest.warns(UserWarning, match="24 of 24 'test' queries have the id of a corpus document"):
        res = run_retrieval(ddir, encoder=enc, scorers=("cosine",), **FAST)
    assert res.ignore_identical_ids and res.identical_ids == {"test": 24, "train": 24}
    assert not any(res.items.query_id == res.items.doc_id)
    qrels = {f"a{i}": {f"c{i}": 1} for i in range(24, 48)}
    _check_against_pytrec(res, qrels)
    assert res.calibration["margin"]["status"] == "ok"
    # keeping the self-hits: every top-1 is the query itself (non-relevant), so no map can be fitted;
    # the signals say why, and the retrieval metrics are still there
    with pytest.warns(UserWarning, match="kept"):
        kept = run_retrieval(ddir, encoder=enc, scorers=("cosine",), ignore_identical_ids=False, **FAST)
    assert (kept.per_query.top1_doc == kept.per_query.query_id).all()
    assert kept.calibration["margin"]["status"] == "not computed"
    assert "all non-relevant" in kept.calibration["margin"]["reason"]
    assert kept.calibration["top1_score_uncalibrated"]["status"] == "ok"
    _check_against_pytrec(kept, qrels)
    # figures: two panels per row, wide enough for a full-width page row; a not-computed signal says so in its panel
    from PIL import Image

    from normscope.retrieval import plot_reliability, plot_risk_coverage

    p = plot_reliability(kept, tmp_path / "rel.png", signals=["margin", "top1_score_uncalibrated"])
    w, h = Image.open(p).size
    assert w / h > 1.9 and w >= 1300
    assert plot_risk_coverage(kept, tmp_path / "rc.png").stat().st_size > 5000


def test_fixed_parameter_is_not_fitted(tmp_path, rng):
    from normscope.retrieval import exact_search

    ddir, enc = planted(tmp_path, rng, n_train=30, n_test=20)
    res = run_retrieval(ddir, encoder=enc, scorers=("inverse_norm",), params={"inverse_norm": 0.05}, **FAST)
    r = res.scorers["inverse_norm"]
    assert r["param"] == 0.05 and r["param_source"] == "fixed (not fitted)" and r["fitted_on"] is None
    assert r["fit_curves"] == []
    qids = [f"test-q{i}" for i in range(20)]
    docs = [json.loads(x) for x in (ddir / "corpus.jsonl").read_text().splitlines()]
    run = exact_search(np.array([enc.table[q] for q in qids]), np.array([enc.table[d["text"]] for d in docs]),
                       query_ids=qids, doc_ids=[d["_id"] for d in docs], scorer="inverse_norm", param=0.05)
    ref = _pytrec({q: {f"test-g{i}": 1} for i, q in enumerate(qids)}, run)
    assert r["ndcg@10"] == pytest.approx(np.mean([v["ndcg@10"] for v in ref.values()]), abs=1e-12)
    with pytest.raises(InputError, match="not run"):
        run_retrieval(ddir, encoder=enc, scorers=("cosine",), params={"power": 1.0})


def test_graded_and_binary_relevance(tmp_path, rng):
    ddir, enc = planted(tmp_path, rng, n_train=30, n_test=20)
    # grade 2 for the relevant document, 1 for its distractor
    rows = [(f"test-q{i}", f"test-g{i}", 2) for i in range(20)] + [(f"test-q{i}", f"test-b{i}", 1) for i in range(20)]
    write_beir(ddir, [json.loads(x) for x in (ddir / "corpus.jsonl").read_text().splitlines()],
               [json.loads(x) for x in (ddir / "queries.jsonl").read_text().splitlines()],
               {"test": rows, "train": [(f"train-q{i}", f"train-g{i}", 1) for i in range(30)]})
    graded = {f"test-q{i}": {f"test-g{i}": 2, f"test-b{i}": 1} for i in range(20)}
    binary = {q: {d: 1 for d in v} for q, v in graded.items()}
    for level, qrels in (("graded", graded), ("binary", binary)):
        res = run_retrieval(ddir, encoder=enc, scorers=("cosine", "power"), relevance=level, **FAST)
        assert res.relevance == level
        _check_against_pytrec(res, qrels)
    assert res.scorers["cosine"]["ndcg@10"] != pytest.approx(
        run_retrieval(ddir, encoder=enc, scorers=("cosine",), **FAST).scorers["cosine"]["ndcg@10"], abs=1e-6)


def test_cross_validation_keeps_every_fold(tmp_path, rng):
    ddir, enc = planted(tmp_path, rng, with_train=False)
    with pytest.warns(UserWarning, match="cross-validation"):
        res = run_retrieval(ddir, encoder=enc, scorers=("inverse_norm",), **FAST)
    r = res.scorers["inverse_norm"]
    assert res.fit_mode == "cv" and "5-fold cross-validation over 'test'" in res.fit_split
    assert len(r["param"]) == 5 and r["param_mean"] == pytest.approx(np.mean(r["param"]))
    assert [p["part"] for p in r["fit_curves"]] == [f"fold {i}" for i in range(1, 6)]
    assert all(len(p["curve"]) == len(GRIDS["inverse_norm"]) and p["n_fit"] == 32 for p in r["fit_curves"])
    # the direction is fixed once (-1 for a norm) and no fold's slope goes against it; a fold whose fitting
    # queries have one class only makes the signal "not computed", naming the fold
    qn = res.calibration["query_norm"]
    assert qn["fit"]["direction"] == -1 and all(f["slope"] >= 0 for f in qn["fit"]["folds"])
    assert (len(qn["fit"]["folds"]) == 5) == (qn["status"] == "ok")
    if qn["status"] != "ok":
        assert qn["reason"].startswith("fold ") and "all non-relevant" in qn["reason"]
    assert list(res.scorers) == ["cosine", "inverse_norm"]
    with pytest.raises(InputError, match="never fitted on test"):
        run_retrieval(ddir, encoder=enc, fit_split="test")


def test_scifact_subset_real_model(shared_data, bundled_encoder):
    # embeddings go through normscope's content-addressed cache (hits after the first run)
    res = run_retrieval(shared_data / "scifact", encoder=bundled_encoder, scorers=("cosine", "inverse_norm"), max_docs=60,
                        max_queries=12, **FAST)
    assert res.n_docs == 60 and (res.n_queries.eval, res.n_queries.fit) == (12, 12)
    assert res.model == "sentence-transformers/all-MiniLM-L6-v2"
    assert res.excluded_queries["eval"]["qrels_unknown_docs"] == 0
    assert res.items.groupby(["scorer", "query_id"]).size().max() == 60
    assert 0 < res.scorers["cosine"]["ndcg@10"] <= 1
    assert all(t for t in res.doc_titles.values())
