"""The length matcher of issue 39 (normscope.stats_designs.length_matched_pairs / matched_comparison): pairs only
equal token counts, counts what it cannot match, and removes an effect that length alone drives."""

from __future__ import annotations

import numpy as np
import pytest

from normscope.errors import InputError
from normscope.stats_designs import length_matched_pairs, matched_comparison, wilson_interval


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
