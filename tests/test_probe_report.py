"""The report's probes stage (``equilibrium_theory``) on a small real run, checked against independent values.

The bundled all-MiniLM-L6-v2 probes 24 wordfreq words with K = 4 batches of B = 8 WordNet pairs.
Checked: the observed norms equal the encoder's own ``encode`` (a different forward path), the
claims rows carry the section's numbers and a verdict that follows the CI's side of 0 (worked out
here by hand), "left out" counts come from the same mask as the statistic, the K-convergence
table ends at the full K, and the "what this says" sentences cite each correlation's own n.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from _data import skip_without_data
from normscope.report import ReportConfig, Sizes, run_report

SIZES = Sizes(words=60, probe_items=24, probe_batches=4, probe_batch_size=8, n_boot=200, n_perm=200)


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory, bundled_encoder):
    """The stage as the report runs it, on WordNet *verb* (term, gloss) pairs: reading the 82,115 noun
    synsets through NLTK takes most of the stage's time on a small run, the 13,767 verb synsets a sixth."""
    import torch

    import normscope.pairs
    import normscope.report.stages.probes as stage
    from normscope.datasets import shared_data_dir

    d = shared_data_dir()
    if d is None or not (d / "wordnet-3.0").exists():
        skip_without_data("WordNet is not in the shared data folder")
    mp = pytest.MonkeyPatch()
    real = normscope.pairs.load_pairs
    verbs = lambda spec: real("wordnet:v") if spec == "wordnet" else real(spec)  # noqa: E731
    mp.setattr(stage, "load_pairs", verbs)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        out = tmp_path_factory.mktemp("report_probes")
        res = run_report(ReportConfig(out=out, sizes=SIZES, only=("probes",)), progress=False, encoder=bundled_encoder)
    finally:
        torch.set_num_threads(n)
        mp.undo()
    return out, res


def test_probe_section_numbers_are_independent_values(probe_run, bundled_encoder):
    out, res = probe_run
    summary = json.loads((out / "summary.json").read_text())
    sec = summary["equilibrium_theory"]
    assert sec["status"] == "ok", sec.get("reason")
    r = sec["result"]
    assert r["n_items"] == 24 and r["batches"] == 4 and r["batch_size"] == 8 and r["pairs"] == "wordnet-3.0:v"
    # the observed norms: the encoder's own batched sdpa forward, independently of the probe's eager forward
    from normscope.report.stages.probes import WORDS_FILE, probe_words

    ids, words = probe_words(24, 0)  # 24 of the 1,000 most frequent words, drawn with the report's seed
    assert (out / WORDS_FILE).read_text().count("\n") == 24 and f'"text": "{words[0]}"' in (out / WORDS_FILE).read_text()
    assert len(set(ids)) == 24 and all(0 <= int(i) < 1000 for i in ids)
    norms = np.linalg.norm(bundled_encoder.encode(words).astype(np.float64), axis=1)
    assert r["norm"]["mean"] == pytest.approx(norms.mean(), rel=1e-5)
    assert r["norm"]["max"] == pytest.approx(norms.max(), rel=1e-5)
    # every correlation: CI over batches and items, items-only CI, the same n + left out = P
    for key in ("corr_norm_heat", "corr_norm_drift", "corr_req_norm", "corr_req_nodecay_norm", "corr_norm_displacement"):
        c = r[key]
        assert "batches and items" in c["ci"]["resamples"] and "items only" in c["ci_items_only"]["resamples"]
        assert c["n"] + c["n_excluded"] == 24 and sum(c["excluded"].values()) == c["n_excluded"]
    # MiniLM was trained without weight decay: no lambda-based quantities, the c = 0 reading excludes outward drift
    assert r["decay_reading"] == "trained_without_decay" and r["corr_req_lambda_rad_norm"] is None
    assert r["corr_req_nodecay_norm"]["excluded"].get("drift>=0 (no decay)", 0) == r["corr_req_nodecay_norm"]["n_excluded"]
    # K-convergence: K/2 and K; the full-K row is the headline statistic itself
    kc = r["k_convergence"]["rows"]
    assert [row["batches"] for row in kc] == [2, 4]
    assert kc[-1]["corr_norm_heat"]["spearman"] == pytest.approx(r["corr_norm_heat"]["spearman"], abs=1e-12)


