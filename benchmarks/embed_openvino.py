"""OpenVINO f32 / bf16 against normscope's torch fp32 / bf16 and sentence-transformers fp32, in one process.

Texts: SciFact titles and abstracts (``embed_throughput.real_texts``: the BEIR corpus when present, else
wordfreq phrases and no abstracts). Per thread count (``--threads 1,2``: ``torch.set_num_threads`` and
OpenVINO's ``INFERENCE_NUM_THREADS``) and text set, after one warm-up each, ``--repeats`` interleaved
rounds (the order rotates every round) of, end to end (tokenization included):

- ``st``: ``SentenceTransformer(<bundled all-MiniLM-L6-v2>).encode(texts)`` (batch 32, its defaults);
- ``torch_fp32`` / ``torch_bf16``: ``load_encoder().encode`` / ``.at_precision("bf16")`` (batch
  ``--batch-size``, token-sorted; oneDNN linear in fp32, autocast in bf16);
- ``ov_f32`` / ``ov_bf16``: ``load_encoder(runtime="openvino")`` at each precision, the same batches.

Printed: the load average (``os.getloadavg``) before and after, texts/s (n / median wall time), each
variant's median ratio of wall and of CPU seconds (``time.process_time``) against ``torch_fp32`` and
against ``st``, the per-round wall ratios against ``torch_fp32``, and each variant's relative norm error
against ``torch_fp32`` (median / max over the texts; nan for ``st``, whose vectors are normalised). The machine may be shared: read the ratios, and
rerun when the load is high.

Example: ``nice -n 10 python benchmarks/embed_openvino.py --n 256 --n-abstracts 64 --repeats 3``.
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np

from embed_throughput import _interleaved, text_sets

VARIANTS = ("st", "torch_fp32", "torch_bf16", "ov_f32", "ov_bf16")


def measure(texts: list[str], encoders: dict, repeats: int, bs: int) -> dict:
    runs = {}
    for name, enc in encoders.items():
        if name == "st":
            runs[name] = (lambda e=enc: e.encode(texts))  # its defaults (its Normalize module included)
        else:
            runs[name] = (lambda e=enc: e.encode(texts, batch_size=bs))
    out = {k: np.asarray(f(), dtype=np.float64) for k, f in runs.items()}  # warm-ups, and the vectors compared
    ref = np.linalg.norm(out["torch_fp32"], axis=1)
    err = {k: np.abs(np.linalg.norm(v, axis=1) - ref) / ref for k, v in out.items() if k != "st"}  # ST's are normalised
    times = _interleaved(runs, repeats)
    med = {k: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v)) for k, v in times.items()}
    return {
        "n": len(texts),
        "texts_per_s": {k: len(texts) / m[0] for k, m in med.items()},
        "vs_torch_fp32": {k: med["torch_fp32"][0] / m[0] for k, m in med.items()},
        "vs_torch_fp32_cpu": {k: med["torch_fp32"][1] / m[1] for k, m in med.items()},
        "vs_st": {k: med["st"][0] / m[0] for k, m in med.items()},
        "vs_st_cpu": {k: med["st"][1] / m[1] for k, m in med.items()},
        "vs_torch_fp32_per_round": {k: [a[0] / b[0] for a, b in zip(times["torch_fp32"], v)] for k, v in times.items()},
        "norm_rel_error_vs_torch_fp32": {k: (float(np.median(e)), float(np.max(e))) for k, e in err.items()},
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=256, help="titles")
    ap.add_argument("--n-abstracts", type=int, default=64)
    ap.add_argument("--texts", default="titles,abstracts")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args(argv)

    import torch
    from sentence_transformers import SentenceTransformer

    from normscope.encoders import load_encoder
    from normscope.encoders.bundled import bundled_model_path
    from normscope.encoders.openvino_runtime import OpenVINOEncoder, to_openvino

    print("load average (1, 5, 15 min) before: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    st = SentenceTransformer(str(bundled_model_path()), device="cpu")
    enc = load_encoder()
    sets = text_sets(args.texts, args.n, args.n_abstracts)
    result = {}
    for threads in [int(x) for x in args.threads.split(",")]:
        torch.set_num_threads(threads)
        ov = to_openvino(enc, threads=threads)
        if not isinstance(ov, OpenVINOEncoder):
            raise SystemExit("openvino is not available: pip install 'normscope[openvino]'")
        encoders = {"st": st, "torch_fp32": enc, "torch_bf16": enc.at_precision("bf16"), "ov_f32": ov,
                    "ov_bf16": ov.at_precision("bf16")}
        for name, texts in sets.items():
            r = measure(texts, encoders, args.repeats, args.batch_size)
            result[f"{name}@{threads}"] = r
            print(f"\n{name}, {threads} thread(s), n={r['n']}, load average now {os.getloadavg()[0]:.2f}:")
            for k in VARIANTS:
                med, mx = r["norm_rel_error_vs_torch_fp32"].get(k, (float("nan"), float("nan")))
                print(f"  {k:<11} {r['texts_per_s'][k]:7.1f} texts/s | vs torch fp32 {r['vs_torch_fp32'][k]:.2f}x "
                      f"(CPU {r['vs_torch_fp32_cpu'][k]:.2f}x; rounds "
                      + ", ".join(f"{x:.2f}" for x in r["vs_torch_fp32_per_round"][k])
                      + f") | vs ST {r['vs_st'][k]:.2f}x (CPU {r['vs_st_cpu'][k]:.2f}x) | norm error vs torch fp32 "
                      f"median {med:.1e} max {mx:.1e}", flush=True)
    print("\nload average (1, 5, 15 min) after: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return result


if __name__ == "__main__":
    main()
