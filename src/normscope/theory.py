"""Theorem 1 as code: the norm equilibrium between heat and radial drift.

Every function implements an equation of ``docs/theory.md`` and cites its tag (E1)..(E12).
All functions are numpy, vectorised over items (broadcasting), and compute in float64.

Symbols (docs/theory.md section 4): ``eta`` learning rate, ``lam`` weight decay lambda,
``lambda_rad`` radial decay rate (E4), ``c = eta * lambda_rad``, ``drift`` D~ (units of R^2 per
step), ``heat`` Sigma^2 (R-normalised second moment of the per-step displacement, units of R^4 per
step), ``r_eq`` the predicted norm, ``q`` the implied decay (E9), ``tau`` the InfoNCE temperature.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from normscope.errors import InputError

__all__ = [
    "r_eq_squared",
    "equilibrium_radius",
    "equilibrium_radius_per_eta",
    "implied_decay",
    "fit_decay_and_lr",
    "DecayLrFit",
    "discrete_c",
    "probe_step",
    "radial_step",
    "homogeneous_step",
    "info_nce_loss",
    "info_nce_grad",
    "info_nce_table_grad",
    "momentum_heat_correction",
    "momentum_drift_correction",
]


def _f64(x, name: str) -> np.ndarray:
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be numeric, got {x!r}") from exc
    return a


def _positive_root(c, drift, heat) -> np.ndarray:
    """Positive root y of ``2 c y^2 - 2 D y - S = 0`` (c >= 0, S >= 0), cancellation-free.

    For D > 0: ``y = (D + sqrt(D^2 + 2cS)) / (2c)`` (no cancellation; +inf when c = 0).
    For D <= 0: the conjugate form ``y = S / (sqrt(D^2 + 2cS) - D)`` (no cancellation; valid at
    c = 0, where it gives the inward-drift limit ``S / (2|D|)`` of docs/theory.md section 8).
    ``sqrt(D^2 + 2cS)`` is evaluated as ``hypot(D, sqrt(2c) sqrt(S))`` so it neither overflows nor
    underflows. D = S = 0 gives 0.
    """
    c, drift, heat = np.broadcast_arrays(c, drift, heat)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        root = np.hypot(drift, np.sqrt(2.0 * c) * np.sqrt(heat))
        pos = (drift + root) / (2.0 * c)
        neg = heat / (root - drift)
        y = np.where(drift > 0, pos, neg)
        y = np.where((drift == 0) & (heat == 0), 0.0, y)
    return y


def r_eq_squared(d_star, v_star2) -> np.ndarray:
    """Equilibrium squared radius ``R_eq^2`` from the reduced drift and heat (E7).

    Solves ``2 R^4 - 2 D* R^2 - V*^2 = 0`` for its unique non-negative root
    ``R_eq^2 = (D* + sqrt(D*^2 + 2 V*^2)) / 2`` without cancellation: for ``D* < 0`` the
    conjugate form ``V*^2 / (sqrt(D*^2 + 2 V*^2) - D*)`` is used, and the square root is a
    ``hypot`` so magnitudes from 1e-300 to 1e+300 neither overflow nor underflow.

    Parameters
    ----------
    d_star : array_like of float
        Reduced drift ``D* = D~ / c`` (units of R^2), any sign. Broadcast against ``v_star2``.
    v_star2 : array_like of float
        Reduced heat ``V*^2 = Sigma^2 / c`` (units of R^4), ``>= 0``.

    Returns
    -------
    ndarray of float64
        ``R_eq^2``, broadcast shape. ``max(D*, 0)`` when ``V* = 0``; NaN propagates.

    Raises
    ------
    InputError
        If any ``v_star2`` is negative.
    """
    d = _f64(d_star, "d_star")
    v2 = _f64(v_star2, "v_star2")
    if np.any(v2 < 0):
        raise InputError(f"v_star2 must be >= 0, got min {np.nanmin(v2)!r}")
    return _positive_root(1.0, d, v2)


def equilibrium_radius(drift, heat, *, eta=None, lambda_rad=None, c=None) -> np.ndarray:
    """Predicted equilibrium norm ``R_eq`` from drift D~ and heat Sigma^2 (E6, E7).

    With ``c = eta * lambda_rad``, ``D* = D~/c`` and ``V*^2 = Sigma^2/c``, returns
    ``sqrt(r_eq_squared(D*, V*^2))``. Computed directly from the quadratic in ``c`` form
    ``2c R^4 - 2 D~ R^2 - Sigma^2 = 0``, so a tiny ``c`` does not overflow ``D*``.

    Parameters
    ----------
    drift : array_like of float
        Radial drift ``D~ = E_b <z, Delta_b>`` per step (units of R^2), any sign.
    heat : array_like of float
        Heat ``Sigma^2 = R^2 E_b ||Delta_b||^2`` per step (units of R^4), ``>= 0``.
    eta : float or array_like, keyword-only, optional
        Learning rate (ignored when ``c`` is given).
    lambda_rad : float or array_like, keyword-only
        Radial decay rate (E4); ``k * lambda`` for a k-homogeneous encoder. Ignored when ``c``
        is given.
    c : float or array_like, keyword-only, optional
        The decay constant per step. Use :func:`discrete_c` for the exact discrete-time rows of
        the table in docs/theory.md section 4; defaults to the first-order ``eta * lambda_rad``.

    Returns
    -------
    ndarray of float64
        ``R_eq``. Where ``c == 0`` the inward-drift limit ``sqrt(Sigma^2 / (2|D~|))`` is returned
        (``inf`` for outward drift); where ``c < 0`` there is no stable equilibrium and NaN is
        returned (a fitted negative ``lambda_rad`` is a finding to report, not an error).

    Raises
    ------
    InputError
        If neither ``c`` nor ``eta`` is given, or ``heat`` has a negative entry.
    """
    if c is None:
        if eta is None or lambda_rad is None:
            raise InputError("equilibrium_radius needs c, or both eta and lambda_rad")
        c = _f64(eta, "eta") * _f64(lambda_rad, "lambda_rad")
    c = _f64(c, "c")
    d = _f64(drift, "drift")
    s = _f64(heat, "heat")
    if np.any(s < 0):
        raise InputError(f"heat must be >= 0, got min {np.nanmin(s)!r}")
    y = _positive_root(np.where(c < 0, np.nan, c), d, s)
    return np.sqrt(y)


def equilibrium_radius_per_eta(d1, d2, s, *, eta, lambda_rad) -> np.ndarray:
    """``R_eq`` from the per-unit-eta probe quantities (E8, E7).

    ``D~ = eta D1 + eta^2 D2``, ``Sigma^2 = eta^2 S``, ``c = eta lambda_rad``, i.e.
    ``D* = (D1 + eta D2)/lambda_rad`` and ``V*^2 = eta S / lambda_rad``.

    Parameters
    ----------
    d1 : array_like of float
        First-order drift ``D1 = E_b <z, a_b>`` (units of R^2 per unit eta).
    d2 : array_like of float
        Second-order drift ``D2 = E_b <z, c_b>`` (units of R^2 per unit eta^2).
    s : array_like of float
        First-order heat ``S = R^2 E_b ||a_b||^2`` (units of R^4 per unit eta^2), ``>= 0``.
    eta : float or array_like, keyword-only
        Learning rate.
    lambda_rad : float or array_like, keyword-only
        Radial decay rate (E4).

    Returns
    -------
    ndarray of float64
        ``R_eq`` (see :func:`equilibrium_radius` for ``c <= 0``).
    """
    eta = _f64(eta, "eta")
    drift = eta * _f64(d1, "d1") + eta**2 * _f64(d2, "d2")
    heat = eta**2 * _f64(s, "s")
    return equilibrium_radius(drift, heat, eta=eta, lambda_rad=lambda_rad)


def implied_decay(drift, heat, r) -> np.ndarray:
    """Implied decay ``q = D~/R^2 + Sigma^2/(2 R^4)`` (E9); balance holds iff ``q = c``.

    Parameters
    ----------
    drift, heat : array_like of float
        D~ (units R^2 per step) and Sigma^2 (units R^4 per step).
    r : array_like of float
        Observed norm R (> 0).

    Returns
    -------
    ndarray of float64
        q per item (units: per step), to be compared with ``c`` (e.g. ``q / c``).

    Raises
    ------
    InputError
        If any ``r`` is not positive.
    """
    r = _f64(r, "r")
    if np.any(r <= 0):
        raise InputError(f"r must be > 0, got min {np.nanmin(r)!r}")
    r2 = r * r
    return _f64(drift, "drift") / r2 + _f64(heat, "heat") / (2.0 * r2 * r2)


class DecayLrFit(NamedTuple):
    """Least-squares solution of (E11): unpacks as ``lambda_rad, eta``."""

    lambda_rad: float
    eta: float


def fit_decay_and_lr(r, d1, d2, s) -> DecayLrFit:
    """Fit one ``lambda_rad`` and one ``eta`` to all items by least squares on (E11).

    (E11) ``2 lambda_rad R^4 = 2 D1 R^2 + eta (2 D2 R^2 + S)`` is linear in the two unknowns.
    Each row is divided by ``R^4`` (docs/theory.md section 6 (iii)) so that items weigh by their
    relative, not absolute, mismatch:
    ``2 lambda_rad - eta (2 D2/R^2 + S/R^4) = 2 D1/R^2``.

    Parameters
    ----------
    r : array_like of shape (n,)
        Observed norms (> 0).
    d1, d2, s : array_like of shape (n,)
        Per-unit-eta probe quantities of (E8).

    Returns
    -------
    DecayLrFit
        ``(lambda_rad, eta)`` as found, even when negative or implausible (a model trained
        with AdamW often gives such values; docs/theory.md section 9): report them, do not hide them.

    Raises
    ------
    InputError
        Fewer than 2 finite rows; ``2 D2/R^2 + S/R^4`` constant over items (the two columns are
        collinear, so lambda_rad and eta are not separately identifiable); or ``D1 = 0`` for all
        items (the system is homogeneous and only the ratio ``lambda_rad / eta`` is identified;
        e.g. a free table, where the first-order drift vanishes exactly).
    """
    r = _f64(r, "r").ravel()
    d1 = _f64(d1, "d1").ravel()
    d2 = _f64(d2, "d2").ravel()
    s = _f64(s, "s").ravel()
    if not (r.shape == d1.shape == d2.shape == s.shape):
        raise InputError(f"r, d1, d2, s must have one length, got {r.shape}, {d1.shape}, {d2.shape}, {s.shape}")
    ok = np.isfinite(r) & np.isfinite(d1) & np.isfinite(d2) & np.isfinite(s) & (r > 0)
    if ok.sum() < 2:
        raise InputError(f"fit_decay_and_lr needs >= 2 finite rows with r > 0, got {int(ok.sum())}")
    r2 = r[ok] ** 2
    x = 2.0 * d2[ok] / r2 + s[ok] / (r2 * r2)
    y = 2.0 * d1[ok] / r2
    a = np.column_stack([np.full_like(x, 2.0), -x])
    if np.ptp(x) <= 1e-12 * max(np.max(np.abs(x)), np.finfo(float).tiny):
        raise InputError("fit_decay_and_lr: 2*D2/R^2 + S/R^4 is constant over items, so lambda_rad and eta are not identifiable")
    if not np.any(y != 0):
        raise InputError("fit_decay_and_lr: D1 = 0 for every item, so only lambda_rad/eta is identifiable")
    sol, *_ = np.linalg.lstsq(a, y, rcond=None)
    return DecayLrFit(float(sol[0]), float(sol[1]))


_KINDS = ("free", "homogeneous", "first_order")


def discrete_c(eta, lam, *, kind: str = "free", k: int = 1) -> np.ndarray:
    """Discrete-time decay constant ``c`` (half the ``2c`` column of docs/theory.md section 4).

    ========================  ======================  =======================================
    kind                      probe step              c
    ========================  ======================  =======================================
    ``"free"``                ``eta``                 ``(1 - (1 - eta lam)^2) / 2``   (E1, E2)
    ``"homogeneous"``         ``eta/(1 - eta lam)``   ``((1 - eta lam)^(-2k) - 1) / 2`` (E5)
    ``"first_order"``         ``eta``                 ``k eta lam`` (= eta lambda_rad, E4)
    ========================  ======================  =======================================

    Parameters
    ----------
    eta : float or array_like
        Learning rate.
    lam : float or array_like
        Weight decay lambda (for ``"first_order"`` with ``k=1`` you may pass lambda_rad).
    kind : {"free", "homogeneous", "first_order"}, keyword-only
    k : int, keyword-only
        Homogeneity degree (A3); 1 for a free table row, the depth for a bias-free ReLU MLP.

    Returns
    -------
    ndarray of float64
        ``c`` (per step). The rows agree to O(eta lam) relative.

    Raises
    ------
    InputError
        Unknown ``kind``, ``k < 1``, or ``eta * lam >= 1`` for the discrete rows.
    """
    if kind not in _KINDS:
        raise InputError(f"kind must be one of {_KINDS}, got {kind!r}")
    if int(k) != k or k < 1:
        raise InputError(f"k must be a positive integer, got {k!r}")
    x = _f64(eta, "eta") * _f64(lam, "lam")
    if kind == "first_order":
        return k * x
    if np.any(x >= 1):
        raise InputError(f"eta * lam must be < 1, got {np.max(x)!r}")
    if kind == "free":
        if k != 1:
            raise InputError(f"kind='free' is the k=1 row, got k={k!r}; use kind='homogeneous'")
        return x * (2.0 - x) / 2.0
    return np.expm1(-2.0 * k * np.log1p(-x)) / 2.0


def probe_step(eta, lam, *, kind: str = "free"):
    """Learning rate of the virtual probe step that goes with :func:`discrete_c` (section 4 table).

    ``eta / (1 - eta lam)`` for ``kind="homogeneous"`` (E5), ``eta`` otherwise.
    """
    if kind not in _KINDS:
        raise InputError(f"kind must be one of {_KINDS}, got {kind!r}")
    eta = _f64(eta, "eta")
    if kind == "homogeneous":
        return eta / (1.0 - eta * _f64(lam, "lam"))
    return eta


def radial_step(r2, gamma2, *, eta, lam) -> np.ndarray:
    """One SGD step of a free vector's squared norm (E1), exact.

    ``R+^2 = (1 - eta lam)^2 R^2 + eta^2 gamma_b^2 / R^2``, where ``gamma_b = R ||g_b||`` is the
    direction-only gradient size (the gradient is tangent, so no first-order radial term).

    Parameters
    ----------
    r2 : array_like of float
        ``R^2`` before the step (> 0).
    gamma2 : array_like of float
        ``gamma_b^2 = R^2 ||g_b||^2`` (0 for an item outside the batch).
    eta, lam : float, keyword-only
        Learning rate and decoupled weight decay.

    Returns
    -------
    ndarray of float64
        ``R^2`` after the step.
    """
    r2 = _f64(r2, "r2")
    return (1.0 - eta * lam) ** 2 * r2 + eta**2 * _f64(gamma2, "gamma2") / r2


def homogeneous_step(r2, z_dot_delta, delta2, *, eta, lam, k: int) -> np.ndarray:
    """Exact squared norm after a step of a k-homogeneous encoder (E5).

    ``R+^2 = (1 - eta lam)^(2k) (R^2 + 2 <z, Delta~_b> + ||Delta~_b||^2)``, where
    ``Delta~_b = f_{theta - eta~ g_b}(x) - z`` is the virtual displacement at the probe step
    ``eta~ = eta / (1 - eta lam)`` (see :func:`probe_step`).

    Parameters
    ----------
    r2 : array_like
        ``R^2`` before the step.
    z_dot_delta : array_like
        ``<z, Delta~_b>``.
    delta2 : array_like
        ``||Delta~_b||^2``.
    eta, lam : float, keyword-only
    k : int, keyword-only
        Homogeneity degree.

    Returns
    -------
    ndarray of float64
    """
    return (1.0 - eta * lam) ** (2 * k) * (
        _f64(r2, "r2") + 2.0 * _f64(z_dot_delta, "z_dot_delta") + _f64(delta2, "delta2")
    )


def _check_pair(z_a, z_b, tau):
    za = _f64(z_a, "z_a")
    zb = _f64(z_b, "z_b")
    if za.ndim != 2 or za.shape != zb.shape or za.shape[0] < 1:
        raise InputError(f"z_a and z_b must both have shape (B, d) with B >= 1, got {za.shape} and {zb.shape}")
    if not np.isfinite(tau) or tau <= 0:
        raise InputError(f"tau must be > 0, got {tau!r}")
    na = np.linalg.norm(za, axis=1)
    nb = np.linalg.norm(zb, axis=1)
    if np.any(na == 0) or np.any(nb == 0):
        raise InputError("z_a and z_b must have non-zero rows (the direction of a zero vector is undefined)")
    return za, zb, na, nb


def _softmaxes(s):
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    q = np.exp(s - s.max(axis=0, keepdims=True))
    q /= q.sum(axis=0, keepdims=True)
    return p, q


def info_nce_loss(z_a, z_b, tau: float) -> float:
    """Symmetric InfoNCE (CLIP) loss on cosine logits (E10).

    ``U, V`` are the row-normalised ``z_a, z_b``; ``S = U V^T / tau``; ``P`` and ``Q`` its row and
    column softmaxes; ``L = (1/2B) sum_k [-log P_kk - log Q_kk]`` (pair k is the positive of
    row/column k; every other column/row of the batch is a negative, duplicates included).

    Parameters
    ----------
    z_a, z_b : array_like of shape (B, d)
        Unnormalised embeddings of the two sides of B positive pairs.
    tau : float
        Temperature (> 0).

    Returns
    -------
    float
        The loss (nats), computed in float64 with log-sum-exp.

    Raises
    ------
    InputError
        Shape mismatch, ``tau <= 0`` or a zero row.
    """
    za, zb, na, nb = _check_pair(z_a, z_b, tau)
    s = (za / na[:, None]) @ (zb / nb[:, None]).T / tau
    diag = np.diag(s)
    mr = s.max(axis=1)
    lse_r = mr + np.log(np.exp(s - mr[:, None]).sum(axis=1))
    mc = s.max(axis=0)
    lse_c = mc + np.log(np.exp(s - mc[None, :]).sum(axis=0))
    return float(np.sum(lse_r - diag + lse_c - diag) / (2 * za.shape[0]))


def info_nce_grad(z_a, z_b, tau: float, *, return_loss: bool = False):
    """Closed-form gradient of the symmetric InfoNCE loss wrt the unnormalised embeddings (E10).

    ``G = dL/dS = (P + Q - 2I) / (2B)``, ``dL/dU = G V / tau``, ``dL/dV = G^T U / tau``, and
    ``dL/dz_k = P_{u_k} (dL/du_k) / ||z_k||`` with ``P_u = I - u u^T``. So each row's gradient is
    tangent (``<z_k, g_k> = 0``) and scales as ``1/||z_k||`` (A1, section 2).

    The rows are the gradients of each *occurrence*. When the same item (a table row) fills
    several slots of the batch, its gradient is the sum over its slots: use
    :func:`info_nce_table_grad`, which does that scatter-add.

    Parameters
    ----------
    z_a, z_b : array_like of shape (B, d)
        Unnormalised embeddings of the B positive pairs.
    tau : float
        Temperature (> 0).
    return_loss : bool, keyword-only
        Also return the loss.

    Returns
    -------
    grad_a, grad_b : ndarray of shape (B, d), float64
        ``dL/dz_a`` and ``dL/dz_b``.
    loss : float
        Only when ``return_loss``.

    Raises
    ------
    InputError
        Shape mismatch, ``tau <= 0`` or a zero row.
    """
    za, zb, na, nb = _check_pair(z_a, z_b, tau)
    u = za / na[:, None]
    v = zb / nb[:, None]
    s = u @ v.T / tau
    p, q = _softmaxes(s)
    b = za.shape[0]
    g = (p + q) / (2 * b)
    g[np.diag_indices(b)] -= 1.0 / b
    du = g @ v / tau
    dv = g.T @ u / tau
    ga = (du - u * np.sum(u * du, axis=1, keepdims=True)) / na[:, None]
    gb = (dv - v * np.sum(v * dv, axis=1, keepdims=True)) / nb[:, None]
    if return_loss:
        with np.errstate(divide="ignore"):
            loss = float(-(np.sum(np.log(np.diag(p))) + np.sum(np.log(np.diag(q)))) / (2 * b))
        return ga, gb, loss
    return ga, gb


def info_nce_table_grad(table, idx_a, idx_b, tau: float) -> np.ndarray:
    """Gradient of the symmetric InfoNCE loss of a batch wrt a free embedding table (E10).

    The batch is the pairs ``(table[idx_a[k]], table[idx_b[k]])``. An item appearing in several
    slots (duplicate keys, or on both sides) gets the sum of its slot gradients (scatter-add).

    Parameters
    ----------
    table : array_like of shape (N, d)
        Unnormalised embedding table.
    idx_a, idx_b : array_like of int, shape (B,)
        Row indices of the two sides.
    tau : float
        Temperature.

    Returns
    -------
    ndarray of shape (N, d), float64
        ``dL/dtable`` (rows not in the batch are zero).
    """
    t = _f64(table, "table")
    ia = np.asarray(idx_a, dtype=np.int64)
    ib = np.asarray(idx_b, dtype=np.int64)
    if t.ndim != 2:
        raise InputError(f"table must have shape (N, d), got {t.shape}")
    for name, ix in (("idx_a", ia), ("idx_b", ib)):
        if ix.size and (ix.min() < 0 or ix.max() >= t.shape[0]):
            raise InputError(f"{name} out of range [0, {t.shape[0]}): {ix.min()}..{ix.max()}")
    ga, gb = info_nce_grad(t[ia], t[ib], tau)
    out = np.zeros_like(t)
    np.add.at(out, ia, ga)
    np.add.at(out, ib, gb)
    return out


def _check_beta(beta):
    b = _f64(beta, "beta")
    if np.any((b < 0) | (b >= 1)):
        raise InputError(f"beta must be in [0, 1), got {beta!r}")
    return b


def momentum_heat_correction(heat, beta, *, l2_in_momentum: bool = False) -> np.ndarray:
    """Heat to use in the SGD balance under heavy-ball momentum (E12, docs/theory.md C2).

    One gradient's total displacement under momentum ``beta`` is ``eta g / (1 - beta)``, so the
    per-step heat measured with a plain-SGD probe (step ``eta``) becomes
    ``Sigma^2 / (1 - beta)^2`` with decoupled decay. With L2 inside the momentum buffer (torch
    ``SGD(weight_decay=...)``) ``c`` also gains ``1/(1 - beta)``; this function folds that into
    the heat and returns the net ``Sigma^2 / (1 - beta)``, to be used with the SGD ``c``.

    Parameters
    ----------
    heat : array_like
        Sigma^2 measured with a plain-SGD virtual step of size eta.
    beta : float
        Momentum coefficient in [0, 1).
    l2_in_momentum : bool, keyword-only
        Decay applied as L2 inside the momentum (True) or decoupled (False, the default).

    Returns
    -------
    ndarray of float64
        Corrected heat. Measured in the simulation (section 7 C2, beta = 0.9): mean|rel| 0.025
        with the decoupled form, 3 % with the L2 form.
    """
    b = _check_beta(beta)
    h = _f64(heat, "heat")
    return h / (1.0 - b) if l2_in_momentum else h / (1.0 - b) ** 2


def momentum_drift_correction(drift, beta, *, l2_in_momentum: bool = False) -> np.ndarray:
    """Drift counterpart of (E12): ``D~ / (1 - beta)`` (decoupled decay). **Untested** in docs/theory.md.

    By the same argument as :func:`momentum_heat_correction` the mean displacement of one
    gradient is amplified by ``1/(1 - beta)``; with L2 inside the momentum the factor cancels
    against the ``1/(1 - beta)`` gained by ``c`` and ``D~`` is returned unchanged. docs/theory.md
    marks this as expected but not checked by simulation (free tables have zero drift).
    """
    b = _check_beta(beta)
    d = _f64(drift, "drift")
    return d + 0.0 * b if l2_in_momentum else d / (1.0 - b)
