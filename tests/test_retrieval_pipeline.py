"""run_retrieval end to end (planted synthetic dataset, SciFact subset with the real model), figures, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from normscope.encoders.base import Encoder
from normscope.errors import InputError
from normscope.retrieval import plot_reliability, plot_risk_coverage, run_retrieval
from normscope.retrieval.evaluate import per_query_scores
from normscope.retrieval.scoring import score
from normscope.table import ModelFingerprint


class LookupEncoder(Encoder):
    """Returns planted vectors by text (a stand-in model with known geometry)."""

    cacheable = False

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table
        self.fingerprint = ModelFingerprint(name="lookup", revision="planted", pooling="none", backend="test")

    @property
    def dim(self) -> int:
        return len(next(iter(self.table.values())))

    def encode(self, texts, *, batch_size=64, progress=False):
        return np.array([self.table[t] for t in texts], dtype=np.float32)


GRIDS = {"inverse_norm": [-0.02, 0.0, 0.05, 0.2, 1.0], "power": [-2.0, -1.0, 0.0, 1.0]}


def _planted(tmp_path, rng, *, with_train=True, n_train=60, n_test=40, d=12):
    """Each query has a relevant low-norm document and a high-norm near-duplicate distractor."""
    table, corpus, queries = {}, [], []
    qrels = {"train": [], "test": []}
    for split, n in (("train", n_train), ("test", n_test)):
        for i in range(n):
            q = rng.normal(size=d)
            u = q / np.linalg.norm(q)
            qn = f"{split}-q{i}"
            table[qn] = q * rng.uniform(0.5, 2.0)
            good = (u + rng.normal(size=d) * 0.06) * rng.uniform(0.8, 1.2)
            bad = (u + rng.normal(size=d) * 0.04) * rng.uniform(4.0, 6.0)
            for name, v in ((f"{split}-g{i}", good), (f"{split}-b{i}", bad)):
                table[name] = v
                corpus.append({"_id": name, "title": "", "text": name})
            queries.append({"_id": qn, "text": qn})
            qrels[split].append((qn, f"{split}-g{i}"))
    for j in range(150):
        name = f"noise{j}"
        table[name] = rng.normal(size=d) * 2
        corpus.append({"_id": name, "title": "", "text": name})
    (tmp_path / "qrels").mkdir(parents=True)
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(c) for c in corpus) + "\n")
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    for split, rows in qrels.items():
        if split == "train" and not with_train:
            continue
        body = "query-id\tcorpus-id\tscore\r\n" + "".join(f"{q}\t{dd}\t1\r\n" for q, dd in rows)
        (tmp_path / "qrels" / f"{split}.tsv").write_text(body)
    return tmp_path, LookupEncoder(table)


def test_run_retrieval_planted(tmp_path, rng):
    ddir, enc = _planted(tmp_path, rng)
    summary, runs = run_retrieval(ddir, encoder=enc, n_permutations=2000, grids=GRIDS)
    sc = summary["scorers"]
    assert list(sc) == ["cosine", "dot", "inverse_norm", "power"]
    assert summary["fit_split"] == "train" and sc["inverse_norm"]["fitted_on"] == "train"
    assert summary["n_queries"] == {"eval": 40, "fit": 60}
    # the planted geometry: discounting the norm must help, and the fit must find it on train
    assert sc["inverse_norm"]["param"] > 0 and sc["power"]["param"] < 0
    assert sc["inverse_norm"]["ndcg@10"] > sc["cosine"]["ndcg@10"] and sc["dot"]["ndcg@10"] < sc["cosine"]["ndcg@10"]
    assert sc["inverse_norm"]["p_value"] < 0.05
    # the metrics are those of the returned runs, re-evaluated independently of the pipeline
    qrels = {f"test-q{i}": {f"test-g{i}": 1} for i in range(40)}
    for name in sc:
        r = runs[runs.scorer == name]
        run = {q: dict(zip(g["doc_id"], g["score"])) for q, g in r.groupby("query_id", sort=False)}
        assert np.mean(per_query_scores(qrels, run)["ndcg@10"]) == pytest.approx(sc[name]["ndcg@10"], abs=1e-12)
    # scores in the run are the exact scores of the fitted scorer
    row = runs[(runs.scorer == "power") & (runs["rank"] == 1)].iloc[0]
    ref = score(enc.table[row.query_id][None], enc.table[row.doc_id][None], "power", sc["power"]["param"])[0, 0]
    assert row.score == pytest.approx(ref, rel=1e-5)
    assert set(summary["calibration"]) >= {"query_norm", "top_doc_norm", "top1_score", "margin", "learned_scores_norms"}
    for e in summary["calibration"].values():
        assert 0 <= e["ece"] <= 1 and 0 <= e["aurc"] <= 1
    json.dumps(summary)  # serialisable
    p1 = plot_reliability(summary, tmp_path / "rel.png")
    p2 = plot_risk_coverage(summary["calibration"], tmp_path / "rc.png")
    assert p1.stat().st_size > 5000 and p2.stat().st_size > 5000


def test_cross_validation_without_train(tmp_path, rng):
    ddir, enc = _planted(tmp_path, rng, with_train=False)
    with pytest.warns(UserWarning, match="cross-validation"):
        summary, _ = run_retrieval(ddir, encoder=enc, scorers=("inverse_norm",), n_permutations=500, grids=GRIDS)
    assert summary["fit_mode"] == "cv" and "5-fold cross-validation over 'test'" in summary["fit_split"]
    assert len(summary["scorers"]["inverse_norm"]["param"]) == 5
    assert list(summary["scorers"]) == ["cosine", "inverse_norm"]
    with pytest.raises(InputError, match="never fitted on test"):
        run_retrieval(ddir, encoder=enc, fit_split="test")


def test_scifact_subset_real_model(shared_data, bundled_encoder):
    # embeddings go through normscope's content-addressed cache (hits after the first run)
    summary, runs = run_retrieval(
        shared_data / "scifact", encoder=bundled_encoder, scorers=("cosine", "inverse_norm"), max_docs=60, max_queries=12, n_permutations=500,
        grids=GRIDS,
    )
    assert summary["n_docs"] == 60 and summary["n_queries"] == {"eval": 12, "fit": 12}
    assert summary["docs"]["n_relevant_kept"] <= 60
    assert summary["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    # every relevant document is in the subset, so each query's relevant docs can be found
    assert summary["excluded_queries"]["eval"]["qrels_unknown_docs"] == 0
    assert 0 < summary["scorers"]["cosine"]["ndcg@10"] <= 1
    assert runs.groupby(["scorer", "query_id"]).size().max() == 60


def test_cli(tmp_path, rng):
    from normscope.cli import run

    ddir, enc = _planted(tmp_path / "ds", rng)
    assert run(["retrieval", "--dataset", str(tmp_path / "missing")]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--scorer", "bm25"]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--fit-split", "test"]) == 2
    assert run(["retrieval", "--dataset", str(ddir), "--json", str(tmp_path / "no" / "s.json")]) == 2


def test_cli_full(tmp_path, rng, monkeypatch):
    from normscope.cli import run
    import normscope.encoders as encs

    ddir, enc = _planted(tmp_path / "ds", rng)
    import normscope.retrieval.evaluate as ev

    monkeypatch.setattr(encs, "load_encoder", lambda *a, **k: enc)
    monkeypatch.setattr(ev, "default_grid", lambda scorer, norms: GRIDS.get(scorer, [None]))
    js, out = tmp_path / "s.json", tmp_path / "run.parquet"
    assert run(["retrieval", "--dataset", str(ddir), "--scorer", "power", "--json", str(js), "-o", str(out), "--seed", "3"]) == 0
    s = json.loads(js.read_text())
    for key in ("dataset", "model", "split", "fit_split", "scorers", "calibration", "excluded_queries"):
        assert key in s
    assert set(s["scorers"]["power"]) >= {"param", "ndcg@10", "mrr@10", "recall@100", "p_value"}
    assert set(s["calibration"]["query_norm"]) >= {"auroc", "ece", "aurc"}
    df = pd.read_parquet(out)
    assert set(df.scorer) == {"cosine", "power"} and df["rank"].min() == 1
