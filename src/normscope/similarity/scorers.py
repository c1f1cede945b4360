"""Symmetric norm-aware similarity of pairs of raw embeddings (numpy in, numpy out).

For a pair of raw (un-normalised) vectors ``a``, ``b`` with ``cos(a, b) = <a, b> / (||a|| ||b||)``:

================ ================================================ =====================
name             score s(a, b)                                     parameter
================ ================================================ =====================
``cosine``       ``cos(a, b)``                                     none
``dot``          ``<a, b> = cos(a, b) ||a|| ||b||``                none
``inverse_norm`` ``cos(a, b) / ((1 + alpha ||a||)(1 + alpha ||b||))`` ``alpha`` (1/||z||)
``power``        ``cos(a, b) (||a|| ||b||)**beta``                 ``beta`` (dimensionless)
================ ================================================ =====================

Every score is **symmetric**, ``s(a, b) = s(b, a)``, so the score of a pair does not depend on
which text is listed first (what a human-rated pair benchmark such as STS-B or SimLex-999 needs).
``inverse_norm`` and ``power`` reduce to cosine at parameter 0; ``power`` at ``beta = 1`` is the dot
product. ``alpha > 0`` (``beta < 0``) discounts pairs of high-norm items, ``alpha < 0`` (``beta > 0``)
favours them; ``alpha`` must exceed ``-1/max||z||`` so that no factor is zero or negative.

These are the symmetric forms of the query-document scores of
:mod:`normscope.scoring` (there the norm factor applies to the document only, which is
right for retrieval; the asymmetric pairwise form is
:func:`normscope.extensions.integrations.asymmetric_norm_similarity_pairwise`). They are a normscope
construction motivated by the norm-as-confidence reading of the theory (``docs/theory.md``), not
taken from a paper.
"""

from __future__ import annotations

import numpy as np

from normscope.errors import InputError
from normscope.scoring import PARAM_NAMES, SCORERS, check_param, check_scorer, validate_param

__all__ = [
    "PAIR_SCORERS",
    "PAIR_PARAM_NAMES",
    "check_pair_scorer",
    "validate_pair_param",
    "cosine_pairs",
    "dot_pairs",
    "inverse_norm_pairs",
    "power_pairs",
    "pair_scores",
]

#: The scorers (the names of :data:`normscope.scoring.SCORERS`, in their symmetric pair form).
PAIR_SCORERS: tuple[str, ...] = SCORERS
#: Name of each scorer's parameter (None: no parameter).
PAIR_PARAM_NAMES: dict[str, str | None] = PARAM_NAMES

_EPS = 1e-12  # norm clip of the cosine, as sentence_transformers.util.cos_sim


def check_pair_scorer(scorer: str) -> str:
    """``scorer`` if it is one of :data:`PAIR_SCORERS` (:func:`normscope.scoring.check_scorer`).

    Raises
    ------
    InputError
        Naming the valid scorers.
    """
    return check_scorer(scorer)


