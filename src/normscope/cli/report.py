"""``normscope report``: run every stage on one model and write a self-contained HTML report."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from normscope._format import claim_figure, duration
from normscope.cli import app
from normscope.cli._console import make_console, styled
from normscope.cli._options import Address, Device, Engine, Models, Precision, Runtime, Seed, models_of, split_list
from normscope.claims import CLAIMS, HEADLINE_RULE_SHORT, ClaimRow
from normscope.data import settings
from normscope.datasets import wordfreq_spec


@app.command()
def report(
    model: Models = None,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output directory (index.html, summary.json, *.png, stages/).")] = Path("out/report"),
    quick: Annotated[bool, typer.Option("--quick", help="Subsets so the whole run takes < 5 min on 2 CPU cores (sizes stated on the page).")] = False,
    data: Annotated[Optional[Path], typer.Option("--data", metavar="DIR", help="Data folder searched first (default: $NORMSCOPE_DATA, else ../shared/data); absent datasets are fetched into $NORMSCOPE_CACHE/data (docs/data.md). Same as `normscope --data DIR report`.")] = None,
    seed: Seed = 0,
    device: Device = "cpu",
    only: Annotated[Optional[list[str]], typer.Option("--only", callback=split_list, metavar="STAGE", help="Stages to run (repeatable or a comma list): setup, norms, tokens, probes, lab, transformer, signals, similarity, retrieval. The other sections keep what an earlier run wrote in OUT.")] = None,
    items: Annotated[Optional[str], typer.Option("--items", help="Items of the norm distribution: a file (.txt one per line, .jsonl, .csv) or wordfreq:N (default: wordfreq:5000, --quick wordfreq:2000).")] = None,
    signals: Annotated[Optional[list[str]], typer.Option("--signals", callback=split_list, metavar="SIGNAL", help="Semantic signals to run (repeatable or a comma list; default all): frequency, specificity, concreteness, uncertainty.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Ignore cached stage results in OUT/stages.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never download a dataset (a section that needs an absent "
                                          "one says which `normscope data fetch` to run); same as `normscope --offline report`.")] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write summary.json to this path.")] = None,
    precision: Precision = "fp32",
    runtime: Runtime = "torch",
    engine: Engine = "local",
    address: Address = None,
) -> None:
    """Reproduce the whole analysis for one model (or several, side by side): HTML report, summary.json and figures."""
    # report/ imports torch and signals/ pandas: imported here so that the CLI's start-up stays light
    from normscope.report import FULL, QUICK, STAGE_NAMES, ReportConfig, run_report
    from normscope.report.runner import check_report_inputs
    from normscope.signals.labels import SIGNALS

    err = make_console(stderr=True)
    sizes = QUICK if quick else FULL
    words = wordfreq_spec(items) if items is not None else None
    if words is not None:
        sizes = dataclasses.replace(sizes, words=words)
    models = models_of(model)
    config = ReportConfig(
        out=out, model=models[0], quick=quick, data=data, seed=seed, device=device, only=tuple(only or STAGE_NAMES),
        sizes=sizes, items=Path(items) if items is not None and words is None else None, force=force,
        signals=tuple(signals or SIGNALS), precision=precision, runtime=runtime, engine=engine, address=address,
    )
    check_report_inputs(config, json_path)  # paths and --items, before any stage runs or anything is written
    out_console = make_console()
    if not out_console.is_terminal:
        out_console = make_console(width=140)
    if len(models) > 1:
        from normscope.report.multi import run_multi_report  # torch: start-up stays light

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
_COLOUR = {"reproduced": "green", "refuted": "red", "inconclusive": "yellow"}


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

    def line(self, cells, styles=()) -> Text:
        out = Text()
        for i, (cell, w) in enumerate(zip(cells, self.widths)):
            out.append(("  " if i else "") + _fit(cell, w), style=styles[i] if i < len(styles) and styles[i] else "")
        out.rstrip()
        return out

    def header(self) -> list[Text]:
        head = self.line(self.headers, ["bold"] * len(self.headers))
        return [head, Text("\u2500" * (sum(self.widths) + 2 * (len(self.widths) - 1)))]


def _screen_rows(line, width: int) -> int:
    """Screen rows of a line the terminal wraps."""
    return max(1, -(-len(str(line)) // width))


def _section_lines(result, width: int) -> list:
    """The title and one row per section: status and headline figure, or what it lacks."""
    from normscope.report.stages import SECTIONS, STAGES  # imports torch: the CLI's start-up stays light
    from normscope.report.summary import ReportSummary  # normscope.report imports torch, as above
    from normscope.report.text import precision_sentence  # normscope.report imports torch, as above

    s = ReportSummary.from_json(result.summary)
    rep = s.report
    ran = rep.stages_run
    n_cached = sum(bool(rep.stage_cached[st]) for st in ran)
    cached = f"; {n_cached} of {len(ran)} stage(s) from the cache" if n_cached else ""
    lacking = [sec for m in s.missing_data or [] for sec in m.sections]
    names = {key: title.split(":")[0] for st in STAGES for key, title in st.sections.items()}
    table = _Rows(width, [("section", 18, max(map(len, names.values())), 1), ("status", 11, 11, 0),
                          ("headline", 20, 400, 3)])
    lines: list = [f"normscope report: {rep.model} ({rep.preset} sizes, {duration(rep.seconds or 0)}{cached})"]
    note = precision_sentence(result.summary, SECTIONS)
    if note:
        lines.append(note)
    lines += table.header()
    for st in STAGES:
        rec = result.records[st.name]
        for key, sec in rec.sections.items():
            if sec.ok:
                says = s.what_this_says.get(key) or []
                head = st.headline(sec) or (says[0] if says else "")
                if any(x.startswith(names[key] + " (") for x in lacking):
                    head = "some parts lack data (below); " + head
            elif sec.missing:
                head = "lacks " + ", ".join(m["title"] for m in sec.missing.values()) + " (below)"
            else:
                head = str(sec.reason or "")
            if rec.kept:
                head = f"(kept from an earlier run) {head}"
            style = {"ok": "green", "failed": "red"}.get(sec.status.value, "yellow")
            lines.append(table.line([names[key], sec.status.value, head], ["", style, ""]))
    return lines


def _claim_rows(claims: list[ClaimRow], width: int) -> list:
    """One row per tested claim: statistic, figure [CI], verdict, the one-line reason."""
    ctab = _Rows(width, [("claim", 16, 50, 2), ("this run: statistic [95% CI]", 20, 60, 2),
                         ("verdict", 17, 17, 0), ("reason", 12, 200, 3)])
    rows = []
    for c in claims:
        fig = claim_figure(c)
        stat = c.label or _lead(str(c.what or ""))  # e.g. "Pearson r(R, D~)"
        v = c.verdict or ""
        rows.append(ctab.line([c.claim or "", f"{stat}: {fig}" if stat and fig != "n/a" else fig, v,
                               str(c.reason or c.why or "")], ["", "", _COLOUR.get(v, "dim"), ""]))
    return ctab.header(), rows


def _fitted(lines: list, max_rows: int, width: int) -> list:
    """``lines`` cut to ``max_rows`` screen rows, the last one saying how many more there are."""
    kept: list = []
    for i, line in enumerate(lines):
        more = f"... and {len(lines) - i} more (see the page)"
        more_rows = _screen_rows(more, width) if i < len(lines) - 1 else 0
        if sum(_screen_rows(x, width) for x in kept) + _screen_rows(line, width) + more_rows > max_rows:
            kept.append(more)
            break
        kept.append(line)
    return kept


def print_summary(result, console: Console, max_lines: int = SUMMARY_LINES) -> None:
    """One-screen text summary (at most ``max_lines`` lines, whatever happened).

    The title; one row per section (status and headline figure, or what it lacks); the claims count
    and one row per tested claim (statistic, figure [CI], verdict, one-line reason; the full reasoning is on
    the page) and the verdict rule; one line per missing dataset (what it stopped and the three ways to get
    it: ``summary["missing_data"]``); one line per failed stage; the paths of the page and of summary.json.
    Table rows are cut to the console's width with an ellipsis, never wrapped; the missing-data and failure
    lines (which the terminal may wrap: each counts for the screen rows it takes) are cut to the rows left.
    """
    from normscope.report.summary import ClaimsTested, ReportSummary  # normscope.report imports torch

    s = ReportSummary.from_json(result.summary)
    width = max(console.width, 60)
    rows = lambda line: _screen_rows(line, width)  # noqa: E731
    lines = _section_lines(result, width)
    claims = s.claims or []
    tested = [c for c in claims if c.verdict != "not testable here"]
    tail = [m.line for m in s.missing_data or []]
    tail += [f"failed: {st}: {str(rec.reason or '')[:160]} (see the page and {result.index.parent}/stages/{st}.failed.json)"
             for st, rec in result.records.items() if rec.status.value == "failed" and rec.ran]
    tail = [_fit(t, 400).rstrip() for t in tail]  # one line each, at most 400 characters
    ends = [f"report: {result.index.resolve()}", f"numbers: {result.summary_path.resolve()}"]
    if claims:
        ct = s.claims_tested or ClaimsTested()
        counts = ", ".join(f"{n} {v}" for v, n in (ct.verdicts or {}).items() if v != "not testable here")
        untested = len(ct.not_tested or [])
        lines.append(f"claims: {ct.tested if ct.tested is not None else '?'} of "
                     f"{ct.total if ct.total is not None else len(claims)} tested here"
                     f"{f' ({counts})' if counts else ''}; {untested} not testable here"
                     f"{' (each row on the page says why)' if untested else ''}")
    if tested:  # one row per tested claim; the untested ones are counted above (their reasons: the page, the lines below)
        header, crow = _claim_rows(tested, width)
        rule = _fit(HEADLINE_RULE_SHORT, 400).rstrip()
        # the claim rows give way to the missing-data and failure lines (all of them when they fit): first the
        # verdict rule shrinks to a pointer, then the claim rows are cut
        room = (max_lines - sum(map(rows, lines)) - sum(map(rows, ends)) - 2 - rows(rule) - sum(map(rows, tail)))
        if len(crow) > room:
            short = "how each verdict is decided: on the page and in docs/report.md"
            room += rows(rule) - rows(short)
            rule = short
        if len(crow) > room:
            crow = crow[: max(room - 1, 0)] + [f"... and {len(crow) - max(room - 1, 0)} more claims (see the page)"]
        lines += header + crow + [rule]
    kept = _fitted(tail, max_lines - sum(map(rows, lines)) - sum(map(rows, ends)), width)
    for line in lines + kept + ends:  # printed as is (soft_wrap): rich inserts no line breaks
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def _claim_cell(r: ClaimRow | dict | None, failed: bool) -> str:
    """One model's cell of the side-by-side scorecard: figure [CI] and verdict, or why there is no row."""
    if r is None:
        return "model failed" if failed else "not run"
    r = ClaimRow.from_json(r)
    fig = "" if r.measured is None else claim_figure(r)
    return f"{fig} {r.verdict}".strip()


