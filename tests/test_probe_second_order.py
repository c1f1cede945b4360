"""The exact second-order radial term (forward-over-forward AD) against closed forms and float64 differences.

- ``second_directional`` equals hand-derived second derivatives: a layer norm whose value along the line is
  ``-t / sqrt(1 + t^2)`` (PyTorch's own nested rule gets this one wrong, pytorch/pytorch#196700) and a
  tanh MLP;
- on a tiny random BERT (transformers, float64) it equals Richardson-extrapolated float64 central
  differences, and the probe's D2 with ``second_order='jvp'`` equals ``'fd'``'s within the differences' error;
- the float64 check catches a wrong second-order rule (the composed norms switched off): ``auto`` falls back
  to differences and says why, ``jvp`` refuses;
- (slow) on 50 MiniLM words the probe's outputs with the new default equal the float64-difference ones.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from normscope.errors import InputError, ModelError
from normscope.probes import ModuleAdapter, probe_moments
from normscope.probes.second_order import ComposedNorms, second_directional


def test_layer_norm_second_derivative_equals_closed_form():
    """x = (t, 0), weight (1, 2), eps 0.25: sum(LN(x)) = -t / sqrt(1 + t^2), whose second derivative is
    3 t (1 + t^2)^(-5/2); c is half of it. PyTorch's own nested rule returns -0.385 instead of 0.775 at 0.7."""
    t0 = 0.7

    def f(p):
        x = torch.stack((p["t"], torch.zeros((), dtype=torch.float64))).reshape(1, 2)
        return F.layer_norm(x, [2], weight=torch.tensor([1.0, 2.0], dtype=torch.float64),
                            bias=torch.zeros(2, dtype=torch.float64), eps=0.25).sum().reshape(1, 1)

    theta, v = {"t": torch.tensor(t0, dtype=torch.float64)}, {"t": torch.tensor(1.0, dtype=torch.float64)}
    z, a, c = second_directional(f, theta, v)
    assert float(z) == pytest.approx(-t0 / math.sqrt(1 + t0**2), rel=1e-14)
    assert float(a) == pytest.approx(-((1 + t0**2) ** -1.5), rel=1e-12)
    assert float(c) == pytest.approx(0.5 * 3 * t0 * (1 + t0**2) ** -2.5, rel=1e-12)  # 0.5 * 0.7749142...
    assert float(2 * c) == pytest.approx(0.7749142079590942, rel=1e-12)


