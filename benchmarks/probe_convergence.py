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
        from normscope.datasets import shared_data_dir

        n = int(spec.split(":")[1])
        rows = [json.loads(line) for line in (shared_data_dir() / "scifact" / "queries.jsonl").read_text().splitlines()]
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
                          seed=args.seed, fd_dtype=args.fd_dtype, progress=progress)
    finally:
        ad.close()
    wall = time.perf_counter() - t0
    np.savez_compressed(
        args.out, r=m.r, za=m.za, aa=m.aa, zc=m.zc, a_sum=m.a_sum, zjd=m.zjd, eps=m.eps, losses=m.losses,
        grad_norms=m.grad_norms, ids=np.array(ids), texts=np.array(texts, dtype=object),
        settings=json.dumps({"items": args.items, "pairs": args.pairs, "pairs_name": pairs.name,
                             "batch_size": args.batch_size, "batches": args.batches, "tau": 0.05,
                             "seed": args.seed, "fd_dtype": m.fd_dtype, "fd_target": m.fd_target,
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
    r.add_argument("--fd-dtype", default="float64")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--out", required=True)
    a = sub.add_parser("analyse")
    a.add_argument("moments")
    args = ap.parse_args(argv)
    if args.mode == "run":
        run(args)
    else:
        analyse(args)


def analyse(args) -> None:  # filled in below once the summary code is final
    raise SystemExit("analyse: not yet")


if __name__ == "__main__":
    main()
