"""What a reduced-precision forward pass costs: the norm error against fp32 on the run's own items.

``load_encoder(name, precision="bf16")`` runs the matrix products of the forward pass in bfloat16
(:meth:`normscope.encoders.base.TorchEncoder.autocast`). The norm ||z|| is what normscope studies,
so every bf16 run measures, on a seeded sample of its own items, how far its norms are from the
same model's fp32 norms (:func:`norm_error_vs_fp32`); ``embed_texts`` stores the result in
``EmbeddingTable.norm_rel_error_vs_fp32`` and the commands write it to their JSON.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope.encoders.cache import encode_cached

__all__ = ["norm_error_vs_fp32", "PRECISION_SAMPLE"]

#: Items of a run re-embedded in fp32 to measure a reduced precision's norm error.
PRECISION_SAMPLE = 64


def norm_error_vs_fp32(
    encoder,
    texts: Sequence[str],
    vectors: np.ndarray,
    *,
    sample: int = PRECISION_SAMPLE,
    seed: int = 0,
    cache: bool = True,
) -> dict | None:
    """Relative error of the norms of ``vectors`` against the same model in fp32, on a sample.

    ``rel_i = | ||z_i|| - ||z_i^fp32|| | / ||z_i^fp32||`` for a seeded random sample of
    ``min(sample, n)`` rows (``np.random.default_rng(seed).choice``, sorted), the fp32 vectors
    coming from ``encoder.at_precision("fp32")`` (same weights) through the embedding cache.

    Parameters
    ----------
    encoder : Encoder
        The encoder that produced ``vectors``; nothing is measured when its precision is fp32.
    texts : sequence of str, length n
        The items of ``vectors``, in row order.
    vectors : ndarray of shape (n, d), float32
        Raw vectors produced by ``encoder``.
    sample : int, keyword-only
        Items re-embedded in fp32 (0: measure nothing).
    seed : int, keyword-only
    cache : bool, keyword-only
        Read and fill the fp32 embedding cache for the sample.

    Returns
    -------
    dict or None
        ``{"median", "max"}`` (dimensionless relative errors), ``"cosine_min"`` (smallest cosine
        between a reduced-precision vector and its fp32 vector), ``"n_sample"``, ``"seed"``; None
        in fp32, with ``sample == 0`` or no items.
    """
    precision = getattr(encoder, "precision", "fp32")
    n = len(texts)
    if precision == "fp32" or sample <= 0 or n == 0:
        return None
    idx = np.sort(np.random.default_rng(seed).choice(n, size=min(sample, n), replace=False))
    low = np.asarray(vectors, dtype=np.float64)[idx]
    ref = encode_cached(encoder.at_precision("fp32"), [texts[i] for i in idx], cache=cache).astype(np.float64)
    r_low = np.linalg.norm(low, axis=1)
    r_ref = np.linalg.norm(ref, axis=1)
    rel = np.abs(r_low - r_ref) / np.maximum(r_ref, 1e-30)
    cos = np.sum(low * ref, axis=1) / np.maximum(r_low * r_ref, 1e-30)
    return {
        "median": float(np.median(rel)),
        "max": float(np.max(rel)),
        "cosine_min": float(np.min(cos)),
        "n_sample": int(idx.size),
        "seed": int(seed),
    }