def test_tanh_mlp_second_derivative_equals_closed_form():
    """f = W2 tanh(W1 x + b1) along theta + t v: h = h0 + t h1, s = tanh(h), s' = (1 - s^2) h1,
    s'' = -2 s (1 - s^2) h1^2, and f'' = 2 V2 s' + W2 s''."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(5, 4, generator=gen, dtype=torch.float64)
    theta = {n: torch.randn(*s, generator=gen, dtype=torch.float64) for n, s in (("w1", (6, 4)), ("b1", (6,)), ("w2", (3, 6)))}
    v = {n: torch.randn(*t.shape, generator=gen, dtype=torch.float64) for n, t in theta.items()}

    def f(p):
        return torch.tanh(x @ p["w1"].T + p["b1"]) @ p["w2"].T

    _, a, c = second_directional(f, theta, v)
    h1 = x @ v["w1"].T + v["b1"]
    s = torch.tanh(x @ theta["w1"].T + theta["b1"])
    s1, s2 = (1 - s**2) * h1, -2 * s * (1 - s**2) * h1**2
    torch.testing.assert_close(a, s @ v["w2"].T + s1 @ theta["w2"].T, rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(c, 0.5 * (2 * s1 @ v["w2"].T + s2 @ theta["w2"].T), rtol=1e-12, atol=1e-13)


def _tiny_bert(seed=0):
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(seed)
    cfg = transformers.BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                  intermediate_size=32, max_position_embeddings=16, attn_implementation="eager")
    bert = transformers.BertModel(cfg, add_pooling_layer=False).double().eval()

    class MeanPooled(torch.nn.Module):  # the sentence-transformers shape: mean of the last hidden states
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids):
            return self.bert(input_ids=ids).last_hidden_state.mean(1)

    return MeanPooled()


def _richardson_d2(model, theta, v, ids, h):
    from torch.func import functional_call

    def d2(eps):
        with torch.no_grad():
            z0 = functional_call(model, theta, (ids,))
            zp = functional_call(model, {n: theta[n] + eps * v[n] for n in theta}, (ids,))
            zm = functional_call(model, {n: theta[n] - eps * v[n] for n in theta}, (ids,))
        return ((zp - z0) + (zm - z0)) / (2 * eps * eps)

    return (4 * d2(h / 2) - d2(h)) / 3, d2(h) - d2(h / 2)


def test_tiny_bert_second_derivative_equals_float64_differences():
    from torch.func import functional_call

    model = _tiny_bert()
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 50, (6, 7), generator=gen)
    theta = {n: p.detach() for n, p in model.named_parameters()}
    v = {n: torch.randn(*p.shape, generator=gen, dtype=torch.float64) * 0.05 for n, p in theta.items()}
    z, _, c = second_directional(lambda p: functional_call(model, p, (ids,)), theta, v)
    ref, fd_err = _richardson_d2(model, theta, v, ids, 1e-3)
    scale = float(ref.abs().max())
    assert float(fd_err.abs().max()) / scale < 1e-3  # the differences resolve c (a smooth model)
    assert float((c - ref).abs().max()) / scale < 1e-8
    # the same model without the composed norms: PyTorch's layer-norm rule misses by far more than that
    from torch.func import jvp

    (_, _), (_, h) = jvp(lambda p: jvp(lambda q: functional_call(model, q, (ids,)), (p,), (v,)), (theta,), (v,))
    assert float((0.5 * h - ref).abs().max()) / scale > 1e-2


def _bert_probe_data(seed=2):
    gen = torch.Generator().manual_seed(seed)
    items = torch.randint(0, 50, (10, 5), generator=gen)
    left = torch.randint(0, 50, (24, 5), generator=gen)
    right = torch.randint(0, 50, (24, 5), generator=gen)
    return items, left, right


def test_probe_d2_by_nested_jvp_equals_float64_differences_on_tiny_bert():
    model = _tiny_bert().float()
    items, left, right = _bert_probe_data()
    kw = dict(batch_size=8, batches=2, tau=0.1, seed=0, chunk_size=4)
    m_jvp = probe_moments(ModuleAdapter(model), items, (left, right), **kw)  # default: auto -> jvp
    m_fd = probe_moments(ModuleAdapter(model), items, (left, right), second_order="fd", **kw)
    assert m_jvp.second_order == "jvp" and m_fd.second_order == "fd" and m_jvp.second_order_note is None
    chk = m_jvp.second_order_check
    assert chk["verdict"] == "passed" and chk["max_rel_diff"] < 1e-4 and chk["items"] == 4  # chunk of 4 < 32
    assert np.isnan(m_jvp.eps).all() and (m_fd.eps > 0).all()
    scale = np.abs(m_fd.zc).mean()
    assert np.abs(m_jvp.zc - m_fd.zc).max() / scale < 1e-3  # the float64 differences' own error at 3e-3
    np.testing.assert_allclose(m_jvp.za, m_fd.za, rtol=1e-5, atol=1e-6 * np.abs(m_fd.za).max())
    np.testing.assert_allclose(m_jvp.aa, m_fd.aa, rtol=1e-5)
    np.testing.assert_array_equal(m_jvp.r, m_fd.r)


def test_wrong_second_order_rule_is_caught(monkeypatch):
    """Without the composed norms PyTorch's layer-norm rule is wrong: auto falls back, jvp refuses."""
    model = _tiny_bert().float()
    items, left, right = _bert_probe_data()
    kw = dict(batch_size=8, batches=2, tau=0.1, seed=0, chunk_size=4)
    m_fd = probe_moments(ModuleAdapter(model), items, (left, right), second_order="fd", **kw)
    monkeypatch.setattr("normscope.probes.second_order.ComposedNorms", contextlib.nullcontext)
    with pytest.warns(RuntimeWarning, match="second-order forward rule is wrong"):
        m = probe_moments(ModuleAdapter(model), items, (left, right), **kw)
    assert m.second_order == "fd" and m.second_order_check["verdict"] == "failed"
    assert "finite differences instead" in m.second_order_note
    np.testing.assert_array_equal(m.zc, m_fd.zc)  # the whole run by differences, batch 0 included
    np.testing.assert_array_equal(m.za, m_fd.za)
    with pytest.raises(ModelError, match="second_order='fd'"):
        probe_moments(ModuleAdapter(model), items, (left, right), second_order="jvp", **kw)
    with pytest.raises(InputError, match="second_order"):
        probe_moments(ModuleAdapter(model), items, (left, right), second_order="hessian", **kw)


