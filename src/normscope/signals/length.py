"""Length in words, for items without a model tokenizer.

Length in model tokens is what the model saw, after truncation: ``EmbeddingTable.tokens`` from
:func:`normscope.embed_texts` (``Encoder.token_counts``); there is no second token counter.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


__all__ = ["word_count"]


def word_count(texts: Sequence[str], *, lang: str = "en") -> np.ndarray:
    """Number of words of each text, by ``wordfreq.tokenize`` (Unicode word segmentation, punctuation dropped).

    Returns
    -------
    ndarray of shape (n,), float64.
    """
    from wordfreq import tokenize

    return np.array([len(tokenize(str(t), lang)) for t in texts], dtype=np.float64)
