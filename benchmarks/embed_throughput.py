"""Raw-embedding throughput of normscope vs ``SentenceTransformer.encode`` (same texts, model, process).

Texts: the 2,000 SciFact paper titles (BEIR corpus, ``data_path("scifact")``)
when it is here or fetchable, else 2,000 short phrases made from the top
wordfreq English words ("the <w1> <w2>"). The script prints which.

- baseline: ``SentenceTransformer(<bundled all-MiniLM-L6-v2>).encode(texts)`` with its
  defaults (batch 32, the model's trailing ``Normalize``), i.e. what a user runs;
- normscope: ``encode_cached(load_encoder(), texts, cache=False)`` -- raw vectors
  (``Normalize`` dropped) then norms ``np.linalg.norm`` in the timed region; the
  cache is OFF so nothing is reused between repeats.

Both run on the same torch thread count, interleaved (A B B A ...) for
``--repeats`` rounds after one warm-up each; the reported figure is
texts/s = 2000 / median wall time, and the ratio normscope / baseline.
Both outputs are checked to agree (cosine of normalised vectors > 0.9999).
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time

import numpy as np


def real_texts(n: int = 2000) -> tuple[list[str], str]:
    from _data import dataset_dir

    d = dataset_dir("scifact")
    if d is not None and (d / "corpus.jsonl.gz").is_file():
        titles = []
        with gzip.open(d / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                t = json.loads(line)["title"].strip()
                if t:
                    titles.append(t)
                if len(titles) == n:
                    break
        if len(titles) == n:
            return titles, "SciFact titles (BEIR corpus, first 2,000 non-empty)"
    from normscope.datasets import wordfreq_words

    w = wordfreq_words(2 * n + 1)
    return [f"the {w[i]} {w[i + n]}" for i in range(n)], "wordfreq phrases 'the <w_i> <w_i+n>'"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n", type=int, default=2000)
    args = ap.parse_args(argv)

    import torch
    from sentence_transformers import SentenceTransformer

    from normscope.encoders import encode_cached, load_encoder
    from normscope.encoders.bundled import bundled_model_path

    texts, source = real_texts(args.n)
    st = SentenceTransformer(str(bundled_model_path()), device="cpu")
    enc = load_encoder()

    def baseline():
        return st.encode(texts)

    def ours():
        v = encode_cached(enc, texts, cache=False)
        return v, np.linalg.norm(v, axis=1)

    ref = baseline()
    raw, norms = ours()  # warm-ups
    cos = np.sum(raw / norms[:, None] * ref, axis=1)
    assert cos.min() > 0.9999, f"normscope and sentence-transformers disagree: min cosine {cos.min()}"

    t_base, t_ours = [], []
    for r in range(args.repeats):
        pair = [("base", baseline), ("ours", ours)] if r % 2 == 0 else [("ours", ours), ("base", baseline)]
        for name, fn in pair:
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            (t_base if name == "base" else t_ours).append(dt)
    tp_base = len(texts) / statistics.median(t_base)
    tp_ours = len(texts) / statistics.median(t_ours)
    per_round = [b / o for b, o in zip(t_base, t_ours)]
    result = {
        "texts": source,
        "n": len(texts),
        "torch_threads": torch.get_num_threads(),
        "repeats": args.repeats,
        "baseline_texts_per_s": tp_base,
        "normscope_texts_per_s": tp_ours,
        "ratio": tp_ours / tp_base,
        "ratio_per_round": per_round,
        "min_cosine_vs_sentence_transformers": float(cos.min()),
    }
    print(f"texts: {source}, n={len(texts)}, torch threads={torch.get_num_threads()}, repeats={args.repeats}")
    print(f"SentenceTransformer.encode (normalised, batch 32): {tp_base:8.1f} texts/s")
    print(f"normscope raw vectors + norms (batch 64, no cache): {tp_ours:8.1f} texts/s")
    print(f"ratio normscope / sentence-transformers = {tp_ours / tp_base:.3f}  (per round: "
          + ", ".join(f"{x:.2f}" for x in per_round) + ")")
    return result


if __name__ == "__main__":
    main()
