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
- :func:`calibrate_semantic_search` and :func:`calibrate_index_search` apply a calibrator file written
  by ``normscope calibrate`` (:mod:`normscope.extensions.calibrator`) to the results of
  sentence-transformers ``util.semantic_search`` and of ``normscope index search``: P(relevant) per
  query, whether to answer, which documents to keep; a file fitted for another model fingerprint is
  refused in one line.

The scores are those of :mod:`normscope.scoring`, computed in torch (float32, or
the input dtype when floating) for use inside sentence-transformers pipelines.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from normscope._format import noun
from normscope.errors import InputError
from normscope.extensions.calibrator import Calibrator, apply_to_run, load_calibrator
from normscope.retrieval.mteb_model import NormAwareMTEBModel, evaluate_mteb  # re-exported (the MTEB wrapper lives there)
from normscope.retrieval.qpp import QPP_SPECS, corpus_scores
from normscope.scoring import check_param, check_scorer

__all__ = [
    "asymmetric_norm_similarity",
    "asymmetric_norm_similarity_pairwise",
    "norm_aware_similarity",
    "norm_aware_similarity_pairwise",
    "NormAwareMTEBModel",
    "evaluate_mteb",
    "calibrate_semantic_search",
    "calibrate_index_search",
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


def _calibrator(cal):
    return cal if isinstance(cal, Calibrator) else load_calibrator(cal)


def _np(x, what):
    if x is None:
        return None
    if hasattr(x, "detach"):
        x = x.detach().cpu().float().numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2:
        raise InputError(f"{what} must be a (n, d) matrix, got shape {a.shape}")
    return a


def calibrate_semantic_search(calibrator, hits, *, model, query_embeddings=None, corpus_embeddings=None,
                              query_texts=None, min_prob: float | None = None) -> list[dict]:
    """Apply a calibrator to ``sentence_transformers.util.semantic_search`` results.

    Parameters
    ----------
    calibrator : str, Path or Calibrator
        A file written by ``normscope calibrate --calibrator`` (or the loaded object).
    hits : list of list of dict
        ``semantic_search``'s output: per query, ``{"corpus_id": int, "score": float}`` sorted by score, computed
        with its default ``score_function=cos_sim`` (the calibrator is fitted on cosines), ``top_k`` >= the
        calibrator's ``depth`` (2 for the default signals; 100 for nqc, smv, sigma_k, sigma_max).
    model : Encoder, ModelFingerprint or dict, keyword-only
        The model that made the embeddings, e.g. ``normscope.load_encoder(name)`` (whose ``encode`` gives the raw,
        un-normalised vectors the norm signals need); another model's calibrator is refused.
    query_embeddings : tensor or array of shape (n_queries, d), keyword-only, optional
        Raw query vectors (needed for query_norm, nqc, wig, smv).
    corpus_embeddings : tensor or array of shape (n_docs, d), keyword-only, optional
        Raw corpus vectors, rows = ``corpus_id`` (needed for top_doc_norm, doc_norm_spread, nqc, wig, smv).
    query_texts : sequence of str, keyword-only, optional
        Needed for query_length.
    min_prob : float in [0, 1], keyword-only, optional
        Abstain: ``answer`` is ``P >= min_prob`` (instead of the calibrator's Learn-then-Test threshold) and a query
        not answered gets ``hits = []`` ("return nothing when nothing is likely relevant"). Coverage is the mean of
        ``answer`` over the queries. The threshold carries no guarantee unless it is the calibrator's own.

    Returns
    -------
    list of dict
        Per query: ``p_relevant`` (float), ``answer`` (bool, P >= the Learn-then-Test threshold, or >= ``min_prob``;
        False for every query when the calibrator has none and no ``min_prob`` is given: abstain), ``hits``: the
        query's hits, each with ``keep`` added (score >= the document threshold, within its top k; None without
        one); empty when ``min_prob`` is given and the query is not answered.

    Raises
    ------
    InputError
        Another model's calibrator, a missing input, too few hits per query, ``min_prob`` outside [0, 1].
    """
    if min_prob is not None and not (0.0 <= float(min_prob) <= 1.0):
        raise InputError(f"min_prob must be in [0, 1], got {min_prob}")
    cal = _calibrator(calibrator)
    Q, C = _np(query_embeddings, "query_embeddings"), _np(corpus_embeddings, "corpus_embeddings")
    qids = [str(i) for i in range(len(hits))]
    run = {q: {str(h["corpus_id"]): float(h["score"]) for h in hs} for q, hs in zip(qids, hits)}
    if Q is not None and len(Q) != len(hits):
        raise InputError(f"{len(hits)} hit lists but {len(Q)} query embeddings")
    kw = {}
    if Q is not None:
        kw["query_norms"] = np.linalg.norm(Q, axis=1)
    if C is not None:
        kw.update(doc_ids=[str(i) for i in range(len(C))], doc_norms=np.linalg.norm(C, axis=1), n_docs=len(C))
        if Q is not None:
            kw["corpus_score"] = corpus_scores(Q, C)
    frame = apply_to_run(cal, run, fingerprint=model, query_ids=qids, query_texts=query_texts, **kw)
    kd = cal.thresholds.get("keep_documents") or {}
    t, k = kd.get("threshold"), kd.get("k", 10)
    out = []
    for i, hs in enumerate(hits):
        p = float(frame["p_relevant"].iloc[i])
        answer = bool(frame["answer"].iloc[i]) if min_prob is None else bool(p >= float(min_prob))
        kept = [{**h, "keep": None if t is None else bool(r < k and h["score"] >= t)} for r, h in enumerate(hs)]
        out.append({"p_relevant": p, "answer": answer, "hits": kept if (answer or min_prob is None) else []})
    return out


def calibrate_index_search(calibrator, run, *, index_dir, query_vectors=None, query_texts=None):
    """Apply a calibrator to the run of ``normscope index search`` (its ``-o`` parquet, or that table).

    The index must be a cosine index of the calibrator's model (its ``meta.json`` fingerprint and scorer).
    Index output carries scores only, so the signals available are those of the ranked scores
    (top1_score, margin, sigma_k, sigma_max), query_norm (with ``query_vectors``) and query_length
    (with ``query_texts``); signals that need document norms or the corpus score are refused by name.

    Parameters
    ----------
    calibrator : str, Path or Calibrator
    run : str, Path or pandas.DataFrame
        Columns ``query_id, rank, doc_id, score``.
    index_dir : str or Path, keyword-only
        The index directory (``normscope index build -o``).
    query_vectors : array-like of shape (n_queries, d), keyword-only, optional
        Raw query vectors in the order of the run's first appearance of each query id.
    query_texts : sequence of str, keyword-only, optional
        In the same order.

    Returns
    -------
    pandas.DataFrame
        :func:`normscope.extensions.calibrator.apply_to_run` output (``query_id``, signals, ``p_relevant``,
        ``answer``, ``kept``).

    Raises
    ------
    InputError
        Another model's calibrator, an index of another scorer, a signal index output cannot give, bad tables.
    """
    import json
    from pathlib import Path

    import pandas as pd

    cal = _calibrator(calibrator)
    meta_path = Path(index_dir) / "meta.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        raise InputError(f"{index_dir} is not a normscope index (no readable meta.json)") from None
    if not meta.get("fingerprint"):
        raise InputError(f"{index_dir} records no model (built from bare vectors): its calibrator cannot be checked")
    if meta.get("scorer") != cal.scorer:
        raise InputError(f"the index scores with {meta.get('scorer')}, the calibrator was fitted on {cal.scorer} scores")
    no = [s for s in cal.signals if {"doc_norms", "corpus_score", "doc_hubness"} & set(QPP_SPECS[s].needs)]
    if no:
        raise InputError(f"{noun(len(no), 'signal')} {', '.join(no)} {noun(len(no), 'needs', 'need')} document norms, hubness or the corpus score, which index search "
                         "output does not carry; fit a calibrator on other signals")
    df = pd.read_parquet(run) if not isinstance(run, pd.DataFrame) else run
    missing = {"query_id", "rank", "doc_id", "score"} - set(df.columns)
    if missing:
        raise InputError(f"the run table lacks {noun(len(missing), 'column')} {', '.join(sorted(missing))}")
    qids = list(dict.fromkeys(df["query_id"].astype(str)))
    df = df.sort_values(["query_id", "rank"], kind="stable")
    runs = {str(q): dict(zip(g["doc_id"].astype(str), g["score"].astype(float))) for q, g in df.groupby("query_id", sort=False)}
    Q = _np(query_vectors, "query_vectors")
    kw = {"query_norms": np.linalg.norm(Q, axis=1)} if Q is not None else {}
    return apply_to_run(cal, runs, fingerprint=meta["fingerprint"], query_ids=qids, query_texts=query_texts, **kw)
