"""Cost of the transformer lab's per-step tracking: training steps/s with tracking on vs off, one process.

Tracking on = per step two no-grad forwards of the probe items (at the decay-free step and at the new
parameters) plus an (E4) JVP every ``lambda_every`` steps; the one-off step-0 probe is reported apart
(it is not a per-step cost). Off and on runs alternate ``--repeats`` times on the same model, pairs and
seed; each rate is computed from the training loop's process CPU time (torch single-threaded), the
fastest repeat of each kind is kept (damps other processes on a shared machine), and the ratio of the
two is printed (goal: tracking costs at most 25 %).

    python benchmarks/lab_transformer_speed.py [--model M] [--steps N] [--probe-items P] [--repeats R]
"""

from __future__ import annotations

import argparse
import json

from normscope.lab import run_transformer_lab
from normscope.requests import Resampling
from normscope.requests.lab import TransformerLabRequest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="default: the bundled all-MiniLM-L6-v2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--probe-items", type=int, default=64)
    ap.add_argument("--probe-batches", type=int, default=2, help="step-0 probe batches (not timed per step)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--json", default=None, help="also write the figures as JSON")
    a = ap.parse_args()
    best = {True: float("inf"), False: float("inf")}
    probe0 = None
    for _ in range(a.repeats):
        for track in (False, True):
            r = run_transformer_lab(TransformerLabRequest(model=a.model, steps=a.steps, probe_items=a.probe_items,
                                                          probe_batches=a.probe_batches, track=track, device=a.device,
                                                          resampling=Resampling(n_boot=10)))
            tm = r.timings
            loop_cpu = tm["train_cpu_s"] + tm["track_cpu_s"]
            best[track] = min(best[track], loop_cpu)
            if track:
                probe0 = tm["probe0_s"]
    out = {
        "model": a.model or "all-MiniLM-L6-v2 (bundled)",
        "steps": a.steps,
        "probe_items": a.probe_items,
        "steps_per_s_tracking_off": a.steps / best[False],
        "steps_per_s_tracking_on": a.steps / best[True],
        "s_per_step_tracking_off": best[False] / a.steps,
        "s_per_step_tracking_on": best[True] / a.steps,
        "time_ratio_on_over_off": best[True] / best[False],
        "tracking_cost": best[True] / best[False] - 1.0,
        "goal_tracking_cost_max": 0.25,
        "step0_probe_wall_s": probe0,
    }
    print(f"transformer lab, {a.steps} steps, {a.probe_items} probe items, best of {a.repeats} (process CPU time):")
    print(f"  tracking off: {out['steps_per_s_tracking_off']:.3f} steps/s ({out['s_per_step_tracking_off']:.3f} s/step)")
    print(f"  tracking on : {out['steps_per_s_tracking_on']:.3f} steps/s ({out['s_per_step_tracking_on']:.3f} s/step)")
    print(f"  time ratio on/off = {out['time_ratio_on_over_off']:.3f} (tracking costs {100 * out['tracking_cost']:.1f} %; "
          f"goal <= 25 %); one-off step-0 probe {probe0:.1f} s wall")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
