"""CIs that refit the fitted parameter on every bootstrap draw (normscope.retrieval.refit), on planted designs."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.claims import judge
from normscope.errors import InputError
from normscope.retrieval.evaluate import paired_bootstrap_ci
from normscope.retrieval.refit import RefitDesign
from normscope.scoring import bootstrap_counts as counts, choose_param

PARAMS = [-0.1, 0.0, 0.1]


def _pick(means, params, neutral=0.0):
    """fit_parameter's rule by hand: largest mean, ties (1e-12) to the value closest to neutral, then grid order."""
    best = max(means)
    cands = [g for g, m in enumerate(means) if m >= best - 1e-12]
    return min(cands, key=lambda g: (abs(params[g] - neutral), g))


def test_choose_param_is_fit_parameters_rule():
    params = [-0.2, -0.1, 0.0, 0.1, 0.2]
    rows = np.array([[0.1, 0.3, 0.2, 0.3, 0.1],   # tie at +-0.1: the first in grid order closest to 0
                     [0.5, 0.5, 0.5, 0.5, 0.5],   # all equal: the neutral value
                     [0.1, 0.2, 0.3, 0.2, 0.4],
                     [0.4, 0.1, 0.1, 0.1, 0.4 - 1e-13]])  # a tie within 1e-12, both 0.2 from 0: grid order
    assert list(choose_param(rows, params, 0.0)) == [_pick(r, params) for r in rows] == [1, 2, 4, 0]


def test_counts_equal_bincount_per_row(rng):
    idx = rng.integers(0, 7, size=(5, 7))
    w = counts(idx, 7)
    assert w.shape == (5, 7) and (w.sum(axis=1) == 7).all()
    for b in range(5):
        assert (w[b] == np.bincount(idx[b], minlength=7)).all()


def _split_design(rng, n=40, m=30):
    """Fit means of alpha = -0.1 and +0.1 nearly tied, so resamples of the fit queries flip between them;
    the fit on all fit queries picks 0 (a planted tie), which moves no evaluation query: the fixed CI is [0, 0]."""
    base = rng.uniform(0.2, 0.8, size=n)
    ev = np.column_stack([base + rng.normal(0, 0.05, n), base, base + rng.normal(0, 0.05, n)])
    a = rng.normal(0, 0.1, size=m)
    a -= a.mean()
    fb = rng.uniform(0.2, 0.8, size=m)
    fit = np.column_stack([fb + a, fb, fb - a])  # column means tie exactly: the neutral value wins
    return ev, base, fit


def test_split_mode_equals_a_loop_over_draws(rng):
    ev, base, fit = _split_design(rng)
    n, m = len(base), len(fit)
    d = RefitDesign(ev, base, PARAMS, 0.0, fit_values=fit, n_boot=200, seed=3)
    out = d.overall()
    ie = np.random.default_rng(3).integers(0, n, size=(200, n))
    jf = np.random.default_rng([3, 1]).integers(0, m, size=(200, m))
    diffs, rels, fitted = [], [], []
    for b in range(200):
        g = _pick(list(fit[jf[b]].mean(axis=0)), PARAMS)
        fitted.append(PARAMS[g])
        x, y = ev[ie[b], g], base[ie[b]]
        diffs.append(x.mean() - y.mean())
        rels.append(x.mean() / y.mean() - 1)
    assert out["mean_diff_ci"] == pytest.approx(list(np.quantile(diffs, [0.025, 0.975])), abs=1e-12)
    assert out["relative_ci"] == pytest.approx(list(np.quantile(rels, [0.025, 0.975])), abs=1e-12)
    assert out["param_draws"]["share_neutral"] == pytest.approx(np.mean(np.array(fitted) == 0.0))
    assert "fit queries" in out["resamples"] and "evaluation queries" in out["resamples"]


