"""The section-6 estimators: virtual SGD steps, JVP displacements, finite-difference curvature.

:func:`probe_moments` returns the raw per-batch quantities (:class:`ProbeMoments`) from which
:mod:`normscope.probes.summary` derives heat, drift, lambda_rad, q and R_eq.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from normscope.requests.probe import FD_DTYPES as _FD_DTYPES
from normscope.requests.probe import SECOND_ORDER as _SECOND_ORDER
from normscope.errors import InputError, ModelError
from normscope.pairs import sample_pair_batches
from normscope.probes.curvature import (JVP2_CHECK_ITEMS, JVP2_CHECK_TOL, _FiniteDifferences,
                                        _fd_float64_check, _jvp2_check, _nested_jvp)

__all__ = ["decay_mask_for", "symmetric_info_nce", "ProbeMoments", "probe_moments", "TOKEN_BUDGET", "FD_DTYPES",
           "SECOND_ORDER", "JVP2_CHECK_TOL"]

#: Precisions of the D2 finite differences (``fd_dtype``; ``auto`` is float64).
FD_DTYPES = _FD_DTYPES  # defined with the probe's request (normscope.requests.probe)
#: Default step target ``eps ||a|| / R`` per precision (docs/theory.md section 6: 1e-3..1e-2).
FD_TARGET = {"float64": 3e-3, "float32": 1e-2}
#: How the second-order radial term c is computed (``second_order``): ``jvp`` forward-over-forward AD
#: (exact), ``fd`` central finite differences in ``fd_dtype``, ``auto`` jvp where the model supports it.
SECOND_ORDER = _SECOND_ORDER  # defined with the probe's request (normscope.requests.probe)


def decay_mask_for(params: dict, decay_mask="matrices") -> dict:
    """Which parameters weight decay acts on (theta_D of docs/theory.md section 1).

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
    symmetric : bool, keyword-only
        Both terms (CLIP's loss, the default) or only the row term (MultipleNegativesRankingLoss).

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
        Finite-difference steps used for D2 (NaN where the nested JVP computed it).
    losses : ndarray of shape (K,)
        InfoNCE loss of each probe batch.
    grad_norms : ndarray of shape (K,)
    timings : dict
        Seconds spent in backward passes (``backward``), first-order JVPs (``jvp``), nested JVPs
        (``jvp2``: z, a and c in one pass), finite differences (``fd``, the float64 copy included),
        the nested JVP's float64 check (``jvp2_check``), the float32 differences' check
        (``fd_check``), lambda_rad and the observed norms (``z``).
    second_order : {'jvp', 'fd'}
        How ``zc`` was computed: forward-over-forward AD (exact) or finite differences.
    second_order_check : dict or None
        With ``jvp``: the first 32 items of the first chunk of the first batch recomputed by float64
        central differences at step targets 1e-3 and 5e-4 (Richardson) (``median_rel_diff``, ``max_rel_diff`` relative to the chunk's mean |D2|,
        ``tolerance``); with ``auto`` also when it failed and the run fell back to differences.
    second_order_note : str or None
        Why ``auto`` fell back to finite differences (None when it did not).
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
    grad_precision: str = "fp32"
    grad_check: dict | None = None
    fd_dtype: str = "float64"
    fd_target: float = 3e-3
    fd_check: dict | None = None
    second_order: str = "fd"
    second_order_check: dict | None = None
    second_order_note: str | None = None

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
    second_order: str = "auto",
    fd_dtype: str = "float64",
    fd_target: float | None = None,
    fd_check: bool = True,
    symmetric: bool = True,
    grad_precision: str = "fp32",
    progress: Callable[[int, int], None] | None = None,
) -> ProbeMoments:
    """The section-6 estimators: K virtual SGD steps, JVP displacements and the radial curvature.

    For each probe batch ``b_k`` (``batch_size`` pairs, drawn by :func:`sample_pair_batches`):

    1. ``g_k = grad_theta L_{b_k}`` (one forward/backward of :func:`symmetric_info_nce`, eval mode);
    2. for each chunk of probe items, with ``v = -g_k``, the first two Taylor coefficients of
       ``f(theta + t v, x) = z + t a + t^2 c + O(t^3)``:

       - ``second_order='jvp'``: one forward-over-forward pass
         (:func:`~normscope.probes.second_order.second_directional`, ``torch.func.jvp`` of a ``jvp``
         batched over the chunk) gives ``a`` and ``c`` exactly, in the model's precision;
       - ``second_order='fd'``: ``a = jvp(f(., x), theta, v)`` and
         ``c = (f(theta + eps v) + f(theta - eps v) - 2 z) / (2 eps^2)`` in ``fd_dtype`` with one
         ``eps`` per chunk chosen so that ``eps * median(||a|| / R) = fd_target``.

    Finally one JVP along ``theta_D`` (the decay mask) gives ``<z, J_x theta_D>`` (E4).

    Cost per item and batch (in float32 forwards C_fwd, counting matrix products, which dominate):
    ``jvp`` 8 (the value 1, each of the two first-order tangents 2, the mixed tangent 3: the
    direction v is constant, so its own mixed part is zero); ``fd`` 3 for the JVP plus 2 float64
    forwards (2.2-2.7 C_fwd each on CPU, ``benchmarks/probe_fd_precision.py``).

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
    second_order : {'auto', 'jvp', 'fd'}
        How ``c`` is computed. ``'jvp'``: forward-over-forward AD, exact (no step size, no
        cancellation). The first :data:`JVP2_CHECK_ITEMS` items of the first chunk of the first
        batch are checked against float64 central differences (:func:`_jvp2_check`,
        ``ProbeMoments.second_order_check``); a difference above :data:`JVP2_CHECK_TOL` of their mean |D2| where the differences themselves agree to
        that tolerance (an op whose second-order forward rule is wrong) raises ``ModelError``; where
        they do not (a model that is not smooth at the step's scale, such as a ReLU network) the
        check is ``undecided`` and the JVP is kept. ``'auto'`` (default): ``'jvp'``, but when the
        model has no nested forward-mode rule or fails the check, finite differences in
        ``fd_dtype`` with the reason in ``ProbeMoments.second_order_note``. ``'fd'``: finite
        differences.
    fd_dtype : {'float64', 'float32', 'auto'}
        Precision of the finite differences (``second_order='fd'`` or a fallback; docs/theory.md
        section 6, Numerics: float64, or float32 with a larger step). ``'float64'`` (default;
        ``'auto'`` is the same) differences a float64 copy of a float32 model. ``'float32'``
        differences the model itself.
    fd_target : float, optional
        Relative size ``eps ||a|| / R`` of the finite-difference step, inside docs/theory.md's range
        1e-3..1e-2: default 3e-3 in float64 and 1e-2 in float32. Measured on MiniLM against float64 at
        3e-3 (64 words and 64 SciFact claims, 2 batches; error / mean |D2|): float64 at 1e-3 and
        1e-2 within 2e-3 (max); float32 at 3e-3 median 1.3-2.2 %, max 9.6 %; at 1e-2 median
        0.1-0.2 %, max 1.1 %; at 3e-2 median 0.07 %, max 2.1 % (truncation error grows). Errors of
        D2 are amplified in q when D2 cancels most of the heat (E9).
    fd_check : bool
        Run the float64 spot check of the first chunk of the first batch: of the nested JVP (see
        ``second_order``), and of float32 differences (recomputed at step 3e-3,
        ``ProbeMoments.fd_check``).
    symmetric : bool
        Symmetric (CLIP) InfoNCE, else the one-directional row loss.
    grad_precision : {"fp32", "bf16"}
        Precision of the K pair-gradient passes only (forward and backward of the InfoNCE loss on B
        pairs, under ``torch.autocast`` in bfloat16). Everything that measures the probe items --
        their embeddings z, the JVPs, the second-order terms and their check, lambda_rad -- stays in
        fp32/fp64. With bf16, batch 0's gradient is also computed in fp32 and the relative error and
        cosine are reported (``ProbeMoments.grad_check``).
    progress : callable (done, total) -> None, optional

    Returns
    -------
    ProbeMoments

    Raises
    ------
    InputError
        K < 1, too few pairs, empty items, unknown ``second_order`` or ``fd_dtype``.
    ModelError
        No trainable parameters, a model without forward-mode AD support, or (``second_order='jvp'``)
        without nested forward-mode support or failing the float64 check.
    """
    left, right, n_pairs, fd_dtype, fd_target = _check_probe_args(items, pairs, batches, second_order, fd_dtype,
                                                                  fd_target)
    theta = adapter.parameters()
    if not theta:
        raise ModelError(f"model {adapter.name!r} has no trainable parameters (requires_grad is False everywhere)")
    mask = decay_mask_for(theta, decay_mask)
    batch_idx = sample_pair_batches(n_pairs, batch_size, batches, seed)
    run = _ProbeRun(adapter, items, theta, chunk_size=chunk_size, batches=batches, second_order=second_order,
                    fd_dtype=fd_dtype, fd_target=fd_target, fd_check=fd_check)
    total_steps = batches + 1
    for k, bidx in enumerate(batch_idx):
        tangent = run.batch_direction(k, left, right, bidx, tau=tau, symmetric=symmetric, grad_precision=grad_precision)
        for ci, idx in enumerate(run.chunks):
            run.chunk_moments(k, ci, idx, tangent)
        if progress is not None:
            progress(k + 1, total_steps)
    zjd = run.decay_term(mask)
    if progress is not None:
        progress(total_steps, total_steps)
    return ProbeMoments(
        r=run.r, za=run.za, aa=run.aa, zc=run.zc, a_sum=run.a_sum, zjd=zjd, eps=run.eps_used, losses=run.losses,
        grad_norms=run.gnorms, timings=run.timings, fd_dtype=fd_dtype, fd_target=fd_target, fd_check=run.fd_chk,
        grad_precision=grad_precision, grad_check=run.grad_check,
        second_order=run.method, second_order_check=run.jvp2_chk, second_order_note=run.note,
    )


