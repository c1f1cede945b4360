"""The paper's claims as data, and the verdict rules that judge them, written once.

The package docstring's full text (how a row gets its direction, size and headline verdicts, the kinds of rows,
the equivalence-testing reading) is :mod:`normscope.claims.registry`'s, beside :data:`CLAIMS`. The parts:
:mod:`~normscope.claims.registry` (the claims, their sizes, the verdict vocabularies, the headline rule in
words), :mod:`~normscope.claims.rules` (the verdict rules and gates; :func:`judge` returns a :class:`Judgement`)
and :mod:`~normscope.claims.rows` (:class:`ClaimRow`, the row builders, the per-kind count). Every name is
imported from here.
"""

from __future__ import annotations

from normscope.claims._numbers import fmt_value
from normscope.claims.registry import (
    CLAIMS,
    DIRECTION_VERDICTS,
    GLOSSARY,
    HEADLINE_RULE,
    HEADLINE_RULE_SHORT,
    KIND_TITLES,
    KINDS,
    SIZE_VERDICTS,
    STRONG_RHO,
    VERDICTS,
    Claim,
    Size,
)
from normscope.claims.rows import (
    ClaimRow,
    check_one_verdict_per_statistic,
    claim_row,
    counts_text,
    kind_counts,
    kind_of,
    not_testable_row,
    paper_scope_rows,
)
from normscope.claims.rules import (
    Gate,
    Judgement,
    ceiling_gate,
    degenerate_gate,
    direction_verdict,
    headline,
    judge,
    permutation_direction,
    size_verdict,
)


__all__ = [
    "KINDS",
    "KIND_TITLES",
    "STRONG_RHO",
    "kind_of",
    "kind_counts",
    "counts_text",
    "Size",
    "Claim",
    "ClaimRow",
    "Gate",
    "Judgement",
    "CLAIMS",
    "VERDICTS",
    "DIRECTION_VERDICTS",
    "SIZE_VERDICTS",
    "HEADLINE_RULE",
    "HEADLINE_RULE_SHORT",
    "GLOSSARY",
    "direction_verdict",
    "permutation_direction",
    "size_verdict",
    "headline",
    "judge",
    "claim_row",
    "degenerate_gate",
    "not_testable_row",
    "paper_scope_rows",
    "check_one_verdict_per_statistic",
    "fmt_value",
    "ceiling_gate",
]
