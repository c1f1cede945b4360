"""What ``normscope retrieval`` (:class:`RetrievalRequest`) and ``normscope calibrate`` (:class:`CalibrateRequest`)
run: checked once, at construction."""

from __future__ import annotations

import dataclasses
from typing import Literal

from normscope.errors import InputError
from normscope.requests import Embedding, Engine, Request, Resampling, param, said
from normscope.scoring import PARAM_NAMES, SCORERS

__all__ = ["RetrievalRequest", "CalibrateRequest", "Relevance", "DEFAULT_CALIBRATE_SIGNALS"]

#: ``calibrate``'s default features: the two free score signals and the query's raw norm (the paper's signal).
DEFAULT_CALIBRATE_SIGNALS: tuple[str, ...] = ("top1_score", "margin", "query_norm")

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
    agreement_model : str or None
        A second model: its cosine top-10 of each evaluation query is compared with this model's, giving the QPP
        signal ``model_agreement`` (Jaccard of the two top-10 document sets,
        :func:`normscope.retrieval.qpp_baselines.topk_agreement`) in the QPP table and the incremental study.
        None (default): not computed (it embeds the corpus a second time).
    embedding : Embedding
    resampling : Resampling
        ``n_boot`` bootstrap resamples of every CI (queries, >= 10), ``n_perm`` permutations of the paired
        randomisation tests; ``seed`` seeds subsampling, folds, tests and bootstraps.
    """

    COMMAND = ("normscope", "retrieval")

    dataset: str = param("scifact", cli="--dataset", show=True,
                         help="BEIR directory (corpus.jsonl[.gz], queries.jsonl[.gz], qrels/*.tsv[.gz]), scifact or "
                         "nfcorpus (fetched if absent, docs/data.md), or hf:BeIR/<name>.")
    scorers: tuple[str, ...] = param(SCORERS, cli="--scorer",
                                     help="cosine, dot, inverse_norm, power (repeatable or a comma list; default all).")
    fit_split: str | None = param("train", cli="--fit-split", none="cv",
                                  help="Split fitting alpha/beta and confidence maps ('cv': 5-fold cross-validation).")
    split: str = param("test", cli="--split", help="Evaluation split.")
    #: set by ``--alpha`` / ``--beta`` (one option per scorer, :data:`normscope.scoring.PARAM_NAMES`; :meth:`options`)
    params: tuple[tuple[str, float], ...] = ()
    relevance: Relevance = param("graded", cli="--relevance",
                                 help="graded (nDCG gains are the judgement scores, as BEIR) or binary (score >= 1 "
                                 "counts 1).")
    grade_scale: int = param(1, min=1, cli="--grade-scale",
                             help="Read every relevance grade times this factor (qrels such as 0.5 / 1.5 are refused "
                             "otherwise, with the line named; nDCG is unchanged by a common scale).")
    dedupe_docs: bool = param(False, cli="--dedupe-docs", flag=True,
                              help="Count each distinct document text once (copies collapse to the smallest id, judged "
                              "with their highest grade); without it, duplicates are kept and counted in a warning.")
    ignore_identical_ids: bool = param(True, cli="--ignore-identical-ids/--keep-identical-ids",
                                       help="Leave out a document whose id equals the query id (BEIR's default).")
    max_docs: int | None = param(None, min=2, cli="--max-docs",
                                 help="Subsample the corpus (documents relevant to kept queries stay).")
    max_queries: int | None = param(None, min=1, cli="--max-queries", help="Subsample each split's queries.")
    k: int = param(100, min=10, cli="--depth",
                   help="Depth k of the evaluated runs (>= 10; Recall@100 needs 100).")
    grids: tuple[tuple[str, tuple[float, ...]], ...] = ()
    engine: Engine = param("local", cli="--engine",
                           help="Where to embed: local (this process) or ray (a Ray cluster through Ray Data; pip "
                           "install 'normscope[ray]'; see docs/scale.md).")
    address: str | None = param(None, cli="--address",
                                help="Ray cluster to use with --engine ray (auto, host:port, ray://host:10001); "
                                "default: start a local one.")
    workers: int | None = param(None, min=1, cli="--workers",
                                help="Encoder actors with --engine ray (default: one per GPU with --device cuda, else "
                                "one per CPU).")
    agreement_model: str | None = param(None, cli="--agreement-model",
                                        help="A second model: the QPP signal model_agreement, the Jaccard overlap of "
                                        "its cosine top-10 and this model's for each query, joins the QPP table and "
                                        "the incremental study (embeds the corpus again; default off).")
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
            raise InputError(f"{said('n_boot')} must be >= 10, got {self.resampling.n_boot}")

    def options(self, base: Request | None = None, omit: tuple[str, ...] = ()) -> list[str]:
        """:meth:`Request.options`, then each fixed parameter as ``--alpha=V`` / ``--beta=V``."""
        return super().options(base, omit) + [f"--{PARAM_NAMES[s]}={v!r}" for s, v in self.params]


@dataclasses.dataclass(frozen=True)
class CalibrateRequest(Request):
    """A calibrator of P(relevant) fitted and thresholded on train queries, measured on held-out ones
    (:func:`normscope.extensions.calibrate.run_calibrate`), or a fitted one applied elsewhere (``apply``).

    Attributes
    ----------
    dataset : str or None
        A BEIR directory, ``scifact`` / ``nfcorpus``, or ``hf:BeIR/<name>``; or instead ``run_file`` (a cosine
        run: TREC text or a parquet) with ``qrels_file``.
    signals : tuple of str or None
        Features of the map (:data:`normscope.retrieval.qpp.QPP_SIGNALS`); with ``apply``, the calibrator's. None:
        the default, :data:`DEFAULT_CALIBRATE_SIGNALS` (``top1_score``, ``margin`` and the query's raw norm
        ``query_norm``); the query norm is left out, with a note, where the input cannot give it (a run file
        without a ``query_norm`` column, or normalised vectors). Named explicitly, a signal the input cannot
        give is refused.
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

    COMMAND = ("normscope", "calibrate")

    dataset: str | None = param(None, cli="--dataset",
                                help="BEIR directory, scifact or nfcorpus (docs/data.md), or hf:BeIR/<name>.")
    run_file: str | None = param(None, cli="--run",
                                 help="Instead of --dataset: a cosine run (TREC run text, or the -o parquet of "
                                 "`normscope retrieval` / `index search`), with --qrels and --model.")
    qrels_file: str | None = param(None, cli="--qrels", help="Judgements of --run (BEIR TSV or TREC qrels).")
    signals: tuple[str, ...] | None = param(None, cli="--signal",
                                            help="Signal of the map (repeatable or a comma list; default top1_score, "
                                            "margin and query_norm, the query's raw norm, which is left out with a note "
                                            "where the input has no raw norms): query_length, query_norm, top1_score, "
                                            "margin, nqc, wig, smv, sigma_k, sigma_max, top_doc_norm, doc_norm_spread.")
    method: Literal["isotonic", "platt"] = param("isotonic", cli="--method",
                                                 help="isotonic or platt (CalibratedClassifierCV, cross-fitted).")
    target_k: int = param(1, min=1, max=100, cli="--target-k",
                          help="1: P(the top-1 is relevant); K: P(some document of the top K is relevant).")
    fit_split: str | None = param("train", cli="--fit-split",
                                  help="Split of the fit and calibration queries ('cv': cut the evaluation split "
                                  "40/30/30 into fit, calibration, held-out).")
    split: str = param("test", cli="--split", help="Held-out split.")
    precision_target: float = param(0.8, above=0.0, below=1.0, cli="--precision-target",
                                    help="Target precision 1 - alpha of the thresholds.")
    delta: float = param(0.1, above=0.0, below=1.0, cli="--delta",
                         help="The Learn-then-Test guarantee holds with probability 1 - delta.")
    answer_at: tuple[float, ...] = param((), cli="--answer-at",
                                         help="Also report 'answer only when P(relevant) >= P' at these P (repeatable "
                                         "or a comma list).")
    keep_k: int = param(10, min=1, max=100, cli="--keep-k",
                        help="Documents per query the document threshold considers.")
    calibration_fraction: float = param(0.5, above=0.0, below=1.0, cli="--calibration-fraction",
                                        help="Share of the fitting split's queries kept for choosing thresholds.")
    apply: str | None = param(None, cli="--apply",
                              help="Evaluate this calibrator file on --dataset/--split instead of fitting one (shift).")
    max_docs: int | None = param(None, min=2, cli="--max-docs",
                                 help="Subsample the corpus (documents relevant to kept queries stay).")
    max_queries: int | None = param(None, min=1, cli="--max-queries", help="Subsample each split's queries.")
    embedding: Embedding = param(Embedding(), omit=("junk",))
    resampling: Resampling = param(Resampling(n_boot=1000), omit=("n_perm",))

    def __post_init__(self) -> None:
        super().__post_init__()
        if (self.dataset is None) == (self.run_file is None):
            raise InputError("give --dataset, or --run with --qrels")
        if (self.run_file is None) != (self.qrels_file is None):
            raise InputError("give a run file and its qrels together")
        if self.resampling.n_boot < 10:
            raise InputError(f"{said('n_boot')} must be >= 10, got {self.resampling.n_boot}")
        bad = [t for t in self.answer_at if not 0 <= t <= 1]
        if bad:
            raise InputError(f"a threshold on P(relevant) must lie in [0, 1], got {bad[0]}")
