"""``normscope report``: run every stage on one model and write a self-contained HTML report."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from normscope._format import claim_figure, duration, plural
from normscope.cli._app import app
from normscope.cli._console import make_console, styled
from normscope.cli._options import Address, Device, Engine, Models, Precision, Runtime, Seed, models_of, split_list
from normscope.claims import CLAIMS, HEADLINE_RULE_SHORT, ClaimRow, counts_text, kind_counts
from normscope.data import settings
from normscope.datasets import wordfreq_spec
from normscope.values import Status


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
    signals: Annotated[Optional[list[str]], typer.Option("--signals", callback=split_list, metavar="SIGNAL", help="Semantic signals to run (repeatable or a comma list; default all): frequency, specificity, concreteness, uncertainty; and the length-matched designs beside them: treecut, ruletaker, wordnet_chains, feverous (when its sample is here), shuffle (SciFact titles).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Ignore cached stage results in OUT/stages.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never download a dataset (a section that needs an absent "
                                          "one says which `normscope data fetch` to run); same as `normscope --offline report`.")] = False,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write summary.json to this path.")] = None,
    precision: Precision = "fp32",
    runtime: Runtime = "auto",
    engine: Engine = "local",
    address: Address = None,
) -> None:
    """Reproduce the whole analysis for one model (or several, side by side): HTML report, summary.json and figures."""
    # report/ imports torch and signals/ pandas: imported here so that the CLI's start-up stays light
    import normscope.extensions  # noqa: F401  registers --engine ray (light: ray is imported when used)
    from normscope.report import FULL, QUICK, STAGE_NAMES, ReportConfig, run_report
    from normscope.report.runner import check_report_inputs
    from normscope.signals.labels import LENGTH_DESIGNS, SIGNALS

    err = make_console(stderr=True)
    sizes = QUICK if quick else FULL
    words = wordfreq_spec(items) if items is not None else None
    if words is not None:
        sizes = dataclasses.replace(sizes, words=words)
    models = models_of(model)
    config = ReportConfig(
        out=out, model=models[0], quick=quick, data=data, seed=seed, device=device, only=tuple(only or STAGE_NAMES),
        sizes=sizes, items=Path(items) if items is not None and words is None else None, force=force,
        signals=tuple(signals or SIGNALS + LENGTH_DESIGNS), precision=precision, runtime=runtime, engine=engine, address=address,
    )
    check_report_inputs(config, json_path)  # paths and --items, before any stage runs or anything is written
    from normscope.report.estimate import estimate_line  # normscope.report imports torch, as above

    def estimate() -> None:  # printed once every check has passed: bad input stays one line
        err.print(estimate_line(config, len(models)), soft_wrap=True, markup=False, highlight=False)

    out_console = make_console()
    if not out_console.is_terminal:
        out_console = make_console(width=140)
    if len(models) > 1:
        from normscope.report.multi import run_multi_report  # torch: start-up stays light

        estimate()
        with settings(offline=True if offline else None):
            multi = run_multi_report(config, models, console=err, json_path=json_path)
        print_multi_summary(multi, out_console)
        if multi.failed:
            err.print(styled(f"failed: {'; '.join(multi.failed)}", "red"), f"(see the page and {out}/models/)")
            raise typer.Exit(1)
        return
    with settings(offline=True if offline else None):
        result = run_report(config, console=err, json_path=json_path, on_start=estimate)
    print_summary(result, out_console)
    if result.failed:
        err.print(styled(f"failed stages: {', '.join(result.failed)}", "red"), f"(see the page and {out}/stages/)")
        raise typer.Exit(1)


#: The screen rows the final summary of ``normscope report`` aims at: the section table and the verdict rule give
#: way to stay within them; the claims, missing data and failures are always all listed.
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
    cached = f"; {n_cached} of {plural(len(ran), 'stage')} from the cache" if n_cached else ""
    lacking = [sec for m in s.missing_data or [] for sec in m.sections]
    names = {key: title.split(":")[0] for st in STAGES for key, title in st.sections.items()}
    table = _Rows(width, [("section", 18, max(map(len, names.values())), 1), ("status", 11, 11, 0),
                          ("headline", 20, 400, 3)])
    runtime = f"runtime {rep.runtime.split(' (')[0]}, " if rep.runtime else ""  # the page gives the reason
    lines: list = [f"normscope report: {rep.model} ({rep.preset} sizes, {runtime}{duration(rep.seconds or 0)}{cached})"]
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


#: Width of the verdict column of the claim blocks ("not decided at this size" is the longest verdict).
_VERDICT_W = 17


def _wrapped(text: str, width: int, indent: int) -> list[str]:
    """``text`` wrapped at word boundaries to ``width`` columns, every line after the first ``indent`` columns in
    (the first starts at the caller's column ``indent``); a token longer than a line is cut only then."""
    room = max(width - indent, 20)
    return textwrap.wrap(" ".join(str(text).split()), width=room, break_on_hyphens=False) or [""]


def _claim_block(c: ClaimRow, width: int) -> list[Text]:
    """One tested claim: its verdict (whole, coloured) and the claim (cut to the line), then its figure [CI] and
    one-line reason wrapped under it, indented past the verdict column (never cut)."""
    v = c.verdict or ""
    pad = max(_VERDICT_W, len(v)) + 2
    head = Text(v.ljust(pad), style=_COLOUR.get(v, "dim"))
    head.append(_fit(c.claim or c.key or "", max(width - pad, 10)).rstrip())
    fig = claim_figure(c)
    stat = c.label or _lead(str(c.what or ""))  # e.g. "Pearson r(R, D~)"
    figure = f"{stat}: {fig}" if stat and fig != "n/a" else fig
    reason = str(c.reason or c.why or "")
    body = f"{figure}; {reason}" if figure and figure != "n/a" else reason
    if c.stored:  # a figure this run did not compute: said before it
        body = f"stored full run ({c.stored}), not re-run by this report: {body}"
    return [head] + [Text(" " * pad + ln) for ln in _wrapped(body, width, pad)]


def _missing_lines(m, width: int) -> list[str]:
    """A missing dataset in one line (two screen rows at most at 80 columns): what it is, why it is not here, the
    claims it leaves untested and its fetch command; the other ways to get it are said once, after all of them.
    A cause too long for the line is shortened to its parenthetical (``"cannot resolve host (no DNS answer: no
    network?)"`` -> ``"no DNS answer: no network?"``) and then cut, never the title or the command."""
    n = len(m.claims or [])
    tail = (f"; {n} claim{'s' if n != 1 else ''} untested" if n else "") + f"; `normscope data fetch {m.dataset}`"
    title = " ".join(str(m.title or m.dataset).split())
    cause = " ".join(str(m.cause or "").split())
    if len(f"{title} is {_cause(cause)}{tail}") > width and cause.endswith(")") and "(" in cause:
        cause = cause[cause.rindex("(") + 1:-1]
    room = 2 * width - 4 - len(title) - len(tail) - len(" is not here: ")  # two rows, the second indented
    if len(cause) > max(room, 12):
        cause = cause[: max(room, 12) - 1].rstrip() + "\u2026"
    text = f"{title} is {_cause(cause)}{tail}"
    rows = textwrap.wrap(text, width=width, subsequent_indent="    ", break_on_hyphens=False)
    return rows or [text]


def _missing_short(m, width: int) -> str:
    """A missing dataset in one screen row: its title (cut first), the claims it leaves untested and its fetch
    command; the cause is left to the page (used when the full lines would not fit one screen)."""
    n = len(m.claims or [])
    tail = (f": {n} claim{'s' if n != 1 else ''} untested" if n else ": not here") + \
        f"; `normscope data fetch {m.dataset}`"
    title = " ".join(str(m.title or m.dataset).split())
    room = max(width - len(tail), 12)
    if len(title) > room:
        title = title[: room - 1].rstrip() + "\u2026"
    return title + tail


def _cause(cause: str) -> str:
    return "not here" if cause in ("", "not here") else f"not here: {cause}"


def _section_counts(result) -> str:
    """The sections on one line, by status (the failed and unavailable ones named)."""
    by: dict[str, list[str]] = {}
    for rec in result.records.values():
        for key, sec in rec.sections.items():
            by.setdefault(sec.status.words, []).append(key)
    parts = []
    for status, keys in by.items():
        named = f" ({', '.join(keys)})" if status in (Status.FAILED.words, Status.UNAVAILABLE.words) else ""
        parts.append(f"{len(keys)} {status}{named}")
    return "sections: " + ", ".join(parts) + " (each section's headline: the page)"


def print_summary(result, console: Console, max_lines: int = SUMMARY_LINES) -> None:
    """The text summary of a report, readable at 80 columns.

    In order: the title; one row per section (status and headline figure, cut to the width), or, when
    everything would not fit ``max_lines`` screen rows, one line counting the sections by status; the claims
    count; **every tested claim**: its verdict (never cut) and the claim on one row, then its figure [95% CI] and
    one-line reason wrapped under it (never cut; the full reasoning is on the page); the verdict rule, when it
    fits; one short row per missing dataset (what is missing and why, the claims it leaves untested, its
    ``normscope data fetch``), then once the other ways to get data; one row per failed stage; the paths of the
    page and of summary.json. Only the section table and the verdict rule give way to fit ``max_lines``: the
    claims, missing data and failures are always all listed.
    """
    from normscope.report.summary import ClaimsTested, MissingData, ReportSummary  # normscope.report imports torch

    s = ReportSummary.from_json(result.summary)
    width = max(console.width, 60)
    rows = lambda line: _screen_rows(line, width)  # noqa: E731
    sections = _section_lines(result, width)
    n_title = 2 if len(sections) > 1 and isinstance(sections[1], str) else 1  # the title and the precision note
    title, table = sections[:n_title], sections[n_title:]
    claims = s.claims or []
    tested = [c for c in claims if c.verdict != "not testable here"]
    count: list = []
    if claims:
        ct = s.claims_tested or ClaimsTested()
        untested = len(ct.not_tested or [])
        count.append(f"claims: {ct.tested if ct.tested is not None else '?'} of "
                     f"{ct.total if ct.total is not None else len(claims)} tested here"
                     + (f" ({plural(n_stored, 'from a stored full run', 'from stored full runs')})"
                        if (n_stored := sum(1 for c in tested if c.stored)) else "")
                     + f"; {untested} not testable here"
                     f"{' (each row on the page says why)' if untested else ''}")
        # each kind apart: exploratory rows and checks by construction never add to the paper's claims
        by_kind = ct.headline or counts_text(kind_counts(claims))
        if by_kind:
            count.append(by_kind)
    count = [ln for line in count for ln in _wrapped(line, width, 0)]
    blocks = [ln for c in tested for ln in _claim_block(c, width)]
    missing = [MissingData.from_json(m) if isinstance(m, dict) else m for m in result.summary.get("missing_data") or []]
    tail = [ln for m in missing for ln in _missing_lines(m, width)]
    if missing:
        tail += _wrapped("get data: `normscope data fetch NAME` (network) | --data DIR or NORMSCOPE_DATA=DIR (a local "
                         "copy) | --mirror URL|DIR", width, 0)
    failed = [(st, rec) for st, rec in result.records.items() if rec.status.value == "failed" and rec.ran]
    tail += [_fit(f"failed: {st}: {str(rec.reason or '')}", width).rstrip() for st, rec in failed]
    if failed:
        tail.append(f"failed stages' records: {result.index.parent}/stages/<stage>.failed.json (and the page)")
    ends = [f"report: {result.index.resolve()}", f"numbers: {result.summary_path.resolve()}"]
    rule = [_fit(HEADLINE_RULE_SHORT, 400).rstrip()] if tested else []
    fixed = sum(map(rows, title + count + blocks + tail + ends))
    if fixed + sum(map(rows, table)) + sum(map(rows, rule)) > max_lines:
        rule = ["how each verdict is decided: on the page and in docs/report.md"] if tested else []
    if fixed + sum(map(rows, table)) + sum(map(rows, rule)) > max_lines:
        table = [_fit(_section_counts(result), width).rstrip()]
    n_long = sum(len(_missing_lines(m, width)) for m in missing)
    if n_long > max_lines // 2 and fixed + sum(map(rows, table)) + sum(map(rows, rule)) > max_lines:
        # many datasets missing (their lines would take half the screen): one row each (what, the claims, the
        # command), the causes on the page
        tail = [_missing_short(m, width) for m in missing] + ["why each dataset is not here: on the page"] + tail[n_long:]
    for line in title + table + count + blocks + rule + tail + ends:  # printed as is (soft_wrap): no line breaks
        console.print(line, soft_wrap=True, markup=False, highlight=False)


def _claim_cell(r: ClaimRow | None, failed: bool) -> str:
    """One model's cell of the side-by-side scorecard: figure [CI] and verdict, or why there is no row."""
    if r is None:
        return "model failed" if failed else "not run"
    fig = "" if r.measured is None else claim_figure(r)
    return f"{fig} {r.verdict}".strip()


def print_multi_summary(result, console: Console) -> None:
    """The scorecard of a side-by-side report: per tested claim, the claim and one row per model (figure [CI]
    verdict, never cut); the claims no model tested are counted on one line."""
    from normscope.report.summary import ReportInfo  # normscope.report imports torch: start-up stays light

    s = result.summary
    info = ReportInfo.from_json(s["report"])
    models = info.models
    console.print(f"normscope report: {len(models)} models side by side ({info.preset} sizes, "
                  f"{duration(info.seconds)})", soft_wrap=True, highlight=False, markup=False)
    width = max(console.width, 60)
    # one block per claim: the claim (cut to the line), then one row per model whose cell (figure [CI] verdict)
    # is never cut: a long model name gives way first
    from normscope.report.multi import short_names  # normscope.report imports torch, as above

    names = dict(zip(models, short_names(models, min(max(len(m) for m in models), max(width // 3, 16)))))
    name_w = max(len(n) for n in names.values())
    rows = {m: {r.key: r for r in map(ClaimRow.from_json, s["claims"].get(m) or [])} for m in models}
    for key, claim in CLAIMS.items():
        cells = [_claim_cell(rows[m].get(key), m in result.errors) for m in models]
        if all(c in ("not run", "model failed") or c.endswith("not testable here") for c in cells):
            continue  # untested for every model: counted below
        console.print(Text(_fit(claim.claim, width).rstrip(), style="bold"), soft_wrap=True)
        for m, cell in zip(models, cells):
            name = names[m]
            verdict = next((v for v in _COLOUR if cell.endswith(v)), None)
            line = Text(f"  {name:<{name_w}}  ")
            line.append(cell[: len(cell) - len(verdict)] if verdict else cell)
            if verdict:
                line.append(verdict, style=_COLOUR[verdict])
            console.print(line, soft_wrap=True)
    untested = [claim.claim for key, claim in CLAIMS.items()
                if all(getattr(rows[m].get(key), "verdict", None) in (None, "not testable here") for m in models)]
    if untested:
        console.print(f"{len(untested)} claims not testable here for any model (each model's page says why)",
                      soft_wrap=True, markup=False, highlight=False)
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
