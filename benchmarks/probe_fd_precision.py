"""Error of D2 by finite differences (float32, float64) and by nested JVPs, on the bundled all-MiniLM-L6-v2.

For each of ``--batches`` probe batches (B WordNet pairs, symmetric InfoNCE, tau 0.05) and each item
set (single words, SciFact claims), D2 = <z, c> with ``c = (f(theta + eps v) + f(theta - eps v) - 2z) /
(2 eps^2)`` along ``v = -grad L`` is computed

- on a float64 copy at step targets ``eps median(||a||/R)`` = 1e-3, 3e-3, 1e-2 (convergence; 3e-3
  is the reference), and
- on the float32 model at 3e-3, 1e-2, 3e-2,
- by forward-over-forward AD in float32 (``jvp2``: :func:`normscope.probes.second_order.second_directional`,
  the probe's default), and by the same nested JVP with PyTorch's own layer-norm rule
  (``jvp2_torch_layer_norm``, pytorch/pytorch#196700), and
- as the Richardson extrapolation of float64 differences at 1e-3 and 5e-4 (``64:richardson``, error
  O(h^4)); the nested JVP is also compared with it (``jvp2_vs_richardson``),

and the error is reported as ``|D2 - D2_ref| / mean|D2_ref|`` per item (median and max over items
and batches), the scale used by the probe's own spot check. It also times one float32 and one
float64 forward pass of the items (the cost of the two precisions) and one nested JVP. Prints one JSON
object.

Usage: ``python benchmarks/probe_fd_precision.py --items 64 --batches 2``
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def main(argv=None) -> None:
    import torch
    from torch.func import jvp

    from normscope.data import data_path
    from normscope.datasets import wordfreq_words
    from normscope.encoders import load_encoder
    from normscope.pairs import load_pairs, sample_pair_batches
    from normscope.probes import TextEncoderAdapter, symmetric_info_nce
    from normscope.probes.second_order import second_directional

    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=64)
    ap.add_argument("--batches", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    claims = [json.loads(x)["text"] for x in (data_path("scifact") / "queries.jsonl").read_text().splitlines()]
    sets = {"words": wordfreq_words(args.items), "claims": claims[: args.items]}
    pairs = load_pairs("wordnet")
    ad = TextEncoderAdapter(load_encoder())
    ad64 = ad.with_dtype(torch.float64)
    th = ad.parameters()
    th64 = {k: v.double() for k, v in ad64.parameters().items()}
    out = {"model": ad.name, "items": args.items, "batches": args.batches, "batch_size": args.batch_size, "sets": {}}
    try:
        keys = ("64:1e-3", "64:1e-2", "32:3e-3", "32:1e-2", "32:3e-2", "64:richardson", "jvp2", "jvp2_vs_richardson",
                "jvp2_torch_layer_norm")
        errs = {name: {t: [] for t in keys} for name in sets}
        timing = {name: {"float32_s": 0.0, "float64_s": 0.0, "jvp2_s": 0.0} for name in sets}
        for bidx in sample_pair_batches(len(pairs), args.batch_size, args.batches, 0):
            p = {k: v.clone().requires_grad_(True) for k, v in th.items()}
            loss = symmetric_info_nce(ad.embed(p, ad.features(pairs.left, bidx, "query"), "query"),
                                      ad.embed(p, ad.features(pairs.right, bidx, "doc"), "doc"), 0.05)
            grads = torch.autograd.grad(loss, list(p.values()), allow_unused=True)
            v = {k: (-g if g is not None else torch.zeros_like(th[k])) for k, g in zip(p, grads)}
            v64 = {k: t.double() for k, t in v.items()}
            for name, texts in sets.items():
                idx = range(len(texts))
                f32, f64 = ad.features(texts, idx, "query"), ad64.features(texts, idx, "query")
                z, a = jvp(lambda q, f=f32: ad.embed(q, f, "query"), (th,), (v,))
                rel = float(torch.median(a.norm(dim=1) / z.norm(dim=1)))

                def d2(adapter, theta, vv, f, target, rel=rel):
                    eps = target / rel
                    with torch.no_grad():
                        t0 = time.perf_counter()
                        z0 = adapter.embed(theta, f, "query")
                        zp = adapter.embed({k: theta[k] + eps * vv[k] for k in theta}, f, "query")
                        zm = adapter.embed({k: theta[k] - eps * vv[k] for k in theta}, f, "query")
                        dt = (time.perf_counter() - t0) / 3
                    return (z0.double() * ((zp - z0) + (zm - z0)).double()).sum(1).numpy() / (2 * eps * eps), dt

                ref, dt64 = d2(ad64, th64, v64, f64, 3e-3)
                timing[name]["float64_s"] += dt64
                scale = np.mean(np.abs(ref))
                t0 = time.perf_counter()
                _, _, c = second_directional(lambda q, f32=f32: ad.embed(q, f32, "query"), th, v)
                timing[name]["jvp2_s"] += time.perf_counter() - t0
                d2_jvp = (z.detach().double() * c.double()).sum(1).numpy()
                (_, _), (_, h_raw) = jvp(lambda q, f32=f32, v=v: jvp(lambda r: ad.embed(r, f32, "query"), (q,), (v,)),
                                         (th,), (v,))
                d2_raw = 0.5 * (z.detach().double() * h_raw.detach().double()).sum(1).numpy()
                rich = (4 * d2(ad64, th64, v64, f64, 5e-4)[0] - d2(ad64, th64, v64, f64, 1e-3)[0]) / 3
                errs[name]["64:richardson"].append(np.abs(rich - ref) / scale)
                errs[name]["jvp2"].append(np.abs(d2_jvp - ref) / scale)
                errs[name]["jvp2_vs_richardson"].append(np.abs(d2_jvp - rich) / np.mean(np.abs(rich)))
                errs[name]["jvp2_torch_layer_norm"].append(np.abs(d2_raw - ref) / scale)
                for key in keys[:5]:
                    prec, target = key.split(":")
                    val, dt = (d2(ad64, th64, v64, f64, float(target)) if prec == "64"
                               else d2(ad, th, v, f32, float(target)))
                    if prec == "32" and target == "1e-2":
                        timing[name]["float32_s"] += dt
                    errs[name][key].append(np.abs(val - ref) / scale)
        for name in sets:
            out["sets"][name] = {
                key: {"median": float(np.median(np.concatenate(e))), "max": float(np.max(np.concatenate(e)))}
                for key, e in errs[name].items()
            }
            out["sets"][name]["forward_s_per_item"] = {k: v / args.batches / args.items for k, v in timing[name].items()}
    finally:
        ad.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