def test_probe_claims_rows_follow_the_ci(probe_run):
    out, res = probe_run
    sec = res.records["probes"].sections["equilibrium_theory"]
    r = sec.result
    rows = {row["key"]: row for row in sec.claims}
    assert set(rows) == {"corr_norm_heat", "corr_norm_drift", "req_predicts_norm"}
    # each row's figure is the section's own number: the R-free statistic for heat, Pearson for drift, the balance
    heat, free = rows["corr_norm_heat"], r["corr_norm_displacement"]
    assert heat["measured"] == pytest.approx(free["spearman"], abs=1e-12)
    assert heat["ci"] == pytest.approx(free["ci"]["spearman"], abs=1e-12)
    assert rows["corr_norm_drift"]["measured"] == pytest.approx(r["corr_norm_drift"]["pearson"], abs=1e-12)
    bal = r["balance"]
    if bal["c_fit"] is not None and bal["c_fit"] > 0:
        assert rows["req_predicts_norm"]["measured"] == pytest.approx(bal["statistics"]["dispersion"], abs=1e-12)
        assert bal["n_perm"] == 200 and 0 < bal["p_below"]["dispersion"] <= 1
    # a tiny design: nothing is decided, each row says why and what would decide it; both verdicts are still shown
    for row in rows.values():
        assert row["section"] == "equilibrium_theory" and row["verdict"] == "not decided at this size"
        assert "below the sign-stable design" in row["reason"] and "500 items and 16 batches" in row["needs"]
    lo, hi = free["ci"]["spearman"]
    assert heat["direction"] == ("reproduced" if lo > 0 else "refuted" if hi < 0 else "inconclusive")
    # the scorecard of summary.json carries these rows
    card = {row["key"]: row for row in json.loads((out / "summary.json").read_text())["claims"]}
    for key, row in rows.items():
        assert card[key]["verdict"] == row["verdict"] and card[key]["measured"] == row["measured"]


def test_probe_sentences_cite_their_own_numbers(probe_run):
    out, _ = probe_run
    summary = json.loads((out / "summary.json").read_text())
    says = summary["what_this_says"]["equilibrium_theory"]
    r = summary["equilibrium_theory"]["result"]
    req = r["corr_req_norm"]
    if req["spearman"] is None:
        assert "could not be made" in says[0] and "c_fit" in says[0]
    else:
        assert f"n = {req['n']}" in says[0] and "c_fit" in says[0]
        if req["ci"]["spearman"][1] < 0:
            assert says[0].startswith("The prediction fails on this model")
    heat = next(s for s in says if "the heat \u03a3\u00b2" in s)
    assert f"n = {r['corr_norm_heat']['n']}" in heat


def test_probe_command_reproduces_the_section(probe_run, tmp_path, monkeypatch):
    """The page's `normscope probe probe_words.jsonl ...` (run in the report folder, on the same verb pairs)
    writes the section's numbers."""
    import normscope.pairs
    from _reproduce import check_reproduces

    out, res = probe_run
    real = normscope.pairs.load_pairs
    monkeypatch.setattr(normscope.pairs, "load_pairs", lambda spec: real("wordnet:v") if spec == "wordnet" else real(spec))
    cmd = res.summary["equilibrium_theory"]["command"]
    assert cmd.startswith("normscope probe probe_words.jsonl --model sentence-transformers/all-MiniLM-L6-v2 --pairs wordnet")
    assert "--precision fp32" in cmd and "--batch-size 8" in cmd
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)  # as the fixture ran the report: float32 sums depend on the thread count
    try:
        check_reproduces(out, res.records, ["equilibrium_theory"], tmp_path, monkeypatch)
    finally:
        torch.set_num_threads(n)
