"""normscope report: a small real run, its numbers against the individual commands, caching, errors.

The report of a small run (bundled MiniLM, tiny sizes) is built once per module; the browser test
(tests/test_report_browser.py) renders the same kind of run in headless Chromium.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from _data import data_required
from _reproduce import check_reproduces
from normscope.report import ReportConfig, Sizes, parse_stages, run_report

TINY = Sizes(
    words=60,
    probe_items=24,
    probe_batches=2,
    probe_batch_size=8,
    lab_steps=300,
    lab_snapshots=8,
    lab_probe_batches=10,
    signal_items=120,
    retrieval_docs=60,
    retrieval_queries=15,
    n_boot=200,
    n_perm=200,
)
def _scifact():
    from normscope.datasets import shared_data_dir

    d = shared_data_dir()
    if d is not None and (d / "scifact").is_dir():
        return d / "scifact"
    if data_required():
        pytest.fail("SciFact is not in the shared data folder (NORMSCOPE_REQUIRE_DATA=1)", pytrace=False)
    return None


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, bundled_encoder):
    out = tmp_path_factory.mktemp("report")
    stages = ("setup", "norms", "lab", "signals") + (("retrieval",) if _scifact() is not None else ())
    cfg = ReportConfig(out=out, sizes=TINY, only=stages, signals=("frequency",))
    res = run_report(cfg, progress=False, encoder=bundled_encoder)
    return cfg, res


def _cli(argv):
    from normscope.cli import run

    return run(argv)


def test_files_written_and_summary_keys(small_run):
    cfg, res = small_run
    out = cfg.out
    assert (out / "index.html").is_file() and (out / "summary.json").is_file()
    s = json.loads((out / "summary.json").read_text())
    for key in ("setup", "norm_distribution", "equilibrium_theory", "training_lab", "semantic_signals",
                "retrieval", "calibration", "what_this_says", "report"):
        assert key in s
    assert s["norm_distribution"]["status"] == "ok"
    assert s["equilibrium_theory"]["status"] == "not_run"
    assert s["training_lab"]["status"] == "ok" and s["semantic_signals"]["status"] == "ok"
    for f in ("training_lab_predicted_vs_observed.png", "training_lab_trajectories.png",
              "semantic_signals_frequency.png"):
        assert (out / f).read_bytes()[:4] == b"\x89PNG", f
    assert (out / "norm_distribution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "stages" / "norms.json").is_file()


def test_claims_scorecard_one_row_per_claim_with_reasons(small_run):
    """summary.json["claims"]: every claim of CLAIMS once, in order; a claim whose section did not run is
    'not testable here' with that section's status as the reason; the rows are the first section of the page."""
    from normscope.report.claims import CLAIMS, VERDICTS

    cfg, res = small_run
    s = json.loads((cfg.out / "summary.json").read_text())
    rows = s["claims"]
    assert [r["key"] for r in rows] == list(CLAIMS)
    assert all(r["verdict"] in VERDICTS for r in rows)
    heat = next(r for r in rows if r["key"] == "corr_norm_heat")  # the probes stage is not run in this test
    assert heat["verdict"] == "not testable here" and heat["why"].startswith("section not run")
    for r in rows:  # a row with a CI: its direction verdict follows the CI's side of 0 (claims without a size)
        c = CLAIMS[r["key"]]
        if c.sign in (1, -1) and c.size.kind == "none" and r["ci"] is not None and r["direction"] != "not tested":
            excludes = r["ci"][0] > 0 or r["ci"][1] < 0
            assert (r["direction"] in ("reproduced", "refuted")) == excludes, r
        assert r["reason"] and len(r["reason"].split()) <= 30
    for b in ("feverous", "treecut", "ruletaker"):
        assert {r["key"]: r["verdict"] for r in rows}[f"paper_benchmark_{b}"] == "not testable here"
    page = (cfg.out / "index.html").read_text()
    assert page.index('id="claims"') < page.index('id="what_this_says"')


