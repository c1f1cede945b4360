"""Norm-aware relevance scores and their exact folding into document vectors (the kernels that
retrieval, similarity and the faiss indexes share: numpy in, numpy out).

Four scorers of a query vector ``q`` and a document vector ``d`` (raw, un-normalised
embeddings; ``cos(q, d) = <q, d> / (||q|| ||d||)``):

============== ===================================== ===========================
name           score s(q, d)                          parameter
============== ===================================== ===========================
``cosine``     ``cos(q, d)``                          none
``dot``        ``<q, d> = ||q|| ||d|| cos(q, d)``     none
``inverse_norm`` ``cos(q, d) / (1 + alpha ||d||)``    ``alpha`` (units 1/||d||)
``power``      ``cos(q, d) * ||d||**beta``            ``beta`` (dimensionless)
============== ===================================== ===========================

``inverse_norm`` with ``alpha > 0`` discounts long (high-norm) documents; with
``-1/max||d|| < alpha < 0`` it favours them. ``power`` interpolates between cosine
(``beta = 0``) and the document-norm part of the dot product (``beta = 1``); negative
``beta`` discounts high-norm documents. Both reduce to cosine at parameter 0.

**Folding.** Every scorer is an inner product of a folded query and a folded
document, exactly:

- cosine, inverse_norm, power: ``q' = q / ||q||`` and
  ``d' = d / ||d|| * g(||d||)`` with ``g = 1``, ``1 / (1 + alpha ||d||)`` or
  ``||d||**beta``;
- dot: ``q' = q``, ``d' = d``.

So norm-aware exact search is a plain inner-product search (faiss ``IndexFlatIP``) on
folded document vectors and costs nothing extra at query time. The norm-aware score
treats its two arguments asymmetrically: the norm discount applies to the document.
The scores are a normscope construction motivated by the norm-as-confidence reading
of docs/theory.md (the norm R = ||z|| as a per-input signal); they are not taken from a
paper.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from normscope._format import plural
from normscope.errors import InputError

__all__ = [
    "SCORERS",
    "PARAM_NAMES",
    "NEUTRAL_PARAM",
    "check_scorer",
    "check_param",
    "validate_param",
    "cosine_scores",
    "dot_scores",
    "inverse_norm_scores",
    "power_scores",
    "score",
    "fold_documents",
    "fold_queries",
    "pair_dot",
    "folded_scores",
    "score_pairwise",
    "default_grid",
    "choose_param",
    "bootstrap_counts",
]

SCORERS: tuple[str, ...] = ("cosine", "dot", "inverse_norm", "power")
#: Name of each scorer's parameter (None: no parameter).
PARAM_NAMES: dict[str, str | None] = {"cosine": None, "dot": None, "inverse_norm": "alpha", "power": "beta"}
#: Parameter value at which the scorer equals cosine.
NEUTRAL_PARAM: dict[str, float | None] = {"cosine": None, "dot": None, "inverse_norm": 0.0, "power": 0.0}

_EPS = 1e-12
_FIT_TIE = 1e-12  # fit criteria within this of the best tie (the value closest to the neutral one wins)
_F32_MAX = float(np.finfo(np.float32).max)


def check_scorer(scorer: str) -> str:
    """Return ``scorer`` if it is one of :data:`SCORERS`; raise :class:`InputError` otherwise."""
    if scorer not in SCORERS:
        raise InputError(f"unknown scorer '{scorer}'; choose one of {', '.join(SCORERS)}")
    return scorer


def check_param(scorer: str, param: float | None) -> float | None:
    """``param`` checked for ``scorer`` alone (no documents): None for a parameter-free scorer, else a finite float.

    Raises
    ------
    InputError
        Unknown scorer; a parameter given to ``cosine``/``dot``; a non-finite parameter.
    """
    check_scorer(scorer)
    if PARAM_NAMES[scorer] is None:
        if param not in (None, 0, 0.0):
            raise InputError(f"scorer '{scorer}' takes no parameter, got {param}")
        return None
    return validate_param(scorer, 0.0 if param is None else float(param), np.zeros(0))


def _as_matrix(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise InputError(f"{name} must be a 2-D array (n, d), got shape {a.shape}")
    if a.shape[0] and not np.isfinite(a).all():
        bad = int((~np.isfinite(a)).any(axis=1).sum())
        raise InputError(f"{name} has {plural(bad, 'row')} with non-finite values (NaN or inf)")
    return a


def _norms(a: np.ndarray) -> np.ndarray:
    return np.linalg.norm(a.astype(np.float64, copy=False), axis=1)


def validate_param(scorer: str, param: float | None, doc_norms: np.ndarray, *, items: str = "document",
                   symbol: str = "||d||") -> float | None:
    """Check that ``param`` gives finite, sign-preserving scores on documents of norms ``doc_norms``.

    Parameters
    ----------
    scorer : str
        One of :data:`SCORERS`.
    param : float or None
        ``alpha`` for ``inverse_norm``, ``beta`` for ``power``; ignored (must be None or
        absent) for ``cosine`` and ``dot``. None means the neutral value 0.
    doc_norms : ndarray of shape (n_docs,)
        Document norms ``||d||``.
    items, symbol : str, keyword-only
        How the error names what is scored and its norm (``"item"``, ``"||z||"`` for pair scores).

    Returns
    -------
    float or None
        The validated parameter (None for parameter-free scorers).

    Raises
    ------
    InputError
        Non-finite parameter; ``inverse_norm`` with ``1 + alpha ||d|| <= 0`` for some
        document (division by zero or a sign flip: ``alpha`` must exceed
        ``-1 / max||d||``); ``power`` with ``||d||**beta`` overflowing float32 or
        infinite for a zero-norm document.
    """
    check_scorer(scorer)
    if PARAM_NAMES[scorer] is None:
        return None
    name = PARAM_NAMES[scorer]
    p = 0.0 if param is None else float(param)
    if not math.isfinite(p):
        raise InputError(f"{scorer}: {name}={param} is not finite")
    norms = np.asarray(doc_norms, dtype=np.float64)
    if norms.size == 0:
        return p
    if scorer == "inverse_norm":
        denom = 1.0 + p * norms
        if (denom <= 0).any():
            bound = -1.0 / float(norms.max())
            raise InputError(
                f"inverse_norm: alpha={p:g} makes 1 + alpha*{symbol} <= 0 for {plural(int((denom <= 0).sum()), items)} "
                f"(division by zero or sign flip); alpha must be > {bound:.6g} = -1/max{symbol}"
            )
    else:  # power
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            g = norms**p
        bad = ~np.isfinite(g) | (g > _F32_MAX)
        if bad.any():
            raise InputError(
                f"power: beta={p:g} makes {symbol}**beta non-finite for {plural(int(bad.sum()), items)} "
                f"(norms in [{norms.min():.4g}, {norms.max():.4g}]; zero norms need beta >= 0)"
            )
    return p


def _doc_factor(scorer: str, param: float | None, norms: np.ndarray) -> np.ndarray:
    """g(||d||) such that score = cos(q, d) * g(||d||) (float64)."""
    if scorer == "cosine":
        return np.ones_like(norms)
    if scorer == "inverse_norm":
        return 1.0 / (1.0 + param * norms)
    if scorer == "power":
        with np.errstate(divide="ignore"):
            return norms**param
    raise AssertionError(scorer)


def cosine_scores(Q, D) -> np.ndarray:
    """Cosine similarity ``cos(q, d) = <q, d> / (||q|| ||d||)``.

    Parameters
    ----------
    Q : array-like of shape (n_queries, d)
    D : array-like of shape (n_docs, d)

    Returns
    -------
    ndarray of shape (n_queries, n_docs), float64
        Zero-norm rows score 0 (norms are clipped at 1e-12, as in
        ``sentence_transformers.util.cos_sim``).
    """
    Q = _as_matrix(Q, "queries").astype(np.float64)
    D = _as_matrix(D, "documents").astype(np.float64)
    qn = Q / np.maximum(_norms(Q), _EPS)[:, None]
    dn = D / np.maximum(_norms(D), _EPS)[:, None]
    return qn @ dn.T


def dot_scores(Q, D) -> np.ndarray:
    """Inner product ``<q, d>`` of raw vectors; ndarray (n_queries, n_docs), float64."""
    Q = _as_matrix(Q, "queries").astype(np.float64)
    D = _as_matrix(D, "documents").astype(np.float64)
    return Q @ D.T


def inverse_norm_scores(Q, D, alpha: float) -> np.ndarray:
    """Inverse-norm discount ``cos(q, d) / (1 + alpha ||d||)``.

    Parameters
    ----------
    Q : array-like of shape (n_queries, d)
    D : array-like of shape (n_docs, d)
    alpha : float
        Discount strength in units of 1/||d||; must exceed ``-1/max||d||``.

    Returns
    -------
    ndarray of shape (n_queries, n_docs), float64

    Raises
    ------
    InputError
        ``alpha`` making a denominator ``<= 0`` (see :func:`validate_param`).
    """
    D = _as_matrix(D, "documents")
    norms = _norms(D)
    alpha = validate_param("inverse_norm", alpha, norms)
    return cosine_scores(Q, D) / (1.0 + alpha * norms)[None, :]


def power_scores(Q, D, beta: float) -> np.ndarray:
    """Power family ``cos(q, d) * ||d||**beta`` (``beta = 0`` is cosine).

    Parameters
    ----------
    Q : array-like of shape (n_queries, d)
    D : array-like of shape (n_docs, d)
    beta : float
        Exponent of the document norm.

    Returns
    -------
    ndarray of shape (n_queries, n_docs), float64

    Raises
    ------
    InputError
        ``||d||**beta`` non-finite (see :func:`validate_param`).
    """
    D = _as_matrix(D, "documents")
    norms = _norms(D)
    beta = validate_param("power", beta, norms)
    with np.errstate(divide="ignore"):
        g = norms**beta
    return cosine_scores(Q, D) * g[None, :]


def score(Q, D, scorer: str, param: float | None = None) -> np.ndarray:
    """Brute-force score matrix of ``scorer`` (float64 reference for the folded search).

    Parameters
    ----------
    Q : array-like of shape (n_queries, d)
    D : array-like of shape (n_docs, d)
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` / ``beta``; None is the neutral value 0.

    Returns
    -------
    ndarray of shape (n_queries, n_docs), float64

    Raises
    ------
    InputError
        Unknown scorer or invalid parameter.
    """
    check_scorer(scorer)
    if scorer == "cosine":
        return cosine_scores(Q, D)
    if scorer == "dot":
        return dot_scores(Q, D)
    if scorer == "inverse_norm":
        return inverse_norm_scores(Q, D, 0.0 if param is None else param)
    return power_scores(Q, D, 0.0 if param is None else param)


def fold_queries(Q, scorer: str) -> np.ndarray:
    """Folded query vectors: ``q / ||q||`` (``q`` itself for ``dot``).

    Parameters
    ----------
    Q : array-like of shape (n_queries, d)
    scorer : str

    Returns
    -------
    ndarray of shape (n_queries, d), float32, C-contiguous
    """
    check_scorer(scorer)
    Q = _as_matrix(Q, "queries").astype(np.float64)
    if scorer != "dot":
        Q = Q / np.maximum(_norms(Q), _EPS)[:, None]
    return np.ascontiguousarray(Q, dtype=np.float32)


def fold_documents(D, scorer: str, param: float | None = None) -> np.ndarray:
    """Document vectors whose inner product with the folded query equals the score exactly.

    ``<fold_queries(q), fold_documents(d)> = score(q, d)`` up to float32 rounding:
    ``d / ||d||`` (cosine), ``d / (||d|| (1 + alpha ||d||))`` (inverse_norm),
    ``d ||d||**(beta - 1)`` (power), ``d`` (dot). Computed in float64, returned float32.

    Parameters
    ----------
    D : array-like of shape (n_docs, d)
        Raw document vectors.
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` / ``beta`` (None: neutral value 0).

    Returns
    -------
    ndarray of shape (n_docs, d), float32, C-contiguous

    Raises
    ------
    InputError
        Unknown scorer; a parameter making scores non-finite or flipping their sign
        (e.g. ``alpha <= -1/max||d||``), named with its value.
    """
    check_scorer(scorer)
    D = _as_matrix(D, "documents").astype(np.float64)
    if scorer == "dot":
        return np.ascontiguousarray(D, dtype=np.float32)
    norms = _norms(D)
    param = validate_param(scorer, param, norms)
    unit = D / np.maximum(norms, _EPS)[:, None]
    folded = unit * _doc_factor(scorer, param, norms)[:, None]
    if folded.size and (~np.isfinite(folded) | (np.abs(folded) > _F32_MAX)).any():
        raise InputError(f"{scorer}: parameter {param:g} gives non-finite folded document vectors")
    return np.ascontiguousarray(folded, dtype=np.float32)


def pair_dot(A, B) -> np.ndarray:
    """Row-wise inner products ``sum_k A[..., k] B[..., k]`` in float64, the same bits for the same pair anywhere.

    The float32 inputs are widened to float64 (each product of two float32 values is exact there)
    and summed along the last axis by numpy's pairwise summation, whose order depends only on
    ``d``. So two identical documents get bit-identical scores against a query wherever they sit in
    the corpus or in a batch (a BLAS matrix product does not promise this), and a tie between
    identical texts is a tie. This is the score every normscope run reports.

    Parameters
    ----------
    A, B : array-like broadcastable to a common shape (..., d)

    Returns
    -------
    ndarray of shape (...,), float64
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    return np.multiply(A, B).sum(axis=-1)


