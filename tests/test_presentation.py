"""What the page and the CLI show, checked against values worked out by hand (no model, no data: fast).

The headlines, the size words, the formatting of numbers, the reproduce commands (every option the request
sets is on the command line and parses back to the request's value), the side-by-side join, the forest
plot's data and the several-model scorecard. ``scripts/mutation_check.py`` plants mutants in this code and
counts how many of them these tests (and the report tests) kill.
"""

from __future__ import annotations

import shlex

import pytest
import typer.main
from rich.console import Console

from normscope._format import ci, duration, fixed, num, p_value, pct
import normscope.extensions  # noqa: F401  registers engine="ray" (configs below use it)
from normscope.cli import app
from normscope.claims import CLAIMS
from normscope.report.stage import Command, KeyNumber, Section, StageRecord
from normscope.report.stages import STAGES, get_stage
from normscope.report.text import strength
from normscope.values import Status

MODEL = "sentence-transformers/all-mpnet-base-v2"


# ---------------------------------------------------------------------------------------------------------------
# numbers and words
# ---------------------------------------------------------------------------------------------------------------


def test_numbers_are_written_one_way():
    assert num(0.12345) == "0.123" and num(-0.045) == "\u22120.045" and num(1234) == "1,234"
    assert num(2.5e-4) == "2.50e\u221204" and num(123456.0) == "1.23e+05"
    assert num(None) == num(float("nan")) == ci(None) == ci([0.1, None]) == pct(None) == p_value(None) == "n/a"
    assert ci([0.1, 0.2]) == "[0.100, 0.200]" and ci([-0.3, 0.25]) == "[\u22120.300, 0.250]"
    assert pct(0.0017) == "+0.17 %" and pct(-0.0265) == "\u22122.65 %"
    assert fixed(-0.00001, ".4f") == "0.0000" and fixed(-0.5, "+.2f") == "-0.50" and fixed(None) == "n/a"
    assert p_value(0.0005) == "5.0e-04" and p_value(0.042) == "0.042"
    assert duration(75) == "1 min 15 s" and duration(None) == "n/a"


@pytest.mark.parametrize("rho, word", [(0.0, "negligible"), (0.099, "negligible"), (0.1, "weak"), (-0.299, "weak"),
                                       (0.3, "moderate"), (-0.499, "moderate"), (0.5, "strong"), (-0.9, "strong")])
def test_size_words_follow_cohen(rho, word):
    assert strength(rho) == word


# ---------------------------------------------------------------------------------------------------------------
# headlines (the CLI's one-screen summary)
# ---------------------------------------------------------------------------------------------------------------


def _corr(rho, lo, hi, n):
    return {"pearson": rho, "spearman": rho, "n": n, "ci": {"pearson": [lo, hi], "spearman": [lo, hi]}}


HEADLINES = {
    "norm_distribution": ({"n": 2000, "norm_mean": 6.3, "norm_std": 0.51, "norm_min": 4.6, "norm_max": 7.5}, None,
                          "n = 2,000: mean ||z|| 6.300, sd 0.510, range 4.600 to 7.500"),
    "training_lab": ({"mean_abs_rel_error": 0.014, "median_rel_error": -0.002, "pearson": 0.998,
                      "gate": {"passed": True}}, None,
                     "mean |rel. error| 0.014, median \u22120.002, Pearson 0.998: gate passed"),
    "equilibrium_theory": ({"corr_req_norm": _corr(0.25, 0.1, 0.4, 480), "corr_norm_heat": _corr(0.5, 0.4, 0.6, 500),
                            "corr_norm_drift": _corr(-0.2, -0.3, -0.1, 500), "n_negative_q": 7},
                           {"prediction_key": "corr_req_norm", "prediction_reading": "x"},
                           "Spearman R_eq vs R 0.250 [0.100, 0.400] (n = 480; CIs over batches and items); Spearman R vs "
                           "heat 0.500 [0.400, 0.600]; Spearman R vs drift \u22120.200 [\u22120.300, \u22120.100]; q<0: 7"),
    "semantic_signals": ({"frequency": {"spearman": -0.36, "spearman_ci": [-0.39, -0.33], "n": 800},
                          "specificity": {"spearman": 0.1, "spearman_ci": None, "n": 800}}, None,
                         "frequency Spearman \u03c1 \u22120.360 [\u22120.390, \u22120.330]; specificity Spearman \u03c1 0.100"),
    "similarity": ({"n_pairs": 500, "scorers": {"cosine": {"spearman": 0.8},
                                                "power": {"spearman": 0.81, "delta_spearman": 0.01,
                                                          "delta_ci": [0.0, 0.02]}}}, None,
                   "Spearman \u03c1 with human scores, n = 500 pairs: cosine 0.800, power 0.810 (\u0394 0.010 "
                   "[0.000, 0.020])"),
    "retrieval": ({"scorers": {"cosine": {"ndcg@10": 0.6457, "p_value": None},
                               "inverse_norm": {"ndcg@10": 0.6469, "p_value": 0.5}}}, None,
                  "nDCG@10: cosine 0.646, inverse_norm 0.647 (p 0.500)"),
    "calibration": ({"query_norm": {"auroc": 0.52}, "top1_score": {"auroc": 0.71}}, None,
                    "AUROC: query_norm 0.520, top1_score 0.710"),
}


