"""The typed result of ``normscope correlate`` (:func:`normscope.signals.run_correlate`)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from normscope.results import StageResult, summary_field
from normscope.values import Correlation, Duplicates, Interval, JunkSummary, NormError, Record

if TYPE_CHECKING:
    import pandas as pd


def _empty_items() -> pd.DataFrame:
    """An empty per-item table (pandas imported when a result is made, not when the CLI starts)."""
    import pandas as pd

    return pd.DataFrame()


__all__ = ["CorrelateResult", "PartialCorrelation", "NormLength", "Stratum", "LengthMatched", "MatchedShare", "LENGTH_UNIT",
           "ShuffleStats", "ShuffleSummary", "AbstentionStats", "AbstentionSummary", "HierarchySummary", "PoolingTrend",
           "PoolingTrends", "FeverousTime", "KruskalWallis", "FeverousStats", "FeverousSummary"]

#: What the length control and rho(norm, length) count.
LENGTH_UNIT = "tokens the model saw (after truncation at its maximum sequence length, special tokens included)"


@dataclasses.dataclass(frozen=True)
class PartialCorrelation(Record):
    """A partial Spearman correlation (:meth:`normscope.stats.PartialResult.to_dict`): ``rho`` controlling for
    ``controls``, its ``ci`` and permutation ``p_value`` over ``n`` items."""

    rho: float | None = None
    ci: Interval | None = None
    p_value: float | None = None
    n: int | None = None
    n_dropped: int | None = None
    n_controls: int | None = None
    ci_level: float | None = None
    ci_method: str | None = None
    p_method: str | None = None
    n_boot: int | None = None
    n_perm: int | None = None
    controls: list | None = None


@dataclasses.dataclass(frozen=True)
class NormLength(Record):
    """Spearman rho(norm, length) over the valid items; ``length`` says what was counted."""

    spearman: float | None = None
    spearman_ci: Interval | None = None
    n: int | None = None
    length: str | None = None


@dataclasses.dataclass(frozen=True)
class MatchedShare(Record):
    """Disjoint equal-length pairs (:func:`normscope.stats_designs.matched_concordance`): the share in which
    the item with the larger covariate has the larger norm, its Wilson ``ci`` and sign-test ``p``, and
    ``r_rb`` = 2 share - 1 with ``r_rb_ci``."""

    share: float | None = None
    ci: Interval | None = None
    p: float | None = None
    r_rb: float | None = None
    r_rb_ci: Interval | None = None
    n_pairs: int | None = None
    n_concordant: int | None = None
    n_discordant: int | None = None
    n_tied_x: int | None = None
    n_tied_y: int | None = None
    n_missing: int | None = None
    n_unmatched: int | None = None
    ci_level: float | None = None


@dataclasses.dataclass(frozen=True)
class LengthMatched(Record):
    """The length-matched figure (:func:`normscope.stats_designs.within_length_spearman`): partial Spearman
    ``rho`` of norm and covariate within strata of equal token count (and source), with ``controls``
    besides length; ``pairs``: the equal-length pairs' share (:class:`MatchedShare`); ``length`` says
    what was counted."""

    rho: float | None = None
    ci: Interval | None = None
    p_value: float | None = None
    n: int | None = None
    n_unmatched: int | None = None
    n_strata: int | None = None
    n_dropped: int | None = None
    controls: list | None = None
    ci_level: float | None = None
    ci_method: str | None = None
    p_method: str | None = None
    n_boot: int | None = None
    n_perm: int | None = None
    reason: str | None = None
    length: str | None = None
    pairs: MatchedShare | None = None
    ci_unit: str | None = None


@dataclasses.dataclass(frozen=True)
class Stratum(Record):
    """The correlations within one source of a pooled item set (``strata[i]``)."""

    name: str | None = None
    n: int | None = None
    spearman: float | None = None
    spearman_ci: Interval | None = None
    p_value: float | None = None
    partial_spearman: PartialCorrelation | None = None
    norm_length_spearman: float | None = None
    mean_length: float | None = None
    mean_covariate: float | None = None
    mean_norm: float | None = None


@dataclasses.dataclass
class CorrelateResult(StageResult):
    """Raw norm vs a semantic covariate: pooled and per-source correlations, controls, confounds.

    :meth:`to_dict` is the ``--json`` output of ``normscope correlate``; ``items`` is the per-item
    table written by ``-o`` (one row per embedded item, in input order, keyed by ``id``).

    Attributes
    ----------
    spearman, spearman_ci, pearson, pearson_ci, p_value, pearson_p
        Pooled over all valid items (:func:`normscope.stats.correlation`). With ``strata`` the
        pooled figure mixes sources; the controlled figure is ``partial_spearman``.
    partial_spearman : dict or None
        :meth:`normscope.stats.PartialResult.to_dict`. With strata: the source is a control and
        the CI and p-value resample and permute within sources
        (:func:`normscope.stats_designs.stratified_partial_spearman`).
    controls : list of str
        Controls actually partialled out, the source control (named by ``by``) last when pooled.
    strata : list of dict or None
        One row per source: ``name``, ``n``, ``spearman``, ``spearman_ci``, ``p_value``,
        ``partial_spearman`` (controls within the source), ``norm_length_spearman``,
        ``mean_length``, ``mean_covariate``, ``mean_norm``.
    norm_length : dict or None
        Spearman rho(norm, length) with CI and ``n`` over the same valid items: the first confound
        of a norm analysis; ``length`` says what was counted (:data:`LENGTH_UNIT` or words).
    length_matched : dict or None
        The deciding figure of the signal's claim row: partial Spearman rho(norm, covariate) **within
        strata of equal token count** (and source), controls besides length partialled
        (:func:`normscope.stats_designs.within_length_spearman`), with the equal-length pairs' share
        beside it (``pairs``). No shape of the length effect is assumed, unlike the length control of
        ``partial_spearman``.
    n_truncated : int or None
        Items cut at the model's maximum sequence length before embedding.
    junk : dict
        Items left out as junk (:meth:`normscope.inputs.Junk.to_dict`).
    duplicates : dict
        Exact duplicate items (same text, within a source with strata): ``count`` left out (0 with
        ``kept``), ``groups``, ``ids``, ``kept_ids``, ``kept`` (True: ``--keep-duplicates``).
    items : pandas.DataFrame
        ``id``, ``item``, ``norm`` (float64, ||z||), ``covariate``, ``tokens`` (seen by the model),
        ``stratum`` (with strata), ``control_<name>`` and signal extras.
    """

    signal: str = summary_field("signal")
    covariate: str = summary_field("covariate")
    model: str = summary_field("model")
    dataset: str = summary_field("items")
    n_items: int = summary_field("items given", unit="items")
    n: int = summary_field("valid items", unit="items")
    n_missing: int = summary_field("items without a covariate value", unit="items")
    missing_examples: list[str] = summary_field("examples of items without a value", default_factory=list)
    spearman: float | None = summary_field("Spearman \u03c1", default=None)
    spearman_ci: Interval | None = summary_field("95% CI", default=None)
    pearson: float | None = summary_field("Pearson r", default=None)
    pearson_ci: Interval | None = summary_field("95% CI", default=None)
    p_value: float | None = summary_field("p (Spearman, permutation)", default=None)
    pearson_p: float | None = summary_field("p (Pearson, permutation)", default=None)
    partial_spearman: PartialCorrelation | None = summary_field("partial Spearman \u03c1", default=None)
    controls: list[str] = summary_field("controls partialled out", default_factory=list)
    controls_dropped: list[str] = summary_field("controls constant over the items (not controlled)", default_factory=list)
    partial_reason: str | None = summary_field("why no partial correlation", default=None)
    by: str | None = summary_field("strata column", default=None)
    strata: list[Stratum] | None = summary_field("per-source correlations", default=None)
    norm_length: NormLength | None = summary_field("Spearman \u03c1(norm, length)", default=None)
    length_matched: LengthMatched | None = summary_field("length-matched partial Spearman \u03c1", default=None)
    n_truncated: int | None = summary_field("items truncated at the model's maximum length", unit="items", default=None)
    junk: JunkSummary = summary_field("junk items left out", default_factory=dict)
    duplicates: Duplicates = summary_field("exact duplicate items", default_factory=dict)
    precision: str = summary_field("precision of the forward passes", default="fp32")
    norm_rel_error_vs_fp32: NormError | None = summary_field("relative norm error vs fp32 (sample)", default=None)
    ci_level: float = summary_field("confidence level", default=0.95)
    ci_method: str = summary_field("CI method", default="percentile bootstrap")
    p_method: str = summary_field("p-value method", default="")
    n_boot: int = summary_field("bootstrap resamples", default=0)
    n_perm: int = summary_field("permutations", default=0)
    seed: int = summary_field("seed", default=0)
    norm_mean: float | None = summary_field("mean norm", unit="||z||", default=None)
    norm_sd: float | None = summary_field("sd of the norm", unit="||z||", default=None)
    measures: dict[str, Correlation] | None = summary_field("Spearman \u03c1 per WordNet measure", default=None)
    entropy_unit: str | None = summary_field("entropy unit", default=None)
    pair_format: str | None = summary_field("pair format", default=None)
    notes: list[str] = summary_field("notes", default_factory=list)
    # a pandas.DataFrame; annotated Any so that the field types resolve without importing pandas (Record.field_types)
    items: Any = dataclasses.field(default_factory=_empty_items, repr=False)


# -- the other signal designs' summaries, as their claims builders read them (normscope.signals.claims) ----------
# Each is the ``to_dict()`` of its design's result (the ``--json`` of ``normscope correlate --signal ...``) read as a
# Record: attributes for the builder, the same JSON text when written again.


@dataclasses.dataclass(frozen=True)
class ShuffleStats(Record):
    """:func:`normscope.signals.shuffle.paired_shuffle_stats` over the pairs (of one source: ``name``): the median
    relative norm change ``||z(shuffled)|| / ||z(text)|| - 1`` with its bootstrap ``median_ci`` over pairs, the share
    of untied pairs whose shuffled copy is smaller with its Wilson ``share_ci``, and the sign test's ``sign_p``."""

    name: str | None = None
    n_pairs: int | None = None
    n_ties: int | None = None
    n_smaller: int | None = None
    n_larger: int | None = None
    share_smaller: float | None = None
    share_ci: Interval | None = None
    sign_p: float | None = None
    median_rel_change: float | None = None
    median_ci: Interval | None = None
    mean_rel_change: float | None = None