def folded_scores(Qf, Df, *, block: int = 1 << 22) -> np.ndarray:
    """Score matrix of folded queries and documents, each entry :func:`pair_dot` of one pair.

    Parameters
    ----------
    Qf : array-like of shape (n_queries, d)
        Folded queries (:func:`fold_queries`).
    Df : array-like of shape (n_docs, d)
        Folded documents (:func:`fold_documents`).
    block : int, keyword-only
        Elements of the float64 temporary per step (memory bound: ``8 * block`` bytes).

    Returns
    -------
    ndarray of shape (n_queries, n_docs), float64
    """
    Q = np.asarray(Qf, dtype=np.float64)
    D = np.asarray(Df, dtype=np.float64)
    if Q.ndim != 2 or D.ndim != 2 or Q.shape[1] != D.shape[1]:
        raise InputError(f"folded_scores needs (n, d) and (m, d) arrays, got {Q.shape} and {D.shape}")
    out = np.empty((Q.shape[0], D.shape[0]), dtype=np.float64)
    step = max(1, block // max(1, D.shape[1]))
    for i in range(Q.shape[0]):
        for j in range(0, D.shape[0], step):
            out[i, j : j + step] = pair_dot(D[j : j + step], Q[i])
    return out


def score_pairwise(Q, D, scorer: str, param: float | None = None) -> np.ndarray:
    """Score of each aligned pair ``(Q[i], D[i])`` under ``scorer`` (folded vectors, :func:`pair_dot`).

    Parameters
    ----------
    Q, D : array-like of shape (n, d)
        Raw queries and documents (the norm factor applies to ``D``).
    scorer : str
    param : float or None

    Returns
    -------
    ndarray of shape (n,), float64

    Raises
    ------
    InputError
        Shapes differ; unknown scorer or invalid parameter.
    """
    Qf, Df = fold_queries(Q, scorer), fold_documents(D, scorer, param)
    if Qf.shape != Df.shape:
        raise InputError(f"pairwise scores need equal shapes, got {Qf.shape} and {Df.shape}")
    return pair_dot(Qf, Df)


_INVERSE_S = (-0.9, -0.75, -0.5, -0.25, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
_POWER_BETA = (-4.0, -3.0, -2.0, -1.5, -1.0, -0.75, -0.5, -0.3, -0.2, -0.1, -0.05, 0.0,
               0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)


def default_grid(scorer: str, doc_norms) -> list[float]:
    """Grid searched when fitting ``scorer``'s parameter (denser near the neutral value 0).

    ``inverse_norm``: ``alpha = s / max||d||`` for ``s`` in
    {-0.9, -0.75, -0.5, -0.25, -0.1, -0.05, -0.02, 0, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32}
    (``s > -1`` keeps every denominator positive; large ``s`` approaches ``cos/||d||``).
    ``power``: ``beta`` in {0, ±0.05, ±0.1, ±0.2, ±0.3, ±0.5, ±0.75, ±1, ±1.5, ±2, ±3, ±4}.
    ``cosine``/``dot``: no parameter, ``[None]``.
    """
    check_scorer(scorer)
    if PARAM_NAMES[scorer] is None:
        return [None]
    if scorer == "inverse_norm":
        m = float(np.max(np.asarray(doc_norms, dtype=np.float64)))
        return [s / m for s in _INVERSE_S]
    return list(_POWER_BETA)


def choose_param(means: np.ndarray, params: Sequence[float], neutral: float) -> np.ndarray:
    """Index of the fitted grid value per row: the largest mean, ties (within 1e-12) to the value closest to ``neutral``.

    Parameters
    ----------
    means : ndarray of shape (B, G)
        Fit criterion (mean nDCG@10, Spearman rho) per draw and grid value; NaN never wins (a row of NaN
        gives the value closest to ``neutral``).
    params : sequence of float, length G
    neutral : float

    Returns
    -------
    ndarray of shape (B,), int64
        The rule of :func:`normscope.retrieval.evaluate.fit_parameter` and
        :func:`normscope.similarity.fit.fit_pair_param` applied to each row.
    """
    means = np.atleast_2d(np.asarray(means, dtype=np.float64))
    means = np.where(np.isnan(means), -np.inf, means)
    by_closeness = np.argsort(np.abs(np.asarray(params, dtype=np.float64) - neutral), kind="stable")
    best = means.max(axis=1, keepdims=True)
    top = (means >= best - _FIT_TIE) | np.isneginf(best)
    return by_closeness[np.argmax(top[:, by_closeness], axis=1)]


def bootstrap_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """Bootstrap index draws (B, n_drawn) of positions ``< n`` as counts per position, (B, n) float64."""
    idx = np.asarray(idx, dtype=np.int64)
    b = idx.shape[0]
    flat = (idx + n * np.arange(b, dtype=np.int64)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)
