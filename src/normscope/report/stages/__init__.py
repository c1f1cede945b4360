"""The report's stages: one :class:`~normscope.report.stage.Stage` object per stage, in run (and page) order.

:data:`STAGES` is the one list the runner, the side-by-side page and the CLI iterate over; each stage
module calls one normscope entry point (the same function its command wraps).
"""

from __future__ import annotations

from collections.abc import Sequence

from normscope.errors import InputError
from normscope.report.stage import Stage
from normscope.report.stages.lab import LabStage
from normscope.report.stages.norms import NormsStage
from normscope.report.stages.probes import ProbesStage
from normscope.report.stages.retrieval import RetrievalStage
from normscope.report.stages.setup import SetupStage
from normscope.report.stages.signals import SignalsStage
from normscope.report.stages.similarity import SimilarityStage
from normscope.report.stages.tokens import TokensStage
from normscope.report.stages.transformer import TransformerStage

__all__ = ["STAGES", "STAGE_NAMES", "SECTIONS", "get_stage", "parse_stages", "stage_of_section"]

#: Every stage, in run order (the page shows their sections in this order).
STAGES: tuple[Stage, ...] = (SetupStage(), NormsStage(), TokensStage(), ProbesStage(), LabStage(),
                             TransformerStage(), SignalsStage(), SimilarityStage(), RetrievalStage())
#: Stage names, in run order.
STAGE_NAMES: tuple[str, ...] = tuple(st.name for st in STAGES)
#: Page sections (= top-level keys of summary.json), in page order, with their headings.
SECTIONS: dict[str, str] = {key: title for st in STAGES for key, title in st.sections.items()}


def get_stage(name: str) -> Stage:
    """The stage called ``name``.

    Raises
    ------
    InputError
        No stage has that name.
    """
    for st in STAGES:
        if st.name == name:
            return st
    raise InputError(f"unknown stage {name!r} (choose from {', '.join(STAGE_NAMES)})")


def stage_of_section(key: str) -> Stage:
    """The stage that fills page section ``key``."""
    return next(st for st in STAGES if key in st.sections)


def parse_stages(spec: str | Sequence[str]) -> list[str]:
    """Stage names in run order from ``--only`` values (each a name, a section key or an alias; a value may
    hold several, comma-separated).

    Raises
    ------
    InputError
        On an unknown stage name (the valid names are listed), or when no stage is named.
    """
    values = [spec] if isinstance(spec, str) else list(spec)
    names = [s.strip() for v in values for s in str(v).split(",") if s.strip()]
    aliases = {}
    for st in STAGES:
        for alias in (st.name, *st.sections, *st.aliases):
            aliases.setdefault(alias, st.name)
    bad = [n for n in names if n not in aliases]
    if bad:
        raise InputError(f"unknown stage {bad[0]!r} (choose from {', '.join(STAGE_NAMES)})")
    if not names:
        raise InputError("--only names no stage")
    chosen = {aliases[n] for n in names}
    return [s for s in STAGE_NAMES if s in chosen]
