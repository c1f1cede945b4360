"""The Ray Data engine against the local engine, on a real local Ray cluster started once for this module.

Skipped with a reason when the ``ray`` extra is absent. The corpus is small (64 items, real English words,
a BEIR title on some, one item past the model's 256-token limit, two junk items) so the module stays
around a minute on two cores.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'normscope[ray]')")

from normscope.cli import run  # noqa: E402
from normscope.engine import embed_input  # noqa: E402
from normscope.engine.shards import MANIFEST, read_table  # noqa: E402
from _close import assert_vectors_close  # noqa: E402

BATCH = 16


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A local Ray cluster (3 logical CPUs: 2 encoder actors + reads/writes) and a private embedding cache."""
    cache = tmp_path_factory.mktemp("ray-cache")
    real_models = Path(os.environ.get("NORMSCOPE_CACHE") or Path.home() / ".cache" / "normscope") / "models"
    if real_models.is_dir():  # reuse the extracted bundled model instead of unzipping it again
        (cache / "models").symlink_to(real_models)
    saved = os.environ.get("NORMSCOPE_CACHE")
    os.environ["NORMSCOPE_CACHE"] = str(cache)  # the workers inherit it, the driver reads it
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    yield cache
    ray.shutdown()
    if saved is None:
        os.environ.pop("NORMSCOPE_CACHE", None)
    else:
        os.environ["NORMSCOPE_CACHE"] = saved


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    from normscope.datasets import wordfreq_words

    words = wordfreq_words(3000)
    rng = np.random.default_rng(11)
    rows = []
    for i in range(62):
        n = int(rng.integers(1, 40))
        text = " ".join(rng.choice(words, size=n))
        row = {"_id": f"doc-{i:03d}", "text": text}
        if i % 3 == 0:
            row["title"] = " ".join(rng.choice(words, size=3)).capitalize()
        rows.append(row)
    rows[7]["text"] = " ".join(rng.choice(words, size=400))  # cut at 256 tokens
    rows.insert(20, {"_id": "junk-a", "text": "   "})
    rows.insert(41, {"_id": "junk-b", "text": "\u200b\u2060"})
    d = tmp_path_factory.mktemp("beir")
    with gzip.open(d / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    tbl = pa.table({"_id": [r["_id"] for r in rows], "title": [r.get("title") for r in rows],
                    "text": [r["text"] for r in rows]})
    pq.write_table(tbl, d / "corpus.parquet")
    return d


@pytest.fixture(scope="module")
def local_result(corpus, tmp_path_factory, cluster):
    """The local engine on the same corpus, computed independently (cache off)."""
    out = tmp_path_factory.mktemp("local") / "local.parquet"
    summary, table = embed_input(corpus, out=out, cache=False, batch_size=BATCH)
    return summary, table


@pytest.fixture(scope="module")
def ray_result(corpus, cluster, tmp_path_factory):
    d = tmp_path_factory.mktemp("ray")
    out, js = d / "vectors.parquet", d / "summary.json"
    code = run(["embed", str(corpus), "-o", str(out), "--json", str(js), "--engine", "ray", "--workers", "2",
                "--batch-size", str(BATCH)])
    assert code == 0
    return out, json.loads(js.read_text())


def _by_local_order(table, local_ids):
    """The Ray output's rows in the local table's order (the Ray engine does not keep row order: join on id)."""
    assert sorted(table.ids) == sorted(local_ids)
    pos = {i: k for k, i in enumerate(table.ids)}
    return table.subset([pos[i] for i in local_ids])


def test_ray_engine_equals_local_engine(local_result, ray_result):
    (ls, lt), (out, rs) = local_result, ray_result
    written = read_table(out)
    rt = _by_local_order(written, lt.ids)  # the same ids: junk left out alike
    assert rt.texts == lt.texts  # titles joined alike
    assert rt.fingerprint == lt.fingerprint
    # another process, other batches of Ray Data blocks: float32 rounding (tests/_close.py says why)
    assert_vectors_close(rt.vectors, lt.vectors)
    np.testing.assert_array_equal(rt.tokens, lt.tokens)
    norms = pq.read_table(out, columns=["norm"]).column("norm").to_numpy()
    np.testing.assert_allclose(norms, written.norms, rtol=1e-6)
    for key in ("n", "dim", "model", "fingerprint", "n_truncated", "normalised"):
        assert rs[key] == ls[key], key
    assert rs["n_truncated"] == 1 and rs["n"] == 62
    assert rs["junk"] == ls["junk"] == {"count": 2, "ids": ["junk-a", "junk-b"], "reasons": ls["junk"]["reasons"]}
    r = norms.astype(np.float64)  # the streamed statistics of the norms written, checked with numpy
    assert rs["norm_mean"] == pytest.approx(r.mean(), rel=1e-12)
    assert rs["norm_std"] == pytest.approx(r.std(ddof=1), rel=1e-9)
    assert (rs["norm_min"], rs["norm_max"]) == (r.min(), r.max())
    for q, v in rs["norm_quantiles"].items():  # the sketch's guarantee: relative error <= 1e-3
        true = np.quantile(r, float(q), method="lower")
        assert abs(v - true) <= rs["norm_quantile_rel_error"] * true * (1 + 1e-9), q
    for key in ("norm_mean", "norm_std", "norm_min", "norm_max"):  # and the local engine's, to float32 rounding
        assert rs[key] == pytest.approx(ls[key], rel=1e-5), key
    assert (rs["engine"], rs["workers"], rs["threads_per_worker"]) == ("ray", 2, 1)
    assert json.loads((out / MANIFEST).read_text())["n"] == 62


def test_a_rerun_reuses_the_finished_batches(corpus, cluster, ray_result, local_result):
    """A killed job leaves whole cache shards (atomic writes): drop half of them and re-run -- from the parquet
    copy of the corpus, which Ray Data reads into other blocks but the engine cuts into the same batches."""
    out, _ = ray_result
    shards = sorted((cluster / "embeddings").glob("*/shard-*.npz"))
    assert len(shards) == -(-64 // BATCH)  # one shard per batch of 16 consecutive records
    lost, kept = shards[::2], shards[1::2]
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in kept}
    for p in lost:
        p.unlink()
    summary, table = embed_input(corpus / "corpus.parquet", out=out, engine="ray", workers=1, batch_size=BATCH)
    assert table is None and summary["n"] == 62 and summary["junk"]["ids"] == ["junk-a", "junk-b"]
    after = sorted((cluster / "embeddings").glob("*/shard-*.npz"))
    assert after == shards  # the same batches, found by their content digest
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in kept} == before  # not re-encoded nor rewritten
    t = _by_local_order(read_table(out), local_result[1].ids)
    assert_vectors_close(t.vectors, local_result[1].vectors)  # actors vs this process
    assert not list(out.parent.glob(f".{out.name}.*"))  # no temporary directories left


