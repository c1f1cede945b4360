"""Faults and field cases of issue 24, each checked against an independent computation.

- ``index build`` past the file size limit while writing: one line, the old index kept (faiss's own writer
  printed a failed close and left a truncated index);
- a failing report stage never replaces a finished stage record;
- zero vectors are junk: left out and listed, never ranked (Pearson as scipy on the other items; the search
  results of the other queries as an exact numpy search);
- fractional relevance grades read exactly with ``--grade-scale`` (nDCG@10 as a hand computation with the
  fractional gains);
- exact duplicates counted once (correlate on 3 copies of a word list gives the statistics of one copy;
  similarity on a doubled pair list gives those of the list; retrieval's duplicate documents collapsed).
"""

from __future__ import annotations

import json
import resource

import numpy as np
import pytest
from scipy import stats

from normscope.cli import run


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def test_index_build_past_the_size_limit_is_one_line(tmp_path, capsys):
    v = np.random.default_rng(0).normal(size=(50, 8)).astype(np.float32)
    np.save(tmp_path / "v.npy", v)
    assert run(["index", "build", str(tmp_path / "v.npy"), "-o", str(tmp_path / "idx"), "--kind", "flat"]) == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()}
    capsys.readouterr()
    np.save(tmp_path / "v.npy", 2 * v)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4 * 50 * 8 + 10, hard))  # the vectors fit, the index file does not
    try:
        code = run(["index", "build", str(tmp_path / "v.npy"), "-o", str(tmp_path / "idx"), "--kind", "flat"])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and "file too large" in line and str(tmp_path / "idx") in line and "staging" not in line
    assert {p.name: p.read_bytes() for p in (tmp_path / "idx").iterdir()} == before  # the old index, whole
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_failed_stage_never_replaces_a_finished_record(tmp_path, monkeypatch):
    from normscope.report import ReportConfig, run_report
    from normscope.report.stages import get_stage

    out = tmp_path / "r"
    (out / "stages").mkdir(parents=True)
    finished = (out / "stages" / "lab.json")
    finished.write_text('{"stage": "lab", "status": "ok", "key": "an earlier run"}\n')
    before = finished.read_bytes()

    def boom(ctx, request):
        raise RuntimeError("the lab broke")

    monkeypatch.setattr(get_stage("lab"), "run", boom)
    res = run_report(ReportConfig(out=out, only=("lab",)), progress=False, heartbeat=None)
    assert res.failed == ["lab"]
    assert finished.read_bytes() == before
    rec = json.loads((out / "stages" / "lab.failed.json").read_text())
    assert rec["status"] == "failed" and "the lab broke" in rec["reason"]


WORDS = ["dog", "cat", "house", "car", "tree", "idea", "truth", "justice", "water", "music", "table", "freedom",
         "apple", "river", "mountain", "theory", "chair", "hope", "window", "science"]


def test_a_zero_vector_is_junk_and_moves_no_statistic(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from wordfreq import zipf_frequency

    from _correlate import correlate as run_correlate  # flat keywords onto the request

    rng = np.random.default_rng(3)
    vec = rng.normal(size=(len(WORDS), 16)) * rng.uniform(0.5, 2.0, size=(len(WORDS), 1))
    vec[4] = 0.0  # "tree": a zero row, as a vector store's placeholder
    pq.write_table(pa.table({"id": WORDS, "text": WORDS, "vector": [list(map(float, r)) for r in vec.astype(np.float32)]}),
                   tmp_path / "v.parquet")
    res = run_correlate("frequency", model=str(tmp_path / "v.parquet"), items=WORDS, n_boot=50, n_perm=50, seed=0)
    assert res.junk["ids"] == ["4"] and "zero vector" in next(iter(res.junk["reasons"]))
    keep = [i for i in range(len(WORDS)) if i != 4]
    norm = np.linalg.norm(vec[keep].astype(np.float32).astype(np.float64), axis=1)
    z = np.array([zipf_frequency(WORDS[i], "en") for i in keep])
    assert res.n == len(keep)
    assert res.pearson == pytest.approx(stats.pearsonr(norm, z).statistic, abs=1e-6)
    assert res.spearman == pytest.approx(stats.spearmanr(norm, z).statistic, abs=1e-6)


def test_a_zero_query_is_listed_not_ranked_and_the_others_are_exact(tmp_path, capsys):
    import pandas as pd

    rng = np.random.default_rng(1)
    D = rng.normal(size=(40, 8)).astype(np.float32)
    D[5] = 0.0
    Q = rng.normal(size=(4, 8)).astype(np.float32)
    Q[2] = 0.0
    np.save(tmp_path / "d.npy", D)
    np.save(tmp_path / "q.npy", Q)
    assert run(["index", "build", str(tmp_path / "d.npy"), "-o", str(tmp_path / "idx"), "--kind", "flat"]) == 0
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.npy"), "-k", "5",
                "-o", str(tmp_path / "run.parquet"), "--json", str(tmp_path / "s.json")]) == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["junk_queries"]["ids"] == ["2"] and s["n_queries"] == 3
    run_df = pd.read_parquet(tmp_path / "run.parquet")
    assert sorted(run_df["query_id"].unique()) == ["0", "1", "3"] and "5" not in set(run_df["doc_id"])
    keep = [i for i in range(40) if i != 5]
    Dn = D[keep] / np.linalg.norm(D[keep], axis=1, keepdims=True)
    for q in (0, 1, 3):
        cos = Dn @ (Q[q] / np.linalg.norm(Q[q]))
        top = [str(keep[i]) for i in np.argsort(-cos)[:5]]
        assert run_df[run_df["query_id"] == str(q)].sort_values("rank")["doc_id"].tolist() == top
    assert "1 junk queries left out" in capsys.readouterr().err


