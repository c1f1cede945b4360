"""``normscope inspect``: planted faults in one set (NaN, Inf, near-zero, duplicates) are found and counted; with two
sets, planted shifts (another model = a rotation with the same norms; the same model on another corpus = shifted
mean direction; rescaled norms) are flagged, and a clean copy or a random half of the same set is not."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.stats import ks_2samp

from normscope.errors import InputError
from normscope.extensions.vector_health import (
    NEAR_ZERO_FLOOR,
    compare_sets,
    inspect_files,
    mean_direction_test,
    vector_health,
)


def _corpus(n=400, d=32, seed=0, centre=None):
    """Anisotropic vectors like an encoder's: a common mean direction plus noise, norms about 5."""
    rng = np.random.default_rng(seed)
    mu = np.ones(d) / np.sqrt(d) if centre is None else centre
    X = 2.0 * mu + rng.normal(size=(n, d)) / np.sqrt(d) * 1.5
    return (X * 2.5).astype(np.float32)


def _write(path, X, ids=None):
    arr = pa.FixedSizeListArray.from_arrays(pa.array(np.asarray(X, np.float32).ravel()), X.shape[1])
    ids = [f"d{i}" for i in range(len(X))] if ids is None else ids
    pq.write_table(pa.table({"id": ids, "vector": arr}), path)
    return path


def test_planted_faults_are_found_and_counted():
    X = _corpus(50)
    X[3, 5] = np.nan
    X[7, :] = np.inf
    X[11] = 0.0                      # exactly zero
    X[12] = 1e-5                     # norm 1e-5 * sqrt(32) = 5.7e-5 < 3.45e-4
    X[13] = 1e-4                     # norm 5.7e-4 >= the floor: not near-zero
    X[20] = X[30]                    # one duplicate pair
    X[40] = X[41] = X[42]            # one triple
    h = vector_health(X, [f"v{i}" for i in range(50)])
    assert (h["n"], h["dim"]) == (50, 32)
    assert h["nonfinite"] == {"count": 2, "nan_rows": 1, "inf_rows": 1, "ids": ["v3", "v7"]}
    assert h["near_zero"]["count"] == 2 and h["near_zero"]["exact_zero"] == 1
    assert h["near_zero"]["ids"] == ["v11", "v12"]
    assert h["duplicates"]["groups"] == 2 and h["duplicates"]["rows"] == 5 and h["duplicates"]["extra_rows"] == 3
    assert h["duplicates"]["examples"] == [["v20", "v30"], ["v40", "v41", "v42"]]
    finite = np.delete(np.arange(50), [3, 7])
    assert h["norms"]["median"] == pytest.approx(np.median(np.linalg.norm(X[finite].astype(np.float64), axis=1)))
    assert h["ok"] is False
    assert NEAR_ZERO_FLOOR == pytest.approx(3.4527e-4, rel=1e-4)


def test_a_clean_set_is_healthy_and_the_counts_do_not_depend_on_row_order():
    X = _corpus(60)
    h = vector_health(X)
    assert h["ok"] and h["nonfinite"]["count"] == h["near_zero"]["count"] == h["duplicates"]["groups"] == 0
    X[5] = X[9]
    perm = np.random.default_rng(1).permutation(60)
    a, b = vector_health(X), vector_health(X[perm])
    for key in ("nonfinite", "near_zero", "duplicates"):
        assert a[key]["count" if key != "duplicates" else "groups"] == b[key]["count" if key != "duplicates" else "groups"]
    assert a["norms"] == pytest.approx(b["norms"])


def test_another_model_with_the_same_norms_is_caught_by_the_mean_direction_only():
    A = _corpus(400, seed=0)
    Q, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(32, 32)))
    B = (_corpus(400, seed=1) @ Q).astype(np.float32)  # a rotation: same norm distribution, other coordinates
    c = compare_sets(A, B, n_perm=200)
    assert c["ks"]["p"] > 0.01                      # the norms alone do not see it
    assert c["mean_direction"]["p"] == pytest.approx(1 / 201)  # no permutation comes near
    assert c["mean_direction"]["cosine"] < 0.9
    assert c["flag"] and any("mean directions differ" in r for r in c["reasons"])
    # the KS figures are scipy's on the same norms
    ref = ks_2samp(np.linalg.norm(A.astype(np.float64), axis=1), np.linalg.norm(B.astype(np.float64), axis=1))
    assert c["ks"]["D"] == pytest.approx(ref.statistic) and c["ks"]["p"] == pytest.approx(ref.pvalue)


