"""The length matcher of issue 39 (normscope.stats_designs.length_matched_pairs / matched_comparison): pairs only
equal token counts, counts what it cannot match, and removes an effect that length alone drives."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.errors import InputError
from scipy.stats import spearmanr

from normscope.stats_designs import (
    length_matched_pairs,
    length_matched_within,
    matched_comparison,
    matched_concordance,
    stratified_partial_spearman,
    wilson_interval,
    within_length_spearman,
)


def test_pairs_only_equal_token_counts_and_counts_the_unmatched():
    ta, tb = [3, 3, 4, 5], [3, 4, 4, 6]
    p = length_matched_pairs(ta, tb)
    # count 3: two A, one B -> 1 pair; count 4: one A, two B -> 1 pair; 5 and 6: no partner
    assert (len(p.a), p.n_unmatched_a, p.n_unmatched_b) == (2, 2, 2)
    assert p.per_count == {3: (2, 1, 1), 4: (1, 2, 1), 5: (1, 0, 0), 6: (0, 1, 0)}
    assert all(ta[i] == tb[j] for i, j in zip(p.a, p.b))
    rng = np.random.default_rng(0)
    big_a, big_b = rng.integers(3, 12, 400), rng.integers(6, 20, 300)
    q = length_matched_pairs(big_a, big_b, seed=4)
    assert (big_a[q.a] == big_b[q.b]).all() and len(set(q.a.tolist())) == len(q.a) == len(set(q.b.tolist()))
    want = sum(min((big_a == t).sum(), (big_b == t).sum()) for t in range(3, 20))
    assert len(q.a) == want and q.n_unmatched_a == 400 - want and q.n_unmatched_b == 300 - want
    with pytest.raises(InputError):
        length_matched_pairs([3.5, 4], [3])


def test_the_pairs_follow_the_ids_not_the_positions():
    ta, tb = [5, 5, 5, 6, 7], [5, 5, 6, 6]
    ida, idb = ["a0", "a1", "a2", "a3", "a4"], ["b0", "b1", "b2", "b3"]
    p = length_matched_pairs(ta, tb, ids_a=ida, ids_b=idb, seed=2)
    perm_a, perm_b = [4, 2, 0, 3, 1], [3, 1, 0, 2]
    q = length_matched_pairs([ta[i] for i in perm_a], [tb[i] for i in perm_b], ids_a=[ida[i] for i in perm_a],
                             ids_b=[idb[i] for i in perm_b], seed=2)
    pairs_p = {(ida[i], idb[j]) for i, j in zip(p.a, p.b)}
    pairs_q = {(ida[perm_a[i]], idb[perm_b[j]]) for i, j in zip(q.a, q.b)}
    assert pairs_p == pairs_q and len(pairs_p) == 3


def test_length_alone_gives_a_pooled_effect_and_a_null_matched_one():
    # planted: group B (e.g. the more specific captions) is longer; the norm depends on length only
    rng = np.random.default_rng(11)
    ta, tb = rng.integers(4, 14, 1500), rng.integers(8, 18, 1500)

    def norm(t):
        return 6.0 - 0.08 * t + rng.normal(0, 0.15, t.size)

    na, nb = norm(ta), norm(tb)
    pairs = length_matched_pairs(ta, tb, seed=0)
    r = matched_comparison(na, nb, pairs)
    assert r["pooled_share"] < 0.30 and r["pooled_p"] < 1e-10  # pooled: B looks smaller-normed (length)
    lo, hi = r["matched_ci"]
    assert lo < 0.5 < hi and r["matched_p"] > 0.05  # matched at equal length: no effect left
    assert r["n_pairs"] == len(pairs.a) > 400 and r["n_unmatched_a"] == 1500 - r["n_pairs"]
    k = int((nb[pairs.b] > na[pairs.a]).sum())
    assert r["matched_share"] == pytest.approx(k / r["n_pairs"]) and r["matched_ci"] == pytest.approx(
        list(wilson_interval(k, r["n_pairs"])))
    # a real within-length effect (+0.1 on B) survives the matching
    r2 = matched_comparison(na, nb + 0.1, pairs)
    assert r2["matched_ci"][0] > 0.6


# --- one item set with a continuous covariate (specificity depth, label entropy): within equal token count ---

def test_within_pairs_only_equal_counts_and_follow_the_ids():
    t = [3, 3, 3, 4, 4, 5, 6, 6, 6, 6]
    p = length_matched_within(t, seed=1)
    # 3: three items -> 1 pair + 1 left; 4: 1 pair; 5: alone; 6: 2 pairs
    assert len(p.a) == 4 and p.n_unmatched_a == 2 and p.n_unmatched_b == 0
    assert all(t[i] == t[j] for i, j in zip(p.a, p.b))
    assert len(set(p.a.tolist()) | set(p.b.tolist())) == 8  # disjoint pairs
    ids = [f"x{i}" for i in range(len(t))]
    perm = np.random.default_rng(3).permutation(len(t))
    q = length_matched_within([t[i] for i in perm], [ids[i] for i in perm], seed=1)
    pp = {frozenset((ids[i], ids[j])) for i, j in zip(length_matched_within(t, ids, seed=1).a,
                                                       length_matched_within(t, ids, seed=1).b)}
    assert pp == {frozenset((ids[perm[i]], ids[perm[j]])) for i, j in zip(q.a, q.b)}
    with pytest.raises(InputError):
        length_matched_within([3, 4], ["a", "a"])


def test_matched_concordance_counts_by_hand():
    # pairs (0,1), (2,3), (4,5), (6,7): concordant, discordant, x tied, concordant
    x = np.array([1, 2, 5, 3, 1, 1, 0, 9.0])
    y = np.array([1, 3, 2, 4, 7, 8, 1, 5.0])
    from normscope.stats_designs import MatchedPairs

    p = MatchedPairs(a=np.array([0, 2, 4, 6]), b=np.array([1, 3, 5, 7]), n_unmatched_a=1, n_unmatched_b=0,
                     per_count={})
    r = matched_concordance(x, y, p)
    assert (r["n_concordant"], r["n_discordant"], r["n_tied_x"], r["n_unmatched"]) == (2, 1, 1, 1)
    assert r["share"] == pytest.approx(2 / 3) and r["r_rb"] == pytest.approx(1 / 3)
    assert r["ci"] == pytest.approx(list(wilson_interval(2, 3))) and r["p"] == pytest.approx(1.0)


def test_within_length_rho_is_the_stratum_indicator_partial():
    # Frisch-Waugh-Lovell: centring within strata = regressing on one indicator per stratum
    rng = np.random.default_rng(5)
    n = 300
    t = rng.integers(3, 9, n)
    f = rng.normal(size=n)
    x = rng.normal(size=n) + 0.2 * t
    y = 0.4 * x + np.sin(t) + 0.3 * f + rng.normal(size=n)
    src = rng.choice(["snli", "mnli"], n)
    for controls, strata in ((None, None), (f, None), (f, src)):
        r = within_length_spearman(x, y, t, controls, strata=strata, n_boot=50, n_perm=50)
        lab = t.astype(str) if strata is None else np.char.add(np.char.add(src.astype(str), ":"), t.astype(str))
        ref = stratified_partial_spearman(x, y, controls, lab, n_boot=0, n_perm=0)
        assert r["rho"] == pytest.approx(ref.rho, abs=1e-10)
        assert r["n"] + r["n_unmatched"] == n and r["ci"][0] <= r["rho"] <= r["ci"][1]


def test_length_alone_drives_pooled_and_partial_but_not_the_within_length_rho():
    # planted: the covariate grows with length, the norm falls with length along a curve, nothing else
    rng = np.random.default_rng(11)
    n = 2000
    t = rng.integers(4, 30, n)
    cov = t + rng.normal(0, 3, n)
    norm = 6.0 - 0.002 * (t - 4) ** 2.5 / 10 - 0.5 * np.log(t) + rng.normal(0, 0.05, n)
    pooled = spearmanr(cov, norm).statistic
    assert pooled < -0.5
    r = within_length_spearman(cov, norm, t, n_boot=400, n_perm=400, seed=0)
    assert r["ci"][0] < 0 < r["ci"][1] and r["p_value"] > 0.01
    share = matched_concordance(cov, norm, length_matched_within(t, seed=0))
    assert share["ci"][0] < 0.5 < share["ci"][1]
    # a real within-length effect survives
    r2 = within_length_spearman(cov, norm + 0.02 * (cov - t), t, n_boot=200, n_perm=200, seed=0)
    assert r2["ci"][0] > 0.2


PHRASES = ["dog", "cat", "house", "car", "tree", "idea", "truth", "justice", "water", "music", "table", "freedom",
           "apple", "river", "mountain", "theory", "chair", "hope", "window", "science", "red car", "old house",
           "tall tree", "cold water", "loud music", "small table", "green apple", "wide river", "high mountain",
           "new theory", "wooden chair", "open window", "the old dog", "a black cat", "the big house",
           "a fast red car", "the cold river water", "a small wooden table", "the music of the night", "pure hope"]


def test_correlate_reports_the_length_matched_figure_and_the_row_follows_it(bundled_encoder):
    from _correlate import correlate

    from normscope.signals.claims import signal_claims

    res = correlate("frequency", encoder=bundled_encoder, items=PHRASES, n_boot=200, n_perm=200, seed=3)
    d, df = res.to_dict(), res.items
    lm = d["length_matched"]
    ok = np.isfinite(df["covariate"].to_numpy())
    t = df["tokens"].to_numpy()[ok]
    cov, norm = df["covariate"].to_numpy()[ok], df["norm"].to_numpy()[ok]
    counts = {c: int((t == c).sum()) for c in set(t.tolist())}
    matched = np.array([counts[c] >= 2 for c in t])
    assert lm["n"] == matched.sum() and lm["n_unmatched"] == (~matched).sum()
    assert lm["controls"] == [] and lm["length"].startswith("tokens")  # length is matched, not partialled
    ref = stratified_partial_spearman(cov[matched], norm[matched], None, t[matched].astype(str), n_boot=0, n_perm=0)
    assert lm["rho"] == pytest.approx(ref.rho, abs=1e-9)
    pairs = lm["pairs"]
    assert pairs["n_pairs"] == sum(v // 2 for v in counts.values())
    row = next(r for r in signal_claims({"frequency": d}, {}) if r["key"] == "frequency")
    assert row["measured"] == pytest.approx(lm["rho"]) and row["ci"] == pytest.approx(lm["ci"])
    assert row["label"].startswith("length-matched Spearman") and "pooled Spearman" in row["beside"]
    assert f"{d['spearman']:+.3g}" in row["beside"]
