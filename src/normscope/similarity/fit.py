"""Fitting a pair scorer's parameter on fit pairs only: grid search of the Spearman rho with human scores."""

from __future__ import annotations

import numpy as np
from scipy import stats as _sps

from normscope.errors import InputError
from normscope.scoring import default_grid
from normscope.similarity.scorers import check_pair_scorer, pair_scores, validate_pair_param

__all__ = ["pair_grid", "fit_pair_param"]

def pair_grid(scorer: str, norms) -> list[float | None]:
    """Parameter values tried when fitting ``scorer``: the grid of the retrieval fit
    (:func:`normscope.scoring.default_grid`).

    Parameters
    ----------
    scorer : str
        One of :data:`normscope.similarity.scorers.PAIR_SCORERS`.
    norms : array_like of shape (m,)
        Norms of every item that will be scored with the fitted value (fit and evaluated items:
        norms only, never human scores), so ``alpha`` stays valid on the evaluated pairs.

    Returns
    -------
    list
        ``inverse_norm``: ``s / max||z||`` for ``s`` in {-0.9, -0.75, -0.5, -0.25, -0.1, -0.05,
        -0.02, 0, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32}; ``power``: ``beta`` in {0, ±0.05,
        ±0.1, ±0.2, ±0.3, ±0.5, ±0.75, ±1, ±1.5, ±2, ±3, ±4}; ``cosine``, ``dot``: ``[None]``.
    """
    check_pair_scorer(scorer)
    return default_grid(scorer, norms)


def fit_pair_param(scorer: str, a, b, human, *, grid=None) -> tuple[float | None, list[dict]]:
    """Grid-search the parameter maximising Spearman rho(score, human) on the given (fit) pairs.

    Call it with fit pairs only (a train split, another list, or a disjoint half), never with the
    pairs that will be evaluated.

    Parameters
    ----------
    scorer : str
    a, b : array_like of shape (n, d)
        Raw vectors of the first and second item of each fit pair.
    human : array_like of shape (n,)
        Human scores of the fit pairs.
    grid : sequence of float, optional
        Default :func:`pair_grid` on the norms of ``a`` and ``b``; values invalid for these norms
        are skipped.

    Returns
    -------
    best : float or None
        The value with the largest Spearman rho; ties go to the value closest to 0 (cosine). None
        for cosine and dot.
    curve : list of dict
        ``{"param": value, "spearman": rho}`` for every value tried, in grid order.

    Raises
    ------
    InputError
        Fewer than 3 fit pairs, constant human scores, every grid value invalid.
    """
    check_pair_scorer(scorer)
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64).ravel()
    if human.size < 3 or np.ptp(human) == 0:
        raise InputError(f"fitting {scorer} needs at least 3 fit pairs with differing human scores, got {human.size}")
    norms = np.concatenate([np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)])
    grid = pair_grid(scorer, norms) if grid is None else list(grid)
    curve = []
    for p in grid:
        try:
            validate_pair_param(scorer, p, norms)
        except InputError:
            continue
        s = pair_scores(a, b, scorer, p)
        rho = float(_sps.spearmanr(s, human).statistic) if np.ptp(s) > 0 else float("nan")
        curve.append({"param": None if p is None else float(p), "spearman": rho})
    valid = [c for c in curve if np.isfinite(c["spearman"])]
    if not valid:
        raise InputError(f"{scorer}: no valid parameter in the grid {grid}")
    top = max(c["spearman"] for c in valid)
    best = min((c for c in valid if c["spearman"] >= top - 1e-12),
               key=lambda c: 0.0 if c["param"] is None else abs(c["param"]))
    return best["param"], curve
