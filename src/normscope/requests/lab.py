"""What ``normscope lab`` runs: the small labs (:class:`LabRequest`) and the transformer lab
(:class:`TransformerLabRequest`), each checked once, at construction."""

from __future__ import annotations

import dataclasses
from typing import Literal

from normscope.errors import InputError
from normscope.requests import Precision, Request, Resampling, param, said

__all__ = ["LabRequest", "TransformerLabRequest", "DecisiveRequest", "TowerLabRequest", "LabEncoder", "LabData", "Optimizer", "Estimator",
           "DesignSize"]

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
            raise InputError(f"{said('burn_in')} must be < {said('steps')}, got {self.burn_in} >= {self.steps}")

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


@dataclasses.dataclass(frozen=True)
class TransformerLabRequest(Request):
    """Continued contrastive training of a pretrained encoder, tracked (:func:`normscope.lab.run_transformer_lab`).

    Attributes
    ----------
    model : str or None
        Model name or path (None: the bundled all-MiniLM-L6-v2); a private copy is trained.
    pairs : str
        ``wordnet`` (WordNet 3.0 noun (term, gloss) pairs), ``scifact[:split]``, ``beir:DIR[:split]`` or a
        two-column file (:func:`normscope.pairs.load_pairs`).
    optimizer : {"sgd", "momentum", "adamw"}
    lr, weight_decay : float or None
        eta and lambda (None: the lab's defaults per optimizer); ``lr * weight_decay < 1``.
    steps, burn_in : int
        Training steps and the start of the measurement window (None: ``steps // 2``).
    batch_size, tau, beta : numbers
        B pairs per step, the InfoNCE temperature, the momentum coefficient.
    decay_mask : {"all", "matrices"}
    dropout : bool
        Train with the model's dropout.
    probe_items : int or str
        N held-out items drawn from the pairs, or an items file.
    probe_batches : int
        K of the step-0 probe.
    max_tokens : int or None
        Keep pairs whose members have at most this many tokens (None: all).
    precision : {"fp32", "bf16"}
        Of the training forward/backward passes (tracking is always fp32).
    device : str
    checkpoint_every, lambda_every : int
        Steps between checkpoints and between lambda_rad measurements.
    track : bool
    resampling : Resampling
        ``n_boot`` bootstrap resamples of every CI over probe items; ``seed`` of the pairs, the probe set,
        the batches and the bootstraps.
    """

    model: str | None = None
    pairs: str = "wordnet"
    optimizer: Optimizer = "sgd"
    lr: float | None = param(None, above=0.0)
    weight_decay: float | None = param(None, min=0.0)
    steps: int = param(1000, min=2)
    burn_in: int | None = param(None, min=0)
    batch_size: int = param(32, min=2)
    tau: float = param(0.05, above=0.0)
    beta: float = param(0.9, min=0.0, below=1.0)
    decay_mask: Literal["all", "matrices"] = "all"
    dropout: bool = False
    probe_items: int | str = 64
    probe_batches: int = param(32, min=2)
    max_tokens: int | None = param(16, min=3)
    precision: Precision = "fp32"
    device: str = "cpu"
    checkpoint_every: int = param(100, min=1)
    lambda_every: int = param(50, min=1)
    track: bool = True
    resampling: Resampling = Resampling(n_boot=2000)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.burn_in is not None and self.burn_in >= self.steps:
            raise InputError(f"{said('burn_in')} must be < {said('steps')}, got {self.burn_in} >= {self.steps}")
        if isinstance(self.probe_items, int) and self.probe_items < 3:
            raise InputError(f"{said('probe_items')} must be >= 3, got {self.probe_items}")

    def argv(self, model: str) -> list[str]:
        """``normscope lab --encoder transformer ...`` with every setting of this request (``model``: the name to
        print for a None model)."""
        out = ["normscope", "lab", "--encoder", "transformer", "--model", self.model or model, "--pairs", self.pairs,
               "--optimizer", self.optimizer, "--steps", str(self.steps), "--probe-items", str(self.probe_items),
               "--probe-batches", str(self.probe_batches)]
        for flag, value, default in (("--lr", self.lr, None), ("--weight-decay", self.weight_decay, None),
                                     ("--burn-in", self.burn_in, None), ("--batch-size", self.batch_size, 32),
                                     ("--tau", self.tau, 0.05), ("--decay-mask", self.decay_mask, "all"),
                                     ("--max-tokens", self.max_tokens, 16), ("--precision", self.precision, "fp32"),
                                     ("--device", self.device, "cpu")):
            if value != default:
                out += [flag, str(value)]
        if self.dropout:
            out.append("--dropout")
        return out + self.resampling.argv()


