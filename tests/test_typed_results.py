"""Typed results to the JSON edge: the value types keep the JSON a command writes byte for byte, and the page and
the CLI read each number from the field it names (no model, no data: fast).

Every table cell and sentence below is worked out by hand from the values planted in the result, and the planted
values differ field by field, so a read of the wrong field (``eta`` for ``lambda``, the fit's CI for the scorer's)
fails.
"""

from __future__ import annotations

import dataclasses
import json

from rich.console import Console

from normscope._io import to_jsonable
from normscope.claims import ClaimRow
from normscope.results import StageResult, summary_field
from normscope.values import Interval, JunkSummary, Record, Spread, key


# ---------------------------------------------------------------------------------------------------------------
# the value types at the JSON edge
# ---------------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Pair(Record):
    first: float | None = None
    ci: Interval | None = None
    at_10: float | None = key("at@10")


@dataclasses.dataclass
class _Result(StageResult):
    pair: _Pair | None = summary_field("pair", default=None)
    pairs: dict[str, _Pair] | None = summary_field("pairs", default=None)
    junk: JunkSummary | None = summary_field("junk", default=None)


def test_a_record_writes_back_the_json_it_read_in_its_key_order():
    d = {"zeta": "unknown key", "ci": [0.1, None], "at@10": 0.5, "first": 2.0}  # not the field order
    rec = _Pair.from_json(d)
    assert rec.first == 2.0 and rec.at_10 == 0.5 and rec.ci == Interval(0.1, None)
    assert json.dumps(to_jsonable(rec)) == json.dumps(d)
    assert list(to_jsonable(_Pair.from_json({"first": 1.0}))) == ["first"]  # absent keys stay absent
    assert list(to_jsonable(_Pair(first=1.0, at_10=2.0))) == ["first", "ci", "at@10"]  # built: field order


def test_a_stage_result_types_its_fields_when_built_from_plain_dicts():
    res = _Result(pair={"ci": [1, 2], "first": 3.0}, pairs={"b": {"first": 1.0}, "a": {"first": 2.0}},
                  junk={"count": 2, "ids": ["x", "y"], "reasons": {"empty": 2}})
    assert isinstance(res.pair, _Pair) and res.pair.ci.hi == 2 and res.pairs["a"].first == 2.0
    assert res.junk.count == 2 and res.junk.ids == ["x", "y"]
    d = res.to_dict()
    assert json.dumps(d) == json.dumps({"pair": {"ci": [1, 2], "first": 3.0}, "pairs": {"b": {"first": 1.0}, "a": {
        "first": 2.0}}, "junk": {"count": 2, "ids": ["x", "y"], "reasons": {"empty": 2}}})
    back = _Result.from_dict(json.loads(json.dumps(d)))
    assert back == res and json.dumps(back.to_dict()) == json.dumps(d)


def test_the_stored_decisive_result_reads_back_byte_for_byte():
    from normscope.lab.decisive import STORED_RESULT
    from normscope.lab.result import DecisiveRun, DecisiveResult, LambdaScaling

    with open(STORED_RESULT, encoding="utf-8") as f:
        d = json.load(f)
    d.pop("timings", None)  # written beside the results by the CLI, not a field
    res = DecisiveResult.from_dict(d)
    assert isinstance(res.base["sgd"], DecisiveRun) and isinstance(res.scaling["sgd"], LambdaScaling)
    assert res.base["sgd"].lam == d["base"]["sgd"]["lambda"] and res.base["sgd"].eta == d["base"]["sgd"]["eta"]
    assert res.scaling["sgd"].fit.slope == d["scaling"]["sgd"]["fit"]["slope"]
    assert json.dumps(to_jsonable(res.to_dict())) == json.dumps(d)


# ---------------------------------------------------------------------------------------------------------------
# the transformer section
# ---------------------------------------------------------------------------------------------------------------

