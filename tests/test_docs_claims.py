"""docs/report.md's table of claims names every scorecard row of the registry, with the row's kind.

The table is the reader's key to the scorecard; two rows added to the report (specificity_hierarchy,
atypical_input_shuffle) and one lab row were missing from it until this test.
"""

from __future__ import annotations

import re
from pathlib import Path

from normscope.claims import CLAIMS

DOC = Path(__file__).resolve().parents[1] / "docs" / "report.md"


def test_every_claim_has_a_row_with_its_kind():
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|((?: ?`[a-z0-9_]+`,?)+) \| ([a-z]+)", line)
        if m:
            for key in re.findall(r"`([a-z0-9_]+)`", m.group(1)):
                rows[key] = m.group(2)
    missing = [k for k in CLAIMS if k not in rows]
    assert missing == [], f"docs/report.md has no row for {missing}"
    assert {k: rows[k] for k in CLAIMS if rows[k] != CLAIMS[k].kind} == {}
