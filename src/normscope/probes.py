"""Heat and radial-drift probes on pretrained encoders (THEORY.md sections 3, 4, 6 and 9).

For each probe input x of an encoder ``z = f_theta(x)`` this module estimates, by K *virtual*
SGD steps on training-like pairs (symmetric InfoNCE on cosine logits), the per-unit-eta
quantities of (E8)

- ``D1 = E_b <z, a_b>``: first-order radial drift, ``a_b = jvp(f(., x), theta, -g_b)``;
- ``D2 = E_b <z, c_b>``: second-order radial drift, ``c_b = (1/2) f''_x[g_b, g_b]`` by central
  finite differences at a safe step (never at the real eta in float32);
- ``S = R^2 E_b ||a_b||^2``: first-order heat;

and from them, with the learning rate eta and the weight decay lambda, the heat
``Sigma^2 = eta^2 S``, the drift ``D~ = eta D1 + eta^2 D2``, the radial decay rate
``lambda_rad`` (E4), the implied decay ``q`` (E9) and the predicted norm ``R_eq`` (E7).

Cost (THEORY.md section 6): ``K`` backward passes on ``B`` pairs shared by all probes, plus per
probe and batch one JVP (about 2-3 forwards) and 2 forwards for D2, i.e. about
``K (C_bwd(B) + 5 P C_fwd)``.

The public entry point is :func:`run_probe`; the raw estimator is :func:`probe_moments`.
Encoders are reached through the small :class:`ProbeAdapter` protocol; adapters exist for the
foundation's :class:`~normscope.encoders.base.TorchEncoder` (texts) and for plain
``torch.nn.Module`` towers mapping tensors to ``(n, d)`` (:class:`ModuleAdapter`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from normscope.errors import InputError, ModelError

__all__ = [
    "ProbeAdapter",
    "TextEncoderAdapter",
    "ModuleAdapter",
    "as_adapter",
    "KNOWN_TRAINING",
    "training_defaults",
    "decay_mask_for",
    "symmetric_info_nce",
    "ProbeMoments",
    "probe_moments",
    "ProbeResult",
    "run_probe",
    "summarize_probe",
    "plot_predicted_vs_observed",
    "plot_heat_drift",
]

# ----------------------------------------------------------------------------- training values
#: Training values of known models (used when the caller does not give them).
KNOWN_TRAINING: dict[str, dict] = {
    "all-MiniLM-L6-v2": {
        "batch_size": 1024,
        "tau": 0.05,
        "lr": 2e-5,
        "weight_decay": 0.01,
        "optimizer": "AdamW",
        "loss": "MultipleNegativesRankingLoss (in-batch negatives, scale 20)",
        "source": (
            "model card of sentence-transformers/all-MiniLM-L6-v2: MultipleNegativesRankingLoss with "
            "scale 20 (tau = 1/20 = 0.05), batch size 1024, learning rate 2e-5, AdamW; weight decay 0.01 "
            "is the sentence-transformers fit() default"
        ),
    },
}

#: CPU-friendly default probe batch size when the training batch size is larger.
DEFAULT_PROBE_BATCH = 64


def training_defaults(model_name: str | None) -> dict | None:
    """Known training values of ``model_name`` (a copy), or None.

    Parameters
    ----------
    model_name : str or None
        Model name or hub id; matched on its last path component, case-insensitively.

    Returns
    -------
    dict or None
        Keys ``batch_size``, ``tau``, ``lr``, ``weight_decay``, ``optimizer``, ``loss``, ``source``.
    """
    if not model_name:
        return None
    key = str(model_name).rstrip("/").split("/")[-1].lower()
    for name, vals in KNOWN_TRAINING.items():
        if key == name.lower() or key.startswith(name.lower() + "-"):
            return dict(vals)
    return None


# ----------------------------------------------------------------------------- adapters
@runtime_checkable
class ProbeAdapter(Protocol):
    """What the probe needs from an encoder.

    Attributes
    ----------
    name : str
        Model name for the summary.

    Methods
    -------
    parameters() -> dict[str, torch.Tensor]
        The trainable parameters theta (name -> tensor), detached.
    features(data, idx, side) -> Any
        Model input for the rows ``idx`` of ``data`` (a list of texts or a tensor) on ``side``
        (``"query"``: the tower of probe items and left pair members; ``"doc"``: right members).
    embed(params, feats, side) -> torch.Tensor
        Raw embeddings of shape (n, d) as a differentiable function of ``params`` (a full
        parameter dict with the keys of :meth:`parameters`), via ``torch.func.functional_call``.
    with_dtype(dtype) -> ProbeAdapter
        An independent copy computing in ``dtype`` (for float64 finite differences).
    """

    name: str

    def parameters(self) -> dict: ...

    def features(self, data, idx, side: str) -> Any: ...

    def embed(self, params: dict, feats, side: str): ...

    def with_dtype(self, dtype) -> ProbeAdapter: ...


class _ForwardWrapper:
    """Builds an ``nn.Module`` whose forward is ``encoder.forward`` (for functional_call)."""

    @staticmethod
    def make(encoder):
        import torch

        class _Wrap(torch.nn.Module):
            def __init__(self, inner, fwd):
                super().__init__()
                self.inner = inner
                self._fwd = fwd

            def forward(self, feats):
                return self._fwd(feats)

        return _Wrap


def _set_eager_attention(module) -> list[tuple[Any, str]]:
    """Switch every Hugging Face sub-model of ``module`` to eager attention; return the old settings.

    Forward-mode AD has no rule for the fused scaled-dot-product attention kernels on CPU
    (THEORY.md section 9), so JVPs need ``attn_implementation='eager'``.
    """
    changed = []
    for sub in module.modules():
        cfg = getattr(sub, "config", None)
        impl = getattr(cfg, "_attn_implementation", None) if cfg is not None else None
        if impl is not None and impl != "eager" and hasattr(sub, "get_input_embeddings"):
            if hasattr(sub, "set_attn_implementation"):
                sub.set_attn_implementation("eager")
            else:  # older transformers
                cfg._attn_implementation = "eager"
            changed.append((sub, impl))
    return changed


def _restore_attention(changed) -> None:
    for sub, impl in changed:
        if hasattr(sub, "set_attn_implementation"):
            sub.set_attn_implementation(impl)
        else:
            sub.config._attn_implementation = impl


class TextEncoderAdapter:
    """:class:`ProbeAdapter` over a foundation :class:`~normscope.encoders.base.TorchEncoder`.

    Both sides of a pair go through the same (shared) encoder, as in sentence-transformers
    training. Hugging Face attention is switched to the eager implementation for the lifetime of
    the adapter (call :meth:`close` to restore it); dropout is off (``eval()``).

    Parameters
    ----------
    encoder : TorchEncoder
        Has ``.module``, ``.tokenize(texts)``, ``.forward(features)``.
    """

    def __init__(self, encoder, *, _module=None, _changed=None):
        import torch

        self.encoder = encoder
        self.name = getattr(getattr(encoder, "fingerprint", None), "name", type(encoder).__name__)
        module = encoder.module if _module is None else _module
        module.eval()
        self._changed = _set_eager_attention(module) if _changed is None else _changed
        self.attn_switched = [f"{type(s).__name__}: {old} -> eager" for s, old in self._changed]
        if _module is None:
            fwd = encoder.forward
        else:  # a copied module: call it the way the encoder does
            fwd = _copied_forward(encoder, module)
        self._wrap = _ForwardWrapper.make(encoder)(module, fwd)
        self._module = module
        self.dtype = next(iter(module.parameters())).dtype if any(True for _ in module.parameters()) else torch.float32
        self.max_seq_length = getattr(encoder, "max_seq_length", None)

    def parameters(self) -> dict:
        return {f"inner.{k}": v.detach() for k, v in self._module.named_parameters() if v.requires_grad}

    def features(self, data, idx, side: str):
        return self.encoder.tokenize([str(data[int(i)]) for i in idx])

    def embed(self, params: dict, feats, side: str):
        from torch.func import functional_call

        return functional_call(self._wrap, params, (dict(feats),), strict=False)

    def with_dtype(self, dtype) -> TextEncoderAdapter:
        mod = copy.deepcopy(self._module).to(dtype)
        mod.eval()
        return TextEncoderAdapter(self.encoder, _module=mod, _changed=[])

    def lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts (capped at the model's max length), or characters / 4 without a tokenizer."""
        tok = getattr(getattr(self.encoder, "model", None), "tokenizer", None)
        texts = [str(t) for t in texts]
        if tok is None:
            return [max(1, len(t) // 4) for t in texts]
        cap = self.max_seq_length or 10**9
        return [min(len(ids), cap) for ids in tok(texts, add_special_tokens=True, verbose=False)["input_ids"]]

    def count_truncated(self, texts: Sequence[str]) -> int:
        fn = getattr(self.encoder, "count_truncated", None)
        return int(fn(list(texts))) if fn is not None else 0

    def close(self) -> None:
        """Restore the attention implementation that was in place before."""
        _restore_attention(self._changed)
        self._changed = []


def _copied_forward(encoder, module):
    """``encoder.forward`` re-targeted to a copied module (sentence-transformers style)."""

    def fwd(feats):
        out = module(dict(feats))
        if isinstance(out, dict):
            return out["sentence_embedding"]
        return out

    return fwd


class ModuleAdapter:
    """:class:`ProbeAdapter` over plain ``torch.nn.Module`` towers mapping tensors to (n, d).

    Parameters
    ----------
    query : torch.nn.Module
        Tower for probe items and the left members of pairs.
    doc : torch.nn.Module, optional
        Tower for the right members of pairs (a two-tower model); default: ``query`` (shared).
    name : str, keyword-only
    """

    def __init__(self, query, doc=None, *, name: str = "module"):
        import torch

        self.name = name
        self.shared = doc is None or doc is query
        towers = {"query": query} if self.shared else {"query": query, "doc": doc}
        self._towers = torch.nn.ModuleDict(towers)
        self._towers.eval()
        ps = list(self._towers.parameters())
        self.dtype = ps[0].dtype if ps else torch.float32
        self.attn_switched: list[str] = []
        self.max_seq_length = None

    def parameters(self) -> dict:
        return {k: v.detach() for k, v in self._towers.named_parameters() if v.requires_grad}

    def features(self, data, idx, side: str):
        import torch

        x = data[torch.as_tensor(np.asarray(idx), dtype=torch.long)] if not isinstance(data, np.ndarray) else data[np.asarray(idx)]
        x = torch.as_tensor(x)
        return x.to(self.dtype) if x.is_floating_point() else x

    def embed(self, params: dict, feats, side: str):
        from torch.func import functional_call

        tower = "query" if (self.shared or side == "query") else "doc"
        sub = {k[len(tower) + 1 :]: v for k, v in params.items() if k.startswith(tower + ".")}
        if feats.is_floating_point() and feats.dtype != self.dtype:
            feats = feats.to(self.dtype)
        return functional_call(self._towers[tower], sub, (feats,), strict=False)

    def with_dtype(self, dtype) -> ModuleAdapter:
        q = copy.deepcopy(self._towers["query"]).to(dtype)
        d = None if self.shared else copy.deepcopy(self._towers["doc"]).to(dtype)
        return ModuleAdapter(q, d, name=self.name)

    def count_truncated(self, texts) -> int:
        return 0

    def close(self) -> None:
        pass


def as_adapter(encoder) -> Any:
    """Wrap ``encoder`` as a :class:`ProbeAdapter`.

    Parameters
    ----------
    encoder : TorchEncoder, torch.nn.Module, tuple (query_module, doc_module) or ProbeAdapter

    Returns
    -------
    ProbeAdapter

    Raises
    ------
    ModelError
        If ``encoder`` is not differentiable (e.g. a precomputed-vector encoder).
    """
    import torch

    from normscope.encoders.base import TorchEncoder

    if isinstance(encoder, (TextEncoderAdapter, ModuleAdapter)):
        return encoder
    if isinstance(encoder, TorchEncoder):
        return TextEncoderAdapter(encoder)
    if isinstance(encoder, torch.nn.Module):
        return ModuleAdapter(encoder, name=type(encoder).__name__)
    if isinstance(encoder, tuple) and len(encoder) == 2 and all(isinstance(m, torch.nn.Module) for m in encoder):
        return ModuleAdapter(encoder[0], encoder[1], name="two-tower")
    if all(hasattr(encoder, a) for a in ("parameters", "features", "embed", "with_dtype", "name")):
        return encoder
    raise ModelError(
        f"cannot probe {type(encoder).__name__}: the probe needs a differentiable torch encoder "
        "(TorchEncoder, nn.Module, or a (query, doc) pair of nn.Modules)"
    )


# ----------------------------------------------------------------------------- decay mask
def decay_mask_for(params: dict, decay_mask="matrices") -> dict:
    """Which parameters weight decay acts on (theta_D of THEORY.md section 1).

    Parameters
    ----------
    params : dict of str -> torch.Tensor
    decay_mask : {'matrices', 'all'} or callable, default 'matrices'
        ``'matrices'``: every parameter with ``ndim >= 2`` (weight matrices and embedding
        tables), so biases and LayerNorm gains/biases are excluded: the usual AdamW practice
        (the sentence-transformers / Hugging Face trainer default). ``'all'``: every parameter.
        A callable ``(name, tensor) -> bool`` selects freely.

    Returns
    -------
    dict of str -> bool

    Raises
    ------
    InputError
        Unknown mask name, or a mask selecting no parameter.
    """
    if callable(decay_mask):
        mask = {k: bool(decay_mask(k, v)) for k, v in params.items()}
    elif decay_mask == "matrices":
        mask = {k: (v.ndim >= 2 and "norm" not in k.lower()) for k, v in params.items()}
    elif decay_mask == "all":
        mask = {k: True for k in params}
    else:
        raise InputError(f"unknown decay_mask {decay_mask!r}: use 'matrices', 'all' or a callable")
    if not any(mask.values()):
        raise InputError(f"decay_mask {decay_mask!r} selects no parameter")
    return mask


# ----------------------------------------------------------------------------- loss
def symmetric_info_nce(z_q, z_d, tau: float, *, symmetric: bool = True):
    """Symmetric InfoNCE on cosine logits (E10), differentiable torch version.

    ``L = (1/2B) sum_k [-log P_kk - log Q_kk]`` with ``S = U V^T / tau`` of the row-normalised
    embeddings, ``P = softmax_row(S)``, ``Q = softmax_col(S)`` (CLIP loss). With
    ``symmetric=False`` only the row term is kept (sentence-transformers'
    MultipleNegativesRankingLoss with ``scale = 1/tau``).

    Parameters
    ----------
    z_q, z_d : torch.Tensor of shape (B, d)
        Raw embeddings of the paired items (row k of each is a positive pair).
    tau : float
        Temperature (> 0).

    Returns
    -------
    torch.Tensor
        Scalar loss. Agrees with :func:`normscope.theory.info_nce_loss` (numpy) for
        ``symmetric=True`` (checked in the tests).
    """
    import torch
    import torch.nn.functional as F

    u = F.normalize(z_q, dim=1)
    v = F.normalize(z_d, dim=1)
    s = u @ v.T / tau
    target = torch.arange(s.shape[0], device=s.device)
    if not symmetric:
        return F.cross_entropy(s, target)
    return 0.5 * (F.cross_entropy(s, target) + F.cross_entropy(s.T, target))


# ----------------------------------------------------------------------------- estimator
@dataclass
class ProbeMoments:
    """Raw per-batch probe quantities, per unit eta (E8).

    Attributes
    ----------
    r : ndarray of shape (P,)
        Observed norm R = ||z|| (float64).
    za : ndarray of shape (K, P)
        ``<z, a_k>`` per batch (first-order radial displacement, units R^2 per unit eta).
    aa : ndarray of shape (K, P)
        ``||a_k||^2`` (R-free displacement, units R^2 per unit eta^2).
    zc : ndarray of shape (K, P)
        ``<z, c_k>`` (second-order radial term, units R^2 per unit eta^2).
    a_sum : ndarray of shape (P, d)
        ``sum_k a_k`` (for the variance-only heat ``S_var``).
    zjd : ndarray of shape (P,)
        ``<z, J_x theta_D>``; ``lambda_rad = lambda * zjd / R^2`` (E4).
    eps : ndarray of shape (K, n_chunks)
        Finite-difference steps used for D2.
    losses : ndarray of shape (K,)
        InfoNCE loss of each probe batch.
    grad_norms : ndarray of shape (K,)
    timings : dict
        Seconds spent in backward passes, JVPs, finite differences and lambda_rad.
    """

    r: np.ndarray
    za: np.ndarray
    aa: np.ndarray
    zc: np.ndarray
    a_sum: np.ndarray
    zjd: np.ndarray
    eps: np.ndarray
    losses: np.ndarray
    grad_norms: np.ndarray
    timings: dict = field(default_factory=dict)
    fd_dtype: str = "float64"
    fd_target: float = 3e-3
    fd_check: dict | None = None

    @property
    def d1(self) -> np.ndarray:
        return self.za.mean(axis=0)

    @property
    def d2(self) -> np.ndarray:
        return self.zc.mean(axis=0)

    @property
    def s(self) -> np.ndarray:
        return self.r**2 * self.aa.mean(axis=0)


def _pair_len(pairs) -> int:
    left, right = pairs
    if len(left) != len(right):
        raise InputError(f"pairs: {len(left)} left members but {len(right)} right members")
    return len(left)


def _as_pairs(pairs):
    """(left, right) from a PairSource, a (left, right) tuple, or an (N, 2) sequence."""
    if hasattr(pairs, "left") and hasattr(pairs, "right"):
        return pairs.left, pairs.right
    if isinstance(pairs, tuple) and len(pairs) == 2:
        return pairs
    raise InputError(f"pairs must be a PairSource or a (left, right) tuple, got {type(pairs).__name__}")


def sample_pair_batches(n_pairs: int, batch_size: int, batches: int, seed: int) -> list[np.ndarray]:
    """Deterministic probe batches: ``batches`` index arrays of ``batch_size`` distinct pairs.

    Each batch is drawn without replacement from ``numpy.random.default_rng(seed)``.

    Raises
    ------
    InputError
        If there are fewer than ``batch_size`` pairs or ``batch_size < 2``.
    """
    if batch_size < 2:
        raise InputError(f"batch_size must be >= 2 (in-batch negatives), got {batch_size}")
    if n_pairs < batch_size:
        raise InputError(f"only {n_pairs} pairs for a batch size of {batch_size}")
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n_pairs, size=batch_size, replace=False)) for _ in range(batches)]


