"""Typed values nested in the decisive design's result (:class:`normscope.lab.result.DecisiveResult`, docs/lab.md).

Each is a :class:`~normscope.values.Record`: read from a run's summary or a stored result with its key order kept,
so a result written, read back and written again is the same JSON text. The claims builders
(:func:`normscope.lab.claims.transformer_claim_row`, :func:`~normscope.lab.claims.transformer_items_claim_row`) read
them by attribute. :mod:`normscope.lab.result` re-exports every name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from normscope.values import Interval, Record, key

__all__ = ["StationarityCheck", "Stationarity", "PredictionStats", "PredictionCI", "NullStat", "PredictionNull",
           "PredictionDesign", "SnapshotPrediction", "RunTrajectory", "DecisiveRun", "ScalingFit", "ScalingRun",
           "ScalingPrediction", "LambdaScaling", "GridRow", "SelectedSetting", "EncoderConfig", "DecisiveEncoder",
           "NoDecay", "ScaleE1", "ScaleStationarity", "DecayedScale", "SeedScale", "ScaleOverSeeds", "ScaleGrowth",
           "ScaleReplicate"]


# -- the decisive design's nested values (docs/lab.md) ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StationarityCheck(Record):
    """One check of :func:`normscope.lab.stationarity.classify_window`."""

    passed: bool | None = None
    value: Any = None
    rule: str | None = None


@dataclasses.dataclass(frozen=True)
class Stationarity(Record):
    """:func:`normscope.lab.stationarity.classify_window` of one run's window."""

    label: str | None = None
    passed: bool | None = None
    checks: dict[str, StationarityCheck] | None = None
    reasons: list[str] | None = None
    mean_r2_halves: list | None = None
    relative_change: float | None = None
    loss_mean: float | None = None
    chance_loss: float | None = None
    spread: float | None = None
    accuracy: float | None = None
    accuracy_ci: Interval | None = None
    relaxations_before_window: float | None = None


@dataclasses.dataclass(frozen=True)
class PredictionStats(Record):
    """The statistics of the prediction with no fitted constant (:data:`normscope.lab.prediction.STAT_NAMES`)."""

    mean_abs_rel_error: float | None = None
    median_rel_error: float | None = None
    pearson: float | None = None
    spearman: float | None = None
    constant_mean_abs_rel_error: float | None = None
    gain_over_constant: float | None = None


@dataclasses.dataclass(frozen=True)
class PredictionCI(Record):
    """The 95 % CIs of :class:`PredictionStats` (snapshots, batches, items)."""

    mean_abs_rel_error: Interval | None = None
    median_rel_error: Interval | None = None
    pearson: Interval | None = None
    spearman: Interval | None = None
    constant_mean_abs_rel_error: Interval | None = None
    gain_over_constant: Interval | None = None


@dataclasses.dataclass(frozen=True)
class NullStat(Record):
    """One statistic under the permutation null: its ``median``, ``p`` (at least as good) and ``p_above``."""

    median: float | None = None
    p: float | None = None
    p_above: float | None = None


@dataclasses.dataclass(frozen=True)
class PredictionNull(Record):
    """:class:`NullStat` of each statistic of :class:`PredictionStats`."""

    mean_abs_rel_error: NullStat | None = None
    median_rel_error: NullStat | None = None
    pearson: NullStat | None = None
    spearman: NullStat | None = None


@dataclasses.dataclass(frozen=True)
class SnapshotPrediction(Record):
    """:func:`normscope.lab.prediction.snapshot_prediction` of a base run (its per-item arrays in ``per_item``)."""

    stats: PredictionStats | None = None
    ci: PredictionCI | None = None
    null: PredictionNull | None = None
    n_items: int | None = None
    n_excluded: int | None = None
    excluded: dict[str, int] | None = None
    n_negative_q: int | None = None
    negative_q: str | None = None
    design: PredictionDesign | None = None
    n_perm: int | None = None


@dataclasses.dataclass(frozen=True)
class PredictionDesign(Record):
    """How many snapshots, fresh batches per snapshot and items the snapshot prediction used."""

    snapshots: int | None = None
    batches: int | None = None
    items: int | None = None