def test_fractional_grades_are_refused_or_read_exactly_with_a_scale(tmp_path):
    from normscope.errors import DataError
    from normscope.data.beir import load_qrels
    from normscope.retrieval.evaluate import evaluate_run

    q = tmp_path / "test.tsv"
    q.write_text("query-id\tcorpus-id\tscore\nq1\ta\t1.5\nq1\tb\t0.5\nq1\tc\t2.0\nq2\ta\t0.5\n")
    with pytest.raises(DataError, match=r"test\.tsv:2: grade '1\.5' is not an integer \(3 such lines\).*--grade-scale 2"):
        load_qrels(q)
    qrels = load_qrels(q, grade_scale=2)
    assert qrels == {"q1": {"a": 3, "b": 1, "c": 4}, "q2": {"a": 1}}
    run_ = {"q1": {"b": 3.0, "x": 2.0, "a": 1.0, "c": 0.5}, "q2": {"x": 1.0, "a": 0.5}}
    gains = {"q1": {"a": 1.5, "b": 0.5, "c": 2.0}, "q2": {"a": 0.5}}

    def ndcg10(q_):  # linear gains, log2(rank + 1) discounts (Jarvelin & Kekalainen; trec_eval's ndcg_cut)
        ranked = sorted(run_[q_].items(), key=lambda kv: (-kv[1], kv[0]))[:10]
        dcg = sum(gains[q_].get(d, 0.0) / np.log2(i + 2) for i, (d, _) in enumerate(ranked))
        ideal = sorted(gains[q_].values(), reverse=True)[:10]
        return dcg / sum(g / np.log2(i + 2) for i, g in enumerate(ideal))

    got = evaluate_run(qrels, run_, ["ndcg@10"])["ndcg@10"]
    assert got == pytest.approx(np.mean([ndcg10("q1"), ndcg10("q2")]), abs=1e-9)


def test_correlate_counts_each_repeated_item_once(bundled_encoder):
    from _correlate import correlate as run_correlate  # flat keywords onto the request

    kw = dict(encoder=bundled_encoder, n_boot=200, n_perm=200, seed=0, controls=())
    once = run_correlate("frequency", items=WORDS, **kw)
    thrice = run_correlate("frequency", items=WORDS * 3, **kw)
    assert thrice.duplicates["count"] == 2 * len(WORDS) and thrice.duplicates["groups"] == len(WORDS)
    assert thrice.n == once.n == len(WORDS)
    # the copies kept are the smallest ids ("0".."19"): the same items, the same numbers
    assert (thrice.spearman, thrice.pearson, thrice.p_value) == (once.spearman, once.pearson, once.p_value)
    assert any(f"{2 * len(WORDS)} exact duplicate items left out: {len(WORDS)} texts had copies" in n
               for n in thrice.notes)
    kept = run_correlate("frequency", items=WORDS * 3, keep_duplicates=True, **kw)
    assert kept.n == 3 * len(WORDS) and kept.duplicates["kept"] and any("--keep-duplicates" in n for n in kept.notes)


