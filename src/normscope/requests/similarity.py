"""What ``normscope similarity`` runs (:class:`SimilarityRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses
import typing
from typing import Literal

from normscope.encoders.bundled import DEFAULT_MODEL
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

    dataset: str = param("simlex-999", help="Evaluated pairs: simlex-999, an STS-B file or a word-similarity list.")
    fit: str | None = None
    scorers: tuple[str, ...] = PAIR_SCORERS
    fmt: PairFormat = "auto"
    fit_format: PairFormat = "auto"
    keep_duplicates: bool = False
    whiten: tuple[str, ...] = ()
    whiten_vocab: int = param(20000, min=2)
    embedding: Embedding = Embedding()
    resampling: Resampling = Resampling(n_boot=2000)

    def __post_init__(self) -> None:
        super().__post_init__()
        bad = [s for s in self.scorers if s not in PAIR_SCORERS]
        if bad:
            raise InputError(f"unknown scorer '{bad[0]}'; choose one of {', '.join(PAIR_SCORERS)}")
        bad = [w for w in self.whiten if w not in WHITENINGS]
        if bad:
            raise InputError(f"unknown whitening {bad[0]!r}; choose from {', '.join(WHITENINGS)}")

    def argv(self) -> list[str]:
        """``normscope similarity ...`` with every setting of this request."""
        out = ["normscope", "similarity", "--dataset", self.dataset]
        if self.fit is not None:
            out += ["--fit", self.fit]
        if tuple(self.scorers) != PAIR_SCORERS:
            out += ["--scorer", ",".join(self.scorers)]
        for flag, value in (("--format", self.fmt), ("--fit-format", self.fit_format)):
            if value != "auto":
                out += [flag, value]
        if self.keep_duplicates:
            out.append("--keep-duplicates")
        if self.whiten:
            out += ["--whiten", ",".join(self.whiten)]
            if self.whiten_vocab != 20000:
                out += ["--whiten-vocab", str(self.whiten_vocab)]
        return out + self.embedding.argv(DEFAULT_MODEL) + self.resampling.argv()
