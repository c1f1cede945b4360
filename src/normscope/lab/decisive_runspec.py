"""What a run of the decisive design is and where it lives (:mod:`normscope.lab.decisive_run` runs it): its spec and
the design's shared context, the relaxation unit, the seed domains of each phase's batches (no phase replays another's;
replicates have their own), and the keyed result files a finished run leaves (``<name>.npz`` and ``<name>.json``)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from normscope.errors import InputError
from normscope.lab.checkpoint import settings_key

__all__ = ["RunSpec", "RunContext", "load_run", "run_done", "run_key", "relaxation_time", "batch_seed",
           "PHASE_DOMAIN", "DESIGN_VERSION"]


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What one run of the design does (JSON-able; its hash keys the run's files).

    Attributes
    ----------
    name : str
        File stem under ``<design dir>/runs/``.
    kind : str
        ``pretrain``, ``grid``, ``base``, ``scaling`` or ``nodecay`` (phase of the design).
    optimizer : {"sgd", "momentum", "adamw"}
    lr, weight_decay : float
        eta and lambda (exactly decoupled decay on the design's mask).
    steps, burn_in : int
        Training steps and the first step of the measurement window.
    beta : float
        Heavy-ball coefficient (momentum only).
    start : str
        ``"init"`` (the random encoder), ``"encoder"`` (the pre-trained one) or the name of a finished run
        with ``save_final`` whose final parameters start this one.
    snapshots : tuple of int
        Steps at which the probe runs (before that step's update).
    probe_batches : int
        K fresh batches per snapshot.
    eval_steps : tuple of int
        Steps after which the held-out accuracy is measured (``steps`` = at the end).
    track, track_every, lambda_every : bool, int, int
        Tracking on/off (off: the speed benchmark's baseline and the pre-training), and its spacing.
    save_final : bool
        Keep the final parameters (``<name>.final.pt``): the pre-trained encoder, or the start of
        another run.
    decay_mask : str, optional
        theta_D of this run when it differs from the design's (the grid's mask comparison).
    equilibrate : int
        K fresh batches for the equilibrated start (0: start as loaded; see the module docstring).
    replicate : int
        0 for the design's own run; r >= 1 for a replicate of it on other batches: its training, equilibration and
        snapshot batches come from seeds of their own (:func:`batch_seed`), so the between-seed variation of a
        statistic can be measured. Left out of the spec's JSON (and hash) when 0.
    """

    name: str
    kind: str
    optimizer: str
    lr: float
    weight_decay: float
    steps: int
    burn_in: int
    beta: float = 0.9
    start: str = "encoder"
    snapshots: tuple = ()
    probe_batches: int = 0
    eval_steps: tuple = ()
    track: bool = True
    track_every: int = 4
    lambda_every: int = 100
    save_final: bool = False
    decay_mask: str | None = None
    equilibrate: int = 0
    replicate: int = 0

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["snapshots"], d["eval_steps"] = list(self.snapshots), list(self.eval_steps)
        if not self.replicate:  # the runs of design version 2 before replicates existed keep their hash
            d.pop("replicate")
        return d


@dataclasses.dataclass(frozen=True)
class RunContext:
    """What every run of one design shares.

    Attributes
    ----------
    directory : Path
        The design directory (``data.json``, ``encoder/``, ``runs/``).
    batch_size, tau : int, float
        B pairs per step and the InfoNCE temperature.
    decay_mask : str
        theta_D by name (:func:`normscope.lab.tiny_bert.decay_mask_named`).
    seed : int
    device : str
    checkpoint_every : int
    key : str
        Hash of the design's settings (a run of another design is never resumed).
    data_key : str
        Hash of the settings the data and the pre-trained encoder depend on (keys the ``pretrain`` run,
        so a design that changes only later phases reuses it).
    """

    directory: Path
    batch_size: int
    tau: float
    decay_mask: str
    seed: int
    device: str = "cpu"
    checkpoint_every: int = 500
    key: str = ""
    data_key: str = ""


def relaxation_time(eta: float, weight_decay: float, lam_per_lambda: float, optimizer: str = "sgd") -> float:
    """The relaxation unit of ``||theta_D||^2`` (and of every R^2 = s^2 rho^2) near its equilibrium, in steps.

    ``1 / (4 eta lambda_rad)`` under SGD and heavy ball with decay outside the buffer (the slope
    ``1 - 4 eta lambda`` of the (E1) map at its fixed point, docs/theory.md section 2), ``1 / (2 eta
    lambda_rad)`` under AdamW (its step does not shrink as the norm grows: ``s^2`` relaxes at the decay's
    own rate); ``lambda_rad = lambda * lam_per_lambda`` (E4). inf when not positive.
    """
    c = eta * weight_decay * lam_per_lambda
    if not c > 0:
        return math.inf
    return 1.0 / (2.0 * c) if optimizer == "adamw" else 1.0 / (4.0 * c)


