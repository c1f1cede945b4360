"""Reading a rendered report back: the page (``html.parser``, the standard library's HTML tokenizer) as a small
element tree, and the console scorecard (rich's recorded output with its ANSI styles) as lines of styled spans.

Used by tests/test_render_roundtrip.py. The readers go by structure (elements, classes, table rows and cells, the
colour of a span), never by the template's wording, so a change of layout or CSS keeps them working.
"""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser

_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    """An element: ``tag``, ``attrs`` (dict), ``children`` (Nodes and strings)."""

    def __init__(self, tag: str, attrs: dict, parent: Node | None = None) -> None:
        self.tag, self.attrs, self.parent, self.children = tag, attrs, parent, []

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        """The text content, whitespace collapsed (``<br>`` counts as a space)."""
        parts = []
        for c in self.children:
            parts.append(c if isinstance(c, str) else (" " if c.tag == "br" else c.text()))
        return " ".join("".join(parts).split())

    def text_without(self, cls: str) -> str:
        """The text content without that of the elements of class ``cls`` (e.g. a cell's ``meta`` label)."""
        parts = []
        for c in self.children:
            if isinstance(c, str):
                parts.append(c)
            elif c.tag == "br":
                parts.append(" ")
            elif cls not in c.classes:
                parts.append(c.text_without(cls))
        return " ".join("".join(parts).split())

    def iter(self, tag: str | None = None):
        """This element and every element below it (document order), optionally of one tag."""
        if tag is None or self.tag == tag:
            yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter(tag)

    def find_all(self, tag: str, cls: str | None = None, **attrs) -> list[Node]:
        return [n for n in self.iter(tag) if (cls is None or cls in n.classes)
                and all(n.attrs.get(k) == v for k, v in attrs.items())]

    def find(self, tag: str, cls: str | None = None, **attrs) -> Node | None:
        found = self.find_all(tag, cls, **attrs)
        return found[0] if found else None

    def own_rows(self) -> list[Node]:
        """The ``tr`` of this table, not those of tables nested in its cells."""
        rows = []

        def walk(n: Node) -> None:
            for c in n.children:
                if isinstance(c, Node):
                    if c.tag == "tr":
                        rows.append(c)
                    elif c.tag != "table":
                        walk(c)
        walk(self)
        return rows

    def cells(self) -> list[Node]:
        """The ``td`` / ``th`` children of a row."""
        return [c for c in self.children if isinstance(c, Node) and c.tag in ("td", "th")]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.cur)
        self.cur.children.append(node)
        if tag not in _VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:  # close up to the matching element (implied ends included)
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse_html(text: str) -> Node:
    """The page as a :class:`Node` tree."""
    b = _Builder()
    b.feed(text)
    b.close()
    return b.root


def table_grid(table: Node) -> tuple[list[str], list[tuple[Node, list[Node]]]]:
    """``(header texts, [(tr, cells)])`` of a table whose first row is its header."""
    rows = table.own_rows()
    head = [c.text() for c in rows[0].cells()]
    return head, [(r, r.cells()) for r in rows[1:]]


# --- numbers as the page and the console write them ----------------------------------------------------------------

_NUM = r"[+\-\u2212]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+\-\u2212]?\d+)?"


def numbers(text: str) -> list[float]:
    """Every number written in ``text`` (the page's minus sign U+2212 and thousands separators understood);
    a number followed by ``%`` is returned as written (a percentage)."""
    return [float(m.replace("\u2212", "-").replace(",", "")) for m in re.findall(_NUM, text)]


def figure_parts(text: str) -> tuple[float | None, tuple[float, float] | None]:
    """``(estimate, (lo, hi))`` of a figure written ``est [lo, hi]`` (the CI in brackets); None where absent."""
    m = re.search(r"(" + _NUM + r")\s*%?\s*\[\s*(" + _NUM + r")\s*%?\s*,\s*(" + _NUM + r")\s*%?\s*\]", text)
    if m:
        est, lo, hi = numbers(m.group(1))[0], numbers(m.group(2))[0], numbers(m.group(3))[0]
        return est, (lo, hi)
    found = numbers(text)
    return (found[0] if found else None), None


def close_to_shown(shown: float, value: float, *, digits: int = 3) -> bool:
    """``shown`` is ``value`` written with ``digits`` decimals or 3 significant digits (whichever is looser)."""
    tol = max(0.6 * 10 ** -digits, 6e-3 * abs(value), 1e-12)
    return math.isclose(shown, value, abs_tol=tol)


def hex_rgb(css_colour: str) -> tuple[int, int, int] | None:
    """``(r, g, b)`` of ``#rgb`` / ``#rrggbb`` / ``rgb(r, g, b)``, else None."""
    c = css_colour.strip().lower()
    m = re.fullmatch(r"#([0-9a-f]{3}|[0-9a-f]{6})", c)
    if m:
        h = m.group(1)
        h = "".join(ch * 2 for ch in h) if len(h) == 3 else h
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    m = re.fullmatch(r"rgba?\((\d+),\s*(\d+),\s*(\d+).*\)", c)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def css_rules(page: Node) -> list[tuple[str, dict[str, str]]]:
    """``[(selector, {property: value})]`` of the page's inline ``<style>`` blocks (a minimal CSS reader: no
    nesting, comments removed; an ``@media`` block's inner rules are read as plain rules)."""
    text = " ".join(s.text() for s in page.find_all("style"))
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"@media[^{]*\{", "", text)
    rules = []
    for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", text):
        props = {}
        for decl in body.split(";"):
            if ":" in decl:
                k, v = decl.split(":", 1)
                props[k.strip().lower()] = v.strip()
        for s in sel.split(","):
            rules.append((" ".join(s.split()), props))
    return rules


# --- the console ---------------------------------------------------------------------------------------------------

_SGR = re.compile(r"\x1b\[([0-9;]*)m")
#: ANSI colour codes (normal and bright) -> rich's colour names.
ANSI_COLOURS = {30: "black", 31: "red", 32: "green", 33: "yellow", 34: "blue", 35: "magenta", 36: "cyan", 37: "white",
                90: "black", 91: "red", 92: "green", 93: "yellow", 94: "blue", 95: "magenta", 96: "cyan", 97: "white"}


def ansi_spans(line: str) -> list[tuple[str, str | None, bool]]:
    """``[(text, colour or None, dim)]`` of one line of ANSI-styled console output."""
    spans, colour, dim, pos = [], None, False, 0
    for m in _SGR.finditer(line):
        if m.start() > pos:
            spans.append((line[pos:m.start()], colour, dim))
        for code in [int(c) for c in (m.group(1) or "0").split(";") if c]:
            if code == 0:
                colour, dim = None, False
            elif code == 2:
                dim = True
            elif code == 22:
                dim = False
            elif code == 39:
                colour = None
            elif code in ANSI_COLOURS:
                colour = ANSI_COLOURS[code]
        pos = m.end()
    if pos < len(line):
        spans.append((line[pos:], colour, dim))
    return spans


def plain(line: str) -> str:
    return _SGR.sub("", line)
