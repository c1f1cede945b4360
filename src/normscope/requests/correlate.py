"""What ``normscope correlate`` runs (:class:`CorrelateRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from normscope.encoders.bundled import DEFAULT_MODEL
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

    signal: Signal
    n: int | None = param(None, min=0, help="Number of default items.")
    controls: tuple[str, ...] = ("frequency", "length")
    by: str | None = None
    measure: Measure = "min_depth"
    dataset: UncertaintyDataset = "chaosnli"
    subtlex: str | None = None
    wordnet: str | None = None
    images: str | None = None
    keep_duplicates: bool = False
    embedding: Embedding = Embedding()
    resampling: Resampling = Resampling(n_boot=2000, n_perm=2000)

    def argv(self) -> list[str]:
        """``normscope correlate ...`` with every setting of this request (the caller's item files aside)."""
        out = ["normscope", "correlate", "--signal", self.signal] + self.embedding.argv(DEFAULT_MODEL)
        if self.n is not None:
            out += ["--n-items", str(self.n)]
        if tuple(self.controls) != ("frequency", "length"):
            out += ["--control", ",".join(self.controls) or ""]
        for flag, value, default in (("--by", self.by, None), ("--measure", self.measure, "min_depth"),
                                     ("--dataset", self.dataset, "chaosnli"), ("--subtlex", self.subtlex, None),
                                     ("--wordnet", self.wordnet, None), ("--images", self.images, None)):
            if value != default:
                out += [flag, str(value)]
        if self.keep_duplicates:
            out.append("--keep-duplicates")
        return out + self.resampling.argv(perm=True)
