"""Norm-aware approximate indexes (extensions/ann.py, cli/index.py): real faiss HNSW / IVF over folded vectors,
checked against the brute-force float64 top-10 of retrieval.search."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from normscope.cli import run
from normscope.engine.shards import open_vectors
from normscope.errors import InputError
from normscope.extensions.ann import AnnParams, FoldedAnnIndex, build_ann_index, compare_with_exact, recall_at_k
from normscope.retrieval.search import brute_force_search
from normscope.table import EmbeddingTable, ModelFingerprint

N, D, NQ = 1500, 32, 40
SCORERS = [("cosine", None), ("dot", None), ("inverse_norm", 0.15), ("power", -1.0)]


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(3)
    docs = rng.standard_normal((N, D)).astype(np.float32) * rng.lognormal(0.5, 0.35, size=(N, 1)).astype(np.float32)
    queries = rng.standard_normal((NQ, D)).astype(np.float32)
    return docs, queries, [f"d{i}" for i in range(N)], [f"q{i}" for i in range(NQ)]


def _exact(corpus, scorer, param, k=10):
    docs, queries, ids, qids = corpus
    return brute_force_search(queries, docs, query_ids=qids, doc_ids=ids, scorer=scorer, param=param, k=k)


@pytest.mark.parametrize("scorer,param", SCORERS)
@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_full_recall_settings_return_the_exact_top10(corpus, kind, scorer, param):
    docs, queries, ids, qids = corpus
    index = build_ann_index(docs, ids, scorer=scorer, param=param, params=AnnParams(kind=kind, m=16, ef_construction=80))
    full = {"ef_search": N} if kind == "hnsw" else {"nprobe": index.params.nlist}
    got = index.search(queries, qids, 10, **full)
    ref = _exact(corpus, scorer, param)
    for q in qids:
        assert list(got[q]) == list(ref[q])  # same documents in the same order
        np.testing.assert_allclose(list(got[q].values()), list(ref[q].values()), rtol=1e-5, atol=1e-6)


def test_compare_with_exact_reports_the_recall_computed_from_brute_force(corpus):
    docs, queries, ids, qids = corpus
    index = build_ann_index(docs, ids, scorer="inverse_norm", param=0.15, params=AnnParams(kind="ivf", nprobe=2))
    rows = compare_with_exact(index, queries, k=10, repeats=2,
                              settings=[{"nprobe": 2}, {"nprobe": index.params.nlist}])
    ref = _exact(corpus, "inverse_norm", 0.15)
    pos = {d: i for i, d in enumerate(ids)}
    for row in rows:
        run_ = index.search(queries, qids, 10, nprobe=row["nprobe"])
        approx = np.array([[pos[d] for d in run_[q]] for q in qids])
        exact = np.array([[pos[d] for d in ref[q]] for q in qids])
        assert row["recall_at_k"] == pytest.approx(recall_at_k(approx, exact, 10))
        assert row["qps"] > 0 and row["qps_exact"] > 0
        assert row["speedup_vs_exact"] == pytest.approx(row["qps"] / row["qps_exact"])
        ref_scores = np.array([list(ref[q].values()) for q in qids])
        got_scores = np.array([list(run_[q].values()) + [0.0] * (10 - len(run_[q])) for q in qids])
        assert row["score_ratio_at_k"] == pytest.approx(np.mean(got_scores.sum(1) / ref_scores.sum(1)), rel=1e-5)
    assert rows[0]["recall_at_k"] < 1.0 and rows[1]["recall_at_k"] == 1.0  # 2 of 38 lists miss neighbours


def test_streaming_build_from_disk_equals_the_in_memory_build(corpus, tmp_path):
    docs, queries, ids, qids = corpus
    fp = ModelFingerprint(name="synthetic", revision="r1", pooling="mean")
    EmbeddingTable(ids=ids, texts=ids, vectors=docs, fingerprint=fp).to_parquet(tmp_path / "one.parquet")
    shards = tmp_path / "shards.parquet"
    shards.mkdir()
    for j, sl in enumerate(np.array_split(np.arange(N), 3)):  # a Ray-style directory of shards
        vec = pa.FixedSizeListArray.from_arrays(pa.array(docs[sl].reshape(-1)), D)
        pq.write_table(pa.table({"id": [ids[i] for i in sl], "vector": vec}), shards / f"part-{j}.parquet")
    np.save(tmp_path / "v.npy", docs)
    for kind in ("ivf", "hnsw"):
        params = AnnParams(kind=kind, m=16, ef_construction=40, nlist=20, nprobe=3)
        # the same chunks as from disk: faiss inserts each added batch of HNSW nodes level by level
        ref = build_ann_index(docs, ids, scorer="power", param=-1.0, params=params, chunk_rows=256).search(queries, qids, 10)
        for path in (tmp_path / "one.parquet", shards):
            src = open_vectors(path)
            index = build_ann_index(src, scorer="power", param=-1.0, params=params, chunk_rows=256)
            assert index.search(queries, qids, 10) == ref
        assert open_vectors(tmp_path / "one.parquet").fingerprint == fp
        npy = build_ann_index(open_vectors(tmp_path / "v.npy"), ids, scorer="power", param=-1.0, params=params, chunk_rows=256)
        assert npy.search(queries, qids, 10) == ref


def test_save_and_load_give_the_same_results(corpus, tmp_path):
    docs, queries, ids, qids = corpus
    index = build_ann_index(docs, ids, scorer="cosine", params=AnnParams(kind="hnsw", m=8, ef_construction=40, ef_search=20))
    index.save(tmp_path / "idx")
    again = FoldedAnnIndex.load(tmp_path / "idx")
    assert again.params == index.params and again.doc_ids == ids and again.scorer == "cosine"
    assert again.search(queries, qids, 10) == index.search(queries, qids, 10)
    index.save(tmp_path / "idx")  # an existing index directory is replaced
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["ids.parquet", "index.faiss", "meta.json"]


def test_bad_settings_are_refused_before_building(corpus):
    docs, queries, ids, qids = corpus
    alpha_min = -1.0 / float(np.linalg.norm(docs, axis=1).max())
    with pytest.raises(InputError, match="alpha must be >"):
        build_ann_index(docs, ids, scorer="inverse_norm", param=1.01 * alpha_min)
    with pytest.raises(InputError, match="needs --alpha"):
        build_ann_index(docs, ids, scorer="inverse_norm")
    with pytest.raises(InputError, match="unknown index kind"):
        build_ann_index(docs, ids, params=AnnParams(kind="lsh"))
    with pytest.raises(InputError, match="nlist must lie"):
        build_ann_index(docs, ids, params=AnnParams(kind="ivf", nlist=N + 1))
    with pytest.raises(InputError, match="nprobe=50 exceeds nlist=10"):
        build_ann_index(docs, ids, params=AnnParams(kind="ivf", nlist=10, nprobe=50))
    with pytest.raises(InputError, match="duplicate document id"):
        build_ann_index(docs, ["x"] * N)
    index = build_ann_index(docs, ids, params=AnnParams(kind="hnsw", m=8, ef_construction=20))
    with pytest.raises(InputError, match="--nprobe applies to ivf"):
        index.search(queries, qids, 10, nprobe=3)


def test_cli_build_and_search_with_query_vectors(corpus, tmp_path):
    docs, queries, ids, qids = corpus
    fp = ModelFingerprint(name="synthetic", revision="r1", pooling="mean")
    EmbeddingTable(ids=ids, texts=ids, vectors=docs, fingerprint=fp).to_parquet(tmp_path / "docs.parquet")
    EmbeddingTable(ids=qids, texts=qids, vectors=queries, fingerprint=fp).to_parquet(tmp_path / "q.parquet")
    idx, bj, sj, runf = tmp_path / "idx", tmp_path / "b.json", tmp_path / "s.json", tmp_path / "run.parquet"
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(idx), "--scorer", "inverse_norm",
                "--alpha", "0.15", "--kind", "hnsw", "--m", "16", "--json", str(bj)]) == 0
    b = json.loads(bj.read_text())
    assert (b["n"], b["dim"], b["kind"], b["param"]) == (N, D, "hnsw", 0.15)
    assert run(["index", "search", str(idx), str(tmp_path / "q.parquet"), "-k", "10", "--ef-search", str(N),
                "--compare-exact", "-o", str(runf), "--json", str(sj)]) == 0
    s = json.loads(sj.read_text())
    assert s["vs_exact"]["recall_at_k"] == 1.0 and s["n_queries"] == NQ and s["ef_search"] == N
    df = pq.read_table(runf).to_pandas()
    ref = _exact(corpus, "inverse_norm", 0.15)
    for q in qids:
        assert df[df.query_id == q].sort_values("rank").doc_id.tolist() == list(ref[q])
    # bad input: one line, exit 2, nothing written
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(tmp_path / "i2"), "--alpha", "1"]) == 2
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(bj)]) == 2  # -o is a file
    assert run(["index", "search", str(idx), str(tmp_path / "q.parquet"), "--nprobe", "4"]) == 2
    assert run(["index", "search", str(tmp_path / "nope"), str(tmp_path / "q.parquet")]) == 2
    assert not (tmp_path / "i2").exists()


def test_cli_search_embeds_text_queries_with_the_index_model(bundled_encoder, tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    from normscope.datasets import wordfreq_words

    words = wordfreq_words(300)
    docs = bundled_encoder.encode(words)
    EmbeddingTable(ids=words, texts=words, vectors=docs, fingerprint=bundled_encoder.fingerprint).to_parquet(
        tmp_path / "docs.parquet")
    (tmp_path / "q.txt").write_text("a small dog\nthe weather today\n")
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(tmp_path / "idx"), "--kind", "ivf",
                "--nlist", "7", "--scorer", "power", "--beta", "-0.5"]) == 0
    assert run(["index", "search", str(tmp_path / "idx"), str(tmp_path / "q.txt"), "-k", "5", "--nprobe", "7",
                "-o", str(tmp_path / "run.parquet")]) == 0
    Q = bundled_encoder.encode(["a small dog", "the weather today"])
    ref = brute_force_search(Q, docs, query_ids=["0", "1"], doc_ids=words, scorer="power", param=-0.5, k=5)
    df = pq.read_table(tmp_path / "run.parquet").to_pandas()
    for q in ("0", "1"):
        assert df[df.query_id == q].sort_values("rank").doc_id.tolist() == list(ref[q])


def test_cli_build_writes_index_and_json_as_one_set(corpus, tmp_path, monkeypatch):
    """A full disk while writing --json leaves the previous index and JSON as they were, and no staging."""
    import errno

    import normscope._io

    docs, _, ids, _ = corpus
    fp = ModelFingerprint(name="synthetic", revision="r1", pooling="mean")
    EmbeddingTable(ids=ids, texts=ids, vectors=docs, fingerprint=fp).to_parquet(tmp_path / "docs.parquet")
    idx, bj = tmp_path / "idx", tmp_path / "b.json"
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(idx), "--kind", "flat", "--json", str(bj)]) == 0
    before = {p.name: p.read_bytes() for p in idx.iterdir()}, bj.read_bytes()
    real = normscope._io.write_json

    def full_disk(obj, path, *a, **k):
        if "b.json" in str(path) or ".b." in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(obj, path, *a, **k)

    import normscope.cli.index

    monkeypatch.setattr(normscope.cli.index, "write_json", full_disk)  # the JSON writer the command calls
    assert run(["index", "build", str(tmp_path / "docs.parquet"), "-o", str(idx), "--kind", "hnsw", "--m", "8",
                "--json", str(bj)]) == 2
    assert ({p.name: p.read_bytes() for p in idx.iterdir()}, bj.read_bytes()) == before  # still the flat index
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "docs.parquet", "idx"]  # nothing staged left
