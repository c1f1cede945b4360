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
                       signals=("treecut", "ruletaker", "wordnet_chains", "shuffle"))
    return cfg, run_report(cfg, progress=False, encoder=bundled_encoder)


def test_designs_run_in_the_report_and_feed_the_scorecard(designs_run):
    cfg, res = designs_run
    s = json.loads((cfg.out / "summary.json").read_text())
    sec = s["length_designs"]
    assert sec["status"] == "ok" and list(sec["result"]) == ["treecut", "ruletaker", "wordnet_chains", "shuffle"]
    # only designs selected: the signals section says so instead of failing the stage
    assert s["semantic_signals"]["status"] == "not_run"
    tc = sec["result"]["treecut"]["stats"]
    assert tc["n_answerable"] + tc["n_unanswerable"] == 40
    wn = sec["result"]["wordnet_chains"]
    assert wn["n_hierarchies"] <= 40 and wn["n_clusters"] < wn["n_hierarchies"]
    assert wn["length_matched"]["ci_unit"] == "groups of chains sharing their depth-3 synset"
    rows = {r["key"]: r for r in s["claims"]}
    for key, design in (("abstention_treecut", "treecut"), ("abstention_ruletaker", "ruletaker"),
                        ("specificity_hierarchy", "wordnet_chains"), ("atypical_input_shuffle", "shuffle")):
        got = sec["result"][design]["claims"][0]
        assert rows[key]["verdict"] == got["verdict"] and rows[key]["measured"] == got["measured"]
        assert rows[key]["verdict"] != "not testable here" or "untied" in rows[key]["why"]
    assert "CI resamples whole groups of chains sharing their depth-3 synset" in rows["specificity_hierarchy"]["what"]
    for bench in ("treecut", "ruletaker"):  # the paper-benchmark rows carry the measuring row's verdict
        assert f"measured here by the row abstention_{bench}: {rows[f'abstention_{bench}']['verdict']}" in \
            json.dumps(rows[f"paper_benchmark_{bench}"], ensure_ascii=False)
    page = (cfg.out / "index.html").read_text()
    assert 'id="length_designs"' in page and "Text rows at equal length" in page
    assert "design_items.treecut" in json.dumps(s["report"])
    # the shuffle design: 40 SciFact titles, its row decided by the median relative change over those pairs
    sh = sec["result"]["shuffle"]
    assert sh["n_items"] == 40 and sh["pooled"]["n_pairs"] == sh["n_pairs"] <= 40
    assert rows["atypical_input_shuffle"]["measured"] == pytest.approx(sh["pooled"]["median_rel_change"])
    assert rows["atypical_input_shuffle"]["reason"] != "the section ran but reported no figure for this claim"


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


def _report(out, signals, encoder):
    cfg = ReportConfig(out=out, sizes=SIZES, only=("setup", "signals"), signals=signals)
    return cfg, run_report(cfg, progress=False, encoder=encoder)


def test_feverous_runs_in_the_report_as_correlate_computes_it(tmp_path, monkeypatch, bundled_encoder):
    """A planted local FEVEROUS copy (the sample file of tests/test_feverous_signal.py, accepted unverified: its
    sha256 is not the real sample's): the section has the design, its row reaches the scorecard and the benchmark
    row, and the printed ``normscope correlate --signal feverous`` gives the same figures."""
    from test_feverous_signal import _write

    from normscope.data import settings

    data = tmp_path / "data"
    (data / "feverous").mkdir(parents=True)
    _write(data / "feverous" / "sample.jsonl")
    with settings(dest=data, offline=True, verify=False):
        cfg, res = _report(tmp_path / "r", ("feverous",), bundled_encoder)
        s = json.loads((cfg.out / "summary.json").read_text())
        sec = s["length_designs"]
        assert sec["status"] == "ok" and list(sec["result"]) == ["feverous"]
        assert sec["command"] == ("normscope correlate --signal feverous --model sentence-transformers/all-MiniLM-L6-v2 "
                                  "--precision fp32 --n-boot 100 --n-perm 100 --seed 0 --json feverous.json")
        st = sec["result"]["feverous"]["stats"]["nei"]
        assert (st["n_answerable"], st["n_unanswerable"]) == (34, 16)  # all 50 claims, whatever design_items says
        assert "50 claims (16 NOT ENOUGH INFO; the whole sample)" in sec["sizes"]
        assert s["report"]["sizes"]["design_items.feverous"] == 50
        assert s["missing_data"] == []
        rows = {r["key"]: r for r in s["claims"]}
        got = sec["result"]["feverous"]["claims"][0]
        assert rows["abstention_feverous"]["measured"] == got["measured"] is not None
        assert rows["abstention_feverous"]["verdict"] == got["verdict"]
        assert f"measured here by the row abstention_feverous: {got['verdict']}" in rows["paper_benchmark_feverous"]["why"]
        # the printed command, run: the same JSON (stats, row) as the section's
        check_reproduces(cfg.out, res.records, ["length_designs"], tmp_path, monkeypatch, rel=1e-5)
        # and an independent CLI run on the file itself: the same deciding figure
        j = tmp_path / "cli.json"
        from normscope.cli import run

        assert run(["correlate", "--signal", "feverous", "--items", str(data / "feverous" / "sample.jsonl"),
                    "--n-boot", "100", "--n-perm", "100", "--json", str(j)]) == 0
        cli = json.loads(j.read_text())
        assert cli["stats"]["nei"]["r_rb"] == pytest.approx(st["r_rb"], rel=1e-9, abs=1e-12)
        assert cli["claims"][0]["measured"] == pytest.approx(got["measured"], rel=1e-5)


