"""The retrieval and calibration sections' words: claims rows and sentences follow the numbers and their CIs."""

from __future__ import annotations

from normscope.report.stages.retrieval import calibration_sentences, retrieval_sentences
from normscope.retrieval.claims import discrimination_claim as calibration_claim
from normscope.retrieval.claims import gain_claim as similarity_gain_claim


def _summary(rel, rel_ci, strata_p=(0.5,) * 12):
    rows = [{"stratifier": "query_zipf", "quartile": i % 4 + 1, "relative": 0.03, "p_holm": p, "mean_delta": 0.02}
            for i, p in enumerate(strata_p)]
    return {"n_queries": {"eval": 300},
            "scorers": {"cosine": {"ndcg@10": 0.6}, "inverse_norm": {"ndcg@10": 0.6 * (1 + rel), "relative": rel,
                                                                     "relative_ci": rel_ci, "delta": 0.6 * rel,
                                                                     "delta_ci": [0.6 * rel_ci[0], 0.6 * rel_ci[1]],
                                                                     "p_value": 0.01, "param_name": "alpha"}},
            "strata": {"scorers": {"inverse_norm": rows}}}


def test_similarity_gain_claim_verdicts():
    up = similarity_gain_claim(_summary(0.02, [0.012, 0.03], strata_p=(0.01,) + (0.6,) * 11))
    assert up["verdict"] == "reproduced" and up["measured"] == 0.02 and up["n"] == 300
    assert up["size"] == "no size claimed"  # the overall row is direction-only: the paper's size is for its strata
    assert up["beside"] == "paired t p = 0.01" and "1 of 12 differ" in up["why"] and "query_zipf Q1 +3.00 %" in up["why"]
    flat = similarity_gain_claim(_summary(0.0017, [-0.0047, 0.0088]))  # SciFact: includes 0
    assert (flat["verdict"], flat["direction"], flat["size"]) == ("inconclusive", "inconclusive", "no size claimed")
    assert "includes 0" in flat["why"] and "0 of 12" in flat["why"]
    down = similarity_gain_claim(_summary(-0.02, [-0.03, -0.01]))
    assert down["verdict"] == "refuted" and down["direction"] == "refuted"
    none = similarity_gain_claim({"scorers": {"cosine": {}}})
    assert none["verdict"] == "not testable here" and "not run" in none["why"]


def test_calibration_claim_verdicts():
    def summ(a, ci, status="ok"):
        return {"n_queries": {"eval": 300}, "calibration": {"query_norm": {"status": status, "auroc_raw": a,
                                                                           "auroc_raw_ci": ci, "reason": "fold 2: x"}}}

    assert calibration_claim(summ(0.62, [0.55, 0.69]))["verdict"] == "reproduced"
    r = calibration_claim(summ(0.40, [0.33, 0.47]))
    assert r["verdict"] == "refuted" and abs(r["measured"] + 0.10) < 1e-12 and abs(r["ci"][0] + 0.17) < 1e-12
    assert calibration_claim(summ(0.508, [0.44, 0.569]))["verdict"] == "inconclusive"
    nc = calibration_claim(summ(None, None, status="not computed"))
    assert nc["verdict"] == "not testable here" and nc["why"] == "fold 2: x"


def test_sentences_follow_the_cis():
    s = retrieval_sentences(_summary(0.02, [0.012, 0.03], strata_p=(0.01,) + (0.6,) * 11))
    assert "improves test nDCG@10" in s[0] and "the CI excludes 0" in s[0]
    assert "1 of 12 differ from cosine after Holm correction" in s[1]
    s = retrieval_sentences(_summary(0.0017, [-0.0047, 0.0088]))
    assert "includes 0: no evidence of a difference" in s[0] and "In none of the 12" in s[1]
    cal = calibration_sentences(({
        "query_norm": {"status": "ok", "auroc_raw": 0.40, "auroc_raw_ci": [0.33, 0.47], "auroc": 0.5, "ece": 0.03,
                       "fit": {"mapping": "platt"},
                       "ece_bins": {"flag": "ECE from 2 populated bins of 15 (the fullest holds 298 of 300 queries)"}},
        "margin": {"status": "not computed", "reason": "fit split: all non-relevant"}}))
    assert "below chance in its pre-specified direction" in cal[0] and "calibrated map AUROC 0.500" in cal[0]
    assert "298 of 300" in cal[0] and cal[1] == "margin: not computed (fit split: all non-relevant)."


def test_ci_and_paired_test_disagreeing_gives_no_direction():
    """The bootstrap CI excludes 0 but the paired t-test gives p = 0.082: neither the sentence nor the scorecard
    row claims a direction (the rule written in docs/report.md)."""
    summ = _summary(-0.04, [-0.08, -0.0001])
    summ["scorers"]["inverse_norm"]["p_value"] = 0.082
    s = retrieval_sentences(summ)[0]
    assert "lowers" not in s and "no firm evidence" in s and "p = 0.082" in s
    row = similarity_gain_claim(summ)
    assert row["direction"] == "inconclusive" and "does not reject equality (p = 0.082" in row["why"]
    assert row["verdict"] == "inconclusive" and row["size"] == "no size claimed"  # direction-only, and undecided
    agree = retrieval_sentences(_summary(-0.04, [-0.08, -0.0001]))[0]  # p = 0.01: direction stated
    assert "lowers test nDCG@10" in agree and "paired p < 0.05" in agree
