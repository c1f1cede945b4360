"""The claims scorecard: one row per claim of the paper, with a verdict chosen from the numbers.

Each report stage that tests a claim puts its rows under the key ``"claims"`` of its section dict
(built with :func:`claim_row` and a verdict function below); the runner gathers them, in the order
of :data:`CLAIMS`, into ``summary.json["claims"]`` and the first section of the page. A row whose
stage did not run, or could not test the claim, says so (``not testable here``) with the reason.
No verdict is written in advance: every verdict is computed from the row's estimate and CI.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "CLAIMS",
    "VERDICTS",
    "claim_row",
    "verdict_sign",
    "verdict_not_testable",
]

#: The paper's claims, in scorecard order: key -> (claim as the paper states it, the paper's figure).
CLAIMS: dict[str, tuple[str, str]] = {
    "theorem1_lab": ("Theorem 1 holds in training (free table / MLP lab)", "R_eq = observed stationary norm"),
    "theorem1_transformer": ("Theorem 1 on a real transformer (trained to stationarity)", "stationary norm = R_eq"),
    "corr_norm_heat": ("corr(R, heat)", "Pearson +0.38 (CLIP ViT-B/32)"),
    "corr_norm_drift": ("corr(R, drift)", "Pearson -0.58 (MiniLM-L12)"),
    "req_predicts_norm": ("R_eq predicts R", "predicted vs observed norms agree"),
    "specificity": ("the norm tracks concept specificity", "more specific -> larger norm"),
    "uncertainty": ("the norm tracks human uncertainty", "more uncertain -> different norm"),
    "similarity_gain": ("norm-aware similarity gains 1.2-2.3 % (retrieval)", "+1.2 to +2.3 %"),
    "similarity_pairs": ("norm-aware similarity gains on human-rated pairs (SimLex-999)", "+1.2 to +2.3 %"),
    "calibration": ("the norm is a free calibration signal", "the norm predicts when a result is wrong"),
}

VERDICTS = ("reproduced", "refuted", "inconclusive", "not decided at this size", "not testable here")


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(float(x))


def claim_row(key: str, *, measured, ci: Sequence[float] | None, verdict: str, why: str, section: str,
              n: int | None = None, what: str = "") -> dict:
    """One scorecard row (a JSON object of ``summary.json["claims"]``).

    Parameters
    ----------
    key : str
        A key of :data:`CLAIMS`.
    measured : float or None
        normscope's figure on this model and data (the statistic named by ``what``).
    ci : (float, float) or None
        Its 95 % interval (say in ``what`` which sources of sampling it resamples).
    verdict : str
        One of :data:`VERDICTS`, from one of the verdict functions.
    why : str
        The reason for the verdict, in words computed from the same numbers.
    section : str
        The page section (anchor) holding the evidence.
    n : int, optional
        Items (or queries, pairs) behind the figure.
    what : str
        What ``measured`` is (e.g. ``"Spearman rho(R, heat), CI over batches and items"``).

    Returns
    -------
    dict
        Keys ``key, claim, paper, measured, ci, verdict, why, section, n, what``.

    Raises
    ------
    KeyError
        Unknown claim key. ``ValueError``: unknown verdict.
    """
    claim, paper = CLAIMS[key]
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}")
    return {"key": key, "claim": claim, "paper": paper,
            "measured": float(measured) if _finite(measured) else None,
            "ci": [float(ci[0]), float(ci[1])] if ci is not None and all(_finite(c) for c in ci) else None,
            "verdict": verdict, "why": why, "section": section, "n": n, "what": what}


def verdict_sign(estimate, ci: Sequence[float] | None, expected_sign: int, p: float | None = None) -> tuple[str, str]:
    """Verdict on a claimed direction from an estimate and its CI.

    ``reproduced`` when the CI excludes 0 on the claimed side, ``refuted`` when it excludes 0 on the
    other side, ``inconclusive`` when it includes 0 or when a paired test's ``p`` given beside the
    CI does not reach 0.05 (the two disagree); ``not testable here`` without a finite estimate and CI.

    Parameters
    ----------
    estimate : float or None
    ci : (low, high) or None
    expected_sign : {+1, -1}
        The direction the paper claims.
    p : float, optional
        p-value of a test of the same difference (e.g. the paired t-test of a scorer against cosine).

    Returns
    -------
    (verdict, why) : tuple of str
    """
    if not _finite(estimate) or ci is None or not all(_finite(c) for c in ci):
        return "not testable here", "no estimate with a confidence interval"
    lo, hi = float(ci[0]), float(ci[1])
    side = "positive" if expected_sign > 0 else "negative"
    excluded = lo > 0 or hi < 0
    if excluded and isinstance(p, (int, float)) and p >= 0.05:
        return "inconclusive", (f"the 95% CI [{lo:.3g}, {hi:.3g}] excludes 0, but the paired test does not reject "
                                f"equality (p = {p:.3g} >= 0.05)")
    if (expected_sign > 0 and lo > 0) or (expected_sign < 0 and hi < 0):
        return "reproduced", f"the 95% CI [{lo:.3g}, {hi:.3g}] excludes 0 on the claimed ({side}) side"
    if (expected_sign > 0 and hi < 0) or (expected_sign < 0 and lo > 0):
        return "refuted", f"the 95% CI [{lo:.3g}, {hi:.3g}] excludes 0 on the opposite side of the claimed {side} sign"
    return "inconclusive", f"the 95% CI [{lo:.3g}, {hi:.3g}] includes 0"


def verdict_not_testable(reason: str) -> tuple[str, str]:
    """``("not testable here", reason)``: the claim needs what this run lacks (a model, data, an optimizer...)."""
    return "not testable here", reason
