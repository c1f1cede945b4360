"""Does a signal add to the others? Cross-fitted models with and without it, and the paired CI of the difference.

The design (docs/retrieval.md, "Incremental value"):

1. **Folds fixed first.** ``fold_draws`` partitions of the queries (in the order given, which the
   callers fix as query-id order) into ``folds`` folds are drawn from ``seed`` before anything is
   fitted; both models use the same partitions.
2. **Cross-fitting.** For each partition, each fold's predictions come from a model fitted on the other
   folds: for "the top-1 is relevant" a logistic regression (scikit-learn ``LogisticRegression``, C = 1,
   on standardised features), for per-query nDCG@10 a linear regression (``LinearRegression`` on
   standardised features). One model uses the ``baseline`` signals, the other ``baseline + added``.
3. **Statistic.** AUROC of the out-of-fold probabilities (top-1 task) or Kendall tau-b between the
   out-of-fold predictions and nDCG@10 (nDCG task), with and without ``added``; the point value is the
   mean over the partitions, ``diff = with - without``.
4. **Paired CI over queries and fold draws.** Each bootstrap resample draws the queries with
   replacement and one of the partitions at random, and recomputes both statistics on the same
   queries and the same partition's predictions; the percentile interval of the differences is the CI.
   It resamples queries and the fold draw; the fitted models are held fixed within a partition (the CI
   does not refit on each resample).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope._format import noun
from normscope.errors import InputError

__all__ = ["draw_folds", "cross_fit", "incremental_value", "FOLDS", "FOLD_DRAWS"]

FOLDS = 5
FOLD_DRAWS = 20


def draw_folds(n: int, *, folds: int = FOLDS, draws: int = FOLD_DRAWS, seed: int = 0) -> list[list[np.ndarray]]:
    """``draws`` seeded partitions of ``range(n)`` into ``folds`` folds of near-equal size.

    Parameters
    ----------
    n : int
        Number of items (queries), in the caller's fixed order.
    folds, draws, seed : int

    Returns
    -------
    list (length draws) of list (length folds) of sorted int arrays

    Raises
    ------
    InputError
        Fewer than 2 items per fold.
    """
    if folds < 2 or n < 2 * folds:
        raise InputError(f"{folds}-fold cross-fitting needs at least {2 * folds} queries, got {n}")
    rng = np.random.default_rng(seed)
    return [[np.sort(f) for f in np.array_split(rng.permutation(n), folds)] for _ in range(draws)]


def _model(task: str):
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if task == "top1_relevant":
        return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=1000))
    return make_pipeline(StandardScaler(), LinearRegression())


def cross_fit(X, y, partition: Sequence[np.ndarray], task: str) -> np.ndarray:
    """Out-of-fold predictions of one partition.

    Parameters
    ----------
    X : ndarray of shape (n, p), float64
    y : ndarray of shape (n,)
        0/1 (``task='top1_relevant'``) or real (``task='ndcg@10'``).
    partition : sequence of int arrays
        The folds (positions in X).
    task : {'top1_relevant', 'ndcg@10'}

    Returns
    -------
    ndarray of shape (n,)
        P(relevant) (logistic regression) or the predicted nDCG@10 (linear regression) of each item, from
        the model fitted without its fold.

    Raises
    ------
    InputError
        A training part with one class only (top-1 task).
    """
    pred = np.full(len(y), np.nan)
    for f in partition:
        tr = np.setdiff1d(np.arange(len(y)), f)
        if task == "top1_relevant" and len(np.unique(y[tr])) < 2:
            raise InputError("a cross-fitting training part has top-1 results of one class only")
        m = _model(task).fit(X[tr], y[tr])
        pred[f] = m.predict_proba(X[f])[:, 1] if task == "top1_relevant" else m.predict(X[f])
    return pred


def _auroc_rows(P: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """AUROC of each row of P for the labels of the same row of Y (Mann-Whitney with average ranks); NaN
    for a row with one class."""
    from scipy.stats import rankdata

    n1 = Y.sum(axis=1)
    n0 = Y.shape[1] - n1
    r = rankdata(P, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n1 > 0) & (n0 > 0), ((r * Y).sum(axis=1) - n1 * (n1 + 1) / 2) / (n1 * n0), np.nan)


def _kendall(p: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(p, y).statistic)


def incremental_value(
    features,
    *,
    baseline: Sequence[str],
    added: Sequence[str],
    top1_relevant=None,
    ndcg=None,
    folds: int = FOLDS,
    fold_draws: int = FOLD_DRAWS,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """Cross-fitted value of ``added`` over ``baseline`` for "the top-1 is relevant" and for nDCG@10.

    Parameters
    ----------
    features : pandas.DataFrame
        One row per query (the fixed order: the callers sort by query id), a float column per signal
        (:func:`normscope.retrieval.qpp.qpp_signals`).
    baseline, added : sequence of str
        Columns of the model without and the columns added to it; disjoint, non-empty.
    top1_relevant : array-like of shape (n,), 0/1, optional
        Label of the top-1 task (the result's top-level fields).
    ndcg : array-like of shape (n,), optional
        Per-query nDCG@10 (the ``ndcg@10`` block, Kendall tau-b).
    folds, fold_draws : int
        Folds per partition and partitions drawn (:func:`draw_folds`).
    n_boot, seed : int
        Paired bootstrap resamples (queries and the fold draw) and the seed of the partitions and resamples.
    level : float

    Returns
    -------
    dict
        For the top-1 task: ``task`` ("top1_relevant"), ``model``, ``baseline``, ``added``, ``auroc_without``,
        ``auroc_with``, ``diff``, ``ci``, ``resamples`` ("queries"), ``ci_covers``, ``folds``, ``fold_draws``,
        ``diff_range_over_draws``, ``n_queries``, ``seed``, ``n_boot``, ``status``; and ``"ndcg@10"``: the same
        with ``tau_without``, ``tau_with`` (Kendall tau-b between out-of-fold predictions and nDCG@10).

    Raises
    ------
    InputError
        Unknown or overlapping columns, non-finite features, neither task given, too few queries.
    """
    baseline, added = list(baseline), list(added)
    if not baseline or not added:
        raise InputError("baseline and added signals must both be non-empty")
    if set(baseline) & set(added):
        raise InputError(f"signals both in baseline and added: {', '.join(sorted(set(baseline) & set(added)))}")
    missing = [c for c in baseline + added if c not in features.columns]
    if missing:
        raise InputError(f"unknown signal {noun(len(missing), 'column')}: {', '.join(missing)}")
    if top1_relevant is None and ndcg is None:
        raise InputError("give top1_relevant, ndcg or both")
    X1 = features[baseline].to_numpy(np.float64)
    X2 = features[baseline + added].to_numpy(np.float64)
    if not np.isfinite(X2).all():
        bad = [c for c in baseline + added if not np.isfinite(features[c].to_numpy(np.float64)).all()]
        raise InputError(f"non-finite values in {noun(len(bad), 'signal')} {', '.join(bad)}")
    n = len(features)
    parts = draw_folds(n, folds=folds, draws=fold_draws, seed=seed)
    rng = np.random.default_rng([seed, 25])
    idx = rng.integers(0, n, size=(n_boot, n))
    which = rng.integers(0, fold_draws, size=n_boot)
    a = (1 - level) / 2
    common = {"baseline": baseline, "added": added, "resamples": "queries",
              "ci_covers": "queries (paired bootstrap, with replacement) and the fold draw (each resample takes one of "
                           "the fold_draws partitions at random); models are held fixed within a partition",
              "folds": int(folds), "fold_draws": int(fold_draws), "n_queries": int(n), "seed": int(seed),
              "n_boot": int(n_boot)}
    out: dict = {}
    if top1_relevant is not None:
        y = np.asarray(top1_relevant).ravel().astype(np.int64)
        if y.shape != (n,) or not np.isin(y, (0, 1)).all():
            raise InputError(f"top1_relevant must be {n} values of 0/1")
        entry = {"task": "top1_relevant", "model": "logistic regression (C = 1, standardised features), cross-fitted",
                 **common}
        if len(np.unique(y)) < 2:
            entry.update(status="not computed", reason="every top-1 is of one class", auroc_without=None, auroc_with=None,
                         diff=None, ci=None)
        else:
            P1 = np.array([cross_fit(X1, y, p, "top1_relevant") for p in parts])
            P2 = np.array([cross_fit(X2, y, p, "top1_relevant") for p in parts])
            Y = np.broadcast_to(y, P1.shape)
            a1, a2 = _auroc_rows(P1, Y), _auroc_rows(P2, Y)
            b1 = _auroc_rows(P1[which[:, None], idx], y[idx])
            b2 = _auroc_rows(P2[which[:, None], idx], y[idx])
            d = (b2 - b1)[np.isfinite(b2 - b1)]
            entry.update(status="ok", reason=None, auroc_without=float(a1.mean()), auroc_with=float(a2.mean()),
                         diff=float((a2 - a1).mean()),
                         ci=[float(np.quantile(d, a)), float(np.quantile(d, 1 - a))] if len(d) >= 0.9 * n_boot else None,
                         diff_range_over_draws=[float((a2 - a1).min()), float((a2 - a1).max())])
        out.update(entry)
    if ndcg is not None:
        g = np.asarray(ndcg, dtype=np.float64).ravel()
        if g.shape != (n,) or not np.isfinite(g).all():
            raise InputError(f"ndcg must be {n} finite values")
        entry = {"task": "ndcg@10", "model": "linear regression (standardised features), cross-fitted; Kendall tau-b "
                 "between out-of-fold predictions and nDCG@10", **common}
        P1 = np.array([cross_fit(X1, g, p, "ndcg@10") for p in parts])
        P2 = np.array([cross_fit(X2, g, p, "ndcg@10") for p in parts])
        t1 = np.array([_kendall(p, g) for p in P1])
        t2 = np.array([_kendall(p, g) for p in P2])
        d = np.array([_kendall(P2[w, i], g[i]) - _kendall(P1[w, i], g[i]) for w, i in zip(which, idx)])
        d = d[np.isfinite(d)]
        entry.update(status="ok", reason=None, tau_without=float(t1.mean()), tau_with=float(t2.mean()),
                     diff=float((t2 - t1).mean()),
                     ci=[float(np.quantile(d, a)), float(np.quantile(d, 1 - a))] if len(d) >= 0.9 * n_boot else None,
                     diff_range_over_draws=[float((t2 - t1).min()), float((t2 - t1).max())])
        if top1_relevant is None:
            out.update(entry)
        else:
            out["ndcg@10"] = entry
    return out
