"""The typed result of :func:`normscope.retrieval.run_retrieval` (what ``normscope retrieval --json`` writes)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from normscope.claims import ClaimRow
from normscope.results import StageResult, summary_field
from normscope.values import Interval, JunkSummary, NormError, Record, key

__all__ = ["RetrievalResult", "ScorerEval", "SignalCalibration", "SCORER_LABELS", "SIGNAL_LABELS", "SignalFit",
           "EceBins", "QueryCounts", "RetrievalJunk", "Significance", "StratumRow", "Strata", "CalibrationInfo",
           "QppEval", "QppInfo", "SingleBaseline", "IncrementalNdcg", "IncrementalValue", "Abstention",
           "AbstentionSignal", "AbstentionComparison", "StratifierInfo"]

#: Display labels of the per-scorer numbers (CLI table and report).
SCORER_LABELS: dict[str, str] = {
    "ndcg@10": "nDCG@10",
    "mrr@10": "MRR@10",
    "recall@100": "Recall@100",
    "delta": "\u0394 nDCG@10 vs cosine",
    "delta_ci": "95% CI (queries, refit)",
    "relative": "relative \u0394 nDCG@10",
    "p_value": "p vs cosine (paired t)",
    "p_value_randomization": "p (randomisation)",
}
#: Display labels of the calibration numbers.
SIGNAL_LABELS: dict[str, str] = {
    "auroc_raw": "AUROC (raw signal)",
    "auroc_raw_ci": "95% CI",
    "auroc": "AUROC (calibrated)",
    "auroc_ci": "95% CI",
    "ece": "ECE (15 bins)",
    "ece_bins": "populated bins",
    "aurc": "AURC",
    "aurc_optimal": "AURC (oracle)",
}


@dataclasses.dataclass(frozen=True)
class ScorerEval(Record):
    """One scorer on the evaluation queries (``scorers[name]`` of ``normscope retrieval --json``).

    ``param`` was fitted on ``fitted_on`` (or fixed: ``param_source``); the metrics are means over the
    evaluation queries (pytrec_eval); ``delta``, ``relative`` (mean(scorer)/mean(cosine) - 1) and their
    CIs are paired over queries, a fitted parameter refitted on every draw (``ci_resamples`` says what they
    resample; ``*_fixed_param`` are the CIs with the fitted parameter held fixed, ``param_draws`` the spread
    of the refitted parameter); ``p_value`` is the paired t-test and ``p_value_randomization`` the
    paired randomisation test of nDCG@10 against cosine. ``ndcg10_at_ceiling`` /
    ``ndcg10_at_floor``: evaluation queries on which the scorer's nDCG@10 is 1 / 0 (the ceiling gate of the gain
    claims reads cosine's).
    """

    param_name: str | None = None
    param: float | list | None = None
    param_source: str | None = None
    param_mean: float | None = None
    neutral_param: float | None = None
    fitted_on: str | None = None
    fit_metric: str | None = None
    param_at_grid_edge: bool | None = None
    fit_curves: Any = None
    ndcg10: float | None = key("ndcg@10")
    mrr10: float | None = key("mrr@10")
    recall100: float | None = key("recall@100")
    p_value: float | None = None
    p_value_randomization: float | None = None
    delta: float | None = None
    delta_ci: Interval | None = None
    relative: float | None = None
    relative_ci: Interval | None = None
    p_values: dict | None = None
    ci_resamples: str | None = None
    delta_ci_fixed_param: Interval | None = None
    relative_ci_fixed_param: Interval | None = None
    param_draws: dict | None = None
    ndcg10_at_ceiling: int | None = None
    ndcg10_at_floor: int | None = None


@dataclasses.dataclass(frozen=True)
class SignalFit(Record):
    """The fitted map of a confidence signal: its pre-specified ``direction`` and the ``mapping``."""

    direction: int | None = None
    mapping: str | None = None


@dataclasses.dataclass(frozen=True)
class EceBins(Record):
    """How the ECE's bins were filled (:func:`normscope.retrieval.calibration.bin_report`); ``flag`` says when too few
    bins are populated for the ECE to mean much."""

    populated_bins: int | None = None
    largest_bin: int | None = None
    n: int | None = None
    flag: str | None = None


@dataclasses.dataclass(frozen=True)
class SignalCalibration(Record):
    """One confidence signal for "the cosine top-1 is relevant" (``calibration[name]``).

    ``auroc_raw`` is the raw signal in its pre-specified direction (absent for learned signals),
    ``auroc`` the fitted map's; their CIs resample evaluation queries; ``ece`` over ``ece_bins``;
    ``status`` is ``ok`` or says why the signal was not computed (``reason``).
    """

    status: str | None = None
    reason: str | None = None
    fit: SignalFit | None = None
    auroc: float | None = None
    auroc_ci: Interval | None = None
    auroc_raw: float | None = None
    auroc_raw_ci: Interval | None = None
    ece: float | None = None
    ece_bins: EceBins | None = None
    aurc: float | None = None
    aurc_optimal: float | None = None
    auroc_note: str | None = None

    @property
    def ok(self) -> bool:
        """Computed (a status of ``ok``, or none given)."""
        return self.status in (None, "ok")


@dataclasses.dataclass(frozen=True)
class QueryCounts(Record):
    """Queries evaluated (``eval``) and used for fitting (``fit``; None without a fit split)."""

    eval: int | None = None
    fit: int | None = None


@dataclasses.dataclass(frozen=True)
class RetrievalJunk(Record):
    """Junk left out of the corpus (``documents``) and of the queries (``queries``: with ``by_split`` counts)."""

    documents: JunkSummary | None = None
    queries: JunkSummary | None = None


@dataclasses.dataclass(frozen=True)
class Significance(Record):
    """How the scorers' differences to cosine were tested: the methods in words, ``n_permutations``, ``n_boot``."""

    p_value: str | None = None
    metrics: str | None = None
    p_value_randomization: str | None = None
    delta_ci: str | None = None
    n_permutations: int | None = None
    n_boot: int | None = None
    seed: int | None = None


