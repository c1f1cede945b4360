"""Encoder adapters: HF AutoModel vs sentence-transformers, precomputed files, open_clip, dispatch, offline errors."""

from __future__ import annotations

import copy
import importlib.util
import sys
import types

import numpy as np
import pytest

from normscope.encoders import load_encoder, resolve_backend
from normscope.errors import InputError, ModelError
from _close import assert_vectors_close

SENTENCES = [
    "The cat sat on the mat.",
    "Contrastive encoders are trained with scale-invariant losses.",
    "dog",
    "A man is playing a guitar on stage while the crowd sings along loudly.",
]


@pytest.fixture(scope="module")
def hf_encoder():
    return load_encoder("hf:sentence-transformers/all-MiniLM-L6-v2")


def test_hf_mean_pooling_equals_sentence_transformers_raw(hf_encoder, bundled_encoder):
    """Independent check: AutoModel + our mean pooling vs sentence-transformers' Pooling module."""
    ours = hf_encoder.encode(SENTENCES, batch_size=3)
    ref = bundled_encoder.encode(SENTENCES)
    np.testing.assert_allclose(ours, ref, atol=1e-5, rtol=0)
    fp = hf_encoder.fingerprint
    assert (fp.backend, fp.pooling, fp.dropped_modules) == ("huggingface", "mean", ())
    assert fp.revision == bundled_encoder.fingerprint.revision  # same weights file hash
    assert type(hf_encoder.module).__name__ == "BertModel"
    assert hf_encoder.module.config._attn_implementation == "eager"


def test_hf_cls_pooling_is_first_token_of_the_transformer(hf_encoder, bundled_encoder):
    import torch

    cls_enc = copy.copy(hf_encoder)
    cls_enc.pooling = "cls"
    ours = cls_enc.encode(SENTENCES)
    # reference: token embeddings of sentence-transformers' own Transformer module, position 0
    feats = bundled_encoder.tokenize(SENTENCES)
    with torch.inference_mode():
        tok = bundled_encoder.model[0](dict(feats))["token_embeddings"][:, 0]
    np.testing.assert_allclose(ours, tok.numpy(), atol=1e-5, rtol=0)


def test_hf_forward_is_differentiable_and_matches_encode(hf_encoder):
    feats = hf_encoder.tokenize(SENTENCES[:2])
    z = hf_encoder.forward(feats)
    assert z.requires_grad
    (g,) = __import__("torch").autograd.grad(z.norm(dim=1).sum(), hf_encoder.module.embeddings.word_embeddings.weight)
    assert float(g.abs().sum()) > 0
    np.testing.assert_allclose(z.detach().numpy(), hf_encoder.encode(SENTENCES[:2]), atol=1e-5)


def test_truncation_count(hf_encoder, bundled_encoder):
    long = " ".join(["word"] * 400)
    assert hf_encoder.max_seq_length == bundled_encoder.max_seq_length == 256  # sentence_bert_config.json
    assert hf_encoder.count_truncated([long, "short"]) == 1
    assert bundled_encoder.count_truncated([long, "short"]) == 1


def test_load_encoder_is_memoised(bundled_encoder):
    assert load_encoder() is bundled_encoder
    assert load_encoder("sentence-transformers/all-MiniLM-L6-v2", device="cpu") is bundled_encoder


@pytest.mark.parametrize(
    "name, kw, expected",
    [
        ("sentence-transformers/all-MiniLM-L6-v2", {}, ("sentence-transformers", "sentence-transformers/all-MiniLM-L6-v2")),
        ("hf:bert-base-uncased", {}, ("huggingface", "bert-base-uncased")),
        ("bert-base-uncased", {"pooling": "cls"}, ("huggingface", "bert-base-uncased")),
        ("open_clip:ViT-B-32/openai", {}, ("open_clip", "ViT-B-32/openai")),
        ("precomputed:v.npy", {}, ("precomputed", "v.npy")),
        ("dir/vectors.parquet", {}, ("precomputed", "dir/vectors.parquet")),
        ("my-model", {"backend": "huggingface"}, ("huggingface", "my-model")),
        ("st:my-model", {}, ("sentence-transformers", "my-model")),
    ],
)
def test_resolve_backend(name, kw, expected):
    assert resolve_backend(name, **kw) == expected


