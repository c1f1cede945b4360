"""Lab encoders: a free embedding table (k=1) and a two-tower bias-free ReLU MLP (k=2).

Both are float64 torch models with an explicit parameter list, so the optimizers of
:mod:`normscope.lab.optim` can apply exactly decoupled decay and the estimators can evaluate
the encoder at virtually stepped parameters ``theta - step * s`` (docs/theory.md section 1).
"""

from __future__ import annotations

import numpy as np
import torch

from normscope.errors import InputError

__all__ = ["clip_grad", "clip_loss", "TableEncoder", "MLPTwoTower"]

DTYPE = torch.float64


def clip_loss(za: torch.Tensor, zb: torch.Tensor, tau: float) -> torch.Tensor:
    """Symmetric InfoNCE (CLIP) loss on cosine logits (E10), differentiable, shape (...,)."""
    u = za / za.norm(dim=-1, keepdim=True)
    v = zb / zb.norm(dim=-1, keepdim=True)
    s = u @ v.transpose(-1, -2) / tau
    b = s.shape[-1]
    return -(
        torch.log_softmax(s, dim=-1).diagonal(dim1=-2, dim2=-1).sum(-1)
        + torch.log_softmax(s, dim=-2).diagonal(dim1=-2, dim2=-1).sum(-1)
    ) / (2 * b)


@torch.no_grad()
def clip_grad(za: torch.Tensor, zb: torch.Tensor, tau: float):
    """Closed-form gradient of the symmetric InfoNCE loss wrt unnormalised embeddings (E10).

    Batched over leading dimensions: ``za, zb`` of shape (..., B, d). Returns ``(ga, gb)`` of
    the same shapes: ``G = (P + Q - 2I)/(2B)``, ``dL/dU = G V/tau``, ``dL/dV = G^T U/tau``,
    ``dL/dz = P_u dL/du / ||z||``. Same formula as :func:`normscope.theory.info_nce_grad`.
    """
    na = za.norm(dim=-1, keepdim=True)
    nb = zb.norm(dim=-1, keepdim=True)
    u = za / na
    v = zb / nb
    s = u @ v.transpose(-1, -2) / tau
    b = s.shape[-1]
    if tau >= 0.01:
        # cosine logits lie in [-1/tau, 1/tau]: one exp shifted by 1/tau serves both softmaxes
        # without overflow, and underflows only below exp(-200) (float64 is fine)
        e = torch.exp(s - 1.0 / tau)
        g = (e / e.sum(-1, keepdim=True) + e / e.sum(-2, keepdim=True)) / (2 * b)
    else:
        g = (torch.softmax(s, dim=-1) + torch.softmax(s, dim=-2)) / (2 * b)
    g.diagonal(dim1=-2, dim2=-1).sub_(1.0 / b)
    du = g @ v / tau
    dv = g.transpose(-1, -2) @ u / tau
    ga = (du - u * (u * du).sum(-1, keepdim=True)) / na
    gb = (dv - v * (v * dv).sum(-1, keepdim=True)) / nb
    return ga, gb


class TableEncoder:
    """Free embedding table ``z_i = T[i]`` (one table, both sides of a pair), k = 1.

    Parameters
    ----------
    n_items, dim : int
        N and d.
    tau : float
        InfoNCE temperature.
    generator : torch.Generator
        Initialisation: rows ``N(0, I/d)`` (so R ~ 1).
    """

    name = "table"
    k = 1

    def __init__(self, n_items: int, dim: int, tau: float, generator: torch.Generator):
        self.tau = float(tau)
        self.n_items = int(n_items)
        self.table = torch.randn(n_items, dim, generator=generator, dtype=DTYPE) / np.sqrt(dim)
        self.params = [self.table]

    def embed(self, params=None) -> torch.Tensor:
        """Embeddings of all N items, shape (N, d)."""
        return (params or self.params)[0]

    @torch.no_grad()
    def grads(self, ia: torch.Tensor, ib: torch.Tensor):
        """Gradient of the batch loss wrt the table (duplicates summed), closed form (E10)."""
        t = self.table
        ga, gb = clip_grad(t[ia], t[ib], self.tau)
        g = torch.zeros_like(t)
        g.index_add_(0, ia, ga).index_add_(0, ib, gb)
        return [g]

    @torch.no_grad()
    def shifted(self, direction, step: float) -> torch.Tensor:
        """Embeddings at ``theta - step * direction``, (N, d)."""
        return self.table - step * direction[0]

    @torch.no_grad()
    def probe(self, ia: torch.Tensor, ib: torch.Tensor, step: float, z: torch.Tensor):
        """Virtual displacements of K probe batches for all items in one pass (no item loop).

        ``ia, ib`` have shape (K, B). ``Delta_k = -step * g_k`` (exact for a free row). Returns
        per-item sums over k of ``<z, Delta_k>`` and ``||Delta_k||^2``, each shape (N,).
        """
        t = self.table
        n, d = t.shape
        kk = ia.shape[0]
        ga, gb = clip_grad(t[ia], t[ib], self.tau)
        off = (torch.arange(kk) * n)[:, None]
        g = torch.zeros(kk * n, d, dtype=t.dtype)
        g.index_add_(0, (ia + off).reshape(-1), ga.reshape(-1, d))
        g.index_add_(0, (ib + off).reshape(-1), gb.reshape(-1, d))
        g = g.view(kk, n, d)
        zd = -step * (g * z).sum(-1).sum(0)
        dd = step**2 * (g * g).sum(-1).sum(0)
        return zd, dd


