"""The report's section ``length_designs`` (issue 39): the TreeCut, RuleTaker and WordNet-chain rows run inside
``normscope report``, their rows reach the scorecard, and the commands the page prints reproduce its numbers."""

from __future__ import annotations

import json

import pytest

from _reproduce import check_reproduces
from normscope.errors import InputError
from normscope.report import ReportConfig, Sizes, run_report
from normscope.report.stages.designs import DESIGN_N, design_n

SIZES = Sizes(words=60, signal_items=40, design_items=40, n_boot=100, n_perm=100)


@pytest.fixture(scope="module")
def designs_run(tmp_path_factory, bundled_encoder, shared_data):
    out = tmp_path_factory.mktemp("designs")
    cfg = ReportConfig(out=out, sizes=SIZES, only=("setup", "signals"),
                       signals=("treecut", "ruletaker", "wordnet_chains"))
    return cfg, run_report(cfg, progress=False, encoder=bundled_encoder)


def test_designs_run_in_the_report_and_feed_the_scorecard(designs_run):
    cfg, res = designs_run
    s = json.loads((cfg.out / "summary.json").read_text())
    sec = s["length_designs"]
    assert sec["status"] == "ok" and list(sec["result"]) == ["treecut", "ruletaker", "wordnet_chains"]
    # only designs selected: the signals section says so instead of failing the stage
    assert s["semantic_signals"]["status"] == "not_run"
    tc = sec["result"]["treecut"]["stats"]
    assert tc["n_answerable"] + tc["n_unanswerable"] == 40
    wn = sec["result"]["wordnet_chains"]
    assert wn["n_hierarchies"] <= 40 and wn["length_matched"]["ci_unit"] == "hierarchies"
    rows = {r["key"]: r for r in s["claims"]}
    for key, design in (("abstention_treecut", "treecut"), ("abstention_ruletaker", "ruletaker"),
                        ("specificity_hierarchy", "wordnet_chains")):
        got = sec["result"][design]["claims"][0]
        assert rows[key]["verdict"] == got["verdict"] and rows[key]["measured"] == got["measured"]
        assert rows[key]["verdict"] != "not testable here" or "untied" in rows[key]["why"]
    assert "CI resamples whole hierarchies" in rows["specificity_hierarchy"]["what"]
    for bench in ("treecut", "ruletaker"):  # the paper-benchmark rows carry the measuring row's verdict
        assert f"measured here by the row abstention_{bench}: {rows[f'abstention_{bench}']['verdict']}" in \
            json.dumps(rows[f"paper_benchmark_{bench}"], ensure_ascii=False)
    page = (cfg.out / "index.html").read_text()
    assert 'id="length_designs"' in page and "Text rows at equal length" in page
    assert "design_items.treecut" in json.dumps(s["report"])


def test_design_commands_reproduce_the_section(designs_run, tmp_path, monkeypatch):
    cfg, res = designs_run
    check_reproduces(cfg.out, res.records, ["length_designs"], tmp_path, monkeypatch, rel=1e-5)


def test_design_sizes_and_refusals(tmp_path):
    assert design_n("treecut", None) == DESIGN_N["treecut"] == 1000 and design_n("wordnet_chains", 200) == 200
    assert design_n("wordnet_chains", 800) == 300  # the cap never raises a design above its default
    with pytest.raises(InputError, match="unknown signal.* 'chains'; choose from frequency.*wordnet_chains"):
        ReportConfig(out=tmp_path / "r", signals=("chains",))
    from normscope.report.sizes import QUICK

    assert QUICK.design_items == 200
