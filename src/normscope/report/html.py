"""Rendering of ``index.html``: one self-contained page, no network requests.

The page is rendered by a jinja2 template held in this module with ``autoescape`` on, so every
string that comes from a dataset (words, queries, document titles) is HTML-escaped. Figures are
embedded as ``data:image/png;base64`` URIs (the PNG files also lie beside the page); the CSS is
inline and uses only local system fonts; there is no script, link, font or external URL.
"""

from __future__ import annotations

import base64
import datetime as _dt
import re
from pathlib import Path

from markupsafe import Markup

import jinja2

from normscope._format import claim_figure, duration, num
from normscope._io import atomic_path, file_inside, read_inside
from normscope.claims import CLAIMS, GLOSSARY, HEADLINE_RULE, KIND_TITLES, ClaimRow
from normscope.report.stage import StageRecord
from normscope.report.stages import SECTIONS
from normscope.report.summary import ClaimsTested, MissingData
from normscope.report.text import precision_sentence
from normscope.validate import check_output_path
from normscope.values import Status

__all__ = ["render_report", "render_html", "render_multi_report", "render_value", "TEMPLATE"]

_CSS = r"""<style>
 body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 980px; margin: 2em auto;
        padding: 0 1em; color: #1d1d1f; line-height: 1.45; overflow-wrap: break-word; }
 h1 { font-size: 1.6em; margin-bottom: 0.2em; }
 h2 { font-size: 1.25em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
 h3 { font-size: 1.05em; margin-bottom: 0.3em; }
 table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
 th, td { border: 1px solid #d6d6d6; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
 th { background: #f3f3f3; }
 td.num { text-align: right; font-variant-numeric: tabular-nums; }
 table:not(.claims) td.num { white-space: nowrap; }
 code { background: #f3f3f3; padding: 0.1em 0.3em; border-radius: 3px; font-size: 0.9em; }
 /* a table wider than the page scrolls sideways in its own box; words are never split letter by letter */
 .scroll { overflow-x: auto; max-width: 100%; margin: 0.6em 0; }
 .scroll > table { margin: 0; }
 .scroll > table td.long { min-width: 14em; }
 figure { margin: 1em 0; }
 .figgrid { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 400px), 1fr)); gap: 0.8em; }
 .figgrid figure { margin: 0; }
 .figgrid figure.wide { grid-column: 1 / -1; }
 figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
 figcaption { font-size: 0.9em; color: #444; }
 .status { display: inline-block; font-size: 0.8em; padding: 0.1em 0.5em; border-radius: 3px; margin-left: 0.4em; vertical-align: middle; }
 .status-ok { background: #e3f4e1; color: #1e5e1a; }
 .status-unavailable, .status-not_run { background: #f4f0dc; color: #6a5500; }
 .status-failed { background: #f8e0e0; color: #8a1c1c; }
 .status-kept { background: #ececec; color: #444; }
 table.claims { table-layout: fixed; width: 100%; }
 table.claims td { font-size: 0.95em; }
 details summary { cursor: pointer; }
 details .more { font-size: 0.92em; margin: 0.3em 0; }
 details.rule dt { font-weight: 600; margin-top: 0.3em; }
 details.rule dd { margin-left: 1.2em; }
 tr.verdict-reproduced td.verdict { background: #e3f4e1; }
 tr.verdict-refuted td.verdict { background: #f8e0e0; }
 tr.verdict-inconclusive td.verdict { background: #f4f0dc; }
 tr.verdict-not-decided-at-this-size td.verdict, tr.verdict-not-testable-here td.verdict { background: #eeeeee; }
 .why { background: #fbf8ea; border-left: 4px solid #d9c66b; padding: 0.4em 0.8em; }
 .fail { background: #fbeaea; border-left: 4px solid #d96b6b; padding: 0.4em 0.8em; }
 .says { background: #eef4fb; border-left: 4px solid #4c72b0; padding: 0.5em 1em; }
 .meta { color: #555; font-size: 0.9em; }
 ul.notes li { font-size: 0.92em; }
 table.kv { margin: 0.2em 0; font-size: 0.95em; display: block; max-width: 100%; overflow-x: auto; }
 table.kv th { font-weight: normal; background: #f8f8f8; }
 /* narrow screens: the scorecard becomes one block per claim, each cell labelled; figures one per row */
 @media (max-width: 700px) {
   body { margin: 1em auto; padding: 0 0.6em; }
   .figgrid, .sbs { grid-template-columns: 1fr !important; }
   table.claims, table.claims tbody, table.claims tr, table.claims td { display: block; width: auto; }
   table.claims colgroup, table.claims tr.head { display: none; }
   table.claims tr { border: 1px solid #d6d6d6; margin: 0 0 0.6em 0; }
   table.claims td { border: none; border-top: 1px solid #eee; text-align: left; white-space: normal; }
   table.claims td:first-child { border-top: none; font-weight: 600; }
   table.claims td[data-label]::before { content: attr(data-label) ": "; color: #555; font-size: 0.85em; }
 }
 @media print {
   body { max-width: none; margin: 0; font-size: 10pt; }
   nav { display: none; }
   .scroll { overflow: visible; }
   table { font-size: 8pt; }
   th, td { padding: 0.1em 0.3em; }
   table:not(.claims) td.num { white-space: normal; }
   tr, figure, img { break-inside: avoid; }
   h2, h3 { break-after: avoid; }
   .figgrid { grid-template-columns: 1fr 1fr; }
   details::details-content { content-visibility: visible; display: block; }
   details > summary { list-style: none; }
   * { print-color-adjust: exact; -webkit-print-color-adjust: exact; }
 }
</style>"""

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>normscope report: {{ report.model }}</title>
{{ css }}
</head>
<body>
<h1>normscope report</h1>
<p class="meta">Model <code>{{ report.model }}</code> &middot; size preset <b>{{ report.preset }}</b>
 &middot; precision {{ report.precision or 'fp32' }}{% if report.runtime %} &middot; runtime {{ report.runtime }}{% endif %}
 &middot; seed {{ report.seed }} &middot; device {{ report.device }} &middot; normscope {{ report.normscope_version }}
 &middot; generated {{ generated }}; this run took {{ duration(report.seconds) }}
 {%- set cached = (report.stage_cached or {}).values()|select|list|length %}
 {%- if cached %} ({{ cached }} {{ 'stage' if cached == 1 else 'stages' }} reused from the cache; their own times are in the stage table){% endif %}.
 All numbers on this page are in <code>summary.json</code> beside it.</p>
{% if precision_note %}<p class="meta precision"><b>{{ precision_note }}</b></p>{% endif %}
<nav><b>Sections:</b> <a href="#claims">Claims scorecard</a> &middot;
{% for key, title in sections.items() %}<a href="#{{ key }}">{{ title }}</a>{% if not loop.last %} &middot; {% endif %}{% endfor %}
</nav>

