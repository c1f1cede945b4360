"""Where the paper says the gain lies: per-query deltas to cosine in pre-specified strata, Holm-corrected.

The paper reports its 1.2-2.3 % gain of ``cos / (1 + alpha ||z||)`` "on high-frequency words and
low-quality samples", not overall. This module tests that statement as stated, with strata fixed in
code before any result is seen (:data:`STRATIFIERS`):

- ``query_norm``: quartiles of the raw query norm ``||q||``;
- ``query_zipf``: quartiles of the query's mean word Zipf frequency (wordfreq, via
  :func:`normscope.lexicons.zipf_frequency`; a query with no word known to wordfreq is
  left out of this stratifier and counted; with fewer than 8 such queries the stratifier is
  reported as not computed and the family is the remaining strata);
- ``top_doc_norm``: quartiles of the norm of the cosine run's top-1 document (the same for every
  scorer, so the strata do not depend on the scorer under test).

Quartile edges are the 25/50/75 % quantiles (numpy's linear rule) of the stratifier over the
evaluated queries; a value equal to an edge goes to the lower quartile. They depend on the
stratifier alone, never on the deltas.

In each stratum: the mean per-query delta of nDCG@10 (scorer minus cosine) with a paired
percentile bootstrap CI over the stratum's queries, the relative delta ``mean(scorer) /
mean(cosine) - 1`` with its CI (the paper's "%" statistic), and the two-sided paired sign-flip
randomisation p-value; the 12 p-values of one scorer (3 stratifiers x 4 quartiles) are
Holm-corrected together (:func:`holm`; Holm, Scand. J. Statist. 1979).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope._format import noun
from normscope.lexicons import zipf_frequency

from normscope.errors import InputError
from normscope.retrieval.evaluate import paired_bootstrap_ci, paired_randomization_test

__all__ = ["STRATIFIERS", "holm", "quartiles", "query_zipf", "strata_study"]

#: The pre-specified stratifiers: key -> what it is.
STRATIFIERS: dict[str, str] = {
    "query_norm": "raw query norm ||q||",
    "query_zipf": "mean wordfreq Zipf frequency of the query's words",
    "top_doc_norm": "norm of the cosine run's top-1 document",
}


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control).

    ``p_adj[(i)] = max_{j <= i} min(1, (m - j + 1) p_(j))`` over the p-values sorted ascending.

    Parameters
    ----------
    p : array-like of shape (m,)
        p-values; NaN entries are left out of the family and stay NaN.

    Returns
    -------
    ndarray of shape (m,), float64, in the input order.
    """
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    adj = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(adj)
    return out


def quartiles(x) -> tuple[np.ndarray, list[float]]:
    """Quartile (1..4, 0 for a non-finite value) of each value, and the three edges.

    Edges: ``numpy.quantile(x[finite], [0.25, 0.5, 0.75])``; a value equal to an edge goes to the lower quartile.

    Raises
    ------
    InputError
        Fewer than 4 finite values.
    """
    x = np.asarray(x, dtype=np.float64)
    fin = np.isfinite(x)
    if fin.sum() < 4:
        raise InputError(f"quartiles need at least 4 finite values, got {int(fin.sum())}")
    edges = np.quantile(x[fin], [0.25, 0.5, 0.75])
    q = np.where(fin, np.searchsorted(edges, np.where(fin, x, 0.0), side="left") + 1, 0)
    return q.astype(np.int64), [float(e) for e in edges]


def query_zipf(texts: Sequence[str]) -> np.ndarray:
    """Mean wordfreq Zipf frequency of each text's words (NaN when wordfreq knows none of them)."""
    return zipf_frequency(list(texts))


