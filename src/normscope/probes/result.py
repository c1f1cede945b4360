"""The probe's result type: typed summary fields with display labels, the per-item table, strict JSON."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import pandas as pd

from normscope.results import StageResult, summary_field
from normscope.values import Interval, JunkSummary, Record, Spread

__all__ = ["ProbeResult", "ProbeCorrelation", "CorrelationCI", "BalanceStats", "BalanceCI", "NullSummary", "BalanceNull",
           "BalanceP", "Balance", "KConvergence", "D2Check", "SecondOrder", "FiniteDifferences", "DecayFit",
           "Reliability", "RelativeSE", "GradError"]


@dataclasses.dataclass(frozen=True)
class CorrelationCI(Record):
    """The confidence intervals of one probe correlation and what they resample (``resamples``)."""

    pearson: Interval | None = None
    spearman: Interval | None = None
    level: float | None = None
    n_boot: int | None = None
    n_undefined: int | None = None
    resamples: str | None = None


@dataclasses.dataclass(frozen=True)
class ProbeCorrelation(Record):
    """A correlation of two per-item probe quantities ``x`` and ``y`` (see :class:`ProbeResult`).

    ``n`` items enter it; ``n_excluded`` are left out, counted by reason in ``excluded`` (the same mask);
    ``ci`` resamples batches and items, ``ci_items_only`` items with the batches fixed; a correlation
    that could not be computed has ``pearson = spearman = None`` and a ``note``.
    """

    x: str | None = None
    y: str | None = None
    n_excluded: int | None = None
    excluded: dict | None = None
    pearson: float | None = None
    spearman: float | None = None
    n: int | None = None
    ci: CorrelationCI | None = None
    ci_items_only: CorrelationCI | None = None
    p_value: float | None = None
    p_text: str | None = None
    p_method: str | None = None
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class BalanceStats(Record):
    """The statistics of Theorem 1's requirement q(x) = c (:data:`normscope.probes.balance.STATISTICS`)."""

    dispersion: float | None = None
    share_negative_q: float | None = None
    mean_abs_rel_error: float | None = None
    heat_share: float | None = None


@dataclasses.dataclass(frozen=True)
class BalanceCI(Record):
    """The CIs of :class:`BalanceStats` (batches and items)."""

    dispersion: Interval | None = None
    share_negative_q: Interval | None = None
    mean_abs_rel_error: Interval | None = None
    heat_share: Interval | None = None


@dataclasses.dataclass(frozen=True)
class NullSummary(Record):
    """A statistic under the permutation null: its ``mean`` and central 95 % ``range``."""

    mean: float | None = None
    range: Interval | None = None


@dataclasses.dataclass(frozen=True)
class BalanceNull(Record):
    """:class:`NullSummary` of each statistic of :class:`BalanceStats`."""

    dispersion: NullSummary | None = None
    share_negative_q: NullSummary | None = None
    mean_abs_rel_error: NullSummary | None = None
    heat_share: NullSummary | None = None


@dataclasses.dataclass(frozen=True)
class BalanceP(Record):
    """One-sided permutation p-values of each statistic of :class:`BalanceStats`."""

    dispersion: float | None = None
    share_negative_q: float | None = None
    mean_abs_rel_error: float | None = None
    heat_share: float | None = None


@dataclasses.dataclass(frozen=True)
class Balance(Record):
    """:func:`normscope.probes.balance.balance_test`: the statistics, their permutation null and CIs."""

    primary: str | None = None
    n_items: int | None = None
    c: str | None = None
    c_fit: float | None = None
    statistics: BalanceStats | None = None
    method: str | None = None
    ci_resamples: str | None = None
    n_perm: int | None = None
    n_boot: int | None = None
    null: BalanceNull | None = None
    p_below: BalanceP | None = None
    p_above: BalanceP | None = None
    ci: BalanceCI | None = None


@dataclasses.dataclass(frozen=True)
class KConvergence(Record):
    """:func:`normscope.probes.uncertainty.k_convergence`: one row per number of batches K, keyed by correlation field
    (``{"batches": K, field: {"spearman", "ci"}}``)."""

    method: str | None = None
    rows: list[dict] | None = None


@dataclasses.dataclass(frozen=True)
class D2Check(Record):
    """A float64 check of the second-order term D2 on one chunk: relative differences to the reference."""

    items: int | None = None
    median_rel_diff: float | None = None
    max_rel_diff: float | None = None
    verdict: str | None = None
    reference: str | None = None


