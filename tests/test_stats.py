"""normscope.stats against scipy and independent implementations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from normscope.errors import InputError
from normscope.stats import binned_means, correlation, partial_spearman


def _ranks_residual_partial(x, y, z):
    """Independent partial Spearman: numpy lstsq of ranks on [1, ranks(z)], Pearson of residuals."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    rz = np.column_stack([stats.rankdata(c) for c in np.atleast_2d(np.asarray(z).T)])
    a = np.column_stack([np.ones(len(x)), rz])
    ex = rx - a @ np.linalg.lstsq(a, rx, rcond=None)[0]
    ey = ry - a @ np.linalg.lstsq(a, ry, rcond=None)[0]
    return stats.pearsonr(ex, ey).statistic


@pytest.mark.parametrize("n", [5, 37, 500])
def test_point_estimates_match_scipy(n):
    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    y = 0.4 * x + rng.normal(size=n)
    y[: n // 3] = np.round(y[: n // 3])  # ties
    r = correlation(x, y, n_boot=50, n_perm=50)
    assert abs(r.pearson - stats.pearsonr(x, y).statistic) < 1e-12
    assert abs(r.spearman - stats.spearmanr(x, y).statistic) < 1e-12
    assert r.n == n and r.n_dropped == 0


def test_nan_pairs_dropped_and_counted():
    rng = np.random.default_rng(3)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    x[[1, 5]] = np.nan
    y[[5, 9, 11]] = np.nan
    r = correlation(x, y, n_boot=20, n_perm=20)
    ok = np.isfinite(x) & np.isfinite(y)
    assert r.n == 56 and r.n_dropped == 4
    assert abs(r.spearman - stats.spearmanr(x[ok], y[ok]).statistic) < 1e-12


def test_bootstrap_ci_coverage_close_to_nominal():
    # 300 simulated bivariate-normal samples (n=100, rho=0.5): the 95% percentile intervals must
    # contain the true Pearson rho and the true Spearman rho_s = (6/pi) asin(rho/2) ~95% of the time.
    rho = 0.5
    rho_s = 6 / math.pi * math.asin(rho / 2)
    rng = np.random.default_rng(2024)
    cov = [[1, rho], [rho, 1]]
    hit_p = hit_s = 0
    draws = 300
    for i in range(draws):
        d = rng.multivariate_normal([0, 0], cov, size=100)
        r = correlation(d[:, 0], d[:, 1], n_boot=600, n_perm=0, seed=i)
        hit_p += r.pearson_ci[0] <= rho <= r.pearson_ci[1]
        hit_s += r.spearman_ci[0] <= rho_s <= r.spearman_ci[1]
    assert 0.92 <= hit_p / draws <= 0.98
    assert 0.92 <= hit_s / draws <= 0.98


def test_ci_brackets_estimate_and_is_deterministic():
    rng = np.random.default_rng(7)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    a = correlation(x, y, seed=11)
    b = correlation(x, y, seed=11)
    assert a == b
    assert a.spearman_ci[0] < a.spearman < a.spearman_ci[1]
    assert a.pearson_ci[0] < a.pearson < a.pearson_ci[1]


def test_exact_permutation_p_matches_scipy_permutation_test():
    rng = np.random.default_rng(5)
    x = rng.normal(size=6)
    y = x + rng.normal(size=6)
    r = correlation(x, y, n_boot=10, n_perm=10_000)
    assert r.exact_p and r.n_perm == math.factorial(6)

    def stat_s(yy):
        return abs(stats.spearmanr(x, yy).statistic)

    def stat_p(yy):
        return abs(stats.pearsonr(x, yy).statistic)

    ref_s = stats.permutation_test((y,), stat_s, permutation_type="pairings", n_resamples=np.inf,
                                   alternative="greater", vectorized=False)
    ref_p = stats.permutation_test((y,), stat_p, permutation_type="pairings", n_resamples=np.inf,
                                   alternative="greater", vectorized=False)
    assert abs(r.p_value - ref_s.pvalue) < 1e-12
    assert abs(r.pearson_p - ref_p.pvalue) < 1e-12


def test_random_permutation_p_close_to_scipy():
    rng = np.random.default_rng(8)
    x = rng.normal(size=40)
    y = 0.25 * x + rng.normal(size=40)
    r = correlation(x, y, n_boot=10, n_perm=20_000)
    rx = stats.rankdata(x)

    def stat(yy, axis=-1):  # |Spearman| of x with each row of yy (scipy passes batches)
        ry = stats.rankdata(yy, axis=axis)
        a, b = rx - rx.mean(), ry - ry.mean(axis=axis, keepdims=True)
        return np.abs((b * a).sum(axis) / np.sqrt((a * a).sum() * (b * b).sum(axis)))

    ref = stats.permutation_test((y,), stat, permutation_type="pairings", n_resamples=20_000,
                                 alternative="greater", vectorized=True, rng=1)
    assert abs(stat(y) - abs(r.spearman)) < 1e-12
    # two independent Monte-Carlo p-values; SE ~ sqrt(p(1-p)/20000) each
    se = math.sqrt(ref.pvalue * (1 - ref.pvalue) / 20_000)
    assert abs(r.p_value - ref.pvalue) < 5 * math.sqrt(2) * se + 1e-4
    assert 1 / 20_001 <= r.p_value <= 1


def test_p_value_uniform_under_null():
    # under independence, P(p <= 0.05) ~ 0.05 (200 draws: 95% band about [0.02, 0.08])
    rng = np.random.default_rng(9)
    ps = [correlation(rng.normal(size=30), rng.normal(size=30), n_boot=0, n_perm=400, seed=i).p_value
          for i in range(200)]
    frac = np.mean(np.array(ps) <= 0.05)
    assert 0.015 <= frac <= 0.09


def test_partial_matches_lstsq_and_one_control_formula():
    rng = np.random.default_rng(10)
    n = 150
    z1 = rng.normal(size=n)
    z2 = rng.exponential(size=n)
    x = z1 + 0.5 * z2 + rng.normal(size=n)
    y = z1 - 0.3 * z2 + 0.4 * x + rng.normal(size=n)
    res2 = partial_spearman(x, y, np.column_stack([z1, z2]), n_boot=50, n_perm=50)
    assert abs(res2.rho - _ranks_residual_partial(x, y, np.column_stack([z1, z2]))) < 1e-12
    res1 = partial_spearman(x, y, z1, n_boot=50, n_perm=50)
    rxy = stats.spearmanr(x, y).statistic
    rxz = stats.spearmanr(x, z1).statistic
    ryz = stats.spearmanr(y, z1).statistic
    formula = (rxy - rxz * ryz) / math.sqrt((1 - rxz**2) * (1 - ryz**2))
    assert abs(res1.rho - formula) < 1e-12
    assert res1.n_controls == 1 and res2.n_controls == 2


def test_partial_bootstrap_ci_matches_loop_reference():
    # the batched (QR) bootstrap equals a plain loop over the same index matrix
    rng = np.random.default_rng(12)
    n = 40
    z = rng.normal(size=n)
    x = z + rng.normal(size=n)
    y = z + rng.normal(size=n)
    res = partial_spearman(x, y, z, n_boot=300, n_perm=0, seed=4)
    idx = np.random.default_rng(4).integers(0, n, size=(300, n))
    vals = [_ranks_residual_partial(x[i], y[i], z[i]) for i in idx]
    lo, hi = np.quantile(vals, [0.025, 0.975])
    assert abs(res.ci[0] - lo) < 1e-10 and abs(res.ci[1] - hi) < 1e-10


def test_partial_removes_confound():
    # x and y related only through z: plain rho is large, partial rho near 0 and not significant
    rng = np.random.default_rng(13)
    n = 300
    z = rng.normal(size=n)
    x = z + 0.5 * rng.normal(size=n)
    y = z + 0.5 * rng.normal(size=n)
    plain = correlation(x, y, n_boot=200, n_perm=500)
    part = partial_spearman(x, y, z, n_boot=200, n_perm=500)
    assert plain.spearman > 0.6 and plain.p_value < 0.01
    assert part.ci[0] < 0 < part.ci[1] or abs(part.rho) < 0.15


def test_partial_freedman_lane_p_matches_loop():
    rng = np.random.default_rng(14)
    n = 25
    z = rng.normal(size=n)
    x = z + rng.normal(size=n)
    y = 0.3 * x + z + rng.normal(size=n)
    res = partial_spearman(x, y, z, n_boot=0, n_perm=500, seed=2)
    # loop reference of Freedman-Lane with the same permutations
    perm = np.random.default_rng(2).permuted(np.tile(np.arange(n), (500, 1)), axis=1)
    rx, ry, rz = stats.rankdata(x), stats.rankdata(y), stats.rankdata(z)
    a = np.column_stack([np.ones(n), rz])
    fit_y = a @ np.linalg.lstsq(a, ry, rcond=None)[0]
    ex = rx - a @ np.linalg.lstsq(a, rx, rcond=None)[0]
    ey = ry - fit_y
    obs = stats.pearsonr(ex, ey).statistic
    null = []
    for p in perm:
        ystar = fit_y + ey[p]
        e = ystar - a @ np.linalg.lstsq(a, ystar, rcond=None)[0]
        null.append(stats.pearsonr(ex, e).statistic)
    ref = (1 + np.sum(np.abs(null) >= abs(obs) - 1e-12)) / 501
    assert abs(res.p_value - ref) < 1e-12


def test_errors():
    with pytest.raises(InputError, match="at least 3"):
        correlation([1.0, 2.0, np.nan], [1.0, 2.0, 3.0])
    with pytest.raises(InputError, match="constant"):
        correlation([1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0])
    with pytest.raises(InputError, match="differ in length"):
        correlation([1.0, 2.0, 3.0], [1.0, 2.0])
    with pytest.raises(InputError, match="at least 10"):
        correlation(np.arange(9.0), np.arange(9.0) ** 2, min_n=10)
    with pytest.raises(InputError, match="fully explained"):
        x = np.arange(20.0)
        partial_spearman(x, np.sin(x), x, n_boot=0, n_perm=0)
    with pytest.raises(InputError, match="shape"):
        partial_spearman(np.arange(5.0), np.arange(5.0), np.zeros((4, 1)))


def test_to_dict_is_json_friendly():
    import json

    rng = np.random.default_rng(1)
    x = rng.normal(size=30)
    d = correlation(x, x + rng.normal(size=30), n_boot=20, n_perm=0).to_dict()
    s = json.dumps(d)
    assert d["p_value"] is None and isinstance(d["spearman_ci"], list)
    assert "NaN" not in s
    d2 = partial_spearman(x, x + rng.normal(size=30), rng.normal(size=30), n_boot=20, n_perm=20).to_dict()
    json.dumps(d2)


def test_binned_means_against_pandas():
    rng = np.random.default_rng(15)
    x = rng.normal(size=203)
    y = 2 * x + rng.normal(size=203)
    out = binned_means(x, y, bins=7)
    q = pd.qcut(x, 7, labels=False)
    g = pd.DataFrame({"q": q, "x": x, "y": y}).groupby("q")
    assert list(out["count"]) == list(g.size())
    np.testing.assert_allclose(out["y_mean"], g["y"].mean(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(out["x_mean"], g["x"].mean(), rtol=0, atol=1e-12)
    sem = g["y"].sem().to_numpy()
    tcrit = stats.t.ppf(0.975, g.size().to_numpy() - 1)
    np.testing.assert_allclose(out["y_hi"] - out["y_mean"], tcrit * sem, rtol=1e-10)
    with pytest.raises(InputError):
        binned_means(x, y, bins=0)


def test_results_do_not_depend_on_chunking(monkeypatch):
    import normscope.stats as st

    rng = np.random.default_rng(16)
    n = 57
    z = rng.normal(size=(n, 2))
    x = z[:, 0] + rng.normal(size=n)
    y = x + z[:, 1] + rng.normal(size=n)
    big_c = correlation(x, y, n_boot=230, n_perm=170, seed=5)
    big_p = partial_spearman(x, y, z, n_boot=230, n_perm=170, seed=5)
    monkeypatch.setattr(st, "_CHUNK_ELEMS", 7 * n)  # blocks of a few rows
    small_c = correlation(x, y, n_boot=230, n_perm=170, seed=5)
    small_p = partial_spearman(x, y, z, n_boot=230, n_perm=170, seed=5)
    assert big_c == small_c
    assert big_p == small_p


def test_partial_with_constant_or_collinear_controls():
    # a control constant over the items (e.g. every word is one token) only removes the mean:
    # the partial rho equals the plain Spearman rho; a duplicated control equals the single one
    rng = np.random.default_rng(17)
    n = 30
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    z = rng.normal(size=n)
    const = partial_spearman(x, y, np.ones(n), n_boot=200, n_perm=200, seed=1)
    plain = correlation(x, y, n_boot=0, n_perm=0)
    assert abs(const.rho - plain.spearman) < 1e-12
    assert const.ci[0] < const.rho < const.ci[1]
    dup = partial_spearman(x, y, np.column_stack([z, z, 2 * z]), n_boot=0, n_perm=0)
    single = partial_spearman(x, y, z, n_boot=0, n_perm=0)
    assert abs(dup.rho - single.rho) < 1e-12
    # a mostly-constant discrete control (ties): bootstrap resamples where it is constant stay finite
    lens = np.where(np.arange(n) < 2, 2.0, 1.0)
    res = partial_spearman(x, y, lens, n_boot=300, n_perm=100, seed=2)
    assert abs(res.rho - _ranks_residual_partial(x, y, lens)) < 1e-12
    assert np.isfinite(res.ci).all()


@pytest.mark.parametrize("kind", ["continuous", "ties", "columns", "constant_block"])
def test_resample_ranks_equal_scipy_rankdata_bit_for_bit(kind):
    """The bootstrap's O(n) ranks (counts of the distinct values drawn) are scipy's average ranks, exactly."""
    from scipy.stats import rankdata

    from normscope.stats import resample_ranks

    rng = np.random.default_rng(7)
    v = {"continuous": rng.normal(size=301), "ties": rng.integers(0, 6, size=257).astype(float),
         "columns": np.round(rng.normal(size=(199, 3)), 1), "constant_block": np.r_[np.zeros(50), rng.normal(size=9)]}[kind]
    ii = rng.integers(0, v.shape[0], size=(40, v.shape[0]))
    ii[0] = 0  # a resample of one value drawn n times: every rank (n + 1) / 2
    got, want = resample_ranks(v, ii), rankdata(v[ii], axis=1)
    assert got.shape == want.shape and got.dtype == np.float64
    assert np.array_equal(got, want)