@dataclasses.dataclass(frozen=True)
class RunTrajectory(Record):
    """Medians over the probe items of the trajectory estimates of a run's window."""

    q_over_c: float | None = None
    q_over_c_realised: float | None = None
    c_realised_over_c: float | None = None
    heat_share: float | None = None
    drift_share: float | None = None


@dataclasses.dataclass(frozen=True)
class DecisiveRun(Record):
    """One run of the design (``base[optimizer]``): its setting, window, stationarity, trajectory and prediction."""

    name: str | None = None
    optimizer: str | None = None
    eta: float | None = None
    lam: float | None = key("lambda")
    steps: int | None = None
    burn_in: int | None = None
    start: str | None = None
    relaxation_steps: float | None = None
    relaxations: float | None = None
    label: str | None = None
    reasons: list[str] | None = None
    stationarity: Stationarity | None = None
    lambda_rad_per_lambda: float | None = None
    relative_step: float | None = None
    trajectory: RunTrajectory | None = None
    prediction: SnapshotPrediction | None = None
    scale: DecayedScale | None = None
    drift_kind: str | None = None
    relaxation_unit: str | None = None
    arrival_units: float | None = None
    window_units: float | None = None
    replicates: list[ScaleReplicate] | None = None
    scale_seeds: ScaleOverSeeds | None = None


@dataclasses.dataclass(frozen=True)
class ScalingFit(Record):
    """:func:`normscope.lab.scaling.lambda_scaling_fit`: the slope of log R-bar on log lambda and its CI."""

    slope: float | None = None
    ci: Interval | None = None
    intercept: float | None = None


@dataclasses.dataclass(frozen=True)
class ScalingRun(Record):
    """One run of a lambda-scaling series."""

    name: str | None = None
    lam: float | None = key("lambda")
    steps: int | None = None
    label: str | None = None
    reasons: list[str] | None = None
    relaxations: float | None = None
    mean_r_window: float | None = None
    scale_label: str | None = None
    s_observed: float | None = None
    s_predicted: float | None = None


@dataclasses.dataclass(frozen=True)
class ScalingPrediction(Record):
    """:func:`normscope.lab.scaling.predicted_exponent`, stated before the scaled runs."""

    exponent: float | None = None
    heat_share: float | None = None
    free_vector: float | None = None
    basis: str | None = None


@dataclasses.dataclass(frozen=True)
class LambdaScaling(Record):
    """The lambda-scaling series of one optimizer (``scaling[optimizer]``)."""

    fit: ScalingFit | None = None
    prediction: ScalingPrediction | None = None
    runs: list[ScalingRun] | None = None
    all_stationary: bool | None = None
    prediction_in_ci: bool | None = None
    free_vector_in_ci: bool | None = None
    scale_fit: ScalingFit | None = None
    scale_all_stationary: bool | None = None
    items_prediction_in_ci: bool | None = None
    scale_predicted_slope: float | None = None


@dataclasses.dataclass(frozen=True)
class GridRow(Record):
    """One setting of the eta/lambda grid (:func:`normscope.lab.decisive_analysis.grid_rows`)."""

    eta: float | None = None
    lam: float | None = key("lambda")
    eta_lambda: float | None = None
    mask: str | None = None
    relative_step: float | None = None
    relaxation_steps: float | None = None
    steps: int | None = None
    label: str | None = None
    reasons: list[str] | None = None
    loss_window: float | None = None
    accuracy_end: float | None = None
    mean_r_start: float | None = None
    mean_r_window: float | None = None
    relative_change: float | None = None


@dataclasses.dataclass(frozen=True)
class SelectedSetting(Record):
    """The base SGD setting and the rule that chose it (:func:`normscope.lab.decisive.select_setting`)."""

    eta: float | None = None
    lam: float | None = key("lambda")
    relaxation_steps: float | None = None
    rule: str | None = None
    reason: str | None = None
    fallback: bool | None = None
    relative_step: float | None = None


@dataclasses.dataclass(frozen=True)
class EncoderConfig(Record):
    """The design's BERT."""

    hidden: int | None = None
    layers: int | None = None
    heads: int | None = None
    intermediate: int | None = None
    pooling: str | None = None
    tokenizer: str | None = None