@dataclasses.dataclass(frozen=True)
class SecondOrder(Record):
    """How D2's term was computed (``method``, ``description``), its float64 ``check`` and a ``fallback`` note."""

    method: str | None = None
    description: str | None = None
    check: D2Check | None = None
    fallback: str | None = None


@dataclasses.dataclass(frozen=True)
class FiniteDifferences(Record):
    """The finite differences of D2: dtype, step target, median step, and their float64 ``check``."""

    dtype: str | None = None
    target: float | None = None
    eps_median: float | None = None
    check: D2Check | None = None


@dataclasses.dataclass(frozen=True)
class DecayFit(Record):
    """The (E11) least-squares fit of lambda_rad and eta (``error`` says why it failed)."""

    lambda_rad: float | None = None
    eta: float | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Reliability(Record):
    """Split-half reliability of drift and heat across items (Spearman-Brown corrected)."""

    drift_split_half: float | None = None
    heat_split_half: float | None = None
    method: str | None = None


@dataclasses.dataclass(frozen=True)
class RelativeSE(Record):
    """Median relative standard error per item of heat and drift."""

    heat: float | None = None
    drift: float | None = None


@dataclasses.dataclass(frozen=True)
class GradError(Record):
    """The bf16 pair gradient against fp32 on batch ``batch``: relative error and cosine to the fp32 gradient."""

    rel_error: float | None = None
    cosine: float | None = None
    batch: int | None = None
    reference: str | None = None


