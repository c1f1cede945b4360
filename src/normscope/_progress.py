"""Progress on stderr, shared by the encoders, the cache, the probes, the labs and every command.

On a terminal, a rich progress bar. When stderr is not a terminal (a log file, CI, ``> log 2>&1``),
no bar can be drawn, so :class:`Tracker` prints a line instead, at most every :data:`LINE_EVERY`
seconds and once at the end: ``embedding: 320/1,024 batches (31 %), 12.0 s elapsed, ETA 26.4 s``.

Work without a count (a bootstrap, a permutation test) or a unit of counted work that takes long (one
probe batch on a loaded machine) is covered by :func:`heartbeat`, which every command runs under
(:class:`normscope.cli._Command`): when nothing was printed for :data:`LINE_EVERY` seconds and no bar
is on screen, it prints one line: the running tracker's line, else the named step the code is in
(:func:`step`: ``correlate: bootstrap CIs (2,000 resamples), 40.0 s elapsed``). Long work is never
silent for longer than :data:`LINE_EVERY` seconds, in a log or on a terminal.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from normscope._format import duration

__all__ = ["progress_bar", "Tracker", "LINE_EVERY", "heartbeat", "step", "current_step"]

#: Seconds between two progress lines when stderr is not a terminal.
LINE_EVERY = 10.0

#: What is running in this process: the trackers (innermost last), the named steps, the heartbeats and when a
#: progress line was last printed (time.monotonic()).
_NOW: dict = {"trackers": [], "steps": [], "beats": [], "last": 0.0}
_LOCK = threading.Lock()


def _said() -> None:
    """A progress line was printed now (a heartbeat stays quiet for :data:`LINE_EVERY` seconds)."""
    _NOW["last"] = time.monotonic()


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Name the work of the block for the progress lines of :func:`heartbeat` (nested steps are joined by
    " > "); costs nothing when no heartbeat runs."""
    with _LOCK:
        _NOW["steps"].append(str(name))
    try:
        yield
    finally:
        with _LOCK:
            steps = _NOW["steps"]
            if name in steps:
                del steps[len(steps) - 1 - steps[::-1].index(name)]


def current_step() -> str:
    """The named steps running now (:func:`step`), outermost first, joined by " > " ("" when none)."""
    with _LOCK:
        return " > ".join(_NOW["steps"])


@contextlib.contextmanager
def heartbeat(label: str, *, every: float | None = None, console: Console | None = None,
              line: Callable[[float], str] | None = None, clock: Callable[[], float] = time.monotonic
              ) -> Iterator[None]:
    """While the block runs, a progress line whenever nothing was printed for ``every`` seconds.

    Parameters
    ----------
    label : str
        What runs (a command's name, a report stage).
    every : float, optional
        Seconds of silence before a line (default :data:`LINE_EVERY`, read when the block starts).
    console : rich.console.Console, optional
        Default: stderr.
    line : callable, optional
        ``line(elapsed_seconds) -> str``: the line to print (default: the running tracker's line, else
        ``"<label>: <step>, <elapsed> elapsed"``).
    clock : callable
        Seconds, monotonic (tests pass a fake one).

    Notes
    -----
    Only the innermost running heartbeat prints; none prints while a rich bar is on screen (a terminal
    shows the bar's own elapsed time). Lines are plain text, one per line, never markup.
    """
    every = LINE_EVERY if every is None else float(every)
    if every <= 0:
        yield
        return
    console = console or Console(stderr=True)
    t0 = clock()
    stop = threading.Event()
    me = object()

    def text(elapsed: float) -> str:
        if line is not None:
            return line(elapsed)
        counted = [t for t in _NOW["trackers"] if t._bar is None]
        if counted:
            return counted[-1].line()
        what = " > ".join(_NOW["steps"]) or "working"
        return f"{label}: {what}, {duration(elapsed)} elapsed"

    def beat() -> None:
        while not stop.wait(min(every / 4, 1.0)):
            with _LOCK:
                top = _NOW["beats"] and _NOW["beats"][-1] is me
                bar = any(t._bar is not None for t in _NOW["trackers"])
                due = time.monotonic() - _NOW["last"] >= every
            if top and not bar and due:
                console.print(text(clock() - t0), markup=False, highlight=False, soft_wrap=True)
                _said()

    with _LOCK:
        _NOW["beats"].append(me)
        _NOW["last"] = time.monotonic()
    thread = threading.Thread(target=beat, name=f"normscope-heartbeat-{label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with _LOCK:
            _NOW["beats"].remove(me)


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
        with _LOCK:
            _NOW["trackers"].append(self)
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
            _said()

    def stop(self) -> None:
        """End the bar, or print the last line (when any work was counted)."""
        with _LOCK:
            if self in _NOW["trackers"]:
                _NOW["trackers"].remove(self)
        if self._bar is not None:
            self._bar.stop()
        elif self.done > self._start_done:
            self.console.print(self.line(), markup=False, highlight=False, soft_wrap=True)
            _said()


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
