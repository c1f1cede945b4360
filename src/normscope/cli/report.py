"""``normscope report``: run every stage on one model and write a self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope.cli import app
from normscope.cli._options import Address, Engine, Precision
from normscope.encoders import DEFAULT_MODEL


@app.command()
def report(
    model: Annotated[Optional[list[str]], typer.Option("--model", "-m", metavar="MODEL", help="Model name or path; give --model "
                     "several times for one page with the models side by side (each model's own report in OUT/models/).")] = None,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output directory (index.html, summary.json, *.png, stages/).")] = Path("out/report"),
    quick: Annotated[bool, typer.Option("--quick", help="Subsets so the whole run takes < 5 min on 2 CPU cores (sizes stated on the page).")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", help="Data folder searched first (default: $NORMSCOPE_DATA, else ../shared/data); absent datasets are fetched into $NORMSCOPE_CACHE/data (docs/data.md).")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Annotated[str, typer.Option("--device")] = "cpu",
    only: Annotated[Optional[str], typer.Option("--only", help="Comma-separated stages: setup,norms,tokens,probes,lab,transformer,signals,similarity,retrieval.")] = None,
    items: Annotated[Optional[Path], typer.Option("--items", help="Norm distribution of this file's items instead of wordfreq words.")] = None,
    words: Annotated[Optional[int], typer.Option("--words", min=10, help="Override the number of wordfreq words of the norm distribution.")] = None,
    signals: Annotated[str, typer.Option("--signals", help="Semantic signals to run (comma-separated).")] = "frequency,specificity,concreteness,uncertainty",
    force: Annotated[bool, typer.Option("--force", help="Ignore cached stage results in OUT/stages.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never download a dataset (a section that needs an absent "
                                          "one says which `normscope data fetch` to run); same as `normscope --offline report`.")] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write summary.json to this path.")] = None,
    precision: Precision = "fp32",
    engine: Engine = "local",
    address: Address = None,
) -> None:
    """Reproduce the whole analysis for one model (or several, side by side): HTML report, summary.json and figures."""
    import dataclasses

    from normscope.validate import check_output_path
    from normscope.report import FULL, QUICK, STAGES, ReportConfig, run_report

    err = Console(stderr=True)
    if json_path is not None:
        check_output_path(json_path, "--json")
    sizes = QUICK if quick else FULL
    if words is not None:
        sizes = dataclasses.replace(sizes, words=words)
    models = list(dict.fromkeys(model or [DEFAULT_MODEL]))
    config = ReportConfig(
        out=out, model=models[0], quick=quick, data=data, seed=seed, device=device,
        only=tuple(only.split(",")) if only else STAGES, sizes=sizes, items=items, force=force,
        signals=tuple(x.strip() for x in signals.split(",") if x.strip()), precision=precision,
        engine=engine, address=address,
    )
    from normscope.data import settings

    out_console = Console()
    if not out_console.is_terminal:
        out_console = Console(width=140)
    if len(models) > 1:
        from normscope.report.multi import run_multi_report

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
    from normscope.report.config import SECTIONS
    from normscope.report.text import fmt_duration

    s = result.summary
    ran = s["report"].get("stages_run") or []
    n_cached = sum(bool((s["report"].get("stage_cached") or {}).get(st)) for st in ran)
    cached = f"; {n_cached} of {len(ran)} stage(s) from the cache" if n_cached else ""
    table = Table(title=f"normscope report: {s['report']['model']} ({s['report']['preset']} sizes, "
                        f"{fmt_duration(s['report'].get('seconds') or 0)}{cached})", show_lines=False)
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
        table.add_row(title, f"[{style}]{status}[/]", head)
    console.print(table)
    print_claims(s.get("claims") or [], console)
    console.print(f"report: [bold]{result.index.resolve()}[/]")
    console.print(f"numbers: {result.summary_path.resolve()}")


def print_multi_summary(result, console: Console) -> None:
    """The scorecard of a side-by-side report: one row per claim, one column per model (figure [CI] verdict)."""
    from normscope.report.claims import CLAIMS
    from normscope.report.text import fmt, fmt_duration

    s = result.summary
    models = s["report"]["models"]
    table = Table(title=f"normscope report: {len(models)} models side by side ({s['report']['preset']} sizes, "
                        f"{fmt_duration(s['report'].get('seconds'))})")
    table.add_column("claim")
    for m in models:
        table.add_column(m)
    for key, (claim, _) in CLAIMS.items():
        cells = []
        for m in models:
            r = next((c for c in (s["claims"].get(m) or []) if c["key"] == key), None)
            if r is None:
                cells.append("model failed" if m in result.errors else "not run")
                continue
            fig = "" if r.get("measured") is None else fmt(r["measured"])
            if r.get("ci"):
                fig += f" [{fmt(r['ci'][0])}, {fmt(r['ci'][1])}]"
            cells.append(f"{fig} {r['verdict']}".strip())
        table.add_row(claim, *cells)
    console.print(table)
    for m, e in result.errors.items():
        console.print(f"[red]{m}[/]: {e}")
    console.print(f"report: [bold]{result.index.resolve()}[/]")
    console.print(f"numbers: {result.summary_path.resolve()}")


def print_claims(claims: list[dict], console: Console) -> None:
    """The claims scorecard as a table: claim, paper, normscope's figure with its CI, verdict and why."""
    from normscope.report.text import fmt

    if not claims:
        return
    table = Table(title="claims scorecard (verdicts computed from this run's figures and CIs)", show_lines=False)
    for col in ("claim", "paper", "this run: statistic", "[95% CI]", "verdict", "why"):
        table.add_column(col)
    colour = {"reproduced": "green", "refuted": "red", "inconclusive": "yellow"}
    for c in claims:
        fig = "n/a" if c.get("measured") is None else fmt(c["measured"])
        stat = _lead(str(c.get("what") or ""))  # e.g. "Pearson r(R, heat Σ²) over the probe items"
        ci = f"[{fmt(c['ci'][0])}, {fmt(c['ci'][1])}]" if c.get("ci") else ""
        v = c.get("verdict", "")
        table.add_row(c.get("claim", ""), c.get("paper", ""), f"{stat}: {fig}" if stat else fig, ci,
                      f"[{colour.get(v, 'dim')}]{v}[/]", str(c.get("why", "")))
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


