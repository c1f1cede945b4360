"""The report renders in headless Chromium: every heading and figure present, no network request,
dataset text escaped.

Needs the Python ``playwright`` package (test extra) and a system Chromium (Debian package
``chromium``; ``make test`` installs it when running as root). Without them the test skips with the
reason, unless ``NORMSCOPE_REQUIRE_BROWSER=1`` (set by ``make test`` where it could install
Chromium), where it fails instead.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from normscope.report import SECTIONS, Sizes
from normscope.report import ReportConfig, run_report

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

EVIL = '<script>alert("x")</script>'


def _chromium() -> str:
    """Path of the system Chromium; skip (or fail when required) if it or playwright is missing."""
    required = os.environ.get("NORMSCOPE_REQUIRE_BROWSER") == "1"
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None and Path("/usr/bin/chromium").is_file():
        path = "/usr/bin/chromium"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "the playwright Python package is not installed (pip install -e '.[test]')"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    if path is None:
        reason = "no system Chromium (apt-get install chromium; make test installs it when run as root)"
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def test_report_renders_in_headless_chromium(tmp_path, bundled_encoder):
    chromium = _chromium()
    from playwright.sync_api import sync_playwright

    items = tmp_path / "items.txt"
    items.write_text("\n".join(["cat", "democracy", EVIL, "the", "photosynthesis", "a & b", "run", "blue"]) + "\n",
                     encoding="utf-8")
    out = tmp_path / "report"
    sizes = Sizes(words=50, lab_steps=300, lab_snapshots=8, lab_probe_batches=10)
    cfg = ReportConfig(out=out, sizes=sizes, only=("setup", "norms", "lab"), items=items)
    res = run_report(cfg, progress=False, encoder=bundled_encoder)
    n_figures = sum(len(rec.figures()) for rec in res.records.values())
    assert n_figures >= 3

    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})

            def _route(route):
                url = route.request.url
                requests.append(url)
                if url.startswith("file://") and url.endswith("index.html"):
                    route.continue_()
                else:
                    route.abort()

            page.route("**/*", _route)
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(res.index.resolve().as_uri())
            page.wait_for_load_state("load")
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)

            headings = [h.strip() for h in page.locator("h2").all_inner_texts()]
            images = page.evaluate(
                "() => Array.from(document.images).map(i => [i.naturalWidth, i.naturalHeight, i.src.slice(0, 22)])"
            )
            n_scripts = page.locator("script").count()
            body_text = page.inner_text("body")
        finally:
            browser.close()

    # only the page itself was requested: figures are data URIs, no CSS/JS/font/URL anywhere
    assert [u for u in requests if not u.endswith("index.html")] == [], requests
    assert len(requests) == 1
    # every section heading is there
    for title in SECTIONS.values():
        assert any(h.startswith(title) for h in headings), (title, headings)
    assert any(h.startswith("What this says") for h in headings)
    # every figure decoded (non-zero size) and is embedded
    assert len(images) == n_figures
    for w, h, src in images:
        assert w > 100 and h > 100 and src == "data:image/png;base64,"
    # the dataset text holding <script> is shown as text, never executed
    assert n_scripts == 0 and dialogs == []
    assert EVIL in body_text
    html = res.index.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html and EVIL not in html
    # a screenshot was taken and is a real PNG of the whole page
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def _wide_records() -> dict:
    """Stage records holding the widest tables the report writes (13 columns, long headers and cells)."""
    cols = ["optimizer", "\u03b7", "\u03bb", "steps", "relaxation time (steps)", "mean q/c", "median q/c",
            "fraction toward R_eq [95% Wilson]", "Spearman(R_eq0, R_T) [95% CI]",
            "partial Spearman(R_eq0, R_T | R_0) [95% CI]", "fraction toward the median R_eq (baseline)",
            "Pearson(R_T, window R_eq)", "s / step"]
    rows = [[opt, 2e-5, 0.01, 150, 407.3, -0.34012, -0.13, "0.510 [0.375, 0.644]", "0.233 [-0.042, 0.479]",
             "0.224 [-0.054, 0.458]", 0.9876, None, 2.69] for opt in ("sgd", "momentum", "adamw")]
    cmd = ("normscope lab --encoder table --optimizer momentum --data synthetic --seed 0 --steps 12000 "
           "--snapshots 32 --probe-batches 100")
    from normscope.report.stage import Command, KeyNumber, Section, StageRecord, Table
    from normscope.values import Status

    sec = Section("transformer_lab", commands=[Command(tuple(cmd.split()))], sizes="x",
                  key_numbers=[KeyNumber("k", "a very long quantity name " * 4, 1.0)],
                  tables=[Table("wide", cols, rows), Table("commands", ["optimizer", "error", "command"],
                                                           [["adamw", 0.87, cmd]])], notes=["note " * 80])
    return {"transformer": StageRecord("transformer", Status.OK, {"transformer_lab": sec}, key="k")}


def test_tables_fit_a_1280px_and_a_390px_window(tmp_path):
    """Every table of the page (the scorecard with its longest reasons, a 13-column table, a table of commands) fits
    a 1280 px and a 390 px window: the page never scrolls sideways (a table wider than the page scrolls inside its
    own box), no word is split letter by letter (no ``overflow-wrap: anywhere`` / ``word-break: break-all``), and at
    390 px the scorecard is one block per claim within the window."""
    chromium = _chromium()
    from playwright.sync_api import sync_playwright

    from normscope.claims import CLAIMS, judge, claim_row, not_testable_row
    from normscope.report.html import render_html

    rows = []
    for key in CLAIMS:
        j = judge(key, 0.0017, [-0.0047, 0.0088])
        rows.append(claim_row(key, measured=0.0017, ci=[-0.0047, 0.0088], judged=j, what="a statistic " * 20,
                              beside="raw Pearson r(R, \u03a3\u00b2) +0.447 [+0.353, +0.531]", details={"x" * 60: 1.0})
                    if CLAIMS[key].sign is not None else not_testable_row(key, "why " * 15))
    summary = {"report": {"model": "m", "sizes": {}}, "claims": rows, "transformer_lab": {"status": "ok"}}
    out = tmp_path / "r"
    out.mkdir()
    page_path = out / "index.html"
    page_path.write_text(render_html(summary, _wide_records(), out), encoding="utf-8")
    measure = """() => {
      const boxes = Array.from(document.querySelectorAll('table')).map(t => t.closest('.scroll, table.kv') || t);
      const all = Array.from(document.querySelectorAll('body *'));
      const claims = document.querySelector('table.claims').getBoundingClientRect();
      return {page: document.documentElement.scrollWidth,
              boxes: Math.max(...boxes.map(b => b.getBoundingClientRect().right)),
              split: all.filter(e => { const s = getComputedStyle(e);
                                       return s.overflowWrap === 'anywhere' || s.wordBreak === 'break-all'; }).length,
              claims: claims.right, scrolled: document.querySelectorAll('.scroll > table').length};
    }"""
    seen = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for width in (1280, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.route("**/*", lambda r: r.continue_() if r.request.url.endswith("index.html") else r.abort())
                page.goto(page_path.resolve().as_uri())
                page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
                seen[width] = page.evaluate(measure)
                n_tables = page.locator("table").count()
                page.close()
        finally:
            browser.close()
    assert n_tables >= 4
    for width, m in seen.items():
        assert m["page"] <= width and m["boxes"] <= width and m["claims"] <= width, (width, m)
        assert m["split"] == 0 and m["scrolled"] >= 3, (width, m)
