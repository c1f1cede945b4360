"""The frozen-tower arm's numerics: free noun vectors trained with InfoNCE against fixed gloss embeddings.

Everything here is numpy float64 and vectorised over batches; nothing loads a model or WordNet (that is
:mod:`normscope.lab.tower`). The setting is docs/theory.md section 2 exactly: each noun i has a free vector
``z_i`` (a table row, k = 1); a batch is B (noun, gloss) pairs; the loss is the symmetric InfoNCE of
(E10) on cosine logits between the nouns' directions ``u = z/||z||`` and the glosses' unit embeddings
``v`` (fixed: the tower is frozen, only the noun side has a gradient). A noun drawn twice in a batch gets
the sum of its slot gradients. Because the loss depends on ``z`` only through ``u`` (A1), every gradient
is tangent and scales as ``1/R``, so the exact per-step identity (E1) holds and Theorem 1 reads (E2):
``R_eq^4 = Sigma^2 / (2c)`` with ``Sigma^2 = eta^2 R^2 E_b ||g_b||^2`` (independent of R) and
``2c = 1 - (1 - eta lambda)^2``.
"""

from __future__ import annotations

import numpy as np
import torch
from scipy import sparse

__all__ = ["batch_grads", "item_moments", "draw_batches", "sum_rows"]


def sum_rows(rows: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``rows`` and, for each, the sum of its ``values`` (``index_add_``; numpy's ``ufunc.at`` was slow).

    Parameters
    ----------
    rows : ndarray of int, shape (B,)
    values : ndarray of shape (B, d)

    Returns
    -------
    uniq : ndarray of int, shape (u,)
        Sorted distinct rows.
    sums : ndarray of shape (u, d)
    """
    uniq, inv = np.unique(rows, return_inverse=True)
    out = torch.zeros((uniq.size, values.shape[1]), dtype=torch.float64)
    out.index_add_(0, torch.from_numpy(inv.astype(np.int64)), torch.as_tensor(values, dtype=torch.float64))
    return uniq, out.numpy()


def draw_batches(rng: np.random.Generator, n_batches: int, batch_size: int, gloss_indptr: np.ndarray,
                 gloss_indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``n_batches`` i.i.d. batches of B (noun, gloss) pairs (assumption A2).

    The noun is uniform over the N nouns, its gloss uniform over that noun's senses (one gloss per
    sense), so a noun with a senses pulls its vector towards a different gloss in a fraction
    ``(a-1)/a`` of its draws.

    Parameters
    ----------
    rng : numpy.random.Generator
    n_batches, batch_size : int
    gloss_indptr : ndarray of int64, shape (N + 1,)
    gloss_indices : ndarray of int64
        The glosses of noun i are ``gloss_indices[gloss_indptr[i]:gloss_indptr[i + 1]]`` (CSR).

    Returns
    -------
    nouns, glosses : ndarray of int64, shape (n_batches, batch_size)
    """
    n = gloss_indptr.size - 1
    deg = np.diff(gloss_indptr)
    nouns = rng.integers(0, n, size=(n_batches, batch_size))
    off = (rng.random(size=(n_batches, batch_size)) * deg[nouns]).astype(np.int64)
    return nouns, gloss_indices[gloss_indptr[nouns] + off]


def batch_grads(z: np.ndarray, v: np.ndarray, tau: float, *, return_loss: bool = False):
    """Per-slot gradient of each batch's symmetric InfoNCE loss wrt the noun vectors (E10), batched.

    ``S = U V^T / tau``, ``P = softmax_row(S)``, ``Q = softmax_col(S)``, ``G = (P + Q - 2I) / (2B)``,
    ``dL/dU = G V / tau``, ``dL/dz_k = P_{u_k} (dL/du_k) / ||z_k||``: the same closed form as
    :func:`normscope.theory.info_nce_grad`'s first output, for K batches at once.

    Parameters
    ----------
    z : ndarray of shape (K, B, d), float64
        The nouns' (unnormalised) vectors in each slot.
    v : ndarray of shape (K, B, d), float64
        The glosses' unit embeddings in each slot (the frozen tower's, normalised).
    tau : float
        Temperature (> 0).
    return_loss : bool, keyword-only
        Also return each batch's loss, shape (K,).

    Returns
    -------
    ndarray of shape (K, B, d), float64
        ``dL_b / dz`` of each slot (a noun in several slots of a batch gets the sum of its rows).
    """
    zt = torch.as_tensor(z, dtype=torch.float64)
    vt = torch.as_tensor(v, dtype=torch.float64)
    r = torch.sqrt((zt * zt).sum(dim=2, keepdim=True))
    u = zt / r
    s = torch.matmul(u, vt.transpose(1, 2)) / tau  # torch: numpy's BLAS was 10-20x slower on these small products
    b = s.shape[1]
    p = torch.softmax(s, dim=2)
    q = torch.softmax(s, dim=1)
    g = (p + q) / (2 * b)
    g.diagonal(dim1=1, dim2=2).sub_(1.0 / b)
    du = torch.matmul(g, vt) / tau
    grad = ((du - u * (u * du).sum(dim=2, keepdim=True)) / r).numpy()
    if return_loss:
        lp = torch.log_softmax(s, dim=2).diagonal(dim1=1, dim2=2).sum(dim=1)
        lq = torch.log_softmax(s, dim=1).diagonal(dim1=1, dim2=2).sum(dim=1)
        return grad, (-(lp + lq) / (2 * b)).numpy()
    return grad


def item_moments(table: np.ndarray, v_all: np.ndarray, nouns: np.ndarray, glosses: np.ndarray, tau: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per batch and item: ``||g_b(i)||^2`` and ``<z_i, g_b(i)>`` of virtual batches at a frozen state.

    Parameters
    ----------
    table : ndarray of shape (N, d), float64
        The noun vectors (the state probed).
    v_all : ndarray of shape (G, d), float64
        Unit gloss embeddings.
    nouns, glosses : ndarray of int64, shape (K, B)
        The K probe batches (:func:`draw_batches`).
    tau : float

    Returns
    -------
    g2 : ndarray of shape (K, N), float64
        ``||g_b(i)||^2`` (0 where item i is not in batch b); the slots of a noun drawn twice are summed first.
    zg : ndarray of shape (K, N), float64
        ``<z_i, g_b(i)>``: zero up to rounding for a free vector (tangency, docs/theory.md section 2).
    loss : ndarray of shape (K,)
    """
    k, b = nouns.shape
    n = table.shape[0]
    grads, loss = batch_grads(table[nouns], v_all[glosses], tau, return_loss=True)
    key = (np.arange(k)[:, None] * n + nouns).ravel()
    uniq, inv = np.unique(key, return_inverse=True)
    summer = sparse.csr_matrix((np.ones(key.size), (inv, np.arange(key.size))), shape=(uniq.size, key.size))
    per = summer @ grads.reshape(k * b, -1)
    g2 = np.zeros(k * n)
    zg = np.zeros(k * n)
    g2[uniq] = np.einsum("ud,ud->u", per, per)
    zg[uniq] = np.einsum("ud,ud->u", per, table[uniq % n])
    return g2.reshape(k, n), zg.reshape(k, n), loss
