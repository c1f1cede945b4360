"""The claims and their verdict rules now live in the core module :mod:`normscope.claims` (so that the
stage packages build their own rows); this module re-exports them for the report's callers."""

from __future__ import annotations

from normscope.claims import (  # noqa: F401
    CLAIMS,
    DIRECTION_VERDICTS,
    GLOSSARY,
    HEADLINE_RULE,
    SIZE_VERDICTS,
    VERDICTS,
    Claim,
    Gate,
    Size,
    check_one_verdict_per_statistic,
    claim_row,
    direction_verdict,
    judge,
    not_testable_row,
    paper_scope_rows,
    size_verdict,
)

__all__ = ["CLAIMS", "VERDICTS", "DIRECTION_VERDICTS", "SIZE_VERDICTS", "HEADLINE_RULE", "GLOSSARY", "Claim", "Gate",
           "Size", "claim_row", "not_testable_row", "judge", "direction_verdict", "size_verdict", "paper_scope_rows",
           "check_one_verdict_per_statistic"]
