"""Length confounds: text length in model tokens and in words (always available)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope.errors import InputError

__all__ = ["token_length", "word_count", "tokenizer_of"]


def tokenizer_of(encoder):
    """The Hugging Face tokenizer behind an encoder (``encoder.model.tokenizer`` or ``encoder.tokenizer``), or None."""
    for obj in (getattr(encoder, "model", None), encoder):
        tok = getattr(obj, "tokenizer", None)
        if tok is not None and callable(tok):
            return tok
    return None


def token_length(texts: Sequence[str], tokenizer, *, special_tokens: bool = False) -> np.ndarray:
    """Length of each text in tokens of the model's tokenizer.

    Parameters
    ----------
    texts : sequence of str, length n
    tokenizer : transformers tokenizer, or an encoder exposing one (see :func:`tokenizer_of`)
    special_tokens : bool, keyword-only
        Count ``[CLS]``/``[SEP]``-style special tokens added by the tokenizer (default False:
        content tokens only; a literal ``[SEP]`` inside the text is counted either way). No
        truncation is applied, so lengths may exceed the model's ``max_seq_length``.

    Returns
    -------
    ndarray of shape (n,), float64 (integer values).

    Raises
    ------
    InputError
        If no tokenizer can be found.
    """
    tok = tokenizer if hasattr(tokenizer, "convert_ids_to_tokens") else tokenizer_of(tokenizer)
    if tok is None:
        raise InputError(f"no tokenizer available from {type(tokenizer).__name__}; use word_count instead")
    texts = [str(t) for t in texts]
    if not texts:
        return np.zeros(0)
    ids = tok(texts, add_special_tokens=special_tokens, truncation=False, verbose=False)["input_ids"]
    return np.array([len(i) for i in ids], dtype=np.float64)


def word_count(texts: Sequence[str], *, lang: str = "en") -> np.ndarray:
    """Number of words of each text, by ``wordfreq.tokenize`` (Unicode word segmentation, punctuation dropped).

    Returns
    -------
    ndarray of shape (n,), float64.
    """
    from wordfreq import tokenize

    return np.array([len(tokenize(str(t), lang)) for t in texts], dtype=np.float64)
