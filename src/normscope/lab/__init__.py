"""The training lab: watch embedding norms settle at the equilibrium of Theorem 1 (THEORY.md).

Small contrastive models (free embedding table, two-tower bias-free ReLU MLP) trained with
SGD, heavy-ball momentum or AdamW (all with exactly decoupled decay) on synthetic pairs with
controlled ambiguity or on WordNet 3.0 nouns, with per-item tracking of the norm R, heat
Sigma^2, drift D~ and the predicted R_eq (E7). Entry point: :func:`run_lab`.
"""

from normscope.lab.data import PairData, synthetic_data, wordnet_data
from normscope.lab.optim import SGD, AdamW, Momentum, make_optimizer
from normscope.lab.run import GATE, LabResult, plot_predicted_vs_observed, plot_trajectories, run_lab

__all__ = [
    "run_lab",
    "LabResult",
    "GATE",
    "plot_trajectories",
    "plot_predicted_vs_observed",
    "PairData",
    "synthetic_data",
    "wordnet_data",
    "SGD",
    "Momentum",
    "AdamW",
    "make_optimizer",
]
