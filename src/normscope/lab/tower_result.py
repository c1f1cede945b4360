"""The frozen-tower arm's typed result (:func:`normscope.lab.tower.run_tower_lab`; docs/lab.md).

:class:`TowerLabResult` and the values nested in it, each a :class:`~normscope.values.Record` read with its key
order kept (``from_dict(d).to_dict()`` is ``d``, key for key). The scorecard row
(:func:`normscope.lab.claims.tower_claim_row`) reads them by attribute. Importable from
:mod:`normscope.lab.tower` as before; this module imports neither torch nor the training code.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pandas as pd

from normscope.lab.decisive_values import Stationarity
from normscope.results import StageResult, summary_field
from normscope.values import Interval, Record

__all__ = ["TowerLabResult", "TowerNull", "TowerGroup", "TowerControl"]


@dataclasses.dataclass(frozen=True)
class TowerNull(Record):
    """The heat-permutation null of the mean |rel. error|: its ``median``, one-sided ``p`` (at least as good),
    ``p_above`` (at least as bad) over ``n_perm`` permutations."""

    median: float | None = None
    p: float | None = None
    p_above: float | None = None
    n_perm: int | None = None


@dataclasses.dataclass(frozen=True)
class TowerGroup(Record):
    """Means over the nouns with one number of senses (a control's groups have no heat or R_eq)."""

    senses: int | None = None
    n: int | None = None
    r_obs: float | None = None
    heat: float | None = None
    r_eq: float | None = None
    mean_abs_rel_error: float | None = None


@dataclasses.dataclass(frozen=True)
class TowerControl(Record):
    """One control run: AdamW and heavy ball predicted with the SGD form (heavy ball also with (E12)); no decay's
    growth."""

    optimizer: str | None = None
    lr: float | None = None
    weight_decay: float | None = None
    role: str | None = None
    stationary: bool | None = None
    mean_r_change: float | None = None
    mean_abs_rel_error_sgd_form: float | None = None
    mean_abs_rel_error_sgd_form_ci: Interval | None = None
    median_rel_error_sgd_form: float | None = None
    groups: list[TowerGroup] | None = None
    beta: float | None = None
    mean_abs_rel_error_e12: float | None = None
    mean_abs_rel_error_e12_ci: Interval | None = None
    median_rel_error_e12: float | None = None
    predicted_miss_without_e12: float | None = None
    mean_growth: float | None = None
    share_grown: float | None = None


def _f(label: str, unit: str = ""):
    return summary_field(label, unit=unit, default=None)


@dataclasses.dataclass
class TowerLabResult(StageResult):
    """Outcome of :func:`~normscope.lab.tower.run_tower_lab` (``normscope lab --encoder tower``).

    Attributes
    ----------
    items : pandas.DataFrame
        One row per noun, in the input order: ``name, senses, r_obs, r_final, heat, heat_se, drift, r_eq,
        rel_error, balance`` of the SGD run, then the controls' ``rel_error_adamw``,
        ``rel_error_momentum_uncorrected``, ``rel_error_momentum``, ``growth_nodecay`` (R_end / R at the window's
        start, minus 1).
    trajectories : pandas.DataFrame
        ``run, step, senses, r_mean`` (mean norm per group over each run).
    timings : dict
        Seconds (``embed_s``, per run ``train_s``/``probe_s``, ``steps_per_s``, ``wall_s``, ``cpu_s``), apart.
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "trajectories", "timings")

    encoder: str = _f("encoder")
    model: str = _f("frozen tower")
    size: str = _f("size")
    n_items: int = _f("nouns", "items")
    n_glosses: int = _f("glosses")
    dim: int = _f("dimension d")
    tau: float = _f("temperature \u03c4")
    batch_size: int = _f("batch size B")
    seed: int = _f("seed")
    lr: float = _f("learning rate \u03b7")
    weight_decay: float = _f("weight decay \u03bb")
    burn_in: int = _f("burn-in", "steps")
    window: int = _f("window", "steps")
    probe_batches: int = _f("probe batches K")
    relaxation_steps: float = _f("relaxation time 1/(4 \u03b7 \u03bb)", "steps")
    stationary: bool = _f("SGD window stationary")
    stationarity: Stationarity | None = _f("stationarity of the SGD window")
    mean_r_change: float = _f("mean R, second vs first half of the window")
    balance: float = _f("(E1) balance \u03b7\u00b2\u03a3||g||\u00b2 / (2c \u03a3R\u00b2)")
    balance_identity_residual: float = _f("(E1) telescoping identity, largest residual")
    mean_abs_rel_error: float = _f("mean |R_eq - R-bar| / R-bar")
    mean_abs_rel_error_ci: Interval | None = _f("95% CI")
    median_rel_error: float = _f("median (R_eq - R-bar) / R-bar")
    pearson: float = _f("Pearson(R_eq, R-bar)")
    pearson_ci: Interval | None = _f("95% CI")
    spearman: float = _f("Spearman(R_eq, R-bar)")
    null: TowerNull | None = _f("heat-permutation null")
    spearman_heat_senses: float = _f("Spearman(heat, senses)")
    spearman_heat_senses_ci: Interval | None = _f("95% CI")
    max_abs_drift_over_heat: float = _f("max |D~| R^2 / Sigma^2")
    groups: list[TowerGroup] | None = _f("by number of senses")
    controls: dict[str, TowerControl] | None = _f("controls")
    claim: dict = _f("scorecard row")
    caveats: list = _f("caveats")
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    trajectories: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    timings: dict = dataclasses.field(default_factory=dict)
