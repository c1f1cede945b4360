"""Wall time of the heat/drift probe vs the cost model of docs/theory.md section 6, and vs a naive loop.

Cost model: ``K (C_bwd(B) + 5 P C_fwd)`` with the unit costs measured in this same run:

- ``C_fwd``: float32 forward cost per probe item (no grad), measured on the probe's own chunks
  (min of 2 passes);
- ``C_bwd(B)``: one forward + backward of the symmetric InfoNCE loss on B pairs (median of 3).

Both are measured before and after each probe run and averaged (on a shared CPU the load drifts).

The probe (:func:`normscope.probes.probe_moments`, batched JVPs + finite differences) runs once
with float64 finite differences (the default, step 3e-3) and once with float32 (step 1e-2). The
one-time costs outside the model (observed norms and one lambda_rad JVP per item) are included
in the measured wall time and listed separately.

Baseline: a naive per-item autograd loop, i.e. for every item and batch one reverse-over-reverse
JVP (``torch.autograd.functional.jvp``, batch of one) and two float64 forwards for D2. It is
timed on a subset of items and extrapolated linearly to P items (printed as such).

Usage::

    python benchmarks/probe_cost.py            # P=1000, K=16, B=64, WordNet pairs
    python benchmarks/probe_cost.py --small    # P=200, K=4 (a few minutes on a loaded CPU)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=1000, help="P, number of probe items (wordfreq top-P)")
    ap.add_argument("--batches", type=int, default=16, help="K")
    ap.add_argument("--batch-size", type=int, default=64, help="B")
    ap.add_argument("--pairs", default="wordnet", help="pair source spec (normscope.pairs.load_pairs)")
    ap.add_argument("--naive-items", type=int, default=16, help="items timed in the naive loop")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--small", action="store_true", help="P=200, K=4, naive on 8 items")
    ap.add_argument("--json", default=None, help="write the figures as JSON")
    args = ap.parse_args(argv)
    if args.small:
        args.items, args.batches, args.naive_items = 200, 4, 8
    torch.set_num_threads(args.threads)


    from normscope.datasets import wordfreq_words
    from normscope.encoders import load_encoder
    from normscope.pairs import load_pairs
    from normscope.probes import TextEncoderAdapter, probe_moments, sample_pair_batches, symmetric_info_nce
    from normscope.probes.moments import _make_chunks

    enc = load_encoder(device=args.device)
    ad = TextEncoderAdapter(enc)
    items = wordfreq_words(args.items)
    pairs = load_pairs(args.pairs)
    P, K, B = len(items), args.batches, args.batch_size
    theta = ad.parameters()
    chunks = _make_chunks(ad, items, 128)
    feats = [ad.features(items, c, "query") for c in chunks]
    print(f"P={P} K={K} B={B} threads={args.threads} chunks={len(chunks)} pairs={pairs.name}", flush=True)

    # ---- unit costs, same run (re-measured before and after each probe run: the CPU may be shared)
    def fwd_all():
        with torch.no_grad():
            for f in feats:
                ad.embed(theta, f, "query")

    bidx = sample_pair_batches(len(pairs), B, 3, 123)

    def unit_costs():
        t_fwd = []
        for _ in range(2):
            t0 = time.perf_counter()
            fwd_all()
            t_fwd.append(time.perf_counter() - t0)
        t_bwd = []
        for idx in bidx:
            t0 = time.perf_counter()
            th = {k: v.detach().clone().requires_grad_(True) for k, v in theta.items()}
            loss = symmetric_info_nce(ad.embed(th, ad.features(pairs.left, idx, "query"), "query"),
                                      ad.embed(th, ad.features(pairs.right, idx, "doc"), "doc"), 0.05)
            torch.autograd.grad(loss, list(th.values()), allow_unused=True)
            t_bwd.append(time.perf_counter() - t0)
        return min(t_fwd) / P, statistics.median(t_bwd)

    fwd_all()  # warm-up
    out = {"P": P, "K": K, "B": B, "threads": args.threads, "device": args.device, "runs": {}}
    before = unit_costs()
    for fd in ("float64", "float32"):
        t0 = time.perf_counter()
        m = probe_moments(ad, items, pairs, batch_size=B, batches=K, tau=0.05, seed=0, fd_dtype=fd,
                          fd_target=None)  # the defaults: 3e-3 in float64, 1e-2 in float32
        wall = time.perf_counter() - t0
        after = unit_costs()
        c_fwd, c_bwd = (before[0] + after[0]) / 2, (before[1] + after[1]) / 2
        model = K * (c_bwd + 5 * P * c_fwd)
        once = m.timings["z"] + m.timings["lambda_rad"]
        out["runs"][fd] = {"wall_s": wall, "c_fwd_s_per_item": c_fwd, "c_bwd_s": c_bwd,
                           "c_fwd_before_after": [before[0], after[0]], "c_bwd_before_after": [before[1], after[1]],
                           "cost_model_s": model, "ratio_to_model": wall / model, "one_time_s": once,
                           "ratio_to_model_excluding_one_time": (wall - once) / model, "timings_s": m.timings}
        print(f"C_fwd = {c_fwd * 1e3:.3f} ms/item, C_bwd(B={B}) = {c_bwd:.2f} s (mean of before {before[0] * 1e3:.3f} ms / "
              f"{before[1]:.2f} s and after {after[0] * 1e3:.3f} ms / {after[1]:.2f} s); "
              f"cost model K (C_bwd + 5 P C_fwd) = {model:.1f} s", flush=True)
        print(f"probe (FD {fd}): wall {wall:.1f} s, ratio to model {wall / model:.2f} "
              f"(excluding one-time z + lambda_rad {once:.1f} s: {(wall - once) / model:.2f}); parts "
              + ", ".join(f"{k} {v:.1f}" for k, v in m.timings.items()), flush=True)
        before = after

    # ---- naive per-item autograd loop on a subset, extrapolated
    n_naive = min(args.naive_items, P)
    sub = np.linspace(0, P - 1, n_naive).astype(int)
    ad64 = ad.with_dtype(torch.float64)
    th64 = {k: v.double() for k, v in ad64.parameters().items()}
    names = list(theta)
    t_naive = 0.0
    for idx in sample_pair_batches(len(pairs), B, K, 0):
        t0 = time.perf_counter()
        th = {n: v.detach().clone().requires_grad_(True) for n, v in theta.items()}
        loss = symmetric_info_nce(ad.embed(th, ad.features(pairs.left, idx, "query"), "query"),
                                  ad.embed(th, ad.features(pairs.right, idx, "doc"), "doc"), 0.05)
        g = torch.autograd.grad(loss, [th[n] for n in names], allow_unused=True)
        g = [(x if x is not None else torch.zeros_like(theta[n])) for n, x in zip(names, g)]
        t_bwd_k = time.perf_counter() - t0
        t0 = time.perf_counter()
        for i in sub:
            f1 = ad.features(items, [i], "query")

            def fi(*ps, _f=f1):
                return ad.embed(dict(zip(names, ps)), _f, "query")

            z, a = torch.autograd.functional.jvp(fi, tuple(theta[n] for n in names), tuple(-x for x in g))
            f64 = ad64.features(items, [i], "query")
            eps = 3e-3 * float(z.norm()) / max(float(a.norm()), 1e-30)
            with torch.no_grad():
                ad64.embed({n: th64[n] + eps * g[j].double() for j, n in enumerate(names)}, f64, "query")
                ad64.embed({n: th64[n] - eps * g[j].double() for j, n in enumerate(names)}, f64, "query")
        t_naive += t_bwd_k + (time.perf_counter() - t0) * P / n_naive
    naive = t_naive
    out["naive"] = {"items_timed": n_naive, "extrapolated_wall_s": naive,
                    "method": "per item and batch: torch.autograd.functional.jvp (double backward) + 2 float64 forwards; "
                              f"timed on {n_naive} items, extrapolated linearly to P={P}"}
    for fd in ("float64", "float32"):
        out["runs"][fd]["speedup_vs_naive"] = naive / out["runs"][fd]["wall_s"]
    print(f"naive per-item autograd loop: {naive:.1f} s extrapolated from {n_naive} items to P={P} "
          f"(speed-up of the probe: FD float64 {out['runs']['float64']['speedup_vs_naive']:.1f}x, "
          f"FD float32 {out['runs']['float32']['speedup_vs_naive']:.1f}x)", flush=True)
    ad.close()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
