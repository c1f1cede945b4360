"""The deployable calibrator: its stored map equals scikit-learn's, the Learn-then-Test threshold keeps its level on
simulated exchangeable queries, another model's file is refused in one line, the integrations agree with the
pipeline, and permuting queries permutes every per-query output."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from _retrieval_data import calibration_beir

from normscope.errors import InputError
from normscope.extensions.calibrate import run_calibrate as _run_calibrate
from normscope.extensions.calibrator import (LAMBDA_GRID, Calibrator, check_fingerprint, fit_calibrator, keep_stats,
                                            load_calibrator, ltt_threshold, score_threshold)
from normscope.table import ModelFingerprint


def run_calibrate(dataset, *, encoder=None, progress=False, seed=0, n_boot=1000, model=None, signals=None,
                  answer_at=(), apply=None, run_file=None, qrels_file=None, **kw):
    """``run_calibrate(CalibrateRequest(...), encoder=...)`` from flat keywords (tests only)."""
    from normscope.requests import Embedding, Resampling
    from normscope.requests.retrieval import CalibrateRequest

    req = CalibrateRequest(dataset=None if dataset is None else str(dataset),
                           run_file=None if run_file is None else str(run_file),
                           qrels_file=None if qrels_file is None else str(qrels_file),
                           apply=None if apply is None else str(apply), answer_at=tuple(answer_at),
                           embedding=Embedding(model=model), resampling=Resampling(n_boot=n_boot, seed=seed),
                           **({"signals": tuple(signals)} if signals is not None else {}), **kw)
    return _run_calibrate(req, encoder=encoder, progress=progress)

FP = {"name": "test/lookup", "revision": "planted", "pooling": "none", "dropped_modules": [], "backend": "test",
      "precision": "fp32"}


def _features(seed, n=300):
    """The default signals (top1_score, margin, query_norm); the label follows the scores and, weakly, a small norm."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] - 0.2 * X[:, 2] + rng.normal(size=n) > 0).astype(int)
    return pd.DataFrame({"top1_score": X[:, 0], "margin": X[:, 1], "query_norm": 2.0 + 0.3 * X[:, 2]}), y


@pytest.mark.parametrize("method,sk", [("isotonic", "isotonic"), ("platt", "sigmoid")])
def test_stored_map_equals_sklearn_predict_proba(method, sk):
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    df, y = _features(0)
    cal = fit_calibrator(df, y, method=method, seed=3, model=FP)
    ref = CalibratedClassifierCV(make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000)), method=sk,
                                 cv=StratifiedKFold(5, shuffle=True, random_state=3), ensemble=False).fit(df.to_numpy(), y)
    new, _ = _features(1, n=50)
    np.testing.assert_allclose(cal.predict_proba(new), ref.predict_proba(new.to_numpy())[:, 1], atol=1e-12)
    # the JSON round trip keeps every number
    back = Calibrator.from_dict(json.loads(json.dumps(cal.to_dict())))
    np.testing.assert_array_equal(back.predict_proba(new), cal.predict_proba(new))
    assert cal.depth == 2 and cal.target == "top1_relevant"


def test_learn_then_test_keeps_its_level_on_simulated_exchangeable_queries():
    """P(relevant | p) = p with p ~ Beta(4, 2): the population precision of "answer when p >= lambda" is known. Over
    repeated draws of 300 calibration queries, the chosen lambda falls below precision 0.8 in at most delta = 0.1 of
    the draws; the naive rule (smallest lambda whose calibration precision reaches 0.8) fails far more often."""
    from scipy import integrate, stats

    def pop_precision(lam):
        return integrate.quad(lambda x: x * stats.beta.pdf(x, 4, 2), lam, 1)[0] / stats.beta.sf(lam, 4, 2)

    truth = {lam: pop_precision(lam) for lam in LAMBDA_GRID}
    rng = np.random.default_rng(0)
    reps, bad, naive_bad, found = 150, 0, 0, 0
    for _ in range(reps):
        p = rng.beta(4, 2, size=300)
        y = (rng.uniform(size=300) < p).astype(int)
        lam = ltt_threshold(p, y, precision=0.8, delta=0.1)["threshold"]
        naive = next((g for g in LAMBDA_GRID if (p >= g).any() and y[p >= g].mean() >= 0.8), None)
        naive_bad += naive is not None and truth[naive] < 0.8
        if lam is not None:
            found += 1
            bad += truth[lam] < 0.8
    assert bad / reps <= 0.1
    assert naive_bad / reps > 0.25  # the level is not met by chance: the naive rule misses it
    assert found > 0.2 * reps


