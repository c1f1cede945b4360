"""``normscope report``: the whole analysis for one model in one command.

Runs the stages (set-up, norm distribution, equilibrium theory from probes, training lab, semantic
signals, retrieval and calibration) with a resumable cache and writes ``OUT/index.html`` (one
self-contained page), ``OUT/summary.json`` (every number on the page) and ``OUT/*.png``.
See ``docs/report.md``.
"""

from normscope.report.config import FULL, QUICK, SECTIONS, STAGES, ReportConfig, Sizes, parse_stages
from normscope.report.context import StageUnavailable
from normscope.report.runner import ReportResult, run_report

__all__ = [
    "FULL",
    "QUICK",
    "SECTIONS",
    "STAGES",
    "ReportConfig",
    "ReportResult",
    "Sizes",
    "StageUnavailable",
    "parse_stages",
    "run_report",
]
