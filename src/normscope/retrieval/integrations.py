"""Norm-aware scores for sentence-transformers and MTEB.

- :func:`asymmetric_norm_similarity` returns a callable ``(a, b) -> Tensor`` with the signature of
  ``sentence_transformers.util.cos_sim``: usable as ``model.similarity_fn_name``-style
  function, e.g. ``sim = asymmetric_norm_similarity("inverse_norm", 0.05); sim(q_emb, d_emb)``.
  ``a`` are queries, ``b`` documents: the norm discount applies to ``b`` only, so the score is
  **asymmetric** (its value changes when the two arguments swap). For pairs of equals (STS,
  word similarity) use the symmetric scorers of :mod:`normscope.similarity.scorers`.
  ``norm_aware_similarity`` and ``norm_aware_similarity_pairwise`` are the former names (aliases).
- :class:`NormAwareMTEBModel` and :func:`evaluate_mteb` (MTEB 2.x) live in
  :mod:`normscope.retrieval.mteb_model` and are re-exported here.

The scores are those of :mod:`normscope.scoring`, computed in torch (float32, or
the input dtype when floating) for use inside sentence-transformers pipelines.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from normscope.errors import InputError
from normscope.retrieval.mteb_model import NormAwareMTEBModel, evaluate_mteb  # re-exported (the MTEB wrapper lives there)
from normscope.scoring import check_param, check_scorer

__all__ = [
    "asymmetric_norm_similarity",
    "asymmetric_norm_similarity_pairwise",
    "norm_aware_similarity",
    "norm_aware_similarity_pairwise",
    "NormAwareMTEBModel",
    "evaluate_mteb",
]

_EPS = 1e-12


def _to_tensor(x):
    import torch

    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(np.asarray(x))
    if x.dim() == 1:
        x = x.unsqueeze(0)
    if not torch.is_floating_point(x):
        x = x.float()
    return x


_param = check_param  # the parameter rule of every scorer (normscope.scoring)


def _factor(scorer: str, param: float | None, norms):
    import torch

    if scorer == "inverse_norm":
        den = 1.0 + param * norms
        if bool((den <= 0).any()):
            raise InputError(
                f"inverse_norm: alpha={param:g} makes 1 + alpha*||d|| <= 0 (alpha must be > {-1.0 / float(norms.max()):.6g})"
            )
        return 1.0 / den
    if scorer == "power":
        g = norms.pow(param)
        if not bool(torch.isfinite(g).all()):
            raise InputError(f"power: beta={param:g} makes ||d||**beta non-finite")
        return g
    return torch.ones_like(norms)


def asymmetric_norm_similarity(scorer: str = "inverse_norm", param: float | None = None) -> Callable:
    """A ``cos_sim``-compatible query-document similarity ``(a, b) -> Tensor`` of shape (len(a), len(b)).

    Asymmetric: the norm factor ``g(||b_j||)`` applies to the second argument (the documents) only.

    Parameters
    ----------
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` (inverse_norm) or ``beta`` (power); None is 0 (cosine).

    Returns
    -------
    callable
        ``sim(a, b)`` with ``a`` (n, d) queries and ``b`` (m, d) documents as torch tensors,
        numpy arrays or lists (1-D inputs are one row); returns a torch tensor (n, m):
        ``cos(a_i, b_j) * g(||b_j||)`` (``<a_i, b_j>`` for dot).

    Raises
    ------
    InputError
        Unknown scorer, non-finite parameter; at call time, a parameter making scores
        non-finite for the given documents.
    """
    scorer = check_scorer(scorer)
    param = _param(scorer, param)

    def similarity(a, b):
        import torch

        a, b = _to_tensor(a), _to_tensor(b)
        if scorer == "dot":
            return a @ b.T
        bn = b.norm(dim=1)
        an = torch.nn.functional.normalize(a, p=2, dim=1, eps=_EPS)
        bu = b / bn.clamp_min(_EPS)[:, None]
        return (an @ bu.T) * _factor(scorer, param, bn)[None, :]

    similarity.__name__ = f"{scorer}_similarity"
    similarity.scorer, similarity.param = scorer, param  # type: ignore[attr-defined]
    return similarity


def asymmetric_norm_similarity_pairwise(scorer: str = "inverse_norm", param: float | None = None) -> Callable:
    """Row-wise version ``(a, b) -> Tensor`` of shape (n,): the score of ``(a_i, b_i)``.

    Asymmetric: ``cos(a_i, b_i) g(||b_i||)``, so swapping ``a`` and ``b`` changes the score (``b``
    are the documents). Same parameters and errors as :func:`asymmetric_norm_similarity`. The
    symmetric pair scores are :func:`normscope.similarity.scorers.pair_scores`.
    """
    scorer = check_scorer(scorer)
    param = _param(scorer, param)

    def pairwise(a, b):
        import torch

        a, b = _to_tensor(a), _to_tensor(b)
        if a.shape != b.shape:
            raise InputError(f"pairwise similarity needs equal shapes, got {tuple(a.shape)} and {tuple(b.shape)}")
        if scorer == "dot":
            return (a * b).sum(dim=1)
        bn = b.norm(dim=1)
        cos = (torch.nn.functional.normalize(a, dim=1, eps=_EPS) * (b / bn.clamp_min(_EPS)[:, None])).sum(dim=1)
        return cos * _factor(scorer, param, bn)

    pairwise.__name__ = f"{scorer}_similarity_pairwise"
    return pairwise


#: Former names of the asymmetric query-document scores (kept so existing code keeps working).
norm_aware_similarity = asymmetric_norm_similarity
norm_aware_similarity_pairwise = asymmetric_norm_similarity_pairwise
