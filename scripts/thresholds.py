"""Regenerate the measured thresholds shipped with normscope (``src/normscope/extensions/thresholds/*.json``).

    .venv/bin/python scripts/thresholds.py [--model M ...] [--dataset scifact] [--out DIR] [--n-boot 1000]

For each offline model (default: every one installed of all-MiniLM-L6-v2, paraphrase-MiniLM-L3-v2,
all-mpnet-base-v2, glove:6B-50d) runs ``calibrate`` on SciFact with the single signal ``top1_score``
(isotonic map, train queries cut into fit and calibration halves, the 300 test queries held out) and writes
the thresholds file (:mod:`normscope.extensions.model_thresholds`); ``normscope calibrate --model M`` prints
it. The corpus embeddings come from the embedding cache when present (first run per model: the corpus is
embedded, minutes on a CPU for the MiniLMs, longer for mpnet). A model that is not installed is skipped with
a line saying so.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

MODELS = ("sentence-transformers/all-MiniLM-L6-v2", "sentence-transformers/paraphrase-MiniLM-L3-v2",
          "sentence-transformers/all-mpnet-base-v2", "glove:6B-50d")


def main(argv=None) -> int:
    from normscope.errors import NormscopeError
    from normscope.extensions.model_thresholds import THRESHOLD_DIR, describe_thresholds, measure_thresholds, write_thresholds

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="model (repeatable; default: every offline model)")
    ap.add_argument("--dataset", default="scifact", help="BEIR directory or 'scifact' (default)")
    ap.add_argument("--out", type=Path, default=THRESHOLD_DIR, help="folder of the files (default: the package's)")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    failed = 0
    for model in a.model or MODELS:
        cmd = f"python scripts/thresholds.py --model {model}" + (f" --dataset {a.dataset}" if a.dataset != "scifact" else "")
        try:
            d = measure_thresholds(model, dataset=a.dataset, n_boot=a.n_boot, seed=a.seed, command=cmd, progress=True)
        except NormscopeError as exc:
            print(f"{model}: skipped: {exc}", file=sys.stderr)
            failed += 1
            continue
        p = write_thresholds(d, a.out)
        print("\n".join(describe_thresholds(d)))
        print(f"wrote {p}\n")
    return 1 if failed and failed == len(a.model or MODELS) else 0


if __name__ == "__main__":
    sys.exit(main())