def test_ltt_threshold_reports_no_threshold_honestly():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=40)
    y = rng.integers(0, 2, size=40)  # labels unrelated to p: precision 0.5 everywhere
    out = ltt_threshold(p, y, precision=0.9, delta=0.05)
    assert out["threshold"] is None and out["valid"] == [] and "no threshold" in out["statement"]
    with pytest.raises(InputError, match="delta must lie"):
        ltt_threshold(p, y, delta=1.5)


def test_document_threshold_by_hand():
    run = {"a": {"d1": 0.9, "d2": 0.7, "d3": 0.2}, "b": {"d4": 0.8, "d5": 0.6, "d6": 0.5}}
    qrels = {"a": {"d1": 1, "d3": 1}, "b": {"d5": 2}}
    k = keep_stats(run, qrels, ["a", "b"], 0.65, k=3)
    # kept: a {d1, d2}, b {d4}: 1 relevant of 3; both queries keep something; relevant in the top 3: 3
    assert k["precision"] == pytest.approx(1 / 3) and k["coverage"] == 1.0 and k["recall"] == pytest.approx(1 / 3)
    t = score_threshold(run, qrels, ["a", "b"], precision=0.99, k=3)
    assert t["threshold"] == pytest.approx(0.805) and t["guarantee"] is None  # only d1 (0.9) is kept above 0.8


