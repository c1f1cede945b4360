"""Theorem 1 on a real transformer: continued contrastive training of a pretrained encoder.

:func:`run_transformer_lab` (``normscope lab --encoder transformer``) continues training a
pretrained text encoder (the bundled all-MiniLM-L6-v2 by default) with symmetric InfoNCE (E10) on
real pairs, with exactly decoupled weight decay on a stated mask (:mod:`normscope.lab.optim`:
SGD, heavy-ball momentum or AdamW), and

1. **predicts at step 0** each probe item's R_eq with the section-6 probe
   (:func:`normscope.probes.probe_moments` and :func:`~normscope.probes.summarize_probe`) at the
   run's own eta, lambda, B, tau and decay mask: (E8), lambda_rad (E4), (E7); for momentum with
   the (E12) correction;
2. **tracks** the fixed, held-out probe set at every step by forward passes without gradients:
   ``R_t`` and the realised decay-free step ``Delta_t = f(theta_t - eta s_t) - z_t`` plus the
   decay's exact radial effect (:class:`~normscope.lab.trajectory.TrajectoryRecord`), and lambda_rad
   (E4) every ``lambda_every`` steps;
3. **analyses** the record (:mod:`normscope.lab.analysis`): the trajectory estimator (E6, E9, E7)
   with per-item q/c, how the norms moved relative to the step-0 R_eq, and the relaxation time
   ``1/(2 eta lambda_rad)``.

Long runs are resumable: a checkpoint (parameters, optimizer state, the record) is written
atomically every ``checkpoint_every`` steps and a rerun with the same settings continues from it
(a larger ``steps`` extends a finished run).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from normscope import theory
from normscope._progress import Tracker
from normscope.encoders import DEFAULT_MODEL, check_device, load_encoder
from normscope.encoders.base import TorchEncoder
from normscope.encoders.glove import is_static_encoder, static_refusal
from normscope.errors import InputError, ModelError
from normscope.lab.analysis import analyse_transformer_run
from normscope.lab.checkpoint import check_checkpoint_file, load_checkpoint, save_checkpoint, settings_key
from normscope.lab.optim import make_optimizer
from normscope.lab.trajectory import TrajectoryRecord
from normscope.lab.transformer_data import prepare_pairs_and_probes
from normscope.pairs import sample_pair_batches
from normscope.probes import TextEncoderAdapter, decay_mask_for, probe_moments, summarize_probe, symmetric_info_nce
from normscope.requests.lab import TransformerLabRequest
from normscope.validate import check_choice, check_int, check_output_path, check_positive, check_range

__all__ = ["run_transformer_lab", "TRANSFORMER_DEFAULTS"]

#: default (lr, weight_decay) per optimizer for the transformer lab: eta * lambda = 1e-3 for each, so the
#: conservative relaxation time 1/(2 eta lambda_rad) is about 500 steps when lambda_rad ~ lambda. SGD at
#: eta = 1e-3 moves a MiniLM probe item by about 1.4 % of its norm per step (measured by the step-0 probe);
#: momentum's eta/(1 - beta) and AdamW's MiniLM training lr (2e-5) keep the same c = eta lambda.
TRANSFORMER_DEFAULTS = {"sgd": (1e-3, 1.0), "momentum": (1e-4, 10.0), "adamw": (2e-5, 50.0)}


def _step_seed(seed: int, step: int) -> int:
    return int(np.random.SeedSequence([int(seed), 1, int(step)]).generate_state(1)[0])


def _to_device(obj, device):
    """``obj`` (nested dicts/lists of tensors) with every tensor moved to ``device`` (a checkpoint loads on cpu)."""
    if hasattr(obj, "to") and hasattr(obj, "device"):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(v, device) for v in obj)
    return obj


def _validate(*, optimizer, lr, weight_decay, steps, burn_in, batch_size, tau, beta, decay_mask, probe_items,
              probe_batches, max_tokens, precision, checkpoint, checkpoint_every, lambda_every):
    check_choice("optimizer", optimizer, ("sgd", "momentum", "adamw"))
    check_choice("precision", precision, ("fp32", "bf16"))
    if not callable(decay_mask):
        check_choice("decay mask", decay_mask, ("all", "matrices"))
    check_positive("lr", lr)
    check_positive("weight_decay", weight_decay, allow_zero=True)
    if lr * weight_decay >= 1:
        raise InputError(f"lr * weight_decay must be < 1, got {lr * weight_decay:g}")
    check_int("steps", steps, minimum=2)
    check_int("burn_in", burn_in, minimum=0, maximum=steps - 1)
    check_int("batch_size", batch_size, minimum=2)
    check_positive("tau", tau)
    check_range("beta", beta, 0.0, 1.0 - 1e-12)
    check_int("probe_batches", probe_batches, minimum=2)
    check_int("checkpoint_every", checkpoint_every, minimum=1)
    check_int("lambda_every", lambda_every, minimum=1)
    if max_tokens is not None:
        check_int("max_tokens", max_tokens, minimum=3)
    if isinstance(probe_items, (int, np.integer)) and not isinstance(probe_items, bool):
        check_int("probe_items", probe_items, minimum=3)
    elif not Path(probe_items).exists():
        raise InputError(f"--probe-items file does not exist: {probe_items}")
    if checkpoint is not None:
        check_output_path(checkpoint, "--checkpoint")
        check_checkpoint_file(checkpoint)  # a crafted file is refused here, before any work, never unpickled


class _Tracker:
    """No-grad forwards of the probe items at given parameters (all items in one padded batch)."""

    def __init__(self, adapter, texts):
        import torch

        self.adapter = adapter
        self.feats = adapter.features(texts, np.arange(len(texts)), "query")
        self._torch = torch

    def z(self, params) -> object:
        with self._torch.no_grad():
            return self.adapter.embed(params, self.feats, "query").double()

    def lambda_per_lambda(self, params, mask) -> np.ndarray:
        """``<z, J_x theta_D> / R^2`` (E4, lambda_rad per unit lambda): one JVP along theta_D."""
        from torch.func import jvp

        torch = self._torch
        tangent = {n: (v if mask[n] else torch.zeros_like(v)) for n, v in params.items()}
        z, jd = jvp(lambda p: self.adapter.embed(p, self.feats, "query"), (params,), (tangent,))
        z, jd = z.detach().double(), jd.detach().double()
        return ((z * jd).sum(1) / (z * z).sum(1)).cpu().numpy()


def _train_tracked(enc, adapter, pairs, probe_texts, *, optimizer, lr, weight_decay, steps, batch_size, tau, beta,
                   decay_flags, dropout, precision, seed, lambda_every, track, checkpoint, checkpoint_every,
                   settings, extra_state, progress):
    """The training loop with per-step tracking (see the module docstring); returns ``(record, state, timings)``.

    ``record`` is a :class:`TrajectoryRecord` (None with ``track=False``); ``state`` is
    ``extra_state`` as stored in the checkpoint (the step-0 probe); timings in seconds.
    """
    import torch

    run = _TrackedTraining(enc, adapter, probe_texts, optimizer=optimizer, lr=lr, weight_decay=weight_decay,
                           steps=steps, batch_size=batch_size, beta=beta, decay_flags=decay_flags, track=track,
                           lambda_every=lambda_every, checkpoint=checkpoint, settings=settings)
    start = run.resume(extra_state)
    bar = None
    if progress and start < steps:
        bar = Tracker("lab transformer/" + optimizer, steps, unit="steps", completed=start).start()
    autocast = (torch.autocast(device_type=torch.device(enc.device).type, dtype=torch.bfloat16)
                if precision == "bf16" else None)
    try:
        if track:
            run.track_start(start)
        for t in range(start, steps):
            direction = run.direction(t, pairs, seed=seed, tau=tau, dropout=dropout, autocast=autocast)
            z_free = run.free_step(direction) if track else None
            t0, c0 = time.perf_counter(), time.process_time()
            run.opt.apply(run.params, direction, decay=decay_flags)
            run.add("train", t0, c0)
            if track:
                run.track_step(t, z_free)
            loss = run.rec["loss"][t]
            if not math.isfinite(loss):
                raise InputError(f"training diverged at step {t} (loss {loss}); lower --lr")
            if checkpoint is not None and ((t + 1) % checkpoint_every == 0 or t + 1 == steps):
                run.save(t + 1)
            if bar is not None:
                bar.update(t + 1, loss=f"{loss:.3f}")
    finally:
        if bar is not None:
            bar.stop()
    record = None
    if track:
        rec = run.rec
        record = TrajectoryRecord(rec["r2"], rec["zd"], rec["dd"], rec["dec"], rec["loss"],
                                  np.asarray(rec["lam_steps"], dtype=np.int64), np.stack(rec["lam"]), rec["batches"])
    return record, run.extra_state, run.timings


class _TrackedTraining:
    """The state of :func:`_train_tracked`: trainable parameters (``params``) and the adapter's views of them
    (``theta``), the decay mask, the optimizer, the probe-item tracker, the record (per step the probe items'
    R^2, <z, Delta>, ||Delta||^2 and the decay's change, the loss and the batch; lambda_rad / lambda on its
    schedule), the current probe embeddings ``z``, the checkpoint's extra state and the timings (seconds)."""

    def __init__(self, enc, adapter, probe_texts, *, optimizer, lr, weight_decay, steps, batch_size, beta,
                 decay_flags, track, lambda_every, checkpoint, settings):
        import torch

        self.enc, self.adapter, self.module = enc, adapter, enc.module
        self.lr, self.steps, self.batch_size, self.track, self.lambda_every = lr, steps, batch_size, track, lambda_every
        self.checkpoint, self.settings = checkpoint, settings
        self.params = [p for _n, p in self.module.named_parameters() if p.requires_grad]
        self.theta = adapter.parameters()  # detached views of the same storage, keys "inner.<name>"
        self.keys = list(self.theta)
        if len(self.keys) != len(self.params):
            raise ModelError("the encoder's trainable parameters and the adapter's do not match")
        self.mask = dict(zip(self.keys, decay_flags))
        self.opt = make_optimizer(optimizer, lr, weight_decay, **({"beta": beta} if optimizer == "momentum" else {}))
        self.tracker = _Tracker(adapter, probe_texts) if track else None
        p_items = len(probe_texts)
        self.rec = {"r2": np.zeros((steps + 1, p_items)), "zd": np.zeros((steps, p_items)),
                    "dd": np.zeros((steps, p_items)), "dec": np.zeros((steps, p_items)), "loss": np.zeros(steps),
                    "batches": np.zeros((steps, batch_size), np.int64), "lam_steps": [], "lam": []}
        self.extra_state = None
        self.timings: dict = {}
        self.buf = {k: torch.empty_like(v) for k, v in self.theta.items()} if track else None
        self.z = None

    def resume(self, extra_state) -> int:
        """The first step: 0 (``extra_state`` computed when callable), or a matching checkpoint's step with its
        parameters, optimizer state, extra state and record up to that step restored."""
        import torch

        steps, rec = self.steps, self.rec
        start = 0
        ck = load_checkpoint(self.checkpoint, self.settings) if self.checkpoint is not None else None
        if ck is not None:
            start = min(int(ck["step"]), steps)
            with torch.no_grad():
                for p, v in zip(self.params, ck["params"]):
                    p.copy_(v)
            self.opt.load_state_dict(_to_device(ck["opt"], self.params[0].device))
            old = ck["record"]
            for k in ("r2", "zd", "dd", "dec", "loss", "batches"):
                n_keep = start + 1 if k == "r2" else start
                rec[k][:n_keep] = old[k][:n_keep]
            # E4 measurements on the regular schedule (a finished shorter run also measured at its last step,
            # which an extended run would not have: dropped, so an extended run equals an uninterrupted one)
            keep = [i for i, s in enumerate(old["lam_steps"])
                    if s <= start and (s % self.lambda_every == 0 or (s == start == steps))]
            rec["lam_steps"] = [old["lam_steps"][i] for i in keep]
            rec["lam"] = [old["lam"][i] for i in keep]
            extra_state = ck["extra"]
        elif callable(extra_state):
            extra_state = extra_state()
        self.extra_state = extra_state
        self.timings = {"train_s": 0.0, "track_s": 0.0, "train_cpu_s": 0.0, "track_cpu_s": 0.0, "checkpoint_s": 0.0,
                        "steps_run": steps - start}
        return start

    def add(self, kind: str, w0: float, c0: float) -> None:
        """Wall and CPU seconds since ``w0`` / ``c0`` added to ``{kind}_s`` and ``{kind}_cpu_s``."""
        self.timings[f"{kind}_s"] += time.perf_counter() - w0
        self.timings[f"{kind}_cpu_s"] += time.process_time() - c0

    def save(self, step: int) -> None:
        """A checkpoint at ``step``: parameters, optimizer state, extra state and the record so far."""
        rec = self.rec
        t0 = time.perf_counter()
        save_checkpoint(self.checkpoint, {
            "settings": self.settings, "key": settings_key(self.settings), "step": step,
            "params": [p.detach().cpu() for p in self.params], "opt": self.opt.state_dict(), "extra": self.extra_state,
            "record": {**{k: v[: step + 1] if k == "r2" else v[:step] for k, v in rec.items() if k not in ("lam_steps", "lam")},
                       "lam_steps": list(rec["lam_steps"]), "lam": list(rec["lam"])},
        })
        self.timings["checkpoint_s"] += time.perf_counter() - t0

    def track_start(self, start: int) -> None:
        """The probe items' embeddings at the start (R^2 at step 0; lambda_rad / lambda at 0 from the step-0 probe)."""
        t0, c0 = time.perf_counter(), time.process_time()
        self.z = self.tracker.z(self.theta)
        if start == 0:
            self.rec["r2"][0] = (self.z * self.z).sum(1).cpu().numpy()
        if not self.rec["lam_steps"]:
            self.rec["lam_steps"].append(0)
            self.rec["lam"].append(self.extra_state["lam0"])
        self.add("track", t0, c0)

    def direction(self, t: int, pairs, *, seed: int, tau: float, dropout, autocast) -> list:
        """The optimizer's direction from step ``t``'s batch (seeded by the step; dropout masks too) and its
        symmetric InfoNCE gradient; the loss and the batch are recorded."""
        import torch

        enc, module, rec = self.enc, self.module, self.rec
        t0, c0 = time.perf_counter(), time.process_time()
        s_seed = _step_seed(seed, t)
        bidx = sample_pair_batches(len(pairs.left), self.batch_size, 1, s_seed)[0]
        rec["batches"][t] = bidx
        torch.manual_seed(s_seed)  # dropout masks: deterministic per step, so a resumed run is identical
        module.train(bool(dropout))
        fl = enc.tokenize([pairs.left[i] for i in bidx])
        fr = enc.tokenize([pairs.right[i] for i in bidx])
        if autocast is not None:
            with autocast:
                zq, zdoc = enc.forward(fl), enc.forward(fr)
        else:
            zq, zdoc = enc.forward(fl), enc.forward(fr)
        loss = symmetric_info_nce(zq.float(), zdoc.float(), tau)
        grads = torch.autograd.grad(loss, self.params, allow_unused=True)
        module.eval()
        grads = [g.detach() if g is not None else torch.zeros_like(p) for g, p in zip(grads, self.params)]
        rec["loss"][t] = float(loss.detach())
        direction = self.opt.direction(grads)
        self.add("train", t0, c0)
        return direction

    def free_step(self, direction: list):
        """The probe items' embeddings after the decay-free step: f(theta_t - eta s_t)."""
        import torch

        t0, c0 = time.perf_counter(), time.process_time()
        with torch.no_grad():
            for k, s in zip(self.keys, direction):
                torch.add(self.theta[k], s, alpha=-self.lr, out=self.buf[k])
        z_free = self.tracker.z(self.buf)
        self.add("track", t0, c0)
        return z_free

    def track_step(self, t: int, z_free) -> None:
        """Record step ``t`` after the update: <z, Delta>, ||Delta||^2, the decay's change of R^2, R^2 at t + 1,
        and lambda_rad / lambda on its schedule (and at the last step)."""
        rec, z = self.rec, self.z
        t0, c0 = time.perf_counter(), time.process_time()
        z_new = self.tracker.z(self.theta)
        delta = z_free - z
        r2_new = (z_new * z_new).sum(1)
        rec["zd"][t] = (z * delta).sum(1).cpu().numpy()
        rec["dd"][t] = (delta * delta).sum(1).cpu().numpy()
        rec["dec"][t] = (r2_new - (z_free * z_free).sum(1)).cpu().numpy()
        rec["r2"][t + 1] = r2_new.cpu().numpy()
        self.z = z_new
        if (t + 1) % self.lambda_every == 0 or t + 1 == self.steps:
            rec["lam_steps"].append(t + 1)
            rec["lam"].append(self.tracker.lambda_per_lambda(self.theta, self.mask))
        self.add("track", t0, c0)


