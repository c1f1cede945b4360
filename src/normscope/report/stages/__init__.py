"""The report's stages: each calls one normscope entry point and returns its page sections.

A stage function takes a :class:`~normscope.report.context.StageContext` and returns
``{section_key: section}`` where a section is::

    {"status": "ok" | "unavailable", "reason": str | None,
     "command": "normscope embed --wordfreq-top 5000 ...",   # the equivalent individual command
     "sizes": "5,000 words",                                 # stated on the page
     "result": {...},        # verbatim the dict the command writes with --json
     "derived": {...},       # extra numbers computed here (quantiles, examples)
     "key_numbers": [[label, value, unit], ...],
     "tables": [{"title", "columns", "rows"}],
     "figures": [{"file", "caption"}],
     "notes": [str]}         # caveats copied from the stage's output

It raises :class:`~normscope.report.context.StageUnavailable` when the stage cannot run here.

One module per stage; :data:`STAGE_FUNCS` maps stage names to their functions (only the runner
imports this package).
"""

from __future__ import annotations

from collections.abc import Callable

from normscope.report.context import StageContext
from normscope.report.stages.lab import stage_lab
from normscope.report.stages.norms import stage_norms
from normscope.report.stages.probes import stage_probes
from normscope.report.stages.retrieval import stage_retrieval
from normscope.report.stages.setup import stage_setup
from normscope.report.stages.signals import stage_signals
from normscope.report.stages.similarity import stage_similarity
from normscope.report.stages.tokens import stage_tokens
from normscope.report.stages.transformer import stage_transformer

__all__ = ["STAGE_FUNCS"]

STAGE_FUNCS: dict[str, Callable[[StageContext], dict]] = {
    "setup": stage_setup,
    "norms": stage_norms,
    "tokens": stage_tokens,
    "probes": stage_probes,
    "lab": stage_lab,
    "transformer": stage_transformer,
    "signals": stage_signals,
    "similarity": stage_similarity,
    "retrieval": stage_retrieval,
}
