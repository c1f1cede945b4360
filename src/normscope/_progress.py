"""Progress on stderr, shared by the encoders, the cache, the probes and the labs.

On a terminal, a rich progress bar. When stderr is not a terminal (a log file, CI, ``> log 2>&1``),
no bar can be drawn, so :class:`Tracker` prints a line instead, at most every :data:`LINE_EVERY`
seconds and once at the end: ``embedding: 320/1,024 batches (31 %), 12.0 s elapsed, ETA 26.4 s``.
Long work is never silent in a log for longer than that.
"""

from __future__ import annotations

import contextlib
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from normscope._format import duration

__all__ = ["progress_bar", "Tracker", "LINE_EVERY"]

#: Seconds between two progress lines when stderr is not a terminal.
LINE_EVERY = 10.0


class Tracker:
    """Work done out of ``total``: a rich bar on a terminal, otherwise a progress line every :data:`LINE_EVERY` s.

    Parameters
    ----------
    label : str
        What is counted (``"embedding"``, ``"lab table/sgd"``).
    total : int
        Units of work.
    unit : str, keyword-only
        Their name (``"batches"``, ``"steps"``).
    completed : int, keyword-only
        Done before this run (a resumed checkpoint): not counted in the rate.
    note : str, keyword-only
        Shown after the count (``"(12 cached)"``).
    console : rich.console.Console, optional, keyword-only
        Default: stderr.
    """

    def __init__(self, label: str, total: int, *, unit: str = "batches", completed: int = 0, note: str = "",
                 console: Console | None = None) -> None:
        self.label, self.total, self.unit, self.note = label, int(total), unit, note
        self.done = self._start_done = int(completed)
        self.console = console or Console(stderr=True)
        self.fields: dict[str, str] = {}
        self._bar: Progress | None = None
        self._t0 = self._last = 0.0

    def start(self) -> Tracker:
        self._t0 = self._last = time.perf_counter()
        if self.console.is_terminal:
            self._bar = Progress(TextColumn(f"[bold]{self.label}[/]"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn(self.unit), TimeElapsedColumn(), TimeRemainingColumn(),
                                 TextColumn(self.note + " {task.description}"), console=self.console, transient=True)
            self._bar.start()
            self._task = self._bar.add_task("", total=self.total, completed=self.done)
        return self

    def line(self) -> str:
        """The progress line: counts, share, elapsed time and the ETA from this run's rate."""
        elapsed = time.perf_counter() - self._t0
        run = self.done - self._start_done
        left = self.total - self.done
        eta = duration(elapsed / run * left) if run > 0 else "unknown"
        pct = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        extra = "".join(f", {k} {v}" for k, v in self.fields.items())
        note = f" {self.note}" if self.note else ""
        return (f"{self.label}: {self.done:,}/{self.total:,} {self.unit}{pct}{note}, {duration(elapsed)} elapsed, "
                f"ETA {eta}{extra}")

    def update(self, completed: int | None = None, *, advance: int = 0, **fields) -> None:
        """Set the work done (``completed``) or add ``advance``; ``fields`` (e.g. ``loss="0.123"``) are shown too."""
        self.done = int(completed) if completed is not None else self.done + advance
        self.fields.update({k: str(v) for k, v in fields.items()})
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, description=" ".join(f"{k} {v}" for k, v in self.fields.items()))
            return
        now = time.perf_counter()
        if now - self._last >= LINE_EVERY and self.done < self.total:
            self._last = now
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)

    def stop(self) -> None:
        """End the bar, or print the last line (when any work was counted)."""
        if self._bar is not None:
            self._bar.stop()
        elif self.done > self._start_done:
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)


@contextlib.contextmanager
def progress_bar(show: bool, n_batches: int, *, note: str = "", label: str = "embedding", unit: str = "batches"):
    """Progress of ``n_batches`` units of work on stderr (:class:`Tracker`); yields ``advance()`` (a no-op when hidden).

    ``label`` names the work (``"embedding"``, ``"probe"``).
    """
    if not show:
        yield lambda: None
        return
    tracker = Tracker(label, n_batches, unit=unit, note=note).start()
    try:
        yield lambda: tracker.update(advance=1)
    finally:
        tracker.stop()
