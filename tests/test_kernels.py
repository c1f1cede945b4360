"""oneDNN linear products for float32 CPU inference (issue 28, part 3): the same products as a float64
reference, and nothing outside inference-time float32 CPU products is touched."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from normscope.encoders.kernels import OneDNNLinear, linear_kernel_context, onednn_linear_available
from normscope.errors import InputError

pytestmark = pytest.mark.skipif(not onednn_linear_available(), reason="this torch build has no oneDNN linear op")

TEXTS = ["the", "a red apple", "justice", "quantum chromodynamics describes the strong force between quarks",
         "Scientific claims are verified against the abstracts of research papers, and each abstract is "
         "read sentence by sentence to find the rationale that supports or refutes the claim.", "cat"]


def _cases():
    g = torch.Generator().manual_seed(0)
    w, b = torch.randn(48, 40, generator=g), torch.randn(48, generator=g)
    yield "2-D", torch.randn(7, 40, generator=g), w, b
    yield "3-D", torch.randn(3, 11, 40, generator=g), w, b
    yield "no bias", torch.randn(5, 40, generator=g), w, None
    yield "non-contiguous input", torch.randn(2, 40, 9, generator=g).transpose(1, 2), w, b
    yield "transposed weight", torch.randn(6, 40, generator=g), torch.randn(40, 48, generator=g).t(), b


@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0])
def test_onednn_linear_is_the_float64_product_to_float32_rounding(case):
    _, x, w, b = case
    ref = x.double() @ w.double().t() + (b.double() if b is not None else 0.0)
    with torch.inference_mode(), OneDNNLinear() as mode:
        y = F.linear(x, w, b)
    assert mode.calls == 1 and y.dtype == torch.float32 and y.shape == ref.shape
    # float32 products of 40 terms of size ~1: rounding error well under 1e-5 of the row norm
    err = (y.double() - ref).norm(dim=-1) / ref.norm(dim=-1)
    assert float(err.max()) < 1e-6


def test_everything_but_inference_float32_cpu_products_is_left_to_aten():
    g = torch.Generator().manual_seed(1)
    x, w, b = torch.randn(4, 6, generator=g), torch.randn(3, 6, generator=g), torch.randn(3, generator=g)
    with OneDNNLinear() as mode:
        xg = x.clone().requires_grad_(True)
        y = F.linear(xg, w, b)  # not in inference mode: autograd keeps its own kernel and formula
        y.sum().backward()
        assert torch.equal(y, F.linear(x, w, b)) and torch.equal(xg.grad, w.sum(0).expand(4, 6))
        with torch.inference_mode():
            y64 = F.linear(x.double(), w.double(), b.double())  # float64 stays with aten
            with torch.autocast("cpu", dtype=torch.bfloat16):
                ybf = F.linear(x, w, b)  # a bf16 run keeps autocast's kernels
            empty = F.linear(torch.empty(0, 6), w, b)
    assert mode.calls == 0
    assert y64.dtype == torch.float64 and ybf.dtype == torch.bfloat16 and empty.shape == (0, 3)
    with torch.inference_mode(), OneDNNLinear() as mode:
        F.linear(x, w, b)
    assert mode.calls == 1


def test_minilm_vectors_under_either_kernel_match_a_float64_copy_of_the_model(bundled_encoder):
    """The bundled MiniLM's raw vectors of mixed-length texts, oneDNN (default) and aten, against the same
    model run in float64: both kernels are float32 rounding away from it, and from each other."""
    enc = copy.copy(bundled_encoder)  # an instance of its own, so the kernel setting stays here
    assert enc.linear_kernel == "onednn"
    one = enc.encode(TEXTS)
    enc.linear_kernel = "aten"
    aten = enc.encode(TEXTS)
    m64 = copy.deepcopy(bundled_encoder.model).double()
    with torch.inference_mode():
        ref = np.concatenate([m64(dict(bundled_encoder.model.preprocess([t])))["sentence_embedding"].numpy()
                              for t in TEXTS])
    rel = {k: np.linalg.norm(v - ref, axis=1) / np.linalg.norm(ref, axis=1) for k, v in (("onednn", one), ("aten", aten))}
    assert rel["onednn"].max() < 5e-6 and rel["aten"].max() < 5e-6, rel
    assert not np.array_equal(one, aten)  # the kernel did change: the products differ in their last bits
    r1, ra = np.linalg.norm(one, axis=1), np.linalg.norm(aten, axis=1)
    assert np.max(np.abs(r1 - ra) / ra) < 2e-6


def test_a_bf16_encoder_never_enters_the_onednn_mode(bundled_encoder):
    from torch.overrides import _get_current_function_mode_stack

    def modes():
        return [type(m).__name__ for m in _get_current_function_mode_stack()]

    bf = bundled_encoder.at_precision("bf16")
    with bf.inference():
        assert torch.is_inference_mode_enabled() and torch.is_autocast_enabled("cpu")
        assert modes() == []
        assert F.linear(torch.ones(2, 3), torch.ones(4, 3)).dtype == torch.bfloat16
    with bundled_encoder.inference():
        assert not torch.is_autocast_enabled("cpu")
        assert modes() == ["OneDNNLinearMode"]
        assert F.linear(torch.ones(2, 3), torch.ones(4, 3)).dtype == torch.float32
    assert modes() == []  # and it is left on exit


def test_an_unknown_kernel_is_a_one_line_input_error(bundled_encoder):
    with pytest.raises(InputError, match="linear_kernel"):
        linear_kernel_context("mkl")
    enc = copy.copy(bundled_encoder)
    enc.linear_kernel = "fast"
    with pytest.raises(InputError, match="linear_kernel"):
        enc.encode(["a"])
    assert not torch.is_inference_mode_enabled()  # the contexts entered before the error were left
