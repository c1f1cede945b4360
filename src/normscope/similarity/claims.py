"""Scorecard row of the norm-aware similarity claim on human-rated pairs (verdict rules: :mod:`normscope.claims`).

Of the parametric scorers (``inverse_norm``, ``power``) the one with the larger Spearman rho on the
**fit** pairs is tested (chosen without the evaluated pairs). Its direction is read from the
Spearman difference to cosine on the evaluated pairs (paired bootstrap CI). The row is exploratory: the
paper makes no claim on human-rated pairs (its +1.2 to +2.3 % is for retrieval strata), so it is read in
direction only; the relative difference ``rho(scorer) / rho(cosine) - 1`` and its CI are shown beside.
Built from the typed :class:`~normscope.similarity.result.SimilarityResult` (its attributes, not its JSON keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from normscope.claims import CLAIMS, ClaimRow, ceiling_gate, claim_row, judge, not_testable_row
from normscope.similarity.result import SimilarityResult

__all__ = ["similarity_claim"]


def similarity_claim(result: SimilarityResult | Mapping | None, reason: str | None = None) -> ClaimRow:
    """Row ``similarity_pairs`` of a similarity run.

    Parameters
    ----------
    result : SimilarityResult, mapping or None
        The run's result (a mapping: its :meth:`~normscope.results.StageResult.to_dict`, read back with
        :meth:`~normscope.results.StageResult.from_dict`); None: ``reason`` says why it did not run.
    reason : str, optional

    Returns
    -------
    ClaimRow
    """
    if result is None:
        return not_testable_row("similarity_pairs", reason or "the similarity stage did not run")
    res = result if isinstance(result, SimilarityResult) else SimilarityResult.from_dict(dict(result))
    sc = res.scorers
    cands = [k for k in ("inverse_norm", "power") if k in sc]
    if not cands:
        return not_testable_row("similarity_pairs", "no norm-aware scorer was evaluated")
    best = max(cands, key=lambda k: sc[k].fit_spearman)
    s, cos = sc[best], sc["cosine"]
    size = CLAIMS["similarity_pairs"].size
    rho = cos.spearman  # Spearman rho is at most 1: no room for the claimed relative gain near it
    gate = ceiling_gate(rho, int(rho is not None and rho >= 1 - 1e-9), int(rho is not None and rho <= 0), 1,
                        metric="Spearman \u03c1 with human scores", unit="pair sets",
                        claimed_gain=size.low if size.kind == "range" else None)
    j = judge("similarity_pairs", s.delta_spearman, s.delta_ci, size_ci=s.relative_ci, gate=gate)
    name = Path(str(res.dataset or "")).name or "the evaluated pairs"
    rel, rel_ci = s.relative, s.relative_ci
    fit_pairs = res.fit.n_pairs if res.fit is not None else None
    return claim_row(
        "similarity_pairs", measured=s.delta_spearman, ci=s.delta_ci, judged=j, n=res.n_pairs, percent=False,
        label=f"\u0394 Spearman \u03c1, {best} \u2212 cosine",
        tested_on=f"{res.model}, {name}",
        statistic=f"similarity: delta Spearman {best} - cosine ({name})",
        beside="" if rel is None else (f"relative {100 * rel:+.2f} %" + (
            f" [{100 * rel_ci.lo:+.2f}, {100 * rel_ci.hi:+.2f}] %" if rel_ci is not None and rel_ci.known else "")),
        what=(f"direction: \u0394 Spearman \u03c1 with human scores, {best} minus cosine, on pairs not used for fitting; "
              "beside: the relative change \u03c1(scorer)/\u03c1(cosine) - 1; paired bootstrap CIs: "
              + (s.ci_resamples or "the evaluated pairs (parameter held fixed)")),
        details={"scorer": best, "parameter": f"{s.param_name} = {s.param:.3g}",
                 "Spearman (scorer)": s.spearman, "Spearman (cosine)": cos.spearman, "fit pairs": fit_pairs},
        note=f"{best} chosen by its Spearman on the {fit_pairs} fit pairs")