<h2 id="claims">Claims scorecard</h2>
<p class="meta">One line per claim of the paper: its figure, this run's figure with its 95% confidence interval, the
verdict and why in a few words; click a reason for the full reasoning. Each verdict is computed from this run's
numbers on this model and data, for the claim's direction and for its size; none is written in advance.</p>
{% set ct = claims_tested %}{% if ct %}<p class="count">{% if ct.headline %}<b>{{ ct.headline }}</b>.<br>{% endif %}{{ ct.tested }} of {{ ct.total }} claims tested
here; {{ (ct.not_tested or [])|length }} not testable here. Checks by construction (a design that meets the theorem's
assumptions by construction) and exploratory questions the paper leaves open are counted apart: they never add to
the paper's claims.</p>{% endif %}
{% if missing_data %}<p class="why">Missing data (one line per dataset: what it stopped and how to get it):</p>
<ul class="notes">{% for m in missing_data %}<li>{{ m.line }}</li>{% endfor %}</ul>{% endif %}
<table class="claims">
<colgroup><col style="width:27%"><col style="width:11%"><col style="width:20%"><col style="width:13%"><col style="width:29%"></colgroup>
<tr class="head"><th>claim</th><th>paper</th><th>this run [95% CI]</th><th>verdict</th><th>reason</th></tr>
{% for c in claims %}<tr class="verdict-{{ c.verdict|replace(' ', '-') }}"><td>{{ c.claim }}{% if c.kind and c.kind != 'paper' %}<br><span class="meta">{{ kind_titles.get(c.kind, c.kind) }}</span>{% endif %}</td><td data-label="paper">{{ c.paper }}</td>
<td class="num" data-label="this run">{% if c.label and c.measured is not none %}<span class="meta">{{ c.label }}</span><br>{% endif %}{{ figure(c) }}{% if c.beside %}<br><span class="meta">{{ c.beside }}</span>{% endif %}{% if c.stored %}<br><span class="meta stored">stored full run ({{ c.stored }}), not re-run by this report</span>{% endif %}</td>
<td class="verdict" data-label="verdict"><b>{{ c.verdict }}</b>{% if c.measured is not none and c.direction %}<br><span class="meta">direction: {{ c.direction|replace('no direction claimed', 'none claimed') }}; size: {{ c.size|replace('no size claimed', 'none claimed') }}</span>{% endif %}</td>
<td data-label="reason"><details><summary>{{ c.reason or c.why }}</summary><div class="more">
<p>{{ c.why }}</p>
{% if c.needs %}<p><b>Would decide it:</b> {{ c.needs }}</p>{% endif %}
<p class="meta">{% if c.what %}Statistic: {{ c.what }}. {% endif %}{% if c.claimed_size %}Claimed size: {{ c.claimed_size }}. {% endif %}
{% if c.tested_on %}Tested on: {{ c.tested_on }}. {% endif %}{% if c.n is not none %}n = {{ c.n }}. {% endif %}
{% if c.section %}Evidence: <a href="#{{ c.section }}">{{ sections.get(c.section, c.section) }}</a>.{% endif %}</p>
{% if c.details %}{{ cell(c.details) }}{% endif %}
</div></details></td></tr>
{% endfor %}</table>
<details class="rule"><summary>How a verdict is decided, and the terms used</summary><div class="more">
<p>{{ headline_rule }}</p>
<dl>{% for term, text in glossary.items() %}<dt>{{ term }}</dt><dd>{{ text }}</dd>{% endfor %}</dl>
</div></details>