@dataclasses.dataclass(frozen=True)
class ShuffleSummary(Record):
    """:meth:`normscope.signals.shuffle.ShuffleResult.to_dict`: the counts, the ``pooled`` figures and one
    :class:`ShuffleStats` per source (``strata``, sources named by ``by``)."""

    signal: str | None = None
    model: str | None = None
    dataset: str | None = None
    n_items: int | None = None
    n_pairs: int | None = None
    n_token_mismatch: int | None = None
    pooled: ShuffleStats | None = None
    strata: list[ShuffleStats] | None = None
    by: str | None = None


@dataclasses.dataclass(frozen=True)
class AbstentionStats(Record):
    """:func:`normscope.signals.abstention.abstention_stats`: answerable vs unanswerable items' norms, pooled
    (``auroc_norm``; the token count's ``auroc_tokens``), length-partial (``partial_rho``) and within equal-length pairs
    (``matched_share`` with its Wilson ``matched_ci`` and sign-test ``matched_p``; ``r_rb`` = 2 share - 1)."""

    auroc_norm: float | None = None
    auroc_norm_p: float | None = None
    n_pairs: int | None = None
    n_ties: int | None = None
    n_unmatched_a: int | None = None
    n_unmatched_b: int | None = None
    matched_share: float | None = None
    matched_ci: Interval | None = None
    matched_p: float | None = None
    auroc_tokens: float | None = None
    partial_rho: float | None = None
    partial_ci: Interval | None = None
    r_rb: float | None = None
    r_rb_ci: Interval | None = None
    partial_n: int | None = None
    n_answerable: int | None = None
    n_unanswerable: int | None = None


