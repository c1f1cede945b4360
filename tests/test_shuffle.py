"""correlate --signal shuffle: the shuffler, the Wilson interval, the paired statistics on planted norms, the
scorecard row and the permutation equivariance of the per-pair outputs (normscope.signals.shuffle)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.requests import Resampling
from normscope.signals.claims import shuffle_claim
from normscope.signals.shuffle import (TIE_RTOL, item_rng, paired_shuffle_stats, run_shuffle, shuffle_words,
                                       split_final,
                                       sign_test_p, wilson_interval)

TITLES = ["Microstructural development of human newborn cerebral white matter",
          "Induction of myelodysplasia by myeloid-derived suppressor cells",
          "A high-throughput screen for regulators of protein folding",
          "Vitamin D status and risk of cardiovascular disease",
          "The role of autophagy in aging and neurodegeneration",
          "Genome-wide association study of body mass index",
          "Tumour suppressor p53 activates transcription of target genes",
          "Cohort study of smoking and lung cancer in women",
          "Mechanisms of antibiotic resistance in Gram-negative bacteria",
          "Sleep deprivation impairs memory consolidation in mice",
          "Single-cell sequencing of the developing human cortex",
          "Dietary fibre intake and colorectal cancer incidence",
          "Insulin signalling controls lifespan in worms and flies",
          "word", "the the the"]


def test_shuffler_is_seeded_by_seed_and_id_and_keeps_the_words():
    text = "the norm of an embedding tracks what the model has seen"
    a = shuffle_words(text, item_rng(7, "doc-1"))
    assert a == shuffle_words(text, item_rng(7, "doc-1"))  # same seed, same id: same shuffle
    assert Counter(a.split()) == Counter(text.split()) and a != text  # the same multiset, another order
    others = {shuffle_words(text, item_rng(s, "doc-1")) for s in range(8)} | {shuffle_words(text, item_rng(7, f"d{i}"))
                                                                               for i in range(8)}
    assert len(others) > 10  # the seed and the id both move the draw
    # fewer than 2 words, or all words alike: nothing to shuffle
    assert shuffle_words("word", item_rng(0, "x")) is None and shuffle_words("a a a", item_rng(0, "x")) is None
    # two distinct words: the identity draw (probability 1/2) is redrawn, so the swap comes back every time
    assert all(shuffle_words("red fox", item_rng(s, "x")) == "fox red" for s in range(40))
    # whitespace runs are one separator: the words, not the spacing, are permuted
    assert Counter(shuffle_words("a  b\tc\nd", item_rng(1, "x")).split()) == Counter("abcd")
    # the final punctuation stays at the end; the words before it are permuted
    title = "Glutaminolysis activates Rag-mTORC1 signaling."
    out = shuffle_words(title, item_rng(0, "t"))
    assert out[-1] == "." and out.count(".") == 1 and Counter(out[:-1].split()) == Counter(title[:-1].split())
    assert shuffle_words("red fox !", item_rng(0, "x")) == "fox red !" and split_final("red fox !") == (["red", "fox"], "!")
    assert shuffle_words("Cancer.", item_rng(0, "x")) is None and split_final("Why?!") == (["Why"], "?!")


def test_wilson_interval_against_the_formula_by_hand():
    # k = 30 of n = 40, 95 %: (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), z = 1.959964
    z, k, n = 1.959963984540054, 30, 40
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = wilson_interval(k, n)
    assert (lo, hi) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (lo, hi) == pytest.approx((0.59807, 0.85813), abs=1e-5)  # the same, worked on paper
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(0, 10)[1] == pytest.approx(z * z / (10 + z * z))
    with pytest.raises(InputError):
        wilson_interval(5, 3)


def test_planted_norms_give_the_planted_share_median_and_sign_test():
    rng = np.random.default_rng(3)
    v = rng.normal(size=(45, 16))
    factor = np.r_[np.full(30, 0.98), np.full(10, 1.03), np.ones(5)]  # 30 smaller, 10 larger, 5 exact ties
    shuffled = v * factor[:, None]
    norm, norm_s = np.linalg.norm(v, axis=1), np.linalg.norm(shuffled, axis=1)
    s = paired_shuffle_stats(norm, norm_s, n_boot=500, seed=0)
    assert (s["n_pairs"], s["n_smaller"], s["n_larger"], s["n_ties"]) == (45, 30, 10, 5)
    assert s["share_smaller"] == pytest.approx(0.75) and s["share_ci"] == pytest.approx(list(wilson_interval(30, 40)))
    exact = 2 * sum(math.comb(40, i) for i in range(30, 41)) / 2 ** 40  # two-sided, symmetric null
    assert s["sign_p"] == pytest.approx(exact, rel=1e-9) and sign_test_p(30, 40) == pytest.approx(exact, rel=1e-9)
    assert s["median_rel_change"] == pytest.approx(-0.02, abs=1e-12)  # 23rd of 45 sorted changes is a -2 % one
    lo, hi = s["median_ci"]
    assert lo <= -0.02 <= hi and lo >= -0.02 - 1e-12 and hi <= 0.0 + 1e-12
    # a rounding-level difference is a tie, not a decision
    tiny = paired_shuffle_stats(norm, norm * (1 + TIE_RTOL / 10), n_boot=0)
    assert tiny["n_ties"] == 45 and tiny["share_smaller"] is None and tiny["sign_p"] is None


def test_scorecard_row_is_exploratory_and_judged_on_the_median():
    rng = np.random.default_rng(0)
    norm = rng.uniform(5, 7, 200)
    res = {"model": "m", "dataset": "d", "n_token_mismatch": 0,
           "pooled": paired_shuffle_stats(norm, norm * rng.uniform(0.96, 1.0, 200), n_boot=300, seed=0)}
    row = shuffle_claim(res)
    assert row["key"] == "atypical_input_shuffle" and row["kind"] == "exploratory"
    assert row["verdict"] == "reproduced" and row["measured"] == res["pooled"]["median_rel_change"] < 0
    res_up = {**res, "pooled": paired_shuffle_stats(norm, norm * rng.uniform(1.0, 1.04, 200), n_boot=300, seed=0)}
    assert shuffle_claim(res_up)["verdict"] == "refuted"
    # an order-invariant encoder (mean-pooled word vectors) ties every pair: it cannot test the question
    tied = shuffle_claim({**res, "pooled": paired_shuffle_stats(norm, norm.copy(), n_boot=300, seed=0)})
    assert tied["verdict"] == "not testable here" and "200 of 200 pairs tie" in tied["reason"]
    almost = norm.copy()
    almost[:1] *= 0.9  # 1 of 200 pairs untied: still blind to word order
    assert shuffle_claim({**res, "pooled": paired_shuffle_stats(norm, almost, n_boot=0)})["verdict"] == "not testable here"
    few = shuffle_claim({**res, "pooled": paired_shuffle_stats(norm[:8], norm[:8] * 0.9, n_boot=300, seed=0)})
    assert few["verdict"] == "not decided at this size"


def _run(items, ids, strata=None, encoder=None):
    return run_shuffle(items=items, ids=ids, strata=strata, encoder=encoder,
                       resampling=Resampling(n_boot=200, n_perm=0, seed=5))


def test_permuting_the_items_permutes_the_per_pair_rows(bundled_encoder):
    ids = [f"t{i:02d}" for i in range(len(TITLES))]
    src = ["a" if i % 2 else "b" for i in range(len(TITLES))]
    r1 = _run(TITLES, ids, src, bundled_encoder)
    perm = np.random.default_rng(1).permutation(len(TITLES))
    r2 = _run([TITLES[i] for i in perm], [ids[i] for i in perm], [src[i] for i in perm], bundled_encoder)
    a = r1.items.sort_values("id").reset_index(drop=True)
    b = r2.items.sort_values("id").reset_index(drop=True)
    assert a.drop(columns=["norm", "norm_shuffled", "rel_change"]).equals(b.drop(columns=["norm", "norm_shuffled",
                                                                                          "rel_change"]))
    np.testing.assert_allclose(a[["norm", "norm_shuffled"]], b[["norm", "norm_shuffled"]], rtol=1e-6)
    d1, d2 = r1.to_dict(), r2.to_dict()
    assert d1["pooled"]["n_smaller"] == d2["pooled"]["n_smaller"]
    assert d1["pooled"]["median_ci"] == pytest.approx(d2["pooled"]["median_ci"], rel=1e-6)
    # what was left out, and why; the same words give the same tokens for these titles
    assert (d1["n_items"], d1["n_short"], d1["n_unshufflable"], d1["n_pairs"]) == (15, 1, 1, 13)
    assert d1["n_token_mismatch"] == 0 and (a.tokens == a.tokens_shuffled).all()
    assert [s["name"] for s in d1["strata"]] == ["a", "b"] and sum(s["n_pairs"] for s in d1["strata"]) == 13
    for _, row in a.iterrows():  # each row's shuffled text is its own text's words in another order
        words, tail = split_final(row["item"])
        assert Counter(split_final(row["shuffled"])[0]) == Counter(words) and row["shuffled"] != row["item"]
        assert row["shuffled"].endswith(tail)
    assert d1["claims"][0]["key"] == "atypical_input_shuffle"


def test_too_few_shufflable_texts_is_a_clear_error(bundled_encoder):
    with pytest.raises(InputError, match="can be shuffled"):
        _run(["word", "a a", "one two"], None, encoder=bundled_encoder)


def test_cli_writes_the_json_and_the_pair_table_and_refuses_a_figure(tmp_path, capsys, bundled_encoder):
    import json

    import pandas as pd

    from normscope.cli import run

    items = tmp_path / "items.txt"
    items.write_text("\n".join(TITLES) + "\n")
    js, pq = tmp_path / "s.json", tmp_path / "s.parquet"
    assert run(["correlate", "--signal", "shuffle", "--items", str(items), "--n-boot", "100", "--json", str(js),
                "-o", str(pq)]) == 0
    d = json.loads(js.read_text())
    df = pd.read_parquet(pq)
    assert (d["n_pairs"], d["n_short"], d["n_unshufflable"]) == (13, 1, 1) and len(df) == 13
    assert d["pooled"]["n_smaller"] == int((df.rel_change < 0).sum())  # the table and the summary agree
    assert d["pooled"]["median_rel_change"] == pytest.approx(float(np.median(df.rel_change)))
    assert d["claims"][0]["key"] == "atypical_input_shuffle" and "shuffled copy" in capsys.readouterr().out
    assert run(["correlate", "--signal", "shuffle", "--items", str(items), "--fig", str(tmp_path / "f.png")]) == 2
    assert not (tmp_path / "f.png").exists()
