"""The typed summary of ``normscope embed`` (what ``embed_input`` returns and ``--json`` writes)."""

from __future__ import annotations

import dataclasses

from normscope.values import Record

__all__ = ["EmbedSummary"]


@dataclasses.dataclass(frozen=True)
class EmbedSummary(Record):
    """The norm summary of one ``normscope embed`` run (local or Ray engine), read by attribute.

    Attributes
    ----------
    n, dim : int
        Items embedded (junk left out) and the vector dimension.
    model : str
    fingerprint : dict
        :meth:`normscope.table.ModelFingerprint.to_dict`.
    norm_mean, norm_std, norm_min, norm_max : float
        Of the raw norms ||z|| (``norm_std`` with ddof = 1).
    n_truncated : int or None
        Items cut at the model's maximum sequence length.
    junk : dict
        ``count``, ``ids``, ``reasons`` of the items left out (:meth:`normscope.inputs.Junk.to_dict`).
    normalised : bool or None
        Every norm is the same (the model normalises its outputs).
    precision : str
    norm_rel_error_vs_fp32 : dict or None
        ``median``, ``max``, ``n_sample`` of the bf16 norm error on a sample of the items.
    input, cache, warnings
        What was embedded, whether the embedding cache was used, sentences to print.
    engine, workers, threads_per_worker, norm_quantiles, norm_quantile_rel_error, out
        The Ray engine's additions (absent on the local engine).
    """

    n: int | None = None
    dim: int | None = None
    model: str | None = None
    fingerprint: dict | None = None
    norm_mean: float | None = None
    norm_std: float | None = None
    norm_min: float | None = None
    norm_max: float | None = None
    n_truncated: int | None = None
    junk: dict | None = None
    normalised: bool | None = None
    precision: str | None = None
    norm_rel_error_vs_fp32: dict | None = None
    input: str | None = None
    cache: bool | None = None
    engine: str | None = None
    workers: int | None = None
    threads_per_worker: int | None = None
    norm_quantiles: dict | None = None
    norm_quantile_rel_error: float | None = None
    out: str | None = None
    warnings: list | None = None