@dataclasses.dataclass(frozen=True)
class StratumRow(Record):
    """One scorer against cosine in one pre-specified stratum (a quartile of one stratifier)."""

    stratifier: str | None = None
    quartile: int | None = None
    range: Interval | None = None
    n: int | None = None
    baseline_mean: float | None = None
    scorer_mean: float | None = None
    mean_delta: float | None = None
    mean_delta_ci: Interval | None = None
    relative: float | None = None
    relative_ci: Interval | None = None
    p: float | None = None
    p_holm: float | None = None
    ci_resamples: str | None = None
    mean_delta_ci_fixed_param: Interval | None = None
    relative_ci_fixed_param: Interval | None = None


@dataclasses.dataclass(frozen=True)
class StratifierInfo(Record):
    """One stratifier of the strata (``strata.stratifiers[name]``): ``what`` it is, ``status`` (``ok`` / ``not
    computed``, then ``reason``), its quartile ``edges``, value ``range``, ``counts`` per quartile and the queries
    ``n_left_out`` (no value)."""

    what: str | None = None
    status: str | None = None
    reason: str | None = None
    edges: list[float] | None = None
    range: Interval | None = None
    counts: list[int] | None = None
    n_left_out: int | None = None


@dataclasses.dataclass(frozen=True)
class Strata(Record):
    """The pre-specified strata (:func:`normscope.retrieval.strata.stratified_comparison`): rows per scorer
    (``status`` / ``reason`` when they were not computed)."""

    metric: str | None = None
    statistic: str | None = None
    test: str | None = None
    correction: str | None = None
    stratifiers: dict[str, StratifierInfo] | None = None
    scorers: dict[str, list[StratumRow]] | None = None
    n_boot: int | None = None
    seed: int | None = None
    status: str | None = None
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class CalibrationInfo(Record):
    """The calibration set-up: the label, where the maps were fitted, the ECE bins, the map and direction rules."""

    label: str | None = None
    reference_run: str | None = None
    fitted_on: str | None = None
    ece_bins: int | None = None
    mapping: str | None = None
    direction: dict | None = None
    auroc_ci: str | None = None
    base_rate_eval: float | None = None
    base_rate_fit: float | None = None

    @property
    def direction_rule(self) -> str | None:
        """How the signals' directions were fixed (the ``rule`` of ``direction``, whose other keys are signals)."""
        return (self.direction or {}).get("rule")


