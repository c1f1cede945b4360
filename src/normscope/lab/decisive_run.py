"""One training run of the decisive transformer design: tracked, probed at snapshots, resumable.

A run (:class:`RunSpec`) starts from the design's encoder (or from the final parameters of an earlier
run), trains it with symmetric InfoNCE (E10) on the design's pairs with one of the exactly decoupled
optimizers of :mod:`normscope.lab.optim` on the design's decay mask, and records:

- the loss of every step;
- every ``track_every`` steps t, by no-grad forwards of the probe items, ``R_t^2``, ``R_{t+1}^2`` and
  the decay-free step ``Delta_t = f(theta_t - eta s_t) - z_t`` (``s_t`` the optimizer's actual
  direction) through ``<z_t, Delta_t>``, ``||Delta_t||^2`` and the decay's exact radial effect
  ``R_{t+1}^2 - ||z_t + Delta_t||^2`` (the trajectory form of docs/theory.md section 6, every tracked
  step a probe with K = 1);
- lambda_rad per unit lambda (E4, one JVP along theta_D) every ``lambda_every`` steps;
- at each snapshot step, the section-6 probe (:func:`normscope.probes.probe_moments`) with K fresh
  batches at the run's own B, tau and mask: per item and batch ``<z, a>``, ``<z, c>``, ``||a||^2``,
  and ``<z, J_x theta_D>``;
- the held-out top-1 retrieval accuracy at the ``eval_steps``;
- every step, the decayed group theta_D (``theta_d`` record, float64 sums over its tensors):
  ``||theta_D||^2``, ``||g_D||^2``, ``<theta_D, g_D>`` of the raw InfoNCE gradient, ``||s_D||^2`` and
  ``<theta_D, s_D>`` of the optimizer's actual direction, and ``||theta_D||^2`` after the update, so that
  the exact step ``||theta+||^2 = (1 - eta lambda)^2 ||theta||^2 - 2 eta (1 - eta lambda) <theta, s> +
  eta^2 ||s||^2`` and (E1) (no first-order radial term: ``<theta_D, g_D> = 0`` when the loss is scale
  invariant in theta_D) can be checked every step.

**Seed domains (issue 35).** Batches come from a seed per (phase, step): every phase (pre-training,
grid, base, scaling, no decay) has its own domain, so no run replays the batches another phase trained
on (the first design drew every run's batch t from the pre-training's seed t: its base runs replayed
memorised batches for 1,500 steps). Runs of one phase share their batch sequence (common random
numbers: runs at different lambda see the same batches). Snapshot batches and the equilibration
batches have their own domains. A resumed run equals an uninterrupted one.

**Equilibrated start.** A run with ``equilibrate = K > 0`` and decay starts with theta_D rescaled
(exactly, by scale invariance: the loss and the gradient direction do not change) to the (E2)
equilibrium of its own optimizer, measured on K fresh batches: ``s_eq^4 = eta^2 E||g_D||^2 s^2 / (2c)``
with ``2c = 1 - (1 - eta lambda)^2`` (SGD), the heat times ``1/(1-beta)^2`` for heavy ball (E12), and
for AdamW ``s_eq^2 = eta^2 E||u||^2 / (2c)`` with ``E||u||^2`` the steady-state squared norm of Adam's
direction estimated per coordinate from the K gradients (an approximation: AdamW is not the SGD form).
This removes the arrival from far above (``ln(R0/R_eq)/(eta lambda)`` steps of pure decay). A checkpoint (parameters, optimizer state, the record) is
written atomically every ``checkpoint_every`` steps; the finished run is written as one ``.npz`` (the
record) and one ``.json`` (spec and timings), and its checkpoint is removed.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from normscope import encoders  # load_encoder looked up when called (tests replace it)
from normscope._io import atomic_path, write_json
from normscope.errors import InputError, ModelError
from normscope.lab.checkpoint import load_checkpoint, save_checkpoint, settings_key
from normscope.lab.decisive_runspec import (DESIGN_VERSION, PHASE_DOMAIN, RunContext, RunSpec, _data, _domain, _key,
                                            _paths, _record_from_payload, _record_payload, _seed, batch_seed, load_run,
                                            relaxation_time, run_done, run_key)
from normscope.lab.optim import make_optimizer
from normscope.lab.tiny_bert import decay_mask_named, save_encoder_dir
from normscope.lab.transformer import _Tracker, _to_device
from normscope.pairs import sample_pair_batches
from normscope.probes import TextEncoderAdapter, decay_mask_for, probe_moments, symmetric_info_nce

__all__ = ["RunSpec", "RunContext", "run_one", "load_run", "run_done", "run_key", "heldout_accuracy", "relaxation_time",
           "batch_seed", "PHASE_DOMAIN", "DESIGN_VERSION"]


def heldout_accuracy(adapter, params, left: list, right: list, chunk: int = 256) -> float:
    """Top-1 accuracy of retrieving each held-out ``right[i]`` for ``left[i]`` among all N right members (cosine).

    Ties go to the lowest index (identical embeddings score 1/N).
    """
    import torch

    def emb(texts):
        out = []
        with torch.no_grad():
            for s in range(0, len(texts), chunk):
                f = adapter.features(texts, np.arange(s, min(s + chunk, len(texts))), "query")
                out.append(torch.nn.functional.normalize(adapter.embed(params, f, "query").double(), dim=1))
        return torch.cat(out)

    a, b = emb(left), emb(right)
    hit = (a @ b.T).argmax(dim=1).cpu().numpy() == np.arange(len(left))
    return float(hit.mean())


def _load_encoder(ctx: RunContext, spec: RunSpec):
    d = Path(ctx.directory)
    enc = encoders.load_encoder(str(d / ("encoder_init" if spec.start == "init" else "encoder")), device=ctx.device, fresh=True)
    if spec.start not in ("init", "encoder"):
        import torch

        final = _paths(ctx, spec.start)["final"]
        if not final.is_file():
            raise InputError(f"run {spec.name} starts from run {spec.start}, whose final parameters are missing")
        state = torch.load(final, map_location="cpu", weights_only=True)
        params = [p for _n, p in enc.module.named_parameters() if p.requires_grad]
        with torch.no_grad():
            for p, v in zip(params, state):
                p.copy_(v.to(p.device))
    return enc


def run_one(spec: RunSpec, ctx: RunContext, *, progress=None) -> dict:
    """Run (or resume, or skip when finished) one run of the design; returns :func:`load_run`'s dict.

    Parameters
    ----------
    spec : RunSpec
    ctx : RunContext
    progress : callable (steps_done) -> None, optional
        Called every few steps (also after a resume).

    Raises
    ------
    InputError
        A checkpoint of another spec, a missing start run, a diverging run (non-finite loss).
    ModelError
        The encoder has no differentiable parameters.
    """
    if run_done(spec, ctx):
        return load_run(spec, ctx)
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    data = _data(ctx.directory)
    paths = _paths(ctx, spec.name)
    key = _key(spec, ctx)
    enc = _load_encoder(ctx, spec)
    adapter = TextEncoderAdapter(enc)
    timings = {"train_s": 0.0, "train_cpu_s": 0.0, "track_s": 0.0, "track_cpu_s": 0.0, "probe_s": 0.0,
               "probe_cpu_s": 0.0, "eval_s": 0.0, "checkpoint_s": 0.0}
    try:
        run = _Training(spec, ctx, enc, adapter, data, paths, key, timings)
        start = run.resume()
        if progress is not None:
            progress(start)
        run.train(start, progress)
        if spec.save_final:
            run.save_final()
    finally:
        adapter.close()
    with atomic_path(paths["npz"]) as tmp:
        with open(tmp, "wb") as f:
            np.savez(f, **_run_arrays(run.rec, len(data["probe_texts"])))
    timings.update(wall_s=time.perf_counter() - t_wall, cpu_s=time.process_time() - t_cpu, steps_run=spec.steps - start)
    write_json({"key": key, "spec": spec.to_dict(), "timings": timings}, paths["json"])
    paths["ckpt"].unlink(missing_ok=True)
    return load_run(spec, ctx)


class _Training:
    """One run's training state: the encoder's trainable parameters (``params``) and the adapter's views of
    them (``theta``), the decay mask, the optimizer, the probe-item tracker, the record ``rec`` (per-step loss;
    per tracked step R^2 before and after, <z, Delta>, ||Delta||^2 and the decay's change; lambda_rad / lambda;
    snapshot probes; held-out accuracy) and the timings (seconds)."""

    def __init__(self, spec: RunSpec, ctx: RunContext, enc, adapter, data: dict, paths: dict, key: str, timings: dict):
        import torch

        self.spec, self.ctx, self.enc, self.adapter, self.data = spec, ctx, enc, adapter, data
        self.paths, self.timings = paths, timings
        self.left, self.right, self.probe_texts = data["train_left"], data["train_right"], data["probe_texts"]
        self.module = enc.module
        self.params = [p for _n, p in self.module.named_parameters() if p.requires_grad]
        self.theta = adapter.parameters()
        self.keys = list(self.theta)
        if not self.params or len(self.keys) != len(self.params):
            raise ModelError("the encoder's trainable parameters and the adapter's do not match")
        self.mask_spec = decay_mask_named(spec.decay_mask or ctx.decay_mask, list(self.theta))
        self.mask = decay_mask_for(self.theta, self.mask_spec)
        self.flags = [self.mask[k] for k in self.keys]
        self.opt = make_optimizer(spec.optimizer, spec.lr, spec.weight_decay,
                                  **({"beta": spec.beta} if spec.optimizer == "momentum" else {}))
        self.tracker = _Tracker(adapter, self.probe_texts)
        self.rec: dict = {"loss": np.zeros(spec.steps), "track_steps": [], "r2": [], "r2_next": [], "zd": [], "dd": [],
                          "dec": [], "lam_steps": [], "lam": [], "snap_steps": [], "snap_r": [], "snap_zjd": [],
                          "snap_za": [], "snap_zc": [], "snap_aa": [], "eval_steps": [], "eval_acc": [],
                          "theta_d": np.zeros((spec.steps, 6)), "equilibrate": np.zeros(5)}
        self.settings = {"key": key}
        self.buf = {k: torch.empty_like(v) for k, v in self.theta.items()}
        self.snaps = set(int(s) for s in spec.snapshots)
        self.evals = set(int(s) for s in spec.eval_steps)
        self.z_cache: tuple | None = None  # (step, z at that step) from the previous tracked step

    def resume(self) -> int:
        """The step to start from: 0, or a matching checkpoint's (parameters, optimizer state and record restored)."""
        import torch

        ck = load_checkpoint(self.paths["ckpt"], self.settings) if self.paths["ckpt"].is_file() else None
        if ck is None:
            return 0
        with torch.no_grad():
            for p, v in zip(self.params, ck["params"]):
                p.copy_(v.to(p.device))
        self.opt.load_state_dict(_to_device(ck["opt"], self.params[0].device))
        self.rec = _record_from_payload(ck["record"])
        return int(ck["step"])

    def train(self, start: int, progress) -> None:
        """Steps ``start`` .. ``spec.steps - 1``: snapshot probes, the SGD-family step with tracking,
        lambda_rad / lambda, held-out accuracy, the divergence check, checkpoints and progress calls."""
        spec, rec = self.spec, self.rec
        every = max(1, min(20, spec.steps // 10))  # progress calls
        if start == 0 and spec.equilibrate > 0 and spec.weight_decay > 0 and not rec["equilibrate"].any():
            w0, c0 = time.perf_counter(), time.process_time()
            self.equilibrate()
            self._add("train", w0, c0)
        if spec.track and start == 0 and not rec["lam_steps"]:
            self.measure_lambda(0)
        if 0 in self.evals and start == 0 and not rec["eval_steps"]:
            rec["eval_steps"].append(0)
            rec["eval_acc"].append(self.accuracy())
        for t in range(start, spec.steps):
            if t in self.snaps and t not in rec["snap_steps"]:
                self.snapshot(t)
            self.step(t)
            if spec.track and (t + 1) % spec.lambda_every == 0:
                w0, c0 = time.perf_counter(), time.process_time()
                self.measure_lambda(t + 1)
                self._add("track", w0, c0)
            if (t + 1) in self.evals:
                w0 = time.perf_counter()
                rec["eval_steps"].append(t + 1)
                rec["eval_acc"].append(self.accuracy())
                self.timings["eval_s"] += time.perf_counter() - w0
            if not math.isfinite(rec["loss"][t]):
                raise InputError(f"run {spec.name} diverged at step {t} (loss {rec['loss'][t]}); lower the learning rate")
            if (t + 1) % self.ctx.checkpoint_every == 0 and t + 1 < spec.steps:
                self.save(t + 1)
            if progress is not None and ((t + 1) % every == 0 or t + 1 == spec.steps):
                progress(t + 1)

    def _add(self, what: str, w0: float, c0: float) -> None:
        """Wall and CPU seconds since ``w0`` / ``c0`` added to ``{what}_s`` and ``{what}_cpu_s``."""
        self.timings[f"{what}_s"] += time.perf_counter() - w0
        self.timings[f"{what}_cpu_s"] += time.process_time() - c0

    def step(self, t: int) -> None:
        """One optimizer step on batch ``t``; a tracked step also records the probe items' displacement under
        the plain decay-free SGD step (``Delta``) and their norms before and after the actual update."""
        spec = self.spec
        direction = self.direction(t)
        tracked = spec.track and t % spec.track_every == 0
        if tracked:
            z, z_free = self.track_before(direction, t)
        w0, c0 = time.perf_counter(), time.process_time()
        self.opt.apply(self.params, direction, decay=self.flags)
        th = [p.detach() for p in self.params]
        self.rec["theta_d"][t, 5] = self._dot(th, th)
        self._add("train", w0, c0)
        if tracked:
            self.track_after(t, z, z_free)

    def gradient(self, seed: int) -> tuple[list, float]:
        """The symmetric InfoNCE gradient of every trainable parameter on the batch drawn from ``seed``, and its loss."""
        import torch

        enc, ctx = self.enc, self.ctx
        bidx = sample_pair_batches(len(self.left), ctx.batch_size, 1, seed)[0]
        self.module.eval()
        zq = enc.forward(enc.tokenize([self.left[i] for i in bidx]))
        zdoc = enc.forward(enc.tokenize([self.right[i] for i in bidx]))
        loss = symmetric_info_nce(zq.float(), zdoc.float(), ctx.tau)
        grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        grads = [g.detach() if g is not None else torch.zeros_like(p) for g, p in zip(grads, self.params)]
        return grads, float(loss.detach())

    def _dot(self, a: list, b: list) -> float:
        """``<a_D, b_D>`` over the decayed tensors, summed in float64."""
        return float(sum(float((x.double() * y.double()).sum()) for x, y, f in zip(a, b, self.flags) if f))

    def direction(self, t: int) -> list:
        """The optimizer's direction from batch ``t``'s symmetric InfoNCE gradient (its loss and theta_D's norms
        recorded)."""
        w0, c0 = time.perf_counter(), time.process_time()
        grads, loss = self.gradient(batch_seed(self.ctx.seed, self.spec.kind, t, self.spec.replicate))
        self.rec["loss"][t] = loss
        direction = self.opt.direction(grads)
        th = [p.detach() for p in self.params]
        self.rec["theta_d"][t, :5] = (self._dot(th, th), self._dot(grads, grads), self._dot(th, grads),
                                      self._dot(direction, direction), self._dot(th, direction))
        self._add("train", w0, c0)
        return direction

    def equilibrate(self) -> None:
        """Rescale theta_D to the (E2) equilibrium of this run's optimizer from K fresh batches (module docstring);
        the scale before and after, the heat per unit eta^2 and the factor go to ``rec["equilibrate"]``."""
        import torch

        spec, ctx = self.spec, self.ctx
        dom = _domain(spec)
        gs = []
        for k in range(spec.equilibrate):
            grads, _loss = self.gradient(_seed(ctx.seed, 3, *dom, k))
            gs.append(torch.cat([g.double().ravel() for g, f in zip(grads, self.flags) if f]))
        g = torch.stack(gs)  # (K, n_D)
        theta = torch.cat([p.detach().double().ravel() for p, f in zip(self.params, self.flags) if f])
        s2 = float(theta @ theta)
        gamma2 = float((g * g).sum(1).mean()) * s2  # E||g_D||^2 s^2: R-free (||g_D|| ~ 1/s)
        eta, lam = spec.lr, spec.weight_decay
        two_c = 1.0 - (1.0 - eta * lam) ** 2
        if spec.optimizer == "adamw":
            b1 = getattr(self.opt, "b1", 0.9)
            mu2, var = g.mean(0) ** 2, g.var(0, unbiased=False)
            u2 = float(((mu2 + var * (1 - b1) / (1 + b1)) / (mu2 + var).clamp_min(1e-300)).sum())
            s_eq2 = eta**2 * u2 / two_c
        else:
            heat = eta**2 * gamma2 / ((1.0 - spec.beta) ** 2 if spec.optimizer == "momentum" else 1.0)
            s_eq2 = math.sqrt(heat / two_c)
        factor = math.sqrt(s_eq2 / s2) if s2 > 0 and s_eq2 > 0 else 1.0
        with torch.no_grad():
            for p, f in zip(self.params, self.flags):
                if f:
                    p.mul_(factor)
        self.rec["equilibrate"] = np.array([s2, s_eq2, gamma2, factor, float(spec.equilibrate)])

    def track_before(self, direction: list, t: int):
        """(z, z_free): the probe items' embeddings now (reused from the previous tracked step when it was the
        step before) and after the step ``-lr * direction`` without decay."""
        import torch

        w0, c0 = time.perf_counter(), time.process_time()
        zc = self.z_cache
        z = zc[1] if (zc is not None and zc[0] == t) else self.tracker.z(self.theta)
        with torch.no_grad():
            for kk, s in zip(self.keys, direction):
                torch.add(self.theta[kk], s, alpha=-self.spec.lr, out=self.buf[kk])
        z_free = self.tracker.z(self.buf)
        self._add("track", w0, c0)
        return z, z_free

    def track_after(self, t: int, z, z_free) -> None:
        """Record step ``t``: R^2 before and after, <z, Delta>, ||Delta||^2 and the decay's change of R^2."""
        w0, c0 = time.perf_counter(), time.process_time()
        rec = self.rec
        z_new = self.tracker.z(self.theta)
        delta = z_free - z
        r2_new = (z_new * z_new).sum(1)
        rec["track_steps"].append(t)
        rec["r2"].append((z * z).sum(1).cpu().numpy())
        rec["r2_next"].append(r2_new.cpu().numpy())
        rec["zd"].append((z * delta).sum(1).cpu().numpy())
        rec["dd"].append((delta * delta).sum(1).cpu().numpy())
        rec["dec"].append((r2_new - (z_free * z_free).sum(1)).cpu().numpy())
        self.z_cache = (t + 1, z_new)
        self._add("track", w0, c0)

    def snapshot(self, t: int) -> None:
        """The probe's moments (:func:`probe_moments`) of the probe items at step ``t``."""
        ctx, rec = self.ctx, self.rec
        w0, c0 = time.perf_counter(), time.process_time()
        m = probe_moments(self.adapter, self.probe_texts, (self.left, self.right), batch_size=ctx.batch_size,
                          batches=self.spec.probe_batches, tau=ctx.tau, decay_mask=self.mask_spec,
                          seed=_seed(ctx.seed, 2, *_domain(self.spec), t))
        rec["snap_steps"].append(t)
        rec["snap_r"].append(m.r)
        rec["snap_zjd"].append(m.zjd)
        rec["snap_za"].append(m.za)
        rec["snap_zc"].append(m.zc)
        rec["snap_aa"].append(m.aa)
        self._add("probe", w0, c0)

    def measure_lambda(self, step: int) -> None:
        """lambda_rad / lambda of each probe item (E4) at ``step``."""
        self.rec["lam_steps"].append(step)
        self.rec["lam"].append(self.tracker.lambda_per_lambda(self.theta, self.mask))

    def accuracy(self) -> float:
        """Held-out top-1 accuracy of the current parameters."""
        return heldout_accuracy(self.adapter, self.theta, self.data["eval_left"], self.data["eval_right"])

    def save(self, step: int) -> None:
        """A checkpoint at ``step`` (parameters, optimizer state, record)."""
        t0 = time.perf_counter()
        save_checkpoint(self.paths["ckpt"], {"settings": self.settings, "key": settings_key(self.settings),
                                             "step": step, "params": [p.detach().cpu() for p in self.params],
                                             "opt": self.opt.state_dict(), "record": _record_payload(self.rec)})
        self.timings["checkpoint_s"] += time.perf_counter() - t0

    def save_final(self) -> None:
        """The final parameters (atomically); a pre-training run also writes its encoder folder."""
        import torch

        with atomic_path(self.paths["final"]) as tmp:
            torch.save([p.detach().cpu() for p in self.params], tmp)
        if self.spec.kind == "pretrain":
            module = self.module
            save_encoder_dir(module.cpu() if self.ctx.device != "cpu" else module, Path(self.ctx.directory) / "encoder")


def _run_arrays(rec: dict, p_items: int) -> dict:
    """The record as the arrays of the run's ``.npz`` (empty records as (0, P) or (0, 0, P) arrays)."""
    p_shape = (0, p_items)
    return {
        "loss": rec["loss"],
        "track_steps": np.asarray(rec["track_steps"], dtype=np.int64),
        **{k: (np.stack(rec[k]) if rec[k] else np.zeros(p_shape)) for k in ("r2", "r2_next", "zd", "dd", "dec")},
        "lam_steps": np.asarray(rec["lam_steps"], dtype=np.int64),
        "lam": np.stack(rec["lam"]) if rec["lam"] else np.zeros(p_shape),
        "snap_steps": np.asarray(rec["snap_steps"], dtype=np.int64),
        "snap_r": np.stack(rec["snap_r"]) if rec["snap_r"] else np.zeros(p_shape),
        "snap_zjd": np.stack(rec["snap_zjd"]) if rec["snap_zjd"] else np.zeros(p_shape),
        **{k: (np.stack(rec[k]) if rec[k] else np.zeros((0, 0, p_items))) for k in ("snap_za", "snap_zc", "snap_aa")},
        "eval_steps": np.asarray(rec["eval_steps"], dtype=np.int64),
        "eval_acc": np.asarray(rec["eval_acc"], dtype=float),
        "theta_d": np.asarray(rec["theta_d"], dtype=float),
        "equilibrate": np.asarray(rec["equilibrate"], dtype=float),
    }