def _rho_ci(c: dict | None, key: str = "spearman") -> str:
    from normscope.report.text import fmt

    if not isinstance(c, dict) or c.get(key) is None:
        return "n/a"
    ci = c.get(f"{key}_ci") or (c.get("ci") or {})
    if isinstance(ci, dict):
        ci = ci.get(key)
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and ci[0] is not None:
        return f"{fmt(c[key])} [{fmt(ci[0])}, {fmt(ci[1])}]"
    return fmt(c[key])


def headline(key: str, sec: dict) -> str:
    """Short headline figures of a section, from its numbers."""
    from normscope.report.text import fmt

    r = sec.get("result") or {}
    if key == "setup":
        fp = r.get("fingerprint") or {}
        return (f"{r.get('model')} (d = {r.get('dim')}, {fp.get('pooling')} pooling, dropped: "
                f"{', '.join(fp.get('dropped_modules') or []) or 'none'}); {r.get('preset')} sizes")
    if key == "norm_distribution":
        return (f"n = {fmt(r.get('n'))}: mean ||z|| {fmt(r.get('norm_mean'))}, sd {fmt(r.get('norm_std'))}, "
                f"range {fmt(r.get('norm_min'))} to {fmt(r.get('norm_max'))}")
    if key == "equilibrium_theory":
        req = r.get((sec.get("derived") or {}).get("prediction_key") or "corr_req_norm") or {}
        return (f"Spearman R_eq vs R {_rho_ci(req)} (n = {req.get('n')}; CIs over batches and items); "
                f"Spearman R vs heat {_rho_ci(r.get('corr_norm_heat'))}; "
                f"Spearman R vs drift {_rho_ci(r.get('corr_norm_drift'))}; q<0: {r.get('n_negative_q')}")
    if key == "training_lab":
        gate = (r.get("gate") or {}).get("passed")
        return (f"mean |rel. error| {fmt(r.get('mean_abs_rel_error'))}, median {fmt(r.get('median_rel_error'))}, "
                f"Pearson {fmt(r.get('pearson'))}: gate {'passed' if gate else 'not passed'}")
    if key == "semantic_signals":
        return "; ".join(f"{k} Spearman \u03c1 {_rho_ci(v)}" for k, v in r.items() if isinstance(v, dict))
    if key == "retrieval":
        parts = []
        for name, v in (r.get("scorers") or {}).items():
            p = v.get("p_value")
            parts.append(f"{name} {fmt(v.get('ndcg@10'))}" + (f" (p {fmt(p)})" if p is not None else ""))
        return "nDCG@10: " + ", ".join(parts)
    if key == "calibration":
        return "AUROC: " + ", ".join(f"{k} {fmt(v.get('auroc'))}" for k, v in r.items() if isinstance(v, dict))
    rows = sec.get("key_numbers") or []
    return "; ".join(f"{label} {fmt(value) if isinstance(value, float) else value}" for label, value, _ in rows[:3])
