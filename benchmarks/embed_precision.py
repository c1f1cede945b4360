"""bfloat16 vs fp32 on CPU: throughput against ``SentenceTransformer.encode`` fp32, and the norm error of bf16.

Texts: the first 256 SciFact abstracts (BEIR corpus ``data_path("scifact")/corpus.jsonl.gz``, the
``text`` field). When SciFact is neither here nor fetchable the script says so and exits 0 (nothing measured).

Timed, same process, same texts, same torch thread count, interleaved (the order rotates every round)
for ``--repeats`` rounds after one warm-up each:

- baseline: ``SentenceTransformer(<bundled all-MiniLM-L6-v2>).encode(texts)`` in fp32 with its defaults
  (batch 32, the model's trailing ``Normalize``), i.e. what a user runs;
- normscope fp32: ``encode_cached(load_encoder(), texts, cache=False)`` (raw vectors, batch 64; float32
  matrix products on oneDNN, :class:`normscope.encoders.kernels.OneDNNLinear`);
- normscope bf16: ``encode_cached(load_encoder(precision="bf16"), texts, cache=False)``: the same
  model (shared weights) with the forward pass under ``torch.autocast("cpu", dtype=torch.bfloat16)``
  (matrix products in bfloat16, layer norms and softmax in float32; attention by the fused SDPA kernel);
- bf16 weights: a copy of the model cast to bfloat16 (``module.to(torch.bfloat16)``, no autocast):
  every op in bfloat16, no casts per op;
- bf16 autocast, eager attention: as normscope bf16 but with the attention written out (the probe's
  setting), to see what the fused attention path is worth.

Per torch thread count (``--threads 1,2``). Reported: texts/s = n / median wall time of each; the ratio
to the baseline (goal >= 2.5 for bf16) and to normscope fp32 (the precision alone); the relative norm
error ``| ||z_bf16|| - ||z_fp32|| | / ||z_fp32||`` of all n items (median, goal <= 1e-3, and max)
against normscope fp32, and the smallest cosine between bf16 and fp32 vectors. The CPU's bf16
features (``avx512_bf16``, ``amx_bf16``) are printed: without them autocast emulates bfloat16 and is
slower than fp32. Which kernels oneDNN runs: ``ONEDNN_VERBOSE=1 python benchmarks/embed_precision.py
--n 8 --repeats 1 | grep brg`` (``avx512_core_bf16`` is AVX-512 BF16, ``avx512_core_amx`` is AMX).
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
    ap.add_argument("--threads", default="1,2", help="comma-separated torch intra-op thread counts")
    args = ap.parse_args(argv)

    texts = abstracts(args.n)
    if texts is None:
        print(f"embed_precision: skipped: SciFact ({args.n} abstracts) not found in ../shared/data or $NORMSCOPE_DATA")
        return None

    import torch
    from sentence_transformers import SentenceTransformer

    from normscope.encoders import encode_cached, load_encoder
    from normscope.encoders.bundled import bundled_model_path

    st = SentenceTransformer(str(bundled_model_path()), device="cpu")
    fp32 = load_encoder()
    bf16 = load_encoder(precision="bf16")
    weights = SentenceTransformer(str(bundled_model_path()), device="cpu")
    if type(weights[len(weights) - 1]).__name__ == "Normalize":
        del weights[len(weights) - 1]
    weights = weights.to(torch.bfloat16)
    eager = SentenceTransformer(str(bundled_model_path()), device="cpu")
    if type(eager[len(eager) - 1]).__name__ == "Normalize":
        del eager[len(eager) - 1]
    eager[0].auto_model.set_attn_implementation("eager")

    def st_raw(model, autocast):
        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                return model.encode(texts, batch_size=64, convert_to_tensor=True).float().numpy()
        return run

    runs = {
        "st_fp32": lambda: st.encode(texts),
        "ns_fp32": lambda: encode_cached(fp32, texts, cache=False),
        "ns_bf16": lambda: encode_cached(bf16, texts, cache=False),
        "bf16_weights": st_raw(weights, False),
        "bf16_autocast_eager": st_raw(eager, True),
    }
    labels = {"st_fp32": "SentenceTransformer.encode fp32 (baseline)", "ns_fp32": "normscope fp32 (raw vectors)",
              "ns_bf16": "normscope bf16 (autocast, SDPA)", "bf16_weights": "bf16 weights (no autocast)",
              "bf16_autocast_eager": "bf16 autocast, eager attention"}
    result = {"texts": f"SciFact abstracts (first {len(texts)})", "n": len(texts), "cpu_bf16_flags": cpu_bf16_flags(),
              "repeats": args.repeats, "threads": {}}
    print(f"texts: {result['texts']}, CPU bf16: {result['cpu_bf16_flags']}, repeats={args.repeats}")
    for threads in [int(x) for x in str(args.threads or torch.get_num_threads()).split(",")]:
        torch.set_num_threads(threads)
        out = {k: fn() for k, fn in runs.items()}  # warm-ups, and the vectors compared below
        times: dict[str, list[float]] = {k: [] for k in runs}
        names = list(runs)
        for r in range(args.repeats):
            for name in names[r % len(names):] + names[: r % len(names)]:
                t0 = time.perf_counter()
                runs[name]()
                times[name].append(time.perf_counter() - t0)
        r32 = np.linalg.norm(out["ns_fp32"].astype(np.float64), axis=1)
        tput = {k: len(texts) / statistics.median(v) for k, v in times.items()}
        res = {"texts_per_s": tput, "variants": {}}
        print(f"{threads} thread(s):")
        for k in runs:
            v = out[k].astype(np.float64)
            rk = np.linalg.norm(v, axis=1)
            rel = np.abs(rk - r32) / r32
            cos = np.sum(v * out["ns_fp32"], axis=1) / (rk * r32)
            entry = {"texts_per_s": tput[k], "ratio_vs_st_fp32": tput[k] / tput["st_fp32"],
                     "ratio_per_round_vs_st_fp32": [b / o for b, o in zip(times["st_fp32"], times[k])],
                     "ratio_vs_normscope_fp32": tput[k] / tput["ns_fp32"]}
            if k not in ("st_fp32", "ns_fp32"):
                entry.update(norm_rel_error={"median": float(np.median(rel)), "p95": float(np.quantile(rel, 0.95)),
                                             "max": float(rel.max())}, cosine_vs_fp32_min=float(cos.min()))
            res["variants"][k] = entry
            err = (f"; norm error median {entry['norm_rel_error']['median']:.1e}, max {entry['norm_rel_error']['max']:.1e}, "
                   f"min cosine {entry['cosine_vs_fp32_min']:.5f}" if "norm_rel_error" in entry else "")
            print(f"  {labels[k]:<44} {tput[k]:7.1f} texts/s, x{entry['ratio_vs_st_fp32']:.2f} baseline (rounds "
                  + ", ".join(f"{x:.2f}" for x in entry["ratio_per_round_vs_st_fp32"])
                  + f"), x{entry['ratio_vs_normscope_fp32']:.2f} normscope fp32{err}", flush=True)
        result["threads"][threads] = res
    return result


if __name__ == "__main__":
    main()