def test_another_models_calibrator_is_refused_in_one_line(tmp_path):
    df, y = _features(2, n=60)
    cal = fit_calibrator(df, y, model=FP)
    path = cal.save(tmp_path / "cal.json")
    other = ModelFingerprint(name="test/lookup", revision="other-weights", pooling="none", backend="test")
    with pytest.raises(InputError) as e:
        check_fingerprint(load_calibrator(path), other)
    msg = str(e.value)
    assert "\n" not in msg and "fitted for model 'test/lookup'" in msg and "not for 'test/lookup'" in msg
    check_fingerprint(load_calibrator(path), ModelFingerprint.from_dict(FP))  # the same model passes
    (tmp_path / "bad.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(InputError, match="not a normscope calibrator"):
        load_calibrator(tmp_path / "bad.json")


def _vectors_parquet(path, *tables):
    merged = {t: v for tab in tables for t, v in tab.items()}  # shared names (noise documents): the last table's vector
    rows = [{"id": f"v{i}", "text": t, "vector": np.asarray(v, dtype=np.float32).tolist()}
            for i, (t, v) in enumerate(merged.items())]
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


def test_cli_writes_the_set_and_refuses_another_fingerprint_in_one_line(tmp_path, capsys):
    from normscope.cli import run

    d1, e1 = calibration_beir(tmp_path / "a", np.random.default_rng(0), n_train=120, n_test=80)
    d2, e2 = calibration_beir(tmp_path / "b", np.random.default_rng(1), easy=0.08, n_train=10, n_test=60,
                              split_names=("x", "y"))
    model = _vectors_parquet(tmp_path / "vectors.parquet", e1.table, e2.table)
    cal, js, fig, tab = (tmp_path / n for n in ("cal.json", "fit.json", "rel.png", "q.parquet"))
    code = run(["calibrate", "--dataset", str(d1), "--model", str(model), "-c", str(cal), "--json", str(js), "--fig",
                str(fig), "-o", str(tab), "--n-boot", "50", "--answer-at", "0.7"])
    assert code == 0 and fig.stat().st_size > 0
    summary, written = json.loads(js.read_text()), json.loads(cal.read_text())
    assert summary["calibrator"] == written and written["model"]["name"] == "precomputed:vectors.parquet"
    assert len(pd.read_parquet(tab)) == 200 and summary["heldout"]["answer_at"][0]["threshold"] == 0.7
    capsys.readouterr()
    code = run(["calibrate", "--dataset", str(d2), "--split", "y", "--model", str(model), "--apply", str(cal), "--json",
                str(tmp_path / "shift.json"), "--n-boot", "50"])
    shift = json.loads((tmp_path / "shift.json").read_text())
    assert code == 0 and shift["mode"] == "apply" and shift["parts"] == {"held-out": 60}
    other = _vectors_parquet(tmp_path / "other.parquet", e1.table, e2.table, {"extra": np.ones(16)})
    capsys.readouterr()
    code = run(["calibrate", "--dataset", str(d2), "--split", "y", "--model", str(other), "--apply", str(cal)])
    full = capsys.readouterr().err
    err = [x for x in full.strip().splitlines() if not x.startswith("calibrate: ")]  # phase lines
    assert code == 2 and len(err) == 1 and err[0].startswith("error: this calibrator was fitted for model")
    assert "embedding" not in full  # refused before any embedding


def test_fit_evaluate_and_every_part_is_disjoint(tmp_path):
    d, enc = calibration_beir(tmp_path, np.random.default_rng(0), norm_effect=0.5)
    res = run_calibrate(d, encoder=enc, n_boot=200, answer_at=[0.5])  # the default signals, the norm among them
    assert res.signals == ["top1_score", "margin", "query_norm"] and res.signals_note is None
    assert res.calibrator["signals"] == res.signals
    held_ids = [f"test-q{i}" for i in range(150)]
    np.testing.assert_allclose(res.items.set_index("query_id").loc[held_ids, "query_norm"],
                               [np.linalg.norm(enc.table[q]) for q in held_ids], rtol=1e-6)
    assert res.parts == {"fit": 100, "calibration": 100, "held-out": 150}
    items = res.items
    assert items.groupby("part").size().to_dict() == {"calibration": 100, "fit": 100, "held-out": 150}
    assert not items["query_id"].duplicated().any()
    assert set(items.loc[items.part == "held-out", "query_id"]) == {f"test-q{i}" for i in range(150)}
    h = res.heldout
    assert h["auroc"] > 0.75 and h["ece_ci"][0] <= h["ece"] <= h["ece_ci"][1]
    ans = res.calibrator["thresholds"]["answer"]
    assert ans["threshold"] in LAMBDA_GRID and ans["n_calibration"] == 100
    held = items[items.part == "held-out"]
    answered = held.p_relevant >= ans["threshold"]
    assert h["answer"]["coverage"] == pytest.approx(answered.mean())
    assert h["answer"]["precision"] == pytest.approx(held.label[answered].mean())
    assert (held.answered == answered).all()


def test_shift_apply_on_another_dataset(tmp_path):
    d1, enc1 = calibration_beir(tmp_path / "a", np.random.default_rng(0))
    d2, enc2 = calibration_beir(tmp_path / "b", np.random.default_rng(1), easy=0.08, n_train=20, n_test=120)
    fitted = run_calibrate(d1, encoder=enc1, n_boot=100)
    path = tmp_path / "cal.json"
    Calibrator.from_dict(fitted.calibrator).save(path)
    shifted = run_calibrate(d2, encoder=enc2, apply=path, n_boot=100)
    assert shifted.mode == "apply" and shifted.parts == {"held-out": 120}
    assert shifted.calibrator == fitted.calibrator
    assert shifted.shift["fitted_on"]["split"] == "train" and "not a guaranteed value" in shifted.shift["note"]
    # the same file applied to the first dataset's held-out queries gives the fit run's numbers
    same = run_calibrate(d1, encoder=enc1, apply=path, n_boot=100)
    assert same.heldout["ece"] == pytest.approx(fitted.heldout["ece"])
    assert same.heldout["answer"] == fitted.heldout["answer"]


def test_permuting_queries_permutes_every_per_query_output(tmp_path):
    rng = np.random.default_rng(0)
    d, enc = calibration_beir(tmp_path / "a", rng, n_train=60, n_test=40)
    res = run_calibrate(d, encoder=enc, signals=["top1_score", "margin", "query_norm", "nqc"], n_boot=100)
    lines = (d / "queries.jsonl").read_text().splitlines()
    order = np.random.default_rng(5).permutation(len(lines))
    (d / "queries.jsonl").write_text("\n".join(lines[i] for i in order) + "\n")
    corpus = (d / "corpus.jsonl").read_text().splitlines()
    (d / "corpus.jsonl").write_text("\n".join(corpus[::-1]) + "\n")
    res2 = run_calibrate(d, encoder=enc, signals=["top1_score", "margin", "query_norm", "nqc"], n_boot=100)
    a = res.items.set_index("query_id").sort_index()
    b = res2.items.set_index("query_id").sort_index()
    pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)
    from normscope._io import to_jsonable

    assert to_jsonable(res.to_dict()) == to_jsonable(res2.to_dict())  # NaN p-values (nothing answered) as null