def _check_probe_args(items, pairs, batches: int, second_order: str, fd_dtype: str, fd_target: float | None):
    """(left, right, number of pairs, fd_dtype, fd_target) with ``'auto'`` and the default step resolved;
    :class:`InputError` for K < 1, no items, too few pairs or an unknown choice."""
    if batches < 1:
        raise InputError(f"batches must be >= 1, got {batches}")
    if len(items) == 0:
        raise InputError("no probe items")
    left, right = _as_pairs(pairs)
    n_pairs = _pair_len((left, right))
    if second_order not in SECOND_ORDER:
        raise InputError(f"second_order must be 'auto', 'jvp' or 'fd', got {second_order!r}")
    if fd_dtype not in FD_DTYPES:
        raise InputError(f"fd_dtype must be 'float64', 'float32' or 'auto', got {fd_dtype!r}")
    if fd_dtype == "auto":
        fd_dtype = "float64"
    if fd_target is None:
        fd_target = FD_TARGET[fd_dtype]
    return left, right, n_pairs, fd_dtype, fd_target


class _ProbeRun:
    """One :func:`probe_moments` run: the probe items' chunks, their features and embeddings z (float64, by
    chunk) and norms R, the per-batch arrays being filled (``za``, ``aa``, ``zc``: (K, P); ``a_sum``: (P, d)),
    the second-order method in use (a nested JVP that fails on the first chunk of the first batch switches
    it to finite differences once, under ``second_order='auto'``), the checks and the timings (seconds)."""

    def __init__(self, adapter, items, theta: dict, *, chunk_size: int, batches: int, second_order: str,
                 fd_dtype: str, fd_target: float, fd_check: bool):
        import torch

        self.adapter, self.items, self.theta = adapter, items, theta
        self.second_order, self.fd_dtype, self.fd_target, self.fd_check = second_order, fd_dtype, fd_target, fd_check
        n_items = len(items)
        # chunks of probe items (features prepared once)
        self.chunks = _make_chunks(adapter, items, chunk_size)
        self.feats = [adapter.features(items, idx, "query") for idx in self.chunks]
        self.timings = {"backward": 0.0, "jvp": 0.0, "jvp2": 0.0, "jvp2_check": 0.0, "fd": 0.0, "lambda_rad": 0.0,
                        "z": 0.0}
        t0 = time.perf_counter()
        with torch.no_grad():
            self.z_chunks = [adapter.embed(theta, f, "query").double() for f in self.feats]
        self.timings["z"] = time.perf_counter() - t0
        # every per-item array is written back by the chunk's item indices (chunks are not in input order)
        self.r = np.empty(n_items)
        for idx, z in zip(self.chunks, self.z_chunks):
            self.r[idx] = z.norm(dim=1).cpu().numpy()
        if np.any(~np.isfinite(self.r)) or np.any(self.r <= 0):
            raise ModelError(f"model {adapter.name!r} returns zero or non-finite embeddings for some probe items")
        d = self.z_chunks[0].shape[1]
        self.method = "fd" if second_order == "fd" else "jvp"
        self.note = None
        self.fdiff = self._finite_differences() if self.method == "fd" else None
        self.za = np.zeros((batches, n_items))
        self.aa = np.zeros((batches, n_items))
        self.zc = np.zeros((batches, n_items))
        self.a_sum = np.zeros((n_items, d))
        self.eps_used = np.full((batches, len(self.chunks)), np.nan)
        self.losses = np.zeros(batches)
        self.gnorms = np.zeros(batches)
        self.grad_check = self.fd_chk = self.jvp2_chk = None

    def _finite_differences(self) -> _FiniteDifferences:
        return _FiniteDifferences(self.adapter, self.items, self.chunks, self.feats, self.fd_dtype, self.fd_target,
                                  self.timings)

    def batch_direction(self, k: int, left, right, bidx, *, tau: float, symmetric: bool, grad_precision: str) -> dict:
        """Batch ``k``'s InfoNCE gradient g_k (its loss and norm recorded; with bf16, batch 0 also in fp32 for
        ``grad_check``) and the virtual step's direction v = -g_k (set on the finite differences)."""
        import torch

        t0 = time.perf_counter()
        th = {n: v.detach().clone().requires_grad_(True) for n, v in self.theta.items()}
        fq = self.adapter.features(left, bidx, "query")
        fdoc = self.adapter.features(right, bidx, "doc")
        g, loss = _pair_gradient(self.adapter, th, self.theta, fq, fdoc, tau, symmetric, bf16=grad_precision == "bf16")
        if k == 0 and grad_precision == "bf16":
            g32, _ = _pair_gradient(self.adapter, th, self.theta, fq, fdoc, tau, symmetric, bf16=False)
            self.grad_check = _grad_error(g, g32)
        del th
        self.losses[k] = float(loss.detach())
        self.gnorms[k] = float(torch.sqrt(sum((v.double() ** 2).sum() for v in g.values())))
        self.timings["backward"] += time.perf_counter() - t0
        tangent = {n: -v for n, v in g.items()}
        if self.fdiff is not None:
            self.fdiff.direction(tangent)
        return tangent

    def chunk_moments(self, k: int, ci: int, idx: np.ndarray, tangent: dict) -> None:
        """<z, a>, ||a||^2 and <z, c> of chunk ``ci``'s items along batch ``k``'s direction, and a summed."""
        z = self.z_chunks[ci]
        c = None
        if self.method == "jvp":
            a, c = self._nested(k, ci, idx, tangent, z)
        if c is None:
            a = self._first_order_fd(k, ci, idx, tangent, z)
        else:
            self.zc[k, idx] = (z * c).sum(1).cpu().numpy()
        self.za[k, idx] = (z * a).sum(1).cpu().numpy()
        self.aa[k, idx] = (a * a).sum(1).cpu().numpy()
        self.a_sum[idx] += a.cpu().numpy()

    def _nested(self, k: int, ci: int, idx: np.ndarray, tangent: dict, z):
        """(a, c) of one chunk by the nested JVP, checked on the first chunk of the first batch; (a or None,
        None) once it has fallen back to finite differences."""
        t0 = time.perf_counter()
        a, c, reason = _nested_jvp(self.adapter, self.feats[ci], self.theta, tangent)
        self.timings["jvp2"] += time.perf_counter() - t0
        if reason is None and k == 0 and ci == 0 and self.fd_check:
            reason = self._check_nested(idx, tangent, z, a, c)
        if reason is not None:
            self._fall_back(reason, k, ci, tangent)
            c = None
        return a, c

    def _check_nested(self, idx: np.ndarray, tangent: dict, z, a, c) -> str | None:
        """The float64 check of the nested JVP's D2 (:func:`_jvp2_check`); the reason to reject it, or None."""
        import torch

        t0 = time.perf_counter()
        rel = float(torch.median(a.norm(dim=1) / z.norm(dim=1)))
        sub = slice(0, JVP2_CHECK_ITEMS)  # the first items of the chunk: 5 float64 forwards of them
        self.jvp2_chk = _jvp2_check(self.adapter, self.items, idx[sub], self.theta, tangent, rel,
                                    (z[sub] * c[sub]).sum(1).cpu().numpy())
        self.timings["jvp2_check"] += time.perf_counter() - t0
        if self.jvp2_chk["verdict"] == "failed":
            return (f"the nested JVP's D2 differs from float64 finite differences by up to "
                    f"{self.jvp2_chk['max_rel_diff']:.2g} of mean |D2| on model {self.adapter.name!r} (tolerance "
                    f"{JVP2_CHECK_TOL:g}; the differences agree with each other to "
                    f"{self.jvp2_chk['fd_own_error']:.2g}): an op's second-order forward rule is wrong")
        return None

    def _fall_back(self, reason: str, k: int, ci: int, tangent: dict) -> None:
        """Switch to finite differences (``'auto'`` on the first chunk of the first batch: a warning and
        ``note``), else raise :class:`ModelError`."""
        if self.second_order == "jvp" or k > 0 or ci > 0:
            raise ModelError(reason + " (use second_order='fd')")
        self.method = "fd"
        self.note = reason + f"; D2 by {self.fd_dtype} finite differences instead"
        # stacklevel 5: _fall_back < _nested < chunk_moments < probe_moments < its caller
        warnings.warn(self.note, RuntimeWarning, stacklevel=5)
        self.fdiff = self._finite_differences()
        self.fdiff.direction(tangent)

    def _first_order_fd(self, k: int, ci: int, idx: np.ndarray, tangent: dict, z):
        """a by one JVP and <z, c> by finite differences (the step from median ||a|| / R); with float32
        differences, the first chunk of the first batch is checked against float64 (``fd_chk``). Returns a."""
        import torch
        from torch.func import jvp

        t0 = time.perf_counter()
        try:
            _, a = jvp(lambda p, _f=self.feats[ci]: self.adapter.embed(p, _f, "query"), (self.theta,), (tangent,))
        except (NotImplementedError, RuntimeError) as exc:
            raise ModelError(
                f"forward-mode AD (torch.func.jvp) fails on model {self.adapter.name!r}: {str(exc).splitlines()[0][:160]}"
            ) from None
        a = a.detach().double()
        self.timings["jvp"] += time.perf_counter() - t0
        rel = float(torch.median(a.norm(dim=1) / z.norm(dim=1)))
        self.zc[k, idx], self.eps_used[k, ci] = self.fdiff.zc(ci, rel)
        if k == 0 and ci == 0 and self.fd_check and self.fdiff.torch_dtype != torch.float64:
            t0 = time.perf_counter()
            self.fd_chk = _fd_float64_check(self.adapter, self.items, idx, self.theta, tangent, rel, self.zc[0, idx])
            self.timings["fd_check"] = time.perf_counter() - t0
        return a

    def decay_term(self, mask: dict) -> np.ndarray:
        """<z, J_x theta_D> per item (E4, lambda_rad's numerator): one JVP along the decayed parameters."""
        import torch
        from torch.func import jvp

        t0 = time.perf_counter()
        theta_d = {n: (v if mask[n] else torch.zeros_like(v)) for n, v in self.theta.items()}
        zjd = np.zeros(len(self.items))
        for ci, idx in enumerate(self.chunks):
            _, jd = jvp(lambda p, _f=self.feats[ci]: self.adapter.embed(p, _f, "query"), (self.theta,), (theta_d,))
            zjd[idx] = (self.z_chunks[ci] * jd.detach().double()).sum(1).cpu().numpy()
        self.timings["lambda_rad"] = time.perf_counter() - t0
        return zjd


