"""Side-by-side reports (issue 38 item 8): the console scorecard never cuts a model's cell, and the stages that do
not depend on the model (the labs) run once for all models."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console

from normscope.claims import CLAIMS, claim_row, judge, not_testable_row
from normscope.report import ReportConfig, Sizes

LONG = ["sentence-transformers/all-MiniLM-L6-v2", "hf:sentence-transformers/paraphrase-multilingual-mpnet-base-v2"]


def test_every_models_cell_is_whole_at_80_columns(tmp_path):
    from normscope.cli.report import print_multi_summary

    keys = [k for k, c in CLAIMS.items() if c.sign in (1, -1)][:4]
    claims = {}
    for j, m in enumerate(LONG):
        rows = [claim_row(k, measured=0.1 * CLAIMS[k].sign * (j + 1), ci=[0.05 * CLAIMS[k].sign, 0.15 * CLAIMS[k].sign],
                          judged=judge(k, 0.1 * CLAIMS[k].sign, [0.05 * CLAIMS[k].sign, 0.15 * CLAIMS[k].sign]))
                for k in keys]
        claims[m] = rows + [not_testable_row(k, "needs data") for k in CLAIMS if k not in keys]
    summary = {"report": {"models": LONG, "preset": "quick", "seconds": 3.0}, "claims": claims}
    res = SimpleNamespace(summary=summary, errors={}, index=tmp_path / "index.html", summary_path=tmp_path / "s.json")
    console = Console(record=True, width=80)
    print_multi_summary(res, console)
    text = console.export_text()
    lines = text.splitlines()
    from normscope.cli.report import _claim_cell

    for k in keys:
        i = next(n for n, ln in enumerate(lines) if ln.startswith(CLAIMS[k].claim[:40]))
        for j, m in enumerate(LONG):  # the cell of each model whole, after its (possibly shortened) name
            cell = _claim_cell(claims[m][keys.index(k)], False)
            assert lines[i + 1 + j].endswith(cell) and f"{0.1 * (j + 1):.3f} [" in cell, (lines[i + 1 + j], cell)
    assert f"{len(CLAIMS) - len(keys)} claims not testable here for any model" in text
    assert all(len(ln) <= 80 for ln in lines if not ln.startswith(("report:", "numbers:"))), text


def test_model_independent_stages_run_once(tmp_path, capsys):
    from normscope.encoders import model_slug
    from normscope.report.multi import run_multi_report

    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(lab_steps=300, lab_snapshots=8, lab_probe_batches=10),
                       only=("lab",))
    console = Console(record=True, width=200)
    res = run_multi_report(cfg, LONG, console=console, progress=False)
    log = console.export_text()
    first, second = (tmp_path / "r" / "models" / model_slug(m) for m in LONG)
    assert log.count("lab: started") == 1 and "lab: cached" in log, log
    assert f"model {LONG[1]}: lab: the same for every model (the labs train their own encoders): reused from {first}" in log
    a, b = (json.loads((d / "stages" / "lab.json").read_text()) for d in (first, second))
    assert a == b  # the same record, computed once
    rec = res.results[LONG[1]].records["lab"]
    assert rec.cached and all((second / f.file).is_file() for f in rec.figures())
    s = [res.results[m].summary["training_lab"]["result"]["mean_abs_rel_error"] for m in LONG]
    assert s[0] == s[1]
    assert Path(res.index).is_file()