def test_refit_ci_is_wider_than_the_fixed_alpha_one(rng):
    """The issue's case: the fitted alpha (0 here) moves nothing, so the fixed-alpha CI is [0, 0]; refitting alpha on
    each draw of the fit queries moves it, and the CI is not degenerate."""
    ev, base, fit = _split_design(rng)
    assert _pick(list(fit.mean(axis=0)), PARAMS) == 1  # the point fit is alpha = 0
    fixed = paired_bootstrap_ci(ev[:, 1], base, n_boot=500, seed=0)
    refit = RefitDesign(ev, base, PARAMS, 0.0, fit_values=fit, n_boot=500, seed=0).overall()
    assert fixed["mean_diff_ci"] == [0.0, 0.0]
    lo, hi = refit["mean_diff_ci"]
    assert lo < -1e-3 and hi > 1e-3
    assert refit["param_draws"]["share_neutral"] < 1.0  # the refitted alpha leaves the point fit's value
    assert refit["param_draws"]["quantiles"][0] == -0.1 and refit["param_draws"]["quantiles"][2] == 0.1


def test_strata_resample_within_each_stratum(rng):
    ev, base, fit = _split_design(rng, n=40)
    groups = np.repeat([1, 2, 3, 4], 10)
    d = RefitDesign(ev, base, PARAMS, 0.0, fit_values=fit, n_boot=300, seed=5)
    got = d.strata(groups)
    assert set(got) == {1, 2, 3, 4}
    g_fit = d._split_choice()  # the same fit draws as overall()
    for k in (1, 4):
        pos = np.flatnonzero(groups == k)
        ie = np.random.default_rng(5).integers(0, pos.size, size=(300, pos.size))
        diffs = [ev[pos[ie[b]], g_fit[b]].mean() - base[pos[ie[b]]].mean() for b in range(300)]
        assert got[k]["mean_diff_ci"] == pytest.approx(list(np.quantile(diffs, [0.025, 0.975])), abs=1e-12)


def _cv_design(rng, n=60, effect=0.0):
    """Cross-validation on the evaluation queries: alpha = -0.1 adds a_i, +0.1 subtracts it; with no effect the
    sign of the other folds' mean decides the fit, so the gain depends on the fold split."""
    base = rng.uniform(0.2, 0.8, size=n)
    a = rng.normal(effect, 0.15, size=n)
    return np.column_stack([base + a, base, base - a]), base


def test_cv_mode_equals_a_loop_with_the_same_folds(rng):
    ev, base = _cv_design(rng, n=30)
    d = RefitDesign(ev, base, PARAMS, 0.0, n_folds=5, n_boot=50, seed=1)
    w = d.eval_counts()
    labels = d.fold_labels(50)
    assert all(sorted(np.bincount(lab, minlength=5)) == [6] * 5 for lab in labels)
    x, fitted = d.draws(w, labels)
    for b in range(50):
        for f in range(5):
            out = labels[b] != f
            means = [(w[b, out] * ev[out, g]).sum() / w[b, out].sum() for g in range(3)]
            g = _pick(means, PARAMS)
            assert fitted[b, f] == PARAMS[g]
            assert (x[b, labels[b] == f] == ev[labels[b] == f, g]).all()


def test_cv_unit_weights_and_a_fixed_split_reproduce_the_per_fold_fit(rng):
    """With every query once and the pipeline's folds, the design fits what fit_parameter fits per fold."""
    ev, base = _cv_design(rng, n=30, effect=0.05)
    d = RefitDesign(ev, base, PARAMS, 0.0, n_folds=5, n_boot=10, seed=0)
    folds = np.array_split(np.random.default_rng(0).permutation(30), 5)
    labels = np.empty(30, dtype=np.int64)
    for f, idx in enumerate(folds):
        labels[idx] = f
    x, fitted = d.draws(np.ones((1, 30)), labels[None, :])
    for f, idx in enumerate(folds):
        tr = np.setdiff1d(np.arange(30), idx)
        assert fitted[0, f] == PARAMS[_pick(list(ev[tr].mean(axis=0)), PARAMS)]


def _point_and_ci(ev, base, seed):
    """The pipeline's point estimate (one seeded fold split) and the refitted CI, as relative gains."""
    n = len(base)
    labels = np.empty(n, dtype=np.int64)
    for f, idx in enumerate(np.array_split(np.random.default_rng(seed).permutation(n), 5)):
        labels[idx] = f
    d = RefitDesign(ev, base, PARAMS, 0.0, n_folds=5, n_boot=1000, seed=seed)
    x, _ = d.draws(np.ones((1, n)), labels[None, :])
    fixed = paired_bootstrap_ci(x[0], base, n_boot=1000, seed=seed)
    return x[0].mean() / base.mean() - 1, d.overall()["relative_ci"], fixed["relative_ci"]


