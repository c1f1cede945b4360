"""The probe's curvature term D2 (docs/theory.md section 6): the nested-JVP estimate, the finite differences of the
displacement along the step, their step size, and the float64 checks each is compared with
(:mod:`normscope.probes.moments` uses them)."""

from __future__ import annotations

import math
import time

import numpy as np

from normscope.errors import ModelError
from normscope.probes.second_order import second_directional


#: Step target h of the float64 differences (at h and h/2) that check the nested JVP.
JVP2_CHECK_TARGET = 1e-3
#: Items of the first chunk that the float64 check recomputes.
JVP2_CHECK_ITEMS = 32
#: Largest accepted difference between the nested JVP's D2 and the float64 check (max over the chunk,
#: relative to the chunk's mean |D2|). On MiniLM the two agree to 2.5e-6; PyTorch's own layer_norm rule,
#: which drops a second-order term, misses by 1e-1.
JVP2_CHECK_TOL = 1e-3


def _fd_step(a_rel_median: float, target: float) -> float:
    if not math.isfinite(a_rel_median) or a_rel_median <= 0:
        return 1.0
    return target / a_rel_median


def _nested_jvp(adapter, feats, theta, tangent):
    """``(a, c, None)`` of one chunk by :func:`second_directional` (float64 copies), or ``(None, None, reason)``
    when torch has no nested forward-mode rule for an op of the model."""
    try:
        _, a, c = second_directional(lambda p: adapter.embed(p, feats, "query"), theta, tangent)
    except (NotImplementedError, RuntimeError) as exc:
        return None, None, f"nested forward-mode AD fails on model {adapter.name!r}: {str(exc).splitlines()[0][:160]}"
    return a.double(), c.double(), None


class _FiniteDifferences:
    """Central differences of the probe items along one direction: ``<z, c>`` per chunk (the ``fd`` path).

    Holds the model copy in ``fd_dtype`` (a float64 copy of a float32 model), its parameters, the
    chunks' features and z in that precision, and preallocated buffers for ``theta +- eps v``.
    """

    def __init__(self, adapter, items, chunks, feats, fd_dtype, fd_target, timings):
        import torch

        t0 = time.perf_counter()
        self.adapter = (adapter.with_dtype(torch.float64)
                        if (fd_dtype == "float64" and adapter.dtype != torch.float64) else adapter)
        self.torch_dtype = torch.float64 if fd_dtype == "float64" else adapter.dtype
        self.theta = {k: v.to(self.torch_dtype) for k, v in self.adapter.parameters().items()}
        if set(self.theta) != set(adapter.parameters()):
            raise ModelError("the float64 copy of the model has different parameters")
        self.feats = [self.adapter.features(items, idx, "query") for idx in chunks] \
            if self.adapter is not adapter else feats
        with torch.no_grad():
            self.z = [self.adapter.embed(self.theta, f, "query") for f in self.feats]
        self.buf_p = {n: torch.empty_like(v) for n, v in self.theta.items()}
        self.buf_m = {n: torch.empty_like(v) for n, v in self.theta.items()}
        self.target, self.timings, self.v = fd_target, timings, None
        timings["fd"] += time.perf_counter() - t0

    def direction(self, tangent: dict) -> None:
        self.v = {n: v.to(self.torch_dtype) for n, v in tangent.items()}

    def zc(self, ci: int, rel: float) -> tuple[np.ndarray, float]:
        """``<z, c>`` of chunk ``ci`` (float64 numpy) and the step used, for ``median ||a||/R = rel``."""
        import torch

        t0 = time.perf_counter()
        eps = _fd_step(rel, self.target)
        with torch.no_grad():
            for n in self.theta:  # theta +- eps v into preallocated buffers (no per-chunk allocation)
                torch.add(self.theta[n], self.v[n], alpha=eps, out=self.buf_p[n])
                torch.add(self.theta[n], self.v[n], alpha=-eps, out=self.buf_m[n])
            zp = self.adapter.embed(self.buf_p, self.feats[ci], "query")
            zm = self.adapter.embed(self.buf_m, self.feats[ci], "query")
            z0 = self.z[ci]
            c = ((zp - z0) + (zm - z0)).double() / (2.0 * eps * eps)
        out = (z0.double() * c).sum(1).cpu().numpy()
        self.timings["fd"] += time.perf_counter() - t0
        return out, eps


def _jvp2_check(adapter, items, idx, theta, tangent, rel, zc_jvp) -> dict:
    """The nested JVP's ``<z, c>`` of one chunk against float64 central differences.

    Differences at step targets ``h = JVP2_CHECK_TARGET`` and ``h/2`` on a float64 copy; the reference is
    their Richardson extrapolation ``(4 D(h/2) - D(h)) / 3`` (error O(h^4) for a smooth model) and the
    differences' own error is ``|D(h) - D(h/2)|``. Verdict: ``passed`` when the JVP is within
    :data:`JVP2_CHECK_TOL` of the reference (max over the chunk, relative to its mean |D2|);
    ``undecided`` when it is not but the differences themselves disagree by more than the tolerance
    (the model is not smooth at the step's scale, e.g. ReLU kinks: differences are then no reference,
    while the JVP is the exact derivative almost everywhere); ``failed`` otherwise.
    """
    import torch

    ad64 = adapter.with_dtype(torch.float64)
    th64 = {n: v.to(torch.float64) for n, v in ad64.parameters().items()}
    f = ad64.features(items, idx, "query")
    v64 = {n: tangent[n].to(torch.float64) for n in th64}
    with torch.no_grad():
        z0 = ad64.embed(th64, f, "query")

        def central(target, ad64=ad64, th64=th64):  # bound here: the float64 copy is deleted after use
            eps = _fd_step(rel, target)
            zp = ad64.embed({n: th64[n] + eps * v64[n] for n in th64}, f, "query")
            zm = ad64.embed({n: th64[n] - eps * v64[n] for n in th64}, f, "query")
            return (z0 * ((zp - z0) + (zm - z0)) / (2.0 * eps * eps)).sum(1).cpu().numpy()

        d_h, d_h2 = central(JVP2_CHECK_TARGET), central(JVP2_CHECK_TARGET / 2)
    del ad64, th64
    ref = (4.0 * d_h2 - d_h) / 3.0
    scale = float(np.mean(np.abs(ref))) or 1.0
    diff = np.abs(np.asarray(zc_jvp) - ref) / scale
    own = float(np.max(np.abs(d_h - d_h2)) / scale)
    verdict = "passed" if diff.max() <= JVP2_CHECK_TOL else ("undecided" if own > JVP2_CHECK_TOL else "failed")
    return {"items": int(len(idx)), "median_rel_diff": float(np.median(diff)), "max_rel_diff": float(np.max(diff)),
            "fd_own_error": own, "tolerance": JVP2_CHECK_TOL, "verdict": verdict,
            "reference": f"float64 central differences at step targets {JVP2_CHECK_TARGET:g} and "
                         f"{JVP2_CHECK_TARGET / 2:g}, Richardson-extrapolated",
            "scale": "mean |<z, c>| of the chunk (first chunk, first batch)"}


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
