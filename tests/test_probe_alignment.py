"""Per-item alignment of the probe: every per-item output is equivariant under a permutation of the input.

A tiny BERT built from a config (random weights, the bundled model's WordPiece tokenizer) probes
items of mixed token length, split over several chunks and more than one batch. Shuffling the
input order must give the same per-item values joined by id (issue 10, item 1), and the probe's
observed norm ``r`` must equal the norm that ``embed`` computes for the same text.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

from _probe_call import run_probe

ITEMS = [
    "apple", "the theory of relativity and its consequences for the measurement of time", "bank",
    "a very small grey cat sleeping on a warm windowsill", "run", "quantum chromodynamics", "free",
    "light travels faster than sound", "spring", "the court ruled that the contract was void", "novel",
    "music",
]
PAIRS = (
    ["dog", "cat", "bank", "river", "piano", "spring", "light", "novel"],
    ["a domesticated carnivorous mammal", "a small domesticated feline", "a financial institution",
     "a large natural stream of water", "a keyboard instrument", "the season after winter",
     "electromagnetic radiation visible to the eye", "an extended fictional work in prose"],
)


@pytest.fixture(scope="module")
def tiny_text_encoder(tmp_path_factory):
    """A 2-layer, 32-wide BERT with random weights (seed 0) and the bundled model's tokenizer."""
    from transformers import BertConfig, BertModel

    from normscope.encoders.bundled import bundled_model_path
    from normscope.encoders.sentence_transformers import SentenceTransformerEncoder

    src = bundled_model_path()
    d = tmp_path_factory.mktemp("tiny_bert")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64)
    BertModel(cfg).save_pretrained(d)
    for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(src / f, d / f)
    return SentenceTransformerEncoder(str(d))


COLUMNS = ["r", "d1", "d2", "s", "displacement", "heat", "drift", "heat_se", "drift_se", "s_var",
           "lambda_rad_per_lambda", "q", "r_eq_cfit"]


def _probe(enc, order):
    ids = [f"id{i}" for i in order]
    texts = [ITEMS[i] for i in order]
    res = run_probe(enc, texts, PAIRS, ids=ids, batch_size=4, batches=3, seed=1, chunk_size=3, n_boot=20,
                    tau=0.1, lr=1e-3)
    return res.items.set_index("id").sort_index()


def test_probe_per_item_values_are_permutation_equivariant(tiny_text_encoder):
    """Shuffled input order (mixed token lengths, 4+ chunks, 3 batches): identical per-item values by id."""
    n = len(ITEMS)
    a = _probe(tiny_text_encoder, range(n))
    perm = np.random.default_rng(7).permutation(n)
    b = _probe(tiny_text_encoder, perm)
    assert list(a.index) == list(b.index) and list(a["text"]) == list(b["text"])
    for col in COLUMNS:
        np.testing.assert_allclose(b[col].to_numpy(), a[col].to_numpy(), rtol=2e-4, atol=1e-9, err_msg=col)


def test_probe_norm_equals_embed_norm(tiny_text_encoder):
    """The probe's r is the norm that `embed` gives the same text (1e-5 relative)."""
    from normscope import embed_texts

    a = _probe(tiny_text_encoder, range(len(ITEMS)))
    table = embed_texts(ITEMS, [f"id{i}" for i in range(len(ITEMS))], encoder=tiny_text_encoder, cache=False)
    ref = dict(zip(table.ids, table.norms))
    np.testing.assert_allclose(a["r"].to_numpy(), [ref[i] for i in a.index], rtol=1e-5)


