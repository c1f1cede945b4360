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
from normscope.report import Sizes, parse_stages
from normscope.report import ReportConfig, run_report

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
#: keys of a command's JSON that measure wall time, not results
TIMING_KEYS = {"wall_s", "cpu_s", "steps_per_s", "timings_s", "timings"}


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


def _same(got, ref, path="", rel=1e-9):
    """Recursive equality of two JSON values (floats to ``rel``), ignoring timing keys."""
    if isinstance(ref, dict):
        assert isinstance(got, dict), path
        keys = set(ref) - TIMING_KEYS
        assert keys == set(got) - TIMING_KEYS, (path, keys ^ (set(got) - TIMING_KEYS))
        for k in keys:
            _same(got[k], ref[k], f"{path}.{k}", rel)
    elif isinstance(ref, list):
        assert isinstance(got, list) and len(got) == len(ref), path
        for i, (a, b) in enumerate(zip(got, ref)):
            _same(a, b, f"{path}[{i}]", rel)
    elif isinstance(ref, float) and not (isinstance(got, float) and math.isnan(got) and math.isnan(ref)):
        assert got == pytest.approx(ref, rel=rel, abs=1e-12), path
    else:
        assert got == ref, path


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
    signed = {"corr_norm_heat", "corr_norm_drift", "specificity", "uncertainty", "similarity_gain",
              "similarity_pairs"}
    for r in rows:  # a claim judged by the sign of its CI: the verdict follows the CI
        if r["key"] in signed and r["ci"] is not None:
            excludes = r["ci"][0] > 0 or r["ci"][1] < 0
            assert (r["verdict"] in ("reproduced", "refuted")) == excludes, r
    page = (cfg.out / "index.html").read_text()
    assert page.index('id="claims"') < page.index('id="what_this_says"')


def test_norm_numbers_equal_embed_command(small_run, tmp_path, bundled_encoder):
    """summary.json's norm_distribution equals `normscope embed --wordfreq-top N --json` (same settings)."""
    cfg, _ = small_run
    s = json.loads((cfg.out / "summary.json").read_text())
    cmd_json = tmp_path / "words.json"
    rc = _cli(["embed", "--wordfreq-top", str(TINY.words), "-o", str(tmp_path / "w.parquet"), "--json", str(cmd_json)])
    assert rc == 0
    ref = json.loads(cmd_json.read_text())
    got = s["norm_distribution"]["result"]
    assert got["n"] == ref["n"] == TINY.words
    assert got["dim"] == ref["dim"] == 384
    for k in ("norm_mean", "norm_std", "norm_min", "norm_max"):
        assert got[k] == pytest.approx(ref[k], rel=1e-5), k  # float32 rounding across paths (tests/_close.py)
    # an independent recomputation: the norms of the same words from the encoder directly
    from normscope.datasets import wordfreq_words

    r = np.linalg.norm(bundled_encoder.encode(wordfreq_words(TINY.words)).astype(np.float64), axis=1)
    assert got["norm_mean"] == pytest.approx(r.mean(), rel=1e-5)
    q = s["norm_distribution"]["derived"]["quantiles"]
    assert q["p50"] == pytest.approx(np.median(r), rel=1e-5)
    # every key number shown on the page is in summary.json
    labels = [row[0] for row in s["norm_distribution"]["key_numbers"]]
    assert "mean norm" in labels


def test_lab_numbers_equal_lab_command(small_run, tmp_path):
    """summary.json's training_lab equals `normscope lab ... --json` with the same settings."""
    cfg, _ = small_run
    s = json.loads((cfg.out / "summary.json").read_text())["training_lab"]
    assert s["command"].startswith("normscope lab ")
    ref_path = tmp_path / "lab.json"
    argv = ["lab", "--encoder", "table", "--optimizer", "sgd", "--data", "synthetic", "--seed", "0",
            "--steps", str(TINY.lab_steps), "--snapshots", str(TINY.lab_snapshots),
            "--probe-batches", str(TINY.lab_probe_batches), "--json", str(ref_path)]
    assert _cli(argv) == 0
    _same(s["result"], json.loads(ref_path.read_text()))
    # the page's key number is the command's number
    row = [r for r in s["key_numbers"] if r[0].startswith("mean |relative error|")][0]
    assert row[1] == s["result"]["mean_abs_rel_error"]


