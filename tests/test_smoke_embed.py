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


def test_wordfreq_words_have_raw_norms_far_from_one(bundled_encoder, tmp_path, monkeypatch):
    """Issue 2 acceptance: on the default word list the raw MiniLM norms are not 1 (about 5-8)."""
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path)
    from normscope.datasets import wordfreq_words
    from normscope.encoders.embed import embed_input

    summary, table = embed_input(wordfreq_top=200)
    assert table.texts == wordfreq_words(200) and summary["n"] == 200
    norms = np.linalg.norm(bundled_encoder.encode(table.texts[:20]).astype(np.float64), axis=1)
    np.testing.assert_allclose(table.norms[:20], norms, rtol=1e-5)
    assert 4.0 < summary["norm_mean"] < 9.0
    assert summary["norm_min"] > 2.0
    assert summary["input"] == "wordfreq:en:top200"