@pytest.mark.parametrize("key", list(HEADLINES))
def test_headlines(key):
    result, derived, want = HEADLINES[key]
    st = next(s for s in STAGES if key in s.sections)
    assert st.headline(Section(key, result=result, derived=derived)) == want


def _record(name: str, status=Status.OK, *, results=None, kept=False):
    st = get_stage(name)
    results = results or {}
    return StageRecord(name, status, {k: Section(k, status, None if status is Status.OK else "why not",
                                                 result=results.get(k), derived=HEADLINES.get(k, (0, {}))[1])
                                      for k in st.sections}, kept=kept)


def test_cli_summary_shows_each_sections_headline(tmp_path):
    from normscope.cli.report import print_summary
    from normscope.report.runner import ReportResult

    records = {st.name: _record(st.name, Status.NOT_RUN) for st in STAGES}
    records["norms"] = _record("norms", results={"norm_distribution": HEADLINES["norm_distribution"][0]})
    records["lab"] = _record("lab", results={"training_lab": HEADLINES["training_lab"][0]}, kept=True)
    summary = {"report": {"model": MODEL, "preset": "quick", "seconds": 75.0, "stages_run": ["norms"],
                          "stage_cached": {st.name: st.name == "norms" for st in STAGES}},
               "what_this_says": {}, "claims": []}
    res = ReportResult(tmp_path / "index.html", tmp_path / "summary.json", summary, records, 75.0)
    console = Console(record=True, width=400)
    print_summary(res, console)
    text = console.export_text()
    assert f"normscope report: {MODEL} (quick sizes, 1 min 15 s; 1 of 1 stage from the cache)" in text
    assert HEADLINES["norm_distribution"][2] in text
    assert "(kept from an earlier run) " + HEADLINES["training_lab"][2] in text
    assert text.count("not_run") == len(STAGES) - 2 + 2  # retrieval and signals fill two sections each
    assert "why not" in text


def test_several_model_scorecard_cells():
    from normscope.claims import ClaimRow
    from normscope.cli.report import _claim_cell

    row = {"measured": 0.123, "ci": [0.1, 0.2], "verdict": "reproduced"}
    assert _claim_cell(ClaimRow.from_json(row), False) == "0.123 [0.100, 0.200] reproduced"
    assert _claim_cell(ClaimRow.from_json({"measured": None, "ci": None, "verdict": "not testable here"}), False) == \
        "not testable here"
    assert _claim_cell(None, True) == "model failed" and _claim_cell(None, False) == "not run"


# ---------------------------------------------------------------------------------------------------------------
# the reproduce commands: every setting of the request is on the command line and parses back to it
# ---------------------------------------------------------------------------------------------------------------


def _config(tmp_path, **kw):
    from normscope.report import ReportConfig, Sizes

    sizes = Sizes(words=60, probe_items=24, probe_batches=4, probe_batch_size=8, lab_steps=300, signal_items=120,
                  retrieval_docs=60, retrieval_queries=15, n_boot=200, n_perm=100)
    return ReportConfig(out=tmp_path / "r", sizes=sizes, **kw)


