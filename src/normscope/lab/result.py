"""Typed results of the lab: :class:`LabResult` (free table / MLP) and :class:`TransformerLabResult`.

Both derive from :class:`normscope.results.StageResult`: summary numbers are dataclass fields
with display labels, ``to_dict()`` is exactly the ``--json`` summary (strict JSON), and run
timings live in a separate ``timings`` attribute, never among the results, so the results of
two runs with the same seed compare byte for byte (the CLI writes timings as a separate
``"timings"`` block after them).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from normscope.lab.decisive_values import (DecayedScale, DecisiveEncoder, DecisiveRun, EncoderConfig, GridRow,
                                           LambdaScaling, NoDecay, NullStat, PredictionCI, PredictionDesign,
                                           PredictionNull, PredictionStats, RunTrajectory, ScaleE1, ScaleGrowth,
                                           ScaleOverSeeds, ScaleReplicate, ScaleStationarity, ScalingFit,
                                           ScalingPrediction, ScalingRun, SeedScale, SelectedSetting,
                                           SnapshotPrediction, Stationarity, StationarityCheck)
from normscope.results import StageResult, summary_field
from normscope.values import Interval, Record, Spread

__all__ = ["LabResult", "TransformerLabResult", "DecisiveResult", "Agreement", "LabGate", "LabGroup", "Motion",
           "TrainingLoss", "Step0Summary",
           "TrajectoryCheck", "StationarityCheck", "Stationarity", "PredictionStats", "PredictionCI", "NullStat",
           "PredictionNull", "SnapshotPrediction", "RunTrajectory", "DecisiveRun", "ScalingFit", "ScalingRun",
           "ScalingPrediction", "LambdaScaling", "GridRow", "SelectedSetting", "EncoderConfig", "DecisiveEncoder",
           "NoDecay", "PredictionDesign", "DecayedScale", "ScaleE1", "ScaleStationarity", "SeedScale", "ScaleOverSeeds",
           "ScaleGrowth", "ScaleReplicate"]


# -- the lab's nested values (free table / MLP) ------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Agreement(Record):
    """Agreement of predicted R_eq and the observed norm over the items (relative errors, correlations)."""

    mean_abs_rel_error: float | None = None
    median_rel_error: float | None = None
    max_abs_rel_error: float | None = None
    pearson: float | None = None
    spearman: float | None = None


@dataclasses.dataclass(frozen=True)
class LabGate(Record):
    """The docs/theory.md 7A gate: its thresholds and whether this run ``passed`` it."""

    mean_abs_rel_error: float | None = None
    abs_median_rel_error: float | None = None
    pearson: float | None = None
    passed: bool | None = None


@dataclasses.dataclass(frozen=True)
class LabGroup(Record):
    """Means over the items of one ambiguity group."""

    ambiguity: int | None = None
    n: int | None = None
    r_obs: float | None = None
    heat: float | None = None
    drift: float | None = None
    r_eq: float | None = None
    mean_abs_rel_error: float | None = None


# -- the transformer lab's nested values ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Motion(Record):
    """How the probe items' norms moved from step 0 to the end, against baselines (``motion``)."""

    spearman_start_vs_final: float | None = None
    spearman_start_vs_final_ci: Interval | None = None
    partial_spearman_predicted_vs_final_given_start: float | None = None
    partial_spearman_predicted_vs_final_given_start_ci: Interval | None = None
    fraction_moved_toward_common_target: float | None = None
    fraction_moved_toward_common_target_ci: Interval | None = None
    fraction_of_distance: Spread | None = None
    n_with_prediction: int | None = None
    n_decided: int | None = None
    n_toward: int | None = None
    n_partial: int | None = None
    r0: Spread | None = None
    r_final: Spread | None = None
    r_eq0: Spread | None = None


@dataclasses.dataclass(frozen=True)
class TrainingLoss(Record):
    """The training loss averaged over the first and the last ``steps_averaged`` steps."""

    first: float | None = None
    last: float | None = None
    steps_averaged: int | None = None


@dataclasses.dataclass(frozen=True)
class Step0Summary(Record):
    """The step-0 probe's summary (its own keys kept) with q/c, heat and drift over the probe items."""

    q_over_c: Spread | None = None
    heat: Spread | None = None
    drift: Spread | None = None


@dataclasses.dataclass(frozen=True)
class TrajectoryCheck(Record):
    """The trajectory estimator's summary (``trajectory``); ``stationary`` is the measured stationarity."""

    stationary: bool | None = None


def _f(label: str, unit: str = "", default: Any = None):
    return summary_field(label, unit=unit, default=default)


