"""Real data shared by the scale benchmarks (ray_scaling.py, ann_index.py); not a benchmark itself.

- :func:`scifact_records`: the first n SciFact corpus documents as ``{"_id", "text"}`` records, or
  None when SciFact is neither here nor fetchable.
- :func:`scifact_vectors`: raw all-MiniLM-L6-v2 vectors of the 5,183 SciFact abstracts (BEIR
  title + text) and the 1,109 claims, through normscope's embedding cache (embedded on a miss).
- :func:`resample`: n synthetic vectors built from real ones (see its docstring).
"""

from __future__ import annotations

import numpy as np


def scifact_records(n: int) -> list[dict] | None:
    """The first ``n`` SciFact corpus documents as records ``{"_id", "text"}`` (BEIR title + text, joined by
    :func:`normscope.data.beir.load_beir`), or None when SciFact is neither here nor fetchable."""
    from _data import dataset_dir

    from normscope.data.beir import load_beir

    root = dataset_dir("scifact")
    if root is None:
        return None
    ds = load_beir(root, splits=[])
    if len(ds.doc_ids) < n:
        return None
    return [{"_id": i, "text": t} for i, t in zip(ds.doc_ids[:n], ds.doc_texts[:n])]


def scifact_vectors(progress: bool = True):
    """``(docs (5183, 384), claims (1109, 384), source)`` float32 raw MiniLM vectors, or None when SciFact is neither here nor fetchable."""
    from _data import dataset_dir

    from normscope.encoders import encode_cached, load_encoder
    from normscope.data.beir import load_beir

    root = dataset_dir("scifact")
    if root is None:
        return None
    ds = load_beir(root, splits=[])
    enc = load_encoder()
    docs = encode_cached(enc, ds.doc_texts, progress=progress)
    claims = encode_cached(enc, list(ds.queries.values()), progress=progress)
    return docs, claims, "SciFact abstracts (title + text) and claims, bundled all-MiniLM-L6-v2, raw vectors"


def resample(real: np.ndarray, n: int, seed: int = 0, noise: float = 0.5, chunk: int = 65536) -> np.ndarray:
    """``n`` vectors resampled from ``real`` (m, d): real directions jittered, real norms.

    Vector i takes the direction of a random real vector ``v_a`` plus Gaussian noise of
    per-coordinate sd ``noise * sd_j`` (``sd_j`` the real vectors' sd of coordinate j), renormalised,
    times the norm of another random real vector ``v_b``. So the norms are a bootstrap sample of the
    real norms, and the directions keep the real corpus's anisotropy without being copies.

    Returns
    -------
    ndarray of shape (n, d), float32
    """
    rng = np.random.default_rng(seed)
    real = np.asarray(real, dtype=np.float64)
    norms = np.linalg.norm(real, axis=1)
    unit = real / norms[:, None]
    sd = unit.std(axis=0)  # per-coordinate spread of the real directions
    out = np.empty((n, real.shape[1]), dtype=np.float32)
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        a = rng.integers(0, len(real), size=m)
        b = rng.integers(0, len(real), size=m)
        x = unit[a] + noise * sd * rng.standard_normal((m, real.shape[1]))
        out[s : s + m] = x / np.linalg.norm(x, axis=1, keepdims=True) * norms[b, None]
    return out


if __name__ == "__main__":  # `make bench` runs every file here; this one only provides data
    pass
