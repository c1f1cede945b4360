"""The probe's entry point :func:`run_probe` (what ``normscope probe`` runs)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from normscope.errors import InputError
from normscope.probes.adapters import as_adapter
from normscope.probes.moments import _as_pairs, _pair_len, probe_moments
from normscope.probes.result import ProbeResult
from normscope.probes.summary import summarize_probe
from normscope.probes.training import DEFAULT_PROBE_BATCH, training_defaults

__all__ = ["run_probe"]


def run_probe(
    encoder,
    items,
    pairs,
    *,
    batch_size: int | None = None,
    batches: int = 16,
    tau: float | None = None,
    lr: float | None = None,
    weight_decay: float | None = None,
    decay_mask="matrices",
    seed: int = 0,
    progress: bool = False,
    ids: Sequence[str] | None = None,
    chunk_size: int = 128,
    fd_dtype: str = "auto",
    fd_target: float | None = None,
    symmetric: bool = True,
    n_boot: int = 1000,
) -> ProbeResult:
    """Probe heat and radial drift of every item and compare the predicted norm with the observed one.

    THEORY.md section 6: K virtual SGD steps of symmetric InfoNCE on ``pairs``, per-item D1, D2,
    S (E8), heat, drift, lambda_rad (E4), q (E9), R_eq (E7), the step-6 comparisons and the
    circularity guards of section 9.

    Parameters
    ----------
    encoder : TorchEncoder, torch.nn.Module, (query, doc) modules, or ProbeAdapter
    items : sequence of str, or torch.Tensor of shape (P, ...)
        Probe inputs (P >= 3).
    pairs : PairSource or (left, right)
        Training-like pairs (see :mod:`normscope.pairs`).
    batch_size : int, optional, keyword-only
        B. Default: the model's training batch size when known, capped at
        :data:`DEFAULT_PROBE_BATCH` (64) for CPU cost (heat scales about as 1/B: the summary says
        so); else 64.
    batches : int, keyword-only
        K >= 2 (standard errors and split-half reliability need two batches).
    tau : float, optional, keyword-only
        Temperature; default the training value when known (MiniLM: 0.05), else 0.05.
    lr, weight_decay : float, optional, keyword-only
        eta and lambda; default the known training values (MiniLM: 2e-5, 0.01). Unknown eta is
        fitted with (E11); unknown lambda leaves lambda_rad undetermined (c_fit route only).
    decay_mask : {'matrices', 'all'} or callable, keyword-only
        See :func:`decay_mask_for`.
    seed : int, keyword-only
        Seed of the pair batches and the bootstrap.
    progress : bool, keyword-only
        Rich progress bar on stderr.
    ids : sequence of str, optional, keyword-only
    chunk_size : int, keyword-only
    fd_dtype : {'auto', 'float64', 'float32'}, keyword-only
        Precision of the D2 finite differences (see :func:`probe_moments`; ``auto`` = the model's
        precision, with a float64 spot check reported in ``summary['fd']['check']``).
    fd_target : float, optional, keyword-only
        ``eps ||a|| / R``; default 3e-3 in float64 and 3e-2 in float32 (measured: float32 at 3e-3
        is off by ~2 % median, 14 % max on MiniLM; at 3e-2 by 0.05 % median, < 1 % max).
    symmetric : bool, keyword-only
    n_boot : int, keyword-only

    Returns
    -------
    ProbeResult
        ``summary`` keys: ``model, n_items, batches, batch_size, tau, lr, weight_decay`` (+ ``*_source``
        saying where each value came from), ``corr_norm_heat, corr_norm_drift, corr_req_norm,
        corr_norm_displacement, corr_norm_heat_rate, corr_norm_d2`` (each ``pearson, spearman,
        ci, n, p_value``), ``heat_cancelled_by_d2`` (median), ``n_negative_q,
        n_negative_lambda_rad, c_fit, q_over_c_mean, fit_e11, reliability, caveats,
        n_truncated``. ``items`` columns: ``id, [text], r, d1, d2, s, displacement (E||a||^2),
        heat_rate (S/R^4), heat, heat_se, drift, drift_se, s_var, heat_cancelled_by_d2,
        lambda_rad_per_lambda, lambda_rad, q, q_over_c, r_eq, r_eq_cfit, r_eq_flag``.

    Raises
    ------
    InputError
        K < 2, fewer than 3 items, too few pairs for B, bad tau / lr / weight_decay.
    ModelError
        A model with no trainable parameters or without forward-mode AD.
    """
    import torch

    if batches < 2:
        raise InputError(f"--batches must be >= 2 (standard errors and split-half reliability need two batches), got {batches}")
    if len(items) < 3:
        raise InputError(f"the probe needs at least 3 items, got {len(items)}")
    for nm, v in (("tau", tau), ("lr", lr)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise InputError(f"{nm} must be a positive number, got {v}")
    if weight_decay is not None and not (weight_decay >= 0 and math.isfinite(weight_decay)):
        raise InputError(f"weight_decay must be >= 0, got {weight_decay}")
    adapter = as_adapter(encoder)
    own_adapter = adapter is not encoder
    left, right = _as_pairs(pairs)
    n_pairs = _pair_len((left, right))
    known = training_defaults(adapter.name)
    extra: dict[str, Any] = {"pairs": getattr(pairs, "name", "user pairs"), "n_pairs": n_pairs}
    caveats: list[str] = []
    if batch_size is not None:
        b, b_src = int(batch_size), "given"
    elif known:
        b = min(known["batch_size"], DEFAULT_PROBE_BATCH)
        b_src = (f"training batch size {known['batch_size']} is too costly on CPU; probe uses {b}. Heat scales "
                 f"about as 1/B, so heat here is roughly {known['batch_size'] / b:.0f}x the training heat (ranks unaffected)")
    else:
        b, b_src = DEFAULT_PROBE_BATCH, "default (training batch size unknown)"
    b = min(b, n_pairs) if batch_size is None else b
    if tau is not None:
        t, t_src = float(tau), "given"
    elif known:
        t, t_src = known["tau"], "known training value: " + known["loss"]
    else:
        t, t_src = 0.05, "default (training temperature unknown)"
    eta = lr if lr is not None else (known["lr"] if known else None)
    lam = weight_decay if weight_decay is not None else (known["weight_decay"] if known else None)
    eta_src = "given" if lr is not None else ("known training value" if known else "unknown")
    lam_src = "given" if weight_decay is not None else ("known training value" if known else "unknown")
    if known:
        extra["training"] = {k: known[k] for k in ("batch_size", "tau", "lr", "weight_decay", "optimizer", "source")}
        if known.get("optimizer", "").lower().startswith("adam"):
            caveats.append(
                f"{adapter.name} was trained with {known['optimizer']}: the SGD form of Theorem 1 is not expected to "
                "hold quantitatively (THEORY C3, section 8); read rank statistics only"
            )
    if b != (known or {}).get("batch_size", b):
        caveats.append(f"probe batch size B={b} differs from the training B={known['batch_size']}: heat ~ 1/B, so absolute heat and q are not the training values")
    caveats.append(
        f"probe pairs: {extra['pairs']}; heat and drift describe training steps on this pair distribution, "
        "which need not be the model's own training data"
    )
    texts = [str(x) for x in items] if not isinstance(items, torch.Tensor) else None
    n_trunc = adapter.count_truncated(texts) if texts is not None and hasattr(adapter, "count_truncated") else 0
    extra.update({
        "batch_size": b, "batch_size_source": b_src, "tau": t, "tau_source": t_src,
        "lr_given": eta, "lr_given_source": eta_src, "weight_decay_source": lam_src,
        "decay_mask": decay_mask if isinstance(decay_mask, str) else "callable",
        "loss": "symmetric InfoNCE (CLIP)" if symmetric else "one-directional InfoNCE (MNRL)",
        "n_truncated": int(n_trunc),
        "max_seq_length": getattr(adapter, "max_seq_length", None),
        "attention": getattr(adapter, "attn_switched", []),
        "seed": seed,
    })
    if n_trunc:
        caveats.append(f"{n_trunc} probe items are longer than the model's max length ({adapter.max_seq_length} tokens) and were truncated")

    bar = None
    cb = None
    if progress:
        from rich.progress import Progress

        bar = Progress(transient=True, console=_stderr_console())
        bar.start()
        task = bar.add_task("probe batches", total=batches + 1)

        def cb(done, total):
            bar.update(task, completed=done)

    try:
        m = probe_moments(
            adapter, items, (left, right), batch_size=b, batches=batches, tau=t, decay_mask=decay_mask, seed=seed,
            chunk_size=chunk_size, fd_dtype=fd_dtype, fd_target=fd_target, symmetric=symmetric, progress=cb,
        )
    finally:
        if bar is not None:
            bar.stop()
        if own_adapter:
            adapter.close()
    return summarize_probe(
        m, eta=eta, weight_decay=lam, model=adapter.name, ids=ids, texts=texts, n_boot=n_boot, seed=seed,
        extra=extra, caveats=caveats,
        eta_source="given (--lr)" if lr is not None else f"known training value of {adapter.name}",
    )


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)