def test_dispatch_errors():
    with pytest.raises(InputError, match="unknown backend 'onnx'"):
        load_encoder("x", backend="onnx")
    with pytest.raises(InputError, match="prefix says backend 'huggingface'"):
        load_encoder("hf:x", backend="open_clip")
    with pytest.raises(InputError, match="pooling='cls' applies to the huggingface backend"):
        load_encoder("x", backend="sentence-transformers", pooling="cls")
    with pytest.raises(InputError, match="unknown device 'banana'"):
        load_encoder("x", device="banana")
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="CUDA is not available"):
            load_encoder(device="cuda:0")
    with pytest.raises(InputError, match="unknown pooling 'max'"):
        load_encoder("hf:all-MiniLM-L6-v2", pooling="max")


@pytest.mark.parametrize("name", ["not/a-real-model", "hf:not/a-real-model"])
def test_unknown_model_offline_fails_fast_with_one_line(name, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls = _hub_failing_on_every_network_call(monkeypatch)
    with pytest.raises(ModelError) as err:
        load_encoder(name, fresh=True)
    assert calls == []  # fails at once: not even the one hub check is made (no wall-clock bound in a unit test)
    msg = str(err.value)
    assert "\n" not in msg and "not/a-real-model" in msg and "HF_HUB_OFFLINE" in msg
    assert "sentence-transformers/all-MiniLM-L6-v2" in msg  # names the offline default


def test_unknown_model_name_that_cannot_be_a_hub_id():
    with pytest.raises(ModelError, match="unknown model 'no such model!'"):
        load_encoder("no such model!", fresh=True)


# ----------------------------------------------------------------------------- precomputed
def test_precomputed_npy_and_parquet_roundtrip(tmp_path, rng):
    from normscope.encoders.precomputed import PrecomputedEncoder, load_precomputed
    from normscope.table import EmbeddingTable

    v = rng.normal(size=(5, 3)).astype(np.float32)
    np.save(tmp_path / "v.npy", v)
    enc = load_encoder(str(tmp_path / "v.npy"))
    assert isinstance(enc, PrecomputedEncoder) and enc.dim == 3
    np.testing.assert_array_equal(enc.encode(list("abcde")), v)
    with pytest.raises(InputError, match="has 5 vectors but 2 items"):
        enc.encode(["a", "b"])
    t = load_precomputed(tmp_path / "v.npy", ids=list("vwxyz"))
    np.testing.assert_allclose(t.norms, np.sqrt((v.astype(np.float64) ** 2).sum(1)), rtol=1e-6)
    assert t.ids == list("vwxyz") and t.fingerprint.backend == "precomputed"
    assert t.fingerprint.revision.startswith("sha256:")
    # parquet with texts: lookup by text, fingerprint kept from the writer
    EmbeddingTable(ids=list("12345"), texts=["t1", "t2", "t3", "t4", "t5"], vectors=v, fingerprint=t.fingerprint).to_parquet(
        tmp_path / "v.parquet"
    )
    penc = load_encoder(f"precomputed:{tmp_path / 'v.parquet'}")
    np.testing.assert_array_equal(penc.encode(["t3", "t1"]), v[[2, 0]])
    assert penc.fingerprint == t.fingerprint
    with pytest.raises(InputError, match="not in"):
        penc.encode(["unknown text"])


@pytest.mark.parametrize(
    "array, pattern",
    [
        (np.zeros(4, np.float32), r"shape \(4,\); expected a 2-D"),
        (np.zeros((2, 3, 4), np.float32), r"shape \(2, 3, 4\)"),
        (np.zeros((0, 3), np.float32), r"shape \(0, 3\)"),
        (np.array([[1.0, np.nan], [0.0, 1.0], [np.inf, 0.0]], np.float32), r"NaN/Inf values in 2 rows, first rows \[0, 2\]"),
        (np.array([["a", "b"]]), "dtype <U1"),
    ],
)
def test_precomputed_bad_npy(tmp_path, array, pattern):
    from normscope.encoders.precomputed import load_precomputed

    np.save(tmp_path / "bad.npy", array)
    with pytest.raises(InputError, match=pattern):
        load_precomputed(tmp_path / "bad.npy")


def test_precomputed_object_array_is_never_unpickled(tmp_path):
    from normscope.encoders.precomputed import load_npy_vectors

    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="never unpickles"):
        load_npy_vectors(tmp_path / "obj.npy")