def _seed(*parts) -> int:
    return int(np.random.SeedSequence([int(p) for p in parts]).generate_state(1)[0])


#: version of the design: 1 replayed the pre-training batches in every run and started at the pre-trained scale;
#: 2 (issue 35) has a seed domain per phase, equilibrated starts, the theta_D record and per-optimizer units
DESIGN_VERSION = 2

#: the seed domain of each phase's training batches (pre-training keeps the original seeds ``(seed, 1, t)``)
PHASE_DOMAIN = {"pretrain": None, "grid": 1, "base": 2, "scaling": 3, "nodecay": 4}


def batch_seed(seed: int, kind: str, t: int, replicate: int = 0) -> int:
    """The seed of training batch ``t`` of a run of phase ``kind``: one domain per phase, so no phase replays the
    batches of another (see the module docstring); a replicate ``r >= 1`` of a run has a domain of its own."""
    dom = PHASE_DOMAIN.get(kind, 9)
    if dom is None:
        return _seed(seed, 1, t)
    return _seed(seed, 1, 100 + dom, t) if not replicate else _seed(seed, 1, 100 + dom, 1000 + int(replicate), t)


def _domain(spec: RunSpec) -> tuple:
    """The seed-domain parts of a run's equilibration and snapshot batches (its phase, and its replicate when >= 1)."""
    dom = PHASE_DOMAIN.get(spec.kind) or 0
    return (dom,) if not spec.replicate else (dom, 1000 + int(spec.replicate))


#: the design's data (pairs, held-out pairs, probe items) per directory, read once per process
_DATA: dict = {}


def _data(directory: Path) -> dict:
    key = str(Path(directory).resolve())
    if key not in _DATA:
        _DATA.clear()
        _DATA[key] = json.loads((Path(directory) / "data.json").read_text())
    return _DATA[key]


def _paths(ctx: RunContext, name: str) -> dict:
    d = Path(ctx.directory) / "runs"
    return {"npz": d / f"{name}.npz", "json": d / f"{name}.json", "ckpt": d / f"{name}.ckpt",
            "final": d / f"{name}.final.pt", "progress": d / f"{name}.progress"}


def run_key(spec: RunSpec, ctx: RunContext) -> str:
    """The hash that keys a run's files: its spec and the design's settings (the data settings for ``pretrain``)."""
    return _key(spec, ctx)


def _key(spec: RunSpec, ctx: RunContext) -> str:
    return settings_key({"spec": spec.to_dict(), "design": ctx.data_key if spec.kind == "pretrain" else ctx.key})


def _record_payload(rec: dict) -> dict:
    """The record as tensors and plain lists (a checkpoint loadable with ``torch.load(weights_only=True)``)."""
    import torch

    out = {}
    for k, v in rec.items():
        if isinstance(v, np.ndarray):
            out[k] = torch.from_numpy(np.ascontiguousarray(v))
        else:
            out[k] = [torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x for x in v]
    return out


def _record_from_payload(payload: dict) -> dict:
    out = {}
    for k, v in payload.items():
        if hasattr(v, "numpy"):
            out[k] = v.numpy().copy()
        else:
            out[k] = [x.numpy().copy() if hasattr(x, "numpy") else x for x in v]
    return out


def run_done(spec: RunSpec, ctx: RunContext) -> bool:
    """True when the run's result files exist and were written by this spec and design."""
    p = _paths(ctx, spec.name)
    if not (p["npz"].is_file() and p["json"].is_file()):
        return False
    try:
        return json.loads(p["json"].read_text()).get("key") == _key(spec, ctx)
    except (OSError, ValueError):
        return False


def load_run(spec: RunSpec, ctx: RunContext) -> dict:
    """The finished run's record (numpy arrays) and its JSON (``spec``, ``timings``) as one dict.

    Raises
    ------
    InputError
        The run has not finished, or its files belong to another spec or design.
    """
    if not run_done(spec, ctx):
        raise InputError(f"run {spec.name} of this design has not finished (no matching result in "
                         f"{Path(ctx.directory) / 'runs'})")
    p = _paths(ctx, spec.name)
    with np.load(p["npz"], allow_pickle=False) as z:
        rec = {k: z[k] for k in z.files}
    meta = json.loads(p["json"].read_text())
    return {**rec, "meta": meta}