def test_reproduce_commands_yield_the_pages_numbers(small_run, tmp_path, monkeypatch):
    """Each section's command, as the page prints it and run in the report folder, writes JSON equal to the
    section's numbers (norms to float32 rounding across processes, tests/_close.py)."""
    cfg, res = small_run
    check_reproduces(cfg.out, res.records, ["norm_distribution"], tmp_path, monkeypatch, rel=1e-5)
    sections = ["training_lab", "semantic_signals"] + (["retrieval", "calibration"] if _scifact() is not None else [])
    check_reproduces(cfg.out, res.records, sections, tmp_path, monkeypatch)
    cmd = res.summary["norm_distribution"]["command"]
    assert "--model sentence-transformers/all-MiniLM-L6-v2 --precision fp32" in cmd and f"wordfreq:{TINY.words}" in cmd


def test_norm_numbers_are_the_encoders_own(small_run, bundled_encoder):
    """The norm distribution against an independent recomputation: the encoder's own norms of the same words."""
    cfg, _ = small_run
    s = json.loads((cfg.out / "summary.json").read_text())
    got = s["norm_distribution"]["result"]
    assert got["n"] == TINY.words and got["dim"] == 384
    from normscope.datasets import wordfreq_words

    r = np.linalg.norm(bundled_encoder.encode(wordfreq_words(TINY.words)).astype(np.float64), axis=1)
    assert got["norm_mean"] == pytest.approx(r.mean(), rel=1e-5)
    q = s["norm_distribution"]["derived"]["quantiles"]
    assert q["p50"] == pytest.approx(np.median(r), rel=1e-5)
    labels = [row[0] for row in s["norm_distribution"]["key_numbers"]]  # every key number on the page is here
    assert "mean norm" in labels
    row = [r for r in s["training_lab"]["key_numbers"] if r[0].startswith("mean |relative error|")][0]
    assert row[1] == s["training_lab"]["result"]["mean_abs_rel_error"]


def test_signal_headline_is_scipys_spearman(small_run):
    """The frequency signal's Spearman rho equals scipy's on the encoder's norms and wordfreq's Zipf values."""
    from scipy.stats import spearmanr
    from wordfreq import zipf_frequency

    from normscope.datasets import wordfreq_words
    from normscope.encoders import load_encoder

    cfg, _ = small_run
    sec = json.loads((cfg.out / "summary.json").read_text())["semantic_signals"]
    got = sec["result"]["frequency"]
    assert got["n"] == TINY.signal_items
    words = wordfreq_words(TINY.signal_items)
    norms = np.linalg.norm(load_encoder().encode(words).astype(np.float64), axis=1)
    assert got["spearman"] == pytest.approx(spearmanr(norms, [zipf_frequency(w, "en") for w in words]).statistic, abs=1e-6)
    assert sec["derived"]["unavailable"] == {"specificity": "not selected", "concreteness": "not selected",
                                             "uncertainty": "not selected"}


def test_retrieval_sizes_and_figures(small_run, shared_data):
    cfg, res = small_run
    s = json.loads((cfg.out / "summary.json").read_text())
    assert s["retrieval"]["status"] == "ok" and s["calibration"]["status"] == "ok"
    for k in ("qpp", "qpp_info", "calibration_incremental"):  # the calibration section carries the QPP study
        assert k in s["calibration"]["derived"]
    assert s["retrieval"]["result"]["n_docs"] == TINY.retrieval_docs
    for f in ("calibration_reliability.png", "calibration_risk_coverage.png"):
        assert (cfg.out / f).is_file()


def test_auroc_bootstrap_ci_matches_sklearn():
    """The report's vectorised AUROC bootstrap equals a loop over sklearn's roc_auc_score."""
    from sklearn.metrics import roc_auc_score

    from normscope.retrieval.calibration import auroc_bootstrap_ci

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 80)
    x = y * 0.8 + rng.normal(size=80)
    x[:10] = np.round(x[:10])  # ties
    lo, hi = auroc_bootstrap_ci(x, y, n_boot=300, seed=7)
    idx = np.random.default_rng(7).integers(0, 80, size=(300, 80))
    aucs = [roc_auc_score(y[i], x[i]) for i in idx if 0 < y[i].sum() < 80]
    assert lo == pytest.approx(np.quantile(aucs, 0.025), abs=1e-12)
    assert hi == pytest.approx(np.quantile(aucs, 0.975), abs=1e-12)
    assert lo < roc_auc_score(y, x) < hi
    assert auroc_bootstrap_ci(x, np.ones(80, int)) is None


