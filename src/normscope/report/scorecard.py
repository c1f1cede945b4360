"""Gathering the claims scorecard (``summary.json["claims"]``, the page's first section).

Each stage puts the rows of the claims it tests under ``"claims"`` in its section dicts
(:func:`normscope.report.claims.claim_row`). :func:`gather_claims` returns one row per claim of
:data:`~normscope.report.claims.CLAIMS`, in that order: the stage's row when it ran, otherwise a
``not testable here`` row that says why (the stage was not run, was unavailable, or failed),
taken from the same stage record.
"""

from __future__ import annotations

from collections.abc import Mapping

from normscope.report.claims import CLAIMS, claim_row

__all__ = ["CLAIM_SECTIONS", "gather_claims"]

#: The page section whose stage tests each claim (where a missing row's reason is read).
CLAIM_SECTIONS: dict[str, str] = {
    "theorem1_lab": "training_lab",
    "theorem1_transformer": "transformer_lab",
    "corr_norm_heat": "equilibrium_theory",
    "corr_norm_drift": "equilibrium_theory",
    "req_predicts_norm": "equilibrium_theory",
    "specificity": "semantic_signals",
    "uncertainty": "semantic_signals",
    "similarity_gain": "retrieval",
    "similarity_pairs": "similarity",
    "calibration": "calibration",
    "unused_rows_decay": "token_table",
}

_STATUS_WORDS = {"not_run": "not run", "unavailable": "not available", "failed": "failed"}


def gather_claims(sections: Mapping[str, Mapping]) -> list[dict]:
    """One scorecard row per claim, in :data:`CLAIMS` order.

    Parameters
    ----------
    sections : mapping of section key -> section dict
        The sections of the stage records (each may hold ``"claims"``, a list of rows, and
        ``"status"`` / ``"reason"``).

    Returns
    -------
    list of dict
        Rows as built by :func:`~normscope.report.claims.claim_row`; a claim that no section tested
        gets verdict ``not testable here`` and, as its reason, the status and reason of the section
        that would have tested it.
    """
    found: dict[str, dict] = {}
    for sec in sections.values():
        for row in (sec or {}).get("claims") or []:
            found.setdefault(row["key"], dict(row))
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
        rows.append(claim_row(key, measured=None, ci=None, verdict="not testable here", why=why, section=sec_key))
    return rows
