"""The training lab: watch embedding norms settle at the equilibrium of Theorem 1 (docs/theory.md).

Small contrastive models (free embedding table, two-tower bias-free ReLU MLP) trained with
SGD, heavy-ball momentum or AdamW (all with exactly decoupled decay) on synthetic pairs with
controlled ambiguity or on WordNet 3.0 nouns, with per-item tracking of the norm R, heat
Sigma^2, drift D~ and the predicted R_eq (E7): :func:`run_lab`.

A pretrained transformer (the bundled all-MiniLM-L6-v2 by default) trained further on real
pairs, with a step-0 prediction of each held-out probe item's R_eq and per-step tracking:
:func:`run_transformer_lab`. The decisive design (a small BERT trained to stationarity under the
theorem's own conditions, issue 27): :func:`run_decisive_design`.
"""

from normscope.lab.data import PairData, synthetic_data, wordnet_data
from normscope.lab.decisive import DESIGNS, DesignSizes, run_decisive_design
from normscope.lab.figures import plot_optimizer_comparison, plot_predicted_vs_final, plot_transformer_trajectories
from normscope.lab.optim import SGD, AdamW, Momentum, make_optimizer
from normscope.lab.result import DecisiveResult, LabResult, TransformerLabResult
from normscope.lab.run import GATE, plot_predicted_vs_observed, plot_trajectories, run_lab
from normscope.requests.lab import LabRequest, TransformerLabRequest
from normscope.lab.trajectory import TrajectoryRecord, trajectory_estimates
from normscope.lab.transformer import TRANSFORMER_DEFAULTS, run_transformer_lab

__all__ = [
    "run_lab",
    "LabRequest",
    "TransformerLabRequest",
    "LabResult",
    "GATE",
    "plot_trajectories",
    "plot_predicted_vs_observed",
    "run_transformer_lab",
    "TransformerLabResult",
    "TRANSFORMER_DEFAULTS",
    "run_decisive_design",
    "DecisiveResult",
    "DesignSizes",
    "DESIGNS",
    "TrajectoryRecord",
    "trajectory_estimates",
    "plot_transformer_trajectories",
    "plot_predicted_vs_final",
    "plot_optimizer_comparison",
    "PairData",
    "synthetic_data",
    "wordnet_data",
    "SGD",
    "Momentum",
    "AdamW",
    "make_optimizer",
]
