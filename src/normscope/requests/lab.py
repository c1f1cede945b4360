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

    COMMAND = ("normscope", "lab")

    encoder: LabEncoder = param("table", cli="--encoder", show=True,
                                help="table (free embeddings, k=1) or mlp (two-tower bias-free ReLU MLP, k=2).")
    dataset: LabData = param("synthetic", cli="--dataset", show=True,
                             help="synthetic (controlled ambiguity) or wordnet (WordNet 3.0 nouns).")
    optimizer: Optimizer = param("sgd", cli="--optimizer", show=True,
                                 help="sgd, momentum (heavy ball) or adamw; decay always decoupled.")
    lr: float | None = param(None, above=0.0, cli="--lr", help="Learning rate eta (default per encoder/optimizer).")
    weight_decay: float | None = param(None, min=0.0, cli="--weight-decay", help="Decoupled weight decay lambda.")
    steps: int | None = param(None, min=2, cli="--steps", help="Training steps (table 12000, mlp 8000).")
    burn_in: int | None = param(None, min=0, cli="--burn-in", help="Steps before the measurement window.")
    estimator: Estimator | None = param(None, cli="--estimator",
                                        help="snapshot (default for table) or trajectory (default for mlp).")
    snapshots: int | None = param(None, min=1, cli="--snapshots", help="Snapshot estimator: number of states S.")
    probe_batches: int | None = param(None, min=1, cli="--probe-batches", help="Virtual batches K per snapshot state.")
    n_items: int = param(256, min=4, cli="--n-items", help="Items N.")
    n_concepts: int = param(32, min=1, cli="--n-concepts", help="Concepts of the synthetic data.")
    dim: int = param(16, min=1, cli="--dim", help="Embedding dimension d.")
    tau: float = param(0.1, above=0.0, cli="--tau", help="InfoNCE temperature.")
    batch_size: int = param(64, min=2, cli="--batch-size", help="Batch size B.")
    beta: float = param(0.9, min=0.0, below=1.0, cli="--beta", help="Momentum coefficient (--optimizer momentum).")
    hidden: int = param(64, min=1, cli="--hidden", help="MLP hidden width.")
    input_dim: int = param(32, min=1, cli="--input-dim", help="MLP input width.")
    record_every: int | None = param(None, min=1, cli="--record-every",
                                     help="Trajectory recording interval (default steps // 400).")
    track: bool = param(True, cli="--no-track", flag=False,
                        help="Train without tracking (the speed benchmark): no agreement figures.")
    seed: int = param(0, cli="--seed", show=True, help="Seeds data, initialisation and batches.")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.steps is not None and self.burn_in is not None and self.burn_in >= self.steps:
            raise InputError(f"{said('burn_in')} must be < {said('steps')}, got {self.burn_in} >= {self.steps}")


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

    COMMAND = ("normscope", "lab", "--encoder", "transformer")

    model: str | None = param(None, cli="--model", short="-m", show=True,
                              help="Model name or path (default: the bundled all-MiniLM-L6-v2).")
    pairs: str = param("wordnet", cli="--pairs", show=True,
                       help="Training pairs: wordnet, scifact[:split], beir:DIR[:split] or a 2-column .tsv/.csv.")
    optimizer: Optimizer = param("sgd", cli="--optimizer", show=True,
                                 help="sgd, momentum (heavy ball) or adamw; decay always decoupled.")
    lr: float | None = param(None, above=0.0, cli="--lr", help="Learning rate eta (default per optimizer).")
    weight_decay: float | None = param(None, min=0.0, cli="--weight-decay", help="Decoupled weight decay lambda.")
    steps: int = param(1000, min=2, cli="--steps", show=True, help="Training steps.")
    burn_in: int | None = param(None, min=0, cli="--burn-in", help="Steps before the measurement window (steps // 2).")
    batch_size: int = param(32, min=2, cli="--batch-size", help="Pairs per step B.")
    tau: float = param(0.05, above=0.0, cli="--tau", help="InfoNCE temperature.")
    beta: float = param(0.9, min=0.0, below=1.0, cli="--beta", help="Momentum coefficient (--optimizer momentum).")
    decay_mask: Literal["all", "matrices"] = param("all", cli="--decay-mask",
                                                   help="all or matrices (no biases, no LayerNorm).")
    dropout: bool = param(False, cli="--dropout/--no-dropout", help="Train with the model's dropout.")
    probe_items: int | str = param(64, cli="--probe-items", show=True,
                                   help="N held-out items drawn from the pairs, or an items file.")
    probe_batches: int = param(32, min=2, cli="--probe-batches", show=True, help="Virtual batches K of the step-0 probe.")
    max_tokens: int | None = param(16, min=3, cli="--max-tokens",
                                   help="Keep pairs whose members have <= this many tokens.")
    precision: Precision = param("fp32", cli="--precision",
                                 help="fp32 or bf16 training forward/backward; tracking is always fp32.")
    device: str = param("cpu", cli="--device", help="Torch device (cpu, cuda, cuda:N, mps).")
    checkpoint_every: int = param(100, min=1, cli="--checkpoint-every", help="Steps between checkpoints.")
    lambda_every: int = param(50, min=1, cli="--lambda-every", help="Steps between lambda_rad measurements.")
    track: bool = param(True, cli="--no-track", flag=False, help="Train without tracking: no agreement figures.")
    resampling: Resampling = param(Resampling(n_boot=2000), omit=("n_perm",))

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.burn_in is not None and self.burn_in >= self.steps:
            raise InputError(f"{said('burn_in')} must be < {said('steps')}, got {self.burn_in} >= {self.steps}")
        if isinstance(self.probe_items, int) and self.probe_items < 3:
            raise InputError(f"{said('probe_items')} must be >= 3, got {self.probe_items}")


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

    COMMAND = ("normscope", "lab", "--encoder", "transformer", "--design", "decisive")

    size: DesignSize = param("full", cli="--size", show=True,
                             help="full (about an hour on 2 CPU cores), report (about a minute, too short to decide) "
                             "or quick.")
    pairs: str = param("wordnet", cli="--pairs", help="Training pairs (wordnet: WordNet 3.0 (term, gloss)).")
    probe_items: int | str | None = param(None, cli="--probe-items",
                                          help="P held-out probe items drawn from the pairs, or an items file.")
    seed: int = param(0, cli="--seed", help="Seeds the initialisation, the data split, every batch and the bootstraps.")
    device: str = param("cpu", cli="--device", help="Torch device (cpu, cuda, cuda:N, mps).")
    workers: int = param(1, min=1, cli="--workers",
                         help="Runs of one phase in parallel processes (results do not depend on it).")

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.probe_items, int) and self.probe_items < 3:
            raise InputError(f"{said('probe_items')} must be >= 3, got {self.probe_items}")

    def run_kwargs(self) -> dict:
        """The keyword arguments of :func:`~normscope.lab.decisive.run_decisive_design` (beside ``directory``)."""
        return {"design": self.size, "pairs": self.pairs, "probe_items": self.probe_items, "seed": self.seed,
                "device": self.device, "workers": self.workers}


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

    COMMAND = ("normscope", "lab", "--encoder", "tower")

    model: str | None = param(None, cli="--model", short="-m",
                              help="The frozen tower that embeds the glosses (default: the bundled all-MiniLM-L6-v2).")
    size: DesignSize = param("full", cli="--size", show=True,
                             help="full (64 nouns per number of senses, 8,000 + 16,000 steps), report or quick.")
    seed: int = param(0, cli="--seed", help="Seeds the nouns, the initial vectors, every batch and the resamples.")
    tau: float = param(0.2, above=0.0, cli="--tau", help="InfoNCE temperature.")
    batch_size: int = param(64, min=2, cli="--batch-size", help="(noun, gloss) pairs per batch B.")
    run_dir: str | None = param(None, cli="--run-dir", help="Resumable run directory (default: none, nothing kept).")
