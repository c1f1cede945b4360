"""Mutants a reader of the page or the console would see wrong, planted in the template, the formatters and the
builders, run against the suite's rendering tests (issue 37 item 2).

    .venv/bin/python scripts/render_mutants.py [--only WORD ...] [--json PATH] [--tests PYTEST_ARG ...]

The mutants are the defect kinds of issue 37, each written where such a defect would naturally be made (a
template line, a formatter, a claims or table builder), without reference to any test: a CI printed with its
ends swapped, verdict colours exchanged on the page and in the terminal, a scorecard row dropped from the page or
the console but kept in summary.json, side-by-side columns under the wrong model, a count of claims tested that
counts every claim, a p value printed as 0.000, direction and size labels exchanged, a relative column showing
the absolute value. Each mutant is planted alone (its snippet must occur exactly once), the rendering tests run
(``pytest -x``), the file is restored (also on Ctrl-C), and the script prints which mutants the tests killed.
Exit code 1 when one survives (``--min`` lowers the bar).

The rendering tests (:data:`RENDERING`) are those that render a page or a console summary without a model:
tests/test_render_roundtrip.py (the round trip), tests/test_presentation.py, tests/test_typed_results.py and the
console tests of tests/test_report_offline.py. It edits the working tree while it runs: run it alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_check import Mutant, run_all  # noqa: E402  (a sibling script, not a package)

#: The rendering tests: one pytest run.
RENDERING = (("tests/test_render_roundtrip.py", "tests/test_presentation.py", "tests/test_typed_results.py",
              "tests/test_report_offline.py", "-k", "not nothing_here and not unreachable and not offline_report_says"),)

_HTML = "src/normscope/report/html.py"
_FMT = "src/normscope/_format.py"
_CLI = "src/normscope/cli/report.py"
_CLAIMS = "src/normscope/claims/rows.py"


def _m(name: str, path: str, old: str, new: str) -> Mutant:
    return Mutant(name, path, old, new, RENDERING)


MUTANTS = (
    # a CI printed with its ends swapped
    _m("CI: scorecard figure swaps the ends (formatter)", _FMT,
       '(f" [{f(ci_[0])}, {f(ci_[1])}]" if ci_ else "")', '(f" [{f(ci_[1])}, {f(ci_[0])}]" if ci_ else "")'),
    _m("CI: prose/page interval swaps the ends (formatter)", _FMT,
       'f"[{num(ends[0], digits)}, {num(ends[1], digits)}]"', 'f"[{num(ends[1], digits)}, {num(ends[0], digits)}]"'),
    _m("CI: claim row stores the ends swapped (builder)", _CLAIMS,
       "ci=Interval(float(ci[0]), float(ci[1])) if _ci_ok(ci) else None,",
       "ci=Interval(float(ci[1]), float(ci[0])) if _ci_ok(ci) else None,"),
    # verdict colours exchanged on the page and in the terminal
    _m("colours: page row class from the direction verdict (template)", _HTML,
       '<tr class="verdict-{{ c.verdict|replace(\' \', \'-\') }}">',
       '<tr class="verdict-{{ c.direction|replace(\' \', \'-\') }}">'),
    _m("colours: page CSS exchanges reproduced and refuted", _HTML,
       " tr.verdict-reproduced td.verdict { background: #e3f4e1; }\n"
       " tr.verdict-refuted td.verdict { background: #f8e0e0; }",
       " tr.verdict-reproduced td.verdict { background: #f8e0e0; }\n"
       " tr.verdict-refuted td.verdict { background: #e3f4e1; }"),
    _m("colours: terminal exchanges reproduced and refuted", _CLI,
       '_COLOUR = {"reproduced": "green", "refuted": "red", "inconclusive": "yellow"}',
       '_COLOUR = {"reproduced": "red", "refuted": "green", "inconclusive": "yellow"}'),
    # a scorecard row dropped from the page (or the console) but kept in summary.json
    _m("row dropped: page scorecard skips the first row (template)", _HTML,
       "{% for c in claims %}", "{% for c in claims[1:] %}"),
    _m("row dropped: side-by-side page loses the last claim (builder)", _HTML,
       "claim_names={k: (c.claim, c.paper) for k, c in CLAIMS.items()}",
       "claim_names={k: (c.claim, c.paper) for k, c in list(CLAIMS.items())[:-1]}"),
    _m("row dropped: console shows all but the last tested claim", _CLI,
       "blocks = [ln for c in tested for ln in _claim_block(c, width)]",
       "blocks = [ln for c in tested[:-1] for ln in _claim_block(c, width)]"),
    # side-by-side columns under the wrong model
    _m("columns: side-by-side page headers in reverse model order (template)", _HTML,
       "<th>claim</th><th>paper</th>{% for m in models %}<th>{{ m }}</th>{% endfor %}</tr>",
       "<th>claim</th><th>paper</th>{% for m in models|reverse %}<th>{{ m }}</th>{% endfor %}</tr>"),
    _m("columns: side-by-side cells read the other model's rows (builder)", _HTML,
       'claim_cells = {m: {r.key: r for r in map(ClaimRow.from_json, summary["claims"].get(m) or [])} for m in models}',
       'claim_cells = {m: {r.key: r for r in map(ClaimRow.from_json, summary["claims"].get(o) or [])}\n'
       '                   for m, o in zip(models, models[::-1])}'),
    _m("columns: console side-by-side model names in reverse model order", _CLI,
       "for m, cell in zip(models, cells):", "for m, cell in zip(models[::-1], cells):"),
    # "Y of Y claims tested" when fewer were
    _m("count: page says total of total tested (template)", _HTML,
       "{{ ct.tested }} of {{ ct.total }} claims tested", "{{ ct.total }} of {{ ct.total }} claims tested"),
    _m("count: claims_tested counts every row (builder)", "src/normscope/report/missing.py",
       "tested = ClaimsTested(total=len(claims), tested=len(claims) - len(untested),",
       "tested = ClaimsTested(total=len(claims), tested=len(claims),"),
    _m("count: console says total of total tested", _CLI,
       "count.append(f\"claims: {ct.tested if ct.tested is not None else '?'} of \"",
       "count.append(f\"claims: {ct.total if ct.tested is not None else '?'} of \""),
    # a p value printed as 0.000
    _m("p: page numbers never switch to scientific below 1e-3 (formatter)", _FMT,
       "if v != 0 and (abs(v) < 10 ** (-digits) or abs(v) >= 1e5):", "if v != 0 and abs(v) >= 1e5:"),
    _m("p: p_text writes 3 decimals (formatter)", _FMT, 'return f"p = {p:.3g}"', 'return f"p = {p:.3f}"'),
    _m("p: table p-value writes 3 decimals always (formatter)", _FMT,
       'return f"{v:.3f}" if v >= 1e-3 else f"{v:.1e}"', 'return f"{v:.3f}"'),
    # direction and size labels exchanged
    _m("labels: page writes the size under 'direction' and the direction under 'size' (template)", _HTML,
       "direction: {{ c.direction|replace('no direction claimed', 'none claimed') }}; size: {{ c.size|replace('no size claimed', 'none claimed') }}",
       "direction: {{ c.size|replace('no size claimed', 'none claimed') }}; size: {{ c.direction|replace('no direction claimed', 'none claimed') }}"),
    _m("labels: claim row stores direction and size exchanged (builder)", _CLAIMS,
       "verdict=j.verdict, direction=j.direction, size=j.size,",
       "verdict=j.verdict, direction=j.size, size=j.direction,"),
    # a relative column showing the absolute value
    _m("relative: scorer table's relative column shows the delta (builder)", "src/normscope/report/stages/retrieval.py",
       "ci_text(r.delta_ci), None if r.relative is None else pct(r.relative), r.p_value,",
       "ci_text(r.delta_ci), None if r.relative is None else pct(r.delta), r.p_value,"),
    _m("relative: strata table's relative column shows the delta (builder)", "src/normscope/report/stages/retrieval.py",
       "r.mean_delta, ci_text(r.mean_delta_ci), pct(r.relative), r.p_holm]",
       "r.mean_delta, ci_text(r.mean_delta_ci), pct(r.mean_delta), r.p_holm]"),
    _m("relative: gain row judges the absolute delta (builder)", "src/normscope/retrieval/claims.py",
       'j = _sign_judged(sign_ok, "similarity_gain", r.relative, r.relative_ci, p=r.p_value,',
       'j = _sign_judged(sign_ok, "similarity_gain", r.delta, r.delta_ci, p=r.p_value,'),
    _m("relative: a percent figure is printed without the x100 (formatter)", _FMT,
       'f = lambda x: f"{100 * x:+.2f} %".replace("-", _MINUS)', 'f = lambda x: f"{x:+.2f} %".replace("-", _MINUS)'),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=float, default=1.0, help="lowest acceptable kill rate (default 1.0: all)")
    ap.add_argument("--only", nargs="*", help="run only the mutants whose name contains one of these words")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per mutant")
    ap.add_argument("--json", type=Path, help="also write the outcome as JSON here")
    ap.add_argument("--tests", nargs="+", help="run these pytest arguments instead of the rendering tests (e.g. "
                    "tests/test_render_roundtrip.py alone)")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or any(w in m.name for w in args.only)]
    if args.tests:
        chosen = [dataclasses.replace(m, tests=(tuple(args.tests),)) for m in chosen]
    return run_all(chosen, args.timeout, args.json, args.min)


if __name__ == "__main__":
    raise SystemExit(main())