DECISIVE = {
    "design": "quick", "stationarity_label": "drifting", "probe_items": 8, "n_eval_pairs": 32,
    "encoder": {"config": {"hidden": 32}, "heldout_accuracy": 0.55, "chance": 0.125},
    "selected": {"eta": 0.1, "lambda": 0.02, "rule": "the smallest eta*lambda"},
    "mean_abs_rel_error": 0.11, "mean_abs_rel_error_ci": [0.05, 0.2], "pearson": 0.31, "pearson_ci": [0.1, 0.5],
    "null_p_mean_abs_rel_error": 0.04,
    "base": {"sgd": {
        "eta": 0.1, "lambda": 0.02, "steps": 1200, "relaxations": 2.5, "label": "drifting", "reasons": ["too short"],
        "stationarity": {"relative_change": 0.0123, "loss_mean": 1.5, "chance_loss": 2.0, "accuracy": 0.6,
                         "accuracy_ci": [0.5, 0.7], "checks": {"finite": {"passed": True},
                                                               "long_enough": {"passed": False}}},
        "trajectory": {"heat_share": 0.37},
        "prediction": {"stats": {"mean_abs_rel_error": 0.11, "median_rel_error": -0.05, "pearson": 0.31,
                                 "spearman": 0.26},
                       "ci": {"mean_abs_rel_error": [0.05, 0.2], "median_rel_error": [-0.1, 0.02],
                              "pearson": [0.1, 0.5], "spearman": [0.03, 0.4]},
                       "null": {"mean_abs_rel_error": {"median": 0.33, "p": 0.04}}, "n_items": 8, "n_negative_q": 1}}},
    "scaling": {"sgd": {"fit": {"slope": -0.4, "ci": [-0.5, -0.3]}, "prediction": {"exponent": -0.42},
                        "prediction_in_ci": True,
                        "runs": [{"lambda": 0.02, "label": "drifting"}, {"lambda": 0.04, "label": "stationary"}]}},
    "grid": [{"eta": 0.1, "lambda": 0.02, "eta_lambda": 0.002, "mask": "all", "relaxation_steps": 500, "steps": 1200,
              "label": "drifting", "loss_window": 1.5, "accuracy_end": 0.6}],
    "nodecay": {"ratio": 1.2, "ci": [1.1, 1.3]},
}


def test_transformer_tables_and_key_numbers_read_each_field():
    from normscope.lab.result import DecisiveResult
    from normscope.report.stages.transformer import _key_numbers, _tables

    res = DecisiveResult.from_dict(DECISIVE)
    scale, stat, pred, scal, grid = _tables(res, None, res, "this run", full_run=False)
    assert scale.rows == ()  # no theta_D record in this result (a design before issue 35)
    assert stat.rows == (("this run", "sgd", "0.1", "0.02", "1,200", "2.5", "drifting", "+1.23%", "1.5 / 2",
                          "0.6 [0.500, 0.700]", "too short", "no"),)
    assert pred.rows == (("this run", "sgd", "0.11 [0.050, 0.200]", "-0.05 [\u22120.100, 0.020]", "0.31 [0.100, 0.500]",
                          "0.26 [0.030, 0.400]", "0.33 (p 0.04)", "8 (1 with q < 0)", "0.37"),)
    assert scal.rows == (("this run", "sgd", "0.02, 0.04", "n/a", "-0.42", "yes", "-0.400 [\u22120.500, \u22120.300]",
                          "drifting, stationary"),)
    assert grid.rows == (("this run", "0.1", "0.02", "0.002", "all", "500", 1200, "drifting", "1.5", "0.6"),)
    assert grid.title.endswith("rule: the smallest eta*lambda")
    kn = {k.key: k for k in _key_numbers(res, "this run")}
    assert kn["encoder.heldout_accuracy"].value == 0.55 and kn["encoder.heldout_accuracy"].unit == "(chance 0.125)"
    assert kn["selected"].value == "0.1 / 0.02"
    assert kn["mean_abs_rel_error"].unit == "[0.050, 0.200]" and kn["pearson"].unit == "[0.100, 0.500]"
    assert kn["null_p_mean_abs_rel_error"].value == 0.04
    assert kn["nodecay.ratio"].value == 1.2 and kn["nodecay.ratio"].unit == "[1.100, 1.300]"


# ---------------------------------------------------------------------------------------------------------------
# retrieval: QPP, incremental value, strata
# ---------------------------------------------------------------------------------------------------------------


def _retrieval(**kw):
    from normscope.retrieval import RetrievalResult

    return RetrievalResult.from_dict({"scorers": {}, "calibration": {}, **kw})


