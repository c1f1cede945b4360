"""The typed result of :func:`normscope.retrieval.run_retrieval` (what ``normscope retrieval --json`` writes)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from normscope.results import StageResult, summary_field
from normscope.values import Interval, Record, key

__all__ = ["RetrievalResult", "ScorerEval", "SignalCalibration", "SCORER_LABELS", "SIGNAL_LABELS"]

#: Display labels of the per-scorer numbers (CLI table and report).
SCORER_LABELS: dict[str, str] = {
    "ndcg@10": "nDCG@10",
    "mrr@10": "MRR@10",
    "recall@100": "Recall@100",
    "delta": "\u0394 nDCG@10 vs cosine",
    "delta_ci": "95% CI (queries)",
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
    CIs are paired over queries; ``p_value`` is the paired t-test and ``p_value_randomization`` the
    paired randomisation test of nDCG@10 against cosine.
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


@dataclasses.dataclass(frozen=True)
class SignalCalibration(Record):
    """One confidence signal for "the cosine top-1 is relevant" (``calibration[name]``).

    ``auroc_raw`` is the raw signal in its pre-specified direction (absent for learned signals),
    ``auroc`` the fitted map's; their CIs resample evaluation queries; ``ece`` over ``ece_bins``;
    ``status`` is ``ok`` or says why the signal was not computed (``reason``).
    """

    status: str | None = None
    reason: str | None = None
    fit: dict | None = None
    auroc: float | None = None
    auroc_ci: Interval | None = None
    auroc_raw: float | None = None
    auroc_raw_ci: Interval | None = None
    ece: float | None = None
    ece_bins: dict | None = None
    aurc: float | None = None
    aurc_optimal: float | None = None
    auroc_note: str | None = None

    @property
    def ok(self) -> bool:
        """Computed (a status of ``ok``, or none given)."""
        return self.status in (None, "ok")


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
    identical_ids: dict = summary_field("queries whose id is a corpus id")
    n_docs: int = summary_field("documents", unit="documents")
    docs: dict = summary_field("corpus subsample")
    duplicate_docs: dict = summary_field("exact duplicate documents")
    n_queries: dict = summary_field("queries evaluated", unit="queries")
    excluded_queries: dict = summary_field("queries excluded")
    junk: dict = summary_field("junk items left out")
    n_truncated: dict = summary_field("items truncated by the model", unit="items")
    precision: str = summary_field("precision of the forward passes")
    norm_rel_error_vs_fp32: dict | None = summary_field("relative norm error vs fp32 (sample of documents)")
    metrics: list = summary_field("metrics")
    significance: dict = summary_field("significance tests")
    scorers: dict[str, ScorerEval] = summary_field("scorers")
    strata: dict = summary_field("strata (where the gain lies)")
    calibration: dict[str, SignalCalibration] = summary_field("calibration of the cosine top-1")
    calibration_info: dict = summary_field("calibration set-up")
    qpp: dict = summary_field("query performance predictors (QPP) and norm signals")
    qpp_info: dict = summary_field("QPP set-up")
    calibration_incremental: dict = summary_field("incremental value of the norm signals (cross-fitted)")
    doc_norm_range: list = summary_field("document norm range", unit="||z||")
    #: The scorecard rows this run feeds (:func:`normscope.retrieval.claims.retrieval_claims`).
    claims: list = summary_field("claims scorecard rows", default_factory=list)
    items: Any = None
    per_query: Any = None
    doc_titles: dict = dataclasses.field(default_factory=dict)
    #: Seconds per phase (printed, not in the JSON, so that the JSON of two runs compares byte for byte).
    timings: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.scorers = self.scorers or {}
        self.calibration = self.calibration or {}
