"""The frozen-tower arm: does ambiguity set heat, and heat the norm, on real text? (issue 35 item 3)

Free vectors for WordNet 3.0 nouns (``per_group`` each with 1, 2, 3, 4 noun senses,
:mod:`normscope.lab.tower_data`) are trained with the symmetric InfoNCE loss (E10) against the frozen
text tower's embeddings of their glosses (the bundled all-MiniLM-L6-v2 by default, computed once through
the embedding cache). Each of a noun's senses gives one positive gloss, so a noun with more senses is
pulled towards several directions at once: conflicting gradients, hence more heat (docs/theory.md
section 5). The noun side is a free table (k = 1): the theorem's assumptions A1-A3 hold exactly, the
drift is zero (tangency) and Theorem 1 predicts each noun's norm with no fitted constant (E2, E7 with
D~ = 0):

    R_eq^4 = Sigma^2 / (2c),   Sigma^2 = eta^2 R^2 E_b ||g_b||^2,   2c = 1 - (1 - eta lambda)^2.

Design (:data:`TOWER_SIZES`; the same initial vectors and batch sequence in every run):

- **SGD** (the test): eta = 1, lambda = 5e-4 (eta lambda = 5e-4, relaxation time 1/(4 eta lambda) =
  500 steps), ``burn_in`` steps, then a window of ``window`` steps over which every noun's norm is
  tracked at every step; the observed norm is the window's time-RMS ``R-bar = sqrt(<R^2>_t)``.
- **Heat from probe batches at the end**: K fresh batches at the final state, per noun
  ``Sigma^2 = eta^2 R^2 mean_b ||g_b||^2`` (a noun absent from a batch has ``g_b = 0``); drift
  ``D~ = -eta mean_b <z, g_b>`` (zero up to rounding); R_eq from (E7) with the exact free-vector c.
- **Checks**: stationarity (:func:`normscope.lab.stationarity.classify_window` on the window's halves,
  and the relative change of mean R between them); the (E1) balance over the window,
  ``eta^2 sum_t ||g_t||^2 / (2c sum_t R_t^2)`` (1 at stationarity; exactly
  ``1 + (R_end^2 - R_start^2) / (2c sum_t R_t^2)`` by telescoping (E1)); mean |R_eq - R-bar| / R-bar with a
  bootstrap CI over nouns and blocks of probe batches; Pearson; a permutation null that gives each noun
  another noun's heat; mean R by number of senses; Spearman of heat with the number of senses.
- **Controls** (each must miss the SGD form, or the test has no power): AdamW (eta 1e-2, lambda 5e-2),
  predicted with the SGD formula; heavy-ball momentum (beta 0.9, eta 0.1, lambda 5e-3: eta/(1 - beta) and
  eta lambda equal SGD's) predicted without the (E12) correction (and with it, which should hold); SGD with
  no decay (every norm grows, nothing is stationary).

Deterministic given the seed; the items are processed in a canonical order (sorted by name), so permuting
the input nouns permutes every per-item output and leaves the summary unchanged. Resumable: with a
``directory`` each run writes an atomic checkpoint every ``checkpoint_every`` steps and its record when
finished (keyed by a hash of its settings); a rerun continues or skips.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import tempfile
import time
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import torch

from normscope import theory
from normscope._progress import Tracker
from normscope.errors import InputError
from normscope.lab.optim import make_optimizer
from normscope.lab.stationarity import classify_window
from normscope.lab.tower_core import batch_grads, draw_batches, item_moments, sum_rows
from normscope.lab.tower_data import TowerData, tower_data
from normscope.results import StageResult, summary_field

__all__ = ["TowerSizes", "TOWER_SIZES", "TOWER_RUNS", "TowerRun", "TowerLabResult", "run_tower_lab", "train_run",
           "probe_heat", "predict", "GATE_REL", "TAU", "BATCH_SIZE", "R0"]

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


def _f(label: str, unit: str = ""):
    return summary_field(label, unit=unit, default=None)


@dataclasses.dataclass
class TowerLabResult(StageResult):
    """Outcome of :func:`run_tower_lab` (``normscope lab --encoder tower``).

    Attributes
    ----------
    items : pandas.DataFrame
        One row per noun, in the input order: ``name, senses, r_obs, r_final, heat, heat_se, drift, r_eq,
        rel_error, balance`` of the SGD run, then the controls' ``rel_error_adamw``,
        ``rel_error_momentum_uncorrected``, ``rel_error_momentum``, ``growth_nodecay`` (R_end / R at the window's
        start, minus 1).
    trajectories : pandas.DataFrame
        ``run, step, senses, r_mean`` (mean norm per group over each run).
    timings : dict
        Seconds (``embed_s``, per run ``train_s``/``probe_s``, ``steps_per_s``, ``wall_s``, ``cpu_s``), apart.
    """

    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items", "trajectories", "timings")

    encoder: str = _f("encoder")
    model: str = _f("frozen tower")
    size: str = _f("size")
    n_items: int = _f("nouns", "items")
    n_glosses: int = _f("glosses")
    dim: int = _f("dimension d")
    tau: float = _f("temperature \u03c4")
    batch_size: int = _f("batch size B")
    seed: int = _f("seed")
    lr: float = _f("learning rate \u03b7")
    weight_decay: float = _f("weight decay \u03bb")
    burn_in: int = _f("burn-in", "steps")
    window: int = _f("window", "steps")
    probe_batches: int = _f("probe batches K")
    relaxation_steps: float = _f("relaxation time 1/(4 \u03b7 \u03bb)", "steps")
    stationary: bool = _f("SGD window stationary")
    stationarity: dict = _f("stationarity of the SGD window")
    mean_r_change: float = _f("mean R, second vs first half of the window")
    balance: float = _f("(E1) balance \u03b7\u00b2\u03a3||g||\u00b2 / (2c \u03a3R\u00b2)")
    balance_identity_residual: float = _f("(E1) telescoping identity, largest residual")
    mean_abs_rel_error: float = _f("mean |R_eq - R-bar| / R-bar")
    mean_abs_rel_error_ci: list = _f("95% CI")
    median_rel_error: float = _f("median (R_eq - R-bar) / R-bar")
    pearson: float = _f("Pearson(R_eq, R-bar)")
    pearson_ci: list = _f("95% CI")
    spearman: float = _f("Spearman(R_eq, R-bar)")
    null: dict = _f("heat-permutation null")
    spearman_heat_senses: float = _f("Spearman(heat, senses)")
    spearman_heat_senses_ci: list = _f("95% CI")
    max_abs_drift_over_heat: float = _f("max |D~| R^2 / Sigma^2")
    groups: list = _f("by number of senses")
    controls: dict = _f("controls")
    claim: dict = _f("scorecard row")
    caveats: list = _f("caveats")
    items: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    trajectories: pd.DataFrame = dataclasses.field(default_factory=pd.DataFrame)
    timings: dict = dataclasses.field(default_factory=dict)


# --------------------------------------------------------------------------------------------------- training
def _atomic_savez(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _opt_arrays(opt) -> dict:
    """The optimizer's state as numpy arrays (``opt_<key>_<i>``, ``opt_<key>``)."""
    out = {}
    for key, val in opt.state_dict().items():
        if isinstance(val, list):
            for i, t in enumerate(val):
                out[f"opt_{key}_{i}"] = t.numpy().copy()
        elif val is not None:
            out[f"opt_{key}"] = np.asarray(val)
    return out