def _pair_gradient(adapter, th, theta, fq, fdoc, tau, symmetric, *, bf16: bool):
    """``g = grad_theta L_b`` of the pair batch (the virtual step's direction) and the loss.

    With ``bf16`` the forward and backward run under ``torch.autocast("cpu"/device, bfloat16)``
    (matrix products in bfloat16, accumulation and the returned gradient in float32).
    """
    import torch

    dev = next(iter(theta.values())).device.type
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=bf16):
        loss = symmetric_info_nce(adapter.embed(th, fq, "query"), adapter.embed(th, fdoc, "doc"), tau, symmetric=symmetric)
    names = list(th)
    grads = torch.autograd.grad(loss.float(), [th[n] for n in names], allow_unused=True)
    g = {n: (gr.detach().to(theta[n].dtype) if gr is not None else torch.zeros_like(theta[n]))
         for n, gr in zip(names, grads)}
    return g, loss


def _grad_error(g, g_ref) -> dict:
    """How far a reduced-precision pair gradient is from the fp32 one: relative norm error and cosine."""
    import torch

    num = sum(float(((g[n].double() - g_ref[n].double()) ** 2).sum()) for n in g_ref)
    den = sum(float((g_ref[n].double() ** 2).sum()) for n in g_ref)
    dot = sum(float((g[n].double() * g_ref[n].double()).sum()) for n in g_ref)
    nrm = sum(float((g[n].double() ** 2).sum()) for n in g)
    return {"rel_error": (num / den) ** 0.5 if den > 0 else None,
            "cosine": dot / (nrm * den) ** 0.5 if nrm > 0 and den > 0 else None,
            "batch": 0, "reference": "the same batch's gradient in fp32", "torch": torch.__version__}
