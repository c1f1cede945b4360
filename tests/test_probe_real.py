"""Probe on the real bundled all-MiniLM-L6-v2 (small: P=16, K=2, B=8)."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from _probe_call import run_probe
from normscope.probes import TextEncoderAdapter, probe_moments, symmetric_info_nce

PAIRS = (
    ["dog", "cat", "bank", "river", "piano", "spring", "light", "novel", "charge", "court", "bat", "pitch"],
    [
        "a domesticated carnivorous mammal kept as a pet",
        "a small domesticated feline",
        "a financial institution that accepts deposits",
        "a large natural stream of water",
        "a keyboard instrument with hammers striking strings",
        "the season of growth after winter",
        "electromagnetic radiation visible to the eye",
        "an extended fictional work in prose",
        "the quantity of unbalanced electricity in a body",
        "an assembly to conduct judicial business",
        "a nocturnal flying mouselike mammal",
        "the property of sound that varies with frequency",
    ],
)
ITEMS = ["apple", "the theory of relativity", "bank", "run", "quantum chromodynamics", "hello", "free", "light",
         "spring", "novel", "charge", "a very small grey cat", "justice", "water", "music", " ".join(["word"] * 40)]


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_real_minilm_probe_small(bundled_encoder, one_thread):
    auto = bundled_encoder.module[0].auto_model
    before = auto.config._attn_implementation
    # a max length of 24 tokens (restored below) makes the 40-word item too long, cheaply
    old_len = (bundled_encoder.max_seq_length, bundled_encoder.model.max_seq_length)
    bundled_encoder.max_seq_length = bundled_encoder.model.max_seq_length = 24
    try:
        res = run_probe(bundled_encoder, ITEMS, PAIRS, batch_size=8, batches=2, seed=0, n_boot=200)
        ref = np.linalg.norm(bundled_encoder.encode(ITEMS), axis=1)
    finally:
        bundled_encoder.max_seq_length, bundled_encoder.model.max_seq_length = old_len
    assert auto.config._attn_implementation == before  # eager attention was switched back
    s = res.summary
    assert s["n_items"] == 16 and s["batches"] == 2 and s["batch_size"] == 8
    # MiniLM training values, looked up by the weights' fingerprint: tau 0.05, peak lr 2e-5, no weight decay
    assert s["tau"] == 0.05 and s["lr"] == 2e-5 and s["weight_decay"] is None
    assert s["decay_reading"] == "trained_without_decay" and s["training"]["weight_decay"]["value"] == 0.0
    assert all(s["training"][k]["source"] for k in ("optimizer", "lr", "weight_decay", "batch_size", "loss", "tau"))
    assert s["n_truncated"] == 1 and s["max_seq_length"] == 24  # the 40-word item exceeds 24 tokens
    assert any("AdamW" in c for c in s["caveats"]) and any("B=8" in c for c in s["caveats"])
    assert s["attention"] and "eager" in s["attention"][0]
    # observed norms equal the encoder's own (sdpa) encode path
    np.testing.assert_allclose(res.items["r"], ref, rtol=1e-4)
    it = res.items
    assert np.isfinite(it[["d1", "d2", "s", "heat", "drift", "q"]].to_numpy()).all()
    assert s["n_negative_lambda_rad"] == int((it["lambda_rad_per_lambda"] < 0).sum())
    assert it["lambda_rad"].isna().all() and it["r_eq"].isna().all()  # no decay: not predictions for this checkpoint
    # the c = 0 reading of (E7): R^2 = Sigma^2 / (2|D~|) for inward drift, undefined otherwise
    inward = it["drift"] < 0
    np.testing.assert_allclose(it.loc[inward, "r_eq_nodecay"], np.sqrt(it.loc[inward, "heat"] / (-2 * it.loc[inward, "drift"])), rtol=1e-12)
    assert it.loc[~inward, "r_eq_nodecay"].isna().all()


def test_real_minilm_jvp_matches_float64_fd(bundled_encoder, one_thread):
    """Eager-attention JVP through the transformer equals a float64 central difference."""
    ad = TextEncoderAdapter(bundled_encoder)
    try:
        items = ITEMS[:4]
        m = probe_moments(ad, items, PAIRS, batch_size=8, batches=1, tau=0.05, seed=1)
        from normscope.probes import sample_pair_batches

        idx = sample_pair_batches(len(PAIRS[0]), 8, 1, 1)[0]
        theta = {k: v.detach().clone().requires_grad_(True) for k, v in ad.parameters().items()}
        zl = ad.embed(theta, ad.features(PAIRS[0], idx, "query"), "query")
        zr = ad.embed(theta, ad.features(PAIRS[1], idx, "doc"), "doc")
        grads = torch.autograd.grad(symmetric_info_nce(zl, zr, 0.05), list(theta.values()), allow_unused=True)
        g = {k: (gr if gr is not None else torch.zeros_like(theta[k])) for k, gr in zip(theta, grads)}
        ad64 = ad.with_dtype(torch.float64)
        th64 = {k: v.double() for k, v in ad64.parameters().items()}
        f = ad64.features(items, range(4), "query")
        with torch.no_grad():
            z = ad64.embed(th64, f, "query")
            h = 1e-3 / float(torch.sqrt(sum((v.double() ** 2).sum() for v in g.values())))
            zp = ad64.embed({k: th64[k] - h * g[k].double() for k in th64}, f, "query")
            zm = ad64.embed({k: th64[k] + h * g[k].double() for k in th64}, f, "query")
        a_fd = (zp - zm) / (2 * h)
        za_fd = (z * a_fd).sum(1).numpy()
        aa_fd = (a_fd**2).sum(1).numpy()
        np.testing.assert_allclose(m.aa[0], aa_fd, rtol=1e-4)
        np.testing.assert_allclose(m.za[0], za_fd, rtol=1e-3, atol=1e-4 * np.sqrt(aa_fd.max()) * float(z.norm(dim=1).max()))
    finally:
        ad.close()


def test_real_minilm_lambda_rad_of_final_layernorm_is_one(bundled_encoder, one_thread):
    """(E4) with only the final LayerNorm gain and bias decayed: the mean-pooled output is exactly
    1-homogeneous in them, so lambda_rad / lambda = 1 for every item (docs/theory.md section 9)."""
    ad = TextEncoderAdapter(bundled_encoder)
    try:
        last = max(int(n.split("encoder.layer.")[1].split(".")[0]) for n in ad.parameters() if "encoder.layer." in n)
        final_ln = f"encoder.layer.{last}.output.LayerNorm."
        m = probe_moments(ad, ITEMS[:5], PAIRS, batch_size=4, batches=1, tau=0.05, decay_mask=lambda n, v: final_ln in n)
    finally:
        ad.close()
    np.testing.assert_allclose(m.zjd / m.r**2, 1.0, rtol=1e-5)


@pytest.mark.parametrize("backend", ["sentence-transformers", "huggingface"])
def test_float64_copy_keeps_each_backends_forward(backend, one_thread):
    """The float64 twin of the finite differences runs the backend's own forward on the copied weights
    (sentence-transformers: dict in, pooled dict out; Hugging Face AutoModel: ``**features``, then mean
    pooling): its vectors equal the encoder's float32 ``encode`` to float32 rounding."""
    from normscope.encoders import load_encoder
    from normscope.encoders.bundled import bundled_model_path

    enc = load_encoder(str(bundled_model_path()), backend=backend, pooling="mean" if backend == "huggingface" else None)
    ad = TextEncoderAdapter(enc)
    try:
        ad64 = ad.with_dtype(torch.float64)
        th64 = {k: v.double() for k, v in ad64.parameters().items()}
        assert all(v.dtype == torch.float64 for v in th64.values())
        with torch.no_grad():
            z64 = ad64.embed(th64, ad64.features(ITEMS, range(len(ITEMS)), "query"), "query")
        assert z64.dtype == torch.float64 and z64.shape == (len(ITEMS), enc.dim)
        np.testing.assert_allclose(z64.numpy(), enc.encode(ITEMS).astype(np.float64), rtol=0, atol=2e-5)
        assert next(iter(enc.module.parameters())).dtype == torch.float32  # the encoder itself untouched
    finally:
        ad.close()
