"""``normscope report``: the whole analysis for one model in one command.

Runs the stages (:data:`~normscope.report.stages.STAGES`: set-up, norm distribution, equilibrium theory
from probes, training lab, transformer lab, semantic signals, similarity, retrieval and calibration)
with a resumable cache and writes ``OUT/index.html`` (one self-contained page), ``OUT/summary.json``
(every number on the page) and ``OUT/*.png``. See ``docs/report.md``.
"""

from normscope.report.config import ReportConfig
from normscope.report.runner import ReportResult, run_report
from normscope.report.sizes import FULL, QUICK, Sizes
from normscope.report.stage import Stage, StageUnavailable
from normscope.report.stages import SECTIONS, STAGE_NAMES, STAGES, parse_stages

__all__ = [
    "FULL",
    "QUICK",
    "SECTIONS",
    "STAGES",
    "STAGE_NAMES",
    "ReportConfig",
    "ReportResult",
    "Sizes",
    "Stage",
    "StageUnavailable",
    "parse_stages",
    "run_report",
]