def test_qpp_and_incremental_tables_and_notes():
    from normscope.report.stages.retrieval import incremental_notes, qpp_tables

    res = _retrieval(
        qpp={"clarity": {"kind": "pre", "direction": 1, "formula": "f(q)", "reference": "Cronen-Townsend 2002",
                         "status": "ok", "auroc": 0.61, "auroc_ci": [0.55, 0.67], "aurc": 0.2, "kendall_tau": 0.12,
                         "kendall_tau_ci": [0.05, 0.19], "spearman_rho": 0.17, "spearman_rho_ci": [0.08, 0.26]},
             "query_norm": {"kind": "norm", "direction": -1, "formula": "||q||", "status": "not computed",
                            "reason": "3 of 9 queries have no finite value"}},
        qpp_info={"ci": "percentile bootstrap over 9 queries"},
        calibration_incremental={"status": "ok", "baseline": ["clarity", "wig"], "added": ["query_norm"],
                                 "auroc_without": 0.6, "auroc_with": 0.64, "diff": 0.04, "ci": [0.01, 0.07],
                                 "ci_covers": "queries", "folds": 5, "fold_draws": 20,
                                 "ndcg@10": {"status": "ok", "tau_without": 0.2, "tau_with": 0.19, "diff": -0.01,
                                             "ci": [-0.03, 0.01]},
                                 "single_baselines": [{"baseline": ["wig"], "auroc_without": 0.58, "auroc_with": 0.6,
                                                       "diff": 0.02, "ci": [-0.01, 0.05]}]})
    q, inc = qpp_tables(res)
    assert q.rows[0] == ("clarity", "pre", 1, 0.61, "[0.550, 0.670]", 0.2, 0.12, "[0.050, 0.190]", 0.17,
                         "[0.080, 0.260]", "f(q) (Cronen-Townsend 2002)")
    assert q.rows[1][:4] == ("query_norm", "norm", -1, "not computed: 3 of 9 queries have no finite value")
    assert q.title.endswith("Spearman rho; percentile bootstrap over 9 queries)")
    assert inc.rows == (("top-1 relevant (AUROC)", "clarity, wig", 0.6, 0.64, 0.04, "[0.010, 0.070]"),
                        ("nDCG@10 (Kendall tau)", "clarity, wig", 0.2, 0.19, -0.01, "[\u22120.030, 0.010]"),
                        ("top-1 relevant (AUROC)", "wig", 0.58, 0.6, 0.02, "[\u22120.010, 0.050]"))
    assert "(query_norm)" in inc.title and "(5 folds x 20 fold draws" in inc.title
    notes = incremental_notes(res)
    assert notes[0].startswith("Adding the norm signals to every free baseline raises the cross-fitted AUROC")
    assert "0.600 without, 0.640 with, difference +0.040, 95% CI [+0.010, +0.070]" in notes[0]
    assert "does not measurably change the cross-fitted Kendall tau" in notes[1]
    assert incremental_notes(_retrieval(calibration_incremental={"status": "not computed", "reason": "one class"})) == [
        "Incremental value of the norm signals: not computed (one class)."]


def test_strata_sentence_and_table_read_the_rows():
    from normscope.report.stages.retrieval import _strata_tables, retrieval_sentences

    rows = [{"stratifier": "query_norm", "quartile": 1, "range": [1.0, 2.0], "n": 40, "baseline_mean": 0.5,
             "scorer_mean": 0.56, "mean_delta": 0.06, "mean_delta_ci": [0.02, 0.1], "relative": 0.12, "p_holm": 0.01},
            {"stratifier": "zipf", "quartile": 3, "range": [4.0, 5.0], "n": 38, "baseline_mean": 0.6,
             "scorer_mean": 0.59, "mean_delta": -0.01, "mean_delta_ci": [-0.05, 0.03], "relative": -0.02,
             "p_holm": 0.9}]
    d = {"scorers": {"cosine": {"ndcg@10": 0.6}}, "strata": {"correction": "Holm over 2", "scorers": {"inverse_norm": rows}}}
    says = retrieval_sentences(d)
    assert says == ["In the pre-specified strata (quartiles of query norm, query word frequency and top-1 document "
                    "norm), 1 of 2 differ from cosine after Holm correction: query_norm Q1: \u0394 0.060 (+12.00 %, "
                    "Holm p = 0.010)."]
    (table,) = _strata_tables(_retrieval(**d))
    assert table.title.startswith("inverse_norm vs cosine in the pre-specified strata (Holm over 2;")
    assert table.rows == (("query_norm", "Q1", "[1.000, 2.000]", 40, 0.5, 0.56, 0.06, "[0.020, 0.100]", "+12.00 %", 0.01),
                          ("zipf", "Q3", "[4.000, 5.000]", 38, 0.6, 0.59, -0.01, "[\u22120.050, 0.030]",
                           "\u22122.00 %", 0.9))