def test_in_memory_texts_on_the_actor_pool(cluster, local_result):
    """engine.embed_texts (what retrieval wires in): junk and tokens here, vectors from the actors."""
    from normscope.encoders import load_encoder
    from normscope.engine import embed_texts

    enc = load_encoder()
    texts = local_result[1].texts[:30] + [" "] + local_result[1].texts[:5]  # junk and duplicates
    ids = [f"t{i}" for i in range(len(texts))]
    got = embed_texts(texts, ids, encoder=enc, engine="ray", workers=1, batch_size=8, cache=False)
    ref = embed_texts(texts, ids, encoder=enc, batch_size=8, cache=False)
    assert got.ids == ref.ids and got.junk.ids == ref.junk.ids == ["t30"]
    np.testing.assert_array_equal(got.tokens, ref.tokens)
    assert_vectors_close(got.vectors, ref.vectors)  # actors vs this process


def test_worker_junk_rule_in_process(cluster):
    """The actor class itself, in this process: junk listed beside the shards, or an error with --junk-error."""
    from normscope.extensions.ray_engine import CorpusWorker, EncoderSpec
    from normscope.errors import InputError

    batch = pa.table({"id": ["a", "b", "c"], "text": ["a cat", " \t", "the dog"]})
    spec = EncoderSpec(model="sentence-transformers/all-MiniLM-L6-v2")
    junk_dir = cluster / "junk-test"
    out = CorpusWorker(spec, None, False, 1, str(junk_dir), "drop")(batch)
    assert out.column("id").to_pylist() == ["a", "c"]
    assert out.column_names == ["id", "text", "norm", "vector", "tokens", "truncated"]
    assert json.loads(next(junk_dir.glob("*.json")).read_text())["ids"] == ["b"]
    with pytest.raises(InputError, match="1 junk documents found .*ids b"):
        CorpusWorker(spec, None, False, 1, str(junk_dir), "error")(batch)


def test_retrieval_on_the_ray_engine_equals_local(corpus, cluster, local_result, tmp_path, monkeypatch):
    """`normscope retrieval --engine ray` (documents through the actor pool, run first): every metric, the junk
    list and every ranking equal the local engine's."""
    from _retrieval_call import run_retrieval

    rows = [json.loads(x) for x in gzip.open(corpus / "corpus.jsonl.gz", "rt", encoding="utf-8")]
    d = tmp_path / "beir"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    good = [r for r in rows if r["_id"].startswith("doc-")]
    queries = [{"_id": f"q{i}", "text": " ".join(r["text"].split()[:4])} for i, r in enumerate(good[:24])]
    (d / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{i}\t{r['_id']}\t1\n" for i, r in enumerate(good[:24])), encoding="utf-8")
    kw = dict(scorers=("cosine", "inverse_norm"), fit_split="cv", n_boot=50, n_permutations=200, k=10)
    import normscope.extensions.ray_engine as ray_engine

    calls = []
    real = ray_engine.encode_vectors

    def counted(spec, texts, **k):
        calls.append(len(texts))
        return real(spec, texts, **k)

    monkeypatch.setattr(ray_engine, "encode_vectors", counted)
    far = run_retrieval(d, engine="ray", workers=1, **kw)
    assert calls == [62]  # the 62 non-junk documents went through the actor pool, the queries did not
    loc = run_retrieval(d, **kw)
    assert calls == [62]  # the local run did not touch the Ray engine
    assert far.metrics == loc.metrics
    assert far.junk == loc.junk and far.junk["documents"]["ids"] == ["junk-a", "junk-b"]
    pd_l = loc.items.sort_values(["scorer", "query_id", "rank"]).reset_index(drop=True)
    pd_r = far.items.sort_values(["scorer", "query_id", "rank"]).reset_index(drop=True)
    # the actors' vectors differ from this process's by float32 rounding (~1e-7 of the norm, tests/_close.py);
    # rankings and metrics can then be compared exactly only because no two adjacent scores of this corpus
    # are that close: checked here, so that a near-tie fails as what it is, not as an engine difference
    gaps = pd_l.groupby(["scorer", "query_id"])["score"].apply(lambda s: (s.iloc[:-1].to_numpy() - s.iloc[1:].to_numpy()))
    assert min(float(g.min()) for g in gaps if len(g)) > 1e-5
    assert pd_l["doc_id"].tolist() == pd_r["doc_id"].tolist()
