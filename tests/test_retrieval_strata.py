"""Pre-specified strata: Holm's step-down correction, quartile assignment, and each stratum's paired numbers."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.retrieval.evaluate import paired_randomization_test
from normscope.retrieval.strata import holm, quartiles, strata_study


def test_holm_by_hand():
    # sorted p: 0.01, 0.02, 0.03, 0.04 (m = 4): 4*0.01, 3*0.02, 2*0.03, 1*0.04 -> running max 0.04, 0.06, 0.06, 0.06
    np.testing.assert_allclose(holm([0.03, 0.01, 0.04, 0.02]), [0.06, 0.04, 0.06, 0.06], atol=1e-15)
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])
    out = holm([0.01, np.nan, 0.02])  # NaN is left out of the family (m = 2)
    assert out[0] == pytest.approx(0.02) and np.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_quartiles_edges_and_missing():
    x = np.array([1.0, 2, 3, 4, 5, 6, 7, 8, np.nan])
    q, edges = quartiles(x)
    assert edges == pytest.approx([2.75, 4.5, 6.25])  # numpy linear quantiles of 1..8
    assert q.tolist() == [1, 1, 2, 2, 3, 3, 4, 4, 0]
    q2, _ = quartiles(np.array([1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0]))  # a value on an edge goes to the lower quartile
    assert q2[1] == q2[2] == q2[3]
    with pytest.raises(InputError, match="at least 4"):
        quartiles([1.0, np.nan, 2.0])


def test_strata_numbers_equal_direct_computation(rng):
    n = 80
    cos = rng.random(n)
    gain = np.where(np.arange(n) % 2 == 0, 0.1, 0.0)  # the scorer gains only on even queries
    x = np.clip(cos + gain, 0, 1)
    cov = {"query_norm": rng.normal(5, 1, n), "query_zipf": np.where(np.arange(n) < 4, np.nan, rng.normal(4, 1, n)),
           "top_doc_norm": np.arange(n) % 2 + rng.random(n) * 0.1}  # the even queries are top_doc_norm Q1/Q2
    out = strata_study({"cosine": cos, "inverse_norm": x}, cov, n_boot=200, n_permutations=500, seed=3)
    rows = out["scorers"]["inverse_norm"]
    assert len(rows) == 12 and out["stratifiers"]["query_zipf"]["n_left_out"] == 4
    q, _ = quartiles(cov["top_doc_norm"])
    for r in rows:
        if r["stratifier"] != "top_doc_norm":
            continue
        m = q == r["quartile"]
        assert r["n"] == m.sum() and r["mean_delta"] == pytest.approx((x[m] - cos[m]).mean(), abs=1e-12)
        assert r["relative"] == pytest.approx(x[m].mean() / cos[m].mean() - 1, abs=1e-12)
        assert r["p"] == paired_randomization_test(x[m], cos[m], n_permutations=500, seed=3)
    by = {(r["stratifier"], r["quartile"]): r for r in rows}
    assert by[("top_doc_norm", 1)]["mean_delta_ci"][0] > 0 and by[("top_doc_norm", 4)]["mean_delta"] == 0.0
    np.testing.assert_allclose([r["p_holm"] for r in rows], holm([r["p"] for r in rows]), atol=1e-15)
    # too few values with a covariate: that stratifier is not computed, the others still are
    few = strata_study({"cosine": cos, "dot": x}, {"query_norm": cov["query_norm"], "query_zipf": np.full(n, np.nan)},
                       n_boot=50, n_permutations=100)
    assert few["stratifiers"]["query_zipf"]["status"] == "not computed" and len(few["scorers"]["dot"]) == 4
    assert "4 strata" in few["correction"]
    with pytest.raises(InputError, match="unknown stratifier"):
        strata_study({"cosine": cos}, {"length": cos})
