"""The MTEB 2.x wrapper run by mteb itself (``mteb.evaluate`` on a local retrieval task built as mteb's own tasks
are), checked against normscope's own evaluation of the same data; the name/caching rule with two scorers."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from _retrieval_data import LookupEncoder, planted

from normscope.errors import InputError, ModelError
from _retrieval_call import run_retrieval
from normscope.retrieval import NormAwareMTEBModel, evaluate_mteb, load_beir
from normscope.retrieval.mteb_model import mteb_name
from normscope.scoring import score

mteb = pytest.importorskip("mteb")  # installed by the test extra; a bare install skips


@pytest.fixture(scope="module")
def planted_task(tmp_path_factory):
    """A planted BEIR folder (ties included) and a local AbsTaskRetrieval subclass whose load_data fills it."""
    from datasets import Dataset
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb.abstasks.retrieval_dataset_loaders import RetrievalSplitData
    from mteb.abstasks.task_metadata import TaskMetadata

    root = tmp_path_factory.mktemp("mteb_planted")
    ddir, enc = planted(root, np.random.default_rng(5), dup_docs=3, n_train=20, n_test=24)
    ds = load_beir(ddir)
    sq = ds.split_queries("test")

    class PlantedRetrieval(AbsTaskRetrieval):
        metadata = TaskMetadata(
            name="NormscopePlanted", description="planted norm geometry", reference="https://example.org",
            type="Retrieval", category="t2t", modalities=["text"], eval_splits=["test"], eval_langs=["eng-Latn"],
            main_score="ndcg_at_10", dataset={"path": "local/planted", "revision": "1"}, date=("2024-01-01", "2024-01-02"),
            domains=[], task_subtypes=[], license="cc-by-4.0", annotations_creators="derived", dialect=[],
            sample_creation="found", bibtex_citation="")

        def load_data(self, num_proc=None, **kwargs):
            self.dataset = {"default": {"test": RetrievalSplitData(
                queries=Dataset.from_list([{"id": q, "text": t} for q, t in zip(sq.query_ids, sq.texts)]),
                corpus=Dataset.from_list([{"id": i, "title": "", "text": t} for i, t in zip(ds.doc_ids, ds.doc_texts)]),
                relevant_docs=sq.qrels, top_ranked=None)}}
            self.data_loaded = True

    return ddir, enc, PlantedRetrieval, sq.qrels


def _mteb_run(pred_dir):
    js = json.loads(next(pred_dir.glob("*_predictions.json")).read_text())
    return js["mteb_model_meta"], js["default"]["test"]


@pytest.mark.parametrize("scorer,param", [("cosine", None), ("inverse_norm", 0.05), ("power", -1.0)])
def test_mteb_evaluate_equals_normscope(planted_task, tmp_path, scorer, param):
    import pytrec_eval

    ddir, enc, Task, qrels = planted_task
    model = NormAwareMTEBModel(enc, scorer, param)
    res = mteb.evaluate(model, Task(), cache=None, prediction_folder=tmp_path, show_progress_bar=False)
    meta, run = _mteb_run(tmp_path)
    assert meta["model_name"] == model.name and meta["revision"] == model.revision
    ours = run_retrieval(ddir, encoder=enc, scorers=(scorer,), params={scorer: param} if param is not None else None,
                         n_permutations=100, n_boot=20)
    mine = ours.scorers[scorer]["ndcg@10"]
    # mteb reports nDCG@10 rounded to 5 decimals: it is normscope's, rounded
    assert res.task_results[0].scores["test"][0]["ndcg_at_10"] == round(mine, 5)
    # mteb's own run: per-query nDCG@10 (pytrec_eval) equals normscope's to 1e-9, and the top-10 lists are identical
    per = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    ref = dict(zip(ours.per_query["query_id"], ours.per_query[f"ndcg@10_{scorer}"]))
    assert np.mean([per[q]["ndcg_cut_10"] for q in qrels]) == pytest.approx(mine, abs=1e-9)
    items = ours.items[ours.items.scorer == scorer]
    for q in qrels:
        assert per[q]["ndcg_cut_10"] == pytest.approx(ref[q], abs=1e-9)
        top = sorted(((s, d) for d, s in run[q].items()), reverse=True)[:10]
        mine_top = items[items.query_id == q].sort_values("rank").head(10)
        assert [d for _, d in top] == list(mine_top.doc_id)
        np.testing.assert_allclose([s for s, _ in top], mine_top.score, rtol=0, atol=1e-12)


def test_two_scorers_never_share_a_cached_score(planted_task, tmp_path):
    ddir, enc, Task, _ = planted_task
    cache = mteb.ResultCache(cache_path=str(tmp_path / "cache"))
    a = NormAwareMTEBModel(enc, "inverse_norm", 0.05)
    b = NormAwareMTEBModel(enc, "power", -1.0)
    assert a.name == "normscope/lookup__inverse_norm-alpha=0.05" and b.name == "normscope/lookup__power-beta=-1.0"
    assert a.name != b.name and a.revision == b.revision and "/" not in a.revision
    sa = mteb.evaluate(a, Task(), cache=cache, show_progress_bar=False).task_results[0].get_score()
    sb = mteb.evaluate(b, Task(), cache=cache, show_progress_bar=False).task_results[0].get_score()
    ours = run_retrieval(ddir, encoder=enc, scorers=("inverse_norm", "power"), params={"inverse_norm": 0.05, "power": -1.0},
                         n_permutations=100, n_boot=20)
    assert sa == round(ours.scorers["inverse_norm"]["ndcg@10"], 5) and sb == round(ours.scorers["power"]["ndcg@10"], 5)
    assert sa != sb
    # a second evaluation of the first scorer comes from the cache and is still its own score
    assert mteb.evaluate(a, Task(), cache=cache, show_progress_bar=False).task_results[0].get_score() == sa
    # the parameter is encoded exactly: two nearby alphas get two names
    assert mteb_name("x/m", "inverse_norm", 0.05) != mteb_name("x/m", "inverse_norm", 0.050000001)


def test_evaluate_mteb_output_folder_and_progress(planted_task, tmp_path):
    ddir, enc, Task, _ = planted_task
    seen = []

    class Spy(LookupEncoder):
        def encode(self, texts, *, batch_size=64, progress=False):
            seen.append(progress)
            return super().encode(texts, batch_size=batch_size)

    model = NormAwareMTEBModel(Spy(enc.table), "cosine")
    evaluate_mteb(model, Task(), output_folder=str(tmp_path / "out"), show_progress_bar=True)
    assert any((tmp_path / "out").rglob("NormscopePlanted.json")) and seen and all(seen)
    with pytest.raises(InputError, match="not both"):
        evaluate_mteb(model, Task(), output_folder=str(tmp_path), cache=mteb.ResultCache(cache_path=str(tmp_path)))


def test_wrapper_methods_and_normalised_warning(rng):
    table = {t: rng.normal(size=5) for t in ("ab", "abcd", "dd")}
    m = NormAwareMTEBModel(LookupEncoder(table), "power", -1.0, name="org/toy")
    v1 = m.encode(["ab", "abcd", "dd"], task_name="SciFact", batch_size=2)  # a list of strings
    v2 = m.encode([{"text": ["ab", "abcd"]}, {"text": ["dd"]}], task_metadata=None, hf_split="test", hf_subset="default")
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_allclose(m.similarity(v1[:1], v1).numpy(), score(v1[:1], v1, "power", -1.0), rtol=1e-6)
    from normscope.similarity import pair_scores

    # pair tasks (STS) get the symmetric scorer: order-free, equal to normscope.similarity.pair_scores
    other = v1[::-1].copy()
    pw = m.similarity_pairwise(v1, other).numpy()
    np.testing.assert_allclose(pw, pair_scores(v1, other, "power", -1.0), rtol=1e-5)
    np.testing.assert_allclose(pw, m.similarity_pairwise(other, v1).numpy(), rtol=0, atol=0)
    norms = np.linalg.norm(v1.astype(np.float64), axis=1)
    np.testing.assert_allclose(m.similarity_pairwise(v1, v1).numpy(), norms ** -2.0, rtol=1e-5)  # cos = 1
    assert m.name == "normscope/toy__power-beta=-1.0"
    unit = NormAwareMTEBModel(LookupEncoder({t: v / np.linalg.norm(v) for t, v in table.items()}), "inverse_norm", 0.1)
    with pytest.warns(UserWarning, match="normalised"):
        unit.encode(["ab", "abcd", "dd"])


def test_meta_is_attribute_error_without_mteb(monkeypatch, rng):
    m = NormAwareMTEBModel(LookupEncoder({"a": rng.normal(size=3)}), "cosine")
    assert m.mteb_model_meta.name == m.name  # with mteb
    m2 = NormAwareMTEBModel(LookupEncoder({"a": rng.normal(size=3)}), "cosine")
    monkeypatch.setitem(sys.modules, "mteb", None)
    monkeypatch.setitem(sys.modules, "mteb.models.model_meta", None)
    assert not hasattr(m2, "mteb_model_meta")
    with pytest.raises(ModelError, match="optional extra 'mteb'"):
        evaluate_mteb(m2, ["SciFact"])
