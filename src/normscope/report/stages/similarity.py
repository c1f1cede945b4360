"""Report stage ``similarity``: norm-aware similarity on SimLex-999 (``normscope similarity``)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.context import StageContext
from normscope.report.stages._common import ci_text

__all__ = ["stage_similarity"]


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
            "claims": list(r["claims"]),  # the rows normscope similarity --json carries
        }
    }
