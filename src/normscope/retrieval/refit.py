"""Bootstrap CIs that refit the fitted parameter: ``alpha`` (or ``beta``) refitted on every resample.

A gain of ``cos/(1 + alpha||d||)`` over cosine has two sources of sampling: the evaluation queries
and the queries ``alpha`` was fitted on (a train split, or the other folds of a cross-validation,
whose split is itself drawn with the seed). A CI that resamples the evaluation queries with the
fitted ``alpha`` held fixed leaves the second out: when the fitted ``alpha`` moves no top-10 in a
stratum, the scorer *is* cosine there and the CI is ``[0, 0]``, although another draw of the fit
queries would fit another ``alpha`` that does move them.

:class:`RefitDesign` resamples both, without re-embedding or re-searching. Each query's nDCG@10
is computed once per value of the parameter grid (:func:`per_query_grid`: one exact search per grid
value), so refitting on a resample is an argmax over weighted column means:

- fit on a named split: draw ``b`` resamples the fit queries (counts ``V[b]``), refits
  ``alpha_b = argmax_g sum_i V[b, i] F[i, g]`` (ties: the value closest to the neutral one, as
  :func:`~normscope.retrieval.evaluate.fit_parameter`), and resamples the evaluation queries
  (counts ``W[b]``) jointly, scoring them with ``alpha_b``;
- cross-validation over the evaluation queries: draw ``b`` resamples the evaluation queries
  (``W[b]``) and **redraws the fold split** (each query's fold, so copies of one query share their
  fold); each fold's queries are scored with the ``alpha`` refitted on the weighted queries of the
  other folds. The CI then covers the fold-split variation that a fixed split (one ``--seed``)
  hides.

Statistics: the mean difference ``sum W x / sum W - sum W y / sum W`` (scorer minus cosine) and the
relative difference ``mean(x) / mean(y) - 1``, percentile intervals over the draws, as
:func:`~normscope.retrieval.evaluate.paired_bootstrap_ci` (whose evaluation draws ``W`` repeats, so
a fixed-parameter and a refitted CI differ by the refit only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from normscope.errors import InputError
from normscope.retrieval.evaluate import per_query_scores
from normscope.retrieval.search import FoldedIndex
from normscope.scoring import bootstrap_counts as counts, choose_param, validate_param

__all__ = ["RefitDesign", "per_query_grid", "ci_sources"]


def per_query_grid(scorer: str, Q, D, *, query_ids: Sequence[str], doc_ids: Sequence[str],
                   qrels: Mapping[str, Mapping[str, int]], grid: Sequence[float], relevance: str = "graded",
                   ignore_identical_ids: bool = False, metric: str = "ndcg@10", k: int = 10,
                   doc_norms=None) -> tuple[list[float], np.ndarray]:
    """Per-query ``metric`` of ``scorer`` at every valid grid value (one exact top-``k`` search each).

    Parameters
    ----------
    scorer : str
        A scorer with a parameter (``inverse_norm``, ``power``).
    Q : ndarray of shape (n, d)
        Raw query vectors, aligned with ``query_ids``.
    D : ndarray of shape (m, d)
        Raw document vectors, aligned with ``doc_ids``.
    qrels : dict of {qid: {docid: int}}
        Judgements of (at least) ``query_ids``.
    grid : sequence of float
        Values tried; those invalid for these documents are skipped (as
        :func:`~normscope.retrieval.evaluate.fit_parameter`).
    relevance, ignore_identical_ids, metric, k
        As :func:`~normscope.retrieval.evaluate.fit_parameter`.
    doc_norms : ndarray of shape (m,), optional
        ``||d||`` (computed when not given).

    Returns
    -------
    params : list of float
        The valid grid values, in grid order.
    values : ndarray of shape (n, len(params)), float64
        ``values[i, g]``: ``metric`` of query ``query_ids[i]`` under ``params[g]``.

    Raises
    ------
    InputError
        Every grid value invalid.
    """
    norms = np.linalg.norm(np.asarray(D, dtype=np.float64), axis=1) if doc_norms is None else doc_norms
    sub = {q: qrels[q] for q in query_ids}
    params, cols = [], []
    for p in grid:
        try:
            validate_param(scorer, p, norms)
        except InputError:
            continue
        run = FoldedIndex(D, doc_ids, scorer, p).search(Q, query_ids, k=k, ignore_identical_ids=ignore_identical_ids)
        params.append(float(p))
        cols.append(per_query_scores(sub, run, [metric], relevance=relevance)[metric])
    if not params:
        raise InputError(f"{scorer}: no valid parameter in the grid {list(grid)}")
    return params, np.column_stack(cols)


def ci_sources(mode: str, n_folds: int | None = None) -> str:
    """The sources of sampling a refitted CI resamples, in words (the ``ci_resamples`` of the JSON)."""
    if mode == "split":
        return ("evaluation queries and fit queries resampled jointly; the parameter refitted on each draw of the fit "
                "queries")
    return (f"evaluation queries resampled and the {n_folds}-fold split redrawn on each draw; the parameter refitted on "
            "the other folds' resampled queries (folds and fitted parameter vary with the draw)")


class RefitDesign:
    """The refitted-parameter bootstrap of one fitted scorer (see the module docstring).

    Parameters
    ----------
    values : ndarray of shape (n, G)
        Per-query metric of the evaluation queries at each grid value (:func:`per_query_grid`).
    baseline : ndarray of shape (n,)
        Per-query metric of the baseline (cosine) on the same queries.
    params : sequence of float, length G
        The grid values of ``values``' columns.
    neutral : float
        The parameter value that is the baseline (0); ties of the fit go to the value closest to it.
    fit_values : ndarray of shape (m, G), optional
        Per-query metric of the fit split's queries (mode ``split``); None: cross-validation over the
        evaluation queries with ``n_folds`` folds (mode ``cv``).
    n_folds : int
        Folds of the cross-validation (``cv`` mode).
    n_boot : int
        Draws.
    seed : int
        The evaluation draws are ``numpy.random.default_rng(seed).integers(0, n, (n_boot, n))`` (those of
        :func:`~normscope.retrieval.evaluate.paired_bootstrap_ci`); fit draws and fold splits come from
        ``default_rng([seed, 1])`` and ``default_rng([seed, 2, call])``.

    Raises
    ------
    InputError
        Shapes that do not match; ``n_boot < 10``; fewer than ``2 * n_folds`` queries in ``cv`` mode.
    """

    def __init__(self, values, baseline, params: Sequence[float], neutral: float, *, fit_values=None,
                 n_folds: int = 5, n_boot: int = 2000, seed: int = 0):
        self.values = np.asarray(values, dtype=np.float64)
        self.baseline = np.asarray(baseline, dtype=np.float64)
        self.params = np.asarray(params, dtype=np.float64)
        self.neutral = float(neutral)
        n, g = self.values.shape if self.values.ndim == 2 else (0, 0)
        if self.values.ndim != 2 or g != self.params.size or self.baseline.shape != (n,) or n == 0:
            raise InputError(f"refit design: values {self.values.shape}, baseline {self.baseline.shape}, "
                             f"{self.params.size} parameters do not match")
        if n_boot < 10:
            raise InputError(f"n_boot must be >= 10, got {n_boot}")
        self.fit_values = None if fit_values is None else np.asarray(fit_values, dtype=np.float64)
        if self.fit_values is not None and (self.fit_values.ndim != 2 or self.fit_values.shape[1] != g):
            raise InputError(f"refit design: fit values {self.fit_values.shape} for {g} parameters")
        self.mode = "split" if self.fit_values is not None else "cv"
        self.n_folds = int(n_folds)
        if self.mode == "cv" and n < 2 * self.n_folds:
            raise InputError(f"cross-validation needs at least {2 * self.n_folds} queries, got {n}")
        self.n_boot, self.seed = int(n_boot), int(seed)
        self._fit_choice = None
        self._calls = 0

    @property
    def resamples(self) -> str:
        """What the CIs resample, in words."""
        return ci_sources(self.mode, self.n_folds)

    def eval_counts(self, n: int | None = None) -> np.ndarray:
        """Counts (n_boot, n) of the evaluation draws of :func:`paired_bootstrap_ci` over ``n`` queries."""
        n = self.values.shape[0] if n is None else n
        return counts(np.random.default_rng(self.seed).integers(0, n, size=(self.n_boot, n)), n)

    def _split_choice(self) -> np.ndarray:
        """Grid index refitted on each draw of the fit queries (mode ``split``), drawn once."""
        if self._fit_choice is None:
            m = self.fit_values.shape[0]
            v = counts(np.random.default_rng([self.seed, 1]).integers(0, m, size=(self.n_boot, m)), m)
            self._fit_choice = choose_param(v @ self.fit_values / m, self.params, self.neutral)
        return self._fit_choice

    def fold_labels(self, n_draws: int) -> np.ndarray:
        """A fresh fold split per draw (``cv`` mode): (n_draws, n) fold numbers 0..n_folds-1, each fold of
        ``n // n_folds`` or one more queries (as ``numpy.array_split``), from ``default_rng([seed, 2, call])``."""
        self._calls += 1
        rng = np.random.default_rng([self.seed, 2, self._calls])
        n = self.values.shape[0]
        return rng.permuted(np.tile(np.arange(n) % self.n_folds, (n_draws, 1)), axis=1)

    def draws(self, w: np.ndarray, labels: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The scorer's per-query values under the parameter refitted on each draw, given evaluation counts ``w``.

        Parameters
        ----------
        w : ndarray of shape (n_boot, n)
            Counts of each evaluation query in each draw (in ``cv`` mode they weight the fit as well).
        labels : ndarray of shape (n_boot, n), int, optional
            ``cv`` mode: each query's fold in each draw (default :meth:`fold_labels`, a fresh split per draw).

        Returns
        -------
        x : ndarray of shape (n_boot, n)
            ``x[b, i]``: query ``i``'s metric under the parameter that draw ``b`` fitted for it.
        fitted : ndarray of shape (n_boot,) or (n_boot, n_folds)
            The refitted parameter values (per fold in ``cv`` mode).
        """
        n = self.values.shape[0]
        if self.mode == "split":
            g = self._split_choice()
            return self.values[:, g].T, self.params[g]
        labels = self.fold_labels(w.shape[0]) if labels is None else np.asarray(labels, dtype=np.int64)
        chosen = np.empty((w.shape[0], self.n_folds), dtype=np.int64)
        for f in range(self.n_folds):
            wf = w * (labels != f)
            chosen[:, f] = choose_param((wf @ self.values) / np.maximum(wf.sum(axis=1, keepdims=True), 1.0),
                                        self.params, self.neutral)
        gi = np.take_along_axis(chosen, labels, axis=1)
        return self.values[np.arange(n)[None, :], gi], self.params[chosen]

    def interval(self, w: np.ndarray, x: np.ndarray, mask: np.ndarray | None = None, *, level: float = 0.95) -> dict:
        """Percentile CIs of the weighted mean difference and relative difference over the draws.

        Parameters
        ----------
        w, x : ndarray of shape (n_boot, n)
            Counts and the scorer's per-query values of each draw (:meth:`draws`).
        mask : ndarray of shape (n,) of bool, optional
            The queries of a stratum (default all).
        level : float, keyword-only

        Returns
        -------
        dict
            ``mean_diff_ci`` and ``relative_ci`` (None when fewer than 90 % of the draws have a positive
            baseline mean, as :func:`~normscope.retrieval.evaluate.paired_bootstrap_ci`).
        """
        if mask is not None:
            w, x, y = w[:, mask], x[:, mask], self.baseline[mask]
        else:
            y = self.baseline
        tot = w.sum(axis=1)
        ok = tot > 0
        mx = (w * x).sum(axis=1)[ok] / tot[ok]
        my = (w @ y)[ok] / tot[ok]
        a = (1 - level) / 2
        d = mx - my
        out = {"mean_diff_ci": [float(np.quantile(d, a)), float(np.quantile(d, 1 - a))], "relative_ci": None}
        pos = my > 0
        if pos.sum() >= 0.9 * self.n_boot:
            rel = mx[pos] / my[pos] - 1
            out["relative_ci"] = [float(np.quantile(rel, a)), float(np.quantile(rel, 1 - a))]
        return out

    def overall(self, *, level: float = 0.95) -> dict:
        """CIs over all evaluation queries (the draws of :meth:`eval_counts`) and the spread of the refitted parameter.

        Returns
        -------
        dict
            ``mean_diff_ci``, ``relative_ci``, ``param_draws`` (``quantiles`` 2.5/50/97.5 % of the refitted
            value, ``share_neutral``: fraction of fits at the neutral value), ``resamples`` (words).
        """
        w = self.eval_counts()
        x, fitted = self.draws(w)
        return {**self.interval(w, x, level=level), "param_draws": _spread(fitted, self.neutral),
                "resamples": self.resamples}

    def strata(self, groups: np.ndarray, *, level: float = 0.95) -> dict[int, dict]:
        """CIs per stratum of one stratifier, each stratum's queries resampled within it.

        Parameters
        ----------
        groups : ndarray of shape (n,), int
            Stratum of each query (0: left out of this stratifier, resampled as a group of its own
            in ``cv`` mode, where every query still fits the other folds).

        Returns
        -------
        dict of {stratum: dict}
            For each stratum with at least 2 queries: :meth:`interval`'s CIs. The draws within a stratum
            are those of :func:`paired_bootstrap_ci` over its queries (``default_rng(seed)``), the fit
            draws (split) or fold splits (cv) as in :meth:`overall`.
        """
        groups = np.asarray(groups)
        n = groups.size
        w = np.zeros((self.n_boot, n))
        for k in np.unique(groups):
            pos = np.flatnonzero(groups == k)
            w[:, pos] = self.eval_counts(pos.size)
        x, _ = self.draws(w)
        return {int(k): self.interval(w, x, groups == k, level=level) for k in np.unique(groups)
                if k != 0 and (groups == k).sum() >= 2}


def _spread(fitted: np.ndarray, neutral: float) -> dict:
    f = np.asarray(fitted, dtype=np.float64).ravel()
    return {"quantiles": [float(v) for v in np.quantile(f, [0.025, 0.5, 0.975])],
            "share_neutral": float(np.mean(np.isclose(f, neutral, rtol=0, atol=1e-15))), "n": int(f.size)}