def run_transformer_lab(request: TransformerLabRequest | None = None, *, encoder=None, pairs=None,
                        checkpoint: str | Path | None = None, progress: bool = False, num_threads: int | None = 1):
    """Continue contrastive training of a pretrained encoder and test Theorem 1 along the run.

    Parameters
    ----------
    request : TransformerLabRequest, optional
        The settings (:class:`~normscope.requests.lab.TransformerLabRequest`; default: its defaults).
        ``model``: name or path for :func:`normscope.load_encoder` (default: the bundled all-MiniLM-L6-v2); a
        private copy is loaded (``fresh=True``). ``pairs``: ``wordnet`` (WordNet 3.0 noun (term, gloss)
        pairs), ``beir:DIR``, ``scifact`` or a two-column file (:func:`normscope.pairs.load_pairs`).
        ``optimizer``: exactly decoupled decay in each (:mod:`normscope.lab.optim`); momentum is heavy ball
        with ``beta``. ``lr``, ``weight_decay``: eta and lambda; defaults :data:`TRANSFORMER_DEFAULTS`
        (eta * lambda = 1e-3). ``steps``: T (>= 2). ``burn_in``: first step of the trajectory estimator's
        window (default ``steps // 2``). ``batch_size``, ``tau``: B pairs per step and the InfoNCE
        temperature (MiniLM's own 0.05). ``decay_mask``: theta_D (:func:`normscope.probes.decay_mask_for`);
        default ``"all"``: with the usual ``"matrices"`` mask the final LayerNorm is undecayed and lambda_rad
        is near 0 or negative for many inputs (docs/theory.md section 9), so decay exerts no restoring force
        on the norm. ``dropout``: train with the model's dropout on (tracking and the probe always run
        without). ``probe_items``: N held-out items drawn from the pairs or an items file
        (:mod:`normscope.lab.transformer_data`). ``probe_batches``: K virtual batches of the step-0 probe.
        ``max_tokens``: keep only pairs whose members have at most this many tokens (None: all).
        ``precision``: training forward/backward precision (bf16: autocast; parameters and updates stay
        fp32); the step-0 probe and the tracking forwards are always fp32 (a bf16 forward cannot resolve a
        step of relative size 1e-3). ``resampling``: ``seed`` of the probe draw, the step-0 probe batches,
        each step's batch and dropout masks; ``n_boot`` of every bootstrap over probe items.
        ``checkpoint_every``, ``lambda_every``: steps between checkpoints and between lambda_rad (E4)
        measurements. ``track``: False trains without tracking or prediction (the speed benchmark).
    encoder : TorchEncoder, optional, keyword-only
        Instead of ``request.model``: an encoder object, deep-copied before training (never changed).
    pairs : PairSource, optional, keyword-only
        Instead of ``request.pairs``: pairs already loaded.
    checkpoint : path, optional, keyword-only
        Checkpoint file (resumed when it exists and the settings match).
    progress : bool, keyword-only
    num_threads : int or None, keyword-only
        torch intra-op threads during the run (restored after); None leaves torch's setting. (The bootstrap
        resamples of the correlation CIs are ``request.resampling.n_boot``.)

    Returns
    -------
    TransformerLabResult
        Summary fields, per-item table and the record (see :mod:`normscope.lab.result`).

    Raises
    ------
    InputError
        Bad choices or ranges (checked before any work), a checkpoint of other settings,
        too few pairs, or a diverging run.
    ModelError
        A model that is not a differentiable torch encoder, or without forward-mode AD.
    DataError
        Pair source not readable.
    """
    import torch

    r = request if request is not None else TransformerLabRequest()
    model, optimizer, lr, weight_decay, steps, burn_in = r.model, r.optimizer, r.lr, r.weight_decay, r.steps, r.burn_in
    pairs = pairs if pairs is not None else r.pairs
    batch_size, tau, beta, decay_mask, dropout = r.batch_size, r.tau, r.beta, r.decay_mask, r.dropout
    probe_items = int(r.probe_items) if isinstance(r.probe_items, int) else Path(r.probe_items)
    probe_batches, max_tokens, precision, device = r.probe_batches, r.max_tokens, r.precision, r.device
    checkpoint_every, lambda_every, track = r.checkpoint_every, r.lambda_every, r.track
    seed, n_boot = r.resampling.seed, r.resampling.n_boot
    d_lr, d_wd = TRANSFORMER_DEFAULTS.get(optimizer, (None, None))
    lr = d_lr if lr is None else lr
    weight_decay = d_wd if weight_decay is None else weight_decay
    if lr is None:
        check_choice("optimizer", optimizer, ("sgd", "momentum", "adamw"))
    burn_in = steps // 2 if burn_in is None and isinstance(steps, int) else burn_in
    _validate(optimizer=optimizer, lr=lr, weight_decay=weight_decay, steps=steps, burn_in=burn_in,
              batch_size=batch_size, tau=tau, beta=beta, decay_mask=decay_mask, probe_items=probe_items,
              probe_batches=probe_batches, max_tokens=max_tokens, precision=precision, checkpoint=checkpoint,
              checkpoint_every=checkpoint_every, lambda_every=lambda_every)

    check_device(device)
    old_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(int(num_threads))
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    try:
        return _run(model=model, encoder=encoder, pairs=pairs, optimizer=optimizer, lr=float(lr),
                    weight_decay=float(weight_decay), steps=int(steps), burn_in=int(burn_in), batch_size=int(batch_size),
                    tau=float(tau), beta=float(beta), decay_mask=decay_mask, dropout=bool(dropout),
                    probe_items=probe_items, probe_batches=int(probe_batches), max_tokens=max_tokens,
                    precision=precision, device=device, seed=int(seed), checkpoint=checkpoint,
                    checkpoint_every=int(checkpoint_every), lambda_every=int(lambda_every), track=track,
                    progress=progress, n_boot=int(n_boot), t_start=t_start, cpu_start=cpu_start,
                    analyse=analyse_transformer_run)
    finally:
        torch.set_num_threads(old_threads)


