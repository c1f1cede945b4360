"""Norm-aware scores for sentence-transformers and MTEB.

- :func:`asymmetric_norm_similarity` returns a callable ``(a, b) -> Tensor`` with the signature of
  ``sentence_transformers.util.cos_sim``: usable as ``model.similarity_fn_name``-style
  function, e.g. ``sim = asymmetric_norm_similarity("inverse_norm", 0.05); sim(q_emb, d_emb)``.
  ``a`` are queries, ``b`` documents: the norm discount applies to ``b`` only, so the score is
  **asymmetric** (its value changes when the two arguments swap). For pairs of equals (STS,
  word similarity) use the symmetric scorers of :mod:`normscope.similarity.scorers`.
  ``norm_aware_similarity`` and ``norm_aware_similarity_pairwise`` are the former names (aliases).
- :class:`NormAwareMTEBModel` wraps any raw-vector encoder for MTEB: ``encode`` returns raw
  (un-normalised) vectors, ``similarity`` / ``similarity_pairwise`` apply the norm-aware
  score, so MTEB's retrieval evaluator ranks with it. It follows MTEB's encoder protocol
  (``encode`` + ``similarity`` + ``similarity_pairwise``), accepting both the v1 call
  ``encode(sentences, task_name=..., **kw)`` and the v2 call ``encode(dataloader, task_metadata=...,
  hf_split=..., hf_subset=..., prompt_type=..., **kw)`` whose batches are dicts with a
  ``"text"`` list. mteb itself is imported only by :func:`evaluate_mteb`.

The scores are those of :mod:`normscope.retrieval.scoring`, computed in torch (float32, or
the input dtype when floating) for use inside sentence-transformers pipelines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from normscope.errors import InputError, ModelError
from normscope.retrieval.scoring import PARAM_NAMES, check_scorer, validate_param

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


def _param(scorer: str, param: float | None) -> float | None:
    check_scorer(scorer)
    if PARAM_NAMES[scorer] is None:
        if param not in (None, 0, 0.0):
            raise InputError(f"scorer '{scorer}' takes no parameter, got {param}")
        return None
    p = 0.0 if param is None else float(param)
    return validate_param(scorer, p, np.zeros(0))


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


def _flatten_inputs(inputs) -> list[str]:
    """Texts from a list of strings or an iterable of MTEB v2 batches (dicts with "text")."""
    if isinstance(inputs, str):
        return [inputs]
    if isinstance(inputs, Sequence) and (len(inputs) == 0 or isinstance(inputs[0], str)):
        return [str(t) for t in inputs]
    texts: list[str] = []
    for batch in inputs:
        if isinstance(batch, dict) and "text" in batch:
            texts.extend(str(t) for t in batch["text"])
        elif isinstance(batch, str):
            texts.append(batch)
        else:
            raise InputError(f"cannot read texts from an input batch of type {type(batch).__name__}")
    return texts


class NormAwareMTEBModel:
    """An MTEB-style model: raw ``encode`` and a norm-aware ``similarity``.

    Parameters
    ----------
    encoder : normscope Encoder, or any object with ``encode(texts, batch_size=...)``
        returning raw vectors (a ``SentenceTransformer`` works when its ``Normalize``
        module is removed; normscope encoders already return raw vectors).
    scorer : str
    param : float or None
        ``alpha`` / ``beta``, e.g. fitted by :func:`normscope.retrieval.run_retrieval`.
    name : str, optional
        Name reported to MTEB (default: the encoder's fingerprint name).

    Attributes
    ----------
    similarity_fn : callable
        :func:`asymmetric_norm_similarity` of ``scorer``.
    """

    def __init__(self, encoder: Any, scorer: str = "inverse_norm", param: float | None = None, *, name: str | None = None):
        self.encoder = encoder
        self.scorer = check_scorer(scorer)
        self.param = _param(scorer, param)
        self.similarity_fn = asymmetric_norm_similarity(scorer, self.param)
        self.similarity_pairwise_fn = asymmetric_norm_similarity_pairwise(scorer, self.param)
        fp = getattr(encoder, "fingerprint", None)
        self.name = name or (fp.name if fp is not None else type(encoder).__name__)

    def encode(self, inputs: Iterable | Sequence[str], *, batch_size: int = 32, **kwargs) -> np.ndarray:
        """Raw vectors of the texts, ndarray (n, d) float32.

        ``inputs`` is a list of strings (MTEB v1) or an iterable of batches ``{"text": [...]}``
        (MTEB v2 DataLoader). Other keyword arguments (``task_name``, ``task_metadata``,
        ``hf_split``, ``hf_subset``, ``prompt_type``) are accepted and ignored: the encoder
        is used the same way for queries and documents.
        """
        texts = _flatten_inputs(inputs)
        out = self.encoder.encode(texts, batch_size=batch_size)
        if hasattr(out, "detach"):
            out = out.detach().cpu().numpy()
        return np.asarray(out, dtype=np.float32)

    def similarity(self, embeddings1, embeddings2):
        """Norm-aware score matrix (n1, n2) as a torch tensor; ``embeddings2`` are the documents."""
        return self.similarity_fn(embeddings1, embeddings2)

    def similarity_pairwise(self, embeddings1, embeddings2):
        """Row-wise norm-aware scores (n,), torch tensor."""
        return self.similarity_pairwise_fn(embeddings1, embeddings2)


def evaluate_mteb(model: NormAwareMTEBModel, tasks: Sequence[str], *, output_folder: str | None = None, **kwargs):
    """Run MTEB tasks with ``model`` (needs the optional extra ``mteb`` and network for task data).

    Parameters
    ----------
    model : NormAwareMTEBModel
    tasks : sequence of str
        MTEB task names, e.g. ``["SciFact"]``.
    output_folder : str, optional
    **kwargs
        Passed to ``mteb.evaluate`` (mteb >= 2) or ``MTEB(...).run`` (mteb 1.x).

    Returns
    -------
    The mteb results object.

    Raises
    ------
    ModelError
        mteb not installed (names the extra).
    """
    try:
        import mteb
    except ImportError:
        raise ModelError("MTEB evaluation needs the optional extra 'mteb' (pip install mteb)") from None
    task_objs = mteb.get_tasks(tasks=list(tasks))
    if hasattr(mteb, "evaluate"):
        return mteb.evaluate(model, task_objs, **kwargs)
    return mteb.MTEB(tasks=task_objs).run(model, output_folder=output_folder, **kwargs)
