"""Report stage ``lab``: the training-lab check of Theorem 1 (``normscope lab``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope.report.claims import claim_row
from normscope.report.context import StageContext
from normscope.report.stages._common import sig3

__all__ = ["stage_lab", "lab_claim"]


def lab_claim(res, *, n_boot: int, seed: int) -> dict:
    """The scorecard row ``theorem1_lab`` from a table/MLP lab result.

    Rule (stated in the row): ``reproduced`` when the docs/theory.md 7A gate passes and the upper end of
    the 95 % CI of the mean |relative error| is within the gate's 0.05; ``refuted`` when the CI's
    lower end exceeds 0.05; ``inconclusive`` otherwise. The CI resamples items (bootstrap).
    """
    rel = res.items["rel_error"].to_numpy(dtype=float) if not res.items.empty else np.array([])
    rel = np.abs(rel[np.isfinite(rel)])
    if rel.size < 3 or res.mean_abs_rel_error is None:
        return claim_row("theorem1_lab", measured=None, ci=None, verdict="not testable here",
                         why="fewer than 3 items with a predicted R_eq", section="training_lab")
    rng = np.random.default_rng(seed)
    boot = np.array([rel[rng.integers(0, rel.size, rel.size)].mean() for _ in range(n_boot)])
    lo, hi = (float(x) for x in np.percentile(boot, [2.5, 97.5]))
    gate = res.gate or {}
    limit = gate.get("mean_abs_rel_error", 0.05)
    if gate.get("passed") and hi <= limit:
        verdict = "reproduced"
        why = f"7A gate passed and the mean |rel. error| CI [{lo:.3g}, {hi:.3g}] lies within {limit}"
    elif lo > limit:
        verdict = "refuted"
        why = f"the mean |rel. error| CI [{lo:.3g}, {hi:.3g}] lies above the gate's {limit}"
    else:
        verdict = "inconclusive"
        why = (f"7A gate {'passed' if gate.get('passed') else 'not passed'}; mean |rel. error| CI [{lo:.3g}, {hi:.3g}] "
               f"straddles or the other gate figures fail ({limit})")
    return claim_row("theorem1_lab", measured=res.mean_abs_rel_error, ci=[lo, hi], verdict=verdict, why=why,
                     section="training_lab", n=int(rel.size),
                     what=(f"mean |R_eq - R_obs| / R_obs over items ({res.encoder}, {res.optimizer}); CI: bootstrap over "
                           f"items ({n_boot} resamples)"))


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
    summary = res.to_dict()
    figs = []
    p1 = lab.plot_predicted_vs_observed(res, ctx.figure_path("training_lab_predicted_vs_observed.png"))
    figs.append({"file": Path(p1).name, "caption": "Training lab: predicted stationary norm R_eq (E7, from measured "
                 "heat and drift) against the observed time-RMS norm, one point per item, coloured by ambiguity; "
                 "dashed: R_eq = R_obs."})
    p2 = lab.plot_trajectories(res, ctx.figure_path("training_lab_trajectories.png"))
    figs.append({"file": Path(p2).name, "caption": "Training lab: mean norm per ambiguity group over training steps; "
                 "the measurement window starts at the dashed line."})
    gate = res.gate or {}
    qc = res.q_over_c or {}
    key_numbers = [
        ["%s (gate \u2264 %s)" % (res.label("mean_abs_rel_error"), gate.get("mean_abs_rel_error", 0.05)),
         res.mean_abs_rel_error, ""],
        ["%s (gate |.| \u2264 %s)" % (res.label("median_rel_error"), gate.get("abs_median_rel_error", 0.02)),
         res.median_rel_error, ""],
        ["%s (gate \u2265 %s)" % (res.label("pearson"), gate.get("pearson", 0.95)), res.pearson, ""],
        [res.label("spearman"), res.spearman, ""],
        ["gate passed", "yes" if gate.get("passed") else "no", ""],
        ["mean " + res.label("q_over_c"), qc.get("mean"), ""],
        ["items / dimension / batch", f"{res.n_items} / {res.dim} / {res.batch_size}", ""],
        ["learning rate \u03b7 / weight decay \u03bb", f"{res.lr} / {res.weight_decay}", ""],
        ["steps (burn-in)", f"{res.steps} ({res.burn_in})", "steps"],
        ["estimator", f"{res.estimator} ({res.snapshots} states \u00d7 {res.probe_batches} batches)", ""],
    ]
    # heat and drift: 3 significant digits (groups differ in the 2nd-3rd significant digit, which 3 decimals hide)
    rows = [[g.get("ambiguity"), g.get("n"), g.get("r_obs"), g.get("r_eq"), sig3(g.get("heat")), sig3(g.get("drift")),
             g.get("mean_abs_rel_error")] for g in res.groups or []]
    notes = list(res.caveats or [])
    if res.sgd_formula_expected is False:
        notes.append("The SGD formula (E7) is not expected to hold for this optimizer.")
    sizes = (f"free embedding table, {res.n_items} items in d = {res.dim}, "
             f"{res.steps} SGD steps, synthetic pairs with ambiguity 1..4")
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
            "claims": [lab_claim(res, n_boot=ctx.sizes.n_boot, seed=seed)],
        }
    }
