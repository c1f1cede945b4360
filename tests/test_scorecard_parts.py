"""A claim left without a row by an ``ok`` section: the scorecard says which data the part that tests it lacked.

The semantic-signals section runs its signals one by one and records, in ``derived["missing"]``, a signal whose
dataset is absent; the report's missing-data list reads that (:func:`normscope.report.missing.availability`) and
the claim's scorecard row must name the same dataset, not "the section ran but reported no figure".
"""

from __future__ import annotations

from normscope.report.missing import availability
from normscope.report.scorecard import gather_claims
from normscope.report.stage import Section, StageRecord
from normscope.values import Status


def _records(derived):
    sec = Section(key="semantic_signals", status=Status.OK, derived=derived)
    return {"signals": StageRecord(stage="signals", status=Status.OK, sections={"semantic_signals": sec})}


def test_an_ok_section_missing_a_part_names_its_data():
    missing = {"uncertainty": {"dataset": "chaosnli", "title": "ChaosNLI", "cause": "not found"},
               "specificity": {"dataset": "wordnet", "title": "WordNet 3.0", "cause": "not found",
                               "claims": ["ambiguity"]}}
    rows = {r.key: r for r in gather_claims(_records({"missing": missing}), model="m")}
    assert rows["uncertainty"].verdict == "not testable here"
    assert rows["uncertainty"].reason == "lacks ChaosNLI (see Missing data)"
    # a part whose claims are listed blocks those claims, not the claim named like the part
    assert rows["ambiguity"].reason == "lacks WordNet 3.0 (see Missing data)"
    assert rows["specificity"].reason == "the section ran but reported no figure for this claim"
    # a claim of the section whose part did not lack data keeps the plain sentence
    assert rows["frequency"].reason == "the section ran but reported no figure for this claim"
    # the missing-data list counts the same claims under the same datasets
    summary = {"claims": [r.to_json() for r in rows.values()],
               "semantic_signals": {"status": "ok", "derived": {"missing": missing}}}
    by = {d["dataset"]: d["claims"] for d in availability(summary, {"semantic_signals": "Semantic signals"})["missing_data"]}
    assert by == {"chaosnli": ["uncertainty"], "wordnet": ["ambiguity"]}


def test_no_missing_part_keeps_the_plain_sentence():
    rows = {r.key: r for r in gather_claims(_records(None), model="m")}
    assert rows["uncertainty"].reason == "the section ran but reported no figure for this claim"