def test_signal_numbers_equal_correlate_command(small_run, tmp_path):
    """summary.json's semantic_signals.frequency equals `normscope correlate --signal frequency ... --json`."""
    cfg, _ = small_run
    sec = json.loads((cfg.out / "summary.json").read_text())["semantic_signals"]
    got = sec["result"]["frequency"]
    ref_path = tmp_path / "freq.json"
    argv = ["correlate", "--signal", "frequency", "--n", str(TINY.signal_items), "--n-boot", str(TINY.n_boot),
            "--n-perm", str(TINY.n_perm), "--seed", "0", "--json", str(ref_path)]
    assert _cli(argv) == 0
    ref = json.loads(ref_path.read_text())
    _same(got, ref)
    assert got["n"] == TINY.signal_items
    # independent check of the headline: Spearman of the norms with wordfreq's Zipf frequency (scipy)
    from scipy.stats import spearmanr
    from wordfreq import zipf_frequency

    from normscope.datasets import wordfreq_words

    words = wordfreq_words(TINY.signal_items)
    vecs = small_run[1].records["signals"]  # noqa: F841 (record exists)
    from normscope.encoders import load_encoder

    norms = np.linalg.norm(load_encoder().encode(words).astype(np.float64), axis=1)
    rho = spearmanr(norms, [zipf_frequency(w, "en") for w in words]).statistic
    assert got["spearman"] == pytest.approx(rho, abs=1e-6)
    assert sec["derived"]["unavailable"] == {"specificity": "not selected", "concreteness": "not selected",
                                             "uncertainty": "not selected"}


def test_retrieval_numbers_equal_retrieval_command(small_run, shared_data, tmp_path):
    """summary.json's retrieval and calibration equal `normscope retrieval ... --json` (same settings)."""
    cfg, res = small_run
    s = json.loads((cfg.out / "summary.json").read_text())
    assert s["retrieval"]["status"] == "ok" and s["calibration"]["status"] == "ok"
    ref_path = tmp_path / "retrieval.json"
    argv = ["retrieval", "--dataset", str(shared_data / "scifact"), "--max-docs", str(TINY.retrieval_docs),
            "--max-queries", str(TINY.retrieval_queries), "--n-boot", str(TINY.n_boot), "--seed", "0", "--json", str(ref_path)]
    assert _cli(argv) == 0
    ref = json.loads(ref_path.read_text())
    _same(s["retrieval"]["result"], {k: v for k, v in ref.items() if k not in ("calibration", "calibration_info", "qpp",
                                                                                "qpp_info")})
    for k in ("qpp", "qpp_info", "calibration_incremental"):  # the calibration section carries the QPP study
        _same(s["calibration"]["derived"][k], ref[k])
    _same(s["calibration"]["result"], {k: {kk: vv for kk, vv in v.items() if kk not in ("reliability", "risk_coverage")}
                                       for k, v in ref["calibration"].items()})
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
    assert again.records["norms"]["cached"] is True
    assert again.summary["norm_distribution"]["result"] == first.summary["norm_distribution"]["result"]
    import dataclasses

    assert again.records["lab"]["cached"] is True and again.records["signals"]["cached"] is True
    cfg2 = ReportConfig(out=cfg.out, sizes=dataclasses.replace(TINY, words=40), only=("norms",))
    third = run_report(cfg2, progress=False, encoder=bundled_encoder)
    assert third.records["norms"]["cached"] is False
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
    from normscope.report.text import calibration_sentences, training_lab_sentences

    ok = training_lab_sentences({"result": {"mean_abs_rel_error": 0.014, "median_rel_error": -0.002, "pearson": 0.998,
                                            "encoder": "table", "optimizer": "sgd"}})
    assert "agree with the (E7) prediction" in ok[0]
    bad = training_lab_sentences({"result": {"mean_abs_rel_error": 0.30, "median_rel_error": 0.2, "pearson": 0.5,
                                             "encoder": "mlp", "optimizer": "adamw"}})
    assert "do not meet the gate" in bad[0]
    cal = calibration_sentences({"result": {"top1_score": {"auroc": 0.7, "auroc_ci": [0.6, 0.8]},
                                            "query_norm": {"auroc": 0.52, "auroc_ci": [0.45, 0.59]}}})
    assert "better than chance" in cal[0] and "includes 0.5" in cal[1]


