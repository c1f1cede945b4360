"""docs/api.md is the declared public API: each module's list is exactly its ``__all__`` (in order), and every
example on the page runs (each block on its own namespace; no model, no data, no network)."""

from __future__ import annotations

import importlib
import re
import sys
import types
from pathlib import Path

import pytest

import normscope

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def _sections() -> dict[str, tuple[list[str], list[str]]]:
    """Module -> (names listed, python examples), in page order."""
    out: dict[str, tuple[list[str], list[str]]] = {}
    current = None
    in_code, code = False, []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if in_code:
            if line.startswith("```"):
                out[current][1].append("\n".join(code))
                in_code, code = False, []
            else:
                code.append(line)
            continue
        m = re.match(r"^## `([\w.]+)`", line)
        if m:
            current = m.group(1)
            out[current] = ([], [])
        elif current and line.startswith("```python"):
            in_code = True
        elif current:
            m = re.match(r"^- `(\w+)`", line)
            if m:
                out[current][0].append(m.group(1))
    return out


def test_the_page_lists_every_public_module_and_exactly_its_names():
    sections = _sections()
    assert list(sections) == ["normscope", *normscope.PUBLIC_MODULES]
    for mod_name, (names, examples) in sections.items():
        mod = importlib.import_module(mod_name)
        assert names == list(mod.__all__), mod_name
        assert examples, f"{mod_name}: no example"


@pytest.mark.parametrize("mod_name", ["normscope", *normscope.PUBLIC_MODULES])
def test_each_example_runs(mod_name, monkeypatch):
    for i, code in enumerate(_sections()[mod_name][1]):
        module = types.ModuleType(f"api_example_{mod_name.replace('.', '_')}_{i}")  # a real module: dataclasses
        monkeypatch.setitem(sys.modules, module.__name__, module)  # defined in an example look their module up
        exec(compile(code, f"docs/api.md ({mod_name})", "exec"), module.__dict__)