# ---------------------------------------------------------------------------------------------------------------
# probes, lab, calibrate, the CLI summary
# ---------------------------------------------------------------------------------------------------------------


def test_probe_balance_numbers_read_each_statistic():
    from normscope.probes.result import Balance
    from normscope.report.stages.probes import _balance_numbers

    b = Balance.from_json({"statistics": {"dispersion": 0.8, "share_negative_q": 0.1, "mean_abs_rel_error": 0.25,
                                          "heat_share": 0.3},
                           "null": {"dispersion": {"mean": 1.4, "range": [1.2, 1.6]}, "share_negative_q": None},
                           "p_below": {"dispersion": 0.002}, "n_perm": 999,
                           "ci": {"dispersion": [0.7, 0.9], "share_negative_q": [0.05, 0.15],
                                  "mean_abs_rel_error": [0.2, 0.3], "heat_share": [None, None]}})
    kn = {k.key: k.value for k in _balance_numbers(b)}
    assert kn["balance.statistics.dispersion"].startswith("0.8 [0.700, 0.900]; permutation null mean 1.4, ")
    assert kn["balance.statistics.dispersion"].endswith("(one-sided, below)")
    assert kn["balance.statistics.share_negative_q"] == "0.1 [0.050, 0.150]"  # no null: no comparison
    assert kn["balance.statistics.mean_abs_rel_error"] == "0.25 [0.200, 0.300]"
    assert kn["balance.statistics.heat_share"] == 0.3


def test_lab_key_numbers_take_the_gate_of_the_result():
    from normscope.lab.result import LabResult
    from normscope.report.stages.lab import _key_numbers

    res = LabResult.from_dict({"mean_abs_rel_error": 0.01, "median_rel_error": -0.004, "pearson": 0.99,
                               "q_over_c": {"mean": 1.02, "sd": 0.1},
                               "gate": {"mean_abs_rel_error": 0.07, "abs_median_rel_error": 0.03, "pearson": 0.9,
                                        "passed": True}})
    kn = {k.key: k for k in _key_numbers(res)}
    assert kn["mean_abs_rel_error"].label.endswith("(gate \u2264 0.07)")
    assert kn["median_rel_error"].label.endswith("(gate |.| \u2264 0.03)")
    assert kn["pearson"].label.endswith("(gate \u2265 0.9)")
    assert kn["gate.passed"].value == "yes" and kn["q_over_c.mean"].value == 1.02
    # a result without its gate: the gate the lab applies (normscope.lab.GATE), not passed
    kn = {k.key: k for k in _key_numbers(LabResult.from_dict({"mean_abs_rel_error": 0.01}))}
    assert kn["mean_abs_rel_error"].label.endswith("(gate \u2264 0.05)") and kn["gate.passed"].value == "no"
    assert isinstance(LabResult.from_dict({"q_over_c": {"mean": 1.0}}).q_over_c, Spread)


