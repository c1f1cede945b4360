"""The frozen-tower arm's design: its constants, sizes and runs (:mod:`normscope.lab.tower`)."""

import dataclasses


from normscope import theory


#: InfoNCE temperature of the arm. At tau = 0.1 the a = 1 nouns' softmax is nearly one-hot and their
#: gradients come as rare large kicks: the sparse regime of docs/theory.md C1, where the snapshot form (E3)
#: is biased (measured: mean |rel| 0.12-0.18, median -0.04 to -0.12); tau = 0.2 keeps eta lambda / p small.
TAU = 0.2
#: Pairs per batch B.
BATCH_SIZE = 64
#: Norm of every initial vector (random directions); arrival from below is fast (heat pushes out).
R0 = 0.5
#: The size bound of the claim: the free table's gate of docs/theory.md section 7 (A1-A3 hold exactly here).
GATE_REL = 0.05
#: Steps per batch chunk (one seed per chunk) and the checkpoint grain.
CHUNK = 500


@dataclasses.dataclass(frozen=True)
class TowerSizes:
    """Sizes of the frozen-tower arm.

    Attributes
    ----------
    per_group : int
        Nouns per number of senses (4 groups).
    burn_in, window : int
        Steps before the window and steps in it (multiples of :data:`CHUNK`).
    probe_batches : int
        K probe batches at the end of each run.
    blocks : int
        Blocks of probe batches resampled by the bootstrap.
    n_boot, n_perm : int
        Bootstrap resamples and permutations of the null.
    """

    per_group: int
    burn_in: int
    window: int
    probe_batches: int
    blocks: int
    n_boot: int
    n_perm: int


#: ``full``: the issue's size (64 nouns per group, 8,000 + 16,000 steps, 6,144 probe batches); ``report`` and
#: ``quick``: smaller, still 4+ relaxation times of burn-in.
TOWER_SIZES = {
    "full": TowerSizes(64, 8000, 16000, 6144, 64, 2000, 2000),
    "report": TowerSizes(32, 2000, 4000, 1024, 32, 1000, 1000),
    "quick": TowerSizes(16, 1000, 2000, 256, 16, 200, 200),
}


@dataclasses.dataclass(frozen=True)
class TowerRun:
    """One run of the arm: optimizer, eta, lambda (beta for momentum), and what it is for."""

    name: str
    optimizer: str
    eta: float
    lam: float
    beta: float = 0.9
    role: str = ""

    @property
    def c(self) -> float:
        """The exact free-vector c: half of ``1 - (1 - eta lambda)^2`` (section 4 table)."""
        return float(theory.discrete_c(self.eta, self.lam, kind="free"))


#: The test and its three controls.
TOWER_RUNS = {
    "sgd": TowerRun("sgd", "sgd", 1.0, 5e-4, role="the test: SGD with decoupled decay"),
    "adamw": TowerRun("adamw", "adamw", 1e-2, 5e-2, role="control: AdamW, the SGD form should miss"),
    "momentum": TowerRun("momentum", "momentum", 0.1, 5e-3, role="control: heavy ball, the SGD form without (E12) "
                                                                 "should miss"),
    "nodecay": TowerRun("nodecay", "sgd", 1.0, 0.0, role="control: no decay, norms should grow"),
}
