"""sentence-transformers similarity functions (the MTEB wrapper is tested in test_retrieval_mteb.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normscope.errors import InputError
from normscope.extensions.integrations import norm_aware_similarity, norm_aware_similarity_pairwise
from normscope.scoring import score


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
