"""The FEVEROUS row (issue 39, item 4a): norm vs label (NEI vs decided, length-matched), annotation time and
challenge type; figures recomputed by independent formulas; planted effects decided, a planted length-only effect
not; the real run on the bundled model on a planted sample file (the real sample is fetched, never bundled); CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from normscope.cli import run
from normscope.errors import DataError
from normscope.requests import Resampling
from normscope.signals.claims import feverous_claim
from normscope.signals.feverous import NEI, annotation_seconds, feverous_stats, load_feverous, run_feverous

LABELS = ["SUPPORTS"] * 18 + ["REFUTES"] * 16 + [NEI] * 16
CHALLENGES = ["Other", "Numerical Reasoning", "Multi-hop Reasoning", "Entity Disambiguation",
              "Combining Tables and Text", "Search terms not in claim"]
WORDS = "river city album season team player film company island church school station novel village".split()


def _ops(seconds: float) -> list[dict]:
    return [{"operation": "start", "value": "start", "time": "0"},
            {"operation": "search", "value": "x", "time": f"{seconds / 2:.3f}"},
            {"operation": "finish", "value": "finish", "time": f"{seconds:.3f}"}]


def _write(path, n=50, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        k = int(rng.integers(6, 20))
        claim = "The " + " ".join(rng.choice(WORDS, k)) + f" was founded in {1900 + i}."
        rows.append({"id": 100 + 7 * i, "claim": claim, "label": LABELS[i % 50], "challenge": CHALLENGES[i % 6],
                     "evidence": [], "annotator_operations": _ops(30.0 + 5 * i)})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_annotation_seconds_by_hand():
    assert annotation_seconds(_ops(140.644)) == pytest.approx(140.644)
    jump = _ops(10.0)[:2] + [{"operation": "finish", "value": "finish", "time": "1619122731.659"}]
    assert np.isnan(annotation_seconds(jump))  # id 9222 of the real sample: a clock reset
    assert np.isnan(annotation_seconds(list(reversed(_ops(10.0)))))
    assert np.isnan(annotation_seconds(_ops(5.0)[:1])) and np.isnan(annotation_seconds([{"time": "soon"}] * 2))


def test_load_sorts_by_id_and_refuses_a_bad_line(tmp_path):
    df = load_feverous(_write(tmp_path / "s.jsonl"))
    assert len(df) == 50 and list(df["id"]) == sorted(df["id"]) and df["annotation_s"].iloc[0] == pytest.approx(30.0)
    assert (df["label"] == NEI).sum() == 16
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "claim": "x"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl line 1 is not a FEVEROUS record"):
        load_feverous(tmp_path / "bad.jsonl")


def _frame(norm, tokens, labels, seconds, challenges) -> pd.DataFrame:
    n = len(norm)
    return pd.DataFrame({"id": [f"c{i:03d}" for i in range(n)], "claim": [""] * n, "label": labels,
                         "challenge": challenges, "annotation_s": seconds, "norm": norm, "tokens": tokens})


def test_statistics_against_independent_formulas():
    rng = np.random.default_rng(1)
    n = 50
    tokens = rng.integers(12, 30, n)
    labels = np.array(LABELS)
    norm = 6.0 - 0.03 * tokens + rng.normal(0, 0.1, n)
    seconds = 20 + 8 * tokens + rng.normal(0, 30, n)
    seconds[7] = np.nan
    ch = np.array([CHALLENGES[i % 6] for i in range(n)])
    st = feverous_stats(_frame(norm, tokens, labels, seconds, ch), n_boot=200, n_perm=200, seed=0)
    nei = labels == NEI
    # pooled AUROC: P(norm of an NEI claim > norm of a decided one)
    assert st["nei"]["auroc_norm"] == pytest.approx((norm[nei][:, None] > norm[~nei][None, :]).mean())
    ok = np.isfinite(seconds)
    assert st["time"]["n"] == 49 and st["time"]["spearman"] == pytest.approx(stats.spearmanr(norm[ok], seconds[ok])[0])
    # partial rho with one control: the closed form of Spearman rhos
    r = lambda a, b: stats.spearmanr(a, b)[0]  # noqa: E731
    x, y, z = seconds[ok], norm[ok], tokens[ok]
    closed = (r(x, y) - r(x, z) * r(y, z)) / np.sqrt((1 - r(x, z) ** 2) * (1 - r(y, z) ** 2))
    assert st["time"]["partial_rho"] == pytest.approx(closed, abs=1e-9)
    # Kruskal-Wallis H by hand (no ties in the norm): 12 / (N (N+1)) sum R_g^2 / n_g - 3 (N+1)
    ranks = stats.rankdata(norm)
    h = 12 / (n * (n + 1)) * sum(ranks[ch == g].sum() ** 2 / (ch == g).sum() for g in CHALLENGES) - 3 * (n + 1)
    assert st["challenge"]["H"] == pytest.approx(h) and st["challenge"]["p"] == pytest.approx(stats.chi2.sf(h, 5))
    assert sum(st["label"]["groups"].values()) == 50 and st["label"]["groups"][NEI] == 16


@pytest.mark.parametrize("shift, decides", [(2, "length-matched rank-biserial r"), (6, "partial \u03c1(NOT ENOUGH INFO")])
def test_length_alone_is_not_decided_and_a_planted_effect_is(shift, decides):
    """NEI claims ``shift`` tokens longer, the norm falling with length only: a pooled AUROC far from 1/2, the row not
    decided; NEI norms +0.5 at every length: reproduced. Shift 2 leaves 10 equal-length pairs (the matched r_rb
    decides), shift 6 leaves 3 (the partial rho on tokens decides, and the row says so)."""
    rng = np.random.default_rng(3)
    n = 50
    labels = np.array(LABELS)
    nei = labels == NEI
    tokens = rng.integers(15, 22, n) + shift * nei
    secs = np.full(n, 100.0) + np.arange(n)
    ch = np.array([CHALLENGES[i % 6] for i in range(n)])
    length_only = 6.0 - 0.05 * tokens + rng.normal(0, 0.02, n)
    st = feverous_stats(_frame(length_only, tokens, labels, secs, ch), n_boot=300, n_perm=100, seed=0)
    assert st["nei"]["auroc_norm"] < 0.25  # pooled: NEI has the smaller norms (they are longer)
    row = feverous_claim({"model": "planted", "dataset": "planted", "stats": st})
    assert row["verdict"] == "not decided at this size" and row["kind"] == "exploratory"
    assert row["label"].startswith(decides) and "includes 0" in row["reason"]
    assert "pooled AUROC of the norm for NEI" in row["beside"]
    planted = length_only + 0.5 * nei  # NEI larger at every length
    st2 = feverous_stats(_frame(planted, tokens, labels, secs, ch), n_boot=300, n_perm=100, seed=0)
    row2 = feverous_claim({"model": "planted", "dataset": "planted", "stats": st2})
    assert row2["verdict"] == "reproduced" and row2["label"].startswith(decides) and row2["ci"][0] > 0.4
    untied = st2["nei"]["n_pairs"] - st2["nei"]["n_ties"]
    assert (untied >= 10) == (shift == 2)


def test_run_on_the_bundled_model_recomputed_and_order_free(bundled_encoder, tmp_path):
    path = _write(tmp_path / "sample.jsonl")
    res = run_feverous(path=path, resampling=Resampling(n_boot=100, n_perm=100, seed=0), encoder=bundled_encoder)
    df = res.items
    norm = np.linalg.norm(bundled_encoder.encode(df["claim"].tolist()).astype(np.float64), axis=1)
    np.testing.assert_allclose(df["norm"], norm, rtol=1e-4)
    tok = bundled_encoder.hf_tokenizer
    np.testing.assert_array_equal(df["tokens"], [len(tok(t, truncation=True)["input_ids"]) for t in df["claim"]])
    u = (df["label"] == NEI).to_numpy()
    auc = stats.mannwhitneyu(norm[u], norm[~u]).statistic / (u.sum() * (~u).sum())
    assert res.stats["nei"]["auroc_norm"] == pytest.approx(auc, rel=1e-4)
    assert res.claims[0]["key"] == "abstention_feverous"
    lines = path.read_text().splitlines()
    rev = tmp_path / "reversed.jsonl"
    rev.write_text("\n".join(reversed(lines)) + "\n")
    again = run_feverous(path=rev, resampling=Resampling(n_boot=100, n_perm=100, seed=0), encoder=bundled_encoder)
    assert json.dumps(again.stats, sort_keys=True) == json.dumps(res.stats, sort_keys=True)


def test_cli_json_and_refusals(tmp_path, capsys):
    path = _write(tmp_path / "sample.jsonl")
    j = tmp_path / "fev.json"
    assert run(["correlate", "--signal", "feverous", "--items", str(path), "--n-boot", "50", "--n-perm", "50",
                "--json", str(j)]) == 0
    d = json.loads(j.read_text())
    assert d["signal"] == "feverous" and d["stats"]["nei"]["n_unanswerable"] == 16
    assert d["claims"][0]["key"] == "abstention_feverous"
    cap = capsys.readouterr()
    assert "norm vs FEVEROUS label" in cap.out and "claim: Exploratory: does the raw norm flag the FEVEROUS" in cap.err
    assert run(["correlate", "--signal", "feverous", "--items", str(path), "--n-items", "5"]) == 2
    assert "reads the 50 claims" in capsys.readouterr().err
    assert run(["correlate", "--signal", "feverous", "--items", str(path), "--fig", str(tmp_path / "f.png")]) == 2
    assert "no figure" in capsys.readouterr().err and not (tmp_path / "f.png").exists()


def test_any_undecided_figure_reads_not_decided_at_this_size():
    """A CI that excludes 0 while the sign test does not reject is no decision either: not decided at this size
    (50 claims are all the sample has), with the rule's reason; a CI excluding 0 with the test agreeing decides."""
    nei = {"r_rb": 0.5, "r_rb_ci": [0.05, 0.8], "matched_p": 0.2, "n_pairs": 12, "n_ties": 0, "n_answerable": 34,
           "n_unanswerable": 16, "partial_rho": 0.1, "partial_ci": [-0.2, 0.4], "partial_n": 50}
    row = feverous_claim({"stats": {"nei": nei}})
    assert row["verdict"] == "not decided at this size" and row["reason"].startswith("12 untied equal-length pairs")
    assert row["reason"].endswith("excludes 0, but the paired test does not reject equality (p = 0.2 >= 0.05)")
    assert feverous_claim({"stats": {"nei": dict(nei, matched_p=0.01)}})["verdict"] == "reproduced"
