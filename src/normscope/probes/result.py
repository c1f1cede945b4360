"""The probe's result type."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from normscope.probes.moments import ProbeMoments

__all__ = ["ProbeResult"]


@dataclass
class ProbeResult:
    """Output of :func:`run_probe`.

    Attributes
    ----------
    summary : dict
        JSON-serialisable summary (the CLI's ``--json``); keys documented in :func:`run_probe`.
    items : pandas.DataFrame
        One row per probe item (columns documented in :func:`run_probe`).
    moments : ProbeMoments or None
        The raw per-batch quantities.
    """

    summary: dict
    items: pd.DataFrame
    moments: ProbeMoments | None = None
