"""summary.json as typed values: what the CLI summary, the availability lines and the side-by-side page read.

:func:`normscope.report.runner.run_report` writes summary.json as plain JSON (``report``, one entry per
section, ``claims``, ``claims_tested``, ``missing_data``, ``what_this_says``); :meth:`ReportSummary.from_json`
reads it back with the scorecard rows as :class:`~normscope.claims.ClaimRow` s, the per-dataset lines as
:class:`MissingData` and the sections' entries as :class:`SectionEntry` (``summary.section(key)``).
Every value keeps the key order of the JSON it was read from (:class:`~normscope.values.Record`).
"""

from __future__ import annotations

import dataclasses

from normscope.claims import ClaimRow
from normscope.values import Record

__all__ = ["ReportInfo", "MissingEntry", "SectionEntry", "ClaimsTested", "MissingData", "ReportSummary"]


@dataclasses.dataclass(frozen=True)
class ReportInfo(Record):
    """``summary["report"]``: the run (model or ``models``, preset, precision, the runtime that ran the forward
    passes and why, seconds, the stages run and cached, sizes)."""

    model: str | None = None
    models: list[str] | None = None
    preset: str | None = None
    precision: str | None = None
    runtime: str | None = None
    seconds: float | None = None
    stages_run: list[str] | None = None
    stage_cached: dict[str, bool] | None = None
    sizes: dict | None = None


@dataclasses.dataclass(frozen=True)
class MissingEntry(Record):
    """A dataset a section lacks (:func:`normscope.report.missing.missing_entry`): its ``title``, why it is not here
    (``cause``) and, when the section says so, the ``claims`` its absence blocks (``dataset``: its name, when the
    entry is keyed by a signal)."""

    dataset: str | None = None
    title: str | None = None
    cause: str | None = None
    claims: list[str] | None = None


@dataclasses.dataclass(frozen=True)
class SectionEntry(Record):
    """One section's entry of summary.json (:meth:`normscope.report.stage.Section.summary`)."""

    status: str | None = None
    reason: str | None = None
    missing: dict[str, MissingEntry] | None = None
    command: str | None = None
    sizes: str | None = None
    result: dict | None = None
    derived: dict | None = None
    key_numbers: list | None = None


@dataclasses.dataclass(frozen=True)
class ClaimsTested(Record):
    """How many of the paper's claims a run tested (``summary["claims_tested"]``).

    ``verdicts`` counts every row; ``kinds`` counts each kind of row apart (``{kind: {verdict: n}}``,
    :func:`normscope.claims.kind_counts`: the paper's claims, checks by construction, exploratory rows) and
    ``headline`` is that count in words (:func:`normscope.claims.counts_text`), as the page and the console
    print it. Summaries written before kinds existed lack the last two (they read as None)."""

    total: int | None = None
    tested: int | None = None
    not_tested: list[str] | None = None
    verdicts: dict[str, int] | None = None
    kinds: dict[str, dict[str, int]] | None = None
    headline: str | None = None


@dataclasses.dataclass(frozen=True)
class MissingData(Record):
    """One missing dataset (``summary["missing_data"][i]``): the sections it stopped, the claims it left untested,
    and ``line``, the one sentence the page and the CLI print."""

    dataset: str | None = None
    title: str | None = None
    cause: str | None = None
    sections: list[str] | None = None
    claims: list[str] | None = None
    line: str | None = None


@dataclasses.dataclass(frozen=True)
class ReportSummary(Record):
    """summary.json of a one-model report (the sections' entries are the other keys: :meth:`section`)."""

    report: ReportInfo | None = None
    claims: list[ClaimRow] | None = None
    claims_tested: ClaimsTested | None = None
    missing_data: list[MissingData] | None = None
    what_this_says: dict[str, list[str]] | None = None

    def section(self, key: str) -> SectionEntry:
        """The entry of section ``key`` (an empty one when the summary has none)."""
        extra = dict(self._extra)
        return SectionEntry.from_json(extra[key] if isinstance(extra.get(key), dict) else {})
