"""``normscope report``: run every stage on one model and write a self-contained HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from normscope.cli import app
from normscope.cli._console import make_console, styled
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

    from normscope.report import FULL, QUICK, STAGES, ReportConfig, run_report
    from normscope.report.runner import check_report_inputs

    err = make_console(stderr=True)
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
    check_report_inputs(config, json_path)  # paths and --items, before any stage runs or anything is written
    from normscope.data import settings

    out_console = make_console()
    if not out_console.is_terminal:
        out_console = make_console(width=140)
    if len(models) > 1:
        from normscope.report.multi import run_multi_report

        with settings(offline=True if offline else None):
            multi = run_multi_report(config, models, console=err, json_path=json_path)
        print_multi_summary(multi, out_console)
        if multi.failed:
            err.print(styled(f"failed: {'; '.join(multi.failed)}", "red"), f"(see the page and {out}/models/)")
            raise typer.Exit(1)
        return
    with settings(offline=True if offline else None):
        result = run_report(config, console=err, json_path=json_path)
    print_summary(result, out_console)
    if result.failed:
        err.print(styled(f"failed stages: {', '.join(result.failed)}", "red"), f"(see the page and {out}/stages/)")
        raise typer.Exit(1)


#: The final summary of ``normscope report`` fits one screen, whatever happened.
SUMMARY_LINES = 40


def _fit(text: str, width: int) -> str:
    """``text`` on one line of exactly ``width`` characters: cut with an ellipsis, or padded."""
    text = " ".join(str(text).split())
    return (text[: width - 1] + "\u2026" if len(text) > width else text).ljust(width)


class _Rows:
    """Rows of fixed-width cells, one line each (never wrapped): the widths are set from the console's
    width, fixed columns first, the flexible ones sharing the rest by weight (each within its bounds)."""

    def __init__(self, width: int, columns: list[tuple[str, int, int, float]]):
        # columns: (header, min width, max width, weight); weight 0 = fixed at its min width
        room = max(width - 2 * (len(columns) - 1), sum(c[1] for c in columns))
        widths = [c[1] for c in columns]
        flex = [i for i, c in enumerate(columns) if c[3] > 0]
        spare = room - sum(widths)
        while spare > 0 and flex:
            total = sum(columns[i][3] for i in flex)
            grown = False
            for i in list(flex):
                add = min(max(int(spare * columns[i][3] / total), 1), columns[i][2] - widths[i], spare)
                widths[i] += add
                spare -= add
                grown |= add > 0
                if widths[i] >= columns[i][2]:
                    flex.remove(i)
            if not grown:
                break
        self.widths = widths
        self.headers = [c[0] for c in columns]

    def line(self, cells, styles=()):
        from rich.text import Text

        out = Text()
        for i, (cell, w) in enumerate(zip(cells, self.widths)):
            out.append(("  " if i else "") + _fit(cell, w), style=styles[i] if i < len(styles) and styles[i] else "")
        out.rstrip()
        return out

    def header(self):
        from rich.text import Text

        head = self.line(self.headers, ["bold"] * len(self.headers))
        return [head, Text("\u2500" * (sum(self.widths) + 2 * (len(self.widths) - 1)))]


def print_summary(result, console: Console, max_lines: int = SUMMARY_LINES) -> None:
    """One-screen text summary (at most ``max_lines`` lines, whatever happened).

    The title; one row per section (status and headline figure, or what it lacks); the claims count
    and one row per claim (statistic, figure [CI], verdict, one-line reason; the full reasoning is on the page) and the verdict rule; one line per missing
    dataset (what it stopped and the three ways to get it: ``summary["missing_data"]``); one line per
    failed stage; the paths of the page and of summary.json. Table rows are cut to the console's
    width with an ellipsis, never wrapped; the missing-data and failure lines (which the terminal may
    wrap: each counts for the screen rows it takes) are cut to the rows left.
    """
    from normscope.claims import HEADLINE_RULE_SHORT
    from normscope.report.config import SECTIONS
    from normscope.report.text import fmt_duration

    s = result.summary
    width = max(console.width, 60)
    ran = s["report"].get("stages_run") or []
    n_cached = sum(bool((s["report"].get("stage_cached") or {}).get(st)) for st in ran)
    cached = f"; {n_cached} of {len(ran)} stage(s) from the cache" if n_cached else ""
    missing = s.get("missing_data") or []
    lacking = [sec for m in missing for sec in m["sections"]]
    lines: list = [f"normscope report: {s['report']['model']} ({s['report']['preset']} sizes, "
                   f"{fmt_duration(s['report'].get('seconds') or 0)}{cached})"]
    names = {k: t.split(":")[0] for k, t in SECTIONS.items()}
    table = _Rows(width, [("section", 18, max(map(len, names.values())), 1), ("status", 11, 11, 0),
                          ("headline", 20, 400, 3)])
    lines += table.header()
    for key in SECTIONS:
        sec = s.get(key, {})
        status = sec.get("status", "?")
        if status == "ok":
            says = (s.get("what_this_says") or {}).get(key) or []
            head = headline(key, sec) or (says[0] if says else "")
            if any(x.startswith(names[key] + " (") for x in lacking):
                head = "some parts lack data (below); " + head
        elif sec.get("missing"):
            head = "lacks " + ", ".join(m["title"] for m in sec["missing"].values()) + " (below)"
        else:
            head = str(sec.get("reason") or "")
        style = {"ok": "green", "failed": "red"}.get(status, "yellow")
        lines.append(table.line([names[key], status, head], ["", style, ""]))
    claims = s.get("claims") or []
    tested = [c for c in claims if c.get("verdict") != "not testable here"]
    rows = lambda line: max(1, -(-len(str(line)) // width))  # noqa: E731 - screen rows of a line the terminal wraps
    tail = [m["line"] for m in missing]
    tail += [f"failed: {st}: {str(rec.get('reason') or '')[:160]} (see the page and {result.index.parent}/stages/{st}.json)"
             for st, rec in result.records.items() if rec.get("status") == "failed"]
    tail = [_fit(t, 400).rstrip() for t in tail]  # one line each, at most 400 characters
    ends = [f"report: {result.index.resolve()}", f"numbers: {result.summary_path.resolve()}"]
    if claims:
        ct = s.get("claims_tested") or {}
        counts = ", ".join(f"{n} {v}" for v, n in (ct.get("verdicts") or {}).items() if v != "not testable here")
        untested = len(ct.get("not_tested") or [])
        lines.append(f"claims: {ct.get('tested', '?')} of {ct.get('total', len(claims))} tested here"
                     f"{f' ({counts})' if counts else ''}; {untested} not testable here"
                     f"{' (each row on the page says why)' if untested else ''}")
    if tested:  # one row per tested claim; the untested ones are counted above (their reasons: the page, the lines below)
        ctab = _Rows(width, [("claim", 16, 50, 2), ("this run: statistic [95% CI]", 20, 60, 2),
                             ("verdict", 17, 17, 0), ("reason", 12, 200, 3)])
        colour = {"reproduced": "green", "refuted": "red", "inconclusive": "yellow"}
        crow = []
        for c in tested:
            fig = figure_text(c)
            stat = c.get("label") or _lead(str(c.get("what") or ""))  # e.g. "Pearson r(R, D~)"
            v = c.get("verdict", "")
            crow.append(ctab.line([c.get("claim", ""), f"{stat}: {fig}" if stat and fig != "n/a" else fig, v,
                                   str(c.get("reason") or c.get("why") or "")],
                                  ["", "", colour.get(v, "dim"), ""]))
        rule = _fit(HEADLINE_RULE_SHORT, 400).rstrip()
        # the claim rows give way to the missing-data and failure lines (at least the first of them)
        room = (max_lines - sum(map(rows, lines)) - sum(map(rows, ends)) - 2 - rows(rule)
                - (rows(tail[0]) + (1 if len(tail) > 1 else 0) if tail else 0))
        if len(crow) > room:
            crow = crow[: max(room - 1, 0)] + [f"... and {len(crow) - max(room - 1, 0)} more claims (see the page)"]
        lines += ctab.header() + crow + [rule]
    room = max_lines - sum(map(rows, lines)) - sum(map(rows, ends))
    kept = []
    for i, line in enumerate(tail):
        more = f"... and {len(tail) - i} more (see the page)"
        if sum(map(rows, kept)) + rows(line) + (rows(more) if i < len(tail) - 1 else 0) > room:
            kept.append(more)
            break
        kept.append(line)
    for line in lines + kept + ends:  # printed as is (soft_wrap): rich inserts no line breaks
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def print_multi_summary(result, console: Console) -> None:
    """The scorecard of a side-by-side report: one row per claim, one column per model (figure [CI] verdict)."""
    from normscope.claims import CLAIMS
    from normscope.report.text import fmt_duration

    s = result.summary
    models = s["report"]["models"]
    console.print(f"normscope report: {len(models)} models side by side ({s['report']['preset']} sizes, "
                  f"{fmt_duration(s['report'].get('seconds'))})", soft_wrap=True, highlight=False)
    table = _Rows(max(console.width, 60), [("claim", 20, 50, 1)] + [(m, 14, 60, 1) for m in models])
    for line in table.header():
        console.print(line, soft_wrap=True)
    for key, claim in CLAIMS.items():
        cells = []
        for m in models:
            r = next((c for c in (s["claims"].get(m) or []) if c["key"] == key), None)
            if r is None:
                cells.append("model failed" if m in result.errors else "not run")
                continue
            fig = "" if r.get("measured") is None else figure_text(r)
            cells.append(f"{fig} {r['verdict']}".strip())
        console.print(table.line([claim.claim, *cells]), soft_wrap=True)  # one line per claim: fits one screen
    errors = list(result.errors.items())
    for m, e in errors[:5]:
        console.print(f"{m}: {str(e)[:200]}", soft_wrap=True, markup=False, highlight=False)
    if len(errors) > 5:
        console.print(f"... and {len(errors) - 5} more failed models (see the page)", highlight=False)
    console.print("report:", styled(str(result.index.resolve()), "bold"))
    console.print(f"numbers: {result.summary_path.resolve()}")


def figure_text(c: dict) -> str:
    """This run's figure of a scorecard row with its CI (percentages for claims sized in %), or n/a."""
    from normscope.report.text import fmt

    if c.get("measured") is None:
        return "n/a"
    f = (lambda x: f"{100 * x:+.2f} %") if c.get("percent") else fmt
    ci = f" [{f(c['ci'][0])}, {f(c['ci'][1])}]" if c.get("ci") else ""
    return f"{f(c['measured'])}{ci}"


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
