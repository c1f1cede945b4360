"""The typed result of ``normscope similarity`` (:func:`normscope.similarity.run_similarity`)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from normscope.claims import ClaimRow
from normscope.results import StageResult, summary_field
from normscope.values import Duplicates, Interval, JunkSummary, NormError, Record

__all__ = ["SimilarityResult", "PairScorerEval", "PairFit"]


@dataclasses.dataclass(frozen=True)
class PairFit(Record):
    """Where the pair scorers' parameters were fitted (``fit`` of ``normscope similarity --json``)."""

    source: str | None = None
    path: str | None = None
    seed: int | None = None
    duplicates: Duplicates | None = None
    n_pairs: int | None = None
    n_overlap_removed: int | None = None
    n_shared_texts: int | None = None
    n_pairs_junk: int | None = None
    format: str | None = None
    norm_max: float | None = None
    criterion: str | None = None


@dataclasses.dataclass(frozen=True)
class PairScorerEval(Record):
    """One pair scorer against the human scores (``scorers[name]`` of ``normscope similarity --json``).

    ``param`` was fitted on the fit pairs (``fit_spearman`` there, ``curve`` over its grid); the
    statistics are on the evaluated pairs; ``delta_spearman`` is its Spearman minus cosine's, with a
    paired bootstrap ``delta_ci``; ``relative`` is ``rho(scorer) / rho(cosine) - 1`` with ``relative_ci``. A fitted scorer's CIs resample the fit pairs jointly with the evaluated
    ones and refit its parameter on each draw (``ci_resamples`` says what a scorer's CIs resample;
    ``*_ci_fixed_param`` hold the parameter fixed; ``param_draws`` is the refitted parameter's spread).
    """

    param_name: str | None = None
    param: float | None = None
    spearman: float | None = None
    spearman_ci: Interval | None = None
    pearson: float | None = None
    pearson_ci: Interval | None = None
    delta_spearman: float | None = None
    delta_ci: Interval | None = None
    relative: float | None = None
    relative_ci: Interval | None = None
    fit_spearman: float | None = None
    curve: dict | list | None = None
    ci_resamples: str | None = None
    param_draws: dict | None = None


@dataclasses.dataclass
class SimilarityResult(StageResult):
    """Norm-aware pair scorers against human similarity ratings.

    :meth:`to_dict` is the ``--json`` output of ``normscope similarity``; ``items`` is the per-pair
    table written by ``-o``.

    Attributes
    ----------
    dataset : str
        The evaluated file.
    format : {"sts", "words"}
    n_pairs : int
        Evaluated pairs (after junk texts are left out; never used for fitting).
    fit : dict
        Where the parameters were fitted: ``source`` (``"file"``, ``"sts-train split"``,
        ``"random half"``), ``path``, ``n_pairs``, ``n_overlap_removed`` (fit pairs also evaluated,
        dropped from the fit set), ``n_shared_texts`` (texts in both sets), ``criterion``, ``seed``,
        ``norm_max`` (largest norm of the embedded texts: the ``alpha`` grid is ``s / norm_max``).
    scorers : dict
        Per scorer: ``param_name``, ``param`` (fitted value; None for cosine and dot),
        ``spearman``, ``spearman_ci``, ``pearson``, ``pearson_ci`` (with the human scores of the
        evaluated pairs), ``delta_spearman`` (minus cosine's) and ``delta_ci`` (paired bootstrap),
        ``fit_spearman`` (on the fit pairs), ``curve`` (Spearman on the fit pairs per grid value). The
        whitened scorers (``zipf_whitened``, ``uniform_whitened``: cosine of whitened vectors) have no
        parameter, an empty curve and ``whitening`` (kind, rank, n_vocab).
    whitening : dict
        With ``whiten``: the vocabulary, weights and method of the whitening (empty otherwise).
    items : pandas.DataFrame
        One row per pair: ``split`` (``fit``/``eval``), ``id`` (line number in its file), ``text1``,
        ``text2``, ``human``, ``norm1``, ``norm2`` (||z||) and ``score_<scorer>``.
    claims : list of ClaimRow
        The scorecard row this run feeds (``similarity_pairs``,
        :func:`normscope.similarity.claims.similarity_claim`): the same verdict the report gives.
    """

    dataset: str = summary_field("dataset")
    format: str = summary_field("format")
    model: str = summary_field("model")
    n_pairs: int = summary_field("evaluated pairs", unit="pairs")
    fit: PairFit = summary_field("fit", default_factory=dict)
    scorers: dict[str, PairScorerEval] = summary_field("scorers", default_factory=dict)
    n_texts: int = summary_field("distinct texts embedded", unit="texts", default=0)
    n_truncated: int | None = summary_field("texts truncated at the model's maximum length", unit="texts", default=None)
    junk: JunkSummary = summary_field("junk texts left out", default_factory=dict)
    precision: str = summary_field("precision of the forward passes", default="fp32")
    norm_rel_error_vs_fp32: NormError | None = summary_field("relative norm error vs fp32 (sample)", default=None)
    n_pairs_junk: int = summary_field("pairs left out for a junk text", unit="pairs", default=0)
    duplicates: Duplicates = summary_field("exact duplicate pairs of the evaluated file", default_factory=dict)
    ci_level: float = summary_field("confidence level", default=0.95)
    ci_method: str = summary_field("CI method", default="")
    delta_ci_method: str = summary_field("CI method of the differences", default="")
    n_boot: int = summary_field("bootstrap resamples", default=0)
    seed: int = summary_field("seed", default=0)
    whitening: dict = summary_field("whitening of the whitened scorers", default_factory=dict)
    norm_mean: float | None = summary_field("mean norm", unit="||z||", default=None)
    norm_sd: float | None = summary_field("sd of the norm", unit="||z||", default=None)
    notes: list[str] = summary_field("notes", default_factory=list)
    claims: list[ClaimRow] = summary_field("claims scorecard rows (normscope.claims)", default_factory=list)
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.scorers = self.scorers or {}