@dataclasses.dataclass(frozen=True)
class DecisiveEncoder(Record):
    """The design's encoder: its config, its AdamW pre-training and its held-out accuracy."""

    config: EncoderConfig | None = None
    pretrain: dict | None = None
    heldout_accuracy: float | None = None
    heldout_accuracy_ci: Interval | None = None
    chance: float | None = None
    n_eval: int | None = None


@dataclasses.dataclass(frozen=True)
class NoDecay(Record):
    """The SGD run without decay (:func:`normscope.lab.scaling.growth_without_decay` and the initial rates)."""

    ratio: float | None = None
    ci: Interval | None = None
    fraction_grew: float | None = None
    grew: bool | None = None
    steps: int | None = None
    start: str | None = None
    eta: float | None = None
    initial_rate_of_mean_r2: float | None = None
    predicted_initial_rate: float | None = None
    accuracy_end: float | None = None
    scale: ScaleGrowth | None = None


# -- the decayed scale s = ||theta_D|| (normscope.lab.decisive_scale) ----------------------------------------------


@dataclasses.dataclass(frozen=True)
class ScaleE1(Record):
    """The (E1) checks of a window: max and median |cos(theta_D, g_D)|, the largest exact-step residual, the balance
    eta^2 <||g_D||^2 s^2> / (2c <s^2>) over the window and its boundary term."""

    max_abs_cos: float | None = None
    median_abs_cos: float | None = None
    max_abs_step_residual: float | None = None
    balance: float | None = None
    boundary: float | None = None


@dataclasses.dataclass(frozen=True)
class ScaleStationarity(Record):
    """:func:`~normscope.lab.decisive_scale.scale_stationarity`: the 3 % rule on the scale and the arrival."""

    label: str | None = None
    relative_change: float | None = None
    arrival_units: float | None = None
    reasons: list[str] | None = None


@dataclasses.dataclass(frozen=True)
class DecayedScale(Record):
    """:func:`~normscope.lab.decisive_scale.scale_summary` of one run: s observed and predicted by (E2), the
    relative error with its CI over time blocks (``resamples`` says which), the (E1) checks, the stationarity."""

    optimizer: str | None = None
    eta: float | None = None
    lam: float | None = key("lambda")
    window_steps: int | None = None
    s_observed: float | None = None
    s_predicted: float | None = None
    sgd_form_expected: bool | None = None
    heat_factor: float | None = None
    rel_error: float | None = None
    rel_error_ci: Interval | None = None
    abs_rel_error: float | None = None
    abs_rel_error_ci: Interval | None = None
    e1: ScaleE1 | None = None
    stationarity: ScaleStationarity | None = None
    n_blocks: int | None = None
    resamples: str | None = None
    rule: str | None = None


@dataclasses.dataclass(frozen=True)
class SeedScale(Record):
    """One run's (E2) figures in :class:`ScaleOverSeeds`."""

    rel_error: float | None = None
    s_observed: float | None = None
    s_predicted: float | None = None
    n_blocks: int | None = None


@dataclasses.dataclass(frozen=True)
class ScaleOverSeeds(Record):
    """:func:`~normscope.lab.decisive_scale.scale_over_seeds`: the mean relative error over runs on different batch
    seeds, with a CI over seeds and then time blocks (``resamples``)."""

    n_seeds: int | None = None
    per_seed: list[SeedScale] | None = None
    rel_error: float | None = None
    rel_error_ci: Interval | None = None
    abs_rel_error: float | None = None
    abs_rel_error_ci: Interval | None = None
    between_seed_sd: float | None = None
    resamples: str | None = None


@dataclasses.dataclass(frozen=True)
class ScaleGrowth(Record):
    """:func:`~normscope.lab.decisive_scale.scale_growth` of the run without decay."""

    ratio: float | None = None
    fraction_of_steps_grew: float | None = None
    grew: bool | None = None
    steps: int | None = None


@dataclasses.dataclass(frozen=True)
class ScaleReplicate(Record):
    """One replicate of the SGD base run on another batch seed: its window label and its scale's figures."""

    name: str | None = None
    replicate: int | None = None
    label: str | None = None
    reasons: list[str] | None = None
    scale_label: str | None = None
    scale_relative_change: float | None = None
    s_observed: float | None = None
    s_predicted: float | None = None
    rel_error: float | None = None
    rel_error_ci: Interval | None = None
    e1_balance: float | None = None