def test_integrations_agree_with_the_pipeline(tmp_path):
    import torch
    from sentence_transformers import util

    from normscope.extensions.ann import AnnParams, build_ann_index
    from normscope.extensions.integrations import calibrate_index_search, calibrate_semantic_search
    from normscope.retrieval.search import run_to_frame

    rng = np.random.default_rng(0)
    d, enc = calibration_beir(tmp_path / "a", rng, n_test=60, norm_effect=0.5)
    res = run_calibrate(d, encoder=enc, n_boot=100)
    cal = Calibrator.from_dict(res.calibrator)
    assert cal.signals == ["top1_score", "margin", "query_norm"]  # the default: the integrations need the query vectors
    assert cal.thresholds["answer"]["threshold"] is not None
    docs = [json.loads(x)["_id"] for x in (d / "corpus.jsonl").read_text().splitlines()]
    qids = [f"test-q{i}" for i in range(60)]
    C = np.stack([enc.table[x] for x in docs]).astype(np.float32)
    Q = np.stack([enc.table[x] for x in qids]).astype(np.float32)
    held = res.items.set_index("query_id").loc[qids]
    hits = util.semantic_search(torch.from_numpy(Q), torch.from_numpy(C), top_k=10)
    out = calibrate_semantic_search(cal, hits, model=enc, query_embeddings=Q, corpus_embeddings=C)
    # semantic_search scores in float32 torch, the pipeline in float64: the isotonic map magnifies ~1e-7 into ~1e-5
    np.testing.assert_allclose([o["p_relevant"] for o in out], held["p_relevant"], atol=1e-4)
    assert [o["answer"] for o in out] == list(held["answered"]) and 0 < held["answered"].sum() < 60
    with pytest.raises(InputError, match="fitted for model"):
        calibrate_semantic_search(cal, hits, model=ModelFingerprint("other/model", "x", "mean"))
    with pytest.raises(InputError, match="has 1 results"):
        calibrate_semantic_search(cal, util.semantic_search(torch.from_numpy(Q), torch.from_numpy(C), top_k=1), model=enc)

    index = build_ann_index(C, docs, scorer="cosine", params=AnnParams(kind="flat"), fingerprint=enc.fingerprint.to_dict())
    index.save(tmp_path / "idx")
    run = index.search(Q, qids, 10)
    frame = calibrate_index_search(cal, run_to_frame(run), index_dir=tmp_path / "idx", query_vectors=Q)
    np.testing.assert_allclose(frame.set_index("query_id").loc[qids, "p_relevant"], held["p_relevant"], atol=1e-6)
    build_ann_index(C, docs, scorer="inverse_norm", param=0.1, params=AnnParams(kind="flat"),
                    fingerprint=enc.fingerprint.to_dict()).save(tmp_path / "idx2")
    with pytest.raises(InputError, match="scores with inverse_norm"):
        calibrate_index_search(cal, run_to_frame(run), index_dir=tmp_path / "idx2")