@dataclasses.dataclass(frozen=True)
class QppEval(Record):
    """One query performance predictor or norm signal (``qpp[name]``), in its pre-specified ``direction``."""

    kind: str | None = None
    direction: int | None = None
    formula: str | None = None
    reference: str | None = None
    k: int | None = None
    status: str | None = None
    reason: str | None = None
    auroc: float | None = None
    auroc_ci: Interval | None = None
    aurc: float | None = None
    kendall_tau: float | None = None
    spearman_rho: float | None = None
    kendall_tau_ci: Interval | None = None
    spearman_rho_ci: Interval | None = None


@dataclasses.dataclass(frozen=True)
class QppInfo(Record):
    """How the QPP table was computed (:func:`normscope.retrieval.studies.qpp_info`)."""

    run: str | None = None
    direction: str | None = None
    tasks: str | None = None
    ci: str | None = None
    baselines: list[str] | None = None
    norm_signals: list[str] | None = None
    agreement: dict | None = None  # only with --agreement-model: the second model, k and the statistic


@dataclasses.dataclass(frozen=True)
class SingleBaseline(Record):
    """The norm signals added to one free baseline (top-1 task)."""

    baseline: list[str] | None = None
    auroc_without: float | None = None
    auroc_with: float | None = None
    diff: float | None = None
    ci: Interval | None = None
    fold_draws: int | None = None


@dataclasses.dataclass(frozen=True)
class IncrementalNdcg(Record):
    """The norm signals' incremental value for per-query nDCG@10 (Kendall tau, cross-fitted)."""

    status: str | None = None
    reason: str | None = None
    tau_without: float | None = None
    tau_with: float | None = None
    diff: float | None = None
    ci: Interval | None = None


@dataclasses.dataclass(frozen=True)
class IncrementalValue(Record):
    """``calibration_incremental`` (:func:`normscope.retrieval.studies.incremental_study`): the norm signals added to
    every free baseline at once (top-1 AUROC; nDCG@10 in ``ndcg10``), then to each alone (``single_baselines``)."""

    status: str | None = None
    reason: str | None = None
    baseline: list[str] | None = None
    added: list[str] | None = None
    auroc_without: float | None = None
    auroc_with: float | None = None
    diff: float | None = None
    ci: Interval | None = None
    ci_covers: str | None = None
    folds: int | None = None
    fold_draws: int | None = None
    ndcg10: IncrementalNdcg | None = key("ndcg@10")
    single_baselines: list[SingleBaseline] | None = None
    task: str | None = None
    resamples: str | None = None
    n_queries: int | None = None
    seed: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclasses.dataclass(frozen=True)
class AbstentionSignal(Record):
    """One confidence signal's nAUC of nDCG@10 (``abstention.signals[name]``): ``kind`` (``mteb`` / ``norm``),
    ``direction``, ``formula``, ``nauc`` with its percentile bootstrap ``nauc_ci`` over queries."""

    kind: str | None = None
    direction: int | None = None
    formula: str | None = None
    nauc: float | None = None
    nauc_ci: Interval | None = None


@dataclasses.dataclass(frozen=True)
class AbstentionComparison(Record):
    """The claim signal's nAUC minus the best MTEB confidence's (``abstention.comparison``): ``diff`` with its
    paired bootstrap ``ci``, ``best_baseline`` and its ``baseline_nauc`` / ``baseline_ci``, ``position`` of the
    signal's nAUC against that CI (``below`` / ``within`` / ``above``), ``reason`` when it could not be made."""

    signal: str | None = None
    best_baseline: str | None = None
    nauc: float | None = None
    baseline_nauc: float | None = None
    baseline_ci: Interval | None = None
    position: str | None = None
    diff: float | None = None
    ci: Interval | None = None
    n_queries: int | None = None
    rule: str | None = None
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class Abstention(Record):
    """nAUC of nDCG@10 by confidence signal (``abstention`` of ``normscope retrieval --json``,
    :func:`normscope.retrieval.abstention.abstention_study`)."""

    status: str | None = None
    reason: str | None = None
    metric: str | None = None
    implementation: str | None = None
    abstention_rates: list[float] | None = None
    depth: int | None = None
    ci: str | None = None
    n_queries: int | None = None
    signals: dict[str, AbstentionSignal] | None = None
    comparison: AbstentionComparison | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclasses.dataclass
