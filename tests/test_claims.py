"""The verdict rules of normscope.claims on constructed (estimate, CI, claimed size) triples, and the stage builders.

The cases of issue 23 are worked out by hand: a gain of +0.15 % [+0.06, +0.23] % against the paper's +1.2 to
+2.3 % excludes 0 but also the claimed range, so the claim as stated is refuted in size; a CI of [-0.47, +0.88] %
excludes the claimed range on the side of zero although it includes 0: refuted too (the interval reading of the
two one-sided tests of equivalence testing).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from normscope.claims import (
    CLAIMS,
    VERDICTS,
    Gate,
    Size,
    check_one_verdict_per_statistic,
    claim_row,
    direction_verdict,
    judge,
    not_testable_row,
    paper_scope_rows,
    size_verdict,
)

GAIN = "gain_high_frequency"  # the paper's +1.2 to +2.3 % is for its strata; the overall row is direction-only


@pytest.mark.parametrize("est, ci, p, verdict, direction, size", [
    (0.0015, [0.0006, 0.0023], 0.001, "refuted", "reproduced", "smaller"),    # held-out STS-B: excludes 0 AND the range
    (0.0017, [-0.0047, 0.0088], 0.6, "refuted", "inconclusive", "smaller"),  # SciFact: includes 0, excludes the range
    (-0.0039, [-0.0109, 0.0031], 0.3, "refuted", "inconclusive", "smaller"),  # a quick run
    (-0.0121, [-0.0243, 0.0002], 0.06, "refuted", "inconclusive", "smaller"),  # held-out NFCorpus variant
    (0.015, [0.008, 0.021], 0.001, "reproduced", "reproduced", "consistent"),
    (0.030, [0.025, 0.036], 0.001, "reproduced", "reproduced", "larger"),  # the effect exists and is larger
    (0.004, [-0.010, 0.018], 0.5, "inconclusive", "inconclusive", "consistent"),  # cannot exclude 0 nor the range
    (-0.020, [-0.030, -0.010], 0.001, "refuted", "refuted", "smaller"),
    (0.015, [0.008, 0.021], 0.08, "inconclusive", "inconclusive", "consistent"),  # CI and paired test disagree
])
def test_gain_claim_against_its_stated_range(est, ci, p, verdict, direction, size):
    j = judge(GAIN, est, ci, p=p)
    assert (j["verdict"], j["direction"], j["size"]) == (verdict, direction, size)
    assert len(j["reason"].split()) <= 20
    if size == "smaller" and direction != "refuted":
        assert "below the claimed size (+1.2 to +2.3 %)" in j["reason"]
        assert ("even though it includes 0" in j["reason"]) == (ci[0] < 0 < ci[1])


def test_short_reason_names_the_paired_test_when_it_disagrees_with_the_ci():
    # the CI [0.008, 0.021] excludes 0 while the paired test (p 0.08) does not reject: the one-line reason must not
    # say that the CI includes 0 (it does not); the same figures with p 0.001 read "excludes 0"
    j = judge(GAIN, 0.015, [0.008, 0.021], p=0.08)
    assert j["reason"] == "the CI excludes 0 but the paired test does not reject it and meets the claimed size"
    assert "includes 0" not in j["reason"] and "p = 0.08" in j["why"]
    below = judge(GAIN, 0.004, [0.001, 0.007], p=0.2)  # excludes 0, below the claimed +1.2 %: refuted on size
    assert below["verdict"] == "refuted" and "includes 0" not in below["reason"]
    assert below["reason"].endswith("though the paired test does not reject 0")
    assert judge(GAIN, 0.004, [-0.001, 0.007], p=0.2)["reason"].endswith("even though it includes 0")


def test_point_claims_with_a_declared_tolerance():
    # drift: the paper's -0.58, tolerance 0.10 (the size region is [-0.68, -0.48])
    assert CLAIMS["corr_norm_drift"].size.low == pytest.approx(-0.68) and CLAIMS["corr_norm_drift"].size.high == pytest.approx(-0.48)
    assert judge("corr_norm_drift", 0.114, [0.040, 0.183])["verdict"] == "refuted"  # wrong sign
    mp = judge("corr_norm_drift", 0.022, [-0.050, 0.089])  # mpnet: includes 0, but far on the zero side of -0.58
    assert (mp["verdict"], mp["direction"], mp["size"]) == ("refuted", "inconclusive", "smaller")
    assert "zero side" in mp["reason"]
    ok = judge("corr_norm_drift", -0.55, [-0.62, -0.47])
    assert (ok["verdict"], ok["size"]) == ("reproduced", "consistent")
    big = judge("corr_norm_drift", -0.8, [-0.85, -0.75])
    assert (big["verdict"], big["size"]) == ("reproduced", "larger")
    # heat: the direction can come from one statistic (R-free) and the size from another (the raw correlation)
    h = judge("corr_norm_heat", 0.138, [0.025, 0.243], size_ci=[0.353, 0.531])
    assert (h["verdict"], h["direction"], h["size"]) == ("reproduced", "reproduced", "consistent")
    h = judge("corr_norm_heat", 0.138, [0.025, 0.243], size_ci=[0.60, 0.70])
    assert (h["verdict"], h["size"]) == ("reproduced", "larger")


def test_bounds_and_claims_without_direction():
    # at most 1/1000: the whole CI must lie within the bound
    assert judge("inference_cost", 1e-5, [8e-6, 2e-5])["verdict"] == "reproduced"
    assert judge("inference_cost", 3e-3, [2e-3, 4e-3])["verdict"] == "refuted"
    straddle = judge("inference_cost", 1e-3, [5e-4, 2e-3])
    assert (straddle["verdict"], straddle["size"]) == ("inconclusive", "undetermined")
    # at least 0.05 (the stated limit of the SGD form under AdamW)
    assert judge("optimizer_adamw", 0.87, [0.86, 0.88])["verdict"] == "reproduced"
    assert judge("optimizer_adamw", 0.01, [0.008, 0.012])["verdict"] == "refuted"
    # lab: within 5 %, but the gate's other parts fail -> inconclusive
    assert judge("theorem1_lab", 0.014, [0.012, 0.016])["verdict"] == "reproduced"
    assert judge("theorem1_lab", 0.014, [0.012, 0.016], conditions_met=False)["verdict"] == "inconclusive"
    assert judge("theorem1_lab", 0.2, [0.18, 0.22])["verdict"] == "refuted"


def test_direction_free_association_either_side():
    assert judge("frequency", -0.363, [-0.388, -0.338])["verdict"] == "reproduced"
    assert judge("frequency", 0.35, [0.31, 0.39])["verdict"] == "reproduced"
    # the CI excludes 0 but straddles the claimed minimum |rho| 0.3: "strong" is neither shown nor excluded
    weak = judge("frequency", 0.2, [0.1, 0.3])
    assert (weak["verdict"], weak["direction"], weak["size"]) == ("inconclusive", "reproduced", "undetermined")
    assert weak["reason"] == "the CI straddles the strong minimum (|\u03c1| \u2265 0.3)"
    null = judge("uncertainty", -0.005, [-0.039, 0.032])  # a tight null: it excludes a strong association
    assert (null["verdict"], null["direction"], null["size"]) == ("refuted", "inconclusive", "smaller")
    assert direction_verdict(0.1, [0.05, 0.15], None) == ("no direction claimed", "the claim states no direction")
    assert direction_verdict(None, None, +1)[0] == "not tested"
    assert size_verdict([0.1, 0.2], Size())[0] == "no size claimed"
    assert size_verdict(None, CLAIMS[GAIN].size)[0] == "undetermined"


def test_gates_and_the_sgd_only_size():
    gate = Gate(False, "P = 100 items, K = 4 batches is below the sign-stable design", "P >= 500, K >= 16")
    j = judge("corr_norm_heat", 0.4, [0.3, 0.5], size_ci=[0.3, 0.5], gate=gate)
    assert j["verdict"] == "not decided at this size" and j["direction"] == "reproduced" and j["size"] == "consistent"
    assert j["reason"] == gate.reason and "would decide it: P >= 500, K >= 16" in j["why"]
    assert judge("corr_norm_heat", 0.4, [0.3, 0.5], gate=Gate(False, "x", verdict="not testable here"))["verdict"] == \
        "not testable here"
    # the balance's size is predicted by the SGD form only: an AdamW-trained checkpoint is outside its scope
    d = ("reproduced", "below its null")
    sgd = judge("req_predicts_norm", 3.0, [2.5, 3.5], direction=d)
    adam = judge("req_predicts_norm", 3.0, [2.5, 3.5], direction=d, adamw=True)
    assert (sgd["verdict"], sgd["size"]) == ("refuted", "larger")
    assert (adam["verdict"], adam["size"]) == ("not testable here", "undetermined") and "AdamW" in adam["reason"]


def test_rows_and_one_verdict_per_statistic():
    row = claim_row(GAIN, measured=0.0017, ci=[-0.0047, 0.0088], judged=judge(GAIN, 0.0017, [-0.0047, 0.0088]),
                    statistic="s1")
    assert row["verdict"] in VERDICTS and row["percent"] is True and row["claimed_size"] == "+1.2 to +2.3 %"
    assert {"key", "claim", "paper", "measured", "ci", "verdict", "direction", "size", "reason", "why", "section",
            "statistic", "details", "needs", "tested_on"} <= set(row)
    with pytest.raises(ValueError, match="unknown verdict"):
        claim_row(GAIN, measured=None, ci=None, judged={**judge(GAIN, None, None), "verdict": "maybe"})
    other = dict(row, key="similarity_gain", verdict="reproduced")
    with pytest.raises(ValueError, match="one statistic, two verdicts"):
        check_one_verdict_per_statistic([row, other])
    check_one_verdict_per_statistic([row, dict(other, statistic="s2"), dict(row, key="x")])
    nt = not_testable_row("gain_low_quality", "no quality label")
    assert nt["verdict"] == "not testable here" and "quality label" in nt["needs"]


def test_paper_scope_rows_name_the_papers_models():
    models, fev, tc, rt, llm = paper_scope_rows("sentence-transformers/all-MiniLM-L6-v2")
    assert models["verdict"] == fev["verdict"] == tc["verdict"] == rt["verdict"] == llm["verdict"] == "not testable here"
    assert llm["key"] == "llm_baselines" and "generative" in llm["reason"]
    assert "clip-vit-base-patch32" in models["needs"]
    for row, name in ((fev, "FEVEROUS"), (tc, "TreeCut"), (rt, "RuleTaker")):
        assert row["reason"] == f"the paper's +1.2 to +2.3 % accuracy names no protocol for {name}"
        assert row["what"].startswith("tests: ") and "; cannot test: the paper's accuracy gain" in row["what"]
        assert row["why"].endswith("did not run in this report")
    assert "MiniLM-L12" in paper_scope_rows("sentence-transformers/all-MiniLM-L12-v2")[0]["reason"]
    # the paper's figures are quoted as the paper gives them: no coefficient or model is added
    assert CLAIMS["corr_norm_heat"].paper == "+0.38" and "Pearson" not in CLAIMS["corr_norm_drift"].paper


def test_paper_benchmark_rows_carry_the_measuring_rows_verdict():
    """A benchmark row stays not testable as the paper states it; the row that measured the norm on that benchmark
    in the same run is named on it with its verdict and figure."""
    j = judge("abstention_treecut", -0.338, (-0.438, -0.229), p=3e-9)
    measured = claim_row("abstention_treecut", measured=-0.338, ci=(-0.438, -0.229), judged=j,
                         label="length-matched rank-biserial r", tested_on="MiniLM-L6, 1,000 generated problems")
    rows = {r["key"]: r for r in paper_scope_rows("m", measured={"abstention_treecut": measured})}
    tc = rows["paper_benchmark_treecut"]
    assert tc["verdict"] == "not testable here" and j["verdict"] == "reproduced"
    assert tc["why"].endswith("measured here by the row abstention_treecut: reproduced: length-matched rank-biserial "
                              "r -0.338 [-0.438, -0.229] (MiniLM-L6, 1,000 generated problems)")
    assert rows["paper_benchmark_feverous"]["why"].endswith("the row abstention_feverous did not run in this report")


# --- the probe: Theorem 1's balance against its permutation null, and one verdict per statistic -------------------


def _moments(r, u1, u2, aa, k=4):
    from normscope.probes import ProbeMoments

    p = r.size
    return ProbeMoments(r=r, za=np.tile(u1 * r, (k, 1)), zc=np.tile(u2 * r, (k, 1)), aa=np.tile(aa, (k, 1)),
                        a_sum=np.zeros((p, 2)), zjd=r**2, eps=np.ones((k, 1)), losses=np.ones(k), grad_norms=np.ones(k))


def test_balance_test_exact_balance_and_no_link(rng):
    from normscope.probes.balance import balance_test

    p, eta, c = 60, 1e-2, 3e-3
    r = rng.uniform(0.5, 2.0, p)
    u1, aa = rng.normal(0.0, 0.05, p), rng.gamma(2.0, 0.5, p)
    d1 = u1 * r
    d2 = (c * r**2 - eta * d1 - eta**2 * aa / 2) / eta**2  # solves q(x) = c for every item (E9)
    b = balance_test(_moments(r, u1, d2 / r, aa), eta=eta, n_perm=199, n_boot=50, seed=3)
    st = b["statistics"]
    assert b["c_fit"] == pytest.approx(c, rel=1e-9) and st["dispersion"] == pytest.approx(0.0, abs=1e-9)
    assert st["mean_abs_rel_error"] == pytest.approx(0.0, abs=1e-9) and st["share_negative_q"] == 0.0
    assert b["p_below"]["dispersion"] == pytest.approx(1 / 200) and b["null"]["dispersion"]["mean"] > 0.05
    assert b["ci"]["dispersion"] == pytest.approx([0.0, 0.0], abs=1e-9)  # equal batches: only items vary, all balanced
    # the same R-free statistics on items with unrelated norms: no better than the null
    b2 = balance_test(_moments(rng.permutation(r), u1, d2 / r, aa), eta=eta, n_perm=199, n_boot=0, seed=3)
    assert b2["p_below"]["dispersion"] > 0.05 and b2["ci"]["dispersion"] == [None, None]
    # the statistics by hand (heat share: rho_H / (|rho_D| + rho_H), median over items)
    heat, drift = eta**2 * r**2 * aa, eta * d1 + eta**2 * d2
    rho_h, rho_d = heat / (2 * r**4), drift / r**2
    assert st["heat_share"] == pytest.approx(np.median(rho_h / (np.abs(rho_d) + rho_h)), rel=1e-9)


def _probe_summary(rng, *, eta, p=500, k=16):
    """A probe summary from constructed moments (numpy only), drift carrying the rank signal of R."""
    from normscope.probes import ProbeMoments, summarize_probe

    r = rng.uniform(5.0, 9.0, p)
    za = (0.02 * (r - 7.0) + rng.normal(0, 0.02, (k, p))) * r**2
    m = ProbeMoments(r=r, za=za, zc=rng.normal(-0.5, 0.2, (k, p)) * r**2, aa=rng.gamma(2.0, 0.5, (k, p)),
                     a_sum=np.zeros((p, 2)), zjd=np.abs(rng.normal(1.0, 0.2, p)) * r**2, eps=np.ones((k, 1)),
                     losses=np.ones(k), grad_norms=np.ones(k))
    res = summarize_probe(m, eta=eta, weight_decay=None, without_decay=True, n_boot=200, seed=0,
                          fields={"model": "constructed", "training": {"optimizer": {"value": "AdamW", "source": "t"}}})
    return res.to_dict()


def test_heat_negligible_req_row_does_not_judge_the_drift_statistic_again(rng):
    """At a small eta heat is a negligible share of the balance: R_eq ranks the items as drift does, so
    Spearman(R_eq, R) is Spearman(drift, R) again. The R_eq row must rest on the theorem's own requirement instead,
    and say so; no two rows of the scorecard rest on one statistic with different verdicts."""
    from normscope.probes.claims import probe_claims

    s = _probe_summary(rng, eta=2e-5)
    share = s["balance"]["statistics"]["heat_share"]
    assert share < 0.01
    assert s["corr_req_norm"]["spearman"] == pytest.approx(s["corr_norm_drift"]["spearman"], abs=0.02)
    rows = {r["key"]: r for r in probe_claims(s)}
    req = rows["req_predicts_norm"]
    assert req["measured"] == pytest.approx(s["balance"]["statistics"]["dispersion"])
    assert req["statistic"] != rows["corr_norm_drift"]["statistic"]
    assert "is the drift row's statistic again: it gets no verdict here" in req["why"] and f"{share:.2%}" in req["why"]
    check_one_verdict_per_statistic(rows.values())
    # below the sign-stable design nothing is decided, and the row says what would decide it
    small = {r["key"]: r for r in probe_claims(_probe_summary(rng, eta=2e-5, p=100, k=4))}
    assert {r["verdict"] for r in small.values()} == {"not decided at this size"}
    assert all("500 items and 16 batches" in r["needs"] for r in small.values())


def test_heat_row_reads_the_r_free_statistic():
    from normscope.probes.claims import probe_claims

    def corr(p, s, ci_p, ci_s, n=500):
        return {"pearson": p, "spearman": s, "n": n, "ci": {"pearson": ci_p, "spearman": ci_s}}

    base = {"n_items": 500, "batches": 16, "model": "m", "corr_norm_heat": corr(0.45, 0.5, [0.35, 0.53], [0.4, 0.6]),
            "corr_norm_drift": corr(0.11, 0.1, [0.04, 0.18], [0.0, 0.2]),
            "corr_norm_displacement": corr(0.1, 0.138, [0.0, 0.2], [0.025, 0.243])}
    heat = {r["key"]: r for r in probe_claims(base)}["corr_norm_heat"]
    assert heat["verdict"] == "reproduced" and heat["measured"] == 0.138 and "raw Pearson" in heat["beside"]
    base["corr_norm_displacement"] = corr(0.1, 0.02, [0.0, 0.2], [-0.04, 0.08])
    rows = {r["key"]: r for r in probe_claims(base)}
    heat = rows["corr_norm_heat"]
    assert heat["verdict"] == "not decided at this size" and "may be only the R\u00b2 inside heat" in heat["reason"]
    assert rows["corr_norm_drift"]["verdict"] == "refuted"
    assert rows["req_predicts_norm"]["verdict"] == "not testable here"  # no balance block in this summary


# --- labs ------------------------------------------------------------------------------------------------------------


def _lab(rel, *, optimizer="sgd", unc=None, median=0.0, pearson=0.99, passed=True):
    items = pd.DataFrame({"rel_error": rel} | ({"rel_error_uncorrected": unc} if unc is not None else {}))
    return SimpleNamespace(encoder="table", optimizer=optimizer, data="synthetic", n_items=len(rel), steps=100,
                           estimator="snapshot", items=items, mean_abs_rel_error=float(np.mean(np.abs(rel))),
                           median_rel_error=median, pearson=pearson, gate={"passed": passed}, beta=0.9,
                           uncorrected=None)


def test_lab_rows(rng):
    from normscope.lab.claims import lab_claim, optimizer_claim

    rel = rng.normal(0, 0.015, 256)
    row = lab_claim(_lab(rel), n_boot=500, seed=0)
    boot = np.abs(rel)[np.random.default_rng(0).integers(0, 256, size=(500, 256))].mean(axis=1)
    assert row["ci"] == pytest.approx(list(np.percentile(boot, [2.5, 97.5])), abs=1e-12)
    assert row["verdict"] == "reproduced" and "free embedding table" in row["tested_on"]
    assert row["beside"] == "ran: free embedding table, sgd"
    assert lab_claim(_lab(rel, pearson=0.5), n_boot=200, seed=0)["verdict"] == "inconclusive"
    mom = optimizer_claim(_lab(rel, optimizer="momentum", unc=-0.68 + rel), n_boot=200, seed=0)
    assert mom["key"] == "optimizer_momentum" and mom["verdict"] == "reproduced" and mom["measured"] > 0.6
    assert "(E12)" in mom["why"]
    adam = optimizer_claim(_lab(rel, optimizer="adamw"), n_boot=200, seed=0)  # the SGD formula holds: limit refuted
    assert adam["verdict"] == "refuted"


@pytest.mark.parametrize("long_enough, stationary, verdict", [
    (False, None, "not decided at this size"), (True, None, "not decided at this size"),
    (True, False, "not decided at this size"), (True, True, "reproduced")])
def test_transformer_row_is_gated_on_relaxation_and_stationarity(long_enough, stationary, verdict):
    from normscope.lab.claims import transformer_claim

    res = {"model": "m", "optimizer": "sgd", "lr": 1e-3, "weight_decay": 0.01, "steps": 8, "probe_items": 16,
           "relaxation_steps": 407.2, "long_enough": long_enough, "trajectory": {"stationary": stationary},
           "motion": {"partial_spearman_predicted_vs_final_given_start": 0.4,
                      "partial_spearman_predicted_vs_final_given_start_ci": [0.1, 0.6], "n_partial": 16}}
    row = transformer_claim(res)
    assert row["verdict"] == verdict and row["direction"] == "reproduced"
    if verdict != "reproduced":
        assert "at least 408 steps" in row["needs"]
    if not long_enough:
        assert row["reason"] == "8 steps is shorter than one relaxation time (407 steps)"


# --- retrieval, similarity, signals ---------------------------------------------------------------------------------


def _retrieval_summary(rel, rel_ci, p=0.01, *, stratum=None, incremental=None):
    s = {"model": "m", "dataset_name": "d", "split": "test", "fit_split": "train", "n_queries": {"eval": 300},
         "scorers": {"cosine": {"ndcg@10": 0.6}, "inverse_norm": {"relative": rel, "relative_ci": rel_ci, "p_value": p,
                                                                  "param": 0.01}},
         "strata": {"scorers": {"inverse_norm": [] if stratum is None else [stratum]}},
         "calibration": {"query_norm": {"status": "ok", "auroc_raw": 0.597, "auroc_raw_ci": [0.536, 0.662]}}}
    if incremental is not None:
        s["calibration_incremental"] = incremental
    return s


def test_retrieval_rows():
    from normscope.retrieval.claims import retrieval_claims

    q4 = {"stratifier": "query_zipf", "quartile": 4, "range": [5.1, 6.9], "n": 75, "relative": 0.018,
          "relative_ci": [0.004, 0.031], "mean_delta": 0.01, "mean_delta_ci": [0.002, 0.02], "p": 0.01, "p_holm": 0.12}
    inc = {"task": "top1_relevant", "baseline": ["top1_score", "margin"], "added": ["query_norm", "top_doc_norm"],
           "auroc_without": 0.834, "auroc_with": 0.827, "diff": -0.007, "ci": [-0.02, 0.006], "resamples": "queries",
           "folds": 5, "n_queries": 300, "seed": 0}
    rows = {r["key"]: r for r in retrieval_claims(_retrieval_summary(0.0017, [-0.0047, 0.0088], 0.6, stratum=q4,
                                                                    incremental=inc))}
    assert list(rows) == ["similarity_gain", "gain_high_frequency", "gain_low_quality", "calibration_discrimination",
                          "calibration_incremental", "norm_confidence_nauc"]
    assert rows["norm_confidence_nauc"]["verdict"] == "not testable here"
    # the overall row is direction-only: a CI that includes 0 is inconclusive, not refuted on the strata's size
    gain = rows["similarity_gain"]
    assert (gain["verdict"], gain["size"], gain["claimed_size"]) == ("inconclusive", "no size claimed", "no size claimed")
    assert gain["percent"] is True and "high-frequency" in gain["paper"]
    assert rows["gain_high_frequency"]["verdict"] == "reproduced" and rows["gain_high_frequency"]["n"] == 75
    assert rows["gain_low_quality"]["verdict"] == "not testable here"
    cal = rows["calibration_discrimination"]
    assert cal["verdict"] == "reproduced" and cal["measured"] == pytest.approx(0.097) and cal["section"] == "calibration"
    assert rows["calibration_incremental"]["verdict"] == "inconclusive"
    assert rows["calibration_incremental"]["measured"] == -0.007 and "0.834" in rows["calibration_incremental"]["beside"]
    none = {r["key"]: r for r in retrieval_claims(_retrieval_summary(0.02, [0.012, 0.03]))}
    assert none["calibration_incremental"]["verdict"] == "not testable here"
    assert none["gain_high_frequency"]["verdict"] == "not testable here"
    assert none["similarity_gain"]["verdict"] == "reproduced"


def test_a_gain_made_by_a_negative_alpha_is_not_the_papers_effect():
    """cos/(1 + alpha||d||) discounts large-norm documents only with alpha > 0; a gain fitted with alpha <= 0 (in any
    fold) favours them, the opposite mechanism: the gain rows read inconclusive and say why (a new user's run fitted
    alpha = -0.0844)."""
    from normscope.retrieval.claims import retrieval_claims

    q4 = {"stratifier": "query_zipf", "quartile": 4, "range": [5.1, 6.9], "n": 75, "relative": 0.018,
          "relative_ci": [0.004, 0.031], "mean_delta": 0.01, "mean_delta_ci": [0.002, 0.02], "p": 0.01, "p_holm": 0.12}
    for param, verdicts in ((0.01, ("reproduced", "reproduced")), (-0.0844, ("inconclusive", "inconclusive")),
                            ([0.02, -0.01, 0.03], ("inconclusive", "inconclusive")), (0.0, ("inconclusive",) * 2)):
        s = _retrieval_summary(0.02, [0.012, 0.03], stratum=q4)
        s["scorers"]["inverse_norm"]["param"] = param
        rows = {r.key: r for r in retrieval_claims(s)}
        got = (rows["similarity_gain"].verdict, rows["gain_high_frequency"].verdict)
        assert got == verdicts, (param, got)
        if verdicts[0] == "inconclusive":
            for key in ("similarity_gain", "gain_high_frequency"):
                assert rows[key].reason == ("a gain, but the fitted \u03b1 favours large-norm documents (the paper "
                                            "discounts them)")
                assert "the opposite of the paper's discount" in rows[key].why
    # a CI that includes 0 stays inconclusive for its own reason (overall and in the stratum, whose CI also meets the
    # claimed size: the full report's SciFact run, alpha -0.00598, +0.00 % [-2.38 %, +1.66 %])
    q4 = dict(q4, relative=0.0, relative_ci=[-0.0238, 0.0166])
    s = _retrieval_summary(0.001, [-0.01, 0.012], p=0.6, stratum=q4)
    s["scorers"]["inverse_norm"]["param"] = -0.00598
    rows = {r.key: r for r in retrieval_claims(s)}
    for key in ("similarity_gain", "gain_high_frequency"):
        assert rows[key].verdict == "inconclusive" and rows[key].reason.startswith("the CI includes 0"), rows[key].reason
        assert "is not positive in 1 of 1 fit" in rows[key].why


def test_cost_row():
    from normscope.retrieval.claims import cost_claim

    row = cost_claim({"ratio": 2e-5, "range": [1.5e-5, 3e-5], "n_items": 128, "k": 100, "repeats": 5, "model": "m",
                      "threads": 2, "encoder_s_per_item": 0.01, "norm_s_per_item": 2e-7})
    assert row["verdict"] == "reproduced" and row["size"] == "consistent" and "timing noise" in row["what"]
    assert cost_claim(None, "no inverse_norm")["verdict"] == "not testable here"


def test_norm_scoring_cost_times_the_same_items():
    from normscope.retrieval.cost import norm_scoring_cost

    calls = []

    class Enc:
        fingerprint = SimpleNamespace(name="slow")

        def encode(self, texts, batch_size=64):
            calls.append(len(texts))
            import time
            time.sleep(0.02)
            return np.ones((len(texts), 4), dtype=np.float32)

    out = norm_scoring_cost(Enc(), ["a", "b", "c"], np.ones((3, 5)), np.ones((3, 5)), alpha=0.1, repeats=3)
    assert calls == [3, 3, 3, 3] and out["n_items"] == 3 and out["k"] == 5 and len(out["ratios"]) == 3
    assert out["range"][0] <= out["ratio"] <= out["range"][1] < 0.5 and out["encoder_s_per_item"] >= 0.02 / 3
    with pytest.raises(ValueError):
        norm_scoring_cost(Enc(), ["a"], np.ones((2, 5)), np.ones((2, 5)), alpha=0.1)


def test_similarity_row_is_exploratory_and_direction_only():
    from normscope.similarity.claims import similarity_claim

    def res(delta, ci, rel, rel_ci):
        sc = {"param_name": "alpha", "param": 0.01, "fit_spearman": 0.5, "spearman": 0.39 + delta,
              "delta_spearman": delta, "delta_ci": ci, "relative": rel, "relative_ci": rel_ci}
        return {"model": "m", "dataset": "/x/SimLex-999.txt", "n_pairs": 500, "fit": {"n_pairs": 499},
                "scorers": {"cosine": {"spearman": 0.39}, "inverse_norm": sc}}

    row = similarity_claim(res(0.0008, [-0.0047, 0.0068], 0.002, [-0.012, 0.017]))
    assert (row["verdict"], row["size"], row["kind"]) == ("inconclusive", "no size claimed", "exploratory")
    assert row["percent"] is False and "+0.20 % [-1.20, +1.70] %" in row["beside"]
    # the paper states no size on pairs: a relative CI below +1.2 % no longer refutes anything
    row = similarity_claim(res(0.0008, [-0.0047, 0.0068], 0.002, [-0.012, 0.010]))
    assert (row["verdict"], row["size"]) == ("inconclusive", "no size claimed")
    assert similarity_claim(res(0.01, [0.004, 0.016], 0.03, [0.01, 0.04]))["verdict"] == "reproduced"
    assert similarity_claim(None, "SimLex-999 is absent")["verdict"] == "not testable here"


def test_signal_rows_follow_the_controlled_figure():
    from normscope.signals.claims import signal_claims

    spec = {"signal": "specificity", "model": "m", "dataset": "WordNet", "spearman": 0.152, "spearman_ci": [0.1, 0.2],
            "n": 2000, "partial_spearman": {"rho": 0.097, "ci": [0.056, 0.142], "n": 2000,
                                            "controls": ["frequency", "length"]}}
    freq = {"signal": "frequency", "model": "m", "dataset": "wordfreq", "spearman": -0.363,
            "spearman_ci": [-0.388, -0.338], "n": 5000, "partial_spearman": {"rho": -0.369, "ci": [-0.392, -0.345],
                                                                              "n": 5000, "controls": ["length"]}}
    rows = {r["key"]: r for r in signal_claims({"specificity": spec, "frequency": freq}, {"uncertainty": "no data"})}
    # specificity: partial rho +0.097 [0.056, 0.142] exists but lies wholly inside +-0.3: not strong (refuted in size);
    # its raw CI excludes 0 and so does the partial one, so it is not "explained by the controls"
    sp = rows["specificity"]
    assert (sp["verdict"], sp["direction"], sp["size"], sp["measured"]) == ("refuted", "reproduced", "smaller", 0.097)
    assert "not strong" in sp["reason"] and "explained by the controls" not in sp["reason"] + sp["why"]
    assert rows["frequency"]["verdict"] == "reproduced" and rows["frequency"]["measured"] == -0.369
    assert rows["frequency"]["size"] == "consistent"
    assert rows["uncertainty"]["verdict"] == "not testable here" and "no data" in rows["uncertainty"]["why"]


def test_sps_sanity_of_the_constructed_probe(rng):
    """The constructed probe of the heat-negligible test carries its signal in drift (a check of the fixture)."""
    s = _probe_summary(rng, eta=2e-5)
    assert s["corr_norm_drift"]["spearman"] > 0.3
    r = np.array([x for x in (s["norm"]["min"], s["norm"]["max"])])
    assert 5.0 <= r[0] < r[1] <= 9.0


# --- issue 34: shared rules, claims as the paper states them, kinds counted apart -----------------------------------


def test_a_zero_width_ci_is_never_a_decision():
    """A stratum where the fitted alpha changes no top-10 gives a gain of exactly 0 with a CI [0, 0]: cosine is compared
    with itself, so the row is not decided (it used to read "refuted": [0, 0] lies below +1.2 %)."""
    from normscope.retrieval.claims import retrieval_claims

    q4 = {"stratifier": "query_zipf", "quartile": 4, "range": [5.1, 6.9], "n": 75, "relative": 0.0,
          "relative_ci": [0.0, 0.0], "mean_delta": 0.0, "mean_delta_ci": [0.0, 0.0], "p": 1.0, "p_holm": 1.0}
    row = {r["key"]: r for r in retrieval_claims(_retrieval_summary(0.002, [-0.003, 0.007], 0.4, stratum=q4))}[
        "gain_high_frequency"]
    assert (row["verdict"], row["size"]) == ("not decided at this size", "smaller")
    assert row["reason"] == ("the fitted \u03b1 changes no ranking in this stratum (the scorer equals cosine there): the "
                             "CI has zero width")
    # the rule is shared: any claim, any side of its size; a CI of positive width is judged as before
    for key, ci in (("corr_norm_drift", [0.1, 0.1]), ("inference_cost", [2e-3, 2e-3]), ("frequency", [0.0, 0.0])):
        j = judge(key, ci[0], ci)
        assert j["verdict"] == "not decided at this size" and "the CI has zero width" in j["reason"], (key, j)
    assert judge("inference_cost", 2e-3, [2e-3, 2.1e-3])["verdict"] == "refuted"
    # a failed gate given by the stage keeps its own reason
    assert judge("frequency", 0.0, [0.0, 0.0], gate=Gate(False, "no data", verdict="not testable here"))["verdict"] == \
        "not testable here"


@pytest.mark.parametrize("ci, size, verdict", [
    ([-0.039, 0.032], "smaller", "refuted"),       # a tight null: excludes |rho| >= 0.3 on both sides
    ([0.056, 0.142], "smaller", "refuted"),        # exists (excludes 0) but is not strong
    ([-0.388, -0.338], "consistent", "reproduced"),  # strong, negative (no direction claimed)
    ([0.31, 0.45], "consistent", "reproduced"),
    ([0.2, 0.4], "undetermined", "inconclusive"),   # excludes 0, cannot tell strong from not
    ([-0.05, 0.35], "undetermined", "inconclusive"),
    ([-0.3, 0.1], "undetermined", "inconclusive"),  # touches -0.3: a strong value is not excluded
])
def test_strong_minimum_on_constructed_numbers(ci, size, verdict):
    from normscope.claims import STRONG_RHO

    assert STRONG_RHO == 0.3 and CLAIMS["uncertainty"].size.kind == "strong" and CLAIMS["uncertainty"].sign == 0
    j = judge("uncertainty", sum(ci) / 2, ci)
    assert (j["size"], j["verdict"]) == (size, verdict)
    # the paper states no direction for specificity: either side is judged alike
    assert judge("specificity", -sum(ci) / 2, [-ci[1], -ci[0]])["verdict"] == verdict


def test_strong_minimum_on_a_claimed_side():
    """Size.strong on a claim with a sign reads |effect| >= 0.3 on that side only (no row uses it yet; the rule is
    written once for any claim that does)."""
    strong = Size.strong()
    assert strong.text() == "strong: |\u03c1| at least 0.3"
    assert size_verdict([0.35, 0.5], strong, +1)[0] == "consistent"
    assert size_verdict([0.1, 0.2], strong, +1)[0] == "smaller"
    assert size_verdict([-0.5, -0.4], strong, +1)[0] == "smaller"  # strong, but on the other side
    assert size_verdict([-0.5, -0.35], strong, -1)[0] == "consistent"
    assert size_verdict([0.25, 0.4], strong, +1)[0] == "undetermined"
    assert size_verdict([0.25, 0.4], Size.strong(0.2), +1)[0] == "consistent"


def test_explained_by_the_controls_only_where_the_numbers_say_so():
    from normscope.signals.claims import EXPLAINED_BY_CONTROLS, signal_claims

    def unc(raw_ci):
        return {"signal": "uncertainty", "model": "m", "dataset": "ChaosNLI", "spearman": sum(raw_ci) / 2,
                "spearman_ci": raw_ci, "n": 3113, "partial_spearman": {"rho": -0.005, "ci": [-0.039, 0.032], "n": 3113,
                                                                     "controls": ["frequency", "length"]}}

    row = signal_claims({"uncertainty": unc([0.05, 0.12])}, {})[2]
    assert row["verdict"] == "refuted" and row["size"] == "smaller" and EXPLAINED_BY_CONTROLS in row["reason"]
    assert "[+0.05, +0.12] excludes 0" in row["why"]
    row = signal_claims({"uncertainty": unc([-0.02, 0.06])}, {})[2]  # the raw CI includes 0: no association to explain
    assert row["verdict"] == "refuted" and EXPLAINED_BY_CONTROLS not in row["reason"] + row["why"]
    assert "a null, tight enough to exclude the strong minimum" in row["reason"]


def test_balance_row_on_an_adamw_checkpoint_says_what_the_numbers_say():
    """A dispersion 1.21 [0.95, 1.80] against the SGD form's 0.20 on an AdamW checkpoint: outside the claim's
    scope (not testable here), and the reason says the CI lies wholly above the bound, not "does not beat its null"."""
    from normscope.probes.claims import _balance_row, design_gate

    summary = {"n_items": 500, "batches": 16, "model": "m",
               "balance": {"c_fit": 1e-4, "n_items": 500, "n_perm": 999,
                           "statistics": {"dispersion": 1.21, "heat_share": 0.2},
                           "ci": {"dispersion": [0.95, 1.80]}, "p_below": {"dispersion": 0.4},
                           "p_above": {"dispersion": 0.6}, "null": {"dispersion": {"mean": 1.3}}}}
    adam = _balance_row(summary, design_gate(summary), "AdamW", "trained with AdamW", "m")
    assert adam["verdict"] == "not testable here" and adam["kind"] == "exploratory"
    assert "1.21 [+0.95, +1.8], wholly above the SGD form's 0.2" in adam["reason"]
    assert "not distinguishable from its permutation null" in adam["reason"] and "does not beat" not in adam["reason"]
    sgd = _balance_row(summary, design_gate(summary), "", "", "m")
    assert (sgd["verdict"], sgd["size"]) == ("refuted", "larger") and "lies above the claimed bound" in sgd["reason"]


def test_kinds_are_declared_and_counted_apart(tmp_path):
    from rich.console import Console

    from normscope.claims import KINDS, counts_text, kind_counts
    from normscope.cli.report import print_summary
    from normscope.report.html import render_html
    from normscope.report.missing import availability

    kinds = {k: c.kind for k, c in CLAIMS.items()}
    assert set(kinds.values()) == set(KINDS)
    assert {k for k, v in kinds.items() if v == "exploratory"} == {
        "optimizer_momentum", "optimizer_adamw", "unused_rows_decay", "similarity_pairs", "req_predicts_norm",
        "atypical_input_shuffle", "abstention_treecut", "abstention_ruletaker", "abstention_feverous"}
    assert kinds["theorem1_lab"] == "construction" and kinds["similarity_gain"] == kinds["ambiguity"] == "paper"
    # a lab row that ran on an MLP is a test of the paper's claim, one on a free table a check by construction
    from normscope.lab.claims import lab_claim

    rel = np.random.default_rng(1).normal(0, 0.015, 64)
    assert lab_claim(_lab(rel), n_boot=50, seed=0)["kind"] == "construction"
    mlp = _lab(rel)
    mlp.encoder = "mlp"
    assert lab_claim(mlp, n_boot=50, seed=0)["kind"] == "paper"

    def row(key, lo, hi):
        return claim_row(key, measured=(lo + hi) / 2, ci=[lo, hi], judged=judge(key, (lo + hi) / 2, [lo, hi]))

    rows = [row("frequency", -0.39, -0.34), row("corr_norm_drift", 0.04, 0.18), row("theorem1_lab", 0.01, 0.02),
            row("optimizer_adamw", 0.86, 0.88), row("optimizer_momentum", 0.6, 0.7),
            not_testable_row("unused_rows_decay", "no unused rows")]
    assert [r["verdict"] for r in rows] == ["reproduced", "refuted", "reproduced", "reproduced", "reproduced",
                                            "not testable here"]
    counts = kind_counts(rows)
    assert counts == {"paper": {"reproduced": 1, "refuted": 1}, "construction": {"reproduced": 1},
                      "exploratory": {"reproduced": 2, "not testable here": 1}}
    text = counts_text(counts)
    assert text == ("paper's claims: 1 reproduced, 1 refuted (of 2); checks by construction: 1 reproduced (of 1); "
                    "exploratory: 2 reproduced, 1 not testable here (of 3)")
    # rows written before kinds existed are counted by their claim's kind
    assert kind_counts([{k: v for k, v in r.items() if k != "kind"} for r in rows]) == counts
    # summary.json, the console and the page carry the same count
    summary = {"report": {"model": "m", "preset": "quick", "seconds": 3.0, "stages_run": [], "stage_cached": {}},
               "what_this_says": {}, "claims": rows}
    summary.update(availability(summary, {}))
    ct = summary["claims_tested"]
    assert ct["kinds"] == counts and ct["headline"] == text and ct["tested"] == 5
    from normscope.report.runner import ReportResult
    from normscope.report.stage import Section, StageRecord
    from normscope.report.stages import STAGES
    from normscope.values import Status

    records = {st.name: StageRecord(st.name, Status.NOT_RUN, {k: Section(k, Status.NOT_RUN, "not selected")
                                                              for k in st.sections}) for st in STAGES}
    console = Console(record=True, width=300)
    print_summary(ReportResult(tmp_path / "i.html", tmp_path / "s.json", summary, records, 3.0), console)
    out = console.export_text()
    assert text in out and "claims: 5 of 6 tested here; 1 not testable here" in out
    import html as _html

    summary["report"]["sizes"] = {}
    page = _html.unescape(render_html(summary, records, tmp_path))
    assert f"<b>{text}</b>" in page and "5 of 6 claims tested" in page
    assert page.count('<span class="meta">exploratory</span>') == 3
    assert page.count('<span class="meta">checks by construction</span>') == 1
