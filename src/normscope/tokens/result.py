"""The typed result of ``normscope tokens`` (:func:`normscope.tokens.run_tokens`)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from normscope.results import StageResult, summary_field
from normscope.values import Correlation, Interval, Record

__all__ = ["TokensResult", "FrequencyCorrelation", "MedianContrast"]


@dataclasses.dataclass(frozen=True)
class FrequencyCorrelation(Correlation):
    """Row norm vs Zipf frequency in one group of tokens, with ``n_no_frequency`` tokens of the group left out for want
    of a frequency."""

    n_no_frequency: int | None = None


@dataclasses.dataclass(frozen=True)
class MedianContrast(Record):
    """Never-used vs used rows: difference and ratio of the median row norms with their bootstrap CIs."""

    median_unused: float | None = None
    median_used: float | None = None
    difference: float | None = None
    ci: Interval | None = None
    ratio: float | None = None
    ratio_ci: Interval | None = None
    n_unused: int | None = None
    n_used: int | None = None
    method: str | None = None


@dataclasses.dataclass
class TokensResult(StageResult):
    """Row norms of a model's input embedding table against token frequency and use.

    :meth:`to_dict` is the ``--json`` output of ``normscope tokens``; ``items`` (one row per table row:
    ``token_id, token, kind, norm, zipf, used``) is written by ``-o``.

    Attributes
    ----------
    model, fingerprint
        The model and its :class:`~normscope.table.ModelFingerprint` dict.
    source : str
        Where the table was read (``BertModel.get_input_embeddings()``, the GloVe table).
    n_rows, dim : int
        Shape of the table.
    counts : dict
        Rows per kind (``word``, ``subword``, ``special``, ``unused``).
    norm_median : dict
        Median row norm per kind (NaN -> None for an empty kind).
    frequency : dict
        Per group ``word``, ``subword`` and ``used`` (word + subword): the Spearman/Pearson
        correlation of norm and Zipf frequency (:meth:`normscope.stats.CorrelationResult.to_dict`:
        bootstrap CI over tokens, permutation p) on the tokens wordfreq lists, with ``n_no_frequency``
        (tokens of the group left out for want of a frequency); None when fewer than 10 remain.
    unused_vs_used : dict or None
        ``median_unused``, ``median_used``, ``difference`` (unused minus used) with ``ci``, ``ratio``
        (unused / used) with ``ratio_ci``, ``n_unused``, ``n_used``, ``method``; None with fewer than
        10 unused rows.
    init_norm : float or None
        ``initializer_range * sqrt(d)``: the expected norm of a row at initialisation (the config's
        normal init), a reference for the never-used rows; None when the config has none.
    """

    model: str = summary_field("model")
    fingerprint: dict = summary_field("fingerprint", default_factory=dict)
    source: str = summary_field("embedding table", default="")
    n_rows: int = summary_field("rows (vocabulary entries)", unit="rows", default=0)
    dim: int = summary_field("dimension d", default=0)
    counts: dict[str, int] = summary_field("rows per kind", default_factory=dict)
    norm_median: dict[str, float | None] = summary_field("median row norm per kind", unit="||E[t]||", default_factory=dict)
    frequency: dict[str, FrequencyCorrelation | None] = summary_field("Spearman rho, row norm vs Zipf frequency",
                                                                      default_factory=dict)
    unused_vs_used: MedianContrast | None = summary_field("never-used rows vs used rows", default=None)
    init_norm: float | None = summary_field("expected row norm at initialisation", unit="||E[t]||", default=None)
    frequency_source: str = summary_field("frequency", default="")
    n_boot: int = summary_field("bootstrap resamples", default=0)
    n_perm: int = summary_field("permutations", default=0)
    seed: int = summary_field("seed", default=0)
    notes: list[str] = summary_field("notes", default_factory=list)
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame, repr=False)
