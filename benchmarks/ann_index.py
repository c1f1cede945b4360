"""Recall@10 and queries per second of norm-aware HNSW / IVF indexes vs exact folded search, 1M documents.

Documents: 1,000,000 vectors resampled from the real all-MiniLM-L6-v2 vectors of the 5,183 SciFact
abstracts (``_scale_data.resample``: real directions plus Gaussian jitter, real norms).
Queries: the raw MiniLM vectors of the first 300 SciFact claims (real queries).
Scorer: ``inverse_norm`` with alpha = 0.1 / median||d|| (as ``norm_aware_search.py``), i.e. the
documents are folded to ``d / (||d|| (1 + alpha ||d||))``; ``--scorer cosine`` runs plain cosine.

Indexes (``normscope.extensions.ann.build_ann_index``, ``faiss.METRIC_INNER_PRODUCT``):
- baseline: exact ``IndexFlatIP`` over the same folded vectors (the ground truth top-10);
- ``IndexHNSWFlat`` (M=16, efConstruction=100 by default; ``--hnsw-m``, ``--hnsw-ef-construction``),
  swept over efSearch;
- ``IndexIVFFlat`` (nlist=1024, 64 nlist = 65,536 training vectors, seed 0), swept over nprobe.

Timing (``time_exact``, ``compare_with_exact``): the faiss search call on pre-folded queries, one batch,
ONE thread, best of ``--repeats``; the exact search is timed once, in the same run, before the sweeps;
recall@10 = mean |ANN top-10 & exact top-10| / 10; score ratio@10 = mean over queries of the sum of
the ANN top-10 scores over the sum of the exact top-10 scores (1: the results swapped in score as high). Builds use ``--build-threads``
(default 2) and are reported as context. Printed per setting: recall@10, QPS, QPS of exact search
measured in the same run, and the ratio.

Usage: nice -n 10 python benchmarks/ann_index.py [--n 1000000] [--queries 1000] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--build-threads", type=int, default=2)
    ap.add_argument("--scorer", default="inverse_norm", choices=["inverse_norm", "cosine"])
    ap.add_argument("--ef", default="16,32,64,128,256")
    ap.add_argument("--nprobe", default="4,8,16,32,64")
    ap.add_argument("--kinds", default="hnsw,ivf", help="which approximate indexes to build")
    ap.add_argument("--hnsw-m", type=int, default=16)
    ap.add_argument("--hnsw-ef-construction", type=int, default=100)
    ap.add_argument("--ivf-nlist", type=int, default=1024)
    args = ap.parse_args(argv)

    from _scale_data import resample, scifact_vectors

    from normscope.extensions.ann import AnnParams, build_ann_index, compare_with_exact, time_exact
    from normscope.scoring import fold_queries

    got = scifact_vectors()
    if got is None:
        print("SKIPPED: no ../shared/data/scifact (set NORMSCOPE_DATA)")
        return []
    real_docs, claims, source = got
    t0 = time.perf_counter()
    D = resample(real_docs, args.n, seed=0)
    Q = claims[: args.queries]
    med = float(np.median(np.linalg.norm(D, axis=1)))
    param = 0.1 / med if args.scorer == "inverse_norm" else None
    ids = [str(i) for i in range(args.n)]
    print(f"documents: {args.n:,} resampled from {source} ({time.perf_counter() - t0:.0f} s); "
          f"queries: {len(Q)} real claims; scorer {args.scorer}" + (f" alpha={param:.5f} (0.1/median||d||)" if param else ""))

    def build(params):
        t = time.perf_counter()
        index = build_ann_index(D, ids, scorer=args.scorer, param=param, params=params, threads=args.build_threads)
        return index, time.perf_counter() - t

    flat, t_flat = build(AnnParams(kind="flat"))
    exact_run = time_exact(flat.index, fold_queries(Q, args.scorer), 10, repeats=args.repeats, threads=1)
    del flat
    rows = []
    print(f"baseline exact IndexFlatIP: built in {t_flat:.1f} s, {len(Q) / exact_run[0]:.2f} QPS (1 thread, "
          f"best of {args.repeats})", flush=True)
    plans = {"hnsw": (AnnParams(kind="hnsw", m=args.hnsw_m, ef_construction=args.hnsw_ef_construction),
                      [{"ef_search": int(e)} for e in args.ef.split(",")]),
             "ivf": (AnnParams(kind="ivf", nlist=args.ivf_nlist, train_size=min(64 * args.ivf_nlist, args.n), seed=0),
                     [{"nprobe": int(p)} for p in args.nprobe.split(",")])}
    for params, sweep in (plans[k] for k in args.kinds.split(",")):
        index, t_build = build(params)
        knobs = f"M={params.m}, efConstruction={params.ef_construction}" if params.kind == "hnsw" else \
            f"nlist={params.nlist}, {params.train_size} training vectors"
        print(f"{params.kind} ({knobs}): built in {t_build:.0f} s with {args.build_threads} threads", flush=True)
        for row in compare_with_exact(index, Q, k=10, repeats=args.repeats, threads=1, exact_run=exact_run, settings=sweep):
            row["build_s"] = t_build
            rows.append(row)
            knob = ", ".join(f"{k}={row[k]}" for k in ("ef_search", "nprobe") if k in row)
            print(f"  {params.kind:<5} {knob:<15} recall@10 {row['recall_at_k']:.4f}  QPS {row['qps']:9.1f}  "
                  f"exact QPS {row['qps_exact']:7.2f}  ratio {row['speedup_vs_exact']:7.1f}x  "
                  f"score ratio@10 {row['score_ratio_at_k']:.5f}", flush=True)
        del index
    print(f"faiss search threads 1; load average now {os.getloadavg()[0]:.1f}")
    return rows


if __name__ == "__main__":
    main()