def print_multi_summary(result, console: Console) -> None:
    """The scorecard of a side-by-side report: one row per claim, one column per model (figure [CI] verdict)."""
    from normscope.report.summary import ReportInfo  # normscope.report imports torch: start-up stays light

    s = result.summary
    info = ReportInfo.from_json(s["report"])
    models = info.models
    console.print(f"normscope report: {len(models)} models side by side ({info.preset} sizes, "
                  f"{duration(info.seconds)})", soft_wrap=True, highlight=False, markup=False)
    table = _Rows(max(console.width, 60), [("claim", 20, 50, 1)] + [(m, 14, 60, 1) for m in models])
    for line in table.header():
        console.print(line, soft_wrap=True)
    for key, claim in CLAIMS.items():
        cells = [_claim_cell(next((c for c in (s["claims"].get(m) or []) if c["key"] == key), None), m in result.errors)
                 for m in models]
        console.print(table.line([claim.claim, *cells]), soft_wrap=True)  # one line per claim: fits one screen
    errors = list(result.errors.items())
    for m, e in errors[:5]:
        console.print(f"{m}: {str(e)[:200]}", soft_wrap=True, markup=False, highlight=False)
    if len(errors) > 5:
        console.print(f"... and {len(errors) - 5} more failed models (see the page)", highlight=False)
    console.print("report:", styled(str(result.index.resolve()), "bold"))
    console.print(f"numbers: {result.summary_path.resolve()}", markup=False)


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