def test_calibrate_tables_read_the_held_out_numbers():
    from normscope.cli.calibrate import print_result
    from normscope.extensions.calibrate import CalibrateResult

    res = CalibrateResult.from_dict({
        "dataset_name": "scifact", "model": "m", "target": "top1_relevant", "signals": ["top1_score"],
        "method": "platt", "parts": {"fit": 10, "held-out": 5},
        "calibrator": {"thresholds": {"answer": {"threshold": 0.7, "precision": 0.9, "delta": 0.1,
                                                 "statement": "P >= 0.9", "assumption": "exchangeable"},
                                      "keep_documents": {"k": 10, "threshold": 0.55}}},
        "heldout": {"split": "test", "n": 5, "base_rate": 0.4, "mean_p": 0.45, "auroc": 0.8, "auroc_ci": [0.6, 0.95],
                    "ece": 0.07, "ece_ci": [0.02, 0.15], "ece_bins": {"populated_bins": 4, "flag": "few bins"},
                    "answer": {"threshold": 0.7, "precision": 0.92, "precision_ci": [0.8, 1.0], "coverage": 0.3,
                               "coverage_ci": [0.1, 0.5]},
                    "answer_at": [{"threshold": 0.5, "precision": 0.81, "coverage": 0.6}],
                    "keep_documents": {"precision": 0.66, "coverage": 0.44}},
        "shift": {"fitted_on": {"dataset_name": "nfcorpus", "split": "train"},
                  "evaluated_on": {"dataset_name": "scifact", "split": "test"}, "note": "a measurement"}})
    out, err = Console(record=True, width=300), Console(record=True, width=300)
    print_result(res, out, err)
    text, etext = out.export_text(), err.export_text()
    assert "held-out ('test')" in text and "ECE (15 bins, 4 populated)" in text
    assert "answer when P >= lambda (target precision 0.90)" in text
    assert "0.70" in text and "0.920" in text and "[0.800, 1.000]" in text and "1 - delta = 0.9" in text
    assert "answer when P >= p (asked)" in text and "0.810" in text and "0.600" in text
    assert "keep top-10 documents with cosine >= t" in text and "0.550" in text and "0.660" in text
    assert "guarantee: P >= 0.9; assumption: exchangeable" in etext and "(!) few bins" in etext
    assert "shift: fitted on nfcorpus 'train', evaluated on scifact 'test': a measurement" in etext


def test_cli_summary_counts_the_claims_from_claims_tested(tmp_path):
    from normscope.claims import CLAIMS
    from normscope.cli.report import _claim_cell, print_summary
    from normscope.report.runner import ReportResult
    from normscope.report.stage import Section, StageRecord
    from normscope.report.stages import STAGES
    from normscope.values import Status

    keys = list(CLAIMS)
    claims = [{"key": keys[0], "claim": "the first claim", "label": "Spearman r", "measured": 0.2, "ci": [0.1, 0.3],
               "percent": False, "verdict": "reproduced", "reason": "the CI excludes 0"},
              {"key": keys[1], "claim": "the second claim", "verdict": "not testable here", "reason": "no data"}]
    summary = {"report": {"model": "m", "preset": "quick", "seconds": 3.0, "stages_run": [], "stage_cached": {}},
               "what_this_says": {}, "claims": claims,
               "claims_tested": {"total": 2, "tested": 1, "not_tested": [keys[1]],
                                 "verdicts": {"reproduced": 1, "not testable here": 1}},
               "missing_data": [{"dataset": "simlex-999", "title": "SimLex-999", "sections": ["Similarity"],
                                 "line": "SimLex-999 is not here"}]}
    records = {st.name: StageRecord(st.name, Status.NOT_RUN, {k: Section(k, Status.NOT_RUN, "not selected")
                                                              for k in st.sections}) for st in STAGES}
    console = Console(record=True, width=200)
    print_summary(ReportResult(tmp_path / "i.html", tmp_path / "s.json", summary, records, 3.0), console)
    text = console.export_text()
    assert "claims: 1 of 2 tested here; 1 not testable here (each row on the page says why)" in text
    # a summary without the per-kind count (written before kinds existed): counted from the rows' claims
    assert f"{CLAIMS[keys[0]].kind}" == "construction" and CLAIMS[keys[1]].kind == "exploratory"
    assert "checks by construction: 1 reproduced (of 1); exploratory: 1 not testable here (of 1)" in text
    assert "the first claim" in text and "Spearman r: 0.200 [0.100, 0.300]" in text and "the CI excludes 0" in text
    assert "the second claim" not in text and "SimLex-999 is not here" in text
    assert _claim_cell(ClaimRow.from_json(claims[0]), False) == "0.200 [0.100, 0.300] reproduced"