@pytest.mark.parametrize("effect", [0.0, 0.06])
def test_three_seeds_give_one_verdict(effect):
    """A planted cross-validated design (NFCorpus's case): only the fold split changes with the seed. The refitted
    CI covers the fold-split variation, so seeds 0, 1, 2 reach one verdict (no effect: inconclusive; a planted
    +10 % gain: the direction is reproduced)."""
    ev, base = _cv_design(np.random.default_rng(11), n=80, effect=effect)
    verdicts, directions = set(), set()
    for seed in (0, 1, 2):
        rel, ci, _ = _point_and_ci(ev, base, seed)
        j = judge("similarity_gain", rel, ci)
        verdicts.add(j["verdict"])
        directions.add(j["direction"])
    assert len(verdicts) == 1 and len(directions) == 1
    assert directions == ({"inconclusive"} if effect == 0 else {"reproduced"})


def test_bad_shapes_are_input_errors(rng):
    ev, base, fit = _split_design(rng)
    with pytest.raises(InputError, match="do not match"):
        RefitDesign(ev[:, :2], base, PARAMS, 0.0, fit_values=fit)
    with pytest.raises(InputError, match="fit values"):
        RefitDesign(ev, base, PARAMS, 0.0, fit_values=fit[:, :2])
    with pytest.raises(InputError, match="at least 10"):
        RefitDesign(ev[:8], base[:8], PARAMS, 0.0)
    with pytest.raises(InputError, match="n_boot"):
        RefitDesign(ev, base, PARAMS, 0.0, fit_values=fit, n_boot=5)


def test_pipeline_reports_refitted_cis_and_what_they_resample(tmp_path, rng):
    """A planted BEIR folder through run_retrieval: a fitting split (fit queries resampled jointly) and
    cross-validation (folds redrawn); the fixed-alpha CIs are kept beside, equal to paired_bootstrap_ci of the
    per-query table; every CI says what it resamples, and so do the scorecard rows."""
    from _retrieval_call import run_retrieval
    from _retrieval_data import GRIDS, planted

    fast = {"n_boot": 200, "n_permutations": 200, "grids": GRIDS}
    ddir, enc = planted(tmp_path / "split", rng, n_train=30, n_test=24)
    res = run_retrieval(ddir, encoder=enc, scorers=("inverse_norm",), **fast)
    r, d = res.scorers["inverse_norm"], res.to_dict()
    pq = res.per_query
    fixed = paired_bootstrap_ci(pq["ndcg@10_inverse_norm"].to_numpy(), pq["ndcg@10_cosine"].to_numpy(), n_boot=200,
                                seed=0)
    assert list(r["delta_ci_fixed_param"]) == fixed["mean_diff_ci"]
    assert list(r["relative_ci_fixed_param"]) == fixed["relative_ci"]
    assert "fit queries" in r["ci_resamples"] and "refitted" in r["ci_resamples"]
    lo, _, hi = r["param_draws"]["quantiles"]
    assert lo <= r["param"] <= hi and set(r["param_draws"]["quantiles"]) <= set(GRIDS["inverse_norm"])
    assert d["scorers"]["inverse_norm"]["ci_resamples"] == r["ci_resamples"]
    assert d["scorers"]["cosine"].get("ci_resamples") is None
    rows = res.strata["scorers"]["inverse_norm"]
    assert all("fit queries" in x["ci_resamples"] for x in rows)
    assert all(x.get("mean_delta_ci_fixed_param") is not None for x in rows if x["mean_delta_ci"] is not None)
    gain = next(c for c in res.claims if c["key"] == "similarity_gain")
    assert "fit queries resampled jointly" in gain["what"]
    # cross-validation: the fold split is redrawn on every draw
    ddir, enc = planted(tmp_path / "cv", rng, with_train=False, n_test=30)
    with pytest.warns(UserWarning, match="cross-validation"):
        res = run_retrieval(ddir, encoder=enc, scorers=("inverse_norm",), **fast)
    r = res.scorers["inverse_norm"]
    assert "5-fold split redrawn" in r["ci_resamples"] and r["param_draws"]["n"] == 200 * 5
    assert np.isfinite(list(r["delta_ci"])).all() and len(r["param"]) == 5