def test_feverous_absent_gives_the_missing_data_line(tmp_path, bundled_encoder):
    """No FEVEROUS copy and fetching off: the other designs run, the FEVEROUS row and the benchmark row say the data
    is not here and name its fetch command, and the report's missing-data list has its one line."""
    from normscope.data import settings

    with settings(dest=tmp_path / "empty", offline=True):
        cfg, _ = _report(tmp_path / "r", ("treecut", "feverous"), bundled_encoder)
    s = json.loads((cfg.out / "summary.json").read_text())
    sec = s["length_designs"]
    assert sec["status"] == "ok" and list(sec["result"]) == ["treecut"] and "missing" not in sec
    assert sec["derived"]["missing"]["feverous"]["claims"] == ["abstention_feverous"]
    rows = {r["key"]: r for r in s["claims"]}
    fev = rows["abstention_feverous"]
    assert fev["verdict"] == "not testable here" and fev["reason"] == (
        "FEVEROUS dev sample (50 claims) is not here (--offline is set): get it with `normscope data fetch feverous` "
        "(see Missing data)")
    assert ("the row abstention_feverous did not run in this report: FEVEROUS dev sample (50 claims) is not here"
            in rows["paper_benchmark_feverous"]["why"])
    assert rows["abstention_treecut"]["tested_on"]  # the design that had its data ran
    [line] = [m["line"] for m in s["missing_data"]]
    assert line.startswith("FEVEROUS dev sample (50 claims) is not here: --offline is set: Text rows at equal length "
                           "(feverous) not run, 1 claim left untested.") and "`normscope data fetch feverous`" in line
    assert "normscope data fetch feverous" in (cfg.out / "index.html").read_text()
    # FEVEROUS the only design selected: the section did not run, and the line says so
    with settings(dest=tmp_path / "empty", offline=True):
        cfg, _ = _report(tmp_path / "r2", ("feverous",), bundled_encoder)
    s = json.loads((cfg.out / "summary.json").read_text())
    assert s["length_designs"]["status"] == "unavailable"
    assert s["length_designs"]["missing"]["feverous"]["claims"] == ["abstention_feverous"]
    assert {r["key"]: r for r in s["claims"]}["abstention_feverous"]["reason"].startswith(
        "FEVEROUS dev sample (50 claims) is not here (--offline is set)")
    [line] = [m["line"] for m in s["missing_data"]]
    assert "--offline is set: Text rows at equal length not run, 1 claim left untested" in line


def test_shuffle_without_scifact_names_it(tmp_path, bundled_encoder, monkeypatch):
    """SciFact absent: the shuffle design's row and the missing-data list name SciFact and its fetch command (the
    command itself would say --items; the report names the dataset)."""
    from normscope.errors import DataMissing
    from normscope.signals import shuffle

    def absent():
        raise DataMissing("SciFact (BEIR) is not here", dataset="scifact", title="SciFact (BEIR)", cause="not here")

    monkeypatch.setattr(shuffle, "scifact_titles", absent)
    cfg, _ = _report(tmp_path / "r", ("treecut", "shuffle"), bundled_encoder)
    s = json.loads((cfg.out / "summary.json").read_text())
    assert list(s["length_designs"]["result"]) == ["treecut"]
    row = {r["key"]: r for r in s["claims"]}["atypical_input_shuffle"]
    assert row["verdict"] == "not testable here"
    assert row["reason"] == "SciFact (BEIR) is not here: get it with `normscope data fetch scifact` (see Missing data)"
    [line] = [m["line"] for m in s["missing_data"]]
    assert line.startswith("SciFact (BEIR) is not here") and "1 claim left untested" in line