@dataclasses.dataclass
class LabResult(StageResult):
    """Outcome of :func:`normscope.lab.run_lab` for the free table and the MLP (docs/theory.md 7A/7B).

    Summary fields are those of the lab's ``--json`` (documented in docs/lab.md); optional ones
    (``snapshots``, ``probe_batches``, ``single_snapshot``, ``uncorrected``, ``e5_max_rel_residual``)
    are left out of :meth:`to_dict` when they do not apply (None).

    Attributes
    ----------
    items : pandas.DataFrame
        One row per item: ``item, name, ambiguity, r_obs, r_final, heat, drift, r_eq, rel_error,
        q, q_over_c`` (and ``heat_se``, ``drift_se`` for the snapshot estimator; with momentum also
        ``rel_error_uncorrected``, the SGD formula's error without the (E12) correction).
    trajectories : pandas.DataFrame
        Long table ``step, ambiguity, r_mean`` (mean norm per ambiguity group over the whole run).
    timings : dict
        ``wall_s``, ``cpu_s``, ``steps_per_s`` (not part of the results).
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "trajectories", "timings")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("snapshots", "probe_batches", "single_snapshot", "uncorrected",
                                           "e5_max_rel_residual")

    encoder: str = _f("encoder")
    data: str = _f("data")
    optimizer: str = _f("optimizer")
    lr: float = _f("learning rate \u03b7")
    weight_decay: float = _f("weight decay \u03bb")
    beta: float | None = _f("momentum \u03b2")
    steps: int = _f("steps", "steps")
    burn_in: int = _f("burn-in", "steps")
    seed: int = _f("seed")
    estimator: str | None = _f("estimator")
    n_items: int = _f("items", "items")
    dim: int = _f("dimension d")
    tau: float = _f("temperature \u03c4")
    batch_size: int = _f("batch size B")
    k: int = _f("homogeneity degree k")
    lambda_rad: float = _f("radial decay rate \u03bb_rad (E4)")
    c: float = _f("decay per step c")
    c_row: str = _f("row of the section-4 table for c")
    snapshots: int | None = _f("snapshot states S")
    probe_batches: int | None = _f("virtual batches K per state")
    single_snapshot: Agreement | None = _f("agreement from a single snapshot")
    uncorrected: Agreement | None = _f("agreement without the (E12) momentum correction")
    e5_max_rel_residual: float | None = _f("largest per-step (E5) residual (relative)")
    mean_abs_rel_error: float | None = _f("mean |relative error| of R_eq")
    median_rel_error: float | None = _f("median signed relative error")
    max_abs_rel_error: float | None = _f("max |relative error|")
    pearson: float | None = _f("Pearson r, R_eq vs observed R")
    spearman: float | None = _f("Spearman \u03c1, R_eq vs observed R")
    q_over_c: Spread | None = _f("q/c (E9; 1 = balance)")
    corr_r_heat: float | None = _f("Pearson r(R, heat)")
    corr_r_drift: float | None = _f("Pearson r(R, drift)")
    spearman_r_ambiguity: float | None = _f("Spearman \u03c1(R, ambiguity)")
    groups: list[LabGroup] | None = _f("per ambiguity group")
    gate: LabGate | None = _f("docs/theory.md 7A gate")
    sgd_formula_expected: bool | None = _f("SGD formula expected to hold")
    caveats: list[str] = summary_field("caveats", default_factory=list)
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    trajectories: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    timings: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        out = super().to_dict()
        for k in self.OPTIONAL:
            if out.get(k) is None:
                out.pop(k, None)
        if self.estimator is None:  # tracking off: the summary has no estimates
            for k in ("mean_abs_rel_error", "median_rel_error", "max_abs_rel_error", "pearson", "spearman", "q_over_c",
                      "corr_r_heat", "corr_r_drift", "spearman_r_ambiguity", "groups", "gate", "sgd_formula_expected"):
                out.pop(k, None)
        return out

    @property
    def summary(self) -> dict:
        """``to_dict()`` (the results, without timings); kept for callers of the earlier dict API."""
        return self.to_dict()


@dataclasses.dataclass
class TransformerLabResult(StageResult):
    """Outcome of :func:`normscope.lab.run_transformer_lab` (``normscope lab --encoder transformer``).

    Attributes
    ----------
    items : pandas.DataFrame
        One row per probe item, in the order given: ``id, text, r0, r_final, r_window, r_eq0,
        r_eq0_flag, lambda_rad0, heat0, drift0, predicted_change, moved, toward,
        fraction_of_distance, drift, heat, q, lambda_rad, c, q_over_c, c_realised,
        q_over_c_realised, heat_share, drift_share, r_eq_trajectory`` (see docs/lab.md).
    norms : ndarray of shape (T + 1, P)
        ``R_t`` of every probe item at every step (float64).
    record : TrajectoryRecord or None
        The raw per-step record.
    timings : dict
        Seconds (``wall_s``, ``cpu_s``, ``train_s``, ``track_s``, ``probe0_s``, ``checkpoint_s``,
        ``s_per_step``, ``train_s_per_step``, ``steps_run``); not part of the results.
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "norms", "record", "timings")

    encoder: str = _f("encoder", default="transformer")
    model: str = _f("model")
    optimizer: str = _f("optimizer")
    lr: float = _f("learning rate \u03b7")
    weight_decay: float = _f("weight decay \u03bb")
    steps: int = _f("training steps", "steps")
    relaxation_steps: float | None = _f("relaxation time 1/(2\u03b7\u03bb_rad), median probe item at step 0", "steps")
    q_over_c_mean: float | None = _f("mean q/c over the window (E9; 1 = balance)")
    q_over_c_median: float | None = _f("median q/c over the window")
    spearman_predicted_vs_final: float | None = _f("Spearman \u03c1, step-0 R_eq vs final R")
    spearman_predicted_vs_final_ci: Interval | None = _f("95% CI (bootstrap over probe items)")
    fraction_moved_toward_req: float | None = _f("fraction of probe items whose norm moved toward R_eq")
    fraction_moved_toward_req_ci: Interval | None = _f("95% Wilson interval (probe items as independent trials)")
    pearson_final_vs_req_trajectory: float | None = _f("Pearson r, final R vs R_eq of the window (stationary check)")
    pearson_final_vs_req_trajectory_reason: str | None = _f("why the stationary check is not computed")
    estimator: str = _f("estimator", default="trajectory")
    precision: str = _f("training precision")
    long_enough: bool | None = _f("window starts after one relaxation time (time criterion)")
    burn_in: int | None = _f("window start (burn-in)", "steps")
    beta: float | None = _f("momentum \u03b2")
    batch_size: int | None = _f("batch size B", "pairs")
    tau: float | None = _f("temperature \u03c4")
    decay_mask: str | None = _f("decay mask \u03b8_D")
    n_decayed: int | None = _f("decayed parameter tensors")
    n_params: int | None = _f("trainable parameter tensors")
    dropout: bool | None = _f("dropout during training")
    pairs: str | None = _f("training pairs")
    n_pairs: int | None = _f("training pairs after the filters", "pairs")
    n_source_pairs: int | None = _f("pairs in the source", "pairs")
    n_long_pairs: int | None = _f("pairs dropped as longer than max_tokens", "pairs")
    n_held_out_pairs: int | None = _f("pairs dropped because a member is a probe item", "pairs")
    max_tokens: int | None = _f("max tokens per pair member")
    probe_items: int | None = _f("probe items P", "items")
    probe_set: str | None = _f("how the probe items were chosen")
    probe_batches: int | None = _f("step-0 probe batches K")
    seed: int | None = _f("seed")
    device: str | None = _f("device")
    motion: Motion | None = _f("how the norms moved (details)")
    trajectory: TrajectoryCheck | None = _f("trajectory estimator (details)")
    step0: Step0Summary | None = _f("step-0 probe (details)")
    loss: TrainingLoss | None = _f("training loss")
    caveats: list[str] = summary_field("caveats", default_factory=list)
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    norms: np.ndarray | None = None
    record: Any = None
    timings: dict = dataclasses.field(default_factory=dict)

    @property
    def summary(self) -> dict:
        """``to_dict()`` (the results, without timings)."""
        return self.to_dict()