def test_composed_norms_forward_equals_fused_kernels():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 6, generator=gen, dtype=torch.float64)
    w, b = torch.randn(6, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    rm, rv = torch.randn(4, generator=gen, dtype=torch.float64), torch.rand(4, generator=gen, dtype=torch.float64) + 0.5
    w4, b4 = torch.randn(4, generator=gen, dtype=torch.float64), torch.randn(4, generator=gen, dtype=torch.float64)
    fused = (F.layer_norm(x, (6,), w, b, 1e-5), F.batch_norm(x, rm, rv, w4, b4, training=False),
             F.batch_norm(x, None, None, w4, b4, training=True))
    with ComposedNorms():
        composed = (F.layer_norm(x, (6,), w, b, 1e-5), F.batch_norm(x, rm, rv, w4, b4, training=False),
                    F.batch_norm(x, None, None, w4, b4, training=True))
    for u, c in zip(fused, composed):
        torch.testing.assert_close(c, u, rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_minilm_probe_outputs_equal_the_float64_difference_default(bundled_encoder, shared_data):
    """50 MiniLM words, K = 2, B = 32 WordNet (term, gloss) pairs: the nested-JVP default against float64 differences at
    3e-3 (the previous default). D2 agrees within the differences' own error (measured on MiniLM: max 2e-4
    of mean |D2|, docs/probe.md), first-order quantities to float32 rounding, and the per-item outputs
    (drift, q, R_eq) follow."""
    from normscope.datasets import wordfreq_words
    from normscope.pairs import load_pairs
    from _probe_call import run_probe  # flat keywords onto the request

    words = wordfreq_words(50)
    pairs = load_pairs("wordnet")
    kw = dict(batch_size=32, batches=2, tau=0.05, lr=2e-5, seed=0, n_boot=20)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        new = run_probe(bundled_encoder, words, pairs, **kw)
        old = run_probe(bundled_encoder, words, pairs, second_order="fd", **kw)
    finally:  # restored: left at 1, every later test in the session ran torch on one thread
        torch.set_num_threads(threads)
    assert new.second_order["method"] == "jvp" and old.second_order["method"] == "fd"
    assert new.second_order["check"]["verdict"] == "passed"
    a, b = new.items.set_index("id"), old.items.set_index("id")
    assert list(a.index) == list(b.index) and len(a) == 50
    d2_scale = np.abs(b["d2"]).mean()
    assert np.abs(a["d2"] - b["d2"]).max() / d2_scale < 1e-3
    for col in ("r", "d1", "s"):
        np.testing.assert_allclose(a[col], b[col], rtol=1e-4, atol=1e-5 * np.abs(b[col]).max())
    for col in ("drift", "heat", "q", "r_eq_cfit"):
        ok = np.isfinite(b[col])
        np.testing.assert_allclose(a[col][ok], b[col][ok], rtol=1e-3, atol=1e-3 * np.abs(b[col][ok]).mean())
