"""sentence-transformers similarity function and the MTEB wrapper (mteb itself not needed)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normscope.errors import InputError, ModelError
from normscope.retrieval.integrations import (
    NormAwareMTEBModel,
    evaluate_mteb,
    norm_aware_similarity,
    norm_aware_similarity_pairwise,
)
from normscope.retrieval.scoring import score


@pytest.mark.parametrize("scorer,param", [("cosine", None), ("dot", None), ("inverse_norm", 0.2), ("power", -1.3)])
def test_similarity_equals_scoring(rng, scorer, param):
    a = rng.normal(size=(5, 8)).astype(np.float32)
    b = (rng.normal(size=(9, 8)) * 2).astype(np.float32)
    sim = norm_aware_similarity(scorer, param)
    out = sim(torch.from_numpy(a), torch.from_numpy(b))
    assert isinstance(out, torch.Tensor) and out.shape == (5, 9)
    np.testing.assert_allclose(out.numpy(), score(a, b, scorer, param), rtol=1e-5, atol=1e-6)
    pw = norm_aware_similarity_pairwise(scorer, param)(a, b[:5])
    np.testing.assert_allclose(pw.numpy(), np.diag(score(a, b[:5], scorer, param)), rtol=1e-5, atol=1e-6)


def test_cosine_matches_sentence_transformers(rng):
    from sentence_transformers.util import cos_sim

    a, b = rng.normal(size=(3, 6)), rng.normal(size=(4, 6))
    np.testing.assert_allclose(norm_aware_similarity("cosine")(a, b).numpy(), cos_sim(a, b).numpy(), atol=1e-6)
    # 1-D inputs are single rows, as in cos_sim
    assert norm_aware_similarity("inverse_norm", 0.1)(a[0], b).shape == (1, 4)


def test_similarity_errors():
    with pytest.raises(InputError, match="unknown scorer"):
        norm_aware_similarity("l2")
    with pytest.raises(InputError, match="takes no parameter"):
        norm_aware_similarity("cosine", 0.5)
    sim = norm_aware_similarity("inverse_norm", -0.5)
    with pytest.raises(InputError, match=r"alpha=-0.5"):
        sim(torch.ones(1, 2), torch.tensor([[3.0, 0.0]]))  # 1 - 0.5*3 < 0


class _Toy:
    """Deterministic raw-vector encoder: character counts of a..d, plus length."""

    def encode(self, texts, batch_size=32, **kw):
        return np.array([[t.count(c) for c in "abcd"] + [len(t)] for t in texts], dtype=np.float32)


def test_mteb_wrapper_methods():
    m = NormAwareMTEBModel(_Toy(), "power", -1.0, name="toy")
    v1 = m.encode(["ab", "abcd", "dd"], task_name="SciFact", batch_size=2)  # MTEB v1 call
    batches = [{"text": ["ab", "abcd"]}, {"text": ["dd"]}]  # MTEB v2 DataLoader of batches
    v2 = m.encode(batches, task_metadata=None, hf_split="test", hf_subset="default", prompt_type=None)
    np.testing.assert_array_equal(v1, v2)
    assert v1.dtype == np.float32 and v1[1].tolist() == [1, 1, 1, 1, 4]  # raw, not normalised
    s = m.similarity(v1[:1], v1)
    np.testing.assert_allclose(s.numpy(), score(v1[:1], v1, "power", -1.0), rtol=1e-5)
    np.testing.assert_allclose(m.similarity_pairwise(v1, v1).numpy(), np.diag(score(v1, v1, "power", -1.0)), rtol=1e-5)
    assert m.name == "toy"


def test_mteb_missing_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "mteb", None)
    with pytest.raises(ModelError, match="optional extra 'mteb'"):
        evaluate_mteb(NormAwareMTEBModel(_Toy()), ["SciFact"])