def test_rerun_uses_cache_and_settings_invalidate(small_run, bundled_encoder):
    cfg, first = small_run
    again = run_report(cfg, progress=False, encoder=bundled_encoder)
    assert again.records["norms"].cached is True
    assert again.summary["norm_distribution"]["result"] == first.summary["norm_distribution"]["result"]
    import dataclasses

    assert again.records["lab"].cached is True and again.records["signals"].cached is True
    cfg2 = ReportConfig(out=cfg.out, sizes=dataclasses.replace(TINY, words=40), only=("norms",))
    third = run_report(cfg2, progress=False, encoder=bundled_encoder)
    assert third.records["norms"].cached is False
    # --only norms into the same folder: the other sections are kept as they were, with their figures
    assert third.records["lab"].kept and third.summary["training_lab"] == first.summary["training_lab"]
    assert third.summary["report"]["stages_kept"] == [k for k in ("setup", "lab", "signals", "retrieval")
                                                      if first.records[k].ran]
    assert "training_lab_trajectories.png" in (cfg.out / "index.html").read_text()
    assert "lab_steps" not in third.summary["report"]["sizes"]  # the sizes of this run: norms only
    assert third.summary["norm_distribution"]["result"]["n"] == 40
    # restore the module's run for the other tests
    run_report(cfg, progress=False, encoder=bundled_encoder)


def test_missing_data_sections_say_why(tmp_path, bundled_encoder, monkeypatch):
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))  # no fetched copy either (and offline: conftest)
    empty = tmp_path / "nodata"
    empty.mkdir()
    cfg = ReportConfig(out=tmp_path / "r", sizes=TINY, only=("retrieval",), data=empty)
    res = run_report(cfg, progress=False, encoder=bundled_encoder)
    for key in ("retrieval", "calibration"):
        sec = res.summary[key]
        assert sec["status"] == "unavailable", sec
        assert sec["reason"]
    html = (tmp_path / "r" / "index.html").read_text()
    assert "Not available:" in html


def test_parse_stages():
    assert parse_stages("lab,norms") == ["norms", "lab"]
    assert parse_stages("calibration") == ["retrieval"]
    from normscope.errors import InputError

    with pytest.raises(InputError, match="bogus"):
        parse_stages("norms,bogus")


def test_cli_bad_input_exit_2(tmp_path, capsys):
    assert _cli(["report", "--only", "bogus", "--out", str(tmp_path / "a")]) == 2
    assert "bogus" in capsys.readouterr().err
    assert _cli(["report", "--out", str(tmp_path / "missing" / "deeper")]) == 2
    assert not (tmp_path / "missing").exists()
    assert _cli(["report", "--data", str(tmp_path / "nope"), "--out", str(tmp_path / "b")]) == 2
    assert not (tmp_path / "b").exists()


# ---------------------------------------------------------------------------------------------
# the "what this says" sentences are chosen by sign and CI
# ---------------------------------------------------------------------------------------------


def test_correlation_sentence_follows_sign_and_ci():
    from normscope.report.text import ci_excludes_zero, correlation_sentence

    neg = correlation_sentence("the raw norm", "Zipf frequency", -0.36, [-0.39, -0.33], 5000)
    assert "falls with" in neg and "excludes 0" in neg and "moderate" in neg
    pos = correlation_sentence("the raw norm", "depth", 0.12, [0.02, 0.22], 100)
    assert "rises with" in pos and "weak" in pos
    null = correlation_sentence("the raw norm", "concreteness", 0.03, [-0.05, 0.11], 300)
    assert "CI includes 0" in null and "no evidence" in null and "rises" not in null
    nan = correlation_sentence("a", "b", float("nan"), None)
    assert "could not be estimated" in nan
    noci = correlation_sentence("a", "b", 0.5, None)
    assert "no claim" in noci
    assert ci_excludes_zero([0.0, 0.1]) is False and ci_excludes_zero([-0.2, -0.1]) is True


def test_lab_and_calibration_sentences_follow_numbers():
    from normscope.lab import LabResult
    from normscope.report.stages.lab import training_lab_sentences
    from normscope.report.stages.retrieval import calibration_sentences

    ok = training_lab_sentences(LabResult.from_dict({"mean_abs_rel_error": 0.014, "median_rel_error": -0.002,
                                                     "pearson": 0.998, "encoder": "table", "optimizer": "sgd"}))
    assert "agree with the (E7) prediction" in ok[0]
    bad = training_lab_sentences(LabResult.from_dict({"mean_abs_rel_error": 0.30, "median_rel_error": 0.2, "pearson": 0.5,
                                                      "encoder": "mlp", "optimizer": "adamw"}))
    assert "do not meet the gate" in bad[0]
    cal = calibration_sentences({"top1_score": {"auroc": 0.7, "auroc_ci": [0.6, 0.8]},
                                 "query_norm": {"auroc": 0.52, "auroc_ci": [0.45, 0.59]}})
    assert "better than chance" in cal[0] and "includes 0.5" in cal[1]