def _parse(command: Command) -> dict:
    """The command's parameters as the CLI parses them (no work is run)."""
    argv = list(command.argv[1:])
    group = typer.main.get_command(app)
    cmd = group.commands[argv[0]]
    ctx = cmd.make_context(argv[0], argv[1:], parent=group.make_context("normscope", [argv[0]]))
    return dict(ctx.params)


@pytest.mark.parametrize("stage", [st.name for st in STAGES if st.name != "setup"])
def test_reproduce_commands_carry_every_setting(stage, tmp_path):
    cfg = _config(tmp_path, model=MODEL, precision="bf16", device="cuda", seed=3, engine="ray", address="auto")
    st = get_stage(stage)
    req = st.request(cfg)
    cmds = st.commands(req)
    assert cmds and all(c.argv[0] == "normscope" and "--json" in c.argv for c in cmds)
    for c in cmds:
        p = _parse(c)
        assert shlex.split(c.text) == list(c.argv)
        model = p.get("model", p.get("models"))  # commands that take several models name the parameter 'models'
        if ("model" in p or "models" in p) and stage not in ("lab", "transformer"):  # the labs train their own
            assert model in (MODEL, [MODEL], (MODEL,))
        if "seed" in p:
            assert p["seed"] == 3
        if "device" in p and stage != "lab":  # the table lab runs on the cpu only
            assert p["device"] == "cuda"
        if p.get("n_boot") is not None and stage != "lab":  # the table lab's n_boot is the scorecard row's
            inner = getattr(req, "probe", getattr(req, "lab", req))  # the report's requests hold the command's
            assert p["n_boot"] == getattr(inner, "resampling", inner).n_boot == 200
        if stage not in ("lab", "transformer", "tokens"):  # the labs train in fp32; tokens reads weights, no forward pass
            assert p["precision"] == "bf16"
    if stage == "retrieval":
        p = _parse(cmds[0])
        assert (p["engine"], p["address"], p["max_docs"], p["max_queries"]) == ("ray", "auto", 60, 15)
    if stage == "signals":
        # ambiguity: the specificity items' WordNet noun senses (normscope correlate --measure n_senses)
        assert [c.part for c in cmds] == ["frequency", "specificity", "concreteness", "uncertainty", "ambiguity",
                                          "treecut", "ruletaker", "wordnet_chains", "feverous", "shuffle"]
        assert [_parse(c)["n"] for c in cmds] == [120] * 8 + [None, 120] and _parse(cmds[0])["n_perm"] == 100
        assert (_parse(cmds[4])["signal"], _parse(cmds[4])["measure"]) == ("specificity", "n_senses")
        # the length-matched designs (section length_designs): generated items, WordNet chains, SciFact titles
        # against their shuffled copies (signals' size cap)
        assert [_parse(c)["signal"] for c in cmds[5:]] == ["treecut", "ruletaker", "specificity", "feverous", "shuffle"]
        assert _parse(cmds[7])["pairs"] == "wordnet" and all(_parse(c)["n_boot"] == 200 for c in cmds[5:])
        assert _parse(cmds[8])["n_perm"] == 100  # FEVEROUS: its 50 claims (no --n-items); the time rho's permutations
        assert "--n-perm" not in cmds[9].argv  # shuffle: a paired design with no permutation p
    if stage == "probes":
        p = _parse(cmds[0])
        assert (p["items"], p["batches"], p["batch_size"]) == ("probe_words.jsonl", 4, 8)
    if stage == "norms":
        assert _parse(cmds[0])["input"] == "wordfreq:60"
    if stage == "transformer":  # the decisive design at the report's size, resumed in the report folder
        p = _parse(cmds[0])
        assert len(cmds) == 1 and (p["design"], p["size"], p["seed"], p["device"]) == ("decisive", "report", 3, "cuda")
        assert str(p["run_dir"]) == "transformer_lab"


def test_cache_key_and_command_follow_the_request(tmp_path):
    """Two settings that change the numbers change both the cache key and the command; the engine changes neither
    the key nor the numbers (vectors equal to 1e-6 on either engine) but is on the command line."""
    st = get_stage("retrieval")
    a = st.request(_config(tmp_path))
    b = a.replace(resampling=a.resampling.replace(n_boot=300))
    fp = {"name": "m", "revision": "r"}
    assert st.key(a, fingerprint=fp, data_dir="d") != st.key(b, fingerprint=fp, data_dir="d")
    assert st.commands(a) != st.commands(b)
    c = a.replace(engine="ray")
    assert st.key(a, fingerprint=fp, data_dir="d") == st.key(c, fingerprint=fp, data_dir="d")
    assert "--engine" in st.commands(c)[0].argv


