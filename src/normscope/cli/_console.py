"""The consoles every command prints through: rich, with markup off.

User strings (item ids, texts, file names, error messages) reach the terminal in tables, titles and
lines; with rich's markup on, an id such as ``[/x]`` raises ``MarkupError`` (after the outputs were
written) and ``[bold]`` changes the output. These consoles never read markup from strings: styles are
given as ``style=`` arguments or :class:`rich.text.Text` objects, so every string prints as it is.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

__all__ = ["make_console", "styled"]


def make_console(*, stderr: bool = False, width: int | None = None, wide: int | None = None) -> Console:
    """A :class:`rich.console.Console` with markup off (stdout, or stderr with ``stderr=True``: its lines are
    never wrapped, so a path or a message stays whole for grep and logs).

    ``wide``: at least this many columns (a terminal's width when wider; exactly ``wide`` when not a
    terminal), for tables that must not wrap.
    """
    c = Console(stderr=stderr, width=width, markup=False, soft_wrap=stderr)
    if wide is not None and width is None:
        c = Console(stderr=stderr, width=max(c.width, wide) if c.is_terminal else wide, markup=False, soft_wrap=stderr)
    return c


def styled(text: str, style: str) -> Text:
    """``text`` as a :class:`rich.text.Text` in ``style`` (never parsed as markup)."""
    return Text(str(text), style=style)
