"""Ambiguity: the raw embedding norm against the number of WordNet noun senses of a word.

The paper's mechanism sentence, "conflicting gradients -> larger norm", says that an item pulled toward
several conflicting positives gets more heat and so a larger equilibrium norm (docs/theory.md section 6:
the drift stays positive for ambiguous items). For words, the number of WordNet 3.0 noun senses
(``n_senses`` of :func:`normscope.lexicons.wordnet.wordnet_specificity`, every noun synset of the word) is
the count of meanings a word's contexts may pull it toward, so the mechanism predicts a **positive**
Spearman rho(norm, senses). Frequent words have more senses and, in many encoders, smaller norms, and
length goes with both, so the statistic is the partial Spearman rho controlling for Zipf frequency
(wordfreq) and length (tokens the model saw), with a percentile bootstrap CI that resamples items and
re-ranks each resample (:func:`normscope.stats.partial_spearman`). An earlier reference measured
rho(norm, senses) = -0.19 on all-MiniLM-L6-v2 (the opposite sign), without controls.

The items are the specificity items (the most frequent English words that are mainly WordNet nouns,
:func:`normscope.lexicons.wordnet.wordnet_nouns`), so every item has at least one noun sense. The
computation is ``normscope correlate --signal specificity --measure n_senses`` (:func:`ambiguity_request`),
the same code, items and resampling as the other WordNet signals.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from normscope.requests.correlate import CorrelateRequest

__all__ = ["AMBIGUITY_MEASURE", "AMBIGUITY_CONTROLS", "ambiguity_request", "run_ambiguity", "ambiguity_statistic"]

#: The WordNet measure of ambiguity: the number of noun synsets of the word.
AMBIGUITY_MEASURE = "n_senses"
#: What the partial correlation controls for.
AMBIGUITY_CONTROLS: tuple[str, ...] = ("frequency", "length")


def ambiguity_request(request: CorrelateRequest) -> CorrelateRequest:
    """The ``normscope correlate`` request of the ambiguity statistic from any correlate request (its items,
    model and resampling): signal ``specificity``, measure ``n_senses``, controls frequency and length."""
    return dataclasses.replace(request, signal="specificity", measure=AMBIGUITY_MEASURE, controls=AMBIGUITY_CONTROLS)


def run_ambiguity(request: CorrelateRequest, *, encoder=None, progress: bool = False):
    """Correlate the raw norm with the number of WordNet noun senses (see the module docstring).

    Parameters
    ----------
    request : CorrelateRequest
        Items (``n``), WordNet location, model and resampling; its signal, measure and controls are replaced
        (:func:`ambiguity_request`).
    encoder : Encoder, optional, keyword-only
    progress : bool, keyword-only

    Returns
    -------
    CorrelateResult
        ``partial_spearman`` holds the statistic (rho, 95 % CI over items, permutation p), ``spearman`` the
        plain rank correlation.

    Raises
    ------
    DataMissing
        WordNet 3.0 is absent.
    InputError
        As :func:`normscope.signals.run_correlate`.
    """
    from normscope.signals.study import run_correlate  # deferred: normscope.signals imports this module

    return run_correlate(ambiguity_request(request), encoder=encoder, progress=progress)


def ambiguity_statistic(norm, senses, zipf, length, *, n_boot: int = 2000, n_perm: int = 0, seed: int = 0) -> dict:
    """The partial Spearman rho(norm, senses | Zipf frequency, length) of given per-item arrays.

    Parameters
    ----------
    norm : array_like of shape (n,), float
        Raw embedding norms ||z||.
    senses : array_like of shape (n,), float
        Number of WordNet noun senses (NaN: no noun entry; dropped).
    zipf : array_like of shape (n,), float
        Zipf frequency (log10 occurrences per 10^9 words).
    length : array_like of shape (n,), float
        Length in tokens the model saw (or words).
    n_boot, n_perm, seed : int, keyword-only
        Bootstrap resamples of items (each re-ranked), permutations, seed.

    Returns
    -------
    dict
        :meth:`normscope.stats.PartialResult.to_dict` (``rho``, ``ci``, ``n``, ``controls``...).
    """
    from normscope.stats import partial_spearman  # deferred: normscope.stats imports scipy

    z = np.column_stack([np.asarray(zipf, dtype=np.float64), np.asarray(length, dtype=np.float64)])
    return partial_spearman(np.asarray(senses, dtype=np.float64), np.asarray(norm, dtype=np.float64), z,
                            n_boot=n_boot, n_perm=n_perm, seed=seed, control_names=list(AMBIGUITY_CONTROLS)).to_dict()