def _load_opt(opt, arrays) -> None:
    state: dict = {}
    for name in arrays.files:
        if not name.startswith("opt_"):
            continue
        parts = name[4:].rsplit("_", 1)
        if len(parts) == 2 and parts[1].isdigit():
            state.setdefault(parts[0], []).append((int(parts[1]), torch.from_numpy(arrays[name].copy())))
        else:
            state[name[4:]] = int(arrays[name])
    opt.load_state_dict({k: [t for _, t in sorted(v)] if isinstance(v, list) else v for k, v in state.items()})


@dataclasses.dataclass
class _State:
    """A run's state at a chunk boundary (what a checkpoint holds)."""

    step: int
    table: np.ndarray
    sum_r2: np.ndarray  # (2, N): sum over each half of the window of R_t^2 (before step t)
    g2: np.ndarray  # (N,): eta^2 sum_t ||s_t||^2 over the window (the step's direction)
    r2_start: np.ndarray  # (N,): R^2 at the window's first step
    loss: np.ndarray  # (chunks,): mean training loss per chunk
    traj: np.ndarray  # (chunks + 1, N): R^2 at each chunk boundary (the trajectories figure)

    def track(self, first: bool, half: int, run: TowerRun, rows, summed, direction) -> None:
        """Accumulate one window step, before the update: R_t^2 into its half, eta^2 ||s_t||^2 per noun."""
        r2 = (self.table * self.table).sum(axis=1)
        if first:
            self.r2_start = r2
        self.sum_r2[half] += r2
        if run.optimizer == "sgd":  # the step's direction is the gradient: nonzero on the batch's rows only
            self.g2[rows] += run.eta**2 * (summed * summed).sum(axis=1)
        else:
            self.g2 += run.eta**2 * (direction * direction).sum(axis=1)


def _init_state(n: int, d: int, seed: int, n_chunks: int) -> _State:
    z = np.random.default_rng([seed, 0]).standard_normal((n, d))
    z *= R0 / np.linalg.norm(z, axis=1, keepdims=True)
    traj = np.full((n_chunks + 1, n), np.nan)
    traj[0] = R0**2
    return _State(0, z, np.zeros((2, n)), np.zeros(n), np.full(n, np.nan), np.full(n_chunks, np.nan), traj)


