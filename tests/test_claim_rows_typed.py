"""The scorecard is typed end to end (issue 37 item 1): builders return ClaimRow objects built from the stages' typed
results, the page renders them, and they become JSON only at the edge, with the keys and the key order of the dict
rows that summary.json files already hold."""

from __future__ import annotations

import json

import numpy as np
import pytest

from normscope._io import to_jsonable
from normscope.claims import ClaimRow, Judgement, claim_row, judge, not_testable_row, paper_scope_rows
from normscope.values import Interval

#: summary.json's scorecard keys, in the order every earlier normscope wrote them.
KEYS = ["key", "kind", "claim", "paper", "claimed_size", "tested_on", "label", "measured", "ci", "percent", "beside",
        "verdict", "direction", "size", "reason", "why", "needs", "section", "n", "what", "statistic", "details"]


def test_a_row_is_typed_and_its_json_has_the_old_keys_in_the_old_order():
    j = judge("frequency", -0.369, (-0.393, -0.345))
    assert isinstance(j, Judgement) and (j.verdict, j.direction, j.size) == ("reproduced", "reproduced", "consistent")
    row = claim_row("frequency", measured=np.float64(-0.369), ci=[np.float32(-0.393), -0.345], judged=j,
                    n=np.int64(800), details={"plain Spearman rho": -0.4}, note="source A: rho = -0.4", label="rho",
                    what="Spearman", statistic="signals: rho", beside="plain -0.4")
    assert isinstance(row, ClaimRow) and isinstance(row.ci, Interval)
    assert row.measured == -0.369 and type(row.measured) is float and row.ci.lo == pytest.approx(-0.393)
    assert row.why == j.why + "; source A: rho = -0.4" and row.judgement == j.but(why=row.why)
    d = to_jsonable(row)
    assert list(d) == KEYS
    assert d["ci"] == [pytest.approx(-0.393), -0.345] and d["n"] == 800 and d["percent"] is False
    assert d["kind"] == "paper" and d["claimed_size"] == "strong: |\u03c1| at least 0.3" and d["section"] == "semantic_signals"
    # read back (summary.json of this or an earlier run): the same object, and the same JSON text
    back = ClaimRow.from_json(json.loads(json.dumps(d)))
    assert back == row and json.dumps(to_jsonable(back)) == json.dumps(d)


def test_an_older_rows_missing_keys_stay_missing_when_written_again():
    old = {"key": "frequency", "claim": "c", "measured": 0.1, "ci": [0.0, 0.2], "verdict": "inconclusive",
           "extra_key": {"kept": True}}
    row = ClaimRow.from_json(old)
    assert row.kind is None and row.row_kind == "paper" and row.judgement is not None
    assert json.dumps(to_jsonable(row)) == json.dumps(old)


def test_a_row_reads_as_a_read_only_mapping_during_the_move():
    row = not_testable_row("gain_low_quality", "no quality label")
    assert row["verdict"] == row.verdict == "not testable here" and row.get("nope", 3) == 3
    assert "ci" in row and "nope" not in row and list(row) == KEYS and len(row) == len(KEYS)
    assert dict(row)["reason"] == "no quality label"
    with pytest.raises(TypeError):
        row["verdict"] = "reproduced"  # type: ignore[index]
    changed = row.but(tested_on="elsewhere")
    assert changed.tested_on == "elsewhere" and row.tested_on == "" and list(to_jsonable(changed)) == KEYS


def test_a_judgement_reads_as_the_dict_judge_returned_and_refuses_an_unknown_verdict():
    j = judge("gain_high_frequency", -0.004, (-0.009, 0.001))
    assert dict(j) == {"verdict": "refuted", "direction": "inconclusive", "size": "smaller", "reason": j.reason,
                       "why": j.why}
    assert dict(j, reason="r")["reason"] == "r" and j["size"] == "smaller"
    assert Judgement.of(dict(j)) == j
    with pytest.raises(ValueError, match="unknown verdict"):
        Judgement.of({"verdict": "probably", "direction": "", "size": "", "reason": "", "why": ""})
    with pytest.raises(ValueError, match="unknown verdict"):
        claim_row("frequency", measured=None, ci=None, judged={"verdict": "probably"})


def test_paper_scope_rows_are_typed():
    rows = paper_scope_rows("sentence-transformers/all-MiniLM-L12-v2")
    assert [type(r) for r in rows] == [ClaimRow] * 5
    assert [(r.key, r.verdict) for r in rows] == [("paper_models", "inconclusive"),
                                                  ("paper_benchmark_feverous", "not testable here"),
                                                  ("paper_benchmark_treecut", "not testable here"),
                                                  ("paper_benchmark_ruletaker", "not testable here"),
                                                  ("llm_baselines", "not testable here")]


