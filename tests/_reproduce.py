"""Run the reproduce commands a report page prints and compare their JSON with the page's numbers."""

from __future__ import annotations

import html
import json
import math
import shlex
from pathlib import Path

import pytest

#: keys of a command's JSON that measure wall time, not results
TIMING_KEYS = {"wall_s", "cpu_s", "steps_per_s", "timings_s", "timings"}


def same(got, ref, path="", rel=1e-9):
    """Recursive equality of two JSON values (floats to ``rel``), ignoring timing keys."""
    if isinstance(ref, dict):
        assert isinstance(got, dict), path
        keys = set(ref) - TIMING_KEYS
        assert keys == set(got) - TIMING_KEYS, (path, keys ^ (set(got) - TIMING_KEYS))
        for k in keys:
            same(got[k], ref[k], f"{path}.{k}", rel)
    elif isinstance(ref, list):
        assert isinstance(got, list) and len(got) == len(ref), path
        for i, (a, b) in enumerate(zip(got, ref)):
            same(a, b, f"{path}[{i}]", rel)
    elif isinstance(ref, float) and not (isinstance(got, float) and math.isnan(got) and math.isnan(ref)):
        assert got == pytest.approx(ref, rel=rel, abs=1e-12), path
    else:
        assert got == ref, path


def run_page_commands(out: Path, section: str, tmp_path: Path, monkeypatch) -> list[dict]:
    """Run, in the report folder ``out``, the commands that ``out/summary.json`` prints for ``section`` (the
    ``command`` shell line, split at `` ; ``), their ``--json`` and ``-o`` sent to ``tmp_path``; their JSON outputs.

    Also checks that the page shows each command.
    """
    from normscope.cli import run

    summary = json.loads((out / "summary.json").read_text())
    page = (out / "index.html").read_text()
    line = summary[section]["command"]
    outputs = []
    monkeypatch.chdir(out)
    for i, text in enumerate(line.split(" ; ")):
        assert html.escape(text, quote=True) in page or html.escape(text, quote=False) in page, text
        argv = shlex.split(text)
        assert argv[0] == "normscope", text
        argv = argv[1:]
        js = tmp_path / f"{section}_{i}.json"
        for flag, to in (("--json", js), ("-o", tmp_path / f"{section}_{i}.parquet")):
            if flag in argv:
                argv[argv.index(flag) + 1] = str(to)
        assert run(argv) == 0, text
        outputs.append(json.loads(js.read_text()))
    return outputs


def check_reproduces(out: Path, records: dict, sections: list[str], tmp_path: Path, monkeypatch, rel=1e-9) -> None:
    """Each of ``sections``' printed commands, run, yields that section's ``result`` in summary.json
    (through the stage's :meth:`~normscope.report.stage.Stage.section_results`)."""
    from normscope.report.stages import stage_of_section

    summary = json.loads((out / "summary.json").read_text())
    for key in sections:
        stage = stage_of_section(key)
        outputs = run_page_commands(out, key, tmp_path, monkeypatch)
        got = stage.section_results(records[stage.name].sections[key].commands, outputs)
        same(got[key], summary[key]["result"], key, rel)
