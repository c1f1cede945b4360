"""Screenshots of a report page in headless Chromium at a phone width (390 px) and a desktop width (1,400 px), plus
its print rendering, and the layout checks the page must pass at each width.

Usage::

    python scripts/page_screenshots.py OUT/index.html --out shots/
    python scripts/page_screenshots.py --make /tmp/page   # first writes a small real report (bundled model,
                                                          # stages setup, norms, lab) into /tmp/page

Writes ``<name>-390.png``, ``<name>-1400.png`` (full page) and ``<name>-print.png`` (the page under
``@media print`` at A4 width, 794 px) into ``--out``, and prints one line per width with:

- ``page scroll width``: the document's width; more than the window means the whole page scrolls sideways
  (it must not: a wide table scrolls inside its own box);
- ``letter-split elements``: elements whose computed ``overflow-wrap`` is ``anywhere`` or ``word-break`` is
  ``break-all`` (words split letter by letter; must be 0);
- ``tables wider than their box``: tables that overflow their parent (each must sit in a ``.scroll`` box, or be a
  key/value table, which scrolls itself);
- ``figure columns``: the distinct left edges of the figures of one grid (1 at 390 px: figures stack).

Exit status 1 when a check fails. Needs the ``playwright`` Python package and a system Chromium
(``apt-get install chromium``); run with ``--chromium PATH`` to point at another binary. No network request
is made (every request but the page's own is aborted).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

#: The flags the browser test uses (tests/test_report_browser.py): no network, no profile state.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WIDTHS = (390, 1400)

_CHECKS_JS = """() => {
  const closed = Array.from(document.querySelectorAll('details')).filter(d => !d.open);
  closed.forEach(d => d.open = true);  // measured as a reader who opened every reason sees it
  const all = Array.from(document.querySelectorAll('body *'));
  const split = all.filter(e => { const s = getComputedStyle(e);
      return s.overflowWrap === 'anywhere' || s.wordBreak === 'break-all'; }).length;
  const over = Array.from(document.querySelectorAll('table')).filter(t => {
      const box = t.parentElement.getBoundingClientRect(); const r = t.getBoundingClientRect();
      return r.width > box.width + 1 && !t.closest('.scroll, table.kv'); }).length;
  const grids = Array.from(document.querySelectorAll('.figgrid, .sbs')).map(g =>
      new Set(Array.from(g.querySelectorAll(':scope > figure')).map(f => Math.round(f.getBoundingClientRect().left))).size);
  const res = {scrollWidth: document.documentElement.scrollWidth, split: split, over: over,
               figureColumns: grids.length ? Math.max(...grids) : 0, nTables: document.querySelectorAll('table').length};
  closed.forEach(d => d.open = false);
  return res;
}"""


def make_page(folder: Path) -> Path:
    """A small real report (bundled all-MiniLM-L6-v2; set-up, norms and the lab at small sizes) in ``folder``."""
    from normscope.encoders import load_encoder
    from normscope.report import ReportConfig, Sizes, run_report

    sizes = Sizes(words=300, lab_steps=600, lab_snapshots=8, lab_probe_batches=10)
    cfg = ReportConfig(out=folder, sizes=sizes, only=("setup", "norms", "lab"))
    return run_report(cfg, progress=False, encoder=load_encoder()).index


def shoot(page_path: Path, out: Path, chromium: str) -> list[dict]:
    """Screenshots and checks of ``page_path`` at each of :data:`WIDTHS` and in print; one dict per width."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    stem = page_path.parent.name or "page"
    results = []
    with tempfile.TemporaryDirectory(prefix="normscope-chromium-") as profile, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(profile, executable_path=chromium, args=CHROMIUM_ARGS,
                                                   headless=True, viewport={"width": WIDTHS[0], "height": 900})
        try:
            page = ctx.new_page()
            page.route("**/*", lambda r: r.continue_() if r.request.url == page_path.resolve().as_uri() else r.abort())
            page.goto(page_path.resolve().as_uri())
            page.wait_for_load_state("load")
            for w in WIDTHS:
                page.set_viewport_size({"width": w, "height": 900})
                checks = page.evaluate(_CHECKS_JS)
                shot = out / f"{stem}-{w}.png"
                page.screenshot(path=str(shot), full_page=True)
                results.append({"width": w, "png": shot, **checks})
            page.set_viewport_size({"width": 794, "height": 1123})
            page.emulate_media(media="print")
            shot = out / f"{stem}-print.png"
            page.screenshot(path=str(shot), full_page=True)
            results.append({"width": "print (794)", "png": shot, **page.evaluate(_CHECKS_JS)})
        finally:
            ctx.close()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page", nargs="?", type=Path, help="a report's index.html")
    ap.add_argument("--make", type=Path, metavar="DIR", help="first write a small real report into DIR")
    ap.add_argument("--out", type=Path, default=Path("screens"), help="folder of the PNGs (default: screens/)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser")
                    or "/usr/bin/chromium", help="the Chromium binary")
    a = ap.parse_args(argv)
    if a.make is not None:
        page = make_page(a.make)
    elif a.page is not None:
        page = a.page
    else:
        ap.error("give a page or --make DIR")
    if not Path(a.chromium).is_file():
        print(f"no Chromium at {a.chromium} (apt-get install chromium, or --chromium PATH)", file=sys.stderr)
        return 2
    bad = False
    for r in shoot(page, a.out, a.chromium):
        w = r["width"]
        fails = []
        if isinstance(w, int) and r["scrollWidth"] > w:
            fails.append("the page scrolls sideways")
        if r["split"]:
            fails.append("words split letter by letter")
        if r["over"]:
            fails.append("a table overflows outside a scroll box")
        if w == WIDTHS[0] and r["figureColumns"] > 1:
            fails.append("figures side by side on a phone")
        bad |= bool(fails)
        print(f"{w}: {r['png']}: page scroll width {r['scrollWidth']} px, letter-split elements {r['split']}, "
              f"tables wider than their box {r['over']} (of {r['nTables']}), figure columns {r['figureColumns']}"
              + (f"  FAIL: {'; '.join(fails)}" if fails else "  ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