def test_norm_sentence_detects_normalised_model():
    from normscope.report.text import norm_distribution_sentences

    s = norm_distribution_sentences({"result": {"n": 10, "norm_mean": 1.0, "norm_std": 1e-7, "norm_min": 1.0,
                                                "norm_max": 1.0}})
    assert "constant" in s[0]
    s = norm_distribution_sentences({"result": {"n": 10, "norm_mean": 6.3, "norm_std": 0.5, "norm_min": 4.6,
                                                "norm_max": 7.5}})
    assert "not unit length" in s[0] and math.isclose(0.5 / 6.3, 0.0794, rel_tol=1e-2)


def test_equilibrium_sentences_guards():
    from normscope.report.text import equilibrium_sentences

    def corr(rho, lo, hi, n=100):
        return {"pearson": rho, "spearman": rho, "ci": {"pearson": [lo, hi], "spearman": [lo, hi]}, "n": n}

    res = {"n_items": 100, "corr_req_norm": {"pearson": None, "spearman": None, "ci": {}, "n": 0, "note": "x"},
           "c_fit": -1e-5, "corr_norm_heat": corr(0.6, 0.5, 0.7), "corr_norm_displacement": corr(0.05, -0.1, 0.2),
           "corr_norm_drift": corr(-0.3, -0.4, -0.2), "n_negative_q": 3, "n_negative_lambda_rad": 0}
    out = equilibrium_sentences({"status": "ok", "result": res})
    assert "could not be made" in out[0] and "not positive" in out[0]
    assert "rises with the heat" in out[1]
    assert "may be mechanical" in out[2]
    assert "falls with the radial drift" in out[3]
    assert out[4].startswith("3 items have q < 0")
    res["corr_req_norm"] = corr(0.4, 0.2, 0.6, 80)
    res["training"] = {"optimizer": "AdamW"}
    res["corr_norm_displacement"] = corr(0.3, 0.2, 0.4)
    out = equilibrium_sentences({"status": "ok", "result": res})
    assert "rises with the norm predicted by (E7)" in out[0] and "n = 80" in out[0] and "rank statistic" in out[0]
    assert not any("mechanical" in s for s in out)


def test_norm_sentence_points_only_to_sections_that_ran():
    from normscope.report.text import norm_distribution_sentences, what_this_says

    res = {"result": {"n": 10, "norm_mean": 6.3, "norm_std": 0.5, "norm_min": 4.6, "norm_max": 7.5}}
    alone = norm_distribution_sentences(res, explained_by=[])[0]
    assert "sections below" not in alone and "not explained by this run" in alone
    lab = norm_distribution_sentences(res, explained_by=["training_lab"])[0]
    assert "the training lab below tries to explain" in lab
    says = what_this_says({"norm_distribution": dict(res, status="ok"), "training_lab": {"status": "not_run"},
                           "semantic_signals": {"status": "ok", "result": {}}})
    assert "the semantic signals below tries to explain" in says["norm_distribution"][0]


def test_signal_sentence_names_only_applied_controls():
    from normscope.report.text import semantic_signal_sentences

    base = {"status": "ok", "spearman": -0.29, "spearman_ci": [-0.39, -0.18], "n": 300, "controls": ["frequency"],
            "controls_dropped": ["length"]}
    part = {"rho": -0.2, "ci": [-0.3, -0.1], "controls": ["frequency"], "n": 300}
    s = semantic_signal_sentences({"result": {"concreteness": dict(base, partial_spearman=part)}})[0]
    assert "Controlling for frequency it stays negative" in s and "frequency and length" not in s
    assert "Length is constant over these items, so it was not controlled." in s
    s = semantic_signal_sentences({"result": {"frequency": dict(base, controls=[], partial_spearman=None)}})[0]
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
                    "lab_probe_batches": lab["probe_batches"]}
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
