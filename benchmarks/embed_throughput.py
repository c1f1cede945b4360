"""Raw-embedding throughput of normscope fp32 vs ``SentenceTransformer.encode`` (same texts, model, process).

Texts: SciFact paper titles (short) and abstracts (long, truncated at the model's 256 tokens), from
the BEIR corpus (``data_path("scifact")``) when it is here or fetchable, else short phrases made from
the top wordfreq English words ("the <w1> <w2>") and no abstracts. The script prints which.

Per text set and per torch thread count (``--threads 1,2``), interleaved (the order alternates every
round) for ``--repeats`` rounds after one warm-up each:

- **end to end** (what a user runs, tokenization included):
  baseline ``SentenceTransformer(<bundled all-MiniLM-L6-v2>).encode(texts)`` with its defaults
  (batch 32, sorted by characters, the model's trailing ``Normalize``) against normscope
  ``encode_cached(load_encoder(), texts, cache=False)`` (batch ``--batch-size``, default 64) plus ``np.linalg.norm`` (raw vectors,
  ``Normalize`` dropped, batched by tokens);
- **end to end, aten kernels** (the named baseline of the oneDNN change): the same normscope call with
  ``enc.linear_kernel = "aten"``, i.e. PyTorch's default float32 ``F.linear`` (MKL), the kernels
  sentence-transformers runs; printed as its ratio to sentence-transformers and as now / aten;
- **forward only** (tokenization outside the timed loop for both): each side's batches are tokenized
  first, in its own order and batch size (normscope's: ``SentenceTransformerEncoder.batches``, what
  ``encode`` runs), and only the model's forward passes are timed: sentence-transformers' under
  ``torch.inference_mode``, normscope's under ``enc.inference()`` (inference mode and oneDNN linear);
  and sentence-transformers' own batches under ``torch.inference_mode`` plus
  ``normscope.encoders.kernels.OneDNNLinear``, which shows how much of the difference is the kernel;
- **tokenization only**: building those batches (sentence-transformers: ``preprocess`` per batch of 32
  in character order; normscope: ``batches``, which tokenizes each text once and pads per batch where
  the model allows, else tokenizes to sort and again per batch), and normscope's two-pass path
  (``batches(..., tokenize_once=False)``, the path before issue 28) as its own baseline.

Reported: texts/s = n / median wall time, the ratio normscope / baseline per round and its median, and
the CPU seconds of each (``time.process_time``). Both outputs are checked to agree (cosine of normalised
vectors > 0.9999).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time

import numpy as np


def text_sets(names: str, n: int, n_abstracts: int) -> dict[str, list[str]]:
    """The named text sets (``"titles,abstracts"``: ``n`` SciFact titles, ``n_abstracts`` abstracts) by
    :func:`real_texts`, each printed with its source; a set with no texts is left out."""
    sets = {}
    for name in names.split(","):
        texts, source = real_texts(n, "title") if name == "titles" else real_texts(n_abstracts, "text")
        print(f"{name}: {source}")
        if texts is not None:
            sets[name] = texts
    return sets


def real_texts(n: int = 2000, field: str = "title") -> tuple[list[str], str] | tuple[None, str]:
    from _data import dataset_dir

    d = dataset_dir("scifact")
    if d is not None and (d / "corpus.jsonl.gz").is_file():
        out = []
        with gzip.open(d / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                t = json.loads(line)[field].strip()
                if t:
                    out.append(t)
                if len(out) == n:
                    break
        if len(out) == n:
            return out, f"SciFact {field}s (BEIR corpus, first {n:,} non-empty)"
    if field != "title":
        return None, f"SciFact {field}s not found"
    from normscope.datasets import wordfreq_words

    w = wordfreq_words(2 * n + 1)
    return [f"the {w[i]} {w[i + n]}" for i in range(n)], "wordfreq phrases 'the <w_i> <w_i+n>'"


def _interleaved(runs: dict, repeats: int) -> dict:
    """``{name: [(wall, cpu), ...]}`` over ``repeats`` rounds, the order rotating every round."""
    names = list(runs)
    times = {k: [] for k in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            w0, c0 = time.perf_counter(), time.process_time()
            runs[name]()
            times[name].append((time.perf_counter() - w0, time.process_time() - c0))
    return times


def measure(texts: list[str], st, enc, repeats: int, bs: int = 64) -> dict:
    import torch

    from normscope.encoders import encode_cached
    from normscope.encoders.kernels import OneDNNLinear

    def baseline():
        return st.encode(texts)

    def ours():
        v = encode_cached(enc, texts, cache=False, batch_size=bs)
        return v, np.linalg.norm(v, axis=1)

    def ours_aten():
        """normscope with PyTorch's default float32 linear kernel (MKL): the path before the oneDNN change."""
        enc.linear_kernel = "aten"
        try:
            return ours()
        finally:
            enc.linear_kernel = "onednn"

    ref = baseline()
    raw, norms = ours()  # warm-ups
    enc.tokenize_once_supported()
    before, _ = ours_aten()
    cos = np.sum(raw / norms[:, None] * ref, axis=1)
    assert cos.min() > 0.9999, f"normscope and sentence-transformers disagree: min cosine {cos.min()}"

    # forward only: each side's own batches, tokenized before the timed loop
    st_order = np.argsort([-len(t) for t in texts], kind="stable")

    def st_tokenize():
        return [st.preprocess([texts[i] for i in st_order[s:s + 32]]) for s in range(0, len(texts), 32)]

    def ns_tokenize():  # the batches encode runs (tokenized once where the model allows), CPU tensors
        return [f for _, f in enc.batches(texts, bs)]

    def ns_tokenize_twice():  # the path before issue 28: token counts to sort, then preprocess per batch
        return [f for _, f in enc.batches(texts, bs, tokenize_once=False)]

    st_batches, ns_batches = st_tokenize(), ns_tokenize()

    def st_forward():
        with torch.inference_mode():
            for f in st_batches:
                st(dict(f))

    def ns_forward():
        with enc.inference():
            for f in ns_batches:
                enc.forward(f)

    def st_forward_onednn():
        with torch.inference_mode(), OneDNNLinear():
            for f in st_batches:
                st(dict(f))

    st_forward(), ns_forward(), st_forward_onednn()
    times = _interleaved({"st": baseline, "ns": ours, "ns_aten": ours_aten, "st_fwd": st_forward, "ns_fwd": ns_forward,
                          "st_fwd_onednn": st_forward_onednn,
                          "st_tok": st_tokenize, "ns_tok": ns_tokenize, "ns_tok_twice": ns_tokenize_twice}, repeats)
    med = {k: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v)) for k, v in times.items()}
    return {
        "n": len(texts),
        "texts_per_s": {k: len(texts) / m[0] for k, m in med.items()},
        "cpu_s": {k: m[1] for k, m in med.items()},
        "ratio_end_to_end": med["st"][0] / med["ns"][0],
        "ratio_end_to_end_per_round": [b[0] / o[0] for b, o in zip(times["st"], times["ns"])],
        "ratio_end_to_end_cpu": med["st"][1] / med["ns"][1],
        "ratio_aten_end_to_end": med["st"][0] / med["ns_aten"][0],
        "ratio_aten_end_to_end_per_round": [b[0] / o[0] for b, o in zip(times["st"], times["ns_aten"])],
        "ratio_aten_end_to_end_cpu": med["st"][1] / med["ns_aten"][1],
        "speedup_vs_aten": med["ns_aten"][0] / med["ns"][0],
        "speedup_vs_aten_per_round": [b[0] / o[0] for b, o in zip(times["ns_aten"], times["ns"])],
        "speedup_vs_aten_cpu": med["ns_aten"][1] / med["ns"][1],
        "max_rel_diff_vs_aten": float(np.max(np.linalg.norm(raw - before, axis=1) / np.linalg.norm(before, axis=1))),
        "max_norm_rel_diff_vs_aten": float(np.max(np.abs(norms / np.linalg.norm(before, axis=1) - 1))),
        "ratio_st_forward_onednn": med["st_fwd"][0] / med["st_fwd_onednn"][0],
        "ratio_forward_only": med["st_fwd"][0] / med["ns_fwd"][0],
        "ratio_forward_only_per_round": [b[0] / o[0] for b, o in zip(times["st_fwd"], times["ns_fwd"])],
        "ratio_forward_only_cpu": med["st_fwd"][1] / med["ns_fwd"][1],
        "ratio_tokenize_only": med["st_tok"][0] / med["ns_tok"][0],
        "tokenize_s": {"st": med["st_tok"][0], "ns": med["ns_tok"][0], "ns_twice": med["ns_tok_twice"][0]},
        "tokenize_once": bool(enc.tokenize_once_supported()),
        "padded_tokens": {"st": int(sum(f["input_ids"].numel() for f in st_batches)),
                          "ns": int(sum(f["input_ids"].numel() for f in ns_batches))},
        "min_cosine_vs_sentence_transformers": float(cos.min()),
    }


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=2000, help="titles")
    ap.add_argument("--n-abstracts", type=int, default=500)
    ap.add_argument("--texts", default="titles,abstracts")
    ap.add_argument("--threads", default="1,2", help="comma-separated torch thread counts")
    ap.add_argument("--batch-size", type=int, default=64, help="normscope's batch size (encode_cached's default: 64)")
    args = ap.parse_args(argv)

    import torch
    from sentence_transformers import SentenceTransformer

    from normscope.encoders import load_encoder
    from normscope.encoders.bundled import bundled_model_path

    st = SentenceTransformer(str(bundled_model_path()), device="cpu")
    enc = load_encoder()
    sets = text_sets(args.texts, args.n, args.n_abstracts)
    result = {}
    for threads in [int(x) for x in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for name, texts in sets.items():
            r = measure(texts, st, enc, args.repeats, args.batch_size)
            result[f"{name}@{threads}"] = r
            tp = r["texts_per_s"]
            print(f"{name}, {threads} thread(s), n={r['n']}: end to end ST {tp['st']:.1f} / normscope {tp['ns']:.1f} texts/s, "
                  f"ratio {r['ratio_end_to_end']:.3f} (rounds " + ", ".join(f"{x:.2f}" for x in r["ratio_end_to_end_per_round"])
                  + f"; CPU {r['ratio_end_to_end_cpu']:.3f}); aten kernels: ratio {r['ratio_aten_end_to_end']:.3f} (rounds "
                  + ", ".join(f"{x:.2f}" for x in r["ratio_aten_end_to_end_per_round"])
                  + f"; CPU {r['ratio_aten_end_to_end_cpu']:.3f}), oneDNN / aten {r['speedup_vs_aten']:.3f} (rounds "
                  + ", ".join(f"{x:.2f}" for x in r["speedup_vs_aten_per_round"])
                  + f"; CPU {r['speedup_vs_aten_cpu']:.3f}, max |dv|/|v| {r['max_rel_diff_vs_aten']:.1e}, max norm diff "
                  f"{r['max_norm_rel_diff_vs_aten']:.1e}); forward only ratio {r['ratio_forward_only']:.3f} (rounds "
                  + ", ".join(f"{x:.2f}" for x in r["ratio_forward_only_per_round"])
                  + f"; CPU {r['ratio_forward_only_cpu']:.3f}; ST's own forward under OneDNNLinear / without "
                  f"{r['ratio_st_forward_onednn']:.3f}); tokenization only ST {r['tokenize_s']['st']:.3f} s / "
                  f"normscope {r['tokenize_s']['ns']:.3f} s (tokenized once: {r['tokenize_once']}; the two-pass path "
                  f"{r['tokenize_s']['ns_twice']:.3f} s); padded tokens ST {r['padded_tokens']['st']:,} / "
                  f"normscope {r['padded_tokens']['ns']:,}", flush=True)
    return result


if __name__ == "__main__":
    main()
