"""Per-item covariates of the embedding norm: what does the norm track?

Each function returns a float64 array of shape (n,) aligned with its items, NaN where the
covariate is undefined (e.g. a word without a WordNet noun entry):

- :func:`specificity` / :func:`wordnet_specificity` -- WordNet 3.0 hypernym depth, hyponym count,
  senses (:mod:`normscope.lexicons.wordnet`; :func:`load_wordnet` returns the NLTK reader);
- :func:`zipf_frequency` (wordfreq), :func:`subtlex_zipf` (SUBTLEX-US, van Heuven et al. 2014);
- :func:`concreteness` (Brysbaert et al. 2014);
- :func:`label_entropy`, :func:`chaosnli_entropy`, :func:`cifar10h_entropy` (human label entropy, bits);
- :func:`word_count` (length in words where the model has no tokenizer; length in tokens is
  ``EmbeddingTable.tokens``, after truncation).

:func:`run_correlate` (:mod:`normscope.signals.study`) correlates the raw norm with one of these
covariates and returns a :class:`CorrelateResult`; :func:`plot_signal` draws its figure: the library
entry point of ``normscope correlate``.
"""

from normscope.signals.concreteness import concreteness, concreteness_words, load_concreteness
from normscope.lexicons.frequency import load_subtlex, subtlex_zipf, zipf_frequency
from normscope.signals.length import word_count
from normscope.signals.figure import plot_signal
from normscope.signals.result import CorrelateResult
from normscope.signals.study import run_correlate
from normscope.signals.uncertainty import (
    chaosnli_entropy,
    cifar10h_entropy,
    label_entropy,
    load_chaosnli,
    load_cifar10h,
    pair_text,
)
from normscope.lexicons.wordnet import (
    SPECIFICITY_MEASURES,
    load_wordnet,
    specificity,
    wordnet_nouns,
    wordnet_specificity,
)

__all__ = [
    "SPECIFICITY_MEASURES",
    "load_wordnet",
    "specificity",
    "wordnet_specificity",
    "wordnet_nouns",
    "zipf_frequency",
    "load_subtlex",
    "subtlex_zipf",
    "concreteness",
    "concreteness_words",
    "load_concreteness",
    "label_entropy",
    "pair_text",
    "load_chaosnli",
    "chaosnli_entropy",
    "load_cifar10h",
    "cifar10h_entropy",
    "word_count",
    "run_correlate",
    "CorrelateResult",
    "plot_signal",
]
