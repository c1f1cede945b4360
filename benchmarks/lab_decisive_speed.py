"""Cost of the decisive transformer design's tracking: training steps/s with tracking on vs off, one process.

Tracking on = every ``track_every`` steps three no-grad forwards of the probe items (R_t, the decay-free
step, R_{t+1}) and an (E4) JVP every ``lambda_every`` steps; the snapshot probes are a one-off cost per
snapshot, reported apart (as the step-0 probe of ``lab_transformer_speed.py``). Off and on runs of the
full design's model (``--size``: BERT hidden 128, 2 layers, 64 probe items, B = 32, plain SGD) alternate
``--repeats`` times on the same data; each rate comes from the run's process CPU time in its training
loop (torch single-threaded), the fastest repeat of each kind is kept (damps other processes on a
shared machine), and the ratio is printed (goal: tracking costs at most 15 %). The last lines
extrapolate the full design's CPU time from these rates and the design's step counts.

    python benchmarks/lab_decisive_speed.py [--size full] [--steps N] [--repeats R] [--pairs wordnet]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from normscope.lab.decisive import DESIGNS, _prepare_data, base_settings, design_specs, select_setting
from normscope.lab.decisive_run import RunContext, RunSpec, run_one
from normscope.lab.tiny_bert import build_tiny_bert


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="full", choices=sorted(DESIGNS))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--pairs", default="wordnet")
    ap.add_argument("--json", default=None, help="also write the figures as JSON")
    a = ap.parse_args()
    sizes = DESIGNS[a.size]
    import torch

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "runs").mkdir()
        build_tiny_bert(d / "encoder_init", hidden=sizes.hidden, layers=sizes.layers, heads=sizes.heads, seed=0)
        (d / "encoder").symlink_to(d / "encoder_init")
        _prepare_data(d, sizes, a.pairs, sizes.probe_items, 0)
        ctx = RunContext(d, sizes.batch_size, sizes.tau, sizes.decay_mask, 0, key="bench")
        eta, lam = sizes.grid[len(sizes.grid) // 2]
        best = {True: float("inf"), False: float("inf")}
        for rep in range(a.repeats):
            for track in (False, True):
                spec = RunSpec(f"bench_{rep}_{int(track)}", "base", "sgd", eta, lam, a.steps, 0, track=track,
                               track_every=sizes.track_every, lambda_every=sizes.lambda_every)
                run = run_one(spec, ctx)
                tm = run["meta"]["timings"]
                best[track] = min(best[track], tm["train_cpu_s"] + tm["track_cpu_s"])
        snap = RunSpec("bench_snapshot", "base", "sgd", eta, lam, 1, 0, snapshots=(0,), probe_batches=sizes.probe_batches,
                       track=False)
        probe_cpu = run_one(snap, ctx)["meta"]["timings"]["probe_cpu_s"]
    on, off = best[True] / a.steps, best[False] / a.steps
    # the full design's step counts for the extrapolation: lambda_rad / lambda = 1 (E4 with the final LayerNorm
    # decayed) and the setting the selection rule picks when no grid row collapses
    rows = [{"eta": g[0], "lambda": g[1], "relaxation_steps": 1 / (4 * g[0] * g[1]), "label": "drifting",
             "mask": g[2] if len(g) > 2 else None} for g in sizes.grid]
    sel = select_setting(rows, sizes)
    eta, lam = sel["eta"], sel["lambda"]
    steps = {ph: sum(s.steps for s in design_specs(ph, sizes, lam_per_lambda=1.0, selected=sel))
             for ph in ("grid", "base", "scaling")}
    n_snap = sizes.snapshots * len(base_settings(eta, lam, sizes))
    total_cpu = (sum(steps.values()) * on + sizes.pretrain_steps * off * 1.5 + n_snap * probe_cpu)
    out = {"size": a.size, "steps": a.steps, "probe_items": sizes.probe_items, "track_every": sizes.track_every,
           "s_per_step_tracking_off": off, "s_per_step_tracking_on": on, "steps_per_s_tracking_off": 1 / off,
           "steps_per_s_tracking_on": 1 / on, "time_ratio_on_over_off": on / off, "tracking_cost": on / off - 1,
           "goal_tracking_cost_max": 0.15, "snapshot_probe_cpu_s": probe_cpu, "design_steps": steps,
           "design_cpu_s_estimate": total_cpu}
    print(f"decisive design '{a.size}', {a.steps} SGD steps, {sizes.probe_items} probe items, best of {a.repeats} "
          "(process CPU time):")
    print(f"  tracking off: {1 / off:.2f} steps/s ({off:.4f} s/step)")
    print(f"  tracking on : {1 / on:.2f} steps/s ({on:.4f} s/step)")
    print(f"  time ratio on/off = {on / off:.3f} (tracking costs {100 * (on / off - 1):.1f} %; goal <= 15 %); one snapshot "
          f"probe (K = {sizes.probe_batches}) {probe_cpu:.1f} s CPU")
    print(f"  design steps at eta={eta:g}, lambda={lam:.4g}: {json.dumps(steps)}; estimated CPU "
          f"{total_cpu / 60:.0f} min, about {total_cpu / 120:.0f} min of wall time with --workers 2 on 2 idle cores")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