def test_a_run_file_and_qrels_give_the_same_calibrator_as_the_dataset_cv_path(tmp_path):
    """A TREC run written from the dataset's own cosine run, with its qrels, reproduces the 40/30/30 cross-fitted path."""
    from normscope.extensions.calibrate import read_run

    d, enc = calibration_beir(tmp_path / "a", np.random.default_rng(0), n_train=10, n_test=200)
    ref = run_calibrate(d, encoder=enc, fit_split="cv", signals=["top1_score", "margin", "sigma_k"], n_boot=100)
    items = ref.items.set_index("query_id")
    from normscope.retrieval.search import FoldedIndex

    docs = [json.loads(x)["_id"] for x in (d / "corpus.jsonl").read_text().splitlines()]
    qids = sorted(f"test-q{i}" for i in range(200))
    run = FoldedIndex(np.stack([enc.table[x] for x in docs]).astype(np.float32), docs, "cosine").search(
        np.stack([enc.table[q] for q in qids]).astype(np.float32), qids, k=100)
    lines = [f"{q} Q0 {doc} {r + 1} {sc!r} test" for q in qids[::-1] for r, (doc, sc) in enumerate(run[q].items())]
    (tmp_path / "run.trec").write_text("\n".join(lines) + "\n")
    back, _ = read_run(tmp_path / "run.trec")
    assert back == run
    res = run_calibrate(None, encoder=enc, run_file=tmp_path / "run.trec", qrels_file=d / "qrels" / "test.tsv",
                        signals=["top1_score", "margin", "sigma_k"], n_boot=100)
    assert res.parts == ref.parts and res.calibrator["thresholds"] == ref.calibrator["thresholds"]
    got = res.items.set_index("query_id").loc[items.index]
    np.testing.assert_allclose(got["p_relevant"], items["p_relevant"], atol=1e-12)
    assert list(got["part"]) == list(items["part"])
    with pytest.raises(InputError, match="corpus score or the query text"):
        run_calibrate(None, encoder=enc, run_file=tmp_path / "run.trec", qrels_file=d / "qrels" / "test.tsv", signals=["nqc"])


