"""The report's run log: a line per stage start and end, a heartbeat, and no library noise.

A redirected log (``normscope report ... > log 2>&1``) has no live progress bar, so
:func:`stage_log` prints ``<stage>: started`` and ``<stage>: <status> in <s> s`` lines and, while a
stage runs, a ``<stage>: still running (<elapsed>), <step>`` line whenever nothing else was printed for
``heartbeat`` seconds (default :data:`normscope._progress.LINE_EVERY`, 10 s): the log is never silent
for longer than that. :func:`quiet_libraries` keeps library warnings (numba's type-safety
warnings, transformers' and sentence-transformers' logger messages) out of the
log and hands them to the caller, which records them in the stage record.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

from normscope._format import duration as fmt_duration
from normscope._progress import LINE_EVERY, current_step
from normscope._progress import heartbeat as beat

__all__ = ["stage_log", "quiet_libraries", "LIBRARY_LOGGERS"]

#: Loggers whose records are captured during a stage instead of printed.
LIBRARY_LOGGERS = ("transformers", "sentence_transformers", "numba", "faiss", "matplotlib", "urllib3",
                   "huggingface_hub", "torch")


@contextlib.contextmanager
def stage_log(console, stage: str, *, heartbeat: float | None = LINE_EVERY) -> Iterator[None]:
    """Print ``<stage>: started``; while the block runs, a ``still running`` line whenever nothing was printed for
    ``heartbeat`` seconds (:func:`normscope._progress.heartbeat`: a progress line of the stage's own work resets it).

    Parameters
    ----------
    console : rich.console.Console
    stage : str
    heartbeat : float or None
        Seconds of silence before a ``still running`` line (None or <= 0: none). The end line is printed by
        the caller, who knows the stage's status.
    """
    console.print(f"{stage}: started")

    def line(elapsed: float) -> str:
        where = current_step()
        return f"{stage}: still running ({fmt_duration(elapsed)}){', ' + where if where else ''}"

    if heartbeat is None or heartbeat <= 0:
        yield
        return
    with beat(stage, every=heartbeat, console=console, line=line):
        yield


class _ListHandler(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(level=logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sink.append(f"{record.name}: {record.getMessage()}".splitlines()[0])
        except Exception:  # a record that cannot be formatted is dropped, never raised
            pass


@contextlib.contextmanager
def quiet_libraries() -> Iterator[list[str]]:
    """Capture library warnings and WARNING+ log records during the block; yields their list.

    Python warnings (``warnings.warn``: numba, sklearn...) are recorded, not printed; the
    loggers of :data:`LIBRARY_LOGGERS` get a handler that records instead of their own (restored
    afterwards). The yielded list holds one line per message (``"NumbaTypeSafetyWarning: ..."``,
    ``"transformers...: ..."``), filled when the block ends for warnings and as they come for
    log records.
    """
    sink: list[str] = []
    saved = []
    handler = _ListHandler(sink)
    for name in LIBRARY_LOGGERS:
        lg = logging.getLogger(name)
        saved.append((lg, lg.handlers[:], lg.propagate))
        lg.handlers = [handler]
        lg.propagate = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield sink
            finally:
                for w in caught:
                    sink.append(f"{w.category.__name__}: {str(w.message).splitlines()[0] if str(w.message) else ''}")
    finally:
        for lg, handlers, propagate in saved:
            lg.handlers = handlers
            lg.propagate = propagate


def dedupe(lines: list[str]) -> list[str]:
    """``lines`` without repeats, in first-seen order, with a count suffix (``"... (x3)"``)."""
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    return [f"{k} (x{v})" if v > 1 else k for k, v in counts.items()]