# ---------------------------------------------------------------------------------------------------------------
# several models: the side-by-side join and the forest plot's data
# ---------------------------------------------------------------------------------------------------------------


def test_side_by_side_joins_on_keys_not_labels():
    from normscope.report.multi import side_by_side

    def rec(n, value):
        r = _record("signals")
        r.sections["semantic_signals"].key_numbers = [
            KeyNumber("frequency.spearman", f"Spearman \u03c1, norm vs frequency (n = {n})", value)]
        return {"signals": r}

    out = side_by_side({"A": rec(800, -0.3), "B": rec(799, -0.2)})
    rows = out["semantic_signals"]["rows"]
    assert rows == [["Spearman \u03c1, norm vs frequency (n = 800)", -0.3, -0.2]]
    assert out["semantic_signals"]["status"] == {"A": "ok", "B": "ok"}
    assert out["training_lab"]["status"] == {"A": "not_run", "B": "not_run"} and out["training_lab"]["rows"] == []


def test_forest_plot_data():
    from normscope.report.multi import forest_data

    def row(key, m, ci, verdict="inconclusive"):
        return {"key": key, "measured": m, "ci": ci, "verdict": verdict, "what": f"what {key}"}

    claims = {"A": [row("corr_norm_heat", 0.4, [0.3, 0.5], "reproduced"), row("specificity", None, None)],
              "B": [row("corr_norm_heat", -0.1, [-0.2, -0.05], "refuted"), row("specificity", None, None)]}
    panels = forest_data(claims)
    assert [p.key for p in panels] == ["corr_norm_heat"]  # specificity: measured by no model
    p = panels[0]
    assert p.title == CLAIMS["corr_norm_heat"].claim and p.what == "what corr_norm_heat"
    assert [(r.model, r.estimate, r.ci, r.refuted) for r in p.rows] == [("A", 0.4, (0.3, 0.5), False),
                                                                      ("B", -0.1, (-0.2, -0.05), True)]


# ---------------------------------------------------------------------------------------------------------------
# the record's summary entry and the page
# ---------------------------------------------------------------------------------------------------------------


def test_section_summary_layout():
    sec = Section("norm_distribution", commands=[Command(("normscope", "embed", "wordfreq:10", "--json", "w.json"))],
                  sizes="10 words", result={"n": 10}, derived={},
                  key_numbers=[KeyNumber("n", "items embedded n", 10), KeyNumber("norm_mean", "mean norm", 6.1, "||z||")])
    assert sec.summary() == {"status": "ok", "command": "normscope embed wordfreq:10 --json w.json", "sizes": "10 words",
                             "result": {"n": 10}, "derived": {},
                             "key_numbers": [["items embedded n", 10, ""], ["mean norm", 6.1, "||z||"]]}
    off = Section("norm_distribution", Status.NOT_RUN, "not selected")
    assert off.summary() == {"status": "not_run", "reason": "not selected"}
    assert Status.UNAVAILABLE.words == "not available" and Status.NOT_RUN.words == "not run"


def test_page_shows_commands_status_words_and_kept_sections(tmp_path):
    from normscope.report.html import render_html

    records = {st.name: _record(st.name, Status.NOT_RUN) for st in STAGES}
    records["norms"] = _record("norms", results={"norm_distribution": {"n": 10}})
    sec = records["norms"].sections["norm_distribution"]
    sec.commands = [Command(("normscope", "embed", "wordfreq:10", "--model", "a b", "--json", "words.json"))]
    records["lab"] = _record("lab", Status.UNAVAILABLE, kept=True)
    summary = {"report": {"model": MODEL, "sizes": {"words": 10}}, "norm_distribution": sec.summary(),
               "training_lab": records["lab"].sections["training_lab"].summary(), "claims": []}
    page = render_html(summary, records, tmp_path)
    assert "normscope embed wordfreq:10 --model &#39;a b&#39; --json words.json" in page
    assert "Not available: why not" in page and "kept from an earlier run" in page
    assert "Sizes of this run (stages that ran): words = 10." in page
