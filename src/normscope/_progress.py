"""Progress bars on stderr (rich), shared by the encoders, the cache and the stages."""

from __future__ import annotations

import contextlib

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(show: bool, n_batches: int, *, note: str = "", label: str = "embedding"):
    """A rich progress bar on stderr counting batches; yields ``advance()`` (a no-op when hidden).

    ``label`` names the work (``"embedding"``, ``"probe"``).
    """
    if not show:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn(f"[bold]{label}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("batches"),
        TimeRemainingColumn(),
        TextColumn(note),
        console=Console(stderr=True),
    ) as prog:
        task = prog.add_task("embed", total=n_batches)
        yield lambda: prog.advance(task, 1)