def test_the_same_model_on_another_corpus_and_rescaled_norms_are_flagged():
    d = 32
    other = np.ones(d) / np.sqrt(d)
    other[: d // 2] *= -0.2
    other /= np.linalg.norm(other)
    A, B = _corpus(300, seed=0), _corpus(300, seed=2, centre=other)
    c = compare_sets(A, B, n_perm=200)
    assert c["flag"] and c["mean_direction"]["p"] < 0.01
    scaled = compare_sets(A, 1.3 * _corpus(300, seed=3), n_perm=200)
    assert scaled["ks"]["p"] < 1e-6 and scaled["mean_direction"]["p"] > 0.01  # only the norms moved
    assert scaled["flag"] and any("norm distributions differ" in r for r in scaled["reasons"])


def test_a_copy_and_a_random_half_pass():
    A = _corpus(400, seed=0)
    copy = compare_sets(A, A.copy(), n_perm=200)
    assert not copy["flag"] and copy["ks"]["D"] == 0.0 and copy["mean_direction"]["cosine"] == pytest.approx(1.0)
    assert copy["mean_direction"]["p"] == 1.0 and copy["b_in_a"] == 1.0
    perm = np.random.default_rng(3).permutation(400)
    half = compare_sets(A[perm[:200]], A[perm[200:]], n_perm=200)
    assert not half["flag"] and half["b_in_a"] == 0.0


def test_mean_direction_p_by_hand_on_four_vectors():
    # A = {e1, e1}, B = {e2, e2}: cos(mu_A, mu_B) = 0; of the 6 splits of 4 vectors into 2 + 2, the 2 pure ones
    # give cos 0 and the 4 mixed ones cos 1, so P(cos_perm <= 0) = 1/3 and p -> (1 + n/3) / (1 + n)
    e1, e2 = np.eye(2)
    cos, p = mean_direction_test(np.array([e1, e1]), np.array([e2, e2]), n_perm=3000, seed=0)
    assert cos == pytest.approx(0.0)
    assert p == pytest.approx(1 / 3, abs=0.03)


def test_dimension_mismatch_and_recorded_models(tmp_path):
    A, B = _corpus(50, d=32), _corpus(50, d=16)
    c = compare_sets(A, B)
    assert c["mean_direction"] is None and c["flag"] and any("dimensions differ" in r for r in c["reasons"])
    with pytest.raises(InputError, match=">= 2 finite vectors"):
        compare_sets(A, np.zeros((5, 32)))
    with pytest.raises(InputError, match="n-perm"):
        compare_sets(A, A, n_perm=0)


def test_cli_inspect_files_and_json(tmp_path, capsys):
    from normscope.cli import run

    A = _corpus(200, seed=0)
    bad = A.copy()
    bad[4] = 0.0
    bad[9, 0] = np.nan
    pa_ = _write(tmp_path / "a.parquet", bad)
    np.save(tmp_path / "b.npy", A)
    js = tmp_path / "r.json"
    assert run(["inspect", str(pa_), str(tmp_path / "b.npy"), "--n-perm", "100", "--json", str(js)]) == 0
    out = capsys.readouterr()
    assert "PROBLEMS found" in out.out and "B: healthy" in out.out
    assert "no difference detected" in out.out
    assert "qdrant" in out.err
    res = json.loads(js.read_text())
    assert res["a"]["nonfinite"]["ids"] == ["d9"] and res["a"]["near_zero"]["ids"] == ["d4"]
    direct = inspect_files(pa_, tmp_path / "b.npy", n_perm=100)
    assert res["compare"]["ks"] == pytest.approx(direct["compare"]["ks"])
    assert res["compare"]["mean_direction"] == pytest.approx(direct["compare"]["mean_direction"])
    assert res["b"]["norms"] == pytest.approx(direct["b"]["norms"])
    assert run(["inspect", str(tmp_path / "missing.parquet")]) == 2


def test_the_flag_line_says_what_the_recorded_models_allow():
    """Two files that record the same model and differ are 'a shifted distribution', never 'another model' (a new user
    read 'another model' beside 'recorded models ... same'); different models: 'another model'; none recorded: either."""
    from normscope.cli.inspect import flag_line

    c = compare_sets(_corpus(200, seed=0), _corpus(200, seed=1, centre=-np.ones(32) / np.sqrt(32)), n_perm=100)
    assert c["flag"]
    for same, what in ((True, "a shifted distribution (both files record the same model)"),
                       (False, "another model"), (None, "another model or a shifted distribution")):
        line = flag_line({**c, "models": {"a": "m", "b": "m", "same": same}})
        assert line.startswith(f"B vs A: FLAGGED: {what}: ") and "mean directions differ" in line
        assert ("another model" in line) == (same is not True)