<h2 id="what_this_says">What this says</h2>
<div class="says">
{% if says %}
{% for key, sentences in says.items() %}<p><b>{{ sections[key] }}.</b> {% for s in sentences %}{{ s }} {% endfor %}</p>
{% endfor %}
{% else %}<p>No section produced numbers to summarise.</p>{% endif %}
<p class="meta">Each sentence is chosen by the measured sign and whether the 95% confidence interval excludes 0
(or, for the lab, whether the theorem's gate is met); none is written in advance.</p>
</div>

{% for key, title in sections.items() %}{% set sec = summary.get(key, {}) %}{% set view = views.get(key, {}) %}
<section id="sec-{{ key }}">
<h2 id="{{ key }}">{{ title }}<span class="status status-{{ sec.status }}">{{ status_words.get(sec.status, sec.status) }}</span>{% if kept.get(key) %}<span class="status status-kept">kept from an earlier run</span>{% endif %}</h2>
{% if sec.status == 'ok' %}
{% if view.sizes %}<p class="meta">Sizes: {{ view.sizes }}</p>{% endif %}
{% if view.commands %}<p class="meta">Same numbers as the individual command{{ 's' if view.commands|length > 1 else '' }}, run in this folder: {% for c in view.commands %}<code>{{ c.text }}</code>{% if not loop.last %}; {% endif %}{% endfor %}.</p>{% endif %}
{% if view.key_numbers %}
<div class="scroll"><table class="key">
<tr><th>quantity</th><th>value</th><th>unit</th></tr>
{% for row in view.key_numbers %}<tr><td>{{ row.label }}</td><td{% if is_num(row.value) %} class="num"{% endif %}>{{ cell(row.value) }}</td><td>{{ row.unit }}</td></tr>
{% endfor %}</table></div>
{% endif %}
{% for t in view.tables or [] %}
<h3>{{ t.title }}</h3>
<div class="scroll"><table>
<tr>{% for c in t.columns %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in t.rows %}<tr>{% for v in row %}<td{% if is_num(v) %} class="num"{% elif v is string and v|length > 60 %} class="long"{% endif %}>{{ cell(v) }}</td>{% endfor %}</tr>
{% endfor %}</table></div>
{% endfor %}
{% if view.figures %}<div class="{{ 'figgrid' if view.figures|length > 1 else 'figs' }}">
{% for f in view.figures %}
<figure{% if wide.get(f.file) %} class="wide"{% endif %}><img alt="{{ f.caption }}" src="{{ images.get(f.file, '') }}"><figcaption>{{ f.caption }} (<code>{{ f.file }}</code>)</figcaption></figure>
{% endfor %}</div>{% endif %}
{% if view.notes %}<h3>Caveats</h3><ul class="notes">{% for n in view.notes %}<li>{{ cell(n) }}</li>{% endfor %}</ul>{% endif %}
{% if says.get(key) %}<p class="says">{% for s in says[key] %}{{ s }} {% endfor %}</p>{% endif %}
{% elif sec.status == 'failed' %}
<p class="fail">This section failed: {{ sec.reason }}</p>
{% elif sec.status == 'not_run' %}
<p class="why">Not run: {{ sec.reason }}</p>
{% else %}
<p class="why">Not available: {{ sec.reason }}</p>
{% endif %}
</section>
{% endfor %}

<h2 id="timing">Run</h2>
<div class="scroll"><table>
<tr><th>stage</th><th>status</th><th>wall time</th><th>from cache</th></tr>
{% for st, rec in records.items() %}<tr><td>{{ st }}</td><td>{{ rec.status.value }}{% if rec.kept %} (kept from an earlier run){% endif %}</td><td class="num">{{ duration(rec.seconds) }}</td><td>{{ 'yes' if rec.cached else 'no' }}</td></tr>
{% endfor %}</table></div>
<p class="meta">Sizes of this run (stages that ran): {% for k, v in run_sizes.items() %}{{ k }} = {{ 'stage default' if v is none else num(v) }}{% if not loop.last %}, {% endif %}{% endfor %}.</p>
</body>
</html>
"""

_STATUS_WORDS = {s.value: s.words for s in Status}


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _num(v, digits: int = 3) -> str:
    return num(v, digits) if v is None or _is_num(v) else str(v)


def render_value(v) -> Markup:
    """HTML of one value of the page, escaped: numbers with 3 significant digits, ``None`` as
    ``n/a``, a dict as a key/value table and a list of dicts as a table with one column per key
    (nested values recursively), any other list comma-separated. A dict ``{"text": ..., "table": ...}``
    is the text followed by its table (stages use it for structured caveats)."""
    if isinstance(v, dict) and set(v) == {"text", "table"}:
        return Markup("{}{}").format(v["text"], render_value(v["table"]))
    if isinstance(v, dict):
        rows = Markup("").join(Markup("<tr><th>{}</th><td{}>{}</td></tr>").format(
            k, Markup(' class="num"') if _is_num(x) else "", render_value(x)) for k, x in v.items())
        return Markup('<table class="kv">{}</table>').format(rows) if v else Markup("none")
    if isinstance(v, (list, tuple)) and v and all(isinstance(x, dict) for x in v):
        keys = list(dict.fromkeys(k for x in v for k in x))
        head = Markup("").join(Markup("<th>{}</th>").format(k) for k in keys)
        body = Markup("").join(Markup("<tr>{}</tr>").format(Markup("").join(
            Markup("<td>{}</td>").format(render_value(x.get(k))) for k in keys)) for x in v)
        return Markup('<table class="kv"><tr>{}</tr>{}</table>').format(head, body)
    if isinstance(v, (list, tuple)):
        return Markup(", ").join(render_value(x) for x in v)
    return _breakable(_num(v))


#: A run of characters this long without a space may be broken after a path or identifier separator.
_LONG_TOKEN = 24
_PATHLIKE = re.compile(r"[\w./\\:@+=?~%,()\[\]-]+")
_SEPARATORS = re.compile(r"(?<=[/\\_.=&?-])(?=[^/\\_.=&?-])")


def _breakable(text: str) -> Markup:
    """``text`` escaped, with a line-break opportunity (``<wbr>``) after each ``/ \\ _ . - = & ?`` of a path-like
    token (letters, digits and those separators) longer than :data:`_LONG_TOKEN` characters (a path, a model id): a
    narrow column breaks a path at its separators, never a word letter by letter. Other text is only escaped."""
    parts = re.split(r"(\s+)", text)
    out = []
    for part in parts:
        if len(part) > _LONG_TOKEN and _PATHLIKE.fullmatch(part):
            out.append(Markup("<wbr>").join(_SEPARATORS.split(part)))
        else:
            out.append(Markup.escape(part))
    return Markup("").join(out)


def _png_aspect(data: bytes) -> float:
    """Width / height of a PNG from its IHDR chunk (1.0 when unreadable)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24:
        return 1.0
    w = int.from_bytes(data[16:20], "big")
    h = int.from_bytes(data[20:24], "big")
    return w / h if h else 1.0


def _image_uri(path: Path, folder: Path | None = None) -> str:
    """``path`` as a data URI, read without following a symbolic link out of ``folder`` (default: its own)."""
    return "data:image/png;base64," + base64.b64encode(read_inside(path, folder or path.parent)).decode("ascii")


def _embeddable(path: Path, folder: Path) -> bool:
    """A figure to embed: a regular file that resolves inside ``folder`` (a link out of it is never read)."""
    return file_inside(path, folder)


def render_html(summary: dict, records: dict[str, StageRecord], out_dir: str | Path) -> str:
    """The page as a string.

    Parameters
    ----------
    summary : dict
        summary.json content (section key -> numbers, ``report``, ``what_this_says``); the scorecard is rendered
        from its rows as :class:`~normscope.claims.ClaimRow` s, the count and the missing-data lines as
        :class:`~normscope.report.summary.ClaimsTested` / :class:`~normscope.report.summary.MissingData` (rows
        given as JSON objects are read as those).
    records : dict
        Stage name -> :class:`~normscope.report.stage.StageRecord` (views: key numbers, tables, figures,
        notes, reproduce commands).
    out_dir : str or Path
        Directory holding the figure PNGs (embedded as base64 data URIs).

    Returns
    -------
    str
        Self-contained HTML (no external resource of any kind).
    """
    out_dir = Path(out_dir)
    views = {key: sec for rec in records.values() for key, sec in rec.sections.items()}
    images: dict[str, str] = {}
    wide: dict[str, bool] = {}
    for f in (f for rec in records.values() for f in rec.figures()):
        p = out_dir / f.file
        if _embeddable(p, out_dir):
            data = read_inside(p, out_dir)
            images[f.file] = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
            wide[f.file] = _png_aspect(data[:32]) > 1.9
    env = jinja2.Environment(autoescape=True, undefined=jinja2.ChainableUndefined)
    return env.from_string(TEMPLATE).render(
        css=Markup(_CSS), report=summary["report"], run_sizes=summary["report"]["sizes"], summary=summary,
        claims=[ClaimRow.from_json(c) for c in summary.get("claims") or []],
        claims_tested=ClaimsTested.from_json(summary.get("claims_tested")),
        missing_data=[MissingData.from_json(m) for m in summary.get("missing_data") or []],
        sections=SECTIONS, views=views, images=images, wide=wide, records=records,
        kept={key: True for rec in records.values() if rec.kept for key in rec.sections},
        says=summary["what_this_says"] if "what_this_says" in summary else {}, status_words=_STATUS_WORDS,
        num=_num, is_num=_is_num, cell=render_value, figure=claim_figure, headline_rule=HEADLINE_RULE,
        glossary=GLOSSARY, kind_titles=KIND_TITLES, duration=duration, precision_note=precision_sentence(summary, SECTIONS),
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )


def render_report(summary: dict, records: dict, path: str | Path) -> Path:
    """Write the page to ``path`` atomically (figures are read from ``path``'s directory)."""
    path = check_output_path(path)
    text = render_html(summary, records, path.parent)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return path


MULTI_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>normscope report: {{ models|join(', ') }}</title>
{{ css }}
<style> .sbs { display: grid; grid-template-columns: repeat({{ models|length }}, 1fr); gap: 0.6em; }
 .sbs figure { margin: 0; } body { max-width: {{ [700 + 320 * models|length, 1220]|min }}px; } </style>
</head>
<body>
<h1>normscope report: {{ models|length }} models side by side</h1>
<p class="meta">Models {% for m in models %}<code>{{ m }}</code>{% if not loop.last %}, {% endif %}{% endfor %}
 &middot; size preset <b>{{ report.preset }}</b> &middot; precision {{ report.precision }} &middot; seed {{ report.seed }}
 &middot; generated {{ generated }}; this run took {{ duration(report.seconds) }}.
 Each model's own page: {% for m in models %}<code>{{ report.folders[m] }}/index.html</code>{% if not loop.last %}, {% endif %}{% endfor %}.
 All numbers are in <code>summary.json</code> beside this page.</p>
{% for m, err in (report.failed_models or {}).items() %}<p class="fail">Model <code>{{ m }}</code> failed: {{ err }}</p>{% endfor %}
<nav><b>Sections:</b> <a href="#claims">Claims scorecard</a> &middot; <a href="#forest">Forest plot</a>
{% for key, title in sections.items() %} &middot; <a href="#{{ key }}">{{ title }}</a>{% endfor %}</nav>

<h2 id="claims">Claims scorecard, one column per model</h2>
<p class="meta">Each cell: the model's figure, its 95% CI and the verdict computed from them on that model's run
(reproduced / refuted / inconclusive / not decided at this size / not testable here); click the reason for the full
reasoning. No verdict is written in advance. {{ headline_rule }}</p>
<div class="scroll"><table class="claims multi">
<tr class="head"><th>claim</th><th>paper</th>{% for m in models %}<th>{{ m }}</th>{% endfor %}</tr>
{% for key, (claim, paper) in claim_names.items() %}<tr><td>{{ claim }}</td><td data-label="paper">{{ paper }}</td>
{% for m in models %}{% set c = claim_cells[m].get(key, empty_row) %}<td data-label="{{ m }}">{% if c.measured is not none %}{{ figure(c) }}<br>{% endif %}<b>{{ c.verdict or 'not run' }}</b>{% if c.reason %}<details><summary>{{ c.reason }}</summary><div class="more">{{ c.why }}</div></details>{% endif %}</td>{% endfor %}</tr>
{% endfor %}</table></div>

<h2 id="forest">Forest plot of the headline statistics</h2>
{% if forest %}<figure><img alt="forest plot: estimate and 95% CI per model, one panel per claim" src="{{ forest }}">
<figcaption>One panel per claim with a figure: each model's estimate (dot) and 95% CI (bar); dashed: 0; red dot: refuted
on that model. What each statistic is, and which sources of sampling its CI resamples, is under the panel title.</figcaption></figure>
{% else %}<p class="why">No claim has a figure for any model in this run.</p>{% endif %}

{% for key, title in sections.items() %}{% set sbs = side.get(key, {}) %}
<section id="sec-{{ key }}">
<h2 id="{{ key }}">{{ title }}</h2>
<div class="scroll"><table><tr><th>quantity</th>{% for m in models %}<th>{{ m }}</th>{% endfor %}</tr>
<tr><td>status</td>{% for m in models %}<td>{{ status_words.get((sbs.status or {}).get(m), (sbs.status or {}).get(m)) }}</td>{% endfor %}</tr>
{% for row in sbs.rows or [] %}<tr><td>{{ row[0] }}</td>{% for v in row[1:] %}<td{% if is_num(v) %} class="num"{% endif %}>{{ num(v) }}</td>{% endfor %}</tr>
{% endfor %}</table></div>
{% set figs = figures.get(key, {}) %}{% if figs %}
{% for name, per_model in figs.items() %}<div class="sbs">{% for m in models %}<figure>{% if per_model.get(m) %}<img alt="{{ name }} ({{ m }})" src="{{ per_model[m] }}">{% endif %}<figcaption>{{ m }}: <code>{{ name }}</code></figcaption></figure>{% endfor %}</div>
{% endfor %}{% endif %}
</section>
{% endfor %}
</body>
</html>
"""


def render_multi_report(summary: dict, records: dict, out_dir: str | Path, path: str | Path, *,
                        forest: Path | None = None) -> Path:
    """Write the side-by-side page of several models (see :mod:`normscope.report.multi`) to ``path``.

    Parameters
    ----------
    summary : dict
        The combined summary (``report``, ``claims``, ``side_by_side``, ``models``).
    records : dict
        Model name -> stage records (for each model's figures).
    out_dir : str or Path
        The combined report folder (each model's figures lie in ``report.folders[model]``).
    path : str or Path
        The page (written atomically).
    forest : Path, optional
        The forest-plot PNG, embedded as a data URI.

    Returns
    -------
    Path
    """
    out_dir = Path(out_dir)
    report = summary["report"]
    models = list(report["models"])
    figures: dict[str, dict[str, dict[str, str]]] = {}
    for m, recs in records.items():
        folder = out_dir / report["folders"][m]
        for rec in recs.values():
            for key, sec in rec.sections.items():
                for f in sec.figures:
                    p = folder / f.file
                    if _embeddable(p, out_dir):
                        figures.setdefault(key, {}).setdefault(f.file, {})[m] = _image_uri(p, out_dir)
    claim_cells = {m: {r.key: r for r in map(ClaimRow.from_json, summary["claims"].get(m) or [])} for m in models}
    env = jinja2.Environment(autoescape=True, undefined=jinja2.ChainableUndefined)
    text = env.from_string(MULTI_TEMPLATE).render(
        css=Markup(_CSS), report=report, models=models, sections=SECTIONS, side=summary["side_by_side"],
        claim_names={k: (c.claim, c.paper) for k, c in CLAIMS.items()}, claim_cells=claim_cells, figure=claim_figure,
        empty_row=ClaimRow(),
        figures=figures, forest=_image_uri(Path(forest), out_dir) if forest is not None and _embeddable(Path(forest), out_dir) else None,
        status_words=_STATUS_WORDS, num=_num, is_num=_is_num, duration=duration, headline_rule=HEADLINE_RULE,
        generated=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    path = check_output_path(path)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
    return path