#: Padded tokens per chunk for text items (chunks of long texts hold fewer items).
TOKEN_BUDGET = 4096


def _make_chunks(adapter, items, chunk_size: int) -> list[np.ndarray]:
    """Index chunks of the probe items.

    Texts are sorted by token length (the adapter's ``lengths`` when it has one, else characters)
    and grouped greedily so that ``n_chunk * max_len <= TOKEN_BUDGET`` and ``n_chunk <= chunk_size``:
    a long item does not pad a whole chunk of short ones. Results are written back by index.
    """
    n = len(items)
    if hasattr(items, "shape"):
        return [np.arange(s, min(s + chunk_size, n)) for s in range(0, n, chunk_size)]
    fn = getattr(adapter, "lengths", None)
    lengths = np.asarray(fn(items) if fn is not None else [max(1, len(str(t)) // 4) for t in items])
    order = np.argsort(lengths, kind="stable")
    chunks, cur, cur_max = [], [], 0
    for i in order:
        m = max(cur_max, int(lengths[i]))
        if cur and (len(cur) + 1 > chunk_size or (len(cur) + 1) * m > TOKEN_BUDGET):
            chunks.append(np.sort(np.array(cur)))
            cur, m = [], int(lengths[i])
        cur.append(int(i))
        cur_max = m
    if cur:
        chunks.append(np.sort(np.array(cur)))
    return chunks


def _fd_step(a_rel_median: float, target: float) -> float:
    if not math.isfinite(a_rel_median) or a_rel_median <= 0:
        return 1.0
    return target / a_rel_median


def probe_moments(
    adapter,
    items,
    pairs,
    *,
    batch_size: int,
    batches: int,
    tau: float,
    decay_mask="matrices",
    seed: int = 0,
    chunk_size: int = 128,
    fd_dtype: str = "auto",
    fd_target: float | None = None,
    fd_check: bool = True,
    symmetric: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> ProbeMoments:
    """The section-6 estimators: K virtual SGD steps, JVP displacements and FD radial curvature.

    For each probe batch ``b_k`` (``batch_size`` pairs, drawn by :func:`sample_pair_batches`):

    1. ``g_k = grad_theta L_{b_k}`` (one forward/backward of :func:`symmetric_info_nce`, eval mode);
    2. for each chunk of probe items: ``a = jvp(f(., x), theta, -g_k)`` batched over the chunk
       (``torch.func.jvp`` + ``functional_call``), and
       ``c = (f(theta - eps g_k) + f(theta + eps g_k) - 2 z) / (2 eps^2)`` in ``fd_dtype`` with one
       ``eps`` per chunk chosen so that ``eps * median(||a|| / R) = fd_target``.

    Finally one JVP along ``theta_D`` (the decay mask) gives ``<z, J_x theta_D>`` (E4).

    Parameters
    ----------
    adapter : ProbeAdapter
    items : list of str or torch.Tensor of shape (P, ...)
        Probe inputs (query side).
    pairs : PairSource or (left, right)
        Training-like pairs; ``left`` through the query tower, ``right`` through the doc tower.
    batch_size, batches : int
        B and K.
    tau : float
        InfoNCE temperature.
    decay_mask : see :func:`decay_mask_for`
    seed : int
        Seed of the batch sampler.
    chunk_size : int
        Probe items per JVP / forward chunk.
    fd_dtype : {'auto', 'float64', 'float32'}
        Precision of the finite differences for D2 (THEORY.md section 9: float64, or float32 with
        a larger step). ``'auto'``: the model's own precision (no copy), i.e. float64 for a float64
        model and float32 (step 3e-2) for a float32 model. ``'float64'`` on a float32 model
        differences a float64 copy (about 3x the cost of a float32 forward on CPU).
    fd_target : float, optional
        Relative size ``eps ||a|| / R`` of the finite-difference step; default 3e-3 in float64 and
        3e-2 in float32 (measured on MiniLM: float32 at 3e-3 is off by a median 2 % and up to 14 %
        of mean |D2|; at 3e-2 by 0.05 % median, < 1 % max).
    fd_check : bool
        When the differences run in float32: recompute D2 of the first chunk of the first batch on a
        float64 copy at step 3e-3 and report the relative difference (``ProbeMoments.fd_check``).
    symmetric : bool
        Symmetric (CLIP) InfoNCE, else the one-directional row loss.
    progress : callable (done, total) -> None, optional

    Returns
    -------
    ProbeMoments

    Raises
    ------
    InputError
        K < 1, too few pairs, empty items.
    ModelError
        No trainable parameters, or a model without forward-mode AD support.
    """
    import torch
    from torch.func import jvp

    if batches < 1:
        raise InputError(f"batches must be >= 1, got {batches}")
    n_items = len(items)
    if n_items == 0:
        raise InputError("no probe items")
    left, right = _as_pairs(pairs)
    n_pairs = _pair_len((left, right))
    if fd_dtype not in ("auto", "float64", "float32"):
        raise InputError(f"fd_dtype must be 'auto', 'float64' or 'float32', got {fd_dtype!r}")
    if fd_dtype == "auto":
        fd_dtype = "float64" if adapter.dtype == torch.float64 else "float32"
    if fd_target is None:
        fd_target = 3e-3 if fd_dtype == "float64" else 3e-2
    theta = adapter.parameters()
    if not theta:
        raise ModelError(f"model {adapter.name!r} has no trainable parameters (requires_grad is False everywhere)")
    mask = decay_mask_for(theta, decay_mask)
    batch_idx = sample_pair_batches(n_pairs, batch_size, batches, seed)
    fd_adapter = adapter.with_dtype(torch.float64) if (fd_dtype == "float64" and adapter.dtype != torch.float64) else adapter
    fd_torch = torch.float64 if fd_dtype == "float64" else adapter.dtype
    theta_fd = {k: v.to(fd_torch) for k, v in fd_adapter.parameters().items()}
    if set(theta_fd) != set(theta):
        raise ModelError("the float64 copy of the model has different parameters")

    # chunks of probe items (features prepared once)
    chunks = _make_chunks(adapter, items, chunk_size)
    feats = [adapter.features(items, idx, "query") for idx in chunks]
    feats_fd = [fd_adapter.features(items, idx, "query") for idx in chunks] if fd_adapter is not adapter else feats
    timings = {"backward": 0.0, "jvp": 0.0, "fd": 0.0, "lambda_rad": 0.0, "z": 0.0}

    t0 = time.perf_counter()
    with torch.no_grad():
        z_chunks = [adapter.embed(theta, f, "query").double() for f in feats]
        z_fd_chunks = [fd_adapter.embed(theta_fd, f, "query") for f in feats_fd]
    timings["z"] = time.perf_counter() - t0
    z_all = torch.cat(z_chunks)
    r = z_all.norm(dim=1).cpu().numpy()
    if np.any(~np.isfinite(r)) or np.any(r <= 0):
        raise ModelError(f"model {adapter.name!r} returns zero or non-finite embeddings for some probe items")
    d = z_all.shape[1]

    za = np.zeros((batches, n_items))
    aa = np.zeros((batches, n_items))
    zc = np.zeros((batches, n_items))
    a_sum = np.zeros((n_items, d))
    eps_used = np.zeros((batches, len(chunks)))
    losses = np.zeros(batches)
    gnorms = np.zeros(batches)
    total_steps = batches + 1
    buf_p = {n: torch.empty_like(v) for n, v in theta_fd.items()}
    buf_m = {n: torch.empty_like(v) for n, v in theta_fd.items()}
    for k, bidx in enumerate(batch_idx):
        t0 = time.perf_counter()
        th = {n: v.detach().clone().requires_grad_(True) for n, v in theta.items()}
        fq = adapter.features(left, bidx, "query")
        fdoc = adapter.features(right, bidx, "doc")
        loss = symmetric_info_nce(adapter.embed(th, fq, "query"), adapter.embed(th, fdoc, "doc"), tau, symmetric=symmetric)
        names = list(th)
        grads = torch.autograd.grad(loss, [th[n] for n in names], allow_unused=True)
        g = {n: (gr.detach() if gr is not None else torch.zeros_like(theta[n])) for n, gr in zip(names, grads)}
        del th, grads
        losses[k] = float(loss.detach())
        gnorms[k] = float(torch.sqrt(sum((v.double() ** 2).sum() for v in g.values())))
        timings["backward"] += time.perf_counter() - t0
        tangent = {n: -v for n, v in g.items()}
        tangent_fd = {n: v.to(fd_torch) for n, v in tangent.items()}
        for ci, idx in enumerate(chunks):
            t0 = time.perf_counter()
            try:
                _, a = jvp(lambda p, _f=feats[ci]: adapter.embed(p, _f, "query"), (theta,), (tangent,))
            except (NotImplementedError, RuntimeError) as exc:
                raise ModelError(
                    f"forward-mode AD (torch.func.jvp) fails on model {adapter.name!r}: {str(exc).splitlines()[0][:160]}"
                ) from None
            a = a.detach().double()
            z = z_chunks[ci]
            za[k, idx] = (z * a).sum(1).cpu().numpy()
            aa[k, idx] = (a * a).sum(1).cpu().numpy()
            a_sum[idx] += a.cpu().numpy()
            timings["jvp"] += time.perf_counter() - t0
            t0 = time.perf_counter()
            rel = float(torch.median(a.norm(dim=1) / z.norm(dim=1)))
            eps = _fd_step(rel, fd_target)
            eps_used[k, ci] = eps
            with torch.no_grad():
                for n in theta_fd:  # theta +- eps v into preallocated buffers (no per-chunk allocation)
                    torch.add(theta_fd[n], tangent_fd[n], alpha=eps, out=buf_p[n])
                    torch.add(theta_fd[n], tangent_fd[n], alpha=-eps, out=buf_m[n])
                zp = fd_adapter.embed(buf_p, feats_fd[ci], "query")
                zm = fd_adapter.embed(buf_m, feats_fd[ci], "query")
                z0 = z_fd_chunks[ci]
                c = ((zp - z0) + (zm - z0)).double() / (2.0 * eps * eps)
            zc[k, idx] = (z0.double() * c).sum(1).cpu().numpy()
            timings["fd"] += time.perf_counter() - t0
            if k == 0 and ci == 0 and fd_check and fd_torch != torch.float64:
                t0 = time.perf_counter()
                check = _fd_float64_check(adapter, items, idx, theta, tangent, rel, zc[0, idx])
                timings["fd_check"] = time.perf_counter() - t0
        if progress is not None:
            progress(k + 1, total_steps)

    # lambda_rad (E4): one JVP along theta_D
    t0 = time.perf_counter()
    theta_d = {n: (v if mask[n] else torch.zeros_like(v)) for n, v in theta.items()}
    zjd = np.zeros(n_items)
    for ci, idx in enumerate(chunks):
        _, jd = jvp(lambda p, _f=feats[ci]: adapter.embed(p, _f, "query"), (theta,), (theta_d,))
        zjd[idx] = (z_chunks[ci] * jd.detach().double()).sum(1).cpu().numpy()
    timings["lambda_rad"] = time.perf_counter() - t0
    if progress is not None:
        progress(total_steps, total_steps)
    return ProbeMoments(
        r=r, za=za, aa=aa, zc=zc, a_sum=a_sum, zjd=zjd, eps=eps_used, losses=losses, grad_norms=gnorms,
        timings=timings, fd_dtype=fd_dtype, fd_target=fd_target,
        fd_check=check if (fd_check and fd_torch != torch.float64) else None,
    )


def _fd_float64_check(adapter, items, idx, theta, tangent, rel, zc32) -> dict:
    """D2 of one chunk recomputed on a float64 copy at step 3e-3; relative difference to ``zc32``."""
    import torch

    ad64 = adapter.with_dtype(torch.float64)
    th64 = {n: v.to(torch.float64) for n, v in ad64.parameters().items()}
    f = ad64.features(items, idx, "query")
    eps = _fd_step(rel, 3e-3)
    with torch.no_grad():
        z0 = ad64.embed(th64, f, "query")
        zp = ad64.embed({n: th64[n] + eps * tangent[n].to(torch.float64) for n in th64}, f, "query")
        zm = ad64.embed({n: th64[n] - eps * tangent[n].to(torch.float64) for n in th64}, f, "query")
        zc64 = (z0 * ((zp - z0) + (zm - z0)) / (2.0 * eps * eps)).sum(1).cpu().numpy()
    del ad64, th64
    scale = float(np.mean(np.abs(zc64))) or 1.0
    diff = np.abs(np.asarray(zc32) - zc64) / scale
    return {"items": int(len(idx)), "median_rel_diff": float(np.median(diff)), "max_rel_diff": float(np.max(diff)),
            "reference": "float64 copy, eps target 3e-3", "scale": "mean |<z, c>| of the chunk"}


# ----------------------------------------------------------------------------- results
@dataclass
class ProbeResult:
    """Output of :func:`run_probe`.

    Attributes
    ----------
    summary : dict
        JSON-serialisable summary (the CLI's ``--json``); keys documented in :func:`run_probe`.
    items : pandas.DataFrame
        One row per probe item (columns documented in :func:`run_probe`).
    moments : ProbeMoments or None
        The raw per-batch quantities.
    """

    summary: dict
    items: pd.DataFrame
    moments: ProbeMoments | None = None


def _clean(v):
    """Floats for JSON: NaN/inf -> None, numpy scalars -> Python."""
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, (np.floating, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


def _corr(x, y, *, n_boot: int, seed: int) -> dict:
    """Pearson and Spearman with bootstrap CIs via :func:`normscope.stats.correlation`."""
    from normscope.stats import correlation

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return {"pearson": None, "spearman": None, "ci": {"pearson": [None, None], "spearman": [None, None]},
                "n": int(ok.sum()), "p_value": None, "note": "fewer than 3 valid items or a constant column"}
    res = correlation(x, y, n_boot=n_boot, n_perm=min(n_boot, 1000), seed=seed).to_dict()
    return {
        "pearson": res["pearson"],
        "spearman": res["spearman"],
        "ci": {"pearson": res["pearson_ci"], "spearman": res["spearman_ci"], "level": res.get("ci_level", 0.95)},
        "n": res["n"],
        "p_value": res["p_value"],
    }


def _split_half(per_batch: np.ndarray) -> float:
    """Spearman-Brown corrected split-half reliability across items (even vs odd batches)."""
    if per_batch.shape[0] < 2:
        return float("nan")
    a = per_batch[0::2].mean(axis=0)
    b = per_batch[1::2].mean(axis=0)
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    r = float(np.corrcoef(a, b)[0, 1])
    return 2 * r / (1 + r) if r > 0 else r  # Spearman-Brown is meaningless for r <= 0: report r itself


def summarize_probe(
    m: ProbeMoments,
    *,
    eta: float | None,
    weight_decay: float | None,
    model: str = "model",
    ids: Sequence[str] | None = None,
    texts: Sequence[str] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    extra: dict | None = None,
    caveats: Sequence[str] = (),
    eta_source: str | None = None,
) -> ProbeResult:
    """Per-item quantities (E4, E7, E8, E9), the section-6 step-6 comparisons and circularity guards.

    Parameters
    ----------
    m : ProbeMoments
    eta : float or None
        Learning rate. None: taken from the (E11) least-squares fit when that gives eta > 0, else
        quantities are reported per unit eta (eta = 1) with a caveat.
    weight_decay : float or None
        lambda. None: ``lambda_rad`` is unknown; only the ``c_fit`` route is used.
    model : str
    ids, texts : sequences of length P, optional
    n_boot : int
        Bootstrap resamples of every correlation.
    seed : int
    extra : dict, optional
        Merged into the summary (B, tau and why they were chosen, ...).
    caveats : sequence of str
        Prepended to the computed caveats.
    eta_source : str, optional
        Where a given ``eta`` came from, reported as ``lr_source`` (e.g. ``"given (--lr)"`` or
        ``"known training value of <model>"``); default ``"given"``. Ignored when ``eta`` is None.

    Returns
    -------
    ProbeResult
    """
    from normscope import theory

    r = m.r
    r2 = r**2
    p = r.size
    k = m.za.shape[0]
    d1, d2, s = m.d1, m.d2, m.s
    disp = m.aa.mean(axis=0)
    caveats = list(caveats)

    # (E11) fit of one lambda_rad and one eta
    try:
        fit = theory.fit_decay_and_lr(r, d1, d2, s)
        fit_d = {"lambda_rad": fit.lambda_rad, "eta": fit.eta, "error": None}
    except InputError as exc:
        fit = None
        fit_d = {"lambda_rad": None, "eta": None, "error": str(exc)}
    if eta is not None:
        eta_used, eta_source = float(eta), (eta_source or "given")
    elif fit is not None and fit.eta > 0:
        eta_used, eta_source = float(fit.eta), "fitted by least squares on (E11)"
    else:
        eta_used, eta_source = 1.0, "unknown (E11 fit not positive): heat and drift are per unit eta"
        caveats.append("the learning rate is unknown and the (E11) fit gave no positive eta: heat and drift are reported per unit eta")
    if fit is not None and (fit.eta <= 0 or fit.lambda_rad <= 0):
        caveats.append(
            f"the (E11) least-squares fit gives lambda_rad = {fit.lambda_rad:.3g}, eta = {fit.eta:.3g}: "
            "not a physical pair (THEORY section 9: expected for AdamW-trained checkpoints); it is reported, not used"
        )

    heat = eta_used**2 * s
    drift = eta_used * d1 + eta_used**2 * d2
    heat_b = eta_used**2 * r2[None, :] * m.aa
    drift_b = eta_used * m.za + eta_used**2 * m.zc
    q = theory.implied_decay(drift, heat, r)
    a_bar = m.a_sum / k
    s_var = s - r2 * (np.sum(a_bar**2, axis=1) - (m.aa.mean(axis=0) - np.sum(a_bar**2, axis=1)) / max(k - 1, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        heat_cancel = -2.0 * d2 * r2 / s
    zjd_r2 = m.zjd / r2  # lambda_rad per unit lambda (= k for k-homogeneous f)
    neg_q = q < 0
    if weight_decay is not None:
        lam_rad = float(weight_decay) * zjd_r2
        c_item = eta_used * lam_rad
        with np.errstate(divide="ignore", invalid="ignore"):
            q_over_c = np.where(c_item > 0, q / c_item, np.nan)
        r_eq = theory.equilibrium_radius(drift, heat, c=np.where(c_item > 0, c_item, np.nan))
        flag = np.where(lam_rad <= 0, "lambda_rad<=0", np.where(neg_q, "q<0", ""))
        r_eq = np.where(flag == "", r_eq, np.nan)
        neg_lam = int(np.sum(lam_rad < 0))
    else:
        lam_rad = np.full(p, np.nan)
        c_item = np.full(p, np.nan)
        q_over_c = np.full(p, np.nan)
        r_eq = np.full(p, np.nan)
        flag = np.where(neg_q, "q<0", "")
        neg_lam = int(np.sum(zjd_r2 < 0))
    finite_q = q[np.isfinite(q)]
    c_fit = float(np.median(finite_q)) if finite_q.size else float("nan")
    if c_fit > 0:
        r_eq_cfit = theory.equilibrium_radius(drift, heat, c=c_fit)
        r_eq_cfit = np.where(neg_q, np.nan, r_eq_cfit)
    else:
        r_eq_cfit = np.full(p, np.nan)
        caveats.append(f"c_fit = median q = {c_fit:.3g} is not positive: no decay balances the median item, so R_eq(x; c_fit) is undefined")

    se = math.sqrt(k)
    df = pd.DataFrame(
        {
            "id": list(ids) if ids is not None else [str(i) for i in range(p)],
            **({"text": list(texts)} if texts is not None else {}),
            "r": r,
            "d1": d1,
            "d2": d2,
            "s": s,
            "displacement": disp,
            "heat_rate": s / r2**2,
            "heat": heat,
            "heat_se": heat_b.std(axis=0, ddof=1) / se,
            "drift": drift,
            "drift_se": drift_b.std(axis=0, ddof=1) / se,
            "s_var": s_var,
            "heat_cancelled_by_d2": heat_cancel,
            "lambda_rad_per_lambda": zjd_r2,
            "lambda_rad": lam_rad,
            "q": q,
            "q_over_c": q_over_c,
            "r_eq": r_eq,
            "r_eq_cfit": r_eq_cfit,
            "r_eq_flag": flag,
        }
    )

    n_neg_q = int(neg_q.sum())
    if n_neg_q:
        caveats.append(
            f"{n_neg_q} of {p} items have q < 0: their measured radial motion (drift + heat/2R^2) is inward even "
            "without decay, so no positive decay balances it at the observed norm; (E7) would only return the "
            "collapsed inward-drift root, so their R_eq is NaN (flag 'q<0')"
        )
    if neg_lam:
        caveats.append(
            f"{neg_lam} of {p} items have lambda_rad < 0 under this decay mask: decaying the masked weights "
            "increases their norm at first order, so (E7) has no stable equilibrium for them (R_eq NaN, flag "
            "'lambda_rad<=0'); THEORY section 9"
        )
    corr = {
        "corr_norm_heat": _corr(r, heat, n_boot=n_boot, seed=seed),
        "corr_norm_drift": _corr(r, drift, n_boot=n_boot, seed=seed),
        "corr_req_norm": _corr(r_eq_cfit, r, n_boot=n_boot, seed=seed),
        "corr_norm_displacement": _corr(r, disp, n_boot=n_boot, seed=seed),
        "corr_norm_heat_rate": _corr(r, s / r2**2, n_boot=n_boot, seed=seed),
        "corr_norm_d2": _corr(r, d2, n_boot=n_boot, seed=seed),
    }
    if weight_decay is not None:
        corr["corr_req_lambda_rad_norm"] = _corr(r_eq, r, n_boot=n_boot, seed=seed)
    hc = float(np.nanmedian(heat_cancel))
    if hc > 0.5:
        caveats.append(
            f"the second-order radial term cancels a median {hc:.0%} of the heat (-2 D2 R^2 / S): any heat-only "
            "reading is incomplete without D2 (THEORY section 9)"
        )
    ch, cd = corr["corr_norm_heat"]["spearman"], corr["corr_norm_displacement"]["spearman"]
    if ch is not None and cd is not None and abs(ch) > abs(cd) + 0.2:
        caveats.append(
            f"circularity: Spearman(R, heat) = {ch:.2f} but Spearman(R, E||a||^2) = {cd:.2f}; heat = R^2 E||a||^2 "
            "contains R^2, and the difference between the two is that mechanical factor"
        )
    rel_drift, rel_heat = _split_half(drift_b), _split_half(heat_b)
    if np.isfinite(rel_drift) and rel_drift < 0.5:
        caveats.append(
            f"drift split-half reliability is {rel_drift:.2f}: the batch-to-batch variation of the radial "
            "displacement is comparable with the variation between items; more batches are needed (THEORY B3)"
        )
    caveats.append(
        "single checkpoint: the drift of one snapshot is dominated by the momentary full-batch motion "
        "(THEORY B3); heat is the robust signal"
    )
    if m.fd_check is not None and m.fd_check["max_rel_diff"] > 0.02:
        caveats.append(
            f"D2 in float32 differs from a float64 spot check by up to {m.fd_check['max_rel_diff']:.1%} of mean |D2|: "
            "rerun with fd_dtype='float64' (--fd-dtype float64) for accurate second-order terms"
        )
    valid_qc = q_over_c[np.isfinite(q_over_c)]
    if weight_decay is not None:
        qc = {"mean": float(np.mean(valid_qc)) if valid_qc.size else None,
              "median": float(np.median(valid_qc)) if valid_qc.size else None,
              "sd": float(np.std(valid_qc)) if valid_qc.size > 1 else None,
              "n": int(valid_qc.size), "c": "eta * lambda_rad(x)"}
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            qcf = q / c_fit
        qcf = qcf[np.isfinite(qcf)]
        qc = {"mean": float(np.mean(qcf)) if qcf.size else None, "median": float(np.median(qcf)) if qcf.size else None,
              "sd": float(np.std(qcf)) if qcf.size > 1 else None, "n": int(qcf.size), "c": "c_fit"}
    rel_err = (r_eq_cfit - r) / r
    summary = {
        "model": model,
        "n_items": p,
        "batches": k,
        **(extra or {}),
        "lr": eta_used,
        "lr_source": eta_source,
        "weight_decay": weight_decay,
        **corr,
        "heat_cancelled_by_d2": hc,
        "n_negative_q": n_neg_q,
        "n_negative_lambda_rad": neg_lam,
        "c_fit": c_fit,
        "q_over_c_mean": qc["mean"],
        "q_over_c": qc,
        "r_eq_cfit_mean_abs_rel_error": float(np.nanmean(np.abs(rel_err))) if np.isfinite(rel_err).any() else None,
        "fit_e11": fit_d,
        "lambda_rad_per_lambda": {"median": float(np.median(zjd_r2)), "min": float(np.min(zjd_r2)), "max": float(np.max(zjd_r2))},
        "reliability": {"drift_split_half": rel_drift, "heat_split_half": rel_heat,
                        "method": "Pearson r across items of even- vs odd-batch means, Spearman-Brown corrected 2r/(1+r) when r > 0 (r itself when r <= 0)"},
        "median_rel_se": {"heat": float(np.median(df["heat_se"] / np.abs(heat))),
                          "drift": float(np.median(df["drift_se"] / np.abs(drift)))},
        "norm": {"mean": float(r.mean()), "sd": float(r.std()), "min": float(r.min()), "max": float(r.max())},
        "fd": {"dtype": m.fd_dtype, "target": m.fd_target, "eps_median": float(np.median(m.eps)), "check": m.fd_check},
        "loss_mean": float(m.losses.mean()),
        "timings_s": {k2: round(v, 3) for k2, v in m.timings.items()},
        "caveats": caveats,
    }
    return ProbeResult(summary=_clean(summary), items=df, moments=m)


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


# ----------------------------------------------------------------------------- figures
def plot_predicted_vs_observed(result: ProbeResult, path: str | Path) -> Path:
    """Scatter of predicted ``R_eq(x; c_fit)`` (E7) against the observed norm R, with y = x.

    Parameters
    ----------
    result : ProbeResult
    path : str or Path
        PNG output (written atomically).

    Returns
    -------
    Path
    """
    from normscope._plot import pyplot, save_figure

    plt = pyplot()

    df = result.items
    ok = np.isfinite(df["r_eq_cfit"].to_numpy())
    fig, ax = plt.subplots(figsize=(5, 4.5))
    ax.scatter(df["r"][ok], df["r_eq_cfit"][ok], s=6, alpha=0.5, label=f"items (n={int(ok.sum())})")
    if ok.any():
        lo = float(min(df["r"][ok].min(), df["r_eq_cfit"][ok].min()))
        hi = float(max(df["r"][ok].max(), df["r_eq_cfit"][ok].max()))
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
    c = result.summary.get("corr_req_norm", {})
    sp = c.get("spearman")
    ax.set_title(f"{result.summary.get('model', '')}\nSpearman = {sp:.2f}" if sp is not None else result.summary.get("model", ""), fontsize=9)
    ax.set_xlabel("observed norm R = ||z||")
    ax.set_ylabel("predicted R_eq(x; c_fit) (E7)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    return save_figure(fig, path, dpi=120, bbox_inches=None)


def plot_heat_drift(result: ProbeResult, path: str | Path) -> Path:
    """Three panels against the observed norm R: heat Sigma^2, drift D~, and the R-free displacement.

    The third panel is the circularity guard (heat = R^2 E||a||^2 contains R^2).

    Returns
    -------
    Path
    """
    from normscope._plot import pyplot, save_figure

    plt = pyplot()

    df = result.items
    s = result.summary
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    panels = [
        ("heat", "heat Sigma^2 (R^4 per step)", "corr_norm_heat"),
        ("drift", "drift D~ (R^2 per step)", "corr_norm_drift"),
        ("displacement", "E||a||^2 (per unit eta^2)", "corr_norm_displacement"),
    ]
    for ax, (col, label, key) in zip(axes, panels):
        ax.scatter(df["r"], df[col], s=5, alpha=0.5)
        c = s.get(key, {})
        if c.get("pearson") is not None:
            ax.set_title(f"Pearson {c['pearson']:.2f}, Spearman {c['spearman']:.2f}", fontsize=9)
        ax.set_xlabel("observed norm R = ||z||")
        ax.set_ylabel(label)
        if col != "drift" and (df[col] > 0).all():
            ax.set_yscale("log")
    fig.suptitle(f"{s.get('model', '')}: B={s.get('batch_size')}, K={s.get('batches')}, eta={s.get('lr')}", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    return save_figure(fig, path, dpi=120, bbox_inches=None)
