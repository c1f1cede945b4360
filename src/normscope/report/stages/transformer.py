"""Report stage ``transformer``: Theorem 1 on a real transformer (``normscope lab --encoder transformer``).

Runs the transformer lab once per optimizer (SGD, heavy-ball momentum, AdamW) on the report's model
with WordNet noun (term, gloss) pairs, the same held-out probe set and the same seed; each run is
checkpointed under ``<out>/transformer_lab/`` so a killed report resumes it.
"""

from __future__ import annotations

from pathlib import Path

from normscope.lab.claims import transformer_claim
from normscope.report.context import StageContext
from normscope.report.stages._common import ci_text, refuse_static, sig3

__all__ = ["stage_transformer", "OPTIMIZERS"]

OPTIMIZERS = ("sgd", "momentum", "adamw")


def stage_transformer(ctx: StageContext) -> dict:
    from normscope import lab
    from normscope.errors import DataError

    refuse_static(ctx)  # GloVe: no network to differentiate
    s = ctx.sizes
    seed = ctx.config.seed
    quick = ctx.config.preset == "quick"
    ck_dir = ctx.out / "transformer_lab"
    ck_dir.mkdir(exist_ok=True)
    encoder = ctx.encoder()
    results = []
    for opt in OPTIMIZERS:
        try:
            res = lab.run_transformer_lab(
                encoder=encoder, pairs="wordnet", optimizer=opt, steps=s.transformer_steps,
                probe_items=s.transformer_probe_items, probe_batches=s.transformer_probe_batches, seed=seed,
                device=ctx.config.device, precision=ctx.config.precision, checkpoint=ck_dir / f"{opt}.ckpt", n_boot=s.n_boot, progress=True)
        except DataError as exc:
            from normscope.report.missing import data_unavailable

            raise data_unavailable([exc], "its WordNet (term, gloss) pairs") from None
        results.append(res)
    sgd = results[0]
    figs = []
    p = lab.plot_transformer_trajectories(sgd, ctx.figure_path("transformer_lab_trajectories.png"))
    figs.append({"file": Path(p).name, "caption": (
        f"Transformer lab (SGD): norm R_t of six held-out probe items over {sgd.steps} training steps, each with its "
        "step-0 predicted R_eq (dashed, same colour); the window start (dotted) and one relaxation time "
        "1/(2 eta lambda_rad) (dash-dot) are marked.")})
    p = lab.plot_predicted_vs_final(sgd, ctx.figure_path("transformer_lab_predicted_vs_final.png"))
    figs.append({"file": Path(p).name, "caption": (
        "Transformer lab (SGD): step-0 predicted R_eq (x) against each probe item's norm at step 0 (hollow) and at the "
        "end (filled); grey lines join the two; dashed: R = R_eq. Items without a prediction are not shown.")})
    p = lab.plot_optimizer_comparison(results, ctx.figure_path("transformer_lab_optimizers.png"))
    figs.append({"file": Path(p).name, "caption": (
        "Transformer lab, optimizer comparison on the same model, pairs and probe set: median R_t/R_0 (left); "
        "Spearman(step-0 R_eq, final R) with bootstrap CI over probe items, and the fraction of items moved toward "
        "R_eq with its Wilson interval (right).")})
    labels = type(sgd).label
    rows = []
    for r in results:
        m = r.motion or {}
        tm = r.timings
        rows.append([r.optimizer, r.lr, r.weight_decay, r.steps, sig3(r.relaxation_steps), sig3(r.q_over_c_mean),
                     sig3(r.q_over_c_median),
                     f"{sig3(r.fraction_moved_toward_req)} {ci_text(r.fraction_moved_toward_req_ci)}",
                     f"{sig3(r.spearman_predicted_vs_final)} {ci_text(r.spearman_predicted_vs_final_ci)}",
                     f"{sig3(m.get('partial_spearman_predicted_vs_final_given_start'))} "
                     f"{ci_text(m.get('partial_spearman_predicted_vs_final_given_start_ci'))}",
                     f"{sig3(m.get('fraction_moved_toward_common_target'))}",
                     sig3(r.pearson_final_vs_req_trajectory),
                     sig3(tm.get("s_per_step")) if tm.get("steps_run") else "(from checkpoint)"])
    key_numbers = [
        [labels("relaxation_steps") + " (SGD)", sgd.relaxation_steps, "steps"],
        [labels("long_enough") + " (SGD)", "yes" if sgd.long_enough else "no", ""],
        ["norms stationary over the window, measured (SGD)", "yes" if (sgd.trajectory or {}).get("stationary") else "no", ""],
        [labels("q_over_c_median") + " (SGD)", sgd.q_over_c_median, ""],
        [labels("fraction_moved_toward_req") + " (SGD)", sgd.fraction_moved_toward_req, ""],
        [labels("spearman_predicted_vs_final") + " (SGD)", sgd.spearman_predicted_vs_final, ""],
        ["partial Spearman \u03c1, step-0 R_eq vs final R given R_0 (SGD)",
         (sgd.motion or {}).get("partial_spearman_predicted_vs_final_given_start"), ""],
        ["fraction moved toward a common target, the median R_eq (SGD, baseline)",
         (sgd.motion or {}).get("fraction_moved_toward_common_target"), ""],
        [labels("probe_items"), sgd.probe_items, "items"],
    ]
    notes = []
    if not sgd.long_enough:
        notes.insert(0, f"{'Quick preset: e' if quick else 'E'}ach run has {sgd.steps} steps, shorter than one relaxation "
                     f"time ({sig3(sgd.relaxation_steps)} steps for SGD) so that the report stays affordable on a CPU: the "
                     "numbers show the first directions of motion, not stationary norms. The long runs are in docs/lab.md "
                     "(normscope lab --encoder transformer --steps 2000, or scripts/lab_transformer_gpu.sh).")
    for r in results:
        notes += [f"{r.optimizer}: {c}" for c in r.caveats]
    cmd = (f"normscope lab --encoder transformer --model {ctx.config.model} --pairs wordnet --optimizer OPT "
           f"--steps {s.transformer_steps} --probe-items {s.transformer_probe_items} --probe-batches "
           f"{s.transformer_probe_batches} --seed {seed} --json transformer_OPT.json  (OPT = sgd, momentum, adamw)")
    sizes = (f"{'QUICK (short) ' if quick else ''}{sgd.steps} steps per optimizer, B = {sgd.batch_size} WordNet noun "
             f"(term, gloss) pairs of at most {sgd.max_tokens} tokens, {sgd.probe_items} held-out probe items, step-0 "
             f"probe K = {sgd.probe_batches}")
    return {
        "transformer_lab": {
            "status": "ok",
            "reason": None,
            "command": cmd,
            "sizes": sizes,
            "result": {r.optimizer: r.to_dict() for r in results},
            "derived": {"quick": quick},
            "key_numbers": key_numbers,
            "tables": [{"title": "Optimizer comparison (same model, pairs, probe set, seed)",
                        "columns": ["optimizer", "\u03b7", "\u03bb", "steps", "relaxation time (steps)", "mean q/c",
                                    "median q/c", "fraction toward R_eq [95% Wilson]",
                                    "Spearman(R_eq0, R_T) [95% CI]", "partial Spearman(R_eq0, R_T | R_0) [95% CI]",
                                    "fraction toward the median R_eq (baseline)",
                                    "Pearson(R_T, window R_eq)", "s / step"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
            "claims": [transformer_claim(sgd)],
        }
    }