class RetrievalResult(StageResult):
    """Norm-aware retrieval and calibration on one BEIR dataset.

    ``to_dict()`` is the ``--json`` summary; :attr:`items` (one row per scorer, query and rank:
    ``scorer, query_id, rank, doc_id, score, relevance, doc_norm, query_norm``) is what ``-o``
    writes; :attr:`per_query` has one row per evaluated query (norms, Zipf frequency, cosine top-1,
    per-scorer nDCG@10, signals and their calibrated confidences, strata).
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "per_query", "doc_titles", "timings")

    dataset: str = summary_field("dataset")
    dataset_name: str = summary_field("dataset name")
    model: str = summary_field("model")
    model_revision: str | None = summary_field("model revision")
    split: str = summary_field("evaluation split")
    fit_split: str = summary_field("fitted on")
    fit_mode: str = summary_field("fit mode")
    seed: int = summary_field("seed")
    k: int = summary_field("depth k", unit="documents")
    relevance: str = summary_field("relevance levels")
    grade_scale: int = summary_field("relevance grades read times")
    tie_rule: str = summary_field("tie rule")
    ignore_identical_ids: bool = summary_field("self-hits left out")
    identical_ids: dict[str, int] = summary_field("queries whose id is a corpus id")
    n_docs: int = summary_field("documents", unit="documents")
    docs: dict = summary_field("corpus subsample")
    duplicate_docs: dict = summary_field("exact duplicate documents")
    n_queries: QueryCounts = summary_field("queries evaluated", unit="queries")
    excluded_queries: dict[str, dict[str, int] | None] = summary_field("queries excluded")
    junk: RetrievalJunk = summary_field("junk items left out")
    n_truncated: dict[str, int | None] = summary_field("items truncated by the model", unit="items")
    precision: str = summary_field("precision of the forward passes")
    norm_rel_error_vs_fp32: NormError | None = summary_field("relative norm error vs fp32 (sample of documents)")
    metrics: list[str] = summary_field("metrics")
    significance: Significance = summary_field("significance tests")
    scorers: dict[str, ScorerEval] = summary_field("scorers")
    strata: Strata = summary_field("strata (where the gain lies)")
    calibration: dict[str, SignalCalibration] = summary_field("calibration of the cosine top-1")
    calibration_info: CalibrationInfo = summary_field("calibration set-up")
    qpp: dict[str, QppEval] = summary_field("query performance predictors (QPP) and norm signals")
    qpp_info: QppInfo = summary_field("QPP set-up")
    calibration_incremental: IncrementalValue = summary_field("incremental value of the norm signals (cross-fitted)")
    doc_norm_range: list[float] = summary_field("document norm range", unit="||z||")
    #: nAUC of nDCG@10 by MTEB's confidences and the norm signals (:func:`normscope.retrieval.abstention.abstention_study`).
    abstention: Abstention = summary_field("nAUC of nDCG@10 (MTEB abstention) by confidence signal", default_factory=dict)
    #: The scorecard rows this run feeds (:func:`normscope.retrieval.claims.retrieval_claims`).
    claims: list[ClaimRow] = summary_field("claims scorecard rows", default_factory=list)
    items: Any = None
    per_query: Any = None
    doc_titles: dict = dataclasses.field(default_factory=dict)
    #: Seconds per phase (printed, not in the JSON, so that the JSON of two runs compares byte for byte).
    timings: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.scorers = self.scorers or {}
        self.calibration = self.calibration or {}
