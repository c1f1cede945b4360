"""The lab's, the signals' and the inference cost's scorecard rows are built from typed results (issue 37 item 1):
the decisive design's and the frozen-tower arm's results read back from their stored JSON with the same text, the
builders give the same row from the typed result as from its dict, and the scale row's sentence is composed once
from the CI's resamples (no text surgery)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from normscope._io import to_jsonable
from normscope.lab.claims import transformer_claim_row, transformer_items_claim_row, tower_claim_row
from normscope.lab.result import DecayedScale, DecisiveResult, ScaleOverSeeds, ScaleReplicate
from normscope.lab.tower import TowerLabResult
from normscope.lab.tower_result import TowerControl, TowerNull
from normscope.retrieval.claims import cost_claim
from normscope.retrieval.cost import InferenceCost
from normscope.values import Interval

RESULTS = Path(__file__).resolve().parents[1] / "src" / "normscope" / "lab" / "results"


def _stored(name: str) -> dict:
    d = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    d.pop("timings", None)  # written apart from the results (not a field)
    return d


def _text(x) -> str:
    return json.dumps(to_jsonable(x))


def test_the_stored_decisive_result_reads_back_typed_with_the_same_text():
    d = _stored("decisive_full.json")
    r = DecisiveResult.from_dict(d)
    sgd = r.base_run("sgd")
    assert isinstance(sgd.scale, DecayedScale) and isinstance(sgd.scale_seeds, ScaleOverSeeds)
    assert all(isinstance(x, ScaleReplicate) for x in sgd.replicates) and len(sgd.replicates) == 2
    assert isinstance(sgd.scale.abs_rel_error_ci, Interval) and sgd.scale.lam == d["base"]["sgd"]["scale"]["lambda"]
    # the per-seed errors are the three runs' own (E2) errors; their mean is the row's statistic
    per = [x.rel_error for x in sgd.scale_seeds.per_seed]
    assert sgd.scale_seeds.n_seeds == 3 and sum(per) / 3 == pytest.approx(sgd.scale_seeds.rel_error, rel=1e-12)
    assert per[0] == sgd.scale.rel_error and per[1] == sgd.replicates[0].rel_error
    assert r.scaling_factors == [0.5, 2.0] and r.base_run("none").scale is None
    assert _text(r.to_dict()) == json.dumps(d)


def test_the_stored_tower_result_reads_back_typed_with_the_same_text():
    d = _stored("tower_full.json")
    r = TowerLabResult.from_dict(d)
    assert isinstance(r.null, TowerNull) and r.null.n_perm == 2000
    assert all(isinstance(c, TowerControl) for c in r.controls.values()) and r.controls["nodecay"].share_grown == 1.0
    assert [g.senses for g in r.groups] == [1, 2, 3, 4] and isinstance(r.mean_abs_rel_error_ci, Interval)
    assert _text(r.to_dict()) == json.dumps(d)


@pytest.mark.parametrize("build", [transformer_claim_row, transformer_items_claim_row])
def test_decisive_rows_are_the_same_from_the_typed_result_and_from_its_dict(build):
    d = _stored("decisive_full.json")
    assert _text(build(d)) == _text(build(DecisiveResult.from_dict(d)))


def test_tower_row_is_the_same_from_the_typed_result_and_from_its_dict():
    d = _stored("tower_full.json")
    row = tower_claim_row(TowerLabResult.from_dict(d))
    assert _text(row) == _text(tower_claim_row(d))
    assert row.measured == d["mean_abs_rel_error"] and row.verdict == "reproduced"
    # the controls' figures travel to the row's details without their groups
    assert row.details["controls"]["adamw"]["mean_abs_rel_error_sgd_form"] == \
        d["controls"]["adamw"]["mean_abs_rel_error_sgd_form"] and "groups" not in row.details["controls"]["adamw"]


def test_scale_row_names_the_resampling_of_the_figure_it_judges():
    """With seed replicates the row judges the mean over runs, and its sentence names that CI's resampling (seeds,
    then blocks) and not the single run's; without them it names the single run's blocks."""
    d = _stored("decisive_full.json")
    seeds, single = d["base"]["sgd"]["scale_seeds"], d["base"]["sgd"]["scale"]
    row = transformer_claim_row(d)
    assert row.measured == seeds["abs_rel_error"] and list(row.ci) == seeds["abs_rel_error_ci"]
    assert row.what.endswith("the mean over 3 runs on different batch seeds (the base run and 2 replicates from the "
                             f"same start); CI: {seeds['resamples']}")
    assert single["resamples"] not in row.what and row.what.count("CI:") == 1
    del d["base"]["sgd"]["scale_seeds"], d["base"]["sgd"]["replicates"]
    one = transformer_claim_row(d)
    assert one.measured == single["abs_rel_error"] and one.what.endswith(f"; CI: {single['resamples']}")
    assert "batch seeds" not in one.what


def test_inference_cost_is_typed_and_its_row_reads_it():
    stored = {"ratio": 2e-5, "range": [1.5e-5, 3e-5], "ratios": [1.5e-5, 2e-5, 3e-5], "encoder_s_per_item": 0.01,
              "norm_s_per_item": 2e-7, "n_items": 128, "k": 100, "repeats": 3, "threads": 2, "model": "m",
              "device": "cpu"}
    cost = InferenceCost.from_json(stored)
    assert cost.range == Interval(1.5e-5, 3e-5) and cost.repeats == 3 and json.dumps(to_jsonable(cost)) == json.dumps(stored)
    row = cost_claim(cost)
    assert _text(row) == _text(cost_claim(stored))
    # 2e-5 of the encoder's time, the whole range below the claim's 1/1000: reproduced
    assert row.verdict == "reproduced" and row.measured == 2e-5 and list(row.ci) == [1.5e-5, 3e-5] and row.n == 128
    assert row.details == {"encoder_s_per_item": 0.01, "norm_s_per_item": 2e-7, "ratios": [1.5e-5, 2e-5, 3e-5],
                           "repeats": 3, "device": "cpu"}
    assert "100 candidate scores" in row.what and "3 repeats" in row.what


def test_signal_rows_are_the_same_from_a_live_correlate_result_and_from_its_json(bundled_encoder):
    """The report passes the live CorrelateResult (numpy figures inside); the command's --json passes its dict: the
    rows are the same JSON text."""
    from _correlate import correlate

    from normscope.signals.claims import ambiguity_claim, controlled_figure, signal_claims

    items = ["dog", "cat", "house", "car", "tree", "idea", "truth", "justice", "water", "music", "red car",
             "old house", "tall tree", "cold water", "loud music", "small table", "the old dog", "a black cat",
             "the big house", "a fast red car", "the cold river water", "a small wooden table", "pure hope", "river"]
    res = correlate("frequency", encoder=bundled_encoder, items=items, n_boot=100, n_perm=100, seed=1)
    d = json.loads(json.dumps(to_jsonable(res.to_dict())))
    live, back = signal_claims({"frequency": res}, {}), signal_claims({"frequency": d}, {})
    assert _text(live) == _text(back)
    row = next(r for r in live if r.key == "frequency")
    est, ci, n, _ = controlled_figure(res)
    assert row.measured == est and list(row.ci) == list(ci) and row.n == n
    assert (est, n) == ((res.length_matched.rho, res.length_matched.n) if res.length_matched.rho is not None
                        else (res.partial_spearman.rho, res.partial_spearman.n))
    assert _text(ambiguity_claim(res)) == _text(ambiguity_claim(d))
