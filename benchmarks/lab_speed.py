"""Cost of the lab's tracking: training steps/s with tracking on vs off, same loop, same run.

Times are process CPU times (torch runs single-threaded in the lab), so other processes on a
shared machine barely affect the ratio. Tracking on = per-step norms of every item plus the estimator (snapshot: S x K virtual probe
batches, all items per batch in one pass; trajectory: one virtual step per actual step). Runs
alternate off/on ``--repeats`` times and the best (fastest) time of each is kept, which damps
noise from other processes on a shared machine. Prints both rates and the cost ratio.

    python benchmarks/lab_speed.py [--encoder table|mlp] [--estimator snapshot|trajectory] [--steps N]
"""

from __future__ import annotations

import argparse
import json

from normscope.lab import LabRequest, run_lab


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoder", default="table", choices=["table", "mlp"])
    ap.add_argument("--estimator", default=None, choices=["snapshot", "trajectory"])
    ap.add_argument("--steps", type=int, default=None, help="default: the lab's default for the encoder")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None, help="also write the figures as JSON")
    a = ap.parse_args()
    best = {True: float("inf"), False: float("inf")}
    summ = None
    for _ in range(a.repeats):
        for track in (False, True):
            r = run_lab(LabRequest(encoder=a.encoder, estimator=a.estimator, steps=a.steps, track=track))
            best[track] = min(best[track], r.timings["cpu_s"])  # process CPU time: robust to a busy machine
            if track:
                summ = r.summary
    steps = summ["steps"]
    out = {
        "encoder": a.encoder,
        "estimator": summ["estimator"],
        "steps": steps,
        "snapshots": summ.get("snapshots"),
        "probe_batches": summ.get("probe_batches"),
        "steps_per_s_tracking_off": steps / best[False],
        "steps_per_s_tracking_on": steps / best[True],
        "time_ratio_on_over_off": best[True] / best[False],
        "tracking_cost": best[True] / best[False] - 1.0,
        "goal_tracking_cost_max": 0.25,
    }
    print(f"lab {a.encoder}/{out['estimator']}, {steps} steps, best of {a.repeats}:")
    print(f"  tracking off: {out['steps_per_s_tracking_off']:.0f} steps/s")
    print(f"  tracking on : {out['steps_per_s_tracking_on']:.0f} steps/s")
    print(f"  time ratio on/off = {out['time_ratio_on_over_off']:.3f} (tracking costs {100 * out['tracking_cost']:.1f} %; goal <= 25 %)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
