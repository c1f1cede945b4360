"""Length-matched designs (part of :mod:`normscope.stats_designs`): pairs and strata at equal token count.

- :func:`length_matched_pairs` / :func:`matched_comparison`: two groups paired at equal token count;
- :func:`length_matched_within` / :func:`matched_concordance`: disjoint equal-length pairs of one set;
- :func:`within_length_spearman`: the partial Spearman rho within strata of equal token count, its CI
  resampling items within strata or, with ``clusters``, whole clusters (e.g. hierarchies);
- :func:`wilson_interval`, :func:`sign_test_p`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as _sps

from normscope.errors import InputError
from normscope.stats import _as_controls, _check_levels, _interval, _perm_p

__all__ = ["wilson_interval", "sign_test_p", "MatchedPairs", "length_matched_pairs", "matched_comparison",
           "length_matched_within", "matched_concordance", "within_length_spearman", "cluster_codes",
           "cluster_resamples", "cluster_bootstrap_ci"]


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion ``k / n`` (no continuity correction).

    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``p = k/n`` and ``z`` the
    ``(1 + level)/2`` normal quantile (Wilson 1927, J. Am. Stat. Assoc. 22:209; Brown, Cai & DasGupta
    2001, Stat. Sci. 16:101), computed by ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.

    Raises
    ------
    InputError
        ``n < 1`` or ``k`` outside ``[0, n]``.
    """
    if n < 1 or not 0 <= k <= n:
        raise InputError(f"Wilson interval needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = _sps.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def sign_test_p(k: int, n: int) -> float:
    """Two-sided exact sign test: the binomial p of ``k`` successes in ``n`` untied pairs under p = 1/2."""
    return float(_sps.binomtest(int(k), int(n), 0.5, alternative="two-sided").pvalue)


@dataclass(frozen=True)
class MatchedPairs:
    """Items of two groups paired at equal token count (:func:`length_matched_pairs`).

    Attributes
    ----------
    a, b : ndarray of shape (n_pairs,), int64
        Positions in group A and group B of each pair; ``tokens_a[a] == tokens_b[b]`` for every pair.
    n_unmatched_a, n_unmatched_b : int
        Items of each group left without a partner of the same token count.
    per_count : dict of int -> (int, int, int)
        Per token count: (items of A, items of B, pairs).
    """

    a: np.ndarray
    b: np.ndarray
    n_unmatched_a: int
    n_unmatched_b: int
    per_count: dict


def _stable_key(item_id) -> int:
    import hashlib

    return int.from_bytes(hashlib.sha256(str(item_id).encode("utf-8")).digest()[:8], "little")


def length_matched_pairs(tokens_a, tokens_b, *, ids_a=None, ids_b=None, seed: int = 0) -> MatchedPairs:
    """Pair items of group A with items of group B of exactly the same token count.

    At each token count ``t`` with ``n_A(t)`` and ``n_B(t)`` items, ``min(n_A(t), n_B(t))`` pairs are
    formed: each group's items at ``t`` are ordered by a seeded key of their id (not by position, so
    permuting the input permutes the pairs and changes nothing else) and paired in that order; the
    rest are counted as unmatched. Token counts should be those the model saw (after its tokenizer
    and truncation: ``EmbeddingTable.tokens``); say so beside the result.

    Parameters
    ----------
    tokens_a, tokens_b : array_like of int, shapes (n_a,), (n_b,)
    ids_a, ids_b : sequence of str, optional
        Unique ids of each group (default ``"0".."n-1"``).
    seed : int

    Returns
    -------
    MatchedPairs

    Raises
    ------
    InputError
        Token counts that are not finite integers, ids of the wrong length or not unique.
    """
    out = []
    for name, tok, ids in (("a", tokens_a, ids_a), ("b", tokens_b, ids_b)):
        t = np.asarray(tok, dtype=np.float64).ravel()
        if not np.isfinite(t).all() or (t != np.round(t)).any():
            raise InputError(f"tokens_{name} must be finite integer token counts")
        ids = [str(i) for i in range(t.size)] if ids is None else [str(i) for i in ids]
        if len(ids) != t.size or len(set(ids)) != len(ids):
            raise InputError(f"ids_{name} must be {t.size} unique ids, got {len(ids)} ({len(set(ids))} distinct)")
        out.append((t.astype(np.int64), ids))
    (ta, ia), (tb, ib) = out
    pa, pb, per = [], [], {}
    for t in sorted(set(ta.tolist()) | set(tb.tolist())):
        rng = np.random.default_rng([int(seed), int(t) & 0xFFFFFFFF])
        salt = int(rng.integers(0, 2 ** 62))
        ma = sorted(np.flatnonzero(ta == t).tolist(), key=lambda k: (_stable_key(f"{salt}:{ia[k]}"), ia[k]))
        mb = sorted(np.flatnonzero(tb == t).tolist(), key=lambda k: (_stable_key(f"{salt}:{ib[k]}"), ib[k]))
        m = min(len(ma), len(mb))
        pa += ma[:m]
        pb += mb[:m]
        per[int(t)] = (len(ma), len(mb), m)
    n_pairs = len(pa)
    return MatchedPairs(a=np.asarray(pa, dtype=np.int64), b=np.asarray(pb, dtype=np.int64),
                        n_unmatched_a=int(ta.size - n_pairs), n_unmatched_b=int(tb.size - n_pairs), per_count=per)


def matched_comparison(values_a, values_b, pairs: MatchedPairs, *, level: float = 0.95) -> dict:
    """Does group B have the larger value? Pooled over all items, and within length-matched pairs.

    Parameters
    ----------
    values_a, values_b : array_like of float, shapes (n_a,), (n_b,)
        E.g. raw norms of each group.
    pairs : MatchedPairs
        From :func:`length_matched_pairs` on the same two groups.
    level : float

    Returns
    -------
    dict
        ``pooled_share``: P(value_B > value_A) over every (A, B) combination, ties counted 1/2 (the
        AUROC, Mann-Whitney U / (n_a n_b); length is free to differ), with ``pooled_p`` (two-sided
        Mann-Whitney); ``matched_share``: the share of untied equal-length pairs where B is larger,
        with ``matched_ci`` (Wilson) and ``matched_p`` (two-sided sign test); ``n_pairs``, ``n_ties``,
        ``n_unmatched_a``, ``n_unmatched_b``. Matched figures are None without an untied pair.
    """
    va = np.asarray(values_a, dtype=np.float64).ravel()
    vb = np.asarray(values_b, dtype=np.float64).ravel()
    if not (np.isfinite(va).all() and np.isfinite(vb).all()) or va.size == 0 or vb.size == 0:
        raise InputError("values_a and values_b must be non-empty and finite")
    u = _sps.mannwhitneyu(vb, va, alternative="two-sided")
    d = vb[pairs.b] - va[pairs.a]
    k, m = int((d > 0).sum()), int((d < 0).sum())
    out = {"pooled_share": float(u.statistic) / (va.size * vb.size), "pooled_p": float(u.pvalue),
           "n_pairs": int(d.size), "n_ties": int((d == 0).sum()), "n_unmatched_a": pairs.n_unmatched_a,
           "n_unmatched_b": pairs.n_unmatched_b, "matched_share": None, "matched_ci": None, "matched_p": None,
           "ci_level": level}
    if k + m:
        out.update(matched_share=k / (k + m), matched_ci=list(wilson_interval(k, k + m, level)),
                   matched_p=sign_test_p(k, k + m))
    return out


def length_matched_within(tokens, ids=None, *, seed: int = 0) -> MatchedPairs:
    """Disjoint pairs of items of **one** set at exactly equal token count (for a continuous covariate).

    At each token count the items are ordered by a seeded key of their id (as in
    :func:`length_matched_pairs`) and paired in that order, first with second, third with fourth, ...;
    an odd item out and an item alone at its count stay unmatched.

    Parameters
    ----------
    tokens : array_like of int, shape (n,)
        Token counts the model saw (``EmbeddingTable.tokens``: after truncation, special tokens included).
    ids : sequence of str, optional
        Unique ids (default ``"0".."n-1"``).
    seed : int

    Returns
    -------
    MatchedPairs
        ``a``, ``b``: positions in the one set; ``n_unmatched_a``: items without a partner
        (``n_unmatched_b`` is 0); ``per_count``: per token count (items, items, pairs).

    Raises
    ------
    InputError
        Token counts that are not finite integers; ids of the wrong length or not unique.
    """
    t = np.asarray(tokens, dtype=np.float64).ravel()
    if not np.isfinite(t).all() or (t != np.round(t)).any():
        raise InputError("tokens must be finite integer token counts")
    ids = [str(i) for i in range(t.size)] if ids is None else [str(i) for i in ids]
    if len(ids) != t.size or len(set(ids)) != len(ids):
        raise InputError(f"ids must be {t.size} unique ids, got {len(ids)} ({len(set(ids))} distinct)")
    ti = t.astype(np.int64)
    pa, pb, per = [], [], {}
    for c in sorted(set(ti.tolist())):
        rng = np.random.default_rng([int(seed), int(c) & 0xFFFFFFFF, 1])
        salt = int(rng.integers(0, 2 ** 62))
        m = sorted(np.flatnonzero(ti == c).tolist(), key=lambda k: (_stable_key(f"{salt}:{ids[k]}"), ids[k]))
        half = len(m) // 2
        pa += m[0:2 * half:2]
        pb += m[1:2 * half:2]
        per[int(c)] = (len(m), len(m), half)
    return MatchedPairs(a=np.asarray(pa, dtype=np.int64), b=np.asarray(pb, dtype=np.int64),
                        n_unmatched_a=int(t.size - 2 * len(pa)), n_unmatched_b=0, per_count=per)


def matched_concordance(x, y, pairs: MatchedPairs, *, level: float = 0.95) -> dict:
    """Within equal-length pairs: does the item with the larger ``x`` have the larger ``y``?

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        E.g. a covariate (specificity depth, label entropy) and the raw norm, of the set paired by
        :func:`length_matched_within`. Pairs with a NaN are dropped (counted in ``n_missing``).
    pairs : MatchedPairs
    level : float

    Returns
    -------
    dict
        ``share``: concordant / (concordant + discordant) over pairs untied in both x and y, with
        ``ci`` (Wilson) and ``p`` (two-sided exact sign test); ``r_rb`` = 2 share - 1 (the matched-pairs
        rank-biserial correlation, Kerby 2014; a Kendall-type concordance, not a Spearman rho) with
        ``r_rb_ci`` from the Wilson bounds; ``n_pairs``, ``n_concordant``, ``n_discordant``,
        ``n_tied_x`` (same covariate: no information), ``n_tied_y``, ``n_missing``,
        ``n_unmatched``. Share figures are None without an untied pair.
    """
    xv = np.asarray(x, dtype=np.float64).ravel()
    yv = np.asarray(y, dtype=np.float64).ravel()
    if xv.shape != yv.shape:
        raise InputError(f"x and y differ in length: {xv.size} vs {yv.size}")
    dx, dy = xv[pairs.b] - xv[pairs.a], yv[pairs.b] - yv[pairs.a]
    ok = np.isfinite(dx) & np.isfinite(dy)
    dx, dy = dx[ok], dy[ok]
    tx, ty = dx == 0, (dy == 0) & (dx != 0)
    s = np.sign(dx) * np.sign(dy)
    k, m = int((s > 0).sum()), int((s < 0).sum())
    out = {"n_pairs": int(ok.sum()), "n_concordant": k, "n_discordant": m, "n_tied_x": int(tx.sum()),
           "n_tied_y": int(ty.sum()), "n_missing": int((~ok).sum()), "n_unmatched": pairs.n_unmatched_a,
           "share": None, "ci": None, "p": None, "r_rb": None, "r_rb_ci": None, "ci_level": level}
    if k + m:
        lo, hi = wilson_interval(k, k + m, level)
        out.update(share=k / (k + m), ci=[lo, hi], p=sign_test_p(k, k + m), r_rb=(k - m) / (k + m),
                   r_rb_ci=[2 * lo - 1, 2 * hi - 1])
    return out


def _within_demean(v: np.ndarray, codes: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Columns of ``v`` (n,) or (n, k) minus their stratum means (the stratum indicators regressed out)."""
    if v.ndim == 1:
        with np.errstate(divide="ignore", invalid="ignore"):  # a stratum not drawn in a cluster resample: unused
            return v - (np.bincount(codes, weights=v, minlength=counts.size) / counts)[codes]
    return np.column_stack([_within_demean(v[:, j], codes, counts) for j in range(v.shape[1])]) if v.shape[1] \
        else v


def _fwl_rho(rx, ry, rz, codes, counts) -> float:
    """Pearson of rank residuals after the stratum indicators and the control ranks (Frisch-Waugh-Lovell)."""
    ex, ey = _within_demean(rx, codes, counts), _within_demean(ry, codes, counts)
    if rz.shape[1]:
        ez = _within_demean(rz, codes, counts)
        beta = np.linalg.lstsq(ez, np.column_stack([ex, ey]), rcond=None)[0]
        res = np.column_stack([ex, ey]) - ez @ beta
        ex, ey = res[:, 0], res[:, 1]
    sx, sy = np.sqrt(ex @ ex), np.sqrt(ey @ ey)
    return float(ex @ ey / (sx * sy)) if sx > 0 and sy > 0 else float("nan")


def cluster_codes(clusters, n: int) -> np.ndarray:
    """Integer codes (n,) of cluster labels in sorted label order (so the codes do not depend on the row order).

    Raises
    ------
    InputError
        A label count other than ``n``, or a missing label (None/NaN).
    """
    c = np.asarray(clusters, dtype=object).ravel()
    if c.size != n:
        raise InputError(f"clusters has {c.size} labels for {n} rows")
    if any(v is None or (isinstance(v, float) and v != v) for v in c):
        raise InputError("clusters holds missing labels (None/NaN); give every row a cluster")
    return np.unique(c.astype(str), return_inverse=True)[1].astype(np.intp)


def cluster_resamples(codes: np.ndarray, n_boot: int, rng: np.random.Generator):
    """Yield ``n_boot`` row-index arrays of a cluster (block) bootstrap.

    Each resample draws as many clusters as there are, with replacement, uniformly, and takes every row of
    each drawn cluster (a cluster drawn twice contributes its rows twice); resample sizes vary with the
    clusters' sizes. Clusters are in sorted code order, so the draws do not depend on the row order (Davison &
    Hinkley 1997, Bootstrap Methods and their Application, sec. 3.8: resampling the independent units).
    """
    order = np.argsort(codes, kind="stable")
    size = np.bincount(codes)
    start = np.concatenate([[0], np.cumsum(size[:-1])])
    for _ in range(n_boot):
        drawn = rng.integers(0, size.size, size=size.size)
        yield order[np.concatenate([np.arange(start[k], start[k] + size[k]) for k in drawn])]


def cluster_bootstrap_ci(stat, clusters, *, n_boot: int = 2000, ci: float = 0.95, seed: int | None = 0):
    """Percentile CI of ``stat(rows)`` over a cluster bootstrap (:func:`cluster_resamples`).

    Parameters
    ----------
    stat : callable
        ``stat(idx) -> float`` on the rows ``idx`` (int array, repeats allowed); non-finite values are dropped.
    clusters : array_like, shape (n,)
        The independent unit of each row (e.g. the hierarchy a text belongs to).
    n_boot, ci, seed

    Returns
    -------
    list of float or None
        ``[lo, hi]``; None when no resample gave a finite value or ``n_boot`` is 0.
    """
    codes = np.asarray(clusters)
    codes = codes if codes.dtype.kind in "iu" else cluster_codes(clusters, codes.size)
    boot = np.array([stat(ii) for ii in cluster_resamples(codes, n_boot, np.random.default_rng(seed))])
    boot = boot[np.isfinite(boot)] if boot.size else boot
    return list(_interval(boot, ci)) if boot.size else None


def within_length_spearman(x, y, tokens, controls=None, *, strata=None, n_boot: int = 2000, n_perm: int = 2000,
                           ci: float = 0.95, seed: int | None = 0, min_n: int = 10,
                           control_names: list[str] | tuple[str, ...] | None = None, clusters=None) -> dict:
    """Partial Spearman rho of x and y **within strata of equal token count** (the length-matched design).

    Each item is compared only with items of its own token count (and its own source, with
    ``strata``): pooled ranks of x, y and the controls are centred within each (source, token count)
    stratum and the control ranks regressed out (Frisch-Waugh-Lovell: the same rho as
    :func:`stratified_partial_spearman` with one indicator per stratum, at O(n) per resample).
    Unlike a partial correlation on length, no shape of the length effect is assumed: a nonlinear
    effect of length cannot leak through. Items alone at their count carry no information and are
    counted as ``n_unmatched``.

    Parameters
    ----------
    x, y : array_like of float, shape (n,)
        Covariate and raw norm (NaN rows dropped).
    tokens : array_like of int, shape (n,)
        Token counts the model saw (or words for a model without a tokenizer; say which).
    controls : array_like, shape (n,) or (n, k), optional
        Further controls (e.g. Zipf frequency); not length.
    strata : array_like, shape (n,), optional
        A source label; strata are then (source, token count).
    n_boot, n_perm, ci, seed
        Percentile bootstrap resampling items **within strata** (sizes fixed) and a permutation p
        (the residualised y permuted within strata, two-sided on |rho|, ``(1 + count)/(1 + n_perm)``).
    clusters : array_like, shape (n,), optional
        The independent unit of each item when items are not independent (e.g. the hierarchy a text belongs
        to, whose texts share a chain): the bootstrap then resamples whole clusters with replacement
        (:func:`cluster_resamples`; each stratum should lie inside one cluster) instead of items within
        strata. The permutation p stays within strata (exchangeability within a stratum under the null).
    min_n : int
        Fewest matched items (in strata of two or more) for a figure.
    control_names : sequence of str, optional

    Returns
    -------
    dict
        ``rho``, ``ci`` ([lo, hi]), ``p_value``, ``n`` (matched items), ``n_unmatched``, ``n_strata``
        (strata of two or more items), ``n_dropped`` (NaN), ``controls``, ``ci_level``, ``ci_method``,
        ``p_method``, ``n_boot``, ``n_perm`` (and ``ci_unit`` ``"clusters"`` with ``clusters``); ``rho`` None
        (with ``reason``) below ``min_n`` matched items
        or when x or y is constant within every stratum.

    Raises
    ------
    InputError
        Arrays of different lengths; token counts that are not finite integers.
    """
    _check_levels(ci, n_boot, n_perm)
    x = np.asarray(x, dtype=np.float64).ravel()
    y = np.asarray(y, dtype=np.float64).ravel()
    t = np.asarray(tokens, dtype=np.float64).ravel()
    if not (x.size == y.size == t.size):
        raise InputError(f"x, y and tokens differ in length: {x.size}, {y.size}, {t.size}")
    if not np.isfinite(t).all() or (t != np.round(t)).any():
        raise InputError("tokens must be finite integer token counts")
    z = np.zeros((x.size, 0)) if controls is None else _as_controls(controls, x.size)
    names = list(control_names) if control_names is not None else [f"control_{j}" for j in range(z.shape[1])]
    src = np.zeros(x.size, dtype=object) if strata is None else np.asarray(strata, dtype=object).ravel()
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z).all(axis=1)
    labels = np.asarray([f"{s}\x00{int(c)}" for s, c in zip(src[ok], t[ok])], dtype=object)
    _, codes0 = np.unique(labels.astype(str), return_inverse=True) if labels.size else (None, np.zeros(0, int))
    counts0 = np.bincount(codes0) if codes0.size else np.zeros(0, int)
    keep = counts0[codes0] >= 2 if codes0.size else np.zeros(0, bool)
    out = {"rho": None, "ci": None, "p_value": None, "n": int(keep.sum()), "n_unmatched": int((~keep).sum()),
           "n_strata": int((counts0 >= 2).sum()), "n_dropped": int((~ok).sum()), "controls": names,
           "ci_level": ci, "n_boot": n_boot, "n_perm": n_perm, "reason": None,
           "ci_method": ("percentile bootstrap, items resampled with replacement within each stratum of equal token "
                         "count" + (" and source" if strata is not None else "")) if clusters is None else
                        "percentile cluster bootstrap, whole clusters resampled with replacement with all their items",
           "p_method": "permutation of rank(y) residuals within each stratum, two-sided on |rho|"}
    xs, ys, zs = x[ok][keep], y[ok][keep], z[ok][keep]
    cl = None if clusters is None else cluster_codes(clusters, x.size)[ok][keep]
    if cl is not None:
        out["ci_unit"] = "clusters"
    _, codes = np.unique(codes0[keep], return_inverse=True)
    codes = codes.astype(np.intp)
    counts = np.bincount(codes).astype(np.float64)
    n = xs.size
    if n < max(min_n, 3):
        out["reason"] = f"{n} items share a token count with another item (need {max(min_n, 3)})"
        return out
    rx, ry, rz = _sps.rankdata(xs), _sps.rankdata(ys), _sps.rankdata(zs, axis=0) if zs.shape[1] else zs
    rho = _fwl_rho(rx, ry, rz, codes, counts)
    if not np.isfinite(rho):
        out["reason"] = "x or y is constant within every stratum of equal token count"
        return out
    order = np.argsort(codes, kind="stable")
    start = np.concatenate([[0], np.cumsum(counts[:-1])]).astype(np.intp)
    size = counts.astype(np.intp)
    rng_b, rng_p = np.random.default_rng(seed).spawn(2)
    boot = np.empty(n_boot)
    draws = cluster_resamples(np.unique(cl, return_inverse=True)[1], n_boot, rng_b) if cl is not None else None
    for b in range(n_boot):
        if draws is None:
            ii = order[start[codes] + (rng_b.random(n) * size[codes]).astype(np.intp)]
        else:
            ii = next(draws)
        bc = codes[ii]
        bz = _sps.rankdata(zs[ii], axis=0) if zs.shape[1] else zs[ii]
        boot[b] = _fwl_rho(_sps.rankdata(xs[ii]), _sps.rankdata(ys[ii]), bz, bc,
                           np.bincount(bc, minlength=counts.size).astype(np.float64))
    boot = boot[np.isfinite(boot)]
    ex = _within_demean(rx, codes, counts)
    ey = _within_demean(ry, codes, counts)
    if rz.shape[1]:
        ez = _within_demean(rz, codes, counts)
        ex = ex - ez @ np.linalg.lstsq(ez, ex, rcond=None)[0]
        ey = ey - ez @ np.linalg.lstsq(ez, ey, rcond=None)[0]
    null = np.empty(n_perm)
    for b in range(n_perm):
        perm = np.empty(n, dtype=np.intp)
        perm[order] = order[np.lexsort((rng_p.random(n), codes[order]))]
        null[b] = _fwl_rho(ex, ey[perm], rz, codes, counts)
    out.update(rho=rho, ci=list(_interval(boot, ci)) if boot.size else None,
               p_value=_perm_p(null, rho, False) if n_perm else None)
    return out
