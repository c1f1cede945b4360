"""``normscope report``: run every stage on one model and write a self-contained HTML report."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope._format import ci, duration, num
from normscope.cli import app
from normscope.cli._options import Address, Device, Engine, Models, Precision, Seed, models_of, split_list
from normscope.datasets import wordfreq_spec
from normscope.validate import check_output_path


@app.command()
def report(
    model: Models = None,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output directory (index.html, summary.json, *.png, stages/).")] = Path("out/report"),
    quick: Annotated[bool, typer.Option("--quick", help="Subsets so the whole run takes < 5 min on 2 CPU cores (sizes stated on the page).")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", metavar="DIR", help="Data folder searched first (default: $NORMSCOPE_DATA, else ../shared/data); absent datasets are fetched into $NORMSCOPE_CACHE/data (docs/data.md). Same as `normscope --data DIR report`.")] = None,
    seed: Seed = 0,
    device: Device = "cpu",
    only: Annotated[Optional[list[str]], typer.Option("--only", callback=split_list, metavar="STAGE", help="Stages to run (repeatable or a comma list): setup, norms, probes, lab, transformer, signals, similarity, retrieval. The other sections keep what an earlier run wrote in OUT.")] = None,
    items: Annotated[Optional[str], typer.Option("--items", help="Items of the norm distribution: a file (.txt one per line, .jsonl, .csv) or wordfreq:N (default: wordfreq:5000, --quick wordfreq:2000).")] = None,
    signals: Annotated[Optional[list[str]], typer.Option("--signals", callback=split_list, metavar="SIGNAL", help="Semantic signals to run (repeatable or a comma list; default all): frequency, specificity, concreteness, uncertainty.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Ignore cached stage results in OUT/stages.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never download a dataset (a section that needs an absent "
                                          "one says which `normscope data fetch` to run); same as `normscope --offline report`.")] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write summary.json to this path.")] = None,
    precision: Precision = "fp32",
    engine: Engine = "local",
    address: Address = None,
) -> None:
    """Reproduce the whole analysis for one model (or several, side by side): HTML report, summary.json and figures."""
    from normscope.data import settings
    from normscope.report import FULL, QUICK, STAGE_NAMES, ReportConfig, run_report  # torch: start-up stays light
    from normscope.signals.labels import SIGNALS

    err = Console(stderr=True)
    if json_path is not None:
        check_output_path(json_path, "--json")
    sizes = QUICK if quick else FULL
    words = wordfreq_spec(items) if items is not None else None
    if words is not None:
        sizes = dataclasses.replace(sizes, words=words)
    models = models_of(model)
    config = ReportConfig(
        out=out, model=models[0], quick=quick, data=data, seed=seed, device=device, only=tuple(only or STAGE_NAMES),
        sizes=sizes, items=Path(items) if items is not None and words is None else None, force=force,
        signals=tuple(signals or SIGNALS), precision=precision, engine=engine, address=address,
    )
    out_console = Console()
    if not out_console.is_terminal:
        out_console = Console(width=140)
    if len(models) > 1:
        from normscope.report.multi import run_multi_report  # torch: start-up stays light

        with settings(offline=True if offline else None):
            multi = run_multi_report(config, models, console=err, json_path=json_path)
        print_multi_summary(multi, out_console)
        if multi.failed:
            err.print(f"[red]failed: {'; '.join(multi.failed)}[/] (see the page and {out}/models/)")
            raise typer.Exit(1)
        return
    with settings(offline=True if offline else None):
        result = run_report(config, console=err, json_path=json_path)
    print_summary(result, out_console)
    if result.failed:
        err.print(f"[red]failed stages: {', '.join(result.failed)}[/] (see the page and {out}/stages/)")
        raise typer.Exit(1)


def print_summary(result, console: Console) -> None:
    """One-screen text summary: one row per section with its headline figure, then the report path."""
    from normscope.report.stages import STAGES  # imports torch: the CLI's start-up stays light

    s = result.summary
    rep = s["report"]
    ran = rep["stages_run"]
    n_cached = sum(bool(rep["stage_cached"][st]) for st in ran)
    cached = f"; {n_cached} of {len(ran)} stage(s) from the cache" if n_cached else ""
    table = Table(title=f"normscope report: {rep['model']} ({rep['preset']} sizes, "
                        f"{duration(rep['seconds'] or 0)}{cached})", show_lines=False)
    table.add_column("section")
    table.add_column("status")
    table.add_column("headline")
    for st in STAGES:
        rec = result.records[st.name]
        for key, title in st.sections.items():
            sec = rec.sections[key]
            if sec.ok:
                says = s["what_this_says"].get(key) or []
                head = st.headline(sec) or (says[0] if says else "")
            else:
                head = str(sec.reason or "")
            if rec.kept:
                head = f"(kept from an earlier run) {head}"
            style = {"ok": "green", "failed": "red"}.get(sec.status.value, "yellow")
            table.add_row(title, f"[{style}]{sec.status.value}[/]", head)
    console.print(table)
    print_claims(s["claims"], console)
    console.print(f"report: [bold]{result.index.resolve()}[/]")
    console.print(f"numbers: {result.summary_path.resolve()}")


def _claim_cell(r: dict | None, failed: bool) -> str:
    if r is None:
        return "model failed" if failed else "not run"
    fig = "" if r["measured"] is None else num(r["measured"])
    if r["ci"]:
        fig += f" {ci(r['ci'])}"
    return f"{fig} {r['verdict']}".strip()


def print_multi_summary(result, console: Console) -> None:
    """The scorecard of a side-by-side report: one row per claim, one column per model (figure [CI] verdict)."""
    from normscope.report.claims import CLAIMS  # the report package imports torch: the CLI's start-up stays light

    s = result.summary
    models = s["report"]["models"]
    table = Table(title=f"normscope report: {len(models)} models side by side ({s['report']['preset']} sizes, "
                        f"{duration(s['report']['seconds'])})")
    table.add_column("claim")
    for m in models:
        table.add_column(m)
    for key, (claim, _) in CLAIMS.items():
        rows = {m: next((c for c in s["claims"].get(m) or [] if c["key"] == key), None) for m in models}
        table.add_row(claim, *[_claim_cell(rows[m], m in result.errors) for m in models])
    console.print(table)
    for m, e in result.errors.items():
        console.print(f"[red]{m}[/]: {e}")
    console.print(f"report: [bold]{result.index.resolve()}[/]")
    console.print(f"numbers: {result.summary_path.resolve()}")


def print_claims(claims: list[dict], console: Console) -> None:
    """The claims scorecard as a table: claim, paper, normscope's figure with its CI, verdict and why."""
    if not claims:
        return
    table = Table(title="claims scorecard (verdicts computed from this run's figures and CIs)", show_lines=False)
    for col in ("claim", "paper", "this run: statistic", "[95% CI]", "verdict", "why"):
        table.add_column(col)
    colour = {"reproduced": "green", "refuted": "red", "inconclusive": "yellow"}
    for c in claims:
        fig = num(c["measured"])
        stat = _lead(str(c["what"] or ""))  # e.g. "Pearson r(R, heat Σ²) over the probe items"
        v = c["verdict"]
        table.add_row(c["claim"], c["paper"], f"{stat}: {fig}" if stat else fig, ci(c["ci"]) if c["ci"] else "",
                      f"[{colour.get(v, 'dim')}]{v}[/]", str(c["why"]))
    console.print(table)


def _lead(text: str) -> str:
    """``text`` up to its first comma or semicolon outside parentheses or brackets (the statistic's name)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif ch in ",;" and depth == 0:
            return text[:i].strip()
    return text.strip()
