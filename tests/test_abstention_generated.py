"""The abstention rows on normscope's generated TreeCut / RuleTaker items (issue 39, item 4 b/c): pooled, length-partial
and length-matched figures; a planted set where length alone drives the norm gives a pooled effect and a null matched
row; the real run's figures recomputed independently; the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from normscope.cli import run
from normscope.requests import Resampling
from normscope.signals.abstention import abstention_stats, run_abstention
from normscope.signals.claims import abstention_claim
from normscope.stats_designs import wilson_interval


def test_length_alone_gives_a_pooled_auroc_and_an_undecided_matched_row():
    rng = np.random.default_rng(4)
    n = 1200
    unans = np.arange(n) % 2 == 1
    tokens = rng.integers(40, 80, n) - 12 * unans  # unanswerable: one equation shorter
    norm = 5.0 - 0.02 * tokens + rng.normal(0, 0.05, n)  # the norm depends on length only
    st = abstention_stats(norm, tokens, unans, n_boot=300, seed=0)
    assert st["auroc_norm"] > 0.7 and st["auroc_norm_p"] < 1e-20 and st["auroc_tokens"] < 0.3
    assert st["r_rb_ci"][0] < 0 < st["r_rb_ci"][1]
    row = abstention_claim({"signal": "treecut", "model": "planted", "dataset": "planted", "stats": st})
    assert row["verdict"] == "inconclusive" and row["kind"] == "exploratory" and row["measured"] == st["r_rb"]
    assert "pooled AUROC of the norm" in row["beside"]
    # a real within-length effect (+0.03 on unanswerable norms) is found at equal length
    st2 = abstention_stats(norm + 0.03 * unans, tokens, unans, n_boot=100, seed=0)
    assert st2["r_rb_ci"][0] > 0.1
    assert abstention_claim({"signal": "treecut", "stats": st2})["verdict"] == "reproduced"
    # too few equal-length pairs: not decided
    few = abstention_stats(norm[:40], np.r_[np.arange(20) * 2, np.arange(20) * 2 + 1][:40], unans[:40], n_boot=50)
    assert abstention_claim({"signal": "ruletaker", "stats": few})["verdict"] == "not decided at this size"


@pytest.mark.parametrize("benchmark", ["treecut", "ruletaker"])
def test_run_on_the_bundled_model_matches_an_independent_computation(bundled_encoder, benchmark):
    res = run_abstention(benchmark, n=120, resampling=Resampling(n_boot=100, n_perm=0, seed=2),
                         encoder=bundled_encoder)
    df = res.items
    assert len(df) == 120 and df["unanswerable"].sum() == 60
    norm = np.linalg.norm(bundled_encoder.encode(df["item"].tolist()).astype(np.float64), axis=1)
    np.testing.assert_allclose(df["norm"], norm, rtol=1e-4)
    tok = bundled_encoder.hf_tokenizer
    np.testing.assert_array_equal(df["tokens"], [len(tok(t, truncation=True)["input_ids"]) for t in df["item"]])
    st = res.stats
    u = df["unanswerable"].to_numpy()
    auc = stats.mannwhitneyu(norm[u], norm[~u]).statistic / (u.sum() * (~u).sum())
    assert st["auroc_norm"] == pytest.approx(auc, rel=1e-4)
    # matched pairs: per token count min(#answerable, #unanswerable)
    t = df["tokens"].to_numpy()
    want = sum(min(((t == c) & ~u).sum(), ((t == c) & u).sum()) for c in set(t.tolist()))
    assert st["n_pairs"] == want and st["n_unmatched_a"] == 60 - want
    if st["matched_share"] is not None:
        k = round(st["matched_share"] * (st["n_pairs"] - st["n_ties"]))
        assert st["matched_ci"] == pytest.approx(list(wilson_interval(k, st["n_pairs"] - st["n_ties"])))
        assert st["r_rb"] == pytest.approx(2 * st["matched_share"] - 1)
    assert res.claims[0]["key"] == f"abstention_{benchmark}"
    # the same items in another order: the same figures
    again = run_abstention(benchmark, n=120, resampling=Resampling(n_boot=100, n_perm=0, seed=2),
                           encoder=bundled_encoder)
    assert again.stats == st


def test_cli_json_and_refusals(tmp_path, capsys):
    j = tmp_path / "tc.json"
    assert run(["correlate", "--signal", "treecut", "--n-items", "60", "--n-boot", "50", "--json", str(j)]) == 0
    d = json.loads(j.read_text())
    assert d["signal"] == "treecut" and d["stats"]["n_answerable"] == 30 and d["claims"][0]["key"] == "abstention_treecut"
    cap = capsys.readouterr()
    assert "norm vs unanswerable, treecut" in cap.out and "claim: Exploratory: does the raw norm flag" in cap.out + cap.err
    assert run(["correlate", "--signal", "ruletaker", "--n-items", "60", "--fig", str(tmp_path / "f.png")]) == 2
    assert "no figure" in capsys.readouterr().err and not (tmp_path / "f.png").exists()
    assert run(["correlate", "--signal", "treecut", "--n-items", "5"]) == 2
    assert ">= 20" in capsys.readouterr().err
