"""Norm-aware retrieval and calibration of the norm as a confidence signal.

- :mod:`~normscope.retrieval.scoring`: cosine, dot, inverse-norm discount, power family; exact folding.
- :mod:`~normscope.retrieval.search`: faiss exact search on folded vectors, re-ranking.
- :mod:`~normscope.retrieval.beir`: BEIR directory / hub loaders.
- :mod:`~normscope.retrieval.evaluate`: ranx metrics, paired tests, parameter fitting.
- :mod:`~normscope.retrieval.calibration`: confidence signals, AUROC / ECE / AURC.
- :mod:`~normscope.retrieval.integrations`: sentence-transformers similarity, MTEB wrapper.
- :func:`run_retrieval`: the whole study on one dataset (what ``normscope retrieval`` runs).
"""

from normscope.retrieval.beir import BeirDataset, load_beir, load_beir_hub, load_qrels
from normscope.retrieval.calibration import aurc, ece, evaluate_signals, reliability_data, risk_coverage
from normscope.retrieval.evaluate import METRICS, compare_to_baseline, evaluate_run, fit_parameter, per_query_scores
from normscope.retrieval.integrations import NormAwareMTEBModel, norm_aware_similarity, norm_aware_similarity_pairwise
from normscope.retrieval.pipeline import plot_reliability, plot_risk_coverage, run_retrieval
from normscope.retrieval.scoring import SCORERS, fold_documents, fold_queries, score
from normscope.retrieval.search import FoldedIndex, brute_force_search, exact_search, rerank

__all__ = [
    "SCORERS",
    "METRICS",
    "score",
    "fold_documents",
    "fold_queries",
    "FoldedIndex",
    "exact_search",
    "brute_force_search",
    "rerank",
    "BeirDataset",
    "load_beir",
    "load_beir_hub",
    "load_qrels",
    "evaluate_run",
    "per_query_scores",
    "compare_to_baseline",
    "fit_parameter",
    "ece",
    "aurc",
    "risk_coverage",
    "reliability_data",
    "evaluate_signals",
    "norm_aware_similarity",
    "norm_aware_similarity_pairwise",
    "NormAwareMTEBModel",
    "run_retrieval",
    "plot_reliability",
    "plot_risk_coverage",
]
