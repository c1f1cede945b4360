"""Zipfian and uniform whitening of embeddings (Yokoi, Bao, Kurita and Shimodaira, NeurIPS 2024).

Whitening centres the vectors and rescales them so that their covariance is the identity. Yokoi et al.
("Zipfian Whitening") observe that the usual whitening treats every word of the vocabulary alike,
while the words of real text follow Zipf's law, and weight both the mean and the covariance by the
words' frequencies p(w) (their Algorithm 1):

1. mu = sum_w p(w) w                                  (expected vector under p)
2. W_p = [sqrt(p(w)) (w - mu)]_w, a |V| x d matrix
3. U Sigma V^T = SVD(W_p)
4. Omega = V Sigma^-1                                 (d x d)
5. w' = (w - mu) Omega

so that sum_w p(w) w' = 0 and sum_w p(w) w' w'^T = I. *Uniform* whitening is the same with p uniform.
Texts are then compared by the cosine of their whitened vectors. The transform is affine, so the
whitened mean of a text's word vectors is the mean of its whitened word vectors.

In normscope the vocabulary is the ``n_vocab`` most frequent alphabetic English words of ``wordfreq``
(:func:`normscope.datasets.wordfreq_words`), embedded by the model under test, and p(w) is their
``wordfreq`` frequency renormalised over that vocabulary. Yokoi et al. used the models' full
vocabularies with Wikipedia word counts, so absolute figures differ.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from normscope.datasets import wordfreq_words
from normscope.encoders.embed import embed_texts
from normscope.errors import InputError
from normscope.requests.similarity import WHITENINGS as _WHITENINGS

__all__ = ["WHITENINGS", "Whitening", "fit_whitening", "reference_vocabulary"]

#: Whitening weights: ``zipf`` (p(w) = word frequency) or ``uniform`` (p(w) = 1/|V|).
WHITENINGS: tuple[str, ...] = _WHITENINGS  # defined with the request (normscope.requests.similarity)


@dataclasses.dataclass(frozen=True)
class Whitening:
    """An affine whitening ``x -> (x - mu) @ omega``.

    Attributes
    ----------
    kind : {"zipf", "uniform"}
    mu : ndarray of shape (d,), float64
        The p-weighted mean of the vocabulary's vectors.
    omega : ndarray of shape (d, d), float64
        ``V Sigma^-1`` of the SVD of the p-weighted centred vectors.
    n_vocab : int
        Words the transform was fitted on.
    rank : int
        Singular values kept (those above ``1e-10`` of the largest).
    """

    kind: str
    mu: np.ndarray
    omega: np.ndarray
    n_vocab: int
    rank: int

    def __call__(self, x) -> np.ndarray:
        """Whitened vectors, ndarray of shape (n, rank), float64, of ``x`` (n, d)."""
        return (np.asarray(x, dtype=np.float64) - self.mu) @ self.omega


def fit_whitening(vectors, weights=None, *, kind: str = "zipf") -> Whitening:
    """Fit Yokoi et al.'s Algorithm 1 on a vocabulary's vectors.

    Parameters
    ----------
    vectors : array_like of shape (V, d)
        The vocabulary's vectors.
    weights : array_like of shape (V,), optional
        Non-negative word frequencies p(w) (any scale; renormalised to sum 1). Required for
        ``kind="zipf"``; ignored (uniform) for ``kind="uniform"``.
    kind : {"zipf", "uniform"}, keyword-only

    Returns
    -------
    Whitening
        Its transform gives the vocabulary p-weighted mean 0 and p-weighted covariance I.

    Raises
    ------
    InputError
        An unknown kind, shapes that disagree, negative or non-finite weights, all weights 0, or
        fewer words than dimensions.
    """
    if kind not in WHITENINGS:
        raise InputError(f"unknown whitening {kind!r}; choose from {', '.join(WHITENINGS)}")
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2 or not np.isfinite(x).all():
        raise InputError(f"whitening needs a finite (V, d) array of vectors, got shape {x.shape}")
    n, d = x.shape
    if n <= d:
        raise InputError(f"whitening {d}-dimensional vectors needs more than {d} vocabulary words, got {n}")
    if kind == "uniform":
        p = np.full(n, 1.0 / n)
    else:
        if weights is None:
            raise InputError("Zipfian whitening needs the words' frequencies")
        p = np.asarray(weights, dtype=np.float64)
        if p.shape != (n,) or not np.isfinite(p).all() or (p < 0).any() or p.sum() <= 0:
            raise InputError("word frequencies must be finite, non-negative, not all 0, one per vocabulary word")
        p = p / p.sum()
    mu = p @ x
    _, s, vt = np.linalg.svd(np.sqrt(p)[:, None] * (x - mu), full_matrices=False)
    keep = s > 1e-10 * s[0]
    return Whitening(kind=kind, mu=mu, omega=vt[keep].T / s[keep], n_vocab=n, rank=int(keep.sum()))


def reference_vocabulary(encoder, n_vocab: int, *, batch_size: int = 64, progress: bool = False):
    """The whitening vocabulary: the top ``n_vocab`` alphabetic English words of wordfreq, embedded by ``encoder``.

    Parameters
    ----------
    encoder : Encoder
    n_vocab : int
        Words (>= 2 x the dimension is sensible; the default of ``run_similarity`` is 20,000).
    batch_size, progress : keyword-only
        As :func:`normscope.encoders.embed.embed_texts` (through the embedding cache).

    Returns
    -------
    words : list of str
        The words the encoder did not leave out as junk (GloVe: those in its vocabulary).
    vectors : ndarray of shape (len(words), d), float32
    freq : ndarray of shape (len(words),), float64
        ``wordfreq.word_frequency(w, "en")`` (occurrences per word of running text).
    """
    from wordfreq import word_frequency

    words = wordfreq_words(int(n_vocab))
    table = embed_texts(words, words, encoder=encoder, batch_size=batch_size, progress=progress, what="words")
    freq = np.array([word_frequency(w, "en") for w in table.texts], dtype=np.float64)
    return list(table.texts), table.vectors, freq
