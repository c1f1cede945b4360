"""The ceiling / floor gate of the gain claims (:func:`normscope.claims.ceiling_gate`): where cosine leaves no room
for the claimed gain, the gain rows are "not testable here", never "refuted"."""

from __future__ import annotations

import numpy as np
import pytest
from _retrieval_call import run_retrieval
from _retrieval_data import GRIDS, LookupEncoder, write_beir

from normscope.claims import CLAIMS, ceiling_gate, judge


def test_the_gate_by_hand():
    low = CLAIMS["gain_high_frequency"].size.low  # +1.2 % (the overall gain row is direction-only)
    assert low == pytest.approx(0.012)
    g = ceiling_gate(1.0, 40, 0, 40, claimed_gain=low)
    assert (g.passed, g.verdict) == (False, "not testable here")
    assert g.reason == "cosine is at the ceiling on 40 of 40 queries (nDCG@10 = 1): no gain is possible"
    # mean 0.995: the largest relative gain is 1/0.995 - 1 = +0.503 % < +1.2 %
    g = ceiling_gate(0.995, 38, 0, 40, claimed_gain=low)
    assert not g.passed and "the largest possible gain, +0.50 %, is below the claimed +1.20 %" in g.reason
    # mean 0.98: 1/0.98 - 1 = +2.04 % >= +1.2 %: testable
    g = ceiling_gate(0.98, 35, 0, 40, claimed_gain=low)
    assert g.passed and g.reason.endswith("the largest possible gain is +2.04 %")
    assert ceiling_gate(0.995, 38, 0, 40).passed  # no claimed size: only the all-at-a-bound cases fail
    g = ceiling_gate(0.0, 0, 40, 40, claimed_gain=low)
    assert not g.passed and "at the floor on 40 of 40 queries" in g.reason and "undefined" in g.reason
    # one statistic of the whole set (Spearman rho): 1/0.99 - 1 = +1.01 % < +1.2 %
    g = ceiling_gate(0.99, 0, 0, 1, claimed_gain=low, metric="Spearman rho", unit="pair sets")
    assert not g.passed and g.reason.startswith("cosine's Spearman rho is 0.99 (at most 1): the largest possible gain, +1.01 %")
    assert ceiling_gate(0.39, 0, 0, 1, claimed_gain=low, metric="Spearman rho").passed


def _at_the_ceiling(root, rng, n_train=30, n_test=40, d=8):
    """Every query's one relevant document points exactly its way (cosine 1: ranked first, nDCG@10 = 1 for
    cosine on every query); 60 noise documents of large norm in random directions."""
    table, corpus, queries, qrels = {}, [], [], {"train": [], "test": []}
    for split, n in (("train", n_train), ("test", n_test)):
        for i in range(n):
            q = rng.normal(size=d)
            table[f"{split}-q{i}"] = q
            table[f"{split}-g{i}"] = q / np.linalg.norm(q) * rng.uniform(0.5, 1.5)
            corpus.append({"_id": f"{split}-g{i}", "title": "", "text": f"{split}-g{i}"})
            queries.append({"_id": f"{split}-q{i}", "text": f"{split}-q{i}"})
            qrels[split].append((f"{split}-q{i}", f"{split}-g{i}", 1))
    for j in range(60):
        table[f"noise{j}"] = rng.normal(size=d) * 5
        corpus.append({"_id": f"noise{j}", "title": "", "text": f"noise{j}"})
    write_beir(root, corpus, queries, qrels)
    return root, LookupEncoder(table)


def test_retrieval_at_the_ceiling_is_not_testable_not_refuted(tmp_path, rng):
    ddir, enc = _at_the_ceiling(tmp_path, rng)
    res = run_retrieval(ddir, encoder=enc, scorers=("cosine", "inverse_norm"), n_permutations=200, n_boot=200,
                        grids=GRIDS)
    cos = res.scorers["cosine"]
    assert cos["ndcg@10"] == 1.0 and cos["ndcg10_at_ceiling"] == 40 and cos["ndcg10_at_floor"] == 0
    rows = {r["key"]: r for r in res.claims}
    gain = rows["similarity_gain"]
    assert gain["verdict"] == "not testable here", gain
    assert gain["reason"] == "cosine is at the ceiling on 40 of 40 queries (nDCG@10 = 1): no gain is possible"
    assert gain["why"].startswith("not testable here: cosine is at the ceiling on 40 of 40 queries")
    # the same numbers without the gate: every scorer scores 1, so the CI has zero width; the zero-width rule
    # alone would say "not decided", as if more queries could decide it; the gate says no gain is possible
    r = res.scorers["inverse_norm"]
    assert r["relative_ci"][0] == r["relative_ci"][1] == 0.0
    assert judge("similarity_gain", r["relative"], r["relative_ci"], p=r["p_value"])["verdict"] == \
        "not decided at this size"
    hf = rows["gain_high_frequency"]
    assert hf["verdict"] in ("not testable here",), hf