def strata_study(
    per_query: Mapping[str, np.ndarray],
    covariates: Mapping[str, np.ndarray],
    *,
    baseline: str = "cosine",
    n_boot: int = 2000,
    n_permutations: int = 10000,
    seed: int = 0,
) -> dict:
    """Per-stratum paired deltas of every scorer to ``baseline`` (nDCG@10), Holm-corrected per scorer.

    Parameters
    ----------
    per_query : dict of {scorer: ndarray of shape (n,)}
        Per-query nDCG@10 of each scorer, aligned across scorers; must hold ``baseline``.
    covariates : dict of {stratifier: ndarray of shape (n,)}
        The values of :data:`STRATIFIERS` per query (NaN: left out of that stratifier).
    baseline : str, keyword-only
    n_boot, n_permutations, seed : int, keyword-only
        Of :func:`~normscope.retrieval.evaluate.paired_bootstrap_ci` (queries resampled within the
        stratum) and :func:`~normscope.retrieval.evaluate.paired_randomization_test`.

    Returns
    -------
    dict
        ``metric``, ``statistic``, ``correction``, ``stratifiers`` (``status``; edges, counts per quartile,
        ``n_left_out``; or ``reason`` when fewer than 8 queries have a value), ``scorers``: {scorer: list of rows ``stratifier, quartile, range, n,
        baseline_mean, scorer_mean, mean_delta, mean_delta_ci, relative, relative_ci, p, p_holm``}.

    Raises
    ------
    InputError
        ``baseline`` missing, arrays of different lengths, an unknown stratifier.
    """
    if baseline not in per_query:
        raise InputError(f"baseline '{baseline}' missing from the per-query scores")
    n = len(per_query[baseline])
    for name, arr in list(per_query.items()) + list(covariates.items()):
        if len(arr) != n:
            raise InputError(f"'{name}' has {len(arr)} values for {n} queries")
    unknown = set(covariates) - set(STRATIFIERS)
    if unknown:
        raise InputError(f"unknown {noun(len(unknown), 'stratifier')} {sorted(unknown)} (choose from {', '.join(STRATIFIERS)})")
    strat_info, groups = {}, {}
    for name, x in covariates.items():
        xs = np.asarray(x, dtype=np.float64)
        n_fin = int(np.isfinite(xs).sum())
        if n_fin < 8:  # fewer than 2 queries per quartile: this stratifier cannot be tested, the others still are
            strat_info[name] = {"what": STRATIFIERS[name], "status": "not computed",
                                "reason": f"{n_fin} queries have a value (at least 8 needed)", "n_left_out": n - n_fin}
            continue
        q, edges = quartiles(xs)
        groups[name] = q
        strat_info[name] = {"what": STRATIFIERS[name], "status": "ok", "edges": edges,
                            "range": [float(np.nanmin(xs)), float(np.nanmax(xs))],
                            "counts": [int((q == k).sum()) for k in range(1, 5)], "n_left_out": int((q == 0).sum())}
    base = np.asarray(per_query[baseline], dtype=np.float64)
    scorers: dict[str, list] = {}
    for scorer, vals in per_query.items():
        if scorer == baseline:
            continue
        x = np.asarray(vals, dtype=np.float64)
        rows = []
        for name, q in groups.items():
            e = [strat_info[name]["range"][0], *strat_info[name]["edges"], strat_info[name]["range"][1]]
            for k in range(1, 5):
                m = q == k
                row = {"stratifier": name, "quartile": k, "range": [e[k - 1], e[k]], "n": int(m.sum())}
                if m.sum() >= 2:
                    ci = paired_bootstrap_ci(x[m], base[m], n_boot=n_boot, seed=seed)
                    row.update(baseline_mean=float(base[m].mean()), scorer_mean=float(x[m].mean()),
                               mean_delta=ci["mean_diff"], mean_delta_ci=ci["mean_diff_ci"], relative=ci["relative"],
                               relative_ci=ci["relative_ci"],
                               p=paired_randomization_test(x[m], base[m], n_permutations=n_permutations, seed=seed))
                else:
                    row.update(baseline_mean=None, scorer_mean=None, mean_delta=None, mean_delta_ci=None, relative=None,
                               relative_ci=None, p=None)
                rows.append(row)
        adj = holm([np.nan if r["p"] is None else r["p"] for r in rows])
        for r, a in zip(rows, adj):
            r["p_holm"] = None if not np.isfinite(a) else float(a)
        scorers[scorer] = rows
    return {
        "metric": "ndcg@10",
        "statistic": ("per-query delta of nDCG@10 (scorer minus cosine): mean with a paired percentile bootstrap CI "
                      "over the stratum's queries; relative = mean(scorer) / mean(cosine) - 1 with its CI"),
        "test": "two-sided paired sign-flip randomisation test per stratum",
        "correction": f"Holm over the {4 * len(groups)} strata ({len(groups)} stratifiers x 4 quartiles) of each scorer",
        "stratifiers": strat_info,
        "scorers": scorers,
        "n_boot": int(n_boot),
        "seed": int(seed),
    }