@dataclasses.dataclass(frozen=True)
class AbstentionSummary(Record):
    """:meth:`normscope.signals.abstention.AbstentionResult.to_dict` (``signal``: ``treecut`` or ``ruletaker``)."""

    signal: str | None = None
    model: str | None = None
    dataset: str | None = None
    stats: AbstentionStats | None = None


@dataclasses.dataclass(frozen=True)
class HierarchySummary(Record):
    """:meth:`normscope.signals.hierarchy.HierarchyResult.to_dict`: rho(level, norm) pooled (``pooled``: ``spearman``,
    ``spearman_ci``, ``n``), partial on tokens (``partial``: ``rho``, ``ci``, ``n``) and within hierarchy at equal
    length (``length_matched``)."""

    signal: str | None = None
    model: str | None = None
    dataset: str | None = None
    n_clusters: int | None = None
    pooled: Correlation | None = None
    partial: PartialCorrelation | None = None
    length_matched: LengthMatched | None = None


@dataclasses.dataclass(frozen=True)
class PoolingTrend(Record):
    """Spearman rho(norm, Zipf frequency) under one pooling, its CI (words resampled) and ``n``."""

    spearman: float | None = None
    spearman_ci: Interval | None = None
    n: int | None = None


@dataclasses.dataclass(frozen=True)
class PoolingTrends(Record):
    """:func:`normscope.signals.pooling.pooling_trends`: the same words under CLS and under mean pooling."""

    model: str | None = None
    weights: str | None = None
    cls: PoolingTrend | None = None
    mean: PoolingTrend | None = None
    n: int | None = None


