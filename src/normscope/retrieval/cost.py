"""What norm-aware scoring costs next to the model's own inference, on the same items.

The paper says norm-aware scoring costs about 1/1000 of the model's inference. What it adds to
cosine scoring, per item, is the item's norm ``||z||`` and the discount of its candidates' cosine
scores, ``cos / (1 + alpha ||d||)`` with the candidates' norms known (or folded into the
document vectors once, :mod:`normscope.scoring`). :func:`norm_scoring_cost` times that
against encoding the same items with the encoder (forward passes only, no cache), in the same
process, and reports the ratio per repeat.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

import numpy as np

from normscope.values import Interval, Record

__all__ = ["norm_scoring_cost", "InferenceCost"]


@dataclasses.dataclass(frozen=True)
class InferenceCost(Record):
    """What :func:`norm_scoring_cost` measured (JSON: the object the report stores as ``inference_cost``).

    Attributes
    ----------
    ratio : float
        Median over repeats of (seconds of norm-aware scoring) / (seconds of encoding), the same items.
    range : Interval
        [min, max] of the per-repeat ratios (timing noise, not a sampling CI).
    ratios : list of float
        The per-repeat ratios.
    encoder_s_per_item, norm_s_per_item : float
        Medians over repeats, seconds per item.
    n_items, k, repeats, threads : int
        Items timed, candidates per item, timed repeats, torch intra-op threads.
    model, device : str
        The encoder's name and device.
    """

    ratio: float | None = None
    range: Interval | None = None
    ratios: list[float] | None = None
    encoder_s_per_item: float | None = None
    norm_s_per_item: float | None = None
    n_items: int | None = None
    k: int | None = None
    repeats: int | None = None
    threads: int | None = None
    model: str | None = None
    device: str | None = None


def _best_per_call(fn, min_total: float = 0.2) -> float:
    """Seconds of one call of ``fn``: loops of doubling length until they take ``min_total`` seconds (as ``timeit``)."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_total or n >= 1 << 20:
            return dt / n
        n *= 2


def norm_scoring_cost(encoder, texts: Sequence[str], cand_scores, cand_norms, *, alpha: float, repeats: int = 5,
                      batch_size: int = 64) -> InferenceCost:
    """Seconds per item of norm-aware scoring and of the encoder, on the same items, and their ratio.

    Parameters
    ----------
    encoder : Encoder
        The model; ``encoder.encode(texts)`` is timed (one untimed warm-up call first).
    texts : sequence of str, length n
        The items (e.g. evaluation queries).
    cand_scores, cand_norms : array-like of shape (n, k)
        Each item's k candidate cosine scores and the candidates' norms ``||d||``.
    alpha : float
        The ``inverse_norm`` parameter.
    repeats : int, keyword-only
        Timed repeats of both (the ratio of each repeat is reported; their median is the figure).
    batch_size : int, keyword-only

    Returns
    -------
    InferenceCost
        ``ratio`` (median over repeats of norm-aware seconds / encoder seconds), ``range`` ([min, max]
        of the per-repeat ratios), ``ratios``, ``encoder_s_per_item``, ``norm_s_per_item`` (medians),
        ``n_items``, ``k``, ``repeats``, ``threads`` (torch intra-op threads), ``model``, ``device``;
        JSON (``to_json()``) the object with those keys in that order.

    Raises
    ------
    ValueError
        Empty ``texts`` or candidate arrays whose shape does not match.
    """
    import torch

    scores = np.ascontiguousarray(cand_scores, dtype=np.float32)
    dn = np.ascontiguousarray(cand_norms, dtype=np.float32)
    n = len(texts)
    if n == 0 or scores.shape != dn.shape or scores.shape[0] != n:
        raise ValueError(f"{n} items but candidate arrays of shapes {scores.shape} and {dn.shape}")
    texts = list(texts)
    z = encoder.encode(texts, batch_size=batch_size)  # warm-up (weights paged in, kernels chosen); untimed
    a = np.float32(alpha)

    def norm_aware():
        r = np.linalg.norm(z, axis=1)  # each item's own norm (a confidence signal, free)
        return r, scores / (1.0 + a * dn)  # the norm-aware scores of its candidates

    enc_t, norm_t = [], []
    for _ in range(int(repeats)):
        t0 = time.perf_counter()
        encoder.encode(texts, batch_size=batch_size)
        enc_t.append(time.perf_counter() - t0)
        norm_t.append(_best_per_call(norm_aware))
    ratios = [b / e for b, e in zip(norm_t, enc_t)]
    fp = getattr(encoder, "fingerprint", None)
    return InferenceCost(ratio=float(np.median(ratios)), range=Interval(float(min(ratios)), float(max(ratios))),
                         ratios=[float(x) for x in ratios], encoder_s_per_item=float(np.median(enc_t)) / n,
                         norm_s_per_item=float(np.median(norm_t)) / n, n_items=n, k=int(scores.shape[1]),
                         repeats=int(repeats), threads=torch.get_num_threads(),
                         model=getattr(fp, "name", type(encoder).__name__),
                         device=str(getattr(encoder, "device", "cpu")))