def _same(a: list, b: list) -> None:
    assert all(isinstance(r, ClaimRow) for r in a + b)
    assert json.dumps(to_jsonable(a)) == json.dumps(to_jsonable(b))


def test_builders_read_the_typed_result_and_a_json_dict_alike(rng):
    """Each typed builder gives the same rows from the stage's typed result as from its --json dict read back."""
    from test_claims import _probe_summary, _retrieval_summary

    from normscope.probes.claims import probe_claims
    from normscope.probes.result import ProbeResult
    from normscope.retrieval.claims import retrieval_claims
    from normscope.retrieval.result import RetrievalResult
    from normscope.similarity.claims import similarity_claim
    from normscope.similarity.result import SimilarityResult

    probe = _probe_summary(rng, eta=2e-3)
    rows = probe_claims(ProbeResult.from_dict(probe))
    _same(rows, probe_claims(probe))
    # the AdamW checkpoint of the constructed probe: the balance row is outside the SGD form's scope
    assert [r.key for r in rows] == ["corr_norm_heat", "corr_norm_drift", "req_predicts_norm"]
    assert rows[2].verdict == "not testable here" and "AdamW" in rows[2].reason

    q4 = {"stratifier": "query_zipf", "quartile": 4, "range": [5.1, 6.9], "n": 75, "relative": 0.018,
          "relative_ci": [0.004, 0.031], "mean_delta": 0.01, "mean_delta_ci": [0.002, 0.02], "p": 0.01, "p_holm": 0.12}
    ret = _retrieval_summary(0.0017, [-0.0047, 0.0088], 0.6, stratum=q4)
    ret["abstention"] = {"status": "ok", "depth": 100, "implementation": "mteb",
                         "signals": {"max": {"nauc": 0.42, "nauc_ci": [0.31, 0.55]},
                                     "query_norm": {"nauc": -0.01, "nauc_ci": [-0.16, 0.13]}},
                         "comparison": {"best_baseline": "max", "nauc": -0.01, "baseline_nauc": 0.42,
                                        "baseline_ci": [0.31, 0.55], "position": "below", "diff": -0.43,
                                        "ci": [-0.6, -0.3], "n_queries": 300}}
    rows = retrieval_claims(RetrievalResult.from_dict(ret))
    _same(rows, retrieval_claims(ret))
    by = {r.key: r for r in rows}
    assert by["gain_high_frequency"].verdict == "reproduced"  # CI [0.4, 3.1] % excludes 0 and meets +1.2 to +2.3 %
    nauc = by["norm_confidence_nauc"]
    assert (nauc.verdict, nauc.measured, list(nauc.ci)) == ("refuted", -0.43, [-0.6, -0.3])
    assert nauc.details["nAUC max 95% CI"] == Interval(0.31, 0.55) and "below max's CI [0.31, 0.55]" in nauc.beside

    sim = {"model": "m", "dataset": "/x/SimLex-999.txt", "n_pairs": 500, "fit": {"n_pairs": 499},
           "scorers": {"cosine": {"spearman": 0.39},
                       "inverse_norm": {"param_name": "alpha", "param": 0.01, "fit_spearman": 0.5, "spearman": 0.40,
                                        "delta_spearman": 0.01, "delta_ci": [0.004, 0.016], "relative": 0.03,
                                        "relative_ci": [0.01, 0.04]}}}
    row = similarity_claim(SimilarityResult.from_dict(sim))
    _same([row], [similarity_claim(sim)])
    assert (row.verdict, row.n) == ("reproduced", 500) and row.beside == "relative +3.00 % [+1.00, +4.00] %"


def test_the_page_renders_the_typed_rows_as_it_renders_their_json(tmp_path):
    """The page from a summary holding ClaimRow objects is the page from summary.json read back (dict rows)."""
    import re

    from normscope.report.html import render_html
    from normscope.report.missing import availability
    from normscope.report.stages import SECTIONS

    rows = [claim_row("frequency", measured=-0.369, ci=(-0.393, -0.345), judged=judge("frequency", -0.369,
                                                                                       (-0.393, -0.345))),
            not_testable_row("gain_low_quality", "no quality label")]
    summary = {"report": {"sizes": {}, "seconds": 1.0, "model": "m", "preset": "quick"}, "claims": rows,
               "what_this_says": {}}
    summary.update(availability(summary, SECTIONS))
    typed = render_html(summary, {}, tmp_path)
    read_back = render_html(json.loads(json.dumps(to_jsonable(summary))), {}, tmp_path)
    stamp = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert stamp.sub("", typed) == stamp.sub("", read_back)
    assert "1 of 2 claims tested" in typed and typed.count('<tr class="verdict-') == 2
