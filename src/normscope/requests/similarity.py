"""What ``normscope similarity`` runs (:class:`SimilarityRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from normscope.errors import InputError
from normscope.requests import Embedding, Request, Resampling, param
from normscope.scoring import SCORERS as PAIR_SCORERS

__all__ = ["SimilarityRequest", "PairFormat", "WhiteningKind", "WHITENINGS"]

#: Formats of a pair file (:mod:`normscope.similarity.formats`).
PairFormat = Literal["auto", "sts", "words"]
#: Whitenings of the pair vectors (:mod:`normscope.similarity.whitening`).
WhiteningKind = Literal["zipf", "uniform"]
WHITENINGS: tuple[str, ...] = typing.get_args(WhiteningKind)


@dataclasses.dataclass(frozen=True)
class SimilarityRequest(Request):
    """Norm-aware pair scorers fitted on fit pairs and compared with cosine on the evaluated pairs.

    Attributes
    ----------
    dataset : str
        Evaluated pairs: ``simlex-999`` (the registry's copy, found or fetched), an STS-B file or a
        word-similarity list.
    fit : str or None
        Fit pairs (default: ``sts-train.csv`` beside an STS-B dev/test file, else a seeded random half of
        ``dataset``).
    scorers : tuple of str
        Of :data:`normscope.scoring.SCORERS` (in their symmetric pair form); cosine is always the baseline.
    fmt, fit_format : {"auto", "sts", "words"}
        Formats of ``dataset`` and ``fit``.
    keep_duplicates : bool
        Keep pairs whose two texts (either order) and human score repeat another pair's; by default each is
        counted once in its file (the copy with the smallest id kept, the rest listed in ``duplicates``).
    whiten : tuple of {"zipf", "uniform"}
        Also score the pairs by the cosine of whitened vectors (Yokoi et al. 2024), fitted on a word
        vocabulary, never on the pairs.
    whiten_vocab : int
        The top ``whiten_vocab`` alphabetic English words of wordfreq (>= 2), the whitening's vocabulary.
    embedding : Embedding
    resampling : Resampling
        ``n_boot`` resamples of the evaluated pairs; ``seed`` seeds the random half and the bootstrap.
    """

    COMMAND = ("normscope", "similarity")

    dataset: str = param("simlex-999", cli="--dataset", show=True,
                         help="Evaluated pairs: simlex-999 (found or fetched: normscope data path simlex-999), an "
                         "STS-B file (sts-dev.csv, sts-test.csv) or a word-similarity list (SimLex-999.txt, WS-353, "
                         "MEN, RW).")
    fit: str | None = param(None, cli="--fit",
                            help="Fit the scorers' parameters on this pair file (default: sts-train.csv beside an "
                            "STS-B file, else a seeded random half of --dataset).")
    scorers: tuple[str, ...] = param(PAIR_SCORERS, cli="--scorer",
                                     help="cosine, dot, inverse_norm, power (repeatable or a comma list; default all; "
                                     "cosine is always the baseline).")
    fmt: PairFormat = param("auto", cli="--format", help="Format of --dataset: auto, sts or words.")
    fit_format: PairFormat = param("auto", cli="--fit-format", help="Format of --fit: auto, sts or words.")
    keep_duplicates: bool = param(False, cli="--keep-duplicates", flag=True,
                                  help="Keep pairs that repeat another pair (same texts and score; default: count each "
                                  "once and say how many were left out).")
    whiten: tuple[str, ...] = param((), cli="--whiten",
                                    help="zipf, uniform (repeatable or a comma list). Also score the pairs by the "
                                    "cosine of whitened vectors (Zipfian whitening, Yokoi et al. 2024: mean and "
                                    "covariance weighted by word frequency; or uniform), fitted on --whiten-vocab "
                                    "wordfreq words, never on the pairs.")
    whiten_vocab: int = param(20000, min=2, cli="--whiten-vocab",
                              help="Words of the whitening vocabulary: the top-N alphabetic English words of wordfreq, "
                              "embedded by the model.")
    embedding: Embedding = Embedding()
    resampling: Resampling = param(Resampling(n_boot=2000), omit=("n_perm",))

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [s for s in self.scorers if s not in PAIR_SCORERS]
        if bad:
            raise InputError(f"unknown scorer '{bad[0]}'; choose one of {', '.join(PAIR_SCORERS)}")
        bad = [w for w in self.whiten if w not in WHITENINGS]
        if bad:
            raise InputError(f"unknown whitening {bad[0]!r}; choose from {', '.join(WHITENINGS)}")