def _spec_key(run: TowerRun, data: TowerData, v: np.ndarray, sizes: TowerSizes, seed: int, tau: float,
              batch: int) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([dataclasses.asdict(run), data.names, data.senses.tolist(), data.indices.tolist(),
                         dataclasses.asdict(sizes), seed, tau, batch, R0, CHUNK]).encode())
    h.update(np.ascontiguousarray(v).tobytes())
    return h.hexdigest()[:16]


def train_run(run: TowerRun, data: TowerData, v: np.ndarray, sizes: TowerSizes, *, seed: int = 0, tau: float = TAU,
              batch_size: int = BATCH_SIZE, directory: Path | None = None, checkpoint_every: int = 4000,
              stop_after: int | None = None, bar=None, num_threads: int | None = 1) -> dict:
    """Train the nouns' free vectors for ``burn_in + window`` steps with one optimizer, tracking every norm.

    Batch t is drawn from the seed ``[seed, 1, t // CHUNK]`` (the same sequence for every run: common random
    numbers); the initial vectors from ``[seed, 0]``. Each step: the closed-form InfoNCE gradient of the batch's
    noun slots (:func:`normscope.lab.tower_core.batch_grads`), summed per noun, then ``theta <- (1 - eta lambda)
    theta - eta s_t`` on the whole table (:mod:`normscope.lab.optim`).

    Parameters
    ----------
    run : TowerRun
    data : TowerData
        In canonical order (as :func:`run_tower_lab` passes it).
    v : ndarray of shape (G, d), float64
        Unit gloss embeddings.
    sizes : TowerSizes
    seed : int, keyword-only
    tau, batch_size : keyword-only
    directory : Path, optional, keyword-only
        Where the checkpoint (``<run>-<key>.ckpt.npz``) and the finished record (``<run>-<key>.npz``) go; a
        finished record is read back instead of training, a checkpoint continued.
    checkpoint_every : int, keyword-only
        Steps between checkpoints (rounded to :data:`CHUNK`).
    stop_after : int, optional, keyword-only
        Stop (after writing a checkpoint) once this many steps are done: for the resume test.
    bar : Tracker, optional, keyword-only
    num_threads : int or None, keyword-only
        torch and BLAS threads inside the call (restored after; None leaves them alone).

    Returns
    -------
    dict
        ``table`` (N, d) final vectors, ``sum_r2`` (2, N), ``g2`` (N,), ``r2_start`` (N,), ``loss`` (chunks,),
        ``traj`` (chunks + 1, N), ``train_s`` (seconds of this call), ``resumed`` (bool); None when stopped early.
    """
    with _threads(num_threads):
        return _train_run(run, data, v, sizes, seed=seed, tau=tau, batch_size=batch_size, directory=directory,
                          checkpoint_every=checkpoint_every, stop_after=stop_after, bar=bar)