def test_probe_junk_rule_truncation_and_junk_error(tiny_text_encoder):
    """Junk items are left out and listed (the one junk rule), or refused with junk='error'; items longer
    than the model's max length (64 tokens here) are counted in n_truncated."""
    from normscope.errors import InputError

    long_item = " ".join(["river"] * 80)  # 82 tokens with [CLS] and [SEP]
    texts = ITEMS[:5] + ["   ", "\u200b\u200b", long_item]
    ids = [f"id{i}" for i in range(len(texts))]
    res = run_probe(tiny_text_encoder, texts, PAIRS, ids=ids, batch_size=4, batches=2, seed=0, n_boot=20, lr=1e-3)
    assert res.junk["count"] == 2 and res.junk["ids"] == ["id5", "id6"]
    assert list(res.items["id"]) == ["id0", "id1", "id2", "id3", "id4", "id7"] and res.n_items == 6
    assert res.n_truncated == 1 and any("junk probe items left out" in c for c in res.caveats)
    with pytest.raises(InputError, match="2 junk probe items found"):
        run_probe(tiny_text_encoder, texts, PAIRS, ids=ids, batch_size=4, batches=2, junk="error")


def test_as_adapter_checks_the_adapter_interface(tiny_text_encoder):
    """One adapter interface: a ProbeAdapter subclass must implement it all and set a floating dtype;
    duck-typed objects are refused."""
    from normscope.errors import ModelError
    from normscope.probes import ProbeAdapter, TextEncoderAdapter, as_adapter

    class Incomplete(ProbeAdapter):
        def parameters(self):
            return {}

    with pytest.raises(TypeError):
        Incomplete()

    class NoDtype(TextEncoderAdapter):
        pass

    ad = NoDtype(tiny_text_encoder)
    try:
        ad.dtype = None
        with pytest.raises(ModelError, match="dtype"):
            as_adapter(ad)
        ad.dtype = torch.float32
        assert as_adapter(ad) is ad
    finally:
        ad.close()

    class Duck:
        name, dtype = "duck", torch.float32

        def parameters(self): ...
        def features(self, data, idx, side): ...
        def embed(self, params, feats, side): ...
        def with_dtype(self, dtype): ...

    with pytest.raises(ModelError, match="ProbeAdapter"):
        as_adapter(Duck())


def test_bf16_pair_gradients_only_and_their_measured_error(tiny_text_encoder):
    """--precision bf16 on the probe changes only the K pair-gradient passes: the observed norms are the
    fp32 ones bit for bit, and the reported gradient error equals the one computed here from two gradients."""
    from normscope.probes import TextEncoderAdapter, symmetric_info_nce

    kw = dict(ids=[f"id{i}" for i in range(len(ITEMS))], batch_size=4, batches=2, seed=1, chunk_size=6, n_boot=20,
              tau=0.1, lr=1e-3)
    fp32 = run_probe(tiny_text_encoder, ITEMS, PAIRS, **kw)
    bf16 = run_probe(tiny_text_encoder, ITEMS, PAIRS, precision="bf16", **kw)
    assert fp32.precision == "fp32" and fp32.grad_error_vs_fp32 is None and bf16.precision == "bf16"
    np.testing.assert_array_equal(bf16.items["r"].to_numpy(), fp32.items["r"].to_numpy())
    # the same batch 0, gradients by hand: autocast bf16 vs fp32
    from normscope.pairs import sample_pair_batches

    ad = TextEncoderAdapter(tiny_text_encoder)
    try:
        theta = ad.parameters()
        b0 = sample_pair_batches(len(PAIRS[0]), 4, 2, 1)[0]
        fq, fd = ad.features(PAIRS[0], b0, "query"), ad.features(PAIRS[1], b0, "doc")

        def grad(bf16):
            th = {n: v.detach().clone().requires_grad_(True) for n, v in theta.items()}
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = symmetric_info_nce(ad.embed(th, fq, "query"), ad.embed(th, fd, "doc"), 0.1)
            gs = torch.autograd.grad(loss.float(), list(th.values()), allow_unused=True)
            return torch.cat([(g if g is not None else torch.zeros_like(v)).double().flatten()
                              for g, v in zip(gs, th.values())])

        g16, g32 = grad(True), grad(False)
    finally:
        ad.close()
    rel = float((g16 - g32).norm() / g32.norm())
    cos = float(g16 @ g32 / (g16.norm() * g32.norm()))
    assert bf16.grad_error_vs_fp32["rel_error"] == pytest.approx(rel, rel=1e-6)
    assert bf16.grad_error_vs_fp32["cosine"] == pytest.approx(cos, rel=1e-9)
    assert 0 < rel < 0.1 and cos > 0.99