def test_min_prob_abstains_in_index_search_and_semantic_search(tmp_path, capsys):
    """``index search --calibrator --min-prob P`` returns nothing for exactly the queries whose P(top-1 relevant)
    (computed independently by calibrate_index_search) is below P, and reports that coverage; semantic_search's
    integration abstains on the same queries."""
    import torch
    from sentence_transformers import util

    from normscope.cli import run
    from normscope.extensions.ann import AnnParams, build_ann_index
    from normscope.extensions.integrations import calibrate_index_search, calibrate_semantic_search
    from normscope.retrieval.search import run_to_frame

    d, enc = calibration_beir(tmp_path / "a", np.random.default_rng(0), n_test=60)
    # the score signals (the default before the norm joined it): their Learn-then-Test threshold exists on this data
    res = run_calibrate(d, encoder=enc, n_boot=50, signals=["top1_score", "margin"])
    cal_path = Calibrator.from_dict(res.calibrator).save(tmp_path / "cal.json")
    docs = [json.loads(x)["_id"] for x in (d / "corpus.jsonl").read_text().splitlines()]
    C = np.stack([enc.table[x] for x in docs]).astype(np.float32)
    Q = np.stack([enc.table[f"test-q{i}"] for i in range(60)]).astype(np.float32)
    index = build_ann_index(C, docs, scorer="cosine", params=AnnParams(kind="flat"), fingerprint=enc.fingerprint.to_dict())
    index.save(tmp_path / "idx")
    np.save(tmp_path / "q.npy", Q)
    qids = [str(i) for i in range(60)]
    p = calibrate_index_search(cal_path, run_to_frame(index.search(Q, qids, 10)), index_dir=tmp_path / "idx",
                               query_vectors=Q)
    p = p.set_index("query_id")["p_relevant"]
    P = float(np.median(p))  # about half the queries answered
    want = sorted(q for q in qids if p[q] >= P)
    out, js = tmp_path / "run.parquet", tmp_path / "s.json"
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.npy"), "--calibrator", str(cal_path),
                "--min-prob", repr(P), "-o", str(out), "--json", str(js)]) == 0
    printed = capsys.readouterr().out
    a = json.loads(js.read_text())["abstention"]
    assert a["n_answered"] == len(want) and a["coverage"] == pytest.approx(len(want) / 60) and 0 < len(want) < 60
    assert sorted(a["abstained"]) == sorted(set(qids) - set(want))
    got = pd.read_parquet(out)
    assert sorted(got["query_id"].unique()) == want and (got.groupby("query_id").size() == 10).all()
    np.testing.assert_allclose(got.groupby("query_id")["p_relevant"].first().loc[want], p.loc[want], atol=1e-12)
    assert f"{len(want)} of 60 = coverage {len(want) / 60:.3f}" in printed
    # without --min-prob: the calibrator's own Learn-then-Test threshold
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.npy"), "--calibrator", str(cal_path),
                "--json", str(js)]) == 0
    lam = res.calibrator["thresholds"]["answer"]["threshold"]
    a = json.loads(js.read_text())["abstention"]
    assert a["min_prob"] == lam and a["n_answered"] == int((p >= lam).sum())
    capsys.readouterr()
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.npy"), "--min-prob", "0.5"]) == 2
    assert "--min-prob needs --calibrator" in capsys.readouterr().err
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.npy"), "--calibrator", str(cal_path),
                "-k", "1"]) == 2
    # semantic_search: the same P, the same queries answered, nothing returned for the others
    hits = util.semantic_search(torch.from_numpy(Q), torch.from_numpy(C), top_k=10)
    sem = calibrate_semantic_search(cal_path, hits, model=enc, query_embeddings=Q, corpus_embeddings=C, min_prob=P)
    answered = [str(i) for i, o in enumerate(sem) if o["answer"]]
    assert answered == [q for q in qids if p[q] >= P]  # float32 vs float64 scores: the same side of P here
    assert all(o["hits"] == [] for o in sem if not o["answer"]) and all(len(o["hits"]) == 10 for o in sem if o["answer"])
    with pytest.raises(InputError, match="min_prob"):
        calibrate_semantic_search(cal_path, hits, model=enc, min_prob=1.5)


def test_calibrate_reports_nauc_of_the_held_out_queries(tmp_path):
    """``calibrate`` reports nAUC of nDCG@10 on the held-out queries for MTEB's confidences, the calibrator's
    P(relevant) and the query norm; each value equals mteb's own ``nauc`` on inputs computed here independently."""
    pytest.importorskip("mteb")
    from mteb._evaluators.retrieval_metrics import confidence_scores, nauc as mteb_nauc

    from normscope.retrieval.evaluate import per_query_scores
    from normscope.retrieval.search import FoldedIndex

    d, enc = calibration_beir(tmp_path / "a", np.random.default_rng(0), n_train=60, n_test=40)
    res = run_calibrate(d, encoder=enc, signals=["top1_score", "margin", "query_norm"], n_boot=50)
    ab = res.abstention
    assert ab["status"] == "ok" and ab["n_queries"] == 40 and ab["metric"] == "ndcg@10"
    assert set(ab["signals"]) == {"max", "std", "diff1", "p_relevant", "query_norm"}
    assert ab["signals"]["p_relevant"]["kind"] == "calibrator"
    held = res.items[res.items.part == "held-out"].set_index("query_id")
    qids = list(held.index)
    docs = [json.loads(x)["_id"] for x in (d / "corpus.jsonl").read_text().splitlines()]
    C = np.stack([enc.table[x] for x in docs])
    Q = np.stack([enc.table[q] for q in qids])
    run = FoldedIndex(C, docs, "cosine").search(Q, qids, k=100, ignore_identical_ids=True)
    from normscope.data.beir import load_qrels

    qrels = load_qrels(d / "qrels" / "test.tsv")
    ndcg = per_query_scores({q: qrels[q] for q in qids}, {q: run[q] for q in qids}, ["ndcg@10"])["ndcg@10"]
    s = np.array([list(run[q].values()) for q in qids])
    std = np.array([confidence_scores(list(r))["std"] for r in s])
    want = {"max": s[:, 0], "diff1": s[:, 0] - s[:, 1], "std": std, "p_relevant": held["p_relevant"].to_numpy(),
            "query_norm": -held["query_norm"].to_numpy()}
    for k, conf in want.items():
        assert ab["signals"][k]["nauc"] == pytest.approx(float(mteb_nauc(conf, ndcg)), abs=1e-9), k
        lo, hi = ab["signals"][k]["nauc_ci"]
        assert lo <= ab["signals"][k]["nauc"] <= hi