@dataclasses.dataclass(frozen=True)
class FeverousTime(Record):
    """The FEVEROUS claims' annotation time against the norm: Spearman rho with its CI, and the partial rho on tokens."""

    n: int | None = None
    n_missing: int | None = None
    spearman: float | None = None
    spearman_ci: Interval | None = None
    p_value: float | None = None
    partial_rho: float | None = None
    partial_ci: Interval | None = None
    median_s: float | None = None


@dataclasses.dataclass(frozen=True)
class KruskalWallis(Record):
    """A Kruskal-Wallis test of the norm across groups (``H``, ``p``, the groups' sizes) and of the token count
    (``tokens_H``, ``tokens_p``)."""

    H: float | None = None
    p: float | None = None
    groups: dict | None = None
    median_norm: dict | None = None
    tokens_H: float | None = None
    tokens_p: float | None = None


@dataclasses.dataclass(frozen=True)
class FeverousStats(Record):
    """:func:`normscope.signals.feverous.feverous_stats`: NOT ENOUGH INFO vs decided claims (``nei``, as
    :class:`AbstentionStats`), the annotation time, and the challenge types' and labels' Kruskal-Wallis tests."""

    nei: AbstentionStats | None = None
    time: FeverousTime | None = None
    challenge: KruskalWallis | None = None
    label: KruskalWallis | None = None


@dataclasses.dataclass(frozen=True)
class FeverousSummary(Record):
    """:meth:`normscope.signals.feverous.FeverousResult.to_dict` as the FEVEROUS row reads it."""

    signal: str | None = None
    model: str | None = None
    dataset: str | None = None
    stats: FeverousStats | None = None