def _load(model, encoder, device):
    if encoder is not None:
        if is_static_encoder(encoder):
            raise static_refusal(encoder)
        if not isinstance(encoder, TorchEncoder):
            raise ModelError(f"the transformer lab needs a differentiable torch encoder, got {type(encoder).__name__}")
        enc = copy.deepcopy(encoder)  # never train the caller's (possibly shared) model
        if str(enc.device) != str(device):
            enc.module.to(device)
            enc.device = device
        return enc

    enc = load_encoder(model or DEFAULT_MODEL, device=device, fresh=True)
    if is_static_encoder(enc):
        raise static_refusal(enc)
    if not isinstance(enc, TorchEncoder):
        raise ModelError(f"model {model!r} is not a differentiable torch encoder (precomputed vectors cannot be trained)")
    return enc


def _run(*, model, encoder, pairs, optimizer, lr, weight_decay, steps, burn_in, batch_size, tau, beta, decay_mask,
         dropout, probe_items, probe_batches, max_tokens, precision, device, seed, checkpoint, checkpoint_every,
         lambda_every, track, progress, n_boot, t_start, cpu_start, analyse):
    enc = _load(model, encoder, device)
    lab_pairs, probes = prepare_pairs_and_probes(enc, pairs, probe_items, max_tokens=max_tokens, seed=seed)
    if len(lab_pairs) < batch_size:
        raise InputError(f"only {len(lab_pairs)} training pairs for a batch size of {batch_size}")
    adapter = TextEncoderAdapter(enc)
    try:
        theta = adapter.parameters()
        mask = decay_mask_for(theta, decay_mask)
        flags = [mask[k] for k in theta]
        fp = enc.fingerprint
        settings = {
            "model": fp.name, "revision": fp.revision, "pairs": lab_pairs.name, "n_pairs": len(lab_pairs),
            "max_tokens": max_tokens, "probe_texts": settings_key({"t": list(probes.texts)}), "optimizer": optimizer,
            "lr": lr, "weight_decay": weight_decay, "beta": beta if optimizer == "momentum" else None,
            "batch_size": batch_size, "tau": tau, "decay_mask": decay_mask if isinstance(decay_mask, str) else "callable",
            "dropout": dropout, "precision": precision, "device": str(device), "seed": seed,
            "probe_batches": probe_batches, "lambda_every": lambda_every, "track": bool(track),
        }

        def step0_probe():
            return _step0_probe(adapter, probes, lab_pairs, batch_size=batch_size, batches=probe_batches, tau=tau,
                                decay_mask=decay_mask, seed=seed, lr=lr, weight_decay=weight_decay, optimizer=optimizer,
                                beta=beta, name=fp.name, progress=progress) if track else {}

        record, probe0, timings = _train_tracked(
            enc, adapter, lab_pairs, probes.texts, optimizer=optimizer, lr=lr, weight_decay=weight_decay, steps=steps,
            batch_size=batch_size, tau=tau, beta=beta, decay_flags=flags, dropout=dropout, precision=precision, seed=seed,
            lambda_every=lambda_every, track=track, checkpoint=checkpoint, checkpoint_every=checkpoint_every,
            settings=settings, extra_state=step0_probe, progress=progress)
        timings["probe0_s"] = float(probe0.get("seconds", 0.0)) if probe0 else 0.0
    finally:
        adapter.close()
    timings["wall_s"] = time.perf_counter() - t_start
    timings["cpu_s"] = time.process_time() - cpu_start
    loop = timings["train_s"] + timings["track_s"]
    timings["s_per_step"] = loop / timings["steps_run"] if timings["steps_run"] else None
    timings["train_s_per_step"] = timings["train_s"] / timings["steps_run"] if timings["steps_run"] else None
    n_decayed = int(sum(flags))
    info = dict(settings, model=fp.name, n_source_pairs=lab_pairs.n_source, n_long_pairs=lab_pairs.n_long,
                n_held_out_pairs=lab_pairs.n_held_out, probe_set=probes.how, steps=steps, burn_in=burn_in,
                n_params=len(flags), n_decayed=n_decayed, checkpoint=str(checkpoint) if checkpoint is not None else None,
                attention=getattr(adapter, "attn_switched", []))
    return analyse(info, probes, record, probe0, timings, n_boot=n_boot)


