"""Norm-aware retrieval and calibration of the norm as a confidence signal.

- :mod:`normscope.scoring` (a core module, shared with the similarity stage and the indexes): cosine, dot,
  inverse-norm discount, power family; exact folding.
- :mod:`~normscope.retrieval.search`: faiss exact search on folded vectors, re-ranking, the tie rule.
- :mod:`~normscope.data.beir`: BEIR directory / hub loaders; :mod:`~normscope.retrieval.trec`:
  TREC-style (original NFCorpus) to BEIR conversion.
- :mod:`~normscope.retrieval.evaluate`: trec_eval metrics (pytrec_eval) of the run's own order, paired tests and CIs,
  parameter fitting.
- :mod:`~normscope.retrieval.strata`: pre-specified strata of the per-query gain, Holm-corrected.
- :mod:`~normscope.retrieval.calibration`: ECE / AURC / AUROC CIs; :mod:`~normscope.retrieval.confidence`:
  the confidence signals, their fixed-direction maps and the calibration study.
- :mod:`~normscope.retrieval.mteb_model`: the MTEB 2.x wrapper.
- :func:`run_retrieval`: the whole study on one dataset (what ``normscope retrieval`` runs), returning
  a :class:`RetrievalResult`; :mod:`~normscope.retrieval.figures`: its figures.

The tools built on it for users (approximate indexes, the saved calibrator and ``normscope calibrate``,
sentence-transformers similarities such as ``norm_aware_similarity``) are in :mod:`normscope.extensions`.
"""

from normscope.data.beir import BeirDataset, load_beir, load_beir_hub, load_qrels
from normscope.retrieval.calibration import aurc, ece, reliability_data, risk_coverage
from normscope.retrieval.confidence import evaluate_signals
from normscope.retrieval.evaluate import METRICS, compare_to_baseline, evaluate_run, fit_parameter, per_query_scores
from normscope.retrieval.figures import plot_reliability, plot_risk_coverage
from normscope.retrieval.mteb_model import NormAwareMTEBModel, evaluate_mteb
from normscope.retrieval.pipeline import run_retrieval
from normscope.retrieval.result import RetrievalResult
from normscope.scoring import SCORERS, fold_documents, fold_queries, score
from normscope.retrieval.search import TIE_RULE, FoldedIndex, brute_force_search, exact_search, order_run, rerank
from normscope.retrieval.trec import convert_trec

__all__ = [
    "SCORERS",
    "METRICS",
    "TIE_RULE",
    "score",
    "fold_documents",
    "fold_queries",
    "FoldedIndex",
    "exact_search",
    "brute_force_search",
    "rerank",
    "order_run",
    "BeirDataset",
    "load_beir",
    "load_beir_hub",
    "load_qrels",
    "convert_trec",
    "evaluate_run",
    "per_query_scores",
    "compare_to_baseline",
    "fit_parameter",
    "ece",
    "aurc",
    "risk_coverage",
    "reliability_data",
    "evaluate_signals",
    "NormAwareMTEBModel",
    "evaluate_mteb",
    "run_retrieval",
    "RetrievalResult",
    "plot_reliability",
    "plot_risk_coverage",
]
