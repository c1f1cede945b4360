"""Similarity CIs that refit the pair scorer's parameter on every draw of the fit pairs (normscope.similarity.refit)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from normscope.errors import InputError
from normscope.scoring import bootstrap_counts
from normscope.similarity.refit import refit_pair_cis, weighted_pearson, weighted_spearman
from normscope.stats_designs import correlation_difference


def test_weighted_correlations_equal_scipy_on_the_resample(rng):
    x = np.round(rng.normal(size=60), 1)  # ties on both sides
    y = np.round(x + rng.normal(size=60), 0)
    idx = rng.integers(0, 60, size=(25, 60))
    w = bootstrap_counts(idx, 60)
    rho = weighted_spearman(x, y, w)
    r = weighted_pearson(x, y, w)
    for b in range(25):
        assert rho[b] == pytest.approx(sps.spearmanr(x[idx[b]], y[idx[b]]).statistic, abs=1e-12)
        assert r[b] == pytest.approx(sps.pearsonr(x[idx[b]], y[idx[b]]).statistic, abs=1e-12)
    assert np.isnan(weighted_spearman(np.ones(60), y, w)).all()


def _planted(rng, m=40, n=200):
    """Three grid values; on the fit pairs the outer two have Spearman rho close to each other, so the refit flips
    between them across draws; the middle one (0, cosine) is what every draw of the evaluated pairs compares with."""
    params = [-0.5, 0.0, 0.5]
    hf, he = rng.normal(size=m), rng.normal(size=n)
    fit = np.column_stack([hf + rng.normal(0, 1.0, m), hf + rng.normal(0, 1.2, m), hf + rng.normal(0, 1.0, m)])
    ev = np.column_stack([he + rng.normal(0, 0.3, n), he + rng.normal(0, 1.0, n), he + rng.normal(0, 2.0, n)])
    return params, fit, hf, ev, he


def _pick(crit, params):
    best = max(c for c in crit if np.isfinite(c))
    return min((g for g, c in enumerate(crit) if np.isfinite(c) and c >= best - 1e-12), key=lambda g: (abs(params[g]), g))


def test_refit_equals_a_loop_over_draws(rng):
    params, fit, hf, ev, he = _planted(rng)
    m, n = len(hf), len(he)
    got = refit_pair_cis(params, fit, hf, ev, he, ev[:, 1], n_boot=300, seed=4)
    ie = np.random.default_rng(4).integers(0, n, size=(300, n))
    jf = np.random.default_rng([4, 1]).integers(0, m, size=(300, m))
    rho_s, rho_c, r_s, fitted = [], [], [], []
    for b in range(300):
        g = _pick([sps.spearmanr(fit[jf[b], k], hf[jf[b]]).statistic for k in range(3)], params)
        fitted.append(params[g])
        rho_s.append(sps.spearmanr(ev[ie[b], g], he[ie[b]]).statistic)
        rho_c.append(sps.spearmanr(ev[ie[b], 1], he[ie[b]]).statistic)
        r_s.append(sps.pearsonr(ev[ie[b], g], he[ie[b]]).statistic)
    q = lambda v: list(np.quantile(np.asarray(v), [0.025, 0.975]))  # noqa: E731
    rho_s, rho_c = np.array(rho_s), np.array(rho_c)
    assert got["spearman_ci"] == pytest.approx(q(rho_s), abs=1e-12)
    assert got["pearson_ci"] == pytest.approx(q(r_s), abs=1e-12)
    assert got["delta_ci"] == pytest.approx(q(rho_s - rho_c), abs=1e-12)
    assert got["relative_ci"] == pytest.approx(q(rho_s / rho_c - 1), abs=1e-12)
    assert got["param_draws"]["share_neutral"] == pytest.approx(np.mean(np.array(fitted) == 0.0))
    assert "fit pairs" in got["resamples"] and "evaluated pairs" in got["resamples"]


def test_refit_ci_is_wider_than_the_fixed_one_when_the_fit_flips(rng):
    """The fitted value flips between the grid's ends across draws of the fit pairs; one end is much better on
    the evaluated pairs than the other, so the refitted CI of the difference to cosine is wider than the CI
    with the full-sample fit held fixed."""
    params, fit, hf, ev, he = _planted(rng)
    got = refit_pair_cis(params, fit, hf, ev, he, ev[:, 1], n_boot=500, seed=0)
    lo, hi = got["param_draws"]["quantiles"][0], got["param_draws"]["quantiles"][2]
    assert lo == -0.5 and hi == 0.5  # the refit does vary
    g = _pick([sps.spearmanr(fit[:, k], hf).statistic for k in range(3)], params)
    fixed = correlation_difference(he, ev[:, g], ev[:, 1], n_boot=500, seed=0)
    assert got["delta_ci"][1] - got["delta_ci"][0] > 1.2 * (fixed.ci[1] - fixed.ci[0])


def test_shapes_checked(rng):
    params, fit, hf, ev, he = _planted(rng)
    with pytest.raises(InputError, match="do not match"):
        refit_pair_cis(params[:2], fit, hf, ev, he, ev[:, 1])
    with pytest.raises(InputError, match="n_boot"):
        refit_pair_cis(params, fit, hf, ev, he, ev[:, 1], n_boot=3)
