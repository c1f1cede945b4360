"""Gathering the claims scorecard (``summary.json["claims"]``, the page's first section).

Each stage puts the rows of the claims it tests in its sections (:attr:`Section.claims`, built by the
stage packages' builders with :func:`normscope.claims.claim_row`). :func:`gather_claims` returns one
row per claim of :data:`~normscope.claims.CLAIMS`, in that order: the stage's row when it ran,
otherwise a ``not testable here`` row that says why (the stage was not run, was unavailable, or
failed), taken from the record of the stage whose section tests the claim (:attr:`Claim.section`);
the rows on the paper's models and benchmarks come from the run's model. It refuses a scorecard in
which two rows resting on the same statistic carry different verdicts
(:func:`~normscope.claims.check_one_verdict_per_statistic`).
"""

from __future__ import annotations

from collections.abc import Mapping

from normscope.claims import CLAIMS, ClaimRow, check_one_verdict_per_statistic, not_testable_row, paper_scope_rows
from normscope.report.stage import StageRecord
from normscope.report.stages import STAGES
from normscope.report.stages.setup import SECTION as SETUP, SetupResult
from normscope.report.missing import missing_parts
from normscope.values import Status

__all__ = ["gather_claims"]


def gather_claims(records: Mapping[str, StageRecord], model: str | None = None) -> list[ClaimRow]:
    """One scorecard row per claim, in :data:`~normscope.claims.CLAIMS` order.

    Parameters
    ----------
    records : mapping of stage name -> StageRecord
    model : str, optional
        The run's model (for the rows on the paper's models); default the set-up section's.

    Returns
    -------
    list of ClaimRow
        Rows as built by :func:`~normscope.claims.claim_row`; a claim that no section tested gets
        verdict ``not testable here`` and, as its reason, the status and reason of the section that
        would have tested it; a section stopped by absent data, or an ``ok`` section whose part that tests
        the claim lacked its data (``derived["missing"]``), is named by the datasets it lacks only
        (``"lacks SciFact (BEIR) (see Missing data)"``): the full sentence, with the ways to get them, is
        said once, in ``missing_data``.

    Raises
    ------
    ValueError
        Two rows with the same ``statistic`` and different verdicts.
    """
    found: dict[str, ClaimRow] = {}
    sections = {}
    for st in STAGES:
        rec = records.get(st.name)
        for key, sec in (rec.sections.items() if rec is not None else ()):
            sections[key] = sec
            for row in sec.claims:
                found.setdefault(row.key, row)
    if model is None:
        setup = sections.get(SETUP)
        model = SetupResult.from_json(setup.result or {}).model if setup is not None else None
    for row in paper_scope_rows(model, measured=found):
        found.setdefault(row.key, row)
    rows = []
    for key, claim in CLAIMS.items():
        if key in found:
            rows.append(found[key])
            continue
        sec = sections.get(claim.section)
        if sec is None or sec.status is Status.NOT_RUN and sec.reason is None:
            why = "no stage of this run tests it"
        elif sec.status is Status.OK and (lacks := _missing_part(sec, key)):
            why = f"lacks {lacks} (see Missing data)"  # the part that tests it lacked its data: the list's words
        elif sec.status is Status.OK:
            why = "the section ran but reported no figure for this claim"
        elif sec.missing:  # said once, in full, in the missing-data list: the row only names the data
            titles = " or ".join(str(m.get("title") or name) for name, m in sec.missing.items())
            why = f"lacks {titles} (see Missing data)"
        else:
            why = f"section {sec.status.words}: {sec.reason or 'no reason given'}"
        rows.append(not_testable_row(key, why, section=claim.section))
    check_one_verdict_per_statistic(rows)
    return rows


def _missing_part(sec, key: str) -> str | None:
    """The title of the dataset whose absence kept the part of an ``ok`` section that tests claim ``key`` from
    running (:func:`normscope.report.missing.missing_parts`, as the missing-data list reads it); None when no
    such part is missing."""
    for part, entry, blocked in missing_parts(sec.derived):
        if key in blocked:
            return entry.title if entry.title is not None else (entry.dataset or part)
    return None
