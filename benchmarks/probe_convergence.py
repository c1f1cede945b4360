"""Probe convergence in K and P on the bundled all-MiniLM-L6-v2: the data behind docs/probe.md's
"Uncertainty" and "Report defaults" sections.

Two modes:

- ``run``: probe P items with K_max batches once (``probe_moments``) and save the raw per-batch
  moments (``za, aa, zc, zjd, r, a_sum`` ...) with ids, texts and settings to an ``.npz``;
- ``analyse``: from saved moments, the headline statistics and their batch-aware CIs at K/4, K/2
  and K (``k_convergence``), and the sign-stability table over (P, K) subsamples used to choose the
  report's default P and K (criterion in docs/probe.md).

Usage::

    python benchmarks/probe_convergence.py run wordfreq:1000 --batches 64 --out words.npz
    python benchmarks/probe_convergence.py run scifact-claims:500 --batches 32 --out claims.npz
    python benchmarks/probe_convergence.py analyse words.npz
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _items(spec: str) -> tuple[list[str], list[str]]:
    if spec.startswith("wordfreq:"):
        from normscope.datasets import wordfreq_words

        texts = wordfreq_words(int(spec.split(":")[1]))
        return [str(i) for i in range(len(texts))], texts
    if spec.startswith("scifact-claims:"):
        from normscope.data import data_path

        n = int(spec.split(":")[1])
        rows = [json.loads(line) for line in (data_path("scifact") / "queries.jsonl").read_text().splitlines()]
        rows = rows[:n]
        return [str(r["_id"]) for r in rows], [r["text"] for r in rows]
    raise SystemExit(f"unknown items spec {spec!r}")


def run(args) -> None:
    import torch

    from normscope.encoders import load_encoder
    from normscope.pairs import load_pairs
    from normscope.probes import TextEncoderAdapter, probe_moments

    torch.set_num_threads(args.threads)
    ids, texts = _items(args.items)
    pairs = load_pairs(args.pairs)
    enc = load_encoder()
    ad = TextEncoderAdapter(enc)
    t0 = time.perf_counter()
    done = [0]

    def progress(k, total):
        done[0] = k
        print(f"[{time.perf_counter() - t0:8.1f} s] batch {k}/{total}", file=sys.stderr, flush=True)

    try:
        m = probe_moments(ad, texts, pairs, batch_size=args.batch_size, batches=args.batches, tau=0.05,
                          seed=args.seed, second_order=args.second_order, fd_dtype=args.fd_dtype, progress=progress)
    finally:
        ad.close()
    wall = time.perf_counter() - t0
    np.savez_compressed(
        args.out, r=m.r, za=m.za, aa=m.aa, zc=m.zc, a_sum=m.a_sum, zjd=m.zjd, eps=m.eps, losses=m.losses,
        grad_norms=m.grad_norms, ids=np.array(ids), texts=np.array(texts, dtype=object),
        settings=json.dumps({"items": args.items, "pairs": args.pairs, "pairs_name": pairs.name,
                             "batch_size": args.batch_size, "batches": args.batches, "tau": 0.05,
                             "seed": args.seed, "second_order": m.second_order, "fd_dtype": m.fd_dtype,
                             "fd_target": m.fd_target,
                             "threads": args.threads, "wall_s": wall, "timings_s": m.timings,
                             "fingerprint": enc.fingerprint.to_dict()}),
    )
    print(json.dumps({"wall_s": round(wall, 1), "timings_s": {k: round(v, 1) for k, v in m.timings.items()}}))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("items")
    r.add_argument("--pairs", default="wordnet")
    r.add_argument("--batches", type=int, default=64)
    r.add_argument("--batch-size", type=int, default=64)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--second-order", default="auto", help="auto | jvp (nested JVP, exact) | fd")
    r.add_argument("--fd-dtype", default="float64")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--out", required=True)
    a = sub.add_parser("analyse")
    a.add_argument("moments")
    a.add_argument("--n-boot", type=int, default=1000)
    a.add_argument("--n-stab", type=int, default=400)
    args = ap.parse_args(argv)
    if args.mode == "run":
        run(args)
    else:
        analyse(args)


def _load(path):
    from normscope.probes import ProbeMoments

    z = np.load(path, allow_pickle=True)
    m = ProbeMoments(r=z["r"], za=z["za"], aa=z["aa"], zc=z["zc"], a_sum=z["a_sum"], zjd=z["zjd"], eps=z["eps"],
                     losses=z["losses"], grad_norms=z["grad_norms"])
    settings = json.loads(str(z["settings"]))
    m.fd_dtype, m.fd_target = settings["fd_dtype"], settings["fd_target"]
    m.timings = settings["timings_s"]
    return m, [str(x) for x in z["ids"]], [str(x) for x in z["texts"]], settings


def analyse(args) -> None:
    """Headline statistics with batch-aware CIs, the K-convergence table, and sign stability over (P, K)."""
    from normscope.probes import crossed_bootstrap, item_quantities, summarize_probe
    from normscope.probes.summary import correlation_specs
    from normscope.probes.uncertainty import HEADLINE, point_correlations

    m, ids, texts, st = _load(args.moments)
    k_max, p_max = m.za.shape
    eta, t0 = 2e-5, time.perf_counter()  # MiniLM's training lr (peak); trained without weight decay
    res = summarize_probe(m, eta=eta, weight_decay=None, without_decay=True, ids=ids, texts=texts,
                          n_boot=args.n_boot, seed=0)
    t_summary = time.perf_counter() - t0
    d = res.to_dict()
    out = {"settings": {k: st[k] for k in ("items", "pairs_name", "batch_size", "batches", "seed", "fd_dtype",
                                           "fd_target", "threads", "wall_s")},
           "timings_s": {k: round(v, 1) for k, v in st["timings_s"].items()}, "summary_s": round(t_summary, 2),
           "n_items": p_max, "correlations": {}, "k_convergence": d["k_convergence"]["rows"]}
    for key in res.CORRELATIONS:
        c = d.get(key)
        if c is None:
            continue
        out["correlations"][key] = {"pearson": c["pearson"], "spearman": c["spearman"], "n": c["n"],
                                    "n_excluded": c["n_excluded"], "excluded": c["excluded"],
                                    "ci_pearson": c["ci"]["pearson"], "ci_spearman": c["ci"]["spearman"],
                                    "ci_items_only_spearman": c["ci_items_only"]["spearman"], "p": c["p_text"]}
    for k in ("c_fit", "heat_cancelled_by_d2", "n_negative_q", "n_negative_lambda_rad", "r_eq_cfit_mean_abs_rel_error",
              "q_over_c", "fit_e11", "lambda_rad_per_lambda", "reliability", "median_rel_se", "norm"):
        out[k] = d[k]
    # sign stability: m-out-of-n two-stage bootstrap at smaller designs (P items of the P_max, K of the K_max batches)
    specs = [s for s in correlation_specs(weight_decay=None, without_decay=True) if s[0] in HEADLINE]
    full = {s[0]: d[s[0]] for s in specs}
    settled = {k: (c["ci"]["spearman"][0] is not None and (c["ci"]["spearman"][0] > 0 or c["ci"]["spearman"][1] < 0))
               for k, c in full.items()}
    t = st["timings_s"]
    unit = {"backward_per_batch": t["backward"] / k_max,
            "item_batch": (t.get("jvp", 0) + t.get("jvp2", 0) + t.get("fd", 0)) / (k_max * p_max),
            "item_once": (t["z"] + t["lambda_rad"]) / p_max}
    out["unit_costs_s"] = unit
    grid = []
    for p in [x for x in (50, 100, 200, 500, 1000) if x <= p_max]:
        for k in [x for x in (2, 4, 8, 16, 32) if x <= k_max // 2]:
            def stat(counts, idx):
                w = counts / counts.sum(axis=1, keepdims=True)
                q = item_quantities(m.r, w @ m.za, w @ m.zc, w @ m.aa, m.zjd, eta=eta, without_decay=True, idx=idx)
                return point_correlations(q, specs)[:, 1::2]

            boot = crossed_bootstrap(stat, k_max, p_max, n_boot=args.n_stab, seed=1, draw_batches=k, draw_items=p)
            row = {"P": p, "K": k, "cost_s": round(k * (unit["backward_per_batch"] + p * unit["item_batch"])
                                                    + p * unit["item_once"], 1)}
            for j, (key, _, _) in enumerate(specs):
                col = boot[:, j]
                sign = np.sign(full[key]["spearman"]) if full[key]["spearman"] is not None else 0
                row[key] = round(float(np.mean(np.sign(col[np.isfinite(col)]) == sign)), 3) if sign else None
            row["stable"] = all(row[key] is not None and row[key] >= 0.95 for key in settled if settled[key])
            grid.append(row)
    out["sign_stability"] = {"criterion": "share of resamples of P items and K batches (two-stage, with replacement, "
                                          f"{args.n_stab} resamples) whose Spearman has the sign of the full run, for "
                                          "each headline statistic whose full-run CI excludes 0; stable = all >= 0.95",
                             "settled": settled, "rows": grid}
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