def test_norm_sentence_detects_normalised_model():
    from normscope.report.stages.norms import norm_distribution_sentences

    s = norm_distribution_sentences({"n": 10, "norm_mean": 1.0, "norm_std": 1e-7, "norm_min": 1.0, "norm_max": 1.0})
    assert "constant" in s[0]
    s = norm_distribution_sentences({"n": 10, "norm_mean": 6.3, "norm_std": 0.5, "norm_min": 4.6, "norm_max": 7.5})
    assert "not unit length" in s[0] and math.isclose(0.5 / 6.3, 0.0794, rel_tol=1e-2)


def test_equilibrium_sentences_guards():
    from normscope.report.stages.probes import equilibrium_sentences

    def corr(rho, lo, hi, n=100):
        return {"pearson": rho, "spearman": rho, "ci": {"pearson": [lo, hi], "spearman": [lo, hi]}, "n": n}

    res = {"n_items": 100, "corr_req_norm": {"pearson": None, "spearman": None, "ci": {}, "n": 0, "note": "x"},
           "c_fit": -1e-5, "corr_norm_heat": corr(0.6, 0.5, 0.7), "corr_norm_displacement": corr(0.05, -0.1, 0.2),
           "corr_norm_drift": corr(-0.3, -0.4, -0.2), "n_negative_q": 3, "n_negative_lambda_rad": 0}
    out = equilibrium_sentences(res)
    assert "could not be made" in out[0] and "not positive" in out[0]
    assert "rises with the heat" in out[1]
    assert "may be mechanical" in out[2]
    assert "falls with the radial drift" in out[3]
    assert out[4].startswith("3 items have q < 0")
    res["corr_req_norm"] = corr(0.4, 0.2, 0.6, 80)
    res["training"] = {"optimizer": "AdamW"}
    res["corr_norm_displacement"] = corr(0.3, 0.2, 0.4)
    out = equilibrium_sentences(res)
    assert "rises with the norm predicted by (E7)" in out[0] and "n = 80" in out[0] and "rank statistic" in out[0]
    assert not any("mechanical" in s for s in out)


def test_norm_sentence_points_only_to_sections_that_ran():
    from normscope.report.runner import what_this_says
    from normscope.report.stage import Section, StageRecord
    from normscope.report.stages import get_stage
    from normscope.report.stages.norms import norm_distribution_sentences
    from normscope.values import Status

    res = {"n": 10, "norm_mean": 6.3, "norm_std": 0.5, "norm_min": 4.6, "norm_max": 7.5}
    alone = norm_distribution_sentences(res, explained_by=[])[0]
    assert "sections below" not in alone and "not explained by this run" in alone
    lab = norm_distribution_sentences(res, explained_by=["the training lab"])[0]
    assert "the training lab below tries to explain" in lab

    def record(name, status, result=None):
        st = get_stage(name)
        return StageRecord(name, status, {k: Section(k, status, result=result) for k in st.sections})

    says = what_this_says({"norms": record("norms", Status.OK, res), "lab": record("lab", Status.NOT_RUN),
                           "signals": record("signals", Status.OK, {})})
    assert "the semantic signals below tries to explain" in says["norm_distribution"][0]


def test_signal_sentence_names_only_applied_controls():
    from normscope.report.stages.signals import semantic_signal_sentences

    base = {"signal": "concreteness", "spearman": -0.29, "spearman_ci": [-0.39, -0.18], "n": 300,
            "controls": ["frequency"], "controls_dropped": ["length"]}
    part = {"rho": -0.2, "ci": [-0.3, -0.1], "controls": ["frequency"], "n": 300}
    s = semantic_signal_sentences({"concreteness": dict(base, partial_spearman=part)})[0]
    assert "Controlling for frequency it stays negative" in s and "frequency and length" not in s
    assert "Length is constant over these items, so it was not controlled." in s
    s = semantic_signal_sentences({"frequency": dict(base, controls=[], partial_spearman=None)})[0]
    assert "Controlling" not in s and "no partial correlation was computed" in s


