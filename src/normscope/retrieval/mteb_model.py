"""MTEB 2.x integration: a raw-vector encoder with a norm-aware ``similarity``, and ``evaluate_mteb``.

:class:`NormAwareMTEBModel` follows MTEB's ``EncoderProtocol`` (``encode`` + ``similarity`` +
``similarity_pairwise`` + ``mteb_model_meta``), so ``mteb.evaluate(model, tasks)`` ranks with the
norm-aware score of :mod:`normscope.scoring` (queries are ``embeddings1``, documents
``embeddings2``; the norm factor applies to the documents). Its scores are exactly those of
normscope's own runs (:func:`~normscope.scoring.pair_dot` of the folded vectors), and
MTEB evaluates with pytrec_eval, whose tie order is normscope's
(:data:`~normscope.retrieval.search.TIE_RULE`), so ``mteb.evaluate`` and
:func:`~normscope.retrieval.run_retrieval` give the same nDCG@10 on the same data.

``mteb`` is optional (extra ``mteb``, supported range pinned in ``pyproject.toml``) and is imported
only when ``mteb_model_meta`` is read or :func:`evaluate_mteb` runs.
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from normscope.errors import InputError, ModelError
from normscope.scoring import (
    PARAM_NAMES,
    check_param,
    check_scorer,
    fold_documents,
    fold_queries,
    folded_scores,
    pair_dot,
)
from normscope.table import norms_look_normalised

__all__ = ["NormAwareMTEBModel", "evaluate_mteb", "mteb_name"]


def mteb_name(base: str, scorer: str, param: float | None) -> str:
    """MTEB model name of a wrapped model: ``normscope/<base>__<scorer>[-<param name>=<value>]``.

    It contains "/" (MTEB's ``organization/model`` rule), never equals the base model's own name,
    and encodes the scorer and its exact parameter (``repr`` of the float), so MTEB's result cache
    cannot hand one scorer's score to another.

    Examples
    --------
    >>> mteb_name("sentence-transformers/all-MiniLM-L6-v2", "inverse_norm", 0.05)
    'normscope/all-MiniLM-L6-v2__inverse_norm-alpha=0.05'
    """
    short = re.sub(r"[^A-Za-z0-9._-]+", "_", str(base).rstrip("/").split("/")[-1]) or "model"
    p = check_param(scorer, param)
    tail = scorer if p is None else f"{scorer}-{PARAM_NAMES[scorer]}={float(p)!r}"
    return f"normscope/{short}__{tail}"


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


def _numpy(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    return a[None, :] if a.ndim == 1 else a


class NormAwareMTEBModel:
    """An MTEB encoder: raw ``encode`` and a norm-aware ``similarity``.

    Parameters
    ----------
    encoder : normscope Encoder, or any object with ``encode(texts, batch_size=...)``
        returning raw vectors (a ``SentenceTransformer`` only once its ``Normalize`` module is
        removed; normscope encoders return raw vectors).
    scorer : {'cosine', 'dot', 'inverse_norm', 'power'}
    param : float or None
        ``alpha`` / ``beta``, e.g. fitted by :func:`normscope.retrieval.run_retrieval`.
    name : str, optional
        Base model name (default: the encoder's fingerprint name); the MTEB name is
        :func:`mteb_name` of it.

    Attributes
    ----------
    name : str
        The MTEB model name (:func:`mteb_name`).
    revision : str
        First 16 hex digits of the encoder fingerprint's key (weights revision, pooling, dropped
        modules, backend), or ``"unknown"``: safe as a path.
    """

    def __init__(self, encoder: Any, scorer: str = "inverse_norm", param: float | None = None, *, name: str | None = None):
        self.encoder = encoder
        self.scorer = check_scorer(scorer)
        self.param = check_param(scorer, param)
        fp = getattr(encoder, "fingerprint", None)
        self.base_name = name or (fp.name if fp is not None else type(encoder).__name__)
        self.name = mteb_name(self.base_name, self.scorer, self.param)
        self.revision = fp.key[:16] if fp is not None and hasattr(fp, "key") else "unknown"
        self._meta = None
        self._warned_normalised = False

    @property
    def mteb_model_meta(self):
        """MTEB's ``ModelMeta`` of this wrapped model (built on first use).

        Raises
        ------
        AttributeError
            mteb is not installed (so ``hasattr(model, "mteb_model_meta")`` is False, as protocol
            checks expect).
        """
        if self._meta is None:
            try:
                from mteb.models.model_meta import ModelMeta
            except ImportError:
                raise AttributeError("mteb_model_meta needs the optional extra 'mteb' (pip install 'normscope[mteb]')") from None
            dim = getattr(self.encoder, "dim", None)
            self._meta = ModelMeta.create_empty({
                "name": self.name, "revision": self.revision, "adapted_from": self.base_name,
                "embed_dim": int(dim) if isinstance(dim, (int, np.integer)) else None,
                "max_tokens": getattr(self.encoder, "max_seq_length", None), "framework": ["PyTorch"],
                "experiment_kwargs": {"scorer": self.scorer, PARAM_NAMES[self.scorer] or "param": self.param},
            })
        return self._meta

    def encode(self, inputs: Iterable | Sequence[str], *, batch_size: int = 32, show_progress_bar: bool = False,
               **kwargs) -> np.ndarray:
        """Raw vectors of the texts, ndarray (n, d) float32.

        ``inputs`` is a list of strings or an iterable of MTEB v2 batches ``{"text": [...]}``. Other
        keyword arguments (``task_metadata``, ``hf_split``, ``hf_subset``, ``prompt_type``) are
        accepted and ignored: queries and documents are encoded the same way. Warns once when the
        vectors are normalised (every norm equal): the norm-aware score then equals cosine.
        """
        texts = _flatten_inputs(inputs)
        accepted = inspect.signature(self.encoder.encode).parameters
        flag = next((f for f in ("progress", "show_progress_bar") if f in accepted), None)  # normscope / sentence-transformers
        extra = {flag: bool(show_progress_bar)} if flag else {}
        out = np.asarray(_numpy(self.encoder.encode(texts, batch_size=batch_size, **extra)), dtype=np.float32)
        if not self._warned_normalised and len(out) > 1 and norms_look_normalised(np.linalg.norm(out, axis=1)):
            self._warned_normalised = True
            warnings.warn(f"{self.base_name}: every vector has norm {float(np.linalg.norm(out[0])):.4g} (normalised, e.g. a "
                          "SentenceTransformer with its Normalize module): the norm-aware score equals cosine; use "
                          "normscope.load_encoder(...) for raw vectors", UserWarning, stacklevel=2)
        return out

    def similarity(self, embeddings1, embeddings2):
        """Norm-aware scores (n1, n2) as a float64 torch tensor; ``embeddings2`` are the documents."""
        import torch

        Qf = fold_queries(_numpy(embeddings1), self.scorer)
        Df = fold_documents(_numpy(embeddings2), self.scorer, self.param)
        return torch.from_numpy(folded_scores(Qf, Df))

    def similarity_pairwise(self, embeddings1, embeddings2):
        """Symmetric norm-aware score of each aligned pair, (n,) float64 torch tensor.

        MTEB's pair tasks (STS, pair classification) call this with two sentences that play the
        same role, so the score must not depend on their order: both sides are folded as documents,
        giving ``cos / ((1 + alpha ||a||)(1 + alpha ||b||))`` (inverse_norm), ``cos (||a|| ||b||)^beta``
        (power), the dot product or the cosine -- the symmetric scorers of
        :func:`normscope.similarity.pair_scores` (docs/similarity.md), equal to them up to float32
        folding.
        """
        import torch

        a = fold_documents(_numpy(embeddings1), self.scorer, self.param)
        b = fold_documents(_numpy(embeddings2), self.scorer, self.param)
        if a.shape != b.shape:
            raise InputError(f"pairwise scores need equal shapes, got {a.shape} and {b.shape}")
        return torch.from_numpy(pair_dot(a, b))


def evaluate_mteb(model: NormAwareMTEBModel, tasks, *, output_folder: str | None = None, cache=None,
                  show_progress_bar: bool = True, **kwargs):
    """Run MTEB tasks with ``model`` through ``mteb.evaluate`` (mteb 2.x; extra ``mteb``).

    Parameters
    ----------
    model : NormAwareMTEBModel
    tasks : str, AbsTask, or a sequence of them
        MTEB task names (e.g. ``["SciFact"]``; their data is downloaded by mteb) or task objects
        (e.g. a local ``AbsTaskRetrieval`` subclass).
    output_folder : str, keyword-only, optional
        Where results are written: mapped to ``cache=mteb.ResultCache(cache_path=output_folder)``
        (mteb 2 has no ``output_folder``).
    cache : mteb.ResultCache or None, keyword-only
        Passed on (not together with ``output_folder``); mteb's default is ``~/.cache/mteb``.
    show_progress_bar : bool, keyword-only
        mteb's task bar and normscope's embedding bar.
    **kwargs
        Passed to ``mteb.evaluate`` (``encode_kwargs``, ``overwrite_strategy``, ``prediction_folder`` ...).

    Returns
    -------
    mteb's ``ModelResult``.

    Raises
    ------
    ModelError
        mteb not installed (names the extra).
    InputError
        ``output_folder`` together with ``cache``.
    """
    try:
        import mteb
    except ImportError:
        raise ModelError("MTEB evaluation needs the optional extra 'mteb' (pip install 'normscope[mteb]')") from None
    if output_folder is not None and cache is not None:
        raise InputError("give output_folder or cache, not both (output_folder becomes mteb.ResultCache(output_folder))")
    if output_folder is not None:
        kwargs["cache"] = mteb.ResultCache(cache_path=output_folder)
    elif cache is not None:
        kwargs["cache"] = cache
    items = [tasks] if isinstance(tasks, (str, mteb.AbsTask)) else list(tasks)
    names = [t for t in items if isinstance(t, str)]
    objs = list(mteb.get_tasks(tasks=names)) if names else []
    objs += [t for t in items if not isinstance(t, str)]
    enc = dict(kwargs.pop("encode_kwargs", None) or {})
    enc.setdefault("show_progress_bar", bool(show_progress_bar))
    return mteb.evaluate(model, objs, encode_kwargs=enc, show_progress_bar=show_progress_bar, **kwargs)
