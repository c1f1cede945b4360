"""Gathering the claims scorecard (``summary.json["claims"]``, the page's first section).

Each stage puts the rows of the claims it tests under ``"claims"`` in its section dicts (built by
the stage packages' builders with :func:`normscope.claims.claim_row`). :func:`gather_claims`
returns one row per claim of :data:`~normscope.claims.CLAIMS`, in that order: the stage's row
when it ran, otherwise a ``not testable here`` row that says why (the stage was not run, was
unavailable, or failed), taken from the same stage record; the rows on the paper's models and
benchmarks come from the run's model. It refuses a scorecard in which two rows resting on the same
statistic carry different verdicts (:func:`~normscope.claims.check_one_verdict_per_statistic`).
"""

from __future__ import annotations

from collections.abc import Mapping

from normscope.claims import CLAIMS, check_one_verdict_per_statistic, not_testable_row, paper_scope_rows

__all__ = ["CLAIM_SECTIONS", "gather_claims"]

#: The page section whose stage tests each claim (where a missing row's reason is read).
CLAIM_SECTIONS: dict[str, str] = {k: c.section for k, c in CLAIMS.items()}

_STATUS_WORDS = {"not_run": "not run", "unavailable": "not available", "failed": "failed"}


def gather_claims(sections: Mapping[str, Mapping], model: str | None = None) -> list[dict]:
    """One scorecard row per claim, in :data:`~normscope.claims.CLAIMS` order.

    Parameters
    ----------
    sections : mapping of section key -> section dict
        The sections of the stage records (each may hold ``"claims"``, a list of rows, and
        ``"status"`` / ``"reason"``).
    model : str, optional
        The run's model (for the row on the paper's models); default the set-up section's.

    Returns
    -------
    list of dict
        Rows as built by :func:`~normscope.claims.claim_row`; a claim that no section tested gets
        verdict ``not testable here`` and, as its reason, the status and reason of the section
        that would have tested it.

    Raises
    ------
    ValueError
        Two rows with the same ``statistic`` and different verdicts.
    """
    found: dict[str, dict] = {}
    for sec in sections.values():
        for row in (sec or {}).get("claims") or []:
            found.setdefault(row["key"], dict(row))
    if model is None:
        model = ((sections.get("setup") or {}).get("result") or {}).get("model")
    for row in paper_scope_rows(model):
        found.setdefault(row["key"], row)
    rows = []
    for key in CLAIMS:
        if key in found:
            rows.append(found[key])
            continue
        sec_key = CLAIM_SECTIONS.get(key, "")
        sec = sections.get(sec_key) or {}
        status = sec.get("status")
        if status in _STATUS_WORDS:
            why = f"section {_STATUS_WORDS[status]}: {sec.get('reason') or 'no reason given'}"
        elif status == "ok":
            why = "the section ran but reported no figure for this claim"
        else:
            why = "no stage of this run tests it"
        rows.append(not_testable_row(key, why, section=sec_key))
    check_one_verdict_per_statistic(rows)
    return rows
