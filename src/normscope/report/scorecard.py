"""Gathering the claims scorecard (``summary.json["claims"]``, the page's first section).

Each stage puts the rows of the claims it tests in its sections (:attr:`Section.claims`, built by
:mod:`normscope.report.claims`). :func:`gather_claims` returns one row per claim of
:data:`~normscope.report.claims.CLAIMS`, in that order: the stage's row when it ran, otherwise a
``not testable here`` row that says why (the stage was not run, was unavailable, or failed), taken
from the record of the stage that tests the claim (:attr:`Stage.claim_keys`).
"""

from __future__ import annotations

from collections.abc import Mapping

from normscope.report.claims import CLAIMS, claim_row
from normscope.report.stage import StageRecord
from normscope.report.stages import STAGES
from normscope.values import Status

__all__ = ["gather_claims"]


def gather_claims(records: Mapping[str, StageRecord]) -> list[dict]:
    """One scorecard row per claim, in :data:`CLAIMS` order.

    Parameters
    ----------
    records : mapping of stage name -> StageRecord

    Returns
    -------
    list of dict
        Rows as built by :func:`~normscope.report.claims.claim_row`; a claim that no section tested
        gets verdict ``not testable here`` and, as its reason, the status and reason of the section
        that would have tested it.
    """
    found: dict[str, dict] = {}
    where: dict[str, tuple[StageRecord | None, str]] = {}
    for st in STAGES:
        rec = records.get(st.name)
        where.update({key: (rec, sec) for key, sec in st.claim_keys.items()})
        for sec in (rec.sections.values() if rec is not None else ()):
            for row in sec.claims:
                found.setdefault(row["key"], dict(row))
    rows = []
    for key in CLAIMS:
        if key in found:
            rows.append(found[key])
            continue
        rec, sec_key = where.get(key, (None, ""))
        sec = rec.sections.get(sec_key) if rec is not None else None
        if sec is None:
            why = "no stage of this run tests it"
        elif sec.status is Status.OK:
            why = "the section ran but reported no figure for this claim"
        else:
            why = f"section {sec.status.words}: {sec.reason or 'no reason given'}"
        rows.append(claim_row(key, measured=None, ci=None, verdict="not testable here", why=why, section=sec_key))
    return rows
