"""Report stage ``lab``: the training-lab check of Theorem 1 (``normscope lab``)."""

from __future__ import annotations

from pathlib import Path

from normscope.report.context import StageContext
from normscope.report.stages._common import jsonable, sig3

__all__ = ["stage_lab"]


def stage_lab(ctx: StageContext) -> dict:
    from normscope import lab

    s = ctx.sizes
    seed = ctx.config.seed
    kw = {"encoder": "table", "optimizer": "sgd", "data": "synthetic", "seed": seed}
    cmd = ["normscope lab --encoder table --optimizer sgd --data synthetic", f"--seed {seed}"]
    for name, value, flag in (("steps", s.lab_steps, "--steps"), ("snapshots", s.lab_snapshots, "--snapshots"),
                              ("probe_batches", s.lab_probe_batches, "--probe-batches")):
        if value is not None:
            kw[name] = value
            cmd.append(f"{flag} {value}")
    res = lab.run_lab(**kw, progress=True)
    summary = jsonable(res.summary)
    figs = []
    p1 = lab.plot_predicted_vs_observed(res, ctx.figure_path("training_lab_predicted_vs_observed.png"))
    figs.append({"file": Path(p1).name, "caption": "Training lab: predicted stationary norm R_eq (E7, from measured "
                 "heat and drift) against the observed time-RMS norm, one point per item, coloured by ambiguity; "
                 "dashed: R_eq = R_obs."})
    p2 = lab.plot_trajectories(res, ctx.figure_path("training_lab_trajectories.png"))
    figs.append({"file": Path(p2).name, "caption": "Training lab: mean norm per ambiguity group over training steps; "
                 "the measurement window starts at the dashed line."})
    gate = summary.get("gate") or {}
    qc = summary.get("q_over_c") or {}
    key_numbers = [
        ["mean |relative error| of R_eq (gate \u2264 %s)" % gate.get("mean_abs_rel_error", 0.05),
         summary.get("mean_abs_rel_error"), ""],
        ["median signed relative error (gate |.| \u2264 %s)" % gate.get("abs_median_rel_error", 0.02),
         summary.get("median_rel_error"), ""],
        ["Pearson r, R_eq vs observed R (gate \u2265 %s)" % gate.get("pearson", 0.95), summary.get("pearson"), ""],
        ["Spearman \u03c1, R_eq vs observed R", summary.get("spearman"), ""],
        ["gate passed", "yes" if gate.get("passed") else "no", ""],
        ["mean q/c (E9; 1 = balance)", qc.get("mean"), ""],
        ["items / dimension / batch", f"{summary.get('n_items')} / {summary.get('dim')} / {summary.get('batch_size')}", ""],
        ["learning rate \u03b7 / weight decay \u03bb", f"{summary.get('lr')} / {summary.get('weight_decay')}", ""],
        ["steps (burn-in)", f"{summary.get('steps')} ({summary.get('burn_in')})", "steps"],
        ["estimator", f"{summary.get('estimator')} ({summary.get('snapshots')} states \u00d7 {summary.get('probe_batches')} batches)", ""],
    ]
    # heat and drift: 3 significant digits (groups differ in the 2nd-3rd significant digit, which 3 decimals hide)
    rows = [[g.get("ambiguity"), g.get("n"), g.get("r_obs"), g.get("r_eq"), sig3(g.get("heat")), sig3(g.get("drift")),
             g.get("mean_abs_rel_error")] for g in summary.get("groups") or []]
    notes = list(summary.get("caveats") or [])
    if summary.get("sgd_formula_expected") is False:
        notes.append("The SGD formula (E7) is not expected to hold for this optimizer.")
    sizes = (f"free embedding table, {summary.get('n_items')} items in d = {summary.get('dim')}, "
             f"{summary.get('steps')} SGD steps, synthetic pairs with ambiguity 1..4")
    return {
        "training_lab": {
            "status": "ok",
            "reason": None,
            "command": " ".join(cmd) + " --json lab.json",
            "sizes": sizes,
            "result": summary,
            "derived": {},
            "key_numbers": key_numbers,
            "tables": [{"title": "Per ambiguity group (means)",
                        "columns": ["ambiguity (concepts)", "items", "observed R", "predicted R_eq", "heat \u03a3\u00b2",
                                    "drift D~", "mean |rel. error|"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
        }
    }
