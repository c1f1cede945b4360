"""The input embedding table of a model, one row per vocabulary token: norm, kind, word frequency.

A transformer's first layer is a table ``E`` of shape (V, d): token ``t`` enters the network as row
``E[t]``. Under SGD-like training a row receives a gradient only when its token occurs in the batch,
so docs/theory.md's heat acts on a row in proportion to how often its token is sampled, while weight
decay (if any) acts on every row alike. Rows whose token never occurs -- BERT's ``[unused*]`` rows,
reserved in the vocabulary and never produced by the tokenizer -- receive no gradient and so no heat.
This module reads the table and classifies the rows; :func:`normscope.tokens.run_tokens` tests the two
consequences (norm rises with frequency among used tokens; never-used rows are smaller).

Kinds (:data:`KINDS`):

- ``special``: the tokenizer's special tokens (``[PAD]``, ``[UNK]``, ``[CLS]``, ``[SEP]``, ``[MASK]``;
  ``<s>``, ``</s>`` ...);
- ``unused``: reserved placeholders the tokenizer never emits: ``[unused<N>]`` (BERT WordPiece
  vocabularies), BERT's ``[CLS]``/``[SEP]``/``[PAD]``/``[MASK]``/``[UNK]`` entries in a vocabulary whose
  tokenizer uses other special tokens (MPNet), and rows of the table beyond the vocabulary;
- ``subword``: pieces that continue a word: WordPiece ``##ing``; in a byte-pair vocabulary that marks
  word ends (CLIP: ``dog</w>``) the entries without the mark, in one that marks word starts (GPT-2 /
  RoBERTa ``Ġdog``, SentencePiece ``▁dog``) the entries without it (:func:`vocabulary_scheme`);
- ``word``: every other entry (words, also punctuation, digits and single characters).

Frequency: the wordfreq Zipf frequency of the token's string, ``log10`` of its occurrences per billion
words of English (van Heuven et al. 2014; wordfreq 3, ``best`` list), read from wordfreq's frequency
dictionary (not rounded). A ``##`` piece gets the frequency of its string *as a word* (``##ing`` ->
``ing``): a proxy that is not how often the piece occurs inside words, so it is reported apart from the
words. Word-boundary marks (``</w>``, ``Ġ``, ``▁``) are stripped before the lookup.
Tokens wordfreq does not list have no frequency (NaN) and are left out of the correlations
(counted). Special and unused tokens have none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from normscope.encoders.glove import is_static_encoder
from normscope.errors import InputError, ModelError

__all__ = ["KINDS", "UNUSED_RE", "vocabulary_scheme", "token_string", "classify_tokens", "token_zipf", "token_table",
           "embedding_table_of"]

KINDS: tuple[str, ...] = ("word", "subword", "special", "unused")
#: Reserved placeholder tokens of BERT WordPiece vocabularies (``[unused0]`` ... ``[unused993]``).
UNUSED_RE = re.compile(r"^\[unused\d+\]$")
#: BERT's special entries; in a vocabulary whose tokenizer has other special tokens (MPNet's ``<s>``, ``</s>``
#: ...) they are never emitted, so they count as ``unused``.
_BERT_SPECIAL = frozenset({"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})


#: Word-boundary marks of byte-pair vocabularies: (scheme, mark, where).
_MARKS = (("clip-bpe", "</w>", "end"), ("gpt2-bpe", "\u0120", "start"), ("sentencepiece", "\u2581", "start"))


def vocabulary_scheme(tokens: Sequence[str | None]) -> str:
    """``wordpiece`` (``##`` continuations), or a byte-pair scheme when over 10 % of the entries carry its
    word-boundary mark: ``clip-bpe`` (``</w>`` at word ends), ``gpt2-bpe`` (``Ġ``) or ``sentencepiece``
    (``▁``) at word starts."""
    toks = [t for t in tokens if t]
    for scheme, mark, where in _MARKS:
        n = sum(1 for t in toks if (t.endswith(mark) if where == "end" else t.startswith(mark)))
        if toks and n > 0.1 * len(toks):
            return scheme
    return "wordpiece"


def token_string(token: str, kind: str, scheme: str = "wordpiece") -> str:
    """The string a token's frequency is looked up by: without ``##`` or the word-boundary mark of ``scheme``."""
    if kind == "subword" and scheme == "wordpiece":
        return token[2:]
    for name, mark, where in _MARKS:
        if name == scheme:
            if where == "end" and token.endswith(mark):
                return token[: -len(mark)]
            if where == "start" and token.startswith(mark):
                return token[len(mark):]
    return token


def classify_tokens(tokens: Sequence[str | None], special: Sequence[str] = ()) -> np.ndarray:
    """Kind of each token (:data:`KINDS`); ``None`` (a row beyond the vocabulary) is ``unused``.

    Parameters
    ----------
    tokens : sequence of str or None, length V
    special : sequence of str
        The tokenizer's special tokens.

    Returns
    -------
    ndarray of shape (V,), object (str)
    """
    special = set(special)
    scheme = vocabulary_scheme(tokens)
    mark = {name: (m, where) for name, m, where in _MARKS}.get(scheme)
    out = np.empty(len(tokens), dtype=object)
    for i, t in enumerate(tokens):
        if t is None or UNUSED_RE.match(t) or (t in _BERT_SPECIAL and t not in special):
            out[i] = "unused"
        elif t in special:
            out[i] = "special"
        elif mark is None:
            out[i] = "subword" if t.startswith("##") and len(t) > 2 else "word"
        else:
            marked = t.endswith(mark[0]) if mark[1] == "end" else t.startswith(mark[0])
            out[i] = "word" if marked else "subword"
    return out


def token_zipf(tokens: Sequence[str | None], kinds: Sequence[str], *, lang: str = "en") -> np.ndarray:
    """Zipf frequency of each word and subword token (NaN for special, unused and unlisted tokens).

    Parameters
    ----------
    tokens : sequence of str or None, length V
    kinds : sequence of str, length V
        From :func:`classify_tokens`.
    lang : str, keyword-only

    Returns
    -------
    ndarray of shape (V,), float64
        ``log10(f * 1e9)`` with ``f`` wordfreq's frequency of the lower-cased :func:`token_string`.
    """
    from wordfreq import get_frequency_dict

    freq = get_frequency_dict(lang, wordlist="best")
    scheme = vocabulary_scheme(tokens)
    out = np.full(len(tokens), np.nan)
    for i, (t, k) in enumerate(zip(tokens, kinds)):
        if k not in ("word", "subword"):
            continue
        f = freq.get(token_string(t, k, scheme).lower())
        if f:
            out[i] = np.log10(f) + 9.0
    return out


def token_table(weights, tokens: Sequence[str | None], special: Sequence[str] = (), *, lang: str = "en") -> pd.DataFrame:
    """One row per row of an embedding table: ``token_id``, ``token``, ``kind``, ``norm``, ``zipf``, ``used``.

    Parameters
    ----------
    weights : array_like of shape (V, d)
        The input embedding table (float; computed in float64).
    tokens : sequence of str or None, length V
        The vocabulary entry of each row (None: no entry).
    special : sequence of str
        The tokenizer's special tokens.
    lang : str, keyword-only
        wordfreq language of the ``zipf`` column (default ``"en"``).

    Returns
    -------
    pandas.DataFrame
        ``token_id`` int64 (the row), ``token`` str, ``kind`` str, ``norm`` float64 (||E[t]||),
        ``zipf`` float64 (NaN when none), ``used`` bool (kind word or subword: tokens the tokenizer
        emits for text).

    Raises
    ------
    InputError
        ``weights`` not a finite 2-D array, or its row count differs from ``len(tokens)``.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != len(tokens) or not np.isfinite(w).all():
        raise InputError(f"an embedding table must be a finite (V, d) array with one token per row; got {w.shape} "
                         f"for {len(tokens)} tokens")
    kinds = classify_tokens(tokens, special)
    return pd.DataFrame({
        "token_id": np.arange(len(tokens), dtype=np.int64),
        "token": ["" if t is None else str(t) for t in tokens],
        "kind": kinds.astype(str),
        "norm": np.linalg.norm(w, axis=1),
        "zipf": token_zipf(tokens, kinds, lang=lang),
        "used": np.isin(kinds, ("word", "subword")),
    })


def embedding_table_of(encoder) -> tuple[np.ndarray, list, list, dict]:
    """The input embedding table of ``encoder``, its vocabulary and special tokens.

    Transformers (sentence-transformers, ``hf:``, ``hf-clip:`` text tower): the module's
    ``get_input_embeddings()`` and the tokenizer's vocabulary; GloVe: its word-vector table and
    vocabulary (no special tokens).

    Returns
    -------
    weights : ndarray of shape (V, d), float32
    tokens : list of str or None, length V
        Row i's vocabulary entry (None where the vocabulary has none).
    special : list of str
    info : dict
        ``source`` (where the table was read), ``initializer_range`` (the config's init sd, or None).

    Raises
    ------
    ModelError
        An encoder without an input embedding table (precomputed vectors) or without a vocabulary, or whose
        tokenizer names fewer than half the table's rows (a model folder without its vocabulary files).
    """
    if is_static_encoder(encoder):
        return np.asarray(encoder.vectors), list(encoder.vocab), [], {"source": "the GloVe word-vector table",
                                                                       "initializer_range": None}
    module = getattr(encoder, "module", None)
    hf = None
    for m in ([module] + list(module.modules()) if module is not None and hasattr(module, "modules") else []):
        if hasattr(m, "get_input_embeddings") and callable(m.get_input_embeddings):
            try:
                emb = m.get_input_embeddings()
            except (NotImplementedError, AttributeError):
                continue
            if emb is not None and hasattr(emb, "weight"):
                hf = m
                break
    tok = getattr(encoder, "hf_tokenizer", None)
    if hf is None or tok is None or not hasattr(tok, "get_vocab"):
        name = getattr(getattr(encoder, "fingerprint", None), "name", type(encoder).__name__)
        raise ModelError(f"{name} has no input embedding table with a vocabulary (a transformer or GloVe is needed)")
    weights = hf.get_input_embeddings().weight.detach().float().cpu().numpy()
    tokens: list = [None] * weights.shape[0]
    for t, i in tok.get_vocab().items():
        if 0 <= i < len(tokens):
            tokens[i] = t
    special = list(getattr(tok, "all_special_tokens", []) or [])
    named = sum(t is not None and t not in special for t in tokens)
    if 2 * named < len(tokens):  # e.g. a model folder without vocab.txt / tokenizer.json: rows are not "unused"
        name = getattr(getattr(encoder, "fingerprint", None), "name", type(encoder).__name__)
        raise ModelError(f"{name}: the tokenizer's vocabulary names {named:,} of the {len(tokens):,} rows of the input "
                         "embedding table; the model folder lacks its vocabulary (vocab.txt or tokenizer.json), "
                         "so used and never-used rows cannot be told apart")
    cfg = getattr(hf, "config", None)
    return weights, tokens, special, {"source": f"{type(hf).__name__}.get_input_embeddings()",
                                      "initializer_range": getattr(cfg, "initializer_range", None)}
