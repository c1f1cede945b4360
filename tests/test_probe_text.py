"""The report's probe sentences and claims rows follow the numbers they describe (issue 10, item 5)."""

from __future__ import annotations

from normscope.probes.claims import probe_claims
from normscope.report.stages.probes import equilibrium_sentences, prediction_reading
from normscope.report.stages.signals import semantic_signal_sentences
from normscope.report.text import correlation_sentence


def _corr(rho, lo, hi, n, **kw):
    return {"pearson": rho, "spearman": rho, "ci": {"pearson": [lo, hi], "spearman": [lo, hi]}, "n": n,
            "n_excluded": kw.get("n_excluded", 0), "excluded": kw.get("excluded", {})}


def _result(req, **kw):
    res = {"n_items": 400, "decay_reading": "trained_without_decay", "c_fit": 2e-5,
           "training": {"optimizer": {"value": "AdamW", "source": "script"}},
           "corr_req_norm": req, "corr_norm_heat": _corr(0.5, 0.4, 0.6, 399),
           "corr_norm_displacement": _corr(0.02, -0.08, 0.12, 398), "corr_norm_drift": _corr(-0.3, -0.4, -0.2, 397),
           "n_negative_q": 61}
    res.update(kw)
    return res


def _sentences(res):
    key, reading = prediction_reading(res)
    return equilibrium_sentences(res, {"prediction_key": key, "prediction_reading": reading})


def test_failed_prediction_is_said_first_in_those_words():
    req = _corr(-0.25, -0.35, -0.15, 339, n_excluded=61, excluded={"c_fit<=0": 0, "lambda_rad<=0": 61})
    out = _sentences((_result(req)))
    assert out[0].startswith("The prediction fails on this model:")
    assert "n = 339" in out[0] and "61 of 400 items are left out of this check" in out[0]
    assert "61 with lambda_rad<=0" in out[0]
    # each correlation sentence carries its own n, not n_items
    assert "n = 399" in out[1] and "n = 398" in out[2] and "n = 397" in out[3]
    assert "may be mechanical" in out[2]
    assert out[4].startswith("61 items have q < 0") and "stay in the prediction check" in out[4]
    rows = {r["key"]: r for r in probe_claims(_result(req, batches=16))}
    assert rows["corr_norm_drift"]["verdict"] == "not decided at this size"  # P = 400 < 500
    assert rows["corr_norm_drift"]["direction"] == "reproduced" and "P = 400 items" in rows["corr_norm_drift"]["reason"]
    rows = {r["key"]: r for r in probe_claims(_result(req, batches=16, n_items=500))}
    assert rows["corr_norm_drift"]["verdict"] == "refuted" and rows["corr_norm_drift"]["size"] == "smaller"
    # the R_eq row rests on the balance test, not on the rank correlation above (absent here: not testable)
    assert rows["req_predicts_norm"]["verdict"] == "not testable here" and "balance test" in rows["req_predicts_norm"]["why"]


def test_reading_follows_the_decay_the_checkpoint_had():
    req = _corr(0.3, 0.2, 0.4, 400)
    lam = _corr(-0.1, -0.2, 0.05, 250)
    res = _result(req, decay_reading="checkpoint", weight_decay=0.01, corr_req_lambda_rad_norm=lam)
    key, reading = prediction_reading(res)
    assert key == "corr_req_lambda_rad_norm" and "checkpoint's own" in reading
    # a what-if lambda is never read as the checkpoint's prediction
    key, reading = prediction_reading(dict(res, decay_reading="what_if"))
    assert key == "corr_req_norm" and "what-if" in reading
    # c_fit <= 0: not testable, and why
    none = {"pearson": None, "spearman": None, "ci": {"spearman": [None, None]}, "n": 0, "n_excluded": 400}
    bal = {"c_fit": -1e-5, "statistics": {}, "n_items": 500}
    row = next(r for r in probe_claims(_result(none, c_fit=-1e-5, balance=bal, n_items=500, batches=16))
               if r["key"] == "req_predicts_norm")
    assert row["verdict"] == "not testable here" and "not positive" in row["why"]


def test_direction_comes_from_the_ci_not_the_point_estimate():
    s = correlation_sentence("the norm", "x", 0.02, [-0.30, -0.05], 50)
    assert "falls with x" in s and "other side of 0" in s and "rises" not in s


def test_partial_stays_only_when_it_keeps_the_sign_of_the_marginal():
    sec = {"frequency": {"signal": "frequency", "spearman": -0.3, "spearman_ci": [-0.4, -0.2], "n": 100,
                                    "partial_spearman": {"rho": 0.1, "ci": [0.05, 0.15], "controls": ["length"]}}}
    s = semantic_signal_sentences(sec)[0]
    assert "it turns positive" in s and "stays" not in s
    sec["frequency"]["partial_spearman"] = {"rho": -0.1, "ci": [-0.15, -0.05], "controls": ["length"]}
    assert "it stays negative" in semantic_signal_sentences(sec)[0]
