"""Norm-aware similarity of pairs, tested on human-rated pair benchmarks (``normscope similarity``).

- :mod:`~normscope.similarity.scorers`: symmetric pair scorers (cosine, dot,
  ``cos/((1 + alpha||a||)(1 + alpha||b||))``, ``cos (||a|| ||b||)**beta``), numpy in and out;
- :mod:`~normscope.similarity.formats`: STS-B files and word-similarity lists (SimLex-999,
  WordSim-353, MEN, RW) with the quirks of their releases;
- :mod:`~normscope.similarity.fit`: the parameter fitted on fit pairs only (grid search of Spearman);
- :func:`run_similarity`: the entry point, running a :class:`SimilarityRequest` and returning a
  :class:`SimilarityResult`;
- :func:`plot_similarity`: its figure.
"""

from normscope.similarity.figure import plot_similarity
from normscope.similarity.fit import fit_pair_param, pair_grid
from normscope.similarity.formats import PairSet, read_pairs, read_sts, read_word_pairs
from normscope.requests.similarity import SimilarityRequest
from normscope.similarity.result import SimilarityResult
from normscope.similarity.run import run_similarity
from normscope.similarity.scorers import (
    PAIR_SCORERS,
    cosine_pairs,
    dot_pairs,
    inverse_norm_pairs,
    pair_scores,
    power_pairs,
)

__all__ = [
    "PAIR_SCORERS",
    "cosine_pairs",
    "dot_pairs",
    "inverse_norm_pairs",
    "power_pairs",
    "pair_scores",
    "PairSet",
    "read_pairs",
    "read_sts",
    "read_word_pairs",
    "fit_pair_param",
    "pair_grid",
    "run_similarity",
    "SimilarityRequest",
    "SimilarityResult",
    "plot_similarity",
]
