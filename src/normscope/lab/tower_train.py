"""The frozen-tower arm's training and probe heat (:mod:`normscope.lab.tower`): resumable runs of free noun vectors
against fixed gloss embeddings, and the heat from fresh probe batches at the end."""

import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from normscope.errors import InputError
from normscope.lab.optim import make_optimizer
from normscope.lab.tower_core import batch_grads, draw_batches, item_moments, sum_rows
from normscope.lab.tower_data import TowerData
from normscope.lab.tower_design import BATCH_SIZE, CHUNK, R0, TAU, TowerRun, TowerSizes

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
