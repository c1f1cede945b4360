"""``normscope report``: run every stage on one model and write a self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope.cli import app
from normscope.encoders import DEFAULT_MODEL


@app.command()
def report(
    model: Annotated[str, typer.Option("--model", "-m", help="Model name or path.")] = DEFAULT_MODEL,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output directory (index.html, summary.json, *.png, stages/).")] = Path("out/report"),
    quick: Annotated[bool, typer.Option("--quick", help="Subsets so the whole run takes < 5 min on 2 CPU cores (sizes stated on the page).")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", help="Shared-data directory (default: ../shared/data or $NORMSCOPE_DATA).")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Annotated[str, typer.Option("--device")] = "cpu",
    only: Annotated[Optional[str], typer.Option("--only", help="Comma-separated stages: setup,norms,probes,lab,signals,retrieval.")] = None,
    items: Annotated[Optional[Path], typer.Option("--items", help="Norm distribution of this file's items instead of wordfreq words.")] = None,
    words: Annotated[Optional[int], typer.Option("--words", min=10, help="Override the number of wordfreq words of the norm distribution.")] = None,
    signals: Annotated[str, typer.Option("--signals", help="Semantic signals to run (comma-separated).")] = "frequency,specificity,concreteness,uncertainty",
    force: Annotated[bool, typer.Option("--force", help="Ignore cached stage results in OUT/stages.")] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write summary.json to this path.")] = None,
) -> None:
    """Reproduce the whole analysis for one model: HTML report, summary.json and figures."""
    import dataclasses

    from normscope._io import check_output_path, write_json
    from normscope.report import FULL, QUICK, STAGES, ReportConfig, run_report

    err = Console(stderr=True)
    if json_path is not None:
        check_output_path(json_path)
    sizes = QUICK if quick else FULL
    if words is not None:
        sizes = dataclasses.replace(sizes, words=words)
    config = ReportConfig(
        out=out, model=model, quick=quick, data=data, seed=seed, device=device,
        only=tuple(only.split(",")) if only else STAGES, sizes=sizes, items=items, force=force,
        signals=tuple(x.strip() for x in signals.split(",") if x.strip()),
    )
    result = run_report(config, console=err)
    if json_path is not None:
        write_json(result.summary, json_path)
    print_summary(result, Console())
    if result.failed:
        err.print(f"[red]failed stages: {', '.join(result.failed)}[/] (see the page and {out}/stages/)")
        raise typer.Exit(1)


def print_summary(result, console: Console) -> None:
    """One-screen text summary: one row per section with its headline figure, then the report path."""
    from normscope.report.runner import SECTIONS
    from normscope.report.text import fmt

    s = result.summary
    table = Table(title=f"normscope report: {s['report']['model']} ({s['report']['preset']} sizes, "
                        f"{fmt(s['report'].get('seconds'), 1)} s)", show_lines=False)
    table.add_column("section")
    table.add_column("status")
    table.add_column("headline")
    for key, title in SECTIONS.items():
        sec = s.get(key, {})
        status = sec.get("status", "?")
        if status == "ok":
            says = (s.get("what_this_says") or {}).get(key) or []
            head = headline(key, sec) or (says[0] if says else "")
        else:
            head = str(sec.get("reason") or "")
        style = {"ok": "green", "failed": "red"}.get(status, "yellow")
        table.add_row(title, f"[{style}]{status}[/]", head[:160])
    console.print(table)
    console.print(f"report: [bold]{result.index.resolve()}[/]")
    console.print(f"numbers: {result.summary_path.resolve()}")


def headline(key: str, sec: dict) -> str:
    """Short headline figure of a section (the first key numbers)."""
    from normscope.report.text import fmt

    rows = sec.get("key_numbers") or []
    parts = []
    for label, value, unit in rows[:3]:
        parts.append(f"{label} {fmt(value) if isinstance(value, (int, float)) else value}{(' ' + unit) if unit else ''}")
    return "; ".join(parts)