def _pairs(a, b) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if b.ndim == 1:
        b = b[None, :]
    if a.ndim != 2 or a.shape != b.shape:
        raise InputError(f"pair scores need two arrays of the same shape (n, d), got {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("pair vectors hold NaN or inf")
    return a, b


def _cos(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    cos = np.einsum("ij,ij->i", a, b) / (np.maximum(na, _EPS) * np.maximum(nb, _EPS))
    return cos, na, nb


def validate_pair_param(scorer: str, param: float | None, norms) -> float | None:
    """Check that ``param`` gives finite, sign-preserving scores for items of norms ``norms``.

    The rule of :func:`normscope.scoring.validate_param`, applied to the norms of **both**
    items of every pair (a pair score multiplies one factor per item).

    Parameters
    ----------
    scorer : str
        One of :data:`PAIR_SCORERS`.
    param : float or None
        ``alpha`` (inverse_norm) or ``beta`` (power); must be None (or 0) for cosine and dot.
        None means 0 (cosine) for the parametric scorers.
    norms : array_like of shape (m,)
        Norms of the items that will be scored.

    Returns
    -------
    float or None
        The parameter (None for cosine and dot).

    Raises
    ------
    InputError
        A parameter for a parameter-free scorer, a non-finite parameter, ``1 + alpha ||z|| <= 0``
        for some item, or ``||z||**beta`` not finite (zero norms need ``beta >= 0``).
    """
    p = check_param(scorer, param)
    if p is None:
        return None
    return validate_param(scorer, p, np.asarray(norms, dtype=np.float64).ravel(), items="item", symbol="||z||")


def cosine_pairs(a, b) -> np.ndarray:
    """``cos(a_i, b_i)`` of row pairs.

    Parameters
    ----------
    a, b : array_like of shape (n, d) (or (d,) for one pair)
        Raw vectors of the first and second item of each pair.

    Returns
    -------
    ndarray of shape (n,), float64
        Zero-norm rows score 0 (norms clipped at 1e-12, as ``sentence_transformers.util.cos_sim``).

    Raises
    ------
    InputError
        Shapes differ, not 2-D, or NaN/inf values.
    """
    return _cos(*_pairs(a, b))[0]


def dot_pairs(a, b) -> np.ndarray:
    """``<a_i, b_i>`` of row pairs of raw vectors; ndarray of shape (n,), float64 (errors as :func:`cosine_pairs`)."""
    a, b = _pairs(a, b)
    return np.einsum("ij,ij->i", a, b)


def inverse_norm_pairs(a, b, alpha: float) -> np.ndarray:
    """``cos(a_i, b_i) / ((1 + alpha ||a_i||)(1 + alpha ||b_i||))``: symmetric inverse-norm discount.

    Parameters
    ----------
    a, b : array_like of shape (n, d)
    alpha : float
        In units of 1/||z||; must exceed ``-1/max||z||`` over the items scored. 0 gives cosine.

    Returns
    -------
    ndarray of shape (n,), float64

    Raises
    ------
    InputError
        As :func:`cosine_pairs`, or an invalid ``alpha`` (:func:`validate_pair_param`).
    """
    cos, na, nb = _cos(*_pairs(a, b))
    alpha = validate_pair_param("inverse_norm", alpha, np.concatenate([na, nb]))
    return cos / ((1.0 + alpha * na) * (1.0 + alpha * nb))


def power_pairs(a, b, beta: float) -> np.ndarray:
    """``cos(a_i, b_i) (||a_i|| ||b_i||)**beta``: symmetric power of the norm product.

    Parameters
    ----------
    a, b : array_like of shape (n, d)
    beta : float
        Dimensionless; 0 gives cosine, 1 the dot product.

    Returns
    -------
    ndarray of shape (n,), float64

    Raises
    ------
    InputError
        As :func:`cosine_pairs`, or ``||z||**beta`` not finite (:func:`validate_pair_param`).
    """
    cos, na, nb = _cos(*_pairs(a, b))
    beta = validate_pair_param("power", beta, np.concatenate([na, nb]))
    return cos * (na * nb) ** beta


def pair_scores(a, b, scorer: str, param: float | None = None) -> np.ndarray:
    """Score of every row pair with ``scorer`` (one of :data:`PAIR_SCORERS`) and its parameter.

    Returns
    -------
    ndarray of shape (n,), float64

    Raises
    ------
    InputError
        Unknown scorer, invalid parameter, bad arrays.
    """
    check_pair_scorer(scorer)
    if scorer == "cosine":
        validate_pair_param(scorer, param, [])
        return cosine_pairs(a, b)
    if scorer == "dot":
        validate_pair_param(scorer, param, [])
        return dot_pairs(a, b)
    if scorer == "inverse_norm":
        return inverse_norm_pairs(a, b, 0.0 if param is None else param)
    return power_pairs(a, b, 0.0 if param is None else param)
