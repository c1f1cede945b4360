"""Report stage ``similarity``: norm-aware similarity on SimLex-999 (``normscope similarity``)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.claims import claim_row, verdict_not_testable, verdict_sign
from normscope.report.context import StageContext
from normscope.report.stages._common import ci_text

__all__ = ["stage_similarity", "similarity_claim"]


def similarity_claim(result: dict | None, reason: str | None = None) -> dict:
    """Scorecard row ``similarity_pairs``: the gain over cosine of the norm-aware scorer chosen on the fit pairs.

    Of the parametric scorers (``inverse_norm``, ``power``) the one with the larger Spearman rho on
    the **fit** pairs is the tested scorer (chosen without the evaluated pairs); its Spearman
    difference to cosine on the evaluated pairs, with the paired bootstrap CI, gives the verdict
    (claimed sign: positive).
    """
    if result is None:
        verdict, why = verdict_not_testable(reason or "the similarity stage did not run")
        return claim_row("similarity_pairs", measured=None, ci=None, verdict=verdict, why=why,
                         section="similarity")
    sc = result["scorers"]
    cands = [k for k in ("inverse_norm", "power") if k in sc]
    if not cands:
        verdict, why = verdict_not_testable("no norm-aware scorer was evaluated")
        return claim_row("similarity_pairs", measured=None, ci=None, verdict=verdict, why=why,
                         section="similarity")
    best = max(cands, key=lambda k: sc[k]["fit_spearman"])
    s, cos = sc[best], sc["cosine"]
    verdict, why = verdict_sign(s["delta_spearman"], s["delta_ci"], +1)
    rel = 100.0 * s["delta_spearman"] / cos["spearman"] if cos["spearman"] else float("nan")
    why += (f"; {best} ({s['param_name']} = {s['param']:.3g}, chosen by its Spearman on the {result['fit']['n_pairs']} "
            f"fit pairs): Spearman {s['spearman']:.3f} vs cosine {cos['spearman']:.3f}, a relative change of "
            f"{rel:+.2f} %")
    return claim_row("similarity_pairs", measured=s["delta_spearman"], ci=s["delta_ci"], verdict=verdict, why=why,
                     section="similarity", n=result["n_pairs"],
                     what=(f"\u0394 Spearman \u03c1 with human scores, {best} minus cosine, on SimLex-999 pairs not used "
                           "for fitting; paired bootstrap CI over the evaluated pairs (parameter held fixed)"))


def stage_similarity(ctx: StageContext) -> dict:
    from normscope.similarity import plot_similarity, run_similarity

    from normscope.data import data_path
    from normscope.errors import DataError

    try:
        path = data_path("simlex-999")  # --data / shared copy, else fetched; offline: names the fetch command
    except DataError as exc:
        from normscope.report.missing import data_unavailable

        raise data_unavailable([exc]) from None
    s, seed = ctx.sizes, ctx.config.seed
    res = run_similarity(path, encoder=ctx.encoder(), seed=seed, n_boot=s.n_boot, progress=True)
    r = res.to_dict()
    fig = plot_similarity(res, ctx.figure_path("norm_aware_similarity.png"))
    rows = []
    for name, sc in r["scorers"].items():
        rows.append([name, "\u2014" if sc["param"] is None else f"{sc['param_name']} = {sc['param']:.4g}",
                     sc["fit_spearman"], sc["spearman"], ci_text(sc["spearman_ci"]), sc["pearson"],
                     None if name == "cosine" else sc["delta_spearman"], ci_text(sc["delta_ci"])])
    fit = r["fit"]
    key_numbers = [[f"Spearman \u03c1, cosine vs human scores (n = {r['n_pairs']} pairs)",
                    r["scorers"]["cosine"]["spearman"], ""]]
    for name in ("inverse_norm", "power"):
        if name in r["scorers"]:
            key_numbers.append([f"\u0394 Spearman \u03c1, {name} minus cosine", r["scorers"][name]["delta_spearman"], ""])
    return {
        "similarity": {
            "status": "ok",
            "reason": None,
            "command": f"normscope similarity --n-boot {s.n_boot} --seed {seed} --json similarity.json  (--dataset: SimLex-999, {path})",
            "sizes": (f"SimLex-999: {fit['n_pairs']} fit pairs, {r['n_pairs']} evaluated pairs ({fit['source']}, seed "
                      f"{seed}); {r['n_texts']} distinct words; {s.n_boot} bootstrap resamples"),
            "result": r,
            "derived": {},
            "key_numbers": key_numbers,
            "tables": [{"title": "One row per scorer: parameter fitted on the fit pairs, statistics on the evaluated "
                                 "pairs (95% bootstrap CIs; \u0394: paired bootstrap)",
                        "columns": ["scorer", "parameter", "Spearman \u03c1 (fit pairs)", "Spearman \u03c1", "95% CI",
                                    "Pearson r", "\u0394 Spearman vs cosine", "95% CI"],
                        "rows": rows}],
            "figures": [{"file": Path(fig).name,
                         "caption": "Left: Spearman \u03c1 on the fit pairs against each scorer's parameter (dashed: "
                                    "fitted value; grey: cosine). Right: Spearman difference to cosine on the evaluated "
                                    "pairs with paired bootstrap 95% CIs."}],
            "notes": list(r["notes"]),
            "claims": [similarity_claim(r)],
        }
    }