def test_similarity_counts_each_repeated_pair_once(tmp_path, bundled_encoder):
    from normscope.requests import Resampling
    from normscope.similarity import SimilarityRequest
    from normscope.similarity import run_similarity as _run

    def run_similarity(path, *, fit, encoder, n_boot, seed, scorers):
        return _run(SimilarityRequest(dataset=str(path), fit=str(fit), scorers=scorers,
                                      resampling=Resampling(n_boot=n_boot, seed=seed)), encoder=encoder)

    rows = [(a, b, (i * 37) % 10) for i, (a, b) in enumerate(zip(WORDS, WORDS[3:] + WORDS[:3]))]
    head = "word1\tword2\tPOS\tSimLex999\n"
    body = "".join(f"{a}\t{b}\tN\t{s}.0\n" for a, b, s in rows)
    (tmp_path / "once.txt").write_text(head + body)
    (tmp_path / "twice.txt").write_text(head + body + "".join(f"{b}\t{a}\tN\t{s}.0\n" for a, b, s in rows))
    (tmp_path / "fit.txt").write_text(head + "".join(f"{a}\t{b}\tN\t{i % 7}.0\n" for i, (a, b) in
                                                     enumerate(zip(WORDS, WORDS[5:] + WORDS[:5]))))
    kw = dict(fit=tmp_path / "fit.txt", encoder=bundled_encoder, n_boot=100, seed=0, scorers=("cosine", "dot"))
    once = run_similarity(tmp_path / "once.txt", **kw)
    twice = run_similarity(tmp_path / "twice.txt", **kw)
    assert twice.duplicates["count"] == len(rows) and twice.n_pairs == once.n_pairs == len(rows)
    assert twice.scorers["cosine"]["spearman"] == pytest.approx(once.scorers["cosine"]["spearman"], abs=1e-12)
    assert twice.scorers["dot"]["delta_spearman"] == pytest.approx(once.scorers["dot"]["delta_spearman"], abs=1e-12)


def test_duplicate_documents_are_counted_and_collapsed_at_their_highest_grade():
    from normscope.data.beir import BeirDataset, SplitQueries
    from normscope.retrieval.pipeline import _duplicate_docs

    ds = BeirDataset(name="t", doc_ids=["a", "b", "c", "d", "e"], doc_texts=["x", "y", "x", "x", "z"],
                     queries={"q": "x?"}, qrels={"test": {"q": {"c": 1, "d": 2, "e": 1}}},
                     doc_titles=["", "", "", "", ""])
    sq = SplitQueries("test", ["q"], ["x?"], {"q": {"c": 1, "d": 2, "e": 1}}, {})
    keep, (ev,), info = _duplicate_docs(ds, [0, 1, 2, 3, 4], [sq], dedupe=False)
    assert keep == [0, 1, 2, 3, 4] and ev is sq
    assert info == {"count": 2, "groups": 1, "judged_copies": 2, "collapsed": False, "kept_ids": ["a"]}
    keep, (ev,), info = _duplicate_docs(ds, [0, 1, 2, 3, 4], [sq], dedupe=True)
    assert keep == [0, 1, 4] and info["collapsed"]
    assert ev.qrels == {"q": {"a": 2, "e": 1}}  # copies c (1) and d (2) are one document "a", judged 2


def test_a_long_csv_text_is_read_and_its_neighbours_keep_their_lines(tmp_path):
    from normscope.inputs import read_items

    p = tmp_path / "long.csv"
    p.write_text("id,text\na,short\nb," + "x" * 200_000 + "\nc,after\n")
    ids, texts = read_items(p)
    assert ids == ["a", "b", "c"] and [len(t) for t in texts] == [5, 200_000, 5]


def test_float16_vectors_are_read_as_float32(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from normscope.encoders.precomputed import load_precomputed

    v16 = np.random.default_rng(0).normal(size=(6, 8)).astype(np.float16)
    np.save(tmp_path / "h.npy", v16)
    flat = pa.array(v16.reshape(-1), pa.float16())
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(6)], "vector": pa.FixedSizeListArray.from_arrays(flat, 8)}),
                   tmp_path / "h.parquet")
    for name in ("h.npy", "h.parquet"):
        t = load_precomputed(tmp_path / name)
        assert t.vectors.dtype == np.float32
        np.testing.assert_array_equal(t.vectors, v16.astype(np.float32))
        np.testing.assert_allclose(t.norms, np.linalg.norm(v16.astype(np.float64), axis=1), rtol=1e-6)


def test_markup_in_ids_and_file_names_prints_as_it_is(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    v = np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32)
    v[1] = 0.0  # a junk vector: its id is printed in the summary table
    ids = ["a", "[/x]", "[bold]c", "d"]
    pq.write_table(pa.table({"id": ids, "vector": [list(map(float, r)) for r in v]}), tmp_path / "v.parquet")
    out_dir = tmp_path / "out[red]x"
    out_dir.mkdir()
    assert run(["embed", str(tmp_path / "v.parquet"), "-o", str(out_dir / "o.parquet")]) == 0
    out, err = capsys.readouterr()
    assert "[/x]" in out and f"wrote {out_dir / 'o.parquet'}" in err


def test_beir_convert_onto_a_read_only_place_is_one_line(tmp_path, capsys):
    from test_faults import read_only

    src = tmp_path / "trec"
    src.mkdir()
    (src / "test.docs").write_text("MED-1\tfirst doc\n")
    (src / "test.titles.queries").write_text("PLAIN-1\tfirst query\n")
    (src / "test.2-1-0.qrel").write_text("PLAIN-1 0 MED-1 2\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    with read_only(ro):
        code = run(["beir-convert", str(src), str(ro / "out")])
    line = _one_line(capsys.readouterr().err)
    assert code == 2 and "not writable" in line and not (ro / "out").exists()
