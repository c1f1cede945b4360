"""Report stage ``probes``: heat, drift and the predicted norm (``normscope probe``)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.context import StageContext, StageUnavailable
from normscope.report.stages._common import jsonable, ci_text

__all__ = ["stage_probes"]


_PROBE_CORRS = (
    ("corr_req_norm", "R_eq (E7, c_fit) vs observed R"),
    ("corr_norm_heat", "R vs heat \u03a3\u00b2"),
    ("corr_norm_drift", "R vs drift D~"),
    ("corr_norm_displacement", "R vs R-free displacement E||a||\u00b2 (guard)"),
    ("corr_norm_heat_rate", "R vs heat rate S/R\u2074 (guard)"),
    ("corr_norm_d2", "R vs second-order drift D2 (guard)"),
)


def _pair_source(ctx: StageContext):
    """WordNet (term, gloss) pairs, else SciFact train pairs; StageUnavailable when neither exists."""
    from normscope.errors import NormscopeError
    from normscope.pairs import load_pairs

    reasons = []
    for spec in ("wordnet", "scifact"):
        try:
            return spec, load_pairs(spec)
        except (NormscopeError, OSError, LookupError) as exc:
            reasons.append(f"{spec}: {exc}".splitlines()[0])
    raise StageUnavailable("no training-like pairs: " + "; ".join(reasons))


def stage_probes(ctx: StageContext) -> dict:
    from normscope import probes
    from normscope.datasets import wordfreq_words

    s = ctx.sizes
    seed = ctx.config.seed
    spec, pairs = _pair_source(ctx)
    P = s.probe_items or 1000
    K = s.probe_batches or 16
    texts = wordfreq_words(P)
    ids = [str(i) for i in range(len(texts))]
    res = probes.run_probe(ctx.encoder(), texts, pairs, batch_size=s.probe_batch_size, batches=K, seed=seed,
                           progress=True, ids=ids)
    summary = jsonable(res.summary)
    cmd = f"normscope probe wordfreq:{P} --pairs {spec} --batches {K}"
    if s.probe_batch_size is not None:
        cmd += f" --batch-size {s.probe_batch_size}"
    cmd += f" --seed {seed} --json probe.json"
    figs = []
    p1 = probes.plot_predicted_vs_observed(res, ctx.figure_path("equilibrium_predicted_vs_observed.png"))
    figs.append({"file": Path(p1).name, "caption": "Predicted norm R_eq(x; c_fit) from the probed heat and drift "
                 "(E7) against the observed raw norm R = ||z||, one point per word; dashed: y = x."})
    p2 = probes.plot_heat_drift(res, ctx.figure_path("equilibrium_heat_drift.png"))
    figs.append({"file": Path(p2).name, "caption": "Heat \u03a3\u00b2, radial drift D~ and the R-free displacement "
                 "E||a||\u00b2 against the observed norm R (the last panel guards against the circularity of heat, "
                 "which contains R\u00b2)."})
    rows = []
    for key, label in _PROBE_CORRS:
        c = summary.get(key) or {}
        ci = c.get("ci") or {}
        rows.append([label, c.get("pearson"), ci_text(ci.get("pearson")), c.get("spearman"), ci_text(ci.get("spearman")),
                     c.get("n"), c.get("p_value")])
    req = summary.get("corr_req_norm") or {}
    key_numbers = [
        ["Spearman \u03c1, predicted R_eq vs observed R", req.get("spearman"), ""],
        ["95% CI", ci_text((req.get("ci") or {}).get("spearman")), ""],
        ["Pearson r, predicted R_eq vs observed R", req.get("pearson"), ""],
        ["median share of heat cancelled by D2 (\u22122 D2 R\u00b2 / S)", summary.get("heat_cancelled_by_d2"), ""],
        ["items with q < 0 (no stationary prediction)", summary.get("n_negative_q"), "items"],
        ["items with \u03bb_rad < 0", summary.get("n_negative_lambda_rad"), "items"],
        ["fitted c (c_fit)", summary.get("c_fit"), "per step"],
        ["mean q/c", summary.get("q_over_c_mean"), ""],
        ["probe batch size B / batches K / \u03c4", f"{summary.get('batch_size')} / {summary.get('batches')} / {summary.get('tau')}", ""],
        ["\u03b7 / \u03bb", f"{summary.get('lr')} / {summary.get('weight_decay')}", ""],
    ]
    notes = list(summary.get("caveats") or [])
    for k, label in (("batch_size_source", "probe batch size B"), ("tau_source", "temperature \u03c4"),
                     ("lr_given_source", "learning rate \u03b7"), ("weight_decay_source", "weight decay \u03bb")):
        if summary.get(k):
            notes.append(f"{label}: {summary[k]}")
    sizes = (f"P = {summary.get('n_items')} probe words (top of wordfreq), K = {summary.get('batches')} virtual SGD "
             f"batches of B = {summary.get('batch_size')} {spec} pairs ({summary.get('pairs', '')})")
    return {
        "equilibrium_theory": {
            "status": "ok",
            "reason": None,
            "command": cmd,
            "sizes": sizes,
            "result": summary,
            "derived": {"pairs_spec": spec},
            "key_numbers": key_numbers,
            "tables": [{"title": "Correlations with the observed norm (95% bootstrap CIs) and circularity guards",
                        "columns": ["comparison", "Pearson r", "95% CI", "Spearman \u03c1", "95% CI", "n", "p"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
        }
    }
