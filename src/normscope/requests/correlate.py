"""What ``normscope correlate`` runs (:class:`CorrelateRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from normscope.requests import Embedding, Request, Resampling, param

__all__ = ["CorrelateRequest", "Signal", "SIGNALS", "Measure", "MEASURES", "UncertaintyDataset"]

#: The semantic signals, in the report's order (the one definition: the CLI, the report and the checks read it).
Signal = Literal["frequency", "specificity", "concreteness", "uncertainty"]
SIGNALS: tuple[str, ...] = typing.get_args(Signal)
#: WordNet specificity measures (:mod:`normscope.lexicons.wordnet`).
Measure = Literal["min_depth", "max_depth", "n_hyponyms", "n_senses"]
MEASURES: tuple[str, ...] = typing.get_args(Measure)
#: Datasets of human label uncertainty.
UncertaintyDataset = Literal["chaosnli", "cifar10h"]


@dataclasses.dataclass(frozen=True)
class CorrelateRequest(Request):
    """The raw norm against one semantic signal (:func:`normscope.signals.run_correlate`).

    Attributes
    ----------
    signal : {"frequency", "specificity", "concreteness", "uncertainty"}
    n : int or None
        Number of default items (None: the signal's default; concreteness 0 = all); ignored when the
        caller gives its own items.
    controls : tuple of str
        Covariates partialled out (``frequency``, ``length``, ``words`` or covariate-file columns).
    by : str or None
        Name of the strata (a covariate-file column, or the name given to the caller's strata).
    measure : {"min_depth", "max_depth", "n_hyponyms", "n_senses"}
        Specificity measure.
    dataset : {"chaosnli", "cifar10h"}
        Uncertainty dataset (cifar10h needs ``images``).
    subtlex, wordnet, images : str or None
        SUBTLEX-US file (its Zipf values as the frequency signal), WordNet location, CIFAR-10 test images.
    keep_duplicates : bool
        Keep items whose text (and source, with strata) repeats another item's; by default each is counted
        once (the copy with the smallest id kept, the others listed), since copies would count as
        independent evidence in every CI and p-value.
    embedding : Embedding
    resampling : Resampling
        Bootstrap resamples and permutations of every CI and p-value; ``seed`` also seeds item sampling.
    """

    COMMAND = ("normscope", "correlate")

    signal: Signal = param(cli="--signal", short="-s", show=True,
                           help="specificity, frequency, concreteness, uncertainty, shuffle (each text vs its "
                           "word-shuffled copy), treecut / ruletaker (generated answerable vs unanswerable items, "
                           "length-matched), or feverous (the 50-claim FEVEROUS sample: norm vs label, challenge, "
                           "annotation time).")
    n: int | None = param(None, min=0, cli="--n-items",
                          help="Number of default items (specificity 2000, frequency 5000, concreteness 5000 (0 = all), "
                          "uncertainty all).")
    controls: tuple[str, ...] = param(("frequency", "length"), cli="--control",
                                      help="Controls (repeatable or a comma list): frequency, length, words or "
                                      "covariate-file columns; '' for none.  [default: frequency, length]")
    by: str | None = param(None, cli="--by",
                           help="Column giving each item's source (of the .csv/.jsonl items file or the covariate "
                           "file): report per source, control the source when pooled.")
    measure: Measure = param("min_depth", cli="--measure",
                             help="Specificity measure: min_depth, max_depth, n_hyponyms, n_senses.")
    dataset: UncertaintyDataset = param("chaosnli", cli="--dataset", help="Uncertainty dataset: chaosnli or cifar10h.")
    subtlex: str | None = param(None, cli="--subtlex", help="SUBTLEX-US file: use its Zipf values for frequency.")
    wordnet: str | None = param(None, cli="--wordnet",
                                help="WordNet directory or .tgz (default: $NORMSCOPE_WORDNET, NLTK data, shared data).")
    images: str | None = param(None, cli="--images",
                               help="CIFAR-10 test images (.npy, test_batch, or a folder of 10000 PNG/JPEG named by "
                               "position) for --dataset cifar10h.")
    keep_duplicates: bool = param(False, cli="--keep-duplicates", flag=True,
                                  help="Keep items whose text repeats another item's (default: count each text once "
                                  "and say how many were left out).")
    embedding: Embedding = Embedding()
    resampling: Resampling = param(Resampling(n_boot=2000, n_perm=2000))
