"""A report run below fp32 says so, with each section's measured cost, on the page and on the console (issue 28,
part 4): the sentence is built from summary.json's own error entries."""

from __future__ import annotations

from normscope.report.html import render_html
from normscope.report.stages import SECTIONS
from normscope.report.text import precision_errors, precision_sentence


def _summary(precision: str) -> dict:
    err = {"median": 5.6e-4, "max": 2.1e-3, "cosine_min": 0.99992, "n_sample": 64, "seed": 0}
    return {
        "report": {"precision": precision, "model": "m", "preset": "full", "sizes": {}, "seconds": 1.0},
        "norm_distribution": {"status": "ok", "result": {"norm_rel_error_vs_fp32": err}},
        "semantic_signals": {"status": "ok", "result": {
            "frequency": {"norm_rel_error_vs_fp32": dict(err, median=4.5e-4)},
            "specificity": {"norm_rel_error_vs_fp32": None}}},  # an fp32 or unmeasured run: no row
        "equilibrium_theory": {"status": "ok", "result": {"grad_error_vs_fp32": {"rel_error": 0.0143, "cosine": 0.99990}}},
        "claims": [],
    }


def test_the_rows_are_the_sections_own_entries_in_page_order():
    rows = precision_errors(_summary("bf16"), SECTIONS)
    assert [(label, type(err).__name__) for label, err in rows] == [
        ("Norm distribution", "NormError"), ("Equilibrium theory", "GradError"), ("Semantic signals (frequency)", "NormError")]
    assert rows[2][1].median == 4.5e-4 and rows[1][1].rel_error == 0.0143


def test_a_bf16_report_states_its_cost_and_an_fp32_one_says_nothing():
    s = precision_sentence(_summary("bf16"), SECTIONS)
    assert s.startswith("Precision bf16:") and "every verdict reads those numbers" in s
    assert "Norm distribution 5.6e-04 / 2.1e-03 (64 items)" in s
    assert "Semantic signals (frequency) 4.5e-04 / 2.1e-03 (64 items)" in s
    assert "pair gradient relative error 1.4e-02, cosine 0.99990" in s and "specificity" not in s
    assert precision_sentence(_summary("fp32"), SECTIONS) is None
    assert precision_sentence({"report": {}}, SECTIONS) is None


def test_the_page_shows_the_precision_and_the_sentence(tmp_path):
    page = render_html(_summary("bf16"), {}, tmp_path)
    assert "precision bf16" in page and "Norm distribution 5.6e-04 / 2.1e-03 (64 items)" in page
    page32 = render_html(_summary("fp32"), {}, tmp_path)
    assert "precision fp32" in page32 and "Precision bf16" not in page32 and "Relative norm error" not in page32
