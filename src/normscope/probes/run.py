"""The probe's entry point :func:`run_probe` (what ``normscope probe`` runs)."""

from __future__ import annotations

from collections.abc import Sequence

from normscope._progress import progress_bar, step
from normscope.errors import InputError
from normscope.inputs import check_items, find_junk
from normscope.probes.adapters import as_adapter
from normscope.probes.moments import _as_pairs, _pair_len, probe_moments
from normscope.probes.result import ProbeResult
from normscope.requests.probe import ProbeRequest
from normscope.probes.summary import summarize_probe
from normscope.probes.training import resolve_settings, training_for

__all__ = ["run_probe"]


def run_probe(encoder, items, pairs, request: ProbeRequest | None = None, *, ids: Sequence[str] | None = None,
              progress: bool = False) -> ProbeResult:
    """Probe heat and radial drift of every item and compare the predicted norm with the observed one.

    docs/theory.md section 6: K virtual SGD steps of symmetric InfoNCE on ``pairs``; per item D1,
    D2, S (E8), heat, drift, q (E9), lambda_rad (E4) and R_eq (E7); the step-6 comparisons with
    CIs over batches and items; the circularity guards of section 9.

    Parameters
    ----------
    encoder : TorchEncoder, torch.nn.Module, (query, doc) modules, or ProbeAdapter
    items : sequence of str, or torch.Tensor of shape (P, ...)
        Probe inputs. Texts go through the junk rule of every command
        (:func:`normscope.inputs.find_junk` with the model's tokenizer); at least 3 must remain.
    pairs : PairSource or (left, right)
        Training-like pairs (see :mod:`normscope.pairs`).
    request : ProbeRequest, optional
        The settings (:class:`~normscope.requests.probe.ProbeRequest`; default: its defaults).
        ``batch_size``: B; default the checkpoint's training batch size when known, capped at
        :data:`~normscope.probes.training.DEFAULT_PROBE_BATCH` (64) for CPU cost (heat scales about as 1/B: a
        caveat says so); else 64. ``batches``: K >= 2. ``tau``: default the temperature the checkpoint stores
        (CLIP: 1/exp(logit_scale)), else the training value when known (MiniLM, mpnet: 0.05), else 0.05.
        ``lr``: eta; default the known training value (MiniLM: 2e-5, the schedule's peak), else fitted by
        (E11), else per unit eta. ``weight_decay``: lambda, the user's what-if value; default the
        checkpoint's training value when it is known and positive; without one (trained without decay, or
        unknown) lambda_rad, q/c and R_eq(lambda_rad) are not computed (``decay_reading`` says why).
        ``decay_mask``: see :func:`~normscope.probes.moments.decay_mask_for`. ``chunk_size``: most probe
        items per JVP chunk. ``second_order``: how the second-order radial term of D2 is computed
        (:func:`~normscope.probes.moments.probe_moments`): ``jvp`` forward-over-forward AD, exact, checked on one
        chunk against float64 differences (``second_order['check']``); ``fd`` finite differences in ``fd_dtype``;
        ``auto`` (default) ``jvp`` where the model supports it, else ``fd`` (``second_order['fallback']`` says
        why). ``fd_dtype``: precision of the D2 finite differences when they are used
        (:func:`~normscope.probes.moments.probe_moments`; ``auto`` is float64; float32 adds a float64 spot
        check, ``fd['check']``); ``fd_target``: ``eps ||a|| / R`` of the step (default 3e-3 in float64,
        1e-2 in float32). ``symmetric``: symmetric (CLIP) InfoNCE, else the one-directional row loss.
        ``resampling``: ``n_boot`` replicates of every bootstrap (two-stage over batches and items; items
        only), ``seed`` of the pair batches and of every bootstrap. ``junk``: leave junk items out (listed
        in ``junk``) or raise. ``precision``: of the K pair-gradient passes only (``grad_precision`` of
        :func:`~normscope.probes.moments.probe_moments`); the probe items' embeddings, JVPs, finite
        differences and lambda_rad stay fp32/fp64; with bf16, ``grad_error_vs_fp32`` reports batch 0's
        gradient against fp32 (relative error, cosine).
    ids : sequence of str, optional, keyword-only
        Item ids (default ``"0".."P-1"``); the per-item table is keyed by them.
    progress : bool, keyword-only
        Rich progress bar on stderr (a progress line every 10 s when stderr is not a terminal).

    Returns
    -------
    ProbeResult
        Typed summary fields (labels in ``ProbeResult.labels()``) and the per-item table ``items``
        (junk left out, input order).

    Raises
    ------
    InputError
        Fewer than 3 items after junk, junk with
        ``junk='error'``, too few pairs for B, ids of another length.
    ModelError
        A model with no trainable parameters or without forward-mode AD; with ``second_order='jvp'``,
        one without nested forward-mode AD or failing the float64 check.
    """
    import torch

    r = request if request is not None else ProbeRequest()
    batch_size, batches, tau, lr, weight_decay = r.batch_size, r.batches, r.tau, r.lr, r.weight_decay
    decay_mask, chunk_size, fd_dtype, fd_target, symmetric = r.decay_mask, r.chunk_size, r.fd_dtype, r.fd_target, r.symmetric
    junk, precision, n_boot, seed, second_order = r.junk, r.precision, r.resampling.n_boot, r.resampling.seed, r.second_order
    is_tensor = isinstance(items, torch.Tensor)
    texts = None if is_tensor else check_items(items)
    n = len(items)
    ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(n)]
    if len(ids) != n:
        raise InputError(f"got {len(ids)} ids for {n} probe items")
    left, right = _as_pairs(pairs)
    n_pairs = _pair_len((left, right))
    adapter = as_adapter(encoder)
    own_adapter = adapter is not encoder
    try:
        found = find_junk(texts, ids, tokenizer=adapter.hf_tokenizer) if texts is not None else None
        if found and junk == "error":
            raise found.error("probe items")
        if found:
            drop = set(found.index)
            keep = [i for i in range(n) if i not in drop]
            texts, ids = [texts[i] for i in keep], [ids[i] for i in keep]
        if len(ids) < 3:
            raise InputError(f"the probe needs at least 3 items, got {len(ids)}"
                             + (f" after leaving out {found.count} junk items" if found else ""))
        counts = adapter.token_counts(texts) if texts is not None else None
        n_trunc = int((counts[1] > counts[0]).sum()) if counts is not None else None
        settings = resolve_settings(training_for(adapter.fingerprint), fingerprint=adapter.fingerprint, n_pairs=n_pairs,
                                    batch_size=batch_size, tau=tau, lr=lr, weight_decay=weight_decay,
                                    checkpoint_tau=getattr(getattr(adapter, "encoder", None), "temperature", None))
        caveats = list(settings.notes)
        pairs_name = getattr(pairs, "name", "user pairs")
        caveats.append(f"probe pairs: {pairs_name}; heat and drift describe training steps on this pair distribution, "
                       "which need not be the model's own training data")
        if found:
            caveats.append(found.message("probe items"))
        if n_trunc:
            caveats.append(f"{n_trunc} probe items are longer than the model's max length ({adapter.max_seq_length} "
                           "tokens) and were truncated")
        fp = adapter.fingerprint
        fields = dict(
            model=adapter.name, fingerprint=fp.to_dict() if hasattr(fp, "to_dict") else None,
            junk=found.to_dict() if found is not None else {"count": 0, "ids": [], "reasons": {}},
            n_truncated=n_trunc, max_seq_length=adapter.max_seq_length,
            batch_size=settings.batch_size, batch_size_source=settings.batch_size_source,
            tau=settings.tau, tau_source=settings.tau_source, weight_decay_source=settings.weight_decay_source,
            decay_reading=settings.decay_reading, training=settings.training, pairs=pairs_name, n_pairs=n_pairs,
            decay_mask=decay_mask if isinstance(decay_mask, str) else "callable",
            loss="symmetric InfoNCE (CLIP)" if symmetric else "one-directional InfoNCE (MNRL)",
            attention=list(adapter.attn_switched), seed=seed, precision=precision,
        )
        probe_items = items if is_tensor else texts
        # K pair batches, then one pass for the weight-decay term: K + 1 passes over the items, counted as such
        with progress_bar(progress, batches + 1, label=f"probe ({batches} pair batches + the weight-decay term)",
                          unit="passes") as advance:
            m = probe_moments(
                adapter, probe_items, (left, right), batch_size=settings.batch_size, batches=batches, tau=settings.tau,
                decay_mask=decay_mask, seed=seed, chunk_size=chunk_size, second_order=second_order,
                fd_dtype=fd_dtype, fd_target=fd_target,
                symmetric=symmetric, grad_precision=precision, progress=lambda done, total: advance(),
            )
        fields["grad_error_vs_fp32"] = m.grad_check
    finally:
        if own_adapter:
            adapter.close()
    with step(f"summarising: bootstrap CIs ({n_boot:,} resamples)"):
        return summarize_probe(
            m, eta=settings.lr, weight_decay=settings.weight_decay,
            without_decay=settings.decay_reading == "trained_without_decay", ids=ids, texts=texts, n_boot=n_boot,
            seed=seed, fields=fields, caveats=caveats, eta_source=settings.lr_source,
        )
