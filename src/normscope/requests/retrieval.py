"""What ``normscope retrieval`` (:class:`RetrievalRequest`) and ``normscope calibrate`` (:class:`CalibrateRequest`)
run: checked once, at construction."""

from __future__ import annotations

import dataclasses
from typing import Literal

from normscope.encoders.bundled import DEFAULT_MODEL
from normscope.errors import InputError
from normscope.requests import Embedding, Engine, Request, Resampling, param
from normscope.scoring import PARAM_NAMES, SCORERS

__all__ = ["RetrievalRequest", "CalibrateRequest", "Relevance"]

#: How judgement scores become nDCG gains (:func:`normscope.retrieval.evaluate.relevance_qrels`).
Relevance = Literal["graded", "binary"]


@dataclasses.dataclass(frozen=True)
class RetrievalRequest(Request):
    """Norm-aware scorers fitted on one split and evaluated against cosine on another (:func:`run_retrieval`).

    Attributes
    ----------
    dataset : str
        A BEIR directory, ``scifact`` / ``nfcorpus`` (found or fetched), or ``hf:BeIR/<name>``.
    scorers : tuple of str
        Of :data:`normscope.scoring.SCORERS`; cosine always runs (the baseline).
    fit_split : str or None
        Split whose queries fit the parameters and confidence maps (``train`` falls back to ``dev``, then to
        5-fold cross-validation; ``cv`` or None asks for cross-validation).
    split : str
        Evaluation split.
    params : tuple of (scorer, value)
        Fixed parameters, evaluated as given and marked "not fitted" (e.g. a paper's alpha).
    relevance : {"graded", "binary"}
    grade_scale : int
        Every relevance grade is read times this factor (>= 1; grades such as 0.5 are refused otherwise);
        nDCG is unchanged by the scale.
    dedupe_docs : bool
        Count each distinct document text once (copies collapse to the one with the smallest id, judged with
        the highest grade of the copies); without it, duplicates are kept and a warning counts them.
    ignore_identical_ids : bool
        Leave out a document whose id equals the query id (BEIR's default).
    max_docs, max_queries : int or None
        Seeded subsamples (relevant documents of kept queries always kept).
    k : int
        Depth of the evaluated runs (>= 10; 100 for Recall@100).
    grids : tuple of (scorer, values)
        Parameter grids replacing :func:`normscope.scoring.default_grid`.
    engine, address, workers
        Where the documents are embedded (:mod:`normscope.engine`).
    embedding : Embedding
    resampling : Resampling
        ``n_boot`` bootstrap resamples of every CI (queries, >= 10), ``n_perm`` permutations of the paired
        randomisation tests; ``seed`` seeds subsampling, folds, tests and bootstraps.
    """

    dataset: str = param("scifact", help="BEIR directory, scifact or nfcorpus, or hf:BeIR/<name>.")
    scorers: tuple[str, ...] = SCORERS
    fit_split: str | None = "train"
    split: str = "test"
    params: tuple[tuple[str, float], ...] = ()
    relevance: Relevance = "graded"
    grade_scale: int = param(1, min=1)
    dedupe_docs: bool = False
    ignore_identical_ids: bool = True
    max_docs: int | None = param(None, min=2)
    max_queries: int | None = param(None, min=1)
    k: int = param(100, min=10)
    grids: tuple[tuple[str, tuple[float, ...]], ...] = ()
    engine: Engine = "local"
    address: str | None = None
    workers: int | None = param(None, min=1)
    embedding: Embedding = Embedding()
    resampling: Resampling = Resampling(n_boot=1000, n_perm=10000)

    def __post_init__(self) -> None:
        super().__post_init__()
        for s in (*self.scorers, *dict(self.params), *dict(self.grids)):
            if s not in SCORERS:
                raise InputError(f"unknown scorer '{s}'; choose one of {', '.join(SCORERS)}")
        if not self.scorers:
            raise InputError("no scorer given")
        if self.resampling.n_boot < 10:
            raise InputError(f"n_boot must be >= 10, got {self.resampling.n_boot}")

    def argv(self) -> list[str]:
        """``normscope retrieval ...`` with every setting of this request (a fixed parameter as ``--alpha``/``--beta``)."""
        out = ["normscope", "retrieval", "--dataset", self.dataset] + self.embedding.argv(DEFAULT_MODEL)
        if tuple(self.scorers) != SCORERS:
            out += ["--scorer", ",".join(self.scorers)]
        for flag, value, default in (("--fit-split", self.fit_split, "train"), ("--split", self.split, "test"),
                                     ("--relevance", self.relevance, "graded"), ("--max-docs", self.max_docs, None),
                                     ("--max-queries", self.max_queries, None), ("--grade-scale", self.grade_scale, 1)):
            if value != default:
                out += [flag, "cv" if value is None else str(value)]
        out += [f"--{PARAM_NAMES[s]}={v!r}" for s, v in self.params]
        if self.dedupe_docs:
            out.append("--dedupe-docs")
        if not self.ignore_identical_ids:
            out.append("--keep-identical-ids")
        out += self.resampling.argv()
        if self.engine != "local":
            out += ["--engine", self.engine] + (["--address", self.address] if self.address else [])
            out += ["--workers", str(self.workers)] if self.workers else []
        return out