def test_default_signals_include_the_query_norm_and_use_it(tmp_path):
    """The default map has the query's raw norm: where the norm carries the label (planted: a wrong top-1 adds 0.8 to
    the query norm) it ranks the held-out queries better than the two score signals alone; where the input has no raw
    norm (a TREC run, normalised vectors) the default leaves it out and says why, and naming it is refused."""
    from _retrieval_data import LookupEncoder

    d, enc = calibration_beir(tmp_path / "a", np.random.default_rng(3), norm_effect=0.8)
    res = run_calibrate(d, encoder=enc, n_boot=100)
    scores_only = run_calibrate(d, encoder=enc, n_boot=100, signals=["top1_score", "margin"])
    assert res.signals == ["top1_score", "margin", "query_norm"] and scores_only.signals_note is None
    assert res.heldout["auroc"] > scores_only.heldout["auroc"] + 0.05
    # the same queries' AUROC by hand (scikit-learn) from the per-query table
    from sklearn.metrics import roc_auc_score

    held = res.items[res.items.part == "held-out"]
    assert res.heldout["auroc"] == pytest.approx(roc_auc_score(held.label, held.p_relevant))

    # a TREC run has no query norms: the default falls back to the score signals, with a note
    from normscope.retrieval.search import FoldedIndex

    docs = [json.loads(x)["_id"] for x in (d / "corpus.jsonl").read_text().splitlines()]
    qids = sorted(f"test-q{i}" for i in range(150))
    run = FoldedIndex(np.stack([enc.table[x] for x in docs]).astype(np.float32), docs, "cosine").search(
        np.stack([enc.table[q] for q in qids]).astype(np.float32), qids, k=100)
    (tmp_path / "run.trec").write_text("\n".join(f"{q} Q0 {doc} {r + 1} {sc!r} test" for q in qids
                                                 for r, (doc, sc) in enumerate(run[q].items())) + "\n")
    fell = run_calibrate(None, encoder=enc, run_file=tmp_path / "run.trec", qrels_file=d / "qrels" / "test.tsv",
                         n_boot=100)
    assert fell.signals == ["top1_score", "margin"] and fell.calibrator["signals"] == ["top1_score", "margin"]
    assert "run.trec has no query_norm column" in fell.signals_note and "\n" not in fell.signals_note
    assert fell.to_dict()["signals_note"] == fell.signals_note
    with pytest.raises(InputError, match="has no query_norm column"):
        run_calibrate(None, encoder=enc, run_file=tmp_path / "run.trec", qrels_file=d / "qrels" / "test.tsv",
                      n_boot=100, signals=["top1_score", "margin", "query_norm"])

    # normalised vectors: the norm carries nothing; the default says so, naming the norm is refused
    unit = LookupEncoder({k: v / np.linalg.norm(v) for k, v in enc.table.items()})
    flat = run_calibrate(d, encoder=unit, n_boot=100)
    assert flat.signals == ["top1_score", "margin"] and "vectors are normalised" in flat.signals_note
    with pytest.raises(InputError, match="raw \\(un-normalised\\) vectors"):
        run_calibrate(d, encoder=unit, n_boot=100, signals=["top1_score", "margin", "query_norm"])
