"""normscope.stats_designs against independent loops: stratified partial Spearman, paired correlation difference."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from normscope.errors import InputError
from normscope.stats import partial_spearman
from normscope.stats_designs import correlation_difference, stratified_partial_spearman


def _lstsq_partial(x, y, z, strata):
    """Independent: ranks of x, y, z (pooled), stratum dummies, numpy lstsq residuals, scipy Pearson."""
    labels = sorted(set(strata))
    dummies = np.column_stack([(np.asarray(strata) == s).astype(float) for s in labels[1:]])
    rz = np.column_stack([stats.rankdata(c) for c in np.atleast_2d(np.asarray(z).T)]) if z is not None else np.zeros((len(x), 0))
    a = np.column_stack([np.ones(len(x)), rz, dummies])
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    ex = rx - a @ np.linalg.lstsq(a, rx, rcond=None)[0]
    ey = ry - a @ np.linalg.lstsq(a, ry, rcond=None)[0]
    return stats.pearsonr(ex, ey).statistic, a, ex, ey


def _confounded(rng, n_per=(60, 80, 50)):
    """x and y both shift with the stratum; within strata y depends on z only (no x-y relation)."""
    strata = np.repeat(["a", "b", "c"], n_per)
    level = np.repeat([0.0, 2.0, 4.0], n_per)
    z = rng.normal(size=strata.size)
    x = level + z + rng.normal(size=strata.size)
    y = level + z + rng.normal(size=strata.size)
    return x, y, z, strata


def test_point_estimate_matches_lstsq_with_stratum_dummies():
    x, y, z, strata = _confounded(np.random.default_rng(0))
    res = stratified_partial_spearman(x, y, z, strata, n_boot=0, n_perm=0, control_names=["z"], stratum_name="source")
    ref, *_ = _lstsq_partial(x, y, z, strata)
    assert abs(res.rho - ref) < 1e-12
    assert res.controls == ["z", "source"] and res.n_controls == 2 and res.n == x.size
    # the stratum only (no other control)
    only, *_ = _lstsq_partial(x, y, None, strata)
    assert abs(stratified_partial_spearman(x, y, None, strata, n_boot=0, n_perm=0).rho - only) < 1e-12
    # one stratum: the plain partial Spearman
    one = stratified_partial_spearman(x, y, z, ["s"] * x.size, n_boot=0, n_perm=0)
    assert abs(one.rho - partial_spearman(x, y, z, n_boot=0, n_perm=0).rho) < 1e-12


def test_bootstrap_resamples_within_strata_like_a_loop():
    x, y, z, strata = _confounded(np.random.default_rng(1), n_per=(15, 20, 12))
    res = stratified_partial_spearman(x, y, z, strata, n_boot=200, n_perm=0, seed=7)
    children = np.random.default_rng(7).spawn(2 * 3)
    members = [np.flatnonzero(strata == s) for s in ("a", "b", "c")]
    draws = [m[g.integers(0, m.size, size=(200, m.size))] for g, m in zip(children[:3], members)]
    vals = []
    for b in range(200):
        idx = np.concatenate([d[b] for d in draws])
        assert set(strata[idx[: members[0].size]]) == {"a"}  # never crosses strata
        vals.append(_lstsq_partial(x[idx], y[idx], z[idx], strata[idx])[0])
    lo, hi = np.quantile(vals, [0.025, 0.975])
    assert abs(res.ci[0] - lo) < 1e-10 and abs(res.ci[1] - hi) < 1e-10
    assert "within each stratum" in res.ci_method


def test_within_stratum_freedman_lane_p_matches_loop():
    x, y, z, strata = _confounded(np.random.default_rng(2), n_per=(10, 12, 9))
    y = y + 0.4 * x
    res = stratified_partial_spearman(x, y, z, strata, n_boot=0, n_perm=300, seed=3)
    obs, a, ex, ey = _lstsq_partial(x, y, z, strata)
    ry = stats.rankdata(y)
    fit_y = ry - ey
    children = np.random.default_rng(3).spawn(6)
    members = [np.flatnonzero(strata == s) for s in ("a", "b", "c")]
    perms = [g.permuted(np.tile(m, (300, 1)), axis=1) for g, m in zip(children[3:], members)]
    null = []
    for k in range(300):
        p = np.arange(x.size)
        for m, pm in zip(members, perms):
            p[m] = pm[k]
            assert set(strata[pm[k]]) == {strata[m[0]]}
        ystar = fit_y + ey[p]
        e = ystar - a @ np.linalg.lstsq(a, ystar, rcond=None)[0]
        null.append(stats.pearsonr(ex, e).statistic)
    ref = (1 + np.sum(np.abs(null) >= abs(obs) - 1e-12)) / 301
    assert abs(res.p_value - ref) < 1e-12
    assert "within each stratum" in res.p_method


def test_source_confound_is_removed_only_with_the_stratum():
    # x and y relate only through the stratum level and z: ignoring the stratum finds a strong relation
    x, y, z, strata = _confounded(np.random.default_rng(4), n_per=(150, 150, 150))
    x = np.repeat([0.0, 2.0, 4.0], 150) + np.random.default_rng(5).normal(size=450)  # x: level + noise only
    plain = partial_spearman(x, y, z, n_boot=200, n_perm=500, seed=0)
    strat = stratified_partial_spearman(x, y, z, strata, n_boot=200, n_perm=500, seed=0)
    assert plain.rho > 0.3 and plain.p_value < 0.01
    assert strat.ci[0] < 0 < strat.ci[1] and strat.p_value > 0.05


def test_stratified_errors_and_json():
    x, y, z, strata = _confounded(np.random.default_rng(6), n_per=(8, 8, 8))
    with pytest.raises(InputError, match="labels for"):
        stratified_partial_spearman(x, y, z, strata[:-1])
    bad = strata.astype(object)
    bad[3] = None
    with pytest.raises(InputError, match="missing labels"):
        stratified_partial_spearman(x, y, z, bad)
    d = stratified_partial_spearman(x, y, z, strata, n_boot=20, n_perm=20).to_dict()
    json.dumps(d, allow_nan=False)


def test_correlation_difference_matches_scipy_and_loop():
    rng = np.random.default_rng(8)
    n = 60
    ref = rng.normal(size=n)
    a = ref + 0.6 * rng.normal(size=n)
    b = ref + 1.0 * rng.normal(size=n)
    for method, f in (("spearman", stats.spearmanr), ("pearson", stats.pearsonr)):
        res = correlation_difference(ref, a, b, method=method, n_boot=300, seed=9)
        assert abs(res.delta - (f(a, ref).statistic - f(b, ref).statistic)) < 1e-12
        idx = np.random.default_rng(9).integers(0, n, size=(300, n))
        vals = [f(a[i], ref[i]).statistic - f(b[i], ref[i]).statistic for i in idx]
        lo, hi = np.quantile(vals, [0.025, 0.975])
        assert abs(res.ci[0] - lo) < 1e-10 and abs(res.ci[1] - hi) < 1e-10
    same = correlation_difference(ref, a, a, n_boot=50)
    assert same.delta == 0 and same.ci == (0.0, 0.0)
    with pytest.raises(InputError, match="method"):
        correlation_difference(ref, a, b, method="kendall")
    with pytest.raises(InputError, match="differ in length"):
        correlation_difference(ref, a[:-1], b)
    json.dumps(correlation_difference(ref, a, b, n_boot=0).to_dict(), allow_nan=False)