@dataclasses.dataclass(frozen=True)
class CalibrateRequest(Request):
    """A calibrator of P(relevant) fitted and thresholded on train queries, measured on held-out ones
    (:func:`normscope.extensions.calibrate.run_calibrate`), or a fitted one applied elsewhere (``apply``).

    Attributes
    ----------
    dataset : str or None
        A BEIR directory, ``scifact`` / ``nfcorpus``, or ``hf:BeIR/<name>``; or instead ``run_file`` (a cosine
        run: TREC text or a parquet) with ``qrels_file``.
    signals : tuple of str
        Features of the map (:data:`normscope.retrieval.qpp.QPP_SIGNALS`); with ``apply``, the calibrator's.
    method : {"isotonic", "platt"}
    target_k : int
        1: the top-1 is relevant; K: some document of the top K is (K <= 100).
    fit_split, split : str
        Split of the fit and calibration queries (``cv``: one split cut in three) and the held-out split.
    precision_target, delta : float
        "precision >= precision_target with probability >= 1 - delta" (Learn-then-Test).
    answer_at : tuple of float
        Thresholds on P(relevant) to report on the held-out queries.
    keep_k : int
        Documents per query the document threshold considers (<= 100).
    calibration_fraction : float
        Share of the fitting split's queries kept for choosing thresholds.
    apply : str or None
        A calibrator file to evaluate instead of fitting one.
    max_docs, max_queries : int or None
        Seeded subsamples.
    embedding : Embedding
        ``model`` None: the calibrator's model with ``apply``, else the bundled MiniLM.
    resampling : Resampling
        ``n_boot`` (>= 10) bootstrap resamples of every CI (queries); ``seed`` of subsamples, splits and bootstraps.
    """

    dataset: str | None = None
    run_file: str | None = None
    qrels_file: str | None = None
    signals: tuple[str, ...] = ("top1_score", "margin")
    method: Literal["isotonic", "platt"] = "isotonic"
    target_k: int = param(1, min=1, max=100)
    fit_split: str | None = "train"
    split: str = "test"
    precision_target: float = param(0.8, above=0.0, below=1.0)
    delta: float = param(0.1, above=0.0, below=1.0)
    answer_at: tuple[float, ...] = ()
    keep_k: int = param(10, min=1, max=100)
    calibration_fraction: float = param(0.5, above=0.0, below=1.0)
    apply: str | None = None
    max_docs: int | None = param(None, min=2)
    max_queries: int | None = param(None, min=1)
    embedding: Embedding = Embedding()
    resampling: Resampling = Resampling(n_boot=1000)

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.dataset is None) == (self.run_file is None):
            raise InputError("give --dataset, or --run with --qrels")
        if (self.run_file is None) != (self.qrels_file is None):
            raise InputError("give a run file and its qrels together")
        if self.resampling.n_boot < 10:
            raise InputError(f"--n-boot must be >= 10, got {self.resampling.n_boot}")
        bad = [t for t in self.answer_at if not 0 <= t <= 1]
        if bad:
            raise InputError(f"a threshold on P(relevant) must lie in [0, 1], got {bad[0]}")
