"""Scorecard row of the norm-aware similarity claim on human-rated pairs (verdict rules: :mod:`normscope.claims`).

Of the parametric scorers (``inverse_norm``, ``power``) the one with the larger Spearman rho on the
**fit** pairs is tested (chosen without the evaluated pairs). Its direction is read from the
Spearman difference to cosine on the evaluated pairs (paired bootstrap CI). The row is exploratory: the
paper makes no claim on human-rated pairs (its +1.2 to +2.3 % is for retrieval strata), so it is read in
direction only; the relative difference ``rho(scorer) / rho(cosine) - 1`` and its CI are shown beside.
"""

from __future__ import annotations

from pathlib import Path

from normscope.claims import CLAIMS, ceiling_gate, claim_row, judge, not_testable_row

__all__ = ["similarity_claim"]


def similarity_claim(result: dict | None, reason: str | None = None) -> dict:
    """Row ``similarity_pairs`` from a :meth:`SimilarityResult.to_dict` (None: ``reason`` says why it did not run)."""
    if result is None:
        return not_testable_row("similarity_pairs", reason or "the similarity stage did not run")
    sc = result["scorers"]
    cands = [k for k in ("inverse_norm", "power") if k in sc]
    if not cands:
        return not_testable_row("similarity_pairs", "no norm-aware scorer was evaluated")
    best = max(cands, key=lambda k: sc[k]["fit_spearman"])
    s, cos = sc[best], sc["cosine"]
    size = CLAIMS["similarity_pairs"].size
    rho = cos.get("spearman")  # Spearman rho is at most 1: no room for the claimed relative gain near it
    gate = ceiling_gate(rho, int(rho is not None and rho >= 1 - 1e-9), int(rho is not None and rho <= 0), 1,
                        metric="Spearman \u03c1 with human scores", unit="pair sets",
                        claimed_gain=size.low if size.kind == "range" else None)
    j = judge("similarity_pairs", s["delta_spearman"], s["delta_ci"], size_ci=s.get("relative_ci"), gate=gate)
    name = Path(str(result.get("dataset") or "")).name or "the evaluated pairs"
    rel = s.get("relative")
    return claim_row(
        "similarity_pairs", measured=s["delta_spearman"], ci=s["delta_ci"], judged=j, n=result["n_pairs"], percent=False,
        label=f"\u0394 Spearman \u03c1, {best} \u2212 cosine",
        tested_on=f"{result.get('model')}, {name}",
        statistic=f"similarity: delta Spearman {best} - cosine ({name})",
        beside="" if rel is None else (f"relative {100 * rel:+.2f} %" + (
            f" [{100 * s['relative_ci'][0]:+.2f}, {100 * s['relative_ci'][1]:+.2f}] %"
            if s.get("relative_ci") and None not in s["relative_ci"] else "")),
        what=(f"direction: \u0394 Spearman \u03c1 with human scores, {best} minus cosine, on pairs not used for fitting; "
              "beside: the relative change \u03c1(scorer)/\u03c1(cosine) - 1; paired bootstrap CIs: "
              + (s.get("ci_resamples") or "the evaluated pairs (parameter held fixed)")),
        details={"scorer": best, "parameter": f"{s['param_name']} = {s['param']:.3g}",
                 "Spearman (scorer)": s["spearman"], "Spearman (cosine)": cos["spearman"],
                 "fit pairs": (result.get("fit") or {}).get("n_pairs")},
        note=f"{best} chosen by its Spearman on the {(result.get('fit') or {}).get('n_pairs')} fit pairs")
