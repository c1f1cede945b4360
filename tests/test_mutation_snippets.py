"""The mutation checks' snippets still match the code (a stale one makes scripts/mutation_check.py or
scripts/render_mutants.py stop)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation_check.py")
mutation_check = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutation_check", mutation_check)  # its dataclasses look their module up
_spec.loader.exec_module(mutation_check)
sys.path.insert(0, str(ROOT / "scripts"))  # render_mutants imports its sibling mutation_check
_spec = importlib.util.spec_from_file_location("render_mutants", ROOT / "scripts" / "render_mutants.py")
render_mutants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(render_mutants)


@pytest.mark.parametrize("mutant", mutation_check.MUTANTS + render_mutants.MUTANTS, ids=lambda m: m.name)
def test_each_mutant_snippet_occurs_exactly_once(mutant):
    text = (ROOT / mutant.path).read_text(encoding="utf-8")
    assert text.count(mutant.old) == 1, f"{mutant.name}: its snippet occurs {text.count(mutant.old)} times in {mutant.path}"
    assert mutant.new != mutant.old
