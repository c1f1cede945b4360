"""The typed result of ``normscope calibrate``: :class:`CalibrateResult` (the ``--json`` summary) and the records
it holds (held-out numbers, thresholds, the dataset it was fitted on and the shift).

Built by :func:`normscope.extensions.calibrate.run_calibrate`; every name here is also importable from
:mod:`normscope.extensions.calibrate`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from normscope.results import StageResult, summary_field
from normscope.retrieval.result import EceBins
from normscope.values import Interval, Record

__all__ = ["CalibrateResult", "ThresholdStats", "HeldOut", "AnswerThreshold", "DocumentThreshold", "Thresholds",
           "DatasetRef", "Shift"]


@dataclasses.dataclass(frozen=True)
class ThresholdStats(Record):
    """Precision and coverage (with bootstrap CIs over queries) of one threshold on the held-out queries."""

    threshold: float | None = None
    precision: float | None = None
    precision_ci: Interval | None = None
    coverage: float | None = None
    coverage_ci: Interval | None = None


@dataclasses.dataclass(frozen=True)
class HeldOut(Record):
    """Every held-out number of a calibrator (:func:`evaluate_calibrator`), on split ``split``."""

    n: int | None = None
    base_rate: float | None = None
    mean_p: float | None = None
    auroc: float | None = None
    auroc_ci: Interval | None = None
    ece: float | None = None
    ece_ci: Interval | None = None
    ece_bins: EceBins | None = None
    answer: ThresholdStats | None = None
    answer_at: list[ThresholdStats] | None = None
    keep_documents: ThresholdStats | None = None
    split: str | None = None


@dataclasses.dataclass(frozen=True)
class AnswerThreshold(Record):
    """The Learn-then-Test threshold on P(relevant) (:func:`normscope.extensions.calibrator.ltt_threshold`)."""

    threshold: float | None = None
    precision: float | None = None
    delta: float | None = None
    statement: str | None = None
    assumption: str | None = None


@dataclasses.dataclass(frozen=True)
class DocumentThreshold(Record):
    """The cosine threshold of the top-``k`` documents (:func:`normscope.extensions.calibrator.score_threshold`)."""

    k: int | None = None
    threshold: float | None = None


@dataclasses.dataclass(frozen=True)
class Thresholds(Record):
    """The thresholds a calibrator file holds (``thresholds``), chosen on its calibration queries."""

    answer: AnswerThreshold | None = None
    keep_documents: DocumentThreshold | None = None


@dataclasses.dataclass(frozen=True)
class DatasetRef(Record):
    """Where a calibrator was fitted or is evaluated."""

    dataset: str | None = None
    dataset_name: str | None = None
    split: str | None = None


@dataclasses.dataclass(frozen=True)
class Shift(Record):
    """A calibrator applied to another dataset than the one it was fitted on."""

    fitted_on: DatasetRef | None = None
    evaluated_on: DatasetRef | None = None
    same_dataset: bool | None = None
    note: str | None = None


@dataclasses.dataclass
class CalibrateResult(StageResult):
    """A fitted (or applied) calibrator and its held-out evaluation; ``to_dict()`` is the ``--json`` summary.

    :attr:`calibrator` is the calibrator file's content; :attr:`items` has one row per query: ``query_id``,
    ``part`` (fit, calibration, held-out), the signals, ``label``, ``p_relevant``, ``answered``.
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "timings")

    mode: str = summary_field("mode (fit or apply)")
    dataset: str = summary_field("dataset")
    dataset_name: str = summary_field("dataset name")
    model: str = summary_field("model")
    fingerprint: dict = summary_field("model fingerprint")
    target: str = summary_field("label")
    signals: list = summary_field("signals")
    signals_note: str | None = summary_field("why the default signals left out the query norm (None: they did not)")
    method: str = summary_field("map")
    split: str = summary_field("held-out split")
    parts: dict = summary_field("queries per part", unit="queries")
    seed: int = summary_field("seed")
    calibrator: dict = summary_field("calibrator (the --calibrator file)")

    @property
    def thresholds(self) -> Thresholds:
        """The calibrator's thresholds (of its file's content :attr:`calibrator`)."""
        return Thresholds.from_json((self.calibrator or {}).get("thresholds") or {})
    heldout: HeldOut = summary_field("held-out evaluation")
    shift: Shift | None = summary_field("shift: fitted on another dataset")
    junk: dict = summary_field("junk items left out")
    abstention: dict | None = summary_field("nAUC of nDCG@10 (MTEB's abstention metric) on the held-out queries",
                                            default=None)
    items: Any = None
    timings: dict = dataclasses.field(default_factory=dict)
