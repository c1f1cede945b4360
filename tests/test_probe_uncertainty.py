"""Batch-aware uncertainty of the probe, checked against independent computations.

- the two-stage (pigeonhole) bootstrap of a grand mean has the closed-form variance
  ``mean(a^2)/K + mean(b^2)/P + mean(e^2)/(KP)`` (row, column, interaction effects);
- the probe's two-stage CIs equal a brute-force loop over the same draws that recomputes heat,
  drift, q, c_fit and the (E7) root by hand and correlates with scipy;
- the row-wise NaN-aware Pearson/Spearman equals scipy on each row;
- k_convergence uses the first K/4, K/2, K batches.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from normscope.probes import ProbeMoments, crossed_bootstrap
from normscope.probes.uncertainty import batch_item_cis, k_convergence, percentile_ci, rowwise_correlations


def test_crossed_bootstrap_grand_mean_variance_matches_closed_form():
    rng = np.random.default_rng(0)
    k, p = 6, 11
    x = rng.normal(size=(k, 1)) * 2.0 + rng.normal(size=(1, p)) + 0.5 * rng.normal(size=(k, p))
    mu = x.mean()
    a = x.mean(axis=1) - mu
    b = x.mean(axis=0) - mu
    e = x - mu - a[:, None] - b[None, :]
    closed = np.mean(a**2) / k + np.mean(b**2) / p + np.mean(e**2) / (k * p)

    def grand_mean(counts, idx):  # sum_k c_k x_{k, i} over drawn items, / (K P)
        w = counts / counts.sum(axis=1, keepdims=True)
        rows = w @ x  # (m, P) batch-weighted item means
        return np.take_along_axis(rows, idx, axis=1).mean(axis=1)

    boot = crossed_bootstrap(grand_mean, k, p, n_boot=40000, seed=1, block=4096)[:, 0]
    assert boot.mean() == pytest.approx(mu, abs=4 * np.sqrt(closed / 40000))
    assert boot.var() == pytest.approx(closed, rel=0.03)  # MC error of a variance at n = 40000: ~0.7 %
    # and it is larger than what resampling items alone gives (the batch term is real here)
    assert boot.var() > np.mean(b**2) / p * 1.5


def test_crossed_bootstrap_stream_does_not_depend_on_block():
    f = lambda c, i: np.c_[c[:, :2], i[:, :3]]  # noqa: E731
    a = crossed_bootstrap(f, 5, 9, n_boot=37, seed=3, block=4)
    b = crossed_bootstrap(f, 5, 9, n_boot=37, seed=3, block=100)
    np.testing.assert_array_equal(a, b)


def test_rowwise_correlations_match_scipy_with_nans():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5, 30))
    y = x * 0.5 + rng.normal(size=(5, 30))
    x[0, :4] = np.nan
    y[1, 10:15] = np.inf
    x[2] = np.round(x[2])  # ties
    pe, sp = rowwise_correlations(x, y)
    for i in range(5):
        ok = np.isfinite(x[i]) & np.isfinite(y[i])
        assert pe[i] == pytest.approx(sps.pearsonr(x[i, ok], y[i, ok]).statistic, abs=1e-12)
        assert sp[i] == pytest.approx(sps.spearmanr(x[i, ok], y[i, ok]).statistic, abs=1e-12)
    pe, sp = rowwise_correlations(np.ones((1, 5)), np.arange(5.0)[None])
    assert np.isnan(pe[0]) and np.isnan(sp[0])


def _moments(k=5, p=14, seed=0):
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.5, 2.0, p)
    return ProbeMoments(
        r=r, za=rng.normal(0.05, 0.3, size=(k, p)) * r**2, aa=rng.gamma(2.0, 0.5, size=(k, p)) * (1 + r)[None, :],
        zc=rng.normal(-1.0, 0.5, size=(k, p)), a_sum=np.zeros((p, 3)), zjd=rng.normal(0.3, 1.0, p) * r**2,
        eps=np.ones((k, 1)), losses=np.ones(k), grad_norms=np.ones(k),
    )


def _brute_force(m, eta, lam, n_boot, seed):
    """Independent recomputation: explicit loops, the (E7) root written out, scipy correlations."""
    k, p = m.za.shape
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(k, [1 / k] * k, size=n_boot)
    idx = rng.integers(0, p, size=(n_boot, p))
    out = {"heat": [], "drift": [], "cfit": [], "lam": []}
    for b in range(n_boot):
        w = counts[b] / k
        i = idx[b]
        d1 = sum(w[j] * m.za[j] for j in range(k))[i]
        d2 = sum(w[j] * m.zc[j] for j in range(k))[i]
        aa = sum(w[j] * m.aa[j] for j in range(k))[i]
        r = m.r[i]
        heat = eta**2 * r**2 * aa
        drift = eta * d1 + eta**2 * d2
        q = drift / r**2 + heat / (2 * r**4)
        c_fit = np.median(q)
        req = np.sqrt((drift + np.sqrt(drift**2 + 2 * c_fit * heat)) / (2 * c_fit)) if c_fit > 0 else np.full(p, np.nan)
        c = eta * lam * m.zjd[i] / r**2
        ok = c > 0
        req_l = np.sqrt((drift[ok] + np.sqrt(drift[ok] ** 2 + 2 * c[ok] * heat[ok])) / (2 * c[ok]))
        out["heat"].append(sps.spearmanr(r, heat).statistic)
        out["drift"].append(sps.pearsonr(r, drift).statistic)
        out["cfit"].append(sps.spearmanr(req, r).statistic if c_fit > 0 else np.nan)
        out["lam"].append(sps.spearmanr(req_l, r[ok]).statistic)
    return {key: np.nanpercentile(v, [2.5, 97.5]) for key, v in out.items()}


def test_two_stage_ci_equals_brute_force_loop():
    m = _moments()
    eta, lam = 0.1, 0.01
    specs = [("corr_norm_heat", "r", "heat"), ("corr_norm_drift", "r", "drift"), ("corr_req_norm", "r_eq_cfit", "r"),
             ("corr_req_lambda_rad_norm", "r_eq", "r")]
    got = batch_item_cis(m, specs, eta=eta, weight_decay=lam, without_decay=False, n_boot=300, seed=4)
    ref = _brute_force(m, eta, lam, 300, 4)
    np.testing.assert_allclose(got["corr_norm_heat"]["spearman"], ref["heat"], rtol=1e-10)
    np.testing.assert_allclose(got["corr_norm_drift"]["pearson"], ref["drift"], rtol=1e-10)
    np.testing.assert_allclose(got["corr_req_norm"]["spearman"], ref["cfit"], rtol=1e-10)
    np.testing.assert_allclose(got["corr_req_lambda_rad_norm"]["spearman"], ref["lam"], rtol=1e-10)


def test_k_convergence_uses_nested_first_batches():
    m = _moments(k=8)
    specs = [("corr_norm_heat", "r", "heat"), ("corr_norm_drift", "r", "drift")]
    kc = k_convergence(m, specs, eta=0.1, weight_decay=None, without_decay=False, n_boot=50, seed=0)
    assert [row["batches"] for row in kc["rows"]] == [2, 4, 8]
    for row in kc["rows"]:
        kk = row["batches"]
        r = m.r
        heat = 0.01 * r**2 * m.aa[:kk].mean(axis=0)
        drift = 0.1 * m.za[:kk].mean(axis=0) + 0.01 * m.zc[:kk].mean(axis=0)
        assert row["corr_norm_heat"]["spearman"] == pytest.approx(sps.spearmanr(r, heat).statistic, abs=1e-12)
        assert row["corr_norm_drift"]["spearman"] == pytest.approx(sps.spearmanr(r, drift).statistic, abs=1e-12)
        lo, hi = row["corr_norm_heat"]["ci"]
        assert lo <= hi
    assert percentile_ci(np.array([[np.nan], [np.nan]])) == [[None, None]]