def _step0_probe(adapter, probes, pairs, *, batch_size, batches, tau, decay_mask, seed, lr, weight_decay, optimizer,
                 beta, name, progress) -> dict:
    """The section-6 probe at step 0 with the run's own settings; per-item R_eq (E7; E12 for momentum).

    R is computed here by item index (one forward of all probe items) and replaces the probe's own,
    so the per-item arrays never depend on the probe's chunk order.
    """
    t0 = time.perf_counter()
    z = _Tracker(adapter, probes.texts).z(adapter.parameters())
    r = z.norm(dim=1).cpu().numpy()
    m = probe_moments(adapter, list(probes.texts), (pairs.left, pairs.right), batch_size=batch_size, batches=batches,
                      tau=tau, decay_mask=decay_mask, seed=seed)
    m = dataclasses.replace(m, r=r)
    pr = summarize_probe(m, eta=lr, weight_decay=weight_decay, ids=probes.ids, n_boot=200, seed=seed,
                         fields={"model": name})
    it = pr.items
    heat, drift = it["heat"].to_numpy(), it["drift"].to_numpy()
    if optimizer == "momentum":
        heat = theory.momentum_heat_correction(heat, beta)
        drift = theory.momentum_drift_correction(drift, beta)
    lam_rad = it["lambda_rad"].to_numpy()
    q = theory.implied_decay(drift, heat, r)
    c = lr * lam_rad
    flag = np.where(lam_rad <= 0, "lambda_rad<=0", np.where(q < 0, "q<0", ""))
    r_eq = theory.equilibrium_radius(drift, heat, c=np.where(c > 0, c, np.nan))
    r_eq = np.where(flag == "", r_eq, np.nan)
    s = dict(pr.to_dict(), batch_size=batch_size, tau=tau)
    return {
        "r": r, "r_eq": r_eq, "flag": flag, "heat": heat, "drift": drift, "q": q, "lambda_rad": lam_rad,
        "lam0": m.zjd / r**2, "d1": m.d1, "d2": m.d2, "s": m.s, "heat_se": it["heat_se"].to_numpy(), "drift_se": it["drift_se"].to_numpy(),
        "summary": {k: s.get(k) for k in ("batches", "batch_size", "tau", "lr", "weight_decay", "heat_cancelled_by_d2",
                                          "n_negative_q", "n_negative_lambda_rad", "reliability", "fd", "loss_mean")},
        "seconds": time.perf_counter() - t0,
    }