def test_precomputed_parquet_without_vector_column(tmp_path):
    import pandas as pd

    pd.DataFrame({"id": ["a"], "emb": [[1.0, 2.0]]}).to_parquet(tmp_path / "x.parquet")
    with pytest.raises(InputError, match="no 'vector' column"):
        load_encoder(str(tmp_path / "x.parquet"))


# ----------------------------------------------------------------------------- open_clip
@pytest.mark.skipif(importlib.util.find_spec("open_clip") is not None, reason="open_clip is installed")
def test_open_clip_missing_extra_names_the_install_command():
    with pytest.raises(ModelError, match=r"pip install normscope\[clip\]"):
        load_encoder("open_clip:ViT-B-32/laion2b_s34b_b79k", fresh=True)


def test_open_clip_adapter_asks_towers_for_unnormalised_vectors(monkeypatch):
    """Plumbing only (open_clip is not installable here): a stand-in module with open_clip's API.

    The stand-in's towers normalise unless ``normalize=False`` is passed, so the
    test fails if the adapter ever drops that flag.
    """
    import torch
    from PIL import Image

    class TinyClip(torch.nn.Module):
        context_length = 6

        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.text_projection = torch.nn.Parameter(torch.randn(6, 4))
            self.visual = torch.nn.Linear(3, 4)

        def encode_text(self, tokens, normalize=False):
            z = tokens.float() @ self.text_projection
            return torch.nn.functional.normalize(z, dim=-1) if normalize else z

        def encode_image(self, pixels, normalize=False):
            z = self.visual(pixels)
            return torch.nn.functional.normalize(z, dim=-1) if normalize else z

    model = TinyClip()

    def tokenizer(texts):
        return torch.tensor([[len(t), t.count("a"), t.count("e"), 1, 2, 3] for t in texts])

    fake = types.ModuleType("open_clip")
    fake.create_model_and_transforms = lambda arch, pretrained=None, device="cpu": (model, None, lambda im: torch.tensor(np.asarray(im, np.float32).mean((0, 1)) / 255))
    fake.get_tokenizer = lambda arch: tokenizer
    monkeypatch.setitem(sys.modules, "open_clip", fake)

    enc = load_encoder("open_clip:Tiny/test-tag", fresh=True)
    texts = ["a banana", "the end"]
    got = enc.encode(texts)
    expected = (tokenizer(texts).float() @ model.text_projection).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert not np.allclose(np.linalg.norm(got, axis=1), 1.0)
    fp = enc.fingerprint
    assert (fp.name, fp.revision, fp.backend, fp.dropped_modules) == ("open_clip:Tiny/test-tag", "test-tag", "open_clip", ("normalize",))
    img = Image.new("RGB", (4, 4), (255, 0, 51))
    vi = enc.encode_images([img])
    with torch.no_grad():
        ref = model.visual(torch.tensor([1.0, 0.0, 0.2])).numpy()
    np.testing.assert_allclose(vi[0], ref, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- hub, fast failure
def _hub_failing_on_every_network_call(monkeypatch):
    """Make any huggingface_hub HTTP call fail as an unreachable host does (httpx ConnectError)."""
    import huggingface_hub

    calls = []

    def model_info(self, repo_id, *a, timeout=None, **k):
        calls.append((repo_id, timeout))
        from huggingface_hub.utils import _http

        raise _http.httpx2.ConnectError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    return calls


def test_unreachable_hub_fails_after_one_check_without_download(monkeypatch):
    """Without HF_HUB_OFFLINE an unreachable hub is reported after ONE model-info request: the
    download (with huggingface_hub's 5 retries per file) is never attempted."""
    from normscope.encoders import _hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    calls = _hub_failing_on_every_network_call(monkeypatch)
    loads = []

    def load(local_files_only):
        loads.append(local_files_only)
        raise OSError("not in the local cache")

    with pytest.raises(ModelError) as err:
        _hub.resolve("owner/not-a-real-model", load)
    msg = str(err.value)
    assert "\n" not in msg and "owner/not-a-real-model" in msg and "hub is unreachable" in msg
    # setting HF_HUB_OFFLINE would not make the model available: the message says what would (new-user finding)
    assert "HF_HUB_OFFLINE" not in msg and "local model folder" in msg and "sentence-transformers/all-MiniLM-L6-v2" in msg
    assert loads == [True]  # only the local-cache attempt
    assert calls == [("owner/not-a-real-model", _hub.HUB_CHECK_TIMEOUT_S)]


def test_unknown_repository_on_a_reachable_hub_is_not_downloaded(monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    from normscope.encoders import _hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)

    def model_info(self, repo_id, *a, **k):
        raise RepositoryNotFoundError("404 Client Error: Repository Not Found", response=types.SimpleNamespace(
            headers={}, status_code=404, request=None, url="https://huggingface.co/api/models/" + repo_id))

    monkeypatch.setattr(huggingface_hub.HfApi, "model_info", model_info)
    loads = []

    def load(local_files_only):
        loads.append(local_files_only)
        raise OSError("not cached")

    with pytest.raises(ModelError, match="owner/nope' is not available locally and not found on the Hugging Face hub"):
        _hub.resolve("owner/nope", load)
    assert loads == [True]


def test_real_network_failure_is_one_quiet_line(monkeypatch, caplog):
    """The real path, HF_HUB_OFFLINE unset: on this machine the hub is unreachable (DNS fails);
    where it is reachable the repository does not exist. Either way one line, no retry logging."""
    import logging

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    caplog.set_level(logging.DEBUG, logger="huggingface_hub")
    for name in ("not/a-real-model", "hf:not/a-real-model"):
        with pytest.raises(ModelError) as err:
            load_encoder(name, fresh=True)
        msg = str(err.value)
        assert "\n" not in msg and "not/a-real-model" in msg
        assert ("hub is unreachable" in msg) or ("not found on the Hugging Face hub" in msg), msg
    assert not [r for r in caplog.records if "Retry" in r.getMessage()]
    assert logging.getLogger("huggingface_hub").level == logging.DEBUG  # restored after the quiet block


# ----------------------------------------------------------------------------- API input validation, junk
JUNK_CASES = [
    # (texts, indices that are junk): empty, whitespace, zero-width space, BOM, word joiner, NFKC of
    # an ideographic space, control characters only
    (["", "dog"], [0]),
    (["  ", "dog", "\t\n"], [0, 2]),
    (["\u200b", "cat", "\ufeff\u2060 ", "\u3000", "\x00\x07"], [0, 2, 3, 4]),
    (["ok", "fine"], []),
]


@pytest.mark.parametrize("texts, junk", JUNK_CASES)
def test_embed_texts_leaves_junk_out_and_lists_it(bundled_encoder, texts, junk):
    from normscope.encoders.embed import embed_texts

    ids = [f"i{k}" for k in range(len(texts))]
    tbl = embed_texts(texts, ids, encoder=bundled_encoder, cache=False)
    kept = [k for k in range(len(texts)) if k not in junk]
    assert tbl.ids == [ids[k] for k in kept]
    assert tbl.junk.index == junk and tbl.junk.ids == [ids[k] for k in junk]
    assert tbl.summary()["junk"]["count"] == len(junk)
    # other batches (junk left out): equal to float32 rounding (tests/_close.py)
    assert_vectors_close(tbl.vectors, bundled_encoder.encode([texts[k] for k in kept]))
    if junk:
        with pytest.raises(InputError, match=rf"^{len(junk)} junk items found .*ids {ids[junk[0]]}"):
            embed_texts(texts, ids, encoder=bundled_encoder, cache=False, junk="error")


def test_junk_by_tokens_special_and_unknown_only(bundled_encoder):
    """MiniLM's WordPiece vocabulary maps a private-use character to [UNK]: junk by the token rule."""
    from normscope.inputs import JUNK_TOKENS, find_junk

    tok = bundled_encoder.hf_tokenizer
    text = "\ue000\ue001"
    assert set(tok(text, add_special_tokens=False)["input_ids"]) <= {tok.unk_token_id}
    found = find_junk(["dog", text, "[CLS] [SEP]"], tokenizer=tok)
    assert found.index == [1, 2] and found.reasons == [JUNK_TOKENS, JUNK_TOKENS]
    assert find_junk(["dog", text]).index == []  # without a tokenizer only the text rule applies


def test_embed_texts_every_item_junk_and_id_count(bundled_encoder):
    from normscope.encoders.embed import embed_texts

    with pytest.raises(InputError, match="every one of the 2 items is junk"):
        embed_texts(["", " "], encoder=bundled_encoder, cache=False)
    with pytest.raises(InputError, match="got 1 ids for 2 texts"):
        embed_texts(["apple", "the"], ids=["a"], encoder=bundled_encoder, cache=False)
    with pytest.raises(InputError, match="single string"):
        embed_texts("apple", encoder=bundled_encoder, cache=False)


def test_token_counts_after_truncation(bundled_encoder):
    """Token counts are what the model sees: capped at max_seq_length (256 for MiniLM), counted independently."""
    from normscope.encoders.embed import embed_texts

    long_text = " ".join(["word"] * 600)  # "word" is one WordPiece token: 600 + [CLS] + [SEP]
    tbl = embed_texts(["a dog", long_text], encoder=bundled_encoder, cache=False)
    assert bundled_encoder.max_seq_length == 256
    assert tbl.tokens.tolist() == [4, 256]  # [CLS] a dog [SEP]; the long text cut at 256
    assert tbl.n_truncated == 1
    seen, raw = bundled_encoder.token_counts([long_text])
    assert raw.tolist() == [602] and seen.tolist() == [256]


def test_tokenize_uses_preprocess_not_the_deprecated_tokenize(bundled_encoder, monkeypatch):
    """sentence-transformers >= 6 logs "The `tokenize` method is deprecated" on model.tokenize."""
    expected = bundled_encoder.model.preprocess(["river bank", "the"])

    def deprecated(*a, **k):
        raise AssertionError("model.tokenize must not be called when preprocess exists")

    monkeypatch.setattr(bundled_encoder.model, "tokenize", deprecated)
    feats = bundled_encoder.tokenize(["river bank", "the"])
    assert set(feats) == set(expected)
    for k in expected:
        if hasattr(expected[k], "shape"):
            assert (feats[k].cpu() == expected[k].cpu()).all()


# ----------------------------------------------------------------------------- tokenize once (issue 28)
#: Mixed lengths: two texts over the model's 256 word pieces, leading/trailing spaces (kept as the model keeps
#: them), mixed case, a whitespace-only text (junk for embed_texts, but a valid input of encode), a duplicate.
MIXED = [
    "  The cat sat on the mat.  ",
    " ".join(["Randomised trials of statin therapy reported fewer cardiovascular events."] * 30),
    "dog",
    "   ",
    "Contrastive ENCODERS are trained with scale-invariant losses.",
    "\tA man is playing a guitar on stage while the crowd sings along loudly.\n",
    "dog",
    " ".join(["Heat shock proteins chaperone misfolded polypeptides in stressed cells."] * 25),
    "naïve café ✓ Überraschung",
    "a",
    "The membrane potential of a resting neuron is about minus seventy millivolts.",
]


def _old_path(monkeypatch, enc):
    """Force the two-tokenization path of ``enc`` (token counts to sort, then ``preprocess`` per batch)."""
    monkeypatch.setattr(enc, "_tokenize_once", False)


@pytest.mark.parametrize("batch_size", [1, 3, 4, 64])
def test_tokenize_once_batches_equal_model_preprocess(bundled_encoder, batch_size):
    import torch

    enc = bundled_encoder
    assert enc.tokenize_once_supported()  # else the comparison below would test the old path against itself
    lengths = enc._token_lengths(MIXED)  # the old sort key: one independent tokenizer call
    assert lengths.max() == 256 and sorted(lengths)[-2] == 256  # both long texts are cut at 256 word pieces
    batches = list(enc.batches(MIXED, batch_size))
    idx = np.concatenate([i for i, _ in batches])
    np.testing.assert_array_equal(idx, np.argsort(-lengths, kind="stable"))  # same order, hence the same batches
    for rows, feats in batches:
        ref = enc.model.preprocess([MIXED[i] for i in rows])  # the model's own features of this batch
        assert feats.keys() == ref.keys()
        for k, v in ref.items():
            if isinstance(v, torch.Tensor):
                assert feats[k].dtype == v.dtype and feats[k].shape == v.shape, k
                assert torch.equal(feats[k], v), k
            else:
                assert feats[k] == v, k
        assert feats["input_ids"].shape[1] == lengths[rows].max()


def test_tokenize_once_vectors_equal_old_path_bit_for_bit(bundled_encoder, monkeypatch):
    new = bundled_encoder.encode(MIXED, batch_size=4)
    _old_path(monkeypatch, bundled_encoder)
    old = bundled_encoder.encode(MIXED, batch_size=4)
    np.testing.assert_array_equal(new, old)  # same batches, same features: the same float32 bits


def test_tokenize_once_falls_back_where_not_equivalent(bundled_encoder, monkeypatch):
    """An older ``preprocess`` without ``processing_kwargs``, or a model padding to a fixed length: the old path."""
    enc = bundled_encoder
    ref = enc.encode(MIXED[:5], batch_size=2)
    plain = enc.model.preprocess
    monkeypatch.setattr(enc, "_tokenize_once", None)
    monkeypatch.setattr(enc.model, "preprocess", lambda texts: plain(texts))  # sentence-transformers < 6 signature
    assert not enc.tokenize_once_supported()
    np.testing.assert_array_equal(enc.encode(MIXED[:5], batch_size=2), ref)
    monkeypatch.undo()
    monkeypatch.setattr(enc, "_tokenize_once", None)
    monkeypatch.setattr(enc.model[0], "processing_kwargs", {"text": {"padding": "max_length", "max_length": 300}})
    assert not enc.tokenize_once_supported()  # preprocess pads every batch to 300: tokenizer.pad would not
    feats = next(iter(enc.batches(MIXED[:3], 3)))[1]
    assert feats["input_ids"].shape == (3, 300)


def test_encode_cached_batches_by_tokens_like_encode(bundled_encoder):
    """encode_cached forms its batches in decreasing token count (not characters): with distinct token counts its
    batches are those of one ``encode`` call, so the vectors are the same bits."""
    from normscope.encoders import encode_cached

    texts = ["a b c d e f g h i j k", "photosynthesis", "Cats sleep all day.", "x y z w v u q r s t", "the cat sat on the mat today",
             "electroencephalography abnormalities", "ok", "one two"]
    seen = bundled_encoder.token_counts(texts)[0]
    assert len(set(seen)) == len(texts)  # distinct: the order is fixed by tokens alone
    by_chars = np.argsort([-len(t) for t in texts], kind="stable")
    by_tokens = np.argsort(-seen, kind="stable")
    assert {frozenset(by_chars[s:s + 3]) for s in (0, 3, 6)} != {frozenset(by_tokens[s:s + 3]) for s in (0, 3, 6)}
    got = encode_cached(bundled_encoder, texts, batch_size=3, cache=False)
    np.testing.assert_array_equal(got, bundled_encoder.encode(texts, batch_size=3))


def test_embed_texts_one_tokenization_gives_the_same_junk_and_counts(bundled_encoder):
    """find_junk on the shared ids (special tokens added) equals find_junk tokenizing without them; the counts equal."""
    from normscope.inputs import JUNK_TOKENS, find_junk

    tok = bundled_encoder.hf_tokenizer
    texts = MIXED + ["\U0001F600\U0001F680", "[CLS] [SEP]", "[UNK]", "\U0001F600 ok", "", " \u200b "]
    shared = bundled_encoder.token_ids(texts)
    a = find_junk(texts, tokenizer=tok, token_ids=shared)
    b = find_junk(texts, tokenizer=tok)
    assert (a.index, a.reasons) == (b.index, b.reasons)
    assert [texts[i] for i, r in zip(a.index, a.reasons) if r == JUNK_TOKENS] == ["\U0001F600\U0001F680", "[CLS] [SEP]", "[UNK]"]
    for got, ref in zip(bundled_encoder.token_counts(texts, token_ids=shared), bundled_encoder.token_counts(texts)):
        np.testing.assert_array_equal(got, ref)
    assert bundled_encoder.token_counts(texts)[1][1] > 256  # a long text: raw past the model's 256

    class AddsAWord:  # a fast tokenizer whose template adds a non-special token: the shared ids are not used
        is_fast = True
        all_special_ids, unk_token_id = tok.all_special_ids, tok.unk_token_id

        def __call__(self, texts, add_special_tokens=True, **kw):
            out = tok(texts, add_special_tokens=add_special_tokens, **kw)
            if add_special_tokens:
                word = tok.convert_tokens_to_ids("the")
                out["input_ids"] = [[word] + x for x in out["input_ids"]] if isinstance(texts, list) else [word] + out["input_ids"]
            return out

    fake = AddsAWord()
    c = find_junk(texts, tokenizer=fake, token_ids=fake(texts)["input_ids"])
    assert (c.index, c.reasons) == (b.index, b.reasons)