def test_only_selected_stages_in_progress_sizes_and_logs(tmp_path, bundled_encoder):
    import io

    from rich.console import Console

    buf = io.StringIO()
    cfg = ReportConfig(out=tmp_path / "r", sizes=TINY, only=("norms", "lab"))
    res = run_report(cfg, progress=True, encoder=bundled_encoder, console=Console(file=buf, width=200))
    log = buf.getvalue()
    assert "2/2 stages" in log and "/6 stages" not in log and "runner.py" not in log
    html = (tmp_path / "r" / "index.html").read_text()
    sizes_line = next(line for line in html.splitlines() if "Sizes of this run" in line)
    assert "words = 60" in sizes_line and "lab_steps = 300" in sizes_line
    for other in ("retrieval_docs", "signal_items", "probe_items", "n_perm"):
        assert other not in sizes_line
    nd = res.summary["what_this_says"]["norm_distribution"][0]
    assert "sections below" not in nd and "the training lab below tries to explain" in nd


# ---------------------------------------------------------------------------------------------
# the run log (a redirected log is never silent, has no library warnings) and the sizes used
# ---------------------------------------------------------------------------------------------


def test_redirected_log_has_stage_lines_and_heartbeat_and_sizes_are_values_used(tmp_path, bundled_encoder):
    import io

    from rich.console import Console

    buf = io.StringIO()  # not a terminal: what `normscope report > log 2>&1` gets
    sizes = Sizes(words=40, n_boot=200, n_perm=200)  # the lab's sizes left to `normscope lab`'s defaults
    cfg = ReportConfig(out=tmp_path / "r", sizes=sizes, only=("norms", "lab"))
    res = run_report(cfg, progress=True, encoder=bundled_encoder, console=Console(file=buf, width=200),
                     heartbeat=0.5)
    lines = buf.getvalue().splitlines()
    for stage in ("norms", "lab"):
        start = lines.index(f"{stage}: started")
        end = next(i for i, ln in enumerate(lines) if ln.startswith(f"{stage}: ok in "))
        assert start < end
    assert any(ln.startswith("lab: still running (") for ln in lines)
    assert not [ln for ln in lines if "Warning" in ln or "warnings.warn" in ln]
    lab = res.summary["training_lab"]["result"]
    used = res.summary["report"]["sizes"]
    assert used == {"words": 40, "lab_steps": lab["steps"], "lab_snapshots": lab["snapshots"],
                    "lab_probe_batches": lab["probe_batches"], "n_boot": 200}
    assert all(isinstance(v, int) for v in used.values())
    page = (tmp_path / "r" / "index.html").read_text()
    sizes_line = next(line for line in page.splitlines() if "Sizes of this run" in line)
    assert "stage default" not in sizes_line and f"lab_steps = {lab['steps']:,}" in sizes_line


def test_library_warnings_and_log_records_are_kept_not_printed(capsys):
    from transformers import AutoTokenizer

    from normscope.encoders.bundled import bundled_model_path
    from normscope.report.runlog import quiet_libraries

    tok = AutoTokenizer.from_pretrained(str(bundled_model_path()))  # fresh: it warns once per instance
    with quiet_libraries() as kept:
        tok("word " * 600)  # transformers' logger: "Token indices sequence length is longer ..."
        np.mean(np.array([]))  # numpy's RuntimeWarning through warnings.warn
    err = capsys.readouterr().err
    assert "Token indices" not in err and "Mean of empty slice" not in err
    assert any("Token indices sequence length" in k for k in kept)
    assert any(k.startswith("RuntimeWarning: Mean of empty slice") for k in kept)


def test_report_outputs_are_written_as_a_set_with_json(tmp_path, bundled_encoder):
    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(words=30), only=("norms",))
    js = tmp_path / "copy.json"
    res = run_report(cfg, progress=False, encoder=bundled_encoder, json_path=js)
    assert json.loads(js.read_text()) == json.loads(res.summary_path.read_text())
    assert (tmp_path / "r" / "index.html").stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert not list((tmp_path / "r").glob(".*.tmp*")) and not list(tmp_path.glob(".*.tmp*"))


def _umask() -> int:
    import os

    mask = os.umask(0o022)
    os.umask(mask)
    return mask
