"""normscope report: a small real run, its numbers against the individual commands, caching, errors.

The report of a small run (bundled MiniLM, tiny sizes) is built once per module; the browser test
(tests/test_report_browser.py) renders the same kind of run in headless Chromium.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from normscope.report import Sizes, parse_stages
from normscope.report.runner import ReportConfig, run_report

TINY = Sizes(
    words=60,
    probe_items=24,
    probe_batches=2,
    probe_batch_size=8,
    lab_steps=300,
    signal_items=120,
    retrieval_docs=300,
    retrieval_queries=20,
    n_boot=200,
)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, bundled_encoder):
    out = tmp_path_factory.mktemp("report")
    cfg = ReportConfig(out=out, sizes=TINY, only=("setup", "norms"))
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
    assert (out / "norm_distribution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "stages" / "norms.json").is_file()


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
        assert got[k] == pytest.approx(ref[k], rel=1e-6), k
    # an independent recomputation: the norms of the same words from the encoder directly
    from normscope.datasets import wordfreq_words

    r = np.linalg.norm(bundled_encoder.encode(wordfreq_words(TINY.words)).astype(np.float64), axis=1)
    assert got["norm_mean"] == pytest.approx(r.mean(), rel=1e-5)
    q = s["norm_distribution"]["derived"]["quantiles"]
    assert q["p50"] == pytest.approx(np.median(r), rel=1e-5)
    # every key number shown on the page is in summary.json
    labels = [row[0] for row in s["norm_distribution"]["key_numbers"]]
    assert "mean norm" in labels


def test_rerun_uses_cache_and_settings_invalidate(small_run, bundled_encoder):
    cfg, first = small_run
    again = run_report(cfg, progress=False, encoder=bundled_encoder)
    assert again.records["norms"]["cached"] is True
    assert again.summary["norm_distribution"]["result"] == first.summary["norm_distribution"]["result"]
    import dataclasses

    cfg2 = ReportConfig(out=cfg.out, sizes=dataclasses.replace(TINY, words=40), only=("norms",))
    third = run_report(cfg2, progress=False, encoder=bundled_encoder)
    assert third.records["norms"]["cached"] is False
    assert third.summary["norm_distribution"]["result"]["n"] == 40
    # restore the module's run for the other tests
    run_report(cfg, progress=False, encoder=bundled_encoder)


def test_missing_data_sections_say_why(tmp_path, bundled_encoder):
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