#: Sizes of the decisive transformer design (:data:`normscope.lab.decisive.DESIGNS`).
DesignSize = Literal["full", "report", "quick"]


@dataclasses.dataclass(frozen=True)
class DecisiveRequest(Request):
    """The decisive transformer design (:func:`normscope.lab.decisive.run_decisive_design`; ``normscope lab
    --encoder transformer --design decisive``).

    Attributes
    ----------
    size : {"full", "report", "quick"}
        The design's sizes (``full``: about an hour on 2 CPU cores; ``report``: about a minute, too short to
        decide, and it says so).
    pairs : str
        Training pairs (:func:`normscope.pairs.load_pairs` spec; default WordNet 3.0 (term, gloss)).
    probe_items : int, str or None
        P held-out probe items drawn from the pairs (None: the design's), or an items file.
    seed : int
        Seeds the initialisation, the data split, every batch and the bootstraps.
    device : str
    workers : int
        Runs of one phase in parallel processes (results do not depend on it).
    """

    size: DesignSize = "full"
    pairs: str = "wordnet"
    probe_items: int | str | None = None
    seed: int = 0
    device: str = "cpu"
    workers: int = param(1, min=1)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.probe_items, int) and self.probe_items < 3:
            raise InputError(f"{said('probe_items')} must be >= 3, got {self.probe_items}")

    def run_kwargs(self) -> dict:
        """The keyword arguments of :func:`~normscope.lab.decisive.run_decisive_design` (beside ``directory``)."""
        return {"design": self.size, "pairs": self.pairs, "probe_items": self.probe_items, "seed": self.seed,
                "device": self.device, "workers": self.workers}

    def argv(self) -> list[str]:
        """``normscope lab --encoder transformer --design decisive ...`` with every setting of this request."""
        out = ["normscope", "lab", "--encoder", "transformer", "--design", "decisive", "--size", self.size]
        for flag, value, default in (("--pairs", self.pairs, "wordnet"), ("--probe-items", self.probe_items, None),
                                     ("--seed", self.seed, 0), ("--device", self.device, "cpu"),
                                     ("--workers", self.workers, 1)):
            if value != default:
                out += [flag, str(value)]
        return out


@dataclasses.dataclass(frozen=True)
class TowerLabRequest(Request):
    """The frozen-tower arm (:func:`normscope.lab.tower.run_tower_lab`; ``normscope lab --encoder tower``): free
    vectors for WordNet nouns trained with InfoNCE against a frozen text tower's gloss embeddings.

    Attributes
    ----------
    model : str or None
        The frozen tower (None: the bundled all-MiniLM-L6-v2); only its gloss embeddings are used.
    size : {"full", "report", "quick"}
        :data:`normscope.lab.tower.TOWER_SIZES` (``full``: 64 nouns per number of senses, 8,000 + 16,000 steps,
        6,144 probe batches).
    seed : int
        Seeds the nouns, the initial vectors, every batch and the resamples.
    tau : float
        InfoNCE temperature (default 0.2, :data:`normscope.lab.tower.TAU`).
    batch_size : int
        (noun, gloss) pairs per batch B.
    run_dir : str or None
        Resumable run directory (None: nothing written; a rerun recomputes).
    """

    model: str | None = None
    size: DesignSize = "full"
    seed: int = 0
    tau: float = param(0.2, above=0.0)
    batch_size: int = param(64, min=2)
    run_dir: str | None = None

    def argv(self, model: str | None = None) -> list[str]:
        """``normscope lab --encoder tower ...`` with every setting of this request that differs from its default."""
        out = ["normscope", "lab", "--encoder", "tower", "--size", self.size]
        for flag, value, default in (("--model", self.model or model, None), ("--seed", self.seed, 0),
                                     ("--tau", self.tau, 0.2), ("--batch-size", self.batch_size, 64),
                                     ("--run-dir", self.run_dir, None)):
            if value != default:
                out += [flag, str(value)]
        return out