@dataclasses.dataclass
class DecisiveResult(StageResult):
    """Outcome of :func:`normscope.lab.run_decisive_design` (``normscope lab --encoder transformer --design decisive``).

    The headline figures are the SGD base run's: its stationarity label and the prediction with no
    fitted constant (mean |R_eq - R-bar| / R-bar, Pearson and Spearman of R_eq and R-bar with CIs over
    snapshots, batches and items, and the permutation null's p); ``base``, ``scaling``, ``nodecay``,
    ``grid`` hold the details (docs/lab.md), ``claim`` the scorecard row
    (:func:`normscope.lab.claims.transformer_claim_row`).

    Attributes
    ----------
    items : pandas.DataFrame
        One row per probe item in the probe set's order: ``id, text`` and, per base run
        (``sgd_``, ``momentum_``, ``adamw_``), ``r_bar, r_eq, rel_error, heat, drift, lambda_rad, c, q,
        q_over_c, flag, heat_share, q_over_c_trajectory``; ``<opt>_r_bar_lambda<lambda>`` per scaled
        run; ``nodecay_ratio``.
    timings : dict
        Seconds (``wall_s``, ``cpu_s`` of this call, ``runs_cpu_s``, ``runs_wall_s`` of every run, resumed
        ones included); not part of the results.
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "timings", "directory")
    #: left out of ``to_dict()`` when None, so that a result of the first design reads back byte for byte
    OPTIONAL: ClassVar[tuple[str, ...]] = ("claim_items", "design_version")

    encoder_kind: str = _f("encoder", default="transformer")
    design: str = _f("design size")
    stationary: bool | None = _f("SGD base run stationary (all checks passed)")
    stationarity_label: str | None = _f("SGD base run: stationary / drifting / collapsed")
    mean_abs_rel_error: float | None = _f("mean |R_eq - R-bar| / R-bar (SGD, snapshot probes)")
    mean_abs_rel_error_ci: Interval | None = _f("95% CI (snapshots, batches, items)")
    pearson: float | None = _f("Pearson r, R_eq vs time-averaged norm R-bar (SGD)")
    pearson_ci: Interval | None = _f("95% CI (snapshots, batches, items)")
    spearman: float | None = _f("Spearman \u03c1, R_eq vs R-bar (SGD)")
    spearman_ci: Interval | None = _f("95% CI (snapshots, batches, items)")
    null_p_mean_abs_rel_error: float | None = _f("permutation p of the mean |rel. error| (R-free statistics shuffled)")
    claim: dict | None = _f("scorecard row theorem1_transformer (the decayed scale)")
    claim_items: dict | None = _f("scorecard row theorem1_transformer_items (per-item norms)")
    design_version: int | None = _f("design version (1: replayed the pre-training batches; 2: issue 35)")
    sizes: dict | None = _f("design sizes")
    encoder: DecisiveEncoder | None = _f("the encoder: config, AdamW pre-training, held-out accuracy")
    seed: int | None = _f("seed")
    device: str | None = _f("device")
    workers: int | None = _f("parallel runs")
    pairs: str | None = _f("training pairs")
    n_train_pairs: int | None = _f("training pairs after the filters", "pairs")
    n_eval_pairs: int | None = _f("held-out pairs (retrieval accuracy)", "pairs")
    n_source_pairs: int | None = _f("pairs in the source", "pairs")
    n_long_pairs: int | None = _f("pairs dropped as longer than max_tokens", "pairs")
    n_held_out_probe_pairs: int | None = _f("pairs dropped because a member is a probe item", "pairs")
    probe_items: int | None = _f("probe items P", "items")
    probe_set: str | None = _f("how the probe items were chosen")
    decay_mask: str | None = _f("decay mask \u03b8_D")
    lambda_rad_per_lambda_pretrained: float | None = _f("\u03bb_rad/\u03bb of the pre-trained encoder (E4, median item)")
    grid: list[GridRow] | None = _f("\u03b7/\u03bb grid (SGD)")
    selected: SelectedSetting | None = _f("selected SGD setting and the rule")
    base: dict[str, DecisiveRun] | None = _f("base runs per optimizer")
    predictions: dict | None = _f("\u03bb-scaling exponents predicted before the scaled runs")
    scaling: dict[str, LambdaScaling] | None = _f("\u03bb-scaling slopes per optimizer")
    nodecay: NoDecay | None = _f("SGD without decay")
    caveats: list[str] = summary_field("caveats", default_factory=list)
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    timings: dict = dataclasses.field(default_factory=dict)
    directory: str | None = None

    def to_dict(self) -> dict:
        out = super().to_dict()
        for k in self.OPTIONAL:
            if out.get(k) is None:
                out.pop(k, None)
        return out

    @property
    def scaling_factors(self) -> list[float] | None:
        """The lambda factors of the design's scaling series (``sizes["scaling_factors"]``; None when not recorded)."""
        return (self.sizes or {}).get("scaling_factors")

    def base_run(self, optimizer: str) -> DecisiveRun:
        """The base run of ``optimizer`` (``sgd``, ``momentum``, ``adamw``); an empty :class:`DecisiveRun` when the
        design has none."""
        return (self.base or {}).get(optimizer) or DecisiveRun()

    def scaling_of(self, optimizer: str) -> LambdaScaling:
        """The lambda-scaling series of ``optimizer``; an empty :class:`LambdaScaling` when the design has none."""
        return (self.scaling or {}).get(optimizer) or LambdaScaling()
