"""The paper's claims as data, and the verdict rules that judge them, written once.

Every claim of the paper behind normscope (docs/theory.md) is a :class:`Claim` in :data:`CLAIMS`: what it says,
the paper's figure quoted as the paper gives it, the claimed direction and the claimed **size**
(:class:`Size`: a range, a point with a declared tolerance, a bound, or none). The stage packages
build their own scorecard rows from their result dicts (``probes/claims.py``, ``lab/claims.py``,
``signals/claims.py``, ``similarity/claims.py``, ``retrieval/claims.py``) with :func:`claim_row`,
so ``normscope retrieval --json`` and ``normscope similarity --json`` carry the same rows as the
report.

Each row gets two verdicts and a headline:

- **direction** (:func:`direction_verdict`): ``reproduced`` when the 95 % CI excludes 0 on the
  claimed side (and a paired test given beside it agrees), ``refuted`` when it excludes 0 on the
  other side, ``inconclusive`` otherwise; a claim of an association without a stated direction is
  reproduced when the CI excludes 0 on either side.
- **size** (:func:`size_verdict`), against the claimed size: ``consistent`` (the CI meets the
  claimed range), ``smaller`` / ``larger`` (the CI lies wholly on the zero side of it / beyond it);
  for a bound ``<= b``: ``consistent`` when the whole CI is at most ``b``, ``larger`` when the whole
  CI exceeds it; ``undetermined`` otherwise or without a CI.
- **headline** (:func:`headline`, the rule :data:`HEADLINE_RULE`): a failed gate first (``not
  decided at this size`` / ``not testable here``); then ``refuted`` when the direction is refuted
  or the CI excludes the claimed size on the side that contradicts the claim (for a claimed
  effect: on the side of zero, **even if the CI includes 0**); ``reproduced`` when the direction
  is reproduced (or none is claimed) and the claimed size is not excluded; ``inconclusive``
  otherwise.

Two shared rules come before the headline rule: a **degenerate CI** (zero width: both ends equal, e.g. a
fitted parameter that changes no ranking, so a scorer is compared with itself) is never a decision, the row is
``not decided at this size`` with that reason; and a claim whose size is only "strong" is read against the
declared minimum :data:`STRONG_RHO`.

Every row has a **kind** (:data:`KINDS`): the paper's own claims (``paper``), checks of the derivation on a
design that meets the theorem's assumptions by construction (``construction``: the free-table lab) and
exploratory questions the paper leaves open (``exploratory``: the optimizers, never-used token rows,
human-rated pairs, the balance on a pretrained encoder). The headline counts each kind apart
(:func:`kind_counts`, :func:`counts_text`); only the paper's claims can be "reproduced" claims of the paper.

This is the interval reading of equivalence testing: a 95 % CI lying wholly outside the claimed
range rejects every value of the range at the 2.5 % level on that side, as the two one-sided tests
(TOST) do (Schuirmann 1987, J. Pharmacokinet. Biopharm. 15:657; Lakens 2017, Soc. Psychol.
Personal. Sci. 8:355). A result that excludes 0 but also the claimed size is therefore not a
reproduction of the claim as stated.

:func:`check_one_verdict_per_statistic` enforces that two rows resting on the same statistic
(the ``statistic`` key of a row) never carry different verdicts.
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
