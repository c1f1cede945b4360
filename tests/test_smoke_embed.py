"""The bundled model gives real raw vectors whose normalisation equals sentence-transformers' output."""

from __future__ import annotations

import numpy as np


SENTENCES = [
    "The cat sat on the mat.",
    "Contrastive encoders are trained with scale-invariant losses.",
    "A man is playing a guitar on stage.",
    "dog",
]


def test_raw_vectors_match_sentence_transformers_after_normalisation(bundled_encoder):
    from sentence_transformers import SentenceTransformer

    from normscope.encoders.bundled import bundled_model_path

    raw = bundled_encoder.encode(SENTENCES)
    ref = SentenceTransformer(str(bundled_model_path()), device="cpu").encode(SENTENCES, normalize_embeddings=False)
    # the reference pipeline ends in Normalize: its rows are unit vectors
    np.testing.assert_allclose(np.linalg.norm(ref, axis=1), 1.0, atol=1e-5)
    cos = np.sum(raw / np.linalg.norm(raw, axis=1, keepdims=True) * ref, axis=1)
    assert (cos > 0.9999).all()
    assert bundled_encoder.fingerprint.dropped_modules == ("Normalize",)
    assert bundled_encoder.fingerprint.pooling == "mean"
    # raw norms of real text are not 1 (they lie around 5-8 for MiniLM)
    assert (np.linalg.norm(raw, axis=1) > 2.0).all()
