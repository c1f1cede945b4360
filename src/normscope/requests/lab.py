"""What ``normscope lab --encoder table|mlp`` runs (:class:`LabRequest`): checked once, at construction."""

from __future__ import annotations

import dataclasses
from typing import Literal

from normscope.errors import InputError
from normscope.requests import Request, param

__all__ = ["LabRequest", "LabEncoder", "LabData", "Optimizer", "Estimator"]

#: The small labs' encoders: a free embedding table (k=1) or a two-tower bias-free ReLU MLP (k=2).
LabEncoder = Literal["table", "mlp"]
#: Their pair data: controlled ambiguity, or WordNet 3.0 nouns.
LabData = Literal["synthetic", "wordnet"]
#: Optimizers, all with exactly decoupled weight decay (:mod:`normscope.lab.optim`).
Optimizer = Literal["sgd", "momentum", "adamw"]
#: How heat and drift are measured: virtual batches at snapshot states, or the training trajectory.
Estimator = Literal["snapshot", "trajectory"]


@dataclasses.dataclass(frozen=True)
class LabRequest(Request):
    """A small contrastive model trained with per-item tracking (:func:`normscope.lab.run_lab`).

    None values take the per-encoder defaults of :mod:`normscope.lab.optim` and :mod:`normscope.lab.run`
    (table SGD: eta = 1, lambda = 1e-3, 12,000 steps with 4,000 burn-in, snapshot estimator with 32 states x
    100 batches; MLP: 8,000 / 3,000 steps, trajectory estimator). Sizes follow docs/theory.md 7A.

    Attributes
    ----------
    encoder, dataset, optimizer, estimator
    lr, weight_decay : float or None
        eta and lambda.
    steps, burn_in : int or None
        Total steps and the steps before the measurement window (``burn_in < steps``).
    snapshots, probe_batches : int or None
        S states and K virtual batches per state (snapshot estimator).
    n_items, n_concepts, dim, tau, batch_size, beta, hidden, input_dim : numbers
        N, concepts (synthetic), d, temperature, B, momentum coefficient, MLP widths.
    record_every : int or None
        Trajectory recording interval (default ``steps // 400``).
    track : bool
        False trains without tracking (the speed benchmark): no agreement figures then.
    seed : int
        Seeds data, initialisation and batches.
    """

    encoder: LabEncoder = "table"
    dataset: LabData = "synthetic"
    optimizer: Optimizer = "sgd"
    lr: float | None = param(None, above=0.0)
    weight_decay: float | None = param(None, min=0.0)
    steps: int | None = param(None, min=2)
    burn_in: int | None = param(None, min=0)
    estimator: Estimator | None = None
    snapshots: int | None = param(None, min=1)
    probe_batches: int | None = param(None, min=1)
    n_items: int = param(256, min=4)
    n_concepts: int = param(32, min=1)
    dim: int = param(16, min=1)
    tau: float = param(0.1, above=0.0)
    batch_size: int = param(64, min=2)
    beta: float = param(0.9, min=0.0, below=1.0)
    hidden: int = param(64, min=1)
    input_dim: int = param(32, min=1)
    record_every: int | None = param(None, min=1)
    track: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps is not None and self.burn_in is not None and self.burn_in >= self.steps:
            raise InputError(f"--burn-in must be < --steps, got {self.burn_in} >= {self.steps}")

    def argv(self) -> list[str]:
        """``normscope lab ...`` with the settings the command exposes (the others must be their defaults)."""
        out = ["normscope", "lab", "--encoder", self.encoder, "--optimizer", self.optimizer, "--dataset", self.dataset,
               "--seed", str(self.seed)]
        for flag, value in (("--lr", self.lr), ("--weight-decay", self.weight_decay), ("--steps", self.steps),
                            ("--burn-in", self.burn_in), ("--estimator", self.estimator),
                            ("--snapshots", self.snapshots), ("--probe-batches", self.probe_batches)):
            if value is not None:
                out += [flag, str(value)]
        return out