def _train_run(run, data, v, sizes, *, seed, tau, batch_size, directory, checkpoint_every, stop_after, bar) -> dict:
    """:func:`train_run`'s body (threads already set)."""
    steps = sizes.burn_in + sizes.window
    if sizes.burn_in % CHUNK or sizes.window % (2 * CHUNK):
        raise InputError(f"burn_in must be a multiple of {CHUNK} and window of {2 * CHUNK}")
    n, d = data.n_items, v.shape[1]
    n_chunks = steps // CHUNK
    key = _spec_key(run, data, v, sizes, seed, tau, batch_size)
    final = ckpt = None
    if directory is not None:
        final = Path(directory) / f"{run.name}-{key}.npz"
        ckpt = Path(directory) / f"{run.name}-{key}.ckpt.npz"
        if final.exists():
            with np.load(final) as f:
                out = {k: f[k] for k in ("table", "sum_r2", "g2", "r2_start", "loss", "traj")}
            if bar is not None:
                bar.update(bar.done + steps)
            return {**out, "train_s": 0.0, "resumed": True}
    kw = {"beta": run.beta} if run.optimizer == "momentum" else {}
    opt = make_optimizer(run.optimizer, run.eta, run.lam, **kw)
    st = _init_state(n, d, seed, n_chunks)
    resumed = False
    if ckpt is not None and ckpt.exists():
        with np.load(ckpt) as f:
            st = _State(int(f["step"]), f["table"].copy(), f["sum_r2"].copy(), f["g2"].copy(), f["r2_start"].copy(),
                        f["loss"].copy(), f["traj"].copy())
            _load_opt(opt, f)
        resumed = True
        if bar is not None:
            bar.update(bar.done + st.step)
    t0 = time.perf_counter()
    zt = torch.from_numpy(st.table)
    half = sizes.burn_in + sizes.window // 2
    every = max(CHUNK, checkpoint_every // CHUNK * CHUNK)
    while st.step < steps:
        c = st.step // CHUNK
        nouns, glosses = draw_batches(np.random.default_rng([seed, 1, c]), CHUNK, batch_size, data.indptr, data.indices)
        losses = np.empty(CHUNK)
        for j in range(CHUNK):
            t = st.step
            z = st.table
            grads, loss = batch_grads(z[nouns[j]][None], v[glosses[j]][None], tau, return_loss=True)
            losses[j] = loss[0]
            rows, summed = sum_rows(nouns[j], grads[0])
            g = np.zeros_like(z)
            g[rows] = summed
            s = opt.direction([torch.from_numpy(g)])
            if t >= sizes.burn_in:
                st.track(t == sizes.burn_in, int(t >= half), run, rows, summed, s[0].numpy())
            opt.apply([zt], s)
            st.step += 1
        st.loss[c] = float(losses.mean())
        st.traj[c + 1] = np.einsum("nd,nd->n", st.table, st.table)
        if bar is not None:
            bar.update(bar.done + CHUNK)
        done = st.step >= steps
        if ckpt is not None and not done and (st.step % every == 0 or (stop_after is not None and st.step >= stop_after)):
            _atomic_savez(ckpt, step=np.asarray(st.step), table=st.table, sum_r2=st.sum_r2, g2=st.g2,
                          r2_start=st.r2_start, loss=st.loss, traj=st.traj, **_opt_arrays(opt))
        if stop_after is not None and st.step >= stop_after and not done:
            return None
    out = {"table": st.table, "sum_r2": st.sum_r2, "g2": st.g2, "r2_start": st.r2_start, "loss": st.loss,
           "traj": st.traj}
    if final is not None:
        _atomic_savez(final, **out)
        if ckpt.exists():
            ckpt.unlink()
    return {**out, "train_s": time.perf_counter() - t0, "resumed": resumed}


def probe_heat(table: np.ndarray, v: np.ndarray, data: TowerData, sizes: TowerSizes, *, seed: int = 0,
               tau: float = TAU, batch_size: int = BATCH_SIZE, chunk: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Per block of probe batches and noun: sums of ``||g_b||^2`` and ``<z, g_b>`` at a frozen state.

    ``probe_batches`` fresh batches (seed ``[seed, 2, block]``, a domain no training batch uses) in ``blocks``
    equal blocks (the bootstrap resamples blocks).

    Returns
    -------
    g2, zg : ndarray of shape (blocks, N), float64
        Block means over batches of ``||g_b(i)||^2`` and ``<z_i, g_b(i)>``.
    """
    k, nb = sizes.probe_batches, sizes.blocks
    if k % nb:
        raise InputError(f"probe_batches ({k}) must be a multiple of blocks ({nb})")
    per = k // nb
    n = data.n_items
    g2 = np.zeros((nb, n))
    zg = np.zeros((nb, n))
    for b in range(nb):
        nouns, glosses = draw_batches(np.random.default_rng([seed, 2, b]), per, batch_size, data.indptr, data.indices)
        for s in range(0, per, chunk):
            a, c_, _ = item_moments(table, v, nouns[s:s + chunk], glosses[s:s + chunk], tau)
            g2[b] += a.sum(0)
            zg[b] += c_.sum(0)
    return g2 / per, zg / per


# --------------------------------------------------------------------------------------------------- analysis
def _pearson(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    a = a - a.mean(axis=axis, keepdims=True)
    b = b - b.mean(axis=axis, keepdims=True)
    return (a * b).sum(axis) / np.sqrt((a * a).sum(axis) * (b * b).sum(axis))


def predict(r_obs: np.ndarray, r2_final: np.ndarray, g2_blocks: np.ndarray, zg_blocks: np.ndarray, *, eta: float,
            c: float, heat_factor: float = 1.0, drift_factor: float = 1.0, n_boot: int = 0, n_perm: int = 0,
            seed: int = 0) -> dict:
    """Heat, drift and R_eq (E7) per noun from probe block sums, and their agreement with the observed norm.

    Parameters
    ----------
    r_obs : ndarray of shape (N,)
        Observed norms (the window's time-RMS R-bar).
    r2_final : ndarray of shape (N,)
        R^2 at the probed state.
    g2_blocks, zg_blocks : ndarray of shape (blocks, N)
        :func:`probe_heat`'s block means (equal numbers of batches per block).
    eta, c : float
        The probe step and the decay per step (the exact free row).
    heat_factor, drift_factor : float, keyword-only
        (E12) for momentum: ``1/(1-beta)^2`` and ``1/(1-beta)``; 1 otherwise.
    n_boot, n_perm : int, keyword-only
        Bootstrap resamples (nouns and probe blocks, both with replacement) and permutations of the null
        (another noun's heat, each noun keeping its own R-bar).
    seed : int, keyword-only

    Returns
    -------
    dict
        ``heat, heat_se, drift, r_eq, rel`` (arrays, N), ``mean_abs_rel_error`` (+ ``_ci``),
        ``median_rel_error``, ``pearson`` (+ ``_ci``), ``spearman``, ``null`` (``median``, ``p``, ``p_above``,
        ``n_perm``), ``max_abs_drift_over_heat``.
    """
    from scipy import stats

    nb, n = g2_blocks.shape
    heat = heat_factor * eta**2 * r2_final * g2_blocks.mean(0)
    drift = -drift_factor * eta * zg_blocks.mean(0)
    r_eq = theory.equilibrium_radius(drift, heat, c=c)
    rel = (r_eq - r_obs) / r_obs
    block_heat = heat_factor * eta**2 * r2_final * g2_blocks
    heat_se = block_heat.std(0, ddof=1) / math.sqrt(nb) if nb > 1 else np.full(n, np.nan)
    out = {"heat": heat, "heat_se": heat_se, "drift": drift, "r_eq": r_eq, "rel": rel,
           "mean_abs_rel_error": float(np.mean(np.abs(rel))), "median_rel_error": float(np.median(rel)),
           "pearson": float(_pearson(r_eq, r_obs)) if np.ptp(r_eq) > 0 and np.ptp(r_obs) > 0 else None,
           "spearman": float(stats.spearmanr(r_eq, r_obs)[0]) if np.ptp(r_eq) > 0 and np.ptp(r_obs) > 0 else None,
           "max_abs_drift_over_heat": float(np.max(np.abs(drift) * r2_final / np.where(heat > 0, heat, np.inf))),
           "mean_abs_rel_error_ci": None, "pearson_ci": None, "null": None}
    rng = np.random.default_rng([seed, 3])
    if n_boot:
        counts = rng.multinomial(nb, np.full(nb, 1.0 / nb), size=n_boot)  # (n_boot, nb)
        hb = heat_factor * eta**2 * r2_final * (counts @ g2_blocks) / nb  # (n_boot, N)
        db = -drift_factor * eta * (counts @ zg_blocks) / nb
        items = rng.integers(0, n, size=(n_boot, n))
        reqb = theory.equilibrium_radius(np.take_along_axis(db, items, 1), np.take_along_axis(hb, items, 1), c=c)
        robs = r_obs[items]
        mar = np.abs((reqb - robs) / robs).mean(1)
        pr = _pearson(reqb, robs)
        out["mean_abs_rel_error_ci"] = [float(x) for x in np.percentile(mar, [2.5, 97.5])]
        pr = pr[np.isfinite(pr)]
        out["pearson_ci"] = [float(x) for x in np.percentile(pr, [2.5, 97.5])] if pr.size else None
    if n_perm:
        perm = np.argsort(rng.random((n_perm, n)), axis=1)
        reqp = theory.equilibrium_radius(drift[perm], heat[perm], c=c)
        nul = np.abs((reqp - r_obs) / r_obs).mean(1)
        t = out["mean_abs_rel_error"]
        out["null"] = {"median": float(np.median(nul)), "p": float((1 + np.sum(nul <= t)) / (n_perm + 1)),
                       "p_above": float((1 + np.sum(nul >= t)) / (n_perm + 1)), "n_perm": int(n_perm)}
    return out


def _spearman_ci(x: np.ndarray, y: np.ndarray, n_boot: int, seed: int) -> tuple[float, list | None]:
    from scipy import stats

    rho = float(stats.spearmanr(x, y)[0])
    if not n_boot:
        return rho, None
    rng = np.random.default_rng([seed, 4])
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    rx = stats.rankdata(x[idx], axis=1)
    ry = stats.rankdata(y[idx], axis=1)
    r = _pearson(rx, ry)
    r = r[np.isfinite(r)]
    return rho, ([float(v) for v in np.percentile(r, [2.5, 97.5])] if r.size else None)


def _stationarity(rec: dict, run: TowerRun, sizes: TowerSizes, batch_size: int) -> dict:
    """The toolkit's window label on the run's two halves, plus the relative change of mean R between them."""
    h = sizes.window // 2
    r2_halves = rec["sum_r2"] / h  # (2, N): each noun's mean R^2 per half
    w0 = sizes.burn_in // CHUNK
    # a free vector's R^2 relaxes in 1/(4 eta lambda) steps under SGD and heavy ball, 1/(2 eta lambda) under AdamW
    relax = 1.0 / ((2 if run.optimizer == "adamw" else 4) * run.eta * run.lam) if run.lam > 0 else math.inf
    st = classify_window(r2_halves, rec["loss"][w0:], batch_size=batch_size, burn_in=sizes.burn_in,
                         relaxation_steps=relax)
    rbar = np.sqrt(r2_halves).mean(1)
    st["mean_r_halves"] = [float(rbar[0]), float(rbar[1])]
    st["mean_r_change"] = float(rbar[1] / rbar[0] - 1.0)
    st["relaxation_steps"] = relax if math.isfinite(relax) else None
    st["relaxation_rule"] = ("1/(4 eta lambda) (SGD, heavy ball; docs/theory.md section 2), 1/(2 eta lambda) (AdamW); "
                             "the window must start one relaxation time in")
    return st


def _groups(senses, r_obs, heat, r_eq, rel) -> list[dict]:
    out = []
    for a in np.unique(senses):
        m = senses == a
        out.append({"senses": int(a), "n": int(m.sum()), "r_obs": float(r_obs[m].mean()),
                    "heat": float(heat[m].mean()) if heat is not None else None,
                    "r_eq": float(r_eq[m].mean()) if r_eq is not None else None,
                    "mean_abs_rel_error": float(np.abs(rel[m]).mean()) if rel is not None else None})
    return out


# --------------------------------------------------------------------------------------------------- entry point
def run_tower_lab(request=None, *, data: TowerData | None = None, gloss_vectors: np.ndarray | None = None,
                  encoder=None, sizes: TowerSizes | None = None, directory: Path | None = None,
                  runs: tuple[str, ...] = ("sgd", "adamw", "momentum", "nodecay"), progress: bool = False,
                  num_threads: int | None = 1) -> TowerLabResult:
    """Run the frozen-tower arm: the SGD test and its controls, the prediction, the checks and the scorecard row.

    Parameters
    ----------
    request : TowerLabRequest, optional
        :class:`normscope.requests.lab.TowerLabRequest` (model, size, seed, tau, batch size, run directory);
        default: the bundled MiniLM at ``full`` size.
    data : TowerData, optional, keyword-only
        Nouns and glosses instead of :func:`~normscope.lab.tower_data.tower_data` at the size's ``per_group``.
    gloss_vectors : ndarray of shape (G, d), optional, keyword-only
        The glosses' embeddings (normalised here) instead of the tower's (tests); ``encoder`` is then unused.
    encoder : Encoder, optional, keyword-only
        The frozen tower (default: :func:`normscope.encoders.load_encoder` of the request's model).
    sizes : TowerSizes, optional, keyword-only
        Instead of the request's size (tests).
    directory : Path, optional, keyword-only
        Resumable run directory (default the request's ``run_dir``; None: nothing written).
    runs : tuple of str, keyword-only
        Which of :data:`TOWER_RUNS` to run (``sgd`` is always run).
    progress : bool, keyword-only
    num_threads : int or None, keyword-only
        torch threads during the run (restored after).

    Returns
    -------
    TowerLabResult

    Raises
    ------
    InputError
        Bad sizes or gloss vectors of the wrong shape.
    DataError
        WordNet not found.
    ModelError
        The tower cannot be loaded.
    """
    from normscope.requests.lab import TowerLabRequest

    req = request if request is not None else TowerLabRequest()
    sz = sizes or TOWER_SIZES[req.size]
    directory = directory if directory is not None else req.run_dir
    with _threads(num_threads):
        return _run(req, sz, data=data, gloss_vectors=gloss_vectors, encoder=encoder,
                    directory=Path(directory) if directory is not None else None,
                    runs=tuple(dict.fromkeys(("sgd", *runs))), progress=progress)


@contextlib.contextmanager
def _threads(n: int | None):
    """torch and BLAS threads limited to ``n`` inside the block, restored after (the arm's matrices are tiny: with
    2 threads on a busy 2-core machine a step was 10-20x slower); a no-op for None. BLAS is limited through
    threadpoolctl (a dependency of scikit-learn) when it is importable."""
    if n is None:
        yield
        return
    old = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        try:
            from threadpoolctl import threadpool_limits  # deferred: optional at import time, installed with scikit-learn
        except ImportError:  # pragma: no cover - scikit-learn brings it
            yield
        else:
            with threadpool_limits(limits=int(n)):
                yield
    finally:
        torch.set_num_threads(old)


def _embed(req, data: TowerData, gloss_vectors, encoder) -> tuple[np.ndarray, str]:
    """Unit gloss embeddings (G, d) float64 and the tower's name."""
    if gloss_vectors is not None:
        v = np.asarray(gloss_vectors, dtype=np.float64)
        name = "given vectors"
    else:
        from normscope.encoders import DEFAULT_MODEL, encode_cached, load_encoder

        enc = encoder if encoder is not None else load_encoder(req.model or DEFAULT_MODEL)
        v = encode_cached(enc, data.glosses).astype(np.float64)
        name = getattr(enc, "name", None) or req.model or DEFAULT_MODEL
    if v.ndim != 2 or v.shape[0] != len(data.glosses):
        raise InputError(f"gloss vectors must have shape ({len(data.glosses)}, d), got {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    if not np.all(np.isfinite(v)) or np.any(norms == 0):
        raise InputError("gloss vectors must be finite and non-zero")
    return v / norms, str(name)


def _run(req, sz: TowerSizes, *, data, gloss_vectors, encoder, directory, runs, progress) -> TowerLabResult:
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    timings: dict = {}
    unknown = [r for r in runs if r not in TOWER_RUNS]
    if unknown:
        raise InputError(f"unknown run {unknown[0]!r}; choose from {', '.join(TOWER_RUNS)}")
    given = data if data is not None else tower_data(sz.per_group, seed=req.seed)
    if len(set(given.names)) != given.n_items:
        raise InputError("noun names must be distinct")
    order = np.argsort(np.array(given.names, dtype=object), kind="stable")  # canonical order: by name
    canon = given.permuted(order)
    t = time.perf_counter()
    v, model = _embed(req, canon, gloss_vectors, encoder)
    timings["embed_s"] = time.perf_counter() - t
    steps = sz.burn_in + sz.window
    bar = Tracker("lab tower", steps * len(runs), unit="steps").start() if progress else None
    recs, preds = {}, {}
    try:
        for name in runs:
            run = TOWER_RUNS[name]
            rec = train_run(run, canon, v, sz, seed=req.seed, tau=req.tau, batch_size=req.batch_size,
                            directory=directory, bar=bar)
            timings[f"{name}_train_s"] = rec["train_s"]
            recs[name] = rec
            if run.lam > 0:
                t = time.perf_counter()
                g2b, zgb = probe_heat(rec["table"], v, canon, sz, seed=req.seed, tau=req.tau, batch_size=req.batch_size)
                timings[f"{name}_probe_s"] = time.perf_counter() - t
                preds[name] = (g2b, zgb)
    finally:
        if bar is not None:
            bar.stop()
    res = _summarise(req, sz, canon, model, v, recs, preds)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    res.items = res.items.iloc[inv].reset_index(drop=True)  # back to the input order
    timings["steps_per_s"] = (steps * len(runs) / sum(timings[f"{r}_train_s"] for r in runs)
                              if all(timings[f"{r}_train_s"] > 0 for r in runs) else None)
    timings["wall_s"] = time.perf_counter() - t_wall
    timings["cpu_s"] = time.process_time() - t_cpu
    res.timings = timings
    return res


def _r_obs(rec: dict, sz: TowerSizes) -> np.ndarray:
    return np.sqrt(rec["sum_r2"].sum(0) / sz.window)


def _summarise(req, sz: TowerSizes, data: TowerData, model: str, v: np.ndarray, recs: dict, preds: dict
               ) -> TowerLabResult:
    """The SGD test's figures, the controls', the items table (canonical order) and the scorecard row."""
    from normscope.lab.claims import tower_claim_row

    run = TOWER_RUNS["sgd"]
    rec = recs["sgd"]
    r_obs = _r_obs(rec, sz)
    r2f = np.einsum("nd,nd->n", rec["table"], rec["table"])
    p = predict(r_obs, r2f, *preds["sgd"], eta=run.eta, c=run.c, n_boot=sz.n_boot, n_perm=sz.n_perm, seed=req.seed)
    st = _stationarity(rec, run, sz, req.batch_size)
    den = 2 * run.c * rec["sum_r2"]
    balance = float(rec["g2"].sum() / den.sum())
    identity = 1.0 + (r2f.sum() - rec["r2_start"].sum()) / den.sum()
    per_item_balance = rec["g2"] / den.sum(0)
    per_item_identity = 1.0 + (r2f - rec["r2_start"]) / den.sum(0)
    rho, rho_ci = _spearman_ci(p["heat"], data.senses.astype(float), sz.n_boot, req.seed)
    items = pd.DataFrame({"name": data.names, "senses": data.senses, "r_obs": r_obs, "r_final": np.sqrt(r2f),
                          "heat": p["heat"], "heat_se": p["heat_se"], "drift": p["drift"], "r_eq": p["r_eq"],
                          "rel_error": p["rel"], "balance": per_item_balance})
    controls = _controls(req, sz, data, recs, preds, items)
    caveats = [f"the observed norm is each noun's time-RMS over the window ({sz.window} steps), taken as exact; the CIs "
               "resample nouns and blocks of probe batches"]
    if not st["passed"]:
        caveats.append("the SGD window is not stationary: " + "; ".join(st["reasons"]))
    traj = []
    for name, r in recs.items():
        for c_, row in enumerate(r["traj"]):
            for a in np.unique(data.senses):
                traj.append({"run": name, "step": c_ * CHUNK, "senses": int(a),
                             "r_mean": float(np.sqrt(row[data.senses == a]).mean())})
    res = TowerLabResult(
        encoder="tower", model=model, size=req.size, n_items=data.n_items, n_glosses=len(data.glosses),
        dim=int(v.shape[1]), tau=req.tau, batch_size=req.batch_size, seed=req.seed, lr=run.eta, weight_decay=run.lam,
        burn_in=sz.burn_in, window=sz.window, probe_batches=sz.probe_batches, relaxation_steps=1 / (4 * run.eta * run.lam),
        stationary=bool(st["passed"]), stationarity=st, mean_r_change=st["mean_r_change"], balance=balance,
        balance_identity_residual=float(max(abs(balance - identity),
                                            np.max(np.abs(per_item_balance - per_item_identity)))),
        mean_abs_rel_error=p["mean_abs_rel_error"], mean_abs_rel_error_ci=p["mean_abs_rel_error_ci"],
        median_rel_error=p["median_rel_error"], pearson=p["pearson"], pearson_ci=p["pearson_ci"],
        spearman=p["spearman"], null=p["null"], spearman_heat_senses=rho, spearman_heat_senses_ci=rho_ci,
        max_abs_drift_over_heat=p["max_abs_drift_over_heat"],
        groups=_groups(data.senses, r_obs, p["heat"], p["r_eq"], p["rel"]), controls=controls, caveats=caveats,
        items=items, trajectories=pd.DataFrame(traj))
    res.claim = tower_claim_row(res.to_dict())
    return res


def _controls(req, sz: TowerSizes, data: TowerData, recs: dict, preds: dict, items: pd.DataFrame) -> dict:
    """Each control's figures (and its per-item column in ``items``)."""
    out: dict = {}
    for name in ("adamw", "momentum"):
        if name not in recs:
            continue
        run, rec = TOWER_RUNS[name], recs[name]
        r_obs = _r_obs(rec, sz)
        r2f = np.einsum("nd,nd->n", rec["table"], rec["table"])
        st = _stationarity(rec, run, sz, req.batch_size)
        plain = predict(r_obs, r2f, *preds[name], eta=run.eta, c=run.c, n_boot=sz.n_boot, seed=req.seed)
        row = {"optimizer": run.optimizer, "lr": run.eta, "weight_decay": run.lam, "role": run.role,
               "stationary": bool(st["passed"]), "mean_r_change": st["mean_r_change"],
               "mean_abs_rel_error_sgd_form": plain["mean_abs_rel_error"],
               "mean_abs_rel_error_sgd_form_ci": plain["mean_abs_rel_error_ci"],
               "median_rel_error_sgd_form": plain["median_rel_error"],
               "groups": _groups(data.senses, r_obs, None, None, None)}
        if name == "momentum":
            e12 = predict(r_obs, r2f, *preds[name], eta=run.eta, c=run.c, heat_factor=1 / (1 - run.beta) ** 2,
                          drift_factor=1 / (1 - run.beta), n_boot=sz.n_boot, seed=req.seed)
            row.update(beta=run.beta, mean_abs_rel_error_e12=e12["mean_abs_rel_error"],
                       mean_abs_rel_error_e12_ci=e12["mean_abs_rel_error_ci"], median_rel_error_e12=e12["median_rel_error"],
                       predicted_miss_without_e12=math.sqrt(1 - run.beta) - 1)
            items["rel_error_momentum_uncorrected"] = plain["rel"]
            items["rel_error_momentum"] = e12["rel"]
        else:
            items["rel_error_adamw"] = plain["rel"]
        out[name] = row
    if "nodecay" in recs:
        rec = recs["nodecay"]
        r_end = np.sqrt(np.einsum("nd,nd->n", rec["table"], rec["table"]))
        r_start = np.sqrt(rec["r2_start"])
        growth = r_end / r_start - 1
        st = _stationarity(rec, TOWER_RUNS["nodecay"], sz, req.batch_size)
        items["growth_nodecay"] = growth
        out["nodecay"] = {"optimizer": "sgd", "lr": TOWER_RUNS["nodecay"].eta, "weight_decay": 0.0,
                          "role": TOWER_RUNS["nodecay"].role, "mean_growth": float(growth.mean()),
                          "share_grown": float(np.mean(growth > 0)), "stationary": bool(st["passed"]),
                          "mean_r_change": st["mean_r_change"],
                          "what": "R at the end of the run / R at the window's start - 1, per noun (no decay: R^2 "
                                  "never decreases, E1 with lambda = 0)"}
    return out