@dataclasses.dataclass
class ProbeResult(StageResult):
    """Output of :func:`~normscope.probes.run_probe` (``normscope probe``).

    Every summary number is a field with its display label (:meth:`labels`), read by the CLI table
    and the report; :meth:`to_dict` is the command's ``--json``. Each correlation field is a dict
    ``{x, y, pearson, spearman, n, n_excluded, excluded, ci, ci_items_only, p_value, p_text,
    p_method}`` where ``ci`` resamples batches and items and ``ci_items_only`` items with the batches
    fixed (each says so in its ``resamples`` key), ``n`` counts the items the correlation used and
    ``excluded`` counts the others by the reason their value is undefined. A correlation that could
    not be computed has ``pearson = spearman = None`` and a ``note``.

    Attributes
    ----------
    items : pandas.DataFrame
        One row per probe item (junk left out), in input order. Columns ``id, [text], r, d1, d2,
        s, displacement, heat_rate, heat, heat_se, drift, drift_se, s_var, heat_cancelled_by_d2,
        lambda_rad_per_lambda, lambda_rad, q, q_over_c, r_eq, r_eq_flag, r_eq_cfit,
        r_eq_cfit_flag`` and, for a checkpoint trained without decay, ``r_eq_nodecay,
        r_eq_nodecay_flag``. Units: ``r`` in ||z||, heat R^4 per step, drift R^2 per step, q per step.
    moments : ProbeMoments or None
        The raw per-batch quantities (not in the JSON).
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "moments")
    #: The correlation fields, in display order (None-valued ones are left out of tables).
    CORRELATIONS: ClassVar[tuple[str, ...]] = (
        "corr_norm_heat", "corr_norm_drift", "corr_req_norm", "corr_req_lambda_rad_norm", "corr_req_nodecay_norm",
        "corr_norm_displacement", "corr_norm_heat_rate", "corr_norm_d2",
    )

    model: str = summary_field("model", default=None)
    fingerprint: dict | None = summary_field("model fingerprint", default=None)
    n_items: int = summary_field("probe items P", unit="items", default=None)
    junk: JunkSummary = summary_field("junk items left out", default=None)
    n_truncated: int | None = summary_field("items truncated at the model's max length", unit="items", default=None)
    max_seq_length: int | None = summary_field("model max length", unit="tokens", default=None)
    batches: int = summary_field("probe batches K", default=None)
    batch_size: int = summary_field("probe batch size B", unit="pairs", default=None)
    batch_size_source: str = summary_field("why this B", default=None)
    tau: float = summary_field("temperature \u03c4", default=None)
    tau_source: str = summary_field("why this \u03c4", default=None)
    lr: float = summary_field("learning rate \u03b7", default=None)
    lr_source: str = summary_field("why this \u03b7", default=None)
    weight_decay: float | None = summary_field("weight decay \u03bb used", default=None)
    weight_decay_source: str = summary_field("why this \u03bb", default=None)
    decay_reading: str = summary_field("how \u03bb is read", default=None)
    training: dict = summary_field("the checkpoint's training values, each with its source", default=None)
    pairs: str = summary_field("probe pairs", default=None)
    n_pairs: int = summary_field("pairs available", unit="pairs", default=None)
    decay_mask: str = summary_field("decay mask \u03b8_D", default=None)
    loss: str = summary_field("probe loss", default=None)
    attention: list[str] = summary_field("attention switched for forward-mode AD", default=None)
    seed: int = summary_field("seed", default=None)
    corr_norm_heat: ProbeCorrelation | None = summary_field("R vs heat \u03a3\u00b2", default=None)
    corr_norm_drift: ProbeCorrelation | None = summary_field("R vs drift D~", default=None)
    corr_req_norm: ProbeCorrelation | None = summary_field("R_eq(x; c_fit) (E7) vs R", default=None)
    corr_req_lambda_rad_norm: ProbeCorrelation | None = summary_field("R_eq(x; \u03bb_rad) (E7) vs R", default=None)
    corr_req_nodecay_norm: ProbeCorrelation | None = summary_field("R_eq(x; c = 0) (E7, no decay) vs R", default=None)
    corr_norm_displacement: ProbeCorrelation | None = summary_field("R vs R-free displacement E||a||\u00b2 (guard)", default=None)
    corr_norm_heat_rate: ProbeCorrelation | None = summary_field("R vs heat rate S/R\u2074 (guard)", default=None)
    corr_norm_d2: ProbeCorrelation | None = summary_field("R vs second-order drift D2 (guard)", default=None)
    k_convergence: KConvergence = summary_field("headline statistics at K/4, K/2, K", default=None)
    heat_cancelled_by_d2: float | None = summary_field("median share of heat cancelled by D2 (\u22122 D2 R\u00b2 / S)", default=None)
    n_negative_q: int = summary_field("items with q < 0 (net inward motion without decay)", unit="items", default=None)
    n_negative_lambda_rad: int = summary_field("items with \u03bb_rad/\u03bb < 0 under this decay mask", unit="items", default=None)
    c_fit: float | None = summary_field("fitted c = median q", unit="per step", default=None)
    q_over_c_mean: float | None = summary_field("mean q/c", default=None)
    q_over_c: Spread = summary_field("q/c", default=None)
    r_eq_cfit_mean_abs_rel_error: float | None = summary_field("mean |R_eq(c_fit) \u2212 R| / R", default=None)
    balance: Balance = summary_field("Theorem 1's requirement q(x) = c for every item, against a permutation null",
                                  default=None)
    fit_e11: DecayFit = summary_field("(E11) least-squares \u03bb_rad and \u03b7", default=None)
    lambda_rad_per_lambda: Spread = summary_field("\u03bb_rad/\u03bb over items", default=None)
    reliability: Reliability = summary_field("split-half reliability", default=None)
    median_rel_se: RelativeSE = summary_field("median relative standard error per item", default=None)
    norm: Spread = summary_field("observed norm R", unit="||z||", default=None)
    second_order: SecondOrder = summary_field("second-order radial term of D2", default=None)
    fd: FiniteDifferences | None = summary_field("finite differences for D2", default=None)
    precision: str = summary_field("precision of the pair-gradient passes (the rest is fp32/fp64)", default="fp32")
    grad_error_vs_fp32: GradError | None = summary_field("bf16 pair gradient vs fp32 (batch 0)", default=None)
    loss_mean: float = summary_field("mean InfoNCE loss of the probe batches", default=None)
    timings_s: dict[str, float] = summary_field("time", unit="s", default=None)
    caveats: list[str] = summary_field("caveats", default=None)
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    moments: Any = None

    @property
    def summary(self) -> dict:
        """The ``--json`` dict (:meth:`to_dict`)."""
        return self.to_dict()

    def correlations(self) -> list[tuple[str, str, ProbeCorrelation]]:
        """``[(field, label, block)]`` of the correlations that were computed, in display order."""
        labels = self.labels()
        return [(k, labels[k][0], getattr(self, k)) for k in self.CORRELATIONS if getattr(self, k) is not None]

    def training_value(self, key: str):
        """The checkpoint's known training value ``key`` (e.g. ``"optimizer"``) without its source; None when the
        training values do not say (``training`` holds ``{key: {"value", "source"}}``, :mod:`normscope.probes.training`)."""
        v = (self.training or {}).get(key)
        return v.get("value") if isinstance(v, dict) else v
