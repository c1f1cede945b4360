"""bfloat16 vs fp32 on CPU: throughput against ``SentenceTransformer.encode`` fp32, and the norm error of bf16.

Texts: the first 256 SciFact abstracts (BEIR corpus ``data_path("scifact")/corpus.jsonl.gz``, the
``text`` field). When SciFact is neither here nor fetchable the script says so and exits 0 (nothing measured).

Timed, same process, same texts, same torch thread count, interleaved (the order rotates every round)
for ``--repeats`` rounds after one warm-up each:

- baseline: ``SentenceTransformer(<bundled all-MiniLM-L6-v2>).encode(texts)`` in fp32 with its defaults
  (batch 32, the model's trailing ``Normalize``), i.e. what a user runs;
- normscope fp32: ``encode_cached(load_encoder(), texts, cache=False)`` (raw vectors, batch 64);
- normscope bf16: ``encode_cached(load_encoder(precision="bf16"), texts, cache=False)``: the same
  model (shared weights) with the forward pass under ``torch.autocast("cpu", dtype=torch.bfloat16)``.

Reported: texts/s = n / median wall time of each; the ratio bf16 / baseline (goal >= 1.8) and bf16 /
normscope fp32 (the precision alone); the relative norm error ``| ||z_bf16|| - ||z_fp32|| | / ||z_fp32||``
of all n items (median, goal <= 1e-3, and max) against normscope fp32, and the smallest cosine between
bf16 and fp32 vectors. The CPU's bf16 features (``avx512_bf16``, ``amx_bf16``) are printed: without
them autocast emulates bfloat16 and is slower than fp32.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time

import numpy as np


def abstracts(n: int) -> list[str] | None:
    """The first ``n`` non-empty SciFact abstracts, or None when SciFact is neither here nor fetchable."""
    from _data import dataset_dir

    d = dataset_dir("scifact")
    path = None if d is None else d / "corpus.jsonl.gz"
    if path is None or not path.is_file():
        return None
    out = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            t = json.loads(line).get("text", "").strip()
            if t:
                out.append(t)
            if len(out) == n:
                break
    return out if len(out) == n else None


def cpu_bf16_flags() -> str:
    try:
        flags = next(ln for ln in open("/proc/cpuinfo", encoding="ascii", errors="replace") if ln.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    found = sorted({f for f in flags.split() if f in ("avx512_bf16", "amx_bf16", "amx_tile", "amx_int8")})
    return ", ".join(found) or "none"


def main(argv=None) -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = ap.parse_args(argv)

    texts = abstracts(args.n)
    if texts is None:
        print(f"embed_precision: skipped: SciFact ({args.n} abstracts) not found in ../shared/data or $NORMSCOPE_DATA")
        return None

    import torch
    from sentence_transformers import SentenceTransformer

    from normscope.encoders import encode_cached, load_encoder
    from normscope.encoders.bundled import bundled_model_path

    if args.threads:
        torch.set_num_threads(args.threads)
    st = SentenceTransformer(str(bundled_model_path()), device="cpu")
    fp32 = load_encoder()
    bf16 = load_encoder(precision="bf16")
    runs = {
        "st_fp32": lambda: st.encode(texts),
        "ns_fp32": lambda: encode_cached(fp32, texts, cache=False),
        "ns_bf16": lambda: encode_cached(bf16, texts, cache=False),
    }
    out = {k: fn() for k, fn in runs.items()}  # warm-ups, and the vectors compared below
    times: dict[str, list[float]] = {k: [] for k in runs}
    names = list(runs)
    for r in range(args.repeats):
        for name in names[r % 3:] + names[: r % 3]:
            t0 = time.perf_counter()
            runs[name]()
            times[name].append(time.perf_counter() - t0)

    r32 = np.linalg.norm(out["ns_fp32"].astype(np.float64), axis=1)
    r16 = np.linalg.norm(out["ns_bf16"].astype(np.float64), axis=1)
    rel = np.abs(r16 - r32) / r32
    cos = np.sum(out["ns_bf16"].astype(np.float64) * out["ns_fp32"], axis=1) / (r16 * r32)
    cos_st = np.sum(out["ns_fp32"] / r32[:, None] * out["st_fp32"], axis=1)
    tput = {k: len(texts) / statistics.median(v) for k, v in times.items()}
    result = {
        "texts": f"SciFact abstracts (first {len(texts)})",
        "n": len(texts),
        "torch_threads": torch.get_num_threads(),
        "cpu_bf16_flags": cpu_bf16_flags(),
        "repeats": args.repeats,
        "texts_per_s": tput,
        "ratio_bf16_vs_st_fp32": tput["ns_bf16"] / tput["st_fp32"],
        "ratio_bf16_vs_normscope_fp32": tput["ns_bf16"] / tput["ns_fp32"],
        "ratio_per_round_bf16_vs_st_fp32": [b / o for b, o in zip(times["st_fp32"], times["ns_bf16"])],
        "norm_rel_error": {"median": float(np.median(rel)), "max": float(rel.max()),
                           "p95": float(np.quantile(rel, 0.95))},
        "cosine_bf16_vs_fp32_min": float(cos.min()),
        "cosine_normscope_fp32_vs_st_min": float(cos_st.min()),
    }
    print(f"texts: {result['texts']}, torch threads={result['torch_threads']}, CPU bf16: {result['cpu_bf16_flags']}, "
          f"repeats={args.repeats}")
    print(f"SentenceTransformer.encode fp32 (baseline): {tput['st_fp32']:7.1f} texts/s")
    print(f"normscope fp32 (raw vectors):               {tput['ns_fp32']:7.1f} texts/s")
    print(f"normscope bf16 (autocast):                  {tput['ns_bf16']:7.1f} texts/s")
    print(f"ratio bf16 / SentenceTransformer fp32 = {result['ratio_bf16_vs_st_fp32']:.2f} (goal >= 1.8; per round: "
          + ", ".join(f"{x:.2f}" for x in result["ratio_per_round_bf16_vs_st_fp32"]) + ")")
    print(f"ratio bf16 / normscope fp32 = {result['ratio_bf16_vs_normscope_fp32']:.2f}")
    e = result["norm_rel_error"]
    print(f"relative norm error bf16 vs fp32 over {len(texts)} abstracts: median {e['median']:.2e} (goal <= 1e-3), "
          f"p95 {e['p95']:.2e}, max {e['max']:.2e}; min cosine {result['cosine_bf16_vs_fp32_min']:.6f}")
    return result


if __name__ == "__main__":
    main()