class MLPTwoTower:
    """Two-tower bias-free ReLU MLP, ``f(x) = W2 relu(W1 x)`` per tower; k = 2 (A3).

    Tower a embeds item i's input ``x_i`` (the tracked embedding); tower b embeds the positive's
    input. Inputs are fixed unit-norm Gaussian features, one per item. Every parameter is
    decayed, so ``lambda_rad = 2 lambda`` exactly (E4).

    Parameters
    ----------
    n_items, dim, hidden, input_dim : int
        N, output d, hidden width and input width.
    tau : float
    generator : torch.Generator
    """

    name = "mlp"
    k = 2

    def __init__(self, n_items: int, dim: int, tau: float, generator: torch.Generator, *, hidden: int = 64, input_dim: int = 32):
        if min(n_items, dim, hidden, input_dim) < 1:
            raise InputError(f"sizes must be >= 1, got n_items={n_items}, dim={dim}, hidden={hidden}, input_dim={input_dim}")
        self.tau = float(tau)
        self.n_items = int(n_items)
        x = torch.randn(n_items, input_dim, generator=generator, dtype=DTYPE)
        self.x = x / x.norm(dim=1, keepdim=True)

        # balanced init (equal Frobenius norms of W1 and W2) with R ~ 1: entry sds a, b with
        # a^2 input_dim = b^2 dim and R^2 = dim b^2 hidden a^2 / 2 = input_dim hidden a^4 / 2 = 1
        a = (2.0 / (input_dim * hidden)) ** 0.25
        b = a * np.sqrt(input_dim / dim)

        def w(o, i, sd):
            return torch.randn(o, i, generator=generator, dtype=DTYPE) * sd

        self.params = [w(hidden, input_dim, a), w(dim, hidden, b), w(hidden, input_dim, a), w(dim, hidden, b)]

    @staticmethod
    def _tower(w1, w2, x):
        return torch.relu(x @ w1.T) @ w2.T

    def embed(self, params=None) -> torch.Tensor:
        """Tower-a embeddings of all N items, shape (N, d)."""
        p = params or self.params
        with torch.no_grad():
            return self._tower(p[0], p[1], self.x)

    def grads(self, ia: torch.Tensor, ib: torch.Tensor):
        """Autograd gradient of the batch loss wrt the four weight matrices."""
        p = [q.detach().requires_grad_(True) for q in self.params]
        za = self._tower(p[0], p[1], self.x[ia])
        zb = self._tower(p[2], p[3], self.x[ib])
        loss = clip_loss(za, zb, self.tau)
        return list(torch.autograd.grad(loss, p))

    @torch.no_grad()
    def shifted(self, direction, step: float) -> torch.Tensor:
        """Tower-a embeddings at ``theta - step * direction``, (N, d) (exact finite step)."""
        return self._tower(self.params[0] - step * direction[0], self.params[1] - step * direction[1], self.x)

    def probe(self, ia: torch.Tensor, ib: torch.Tensor, step: float, z: torch.Tensor):
        """Virtual displacements ``Delta_k = f(theta - step g_k) - z`` of K probe batches.

        Exact finite steps in float64 (so first-order D1 and curvature D2 terms are both in; no
        finite-difference cancellation at float64). Returns per-item sums over k of
        ``<z, Delta_k>`` and ``||Delta_k||^2``, each (N,).
        """
        zd = torch.zeros(self.n_items, dtype=DTYPE)
        dd = torch.zeros(self.n_items, dtype=DTYPE)
        for k in range(ia.shape[0]):
            g = self.grads(ia[k], ib[k])
            delta = self.shifted(g, step) - z
            zd += (delta * z).sum(-1)
            dd += (delta * delta).sum(-1)
        return zd, dd
