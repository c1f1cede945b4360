"""Tests of normscope.theory against independent methods (numpy.roots, torch autograd, finite differences)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from normscope import theory as th
from normscope.errors import InputError


# ---------------------------------------------------------------- (E7)
def _roots_reference(d, v2):
    """Largest real root in y of 2 y^2 - 2 D y - V^2 via numpy.roots (companion eigenvalues)."""
    r = np.roots([2.0, -2.0 * d, -v2])
    r = r[np.abs(r.imag) <= 1e-12 * max(1.0, np.abs(r).max())].real
    return r.max()


def test_r_eq_squared_vs_numpy_roots(rng):
    d = rng.normal(size=400) * 10.0 ** rng.uniform(-3, 3, size=400)
    v2 = np.abs(rng.normal(size=400)) * 10.0 ** rng.uniform(-3, 3, size=400)
    got = th.r_eq_squared(d, v2)
    ref = np.array([_roots_reference(a, b) for a, b in zip(d, v2)])
    assert (d < 0).sum() > 150
    # numpy.roots is backward stable only: compare where the root is well conditioned
    np.testing.assert_allclose(got, np.maximum(ref, 0), rtol=1e-9, atol=1e-12 * np.abs(d).max())
    # the residual of the quadratic is at rounding level, relative to its terms
    res = 2 * got**2 - 2 * d * got - v2
    scale = 2 * got**2 + 2 * np.abs(d) * got + v2
    assert np.max(np.abs(res) / scale) < 1e-14


@pytest.mark.parametrize("scale", [1e-30, 1.0, 1e30, 1e150, 1e-150])
def test_r_eq_squared_scales_homogeneously(rng, scale):
    # R^2 is homogeneous: D* -> s D*, V*^2 -> s^2 V*^2 gives R^2 -> s R^2
    d = rng.normal(size=50)
    v2 = np.abs(rng.normal(size=50))
    base = th.r_eq_squared(d, v2)
    got = th.r_eq_squared(d * scale, v2 * scale**2)
    assert np.all(np.isfinite(got)) and np.all(got > 0)
    np.testing.assert_allclose(got / scale, base, rtol=1e-13)


def test_r_eq_squared_limits_and_cancellation():
    # V* = 0: max(D*, 0)
    np.testing.assert_array_equal(th.r_eq_squared([2.0, -3.0, 0.0], 0.0), [2.0, 0.0, 0.0])
    # strong inward drift: R^2 ~ V^2/(2|D|) with relative error O(V^2/D^2)
    d, v2 = -1e8, 1.0
    got = th.r_eq_squared(d, v2)
    assert got == pytest.approx(v2 / (2 * abs(d)), rel=1e-15)
    naive = (d + np.sqrt(d * d + 2 * v2)) / 2
    assert abs(naive / got - 1) > 0.1  # the textbook form loses most digits here
    # D* = 0: sqrt(V^2/2)
    assert th.r_eq_squared(0.0, 8.0) == pytest.approx(2.0, rel=1e-15)
    with pytest.raises(InputError, match="v_star2"):
        th.r_eq_squared(1.0, -1.0)


def test_equilibrium_radius_forms_agree(rng):
    drift = rng.normal(size=100) * 1e-3
    heat = np.abs(rng.normal(size=100)) * 1e-3
    eta, lam = 0.5, 2e-3
    r = th.equilibrium_radius(drift, heat, eta=eta, lambda_rad=lam)
    c = eta * lam
    np.testing.assert_allclose(r**2, th.r_eq_squared(drift / c, heat / c), rtol=1e-13)
    np.testing.assert_allclose(th.equilibrium_radius(drift, heat, c=c), r, rtol=0)
    # q(R_eq) = c: (E9) balance at the root
    np.testing.assert_allclose(th.implied_decay(drift, heat, r), c, rtol=1e-12)
    # free vector with D~ = 0: R^4 = Sigma^2 / (2c)  (E2)
    np.testing.assert_allclose(th.equilibrium_radius(0.0, heat, c=c) ** 4, heat / (2 * c), rtol=1e-13)
    # c = 0: inward limit Sigma^2/(2|D~|); c < 0: NaN
    assert th.equilibrium_radius(-2.0, 3.0, c=0.0) ** 2 == pytest.approx(0.75, rel=1e-15)
    assert np.isinf(th.equilibrium_radius(2.0, 3.0, c=0.0))
    assert np.isnan(th.equilibrium_radius(2.0, 3.0, c=-1.0))
    with pytest.raises(InputError):
        th.equilibrium_radius(1.0, 1.0, lambda_rad=1.0)


def test_equilibrium_radius_per_eta_matches_e8(rng):
    d1, d2, s = rng.normal(size=20), rng.normal(size=20), np.abs(rng.normal(size=20))
    eta, lr = 0.3, 4e-3
    got = th.equilibrium_radius_per_eta(d1, d2, s, eta=eta, lambda_rad=lr)
    ref = np.sqrt(th.r_eq_squared((d1 + eta * d2) / lr, eta * s / lr))
    np.testing.assert_allclose(got, ref, rtol=1e-12)


# ---------------------------------------------------------------- (E11)
def test_fit_decay_and_lr_recovers_known_constants(rng):
    lam_rad, eta = 3e-3, 0.7
    n = 200
    d1 = rng.normal(size=n) * 1e-2
    d2 = rng.normal(size=n) * 1e-2
    s = np.abs(rng.normal(size=n)) * 1e-2 + 1e-3
    r = th.equilibrium_radius_per_eta(d1, d2, s, eta=eta, lambda_rad=lam_rad)
    fit = th.fit_decay_and_lr(r, d1, d2, s)
    assert fit.lambda_rad == pytest.approx(lam_rad, rel=1e-9)
    assert fit.eta == pytest.approx(eta, rel=1e-9)
    lr_, eta_ = fit
    assert (lr_, eta_) == (fit.lambda_rad, fit.eta)


def test_fit_decay_and_lr_failure_modes(rng):
    with pytest.raises(InputError, match=">= 2"):
        th.fit_decay_and_lr([1.0], [1.0], [1.0], [1.0])
    with pytest.raises(InputError, match="D1 = 0"):
        th.fit_decay_and_lr([1.0, 2.0], [0.0, 0.0], [1.0, 3.0], [1.0, 1.0])
    with pytest.raises(InputError, match="constant"):
        th.fit_decay_and_lr([1.0, 1.0], [1.0, 2.0], [1.0, 1.0], [1.0, 1.0])
    # inconsistent data: the fit returns what it finds, even a negative constant
    fit = th.fit_decay_and_lr([1.0, 1.0, 1.0], [1.0, -1.0, 0.5], [0.0, 1.0, 0.2], [0.0, 0.0, 0.0])
    assert np.isfinite(fit.lambda_rad) and np.isfinite(fit.eta)


# ---------------------------------------------------------------- section 4 table
def test_discrete_c_rows():
    eta, lam = 0.5, 2e-3
    x = eta * lam
    assert th.discrete_c(eta, lam, kind="free") == pytest.approx((1 - (1 - x) ** 2) / 2, rel=1e-14)
    assert th.discrete_c(eta, lam, kind="homogeneous", k=2) == pytest.approx(((1 - x) ** -4 - 1) / 2, rel=1e-12)
    assert th.discrete_c(eta, lam, kind="first_order", k=2) == pytest.approx(2 * x, rel=1e-15)
    # rows agree to O(eta lam)
    assert abs(th.discrete_c(eta, lam, kind="homogeneous", k=2) / (2 * x) - 1) < 3 * x
    assert th.probe_step(eta, lam, kind="homogeneous") == pytest.approx(eta / (1 - x))
    with pytest.raises(InputError):
        th.discrete_c(eta, lam, kind="nope")
    with pytest.raises(InputError):
        th.discrete_c(2.0, 1.0)


# ---------------------------------------------------------------- (E10)
def _torch_loss(za, zb, tau):
    u = za / za.norm(dim=1, keepdim=True)
    v = zb / zb.norm(dim=1, keepdim=True)
    s = u @ v.T / tau
    t = torch.arange(s.shape[0])
    return 0.5 * (torch.nn.functional.cross_entropy(s, t) + torch.nn.functional.cross_entropy(s.T, t))


def test_info_nce_grad_vs_autograd_and_fd(rng):
    b, d, tau = 12, 7, 0.1
    za = rng.normal(size=(b, d)) * rng.uniform(0.2, 5, size=(b, 1))
    zb = rng.normal(size=(b, d)) * rng.uniform(0.2, 5, size=(b, 1))
    zb[3] = za[3] + 0.1 * rng.normal(size=d)
    ga, gb, loss = th.info_nce_grad(za, zb, tau, return_loss=True)
    ta = torch.tensor(za, requires_grad=True)
    tb = torch.tensor(zb, requires_grad=True)
    tl = _torch_loss(ta, tb, tau)
    tl.backward()
    assert loss == pytest.approx(tl.item(), rel=1e-13)
    assert th.info_nce_loss(za, zb, tau) == pytest.approx(tl.item(), rel=1e-13)
    np.testing.assert_allclose(ga, ta.grad.numpy(), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(gb, tb.grad.numpy(), rtol=1e-10, atol=1e-13)
    # central finite differences on a few coordinates
    h = 1e-6
    for i, j in [(0, 0), (3, 2), (11, 6)]:
        e = np.zeros_like(za)
        e[i, j] = h
        fd = (th.info_nce_loss(za + e, zb, tau) - th.info_nce_loss(za - e, zb, tau)) / (2 * h)
        assert fd == pytest.approx(ga[i, j], abs=1e-8)
        fd = (th.info_nce_loss(za, zb + e, tau) - th.info_nce_loss(za, zb - e, tau)) / (2 * h)
        assert fd == pytest.approx(gb[i, j], abs=1e-8)


def test_info_nce_grad_tangent_and_inverse_scaling(rng):
    b, d, tau = 16, 5, 0.1
    za = rng.normal(size=(b, d))
    zb = rng.normal(size=(b, d))
    ga, gb = th.info_nce_grad(za, zb, tau)
    # tangency <z, g> = 0 (relative to |z||g|)
    tang = np.abs(np.sum(za * ga, axis=1)) / (np.linalg.norm(za, axis=1) * np.linalg.norm(ga, axis=1))
    assert tang.max() < 1e-10
    tang = np.abs(np.sum(zb * gb, axis=1)) / (np.linalg.norm(zb, axis=1) * np.linalg.norm(gb, axis=1))
    assert tang.max() < 1e-10
    # 1/R scaling: g(s z) = g(z)/s per row
    s = rng.uniform(0.1, 10, size=(b, 1))
    ga2, gb2 = th.info_nce_grad(za * s, zb, tau)
    np.testing.assert_allclose(ga2 * s, ga, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(gb2, gb, rtol=1e-10, atol=1e-14)


def test_info_nce_table_grad_sums_duplicates(rng):
    n, d, tau = 6, 4, 0.2
    table = rng.normal(size=(n, d))
    ia = np.array([0, 1, 1, 2, 5])
    ib = np.array([3, 0, 4, 1, 1])  # item 1 appears three times, item 0 twice
    got = th.info_nce_table_grad(table, ia, ib, tau)
    tt = torch.tensor(table, requires_grad=True)
    _torch_loss(tt[torch.tensor(ia)], tt[torch.tensor(ib)], tau).backward()
    np.testing.assert_allclose(got, tt.grad.numpy(), rtol=1e-10, atol=1e-14)
    with pytest.raises(InputError, match="idx_b"):
        th.info_nce_table_grad(table, ia, ib + 10, tau)
    with pytest.raises(InputError, match="non-zero"):
        th.info_nce_grad(np.zeros((2, 3)), np.ones((2, 3)), tau)


# ---------------------------------------------------------------- (E1), (E5)
def test_radial_step_exact_on_free_table_step(rng):
    n, d, tau, eta, lam = 32, 8, 0.1, 1.0, 1e-3
    table = rng.normal(size=(n, d))
    ia = rng.integers(0, n, size=10)
    ib = rng.integers(0, n, size=10)
    g = th.info_nce_table_grad(table, ia, ib, tau)
    new = (1 - eta * lam) * table - eta * g  # decoupled decay, plain SGD (A2)
    r2 = np.sum(table**2, axis=1)
    gamma2 = r2 * np.sum(g**2, axis=1)
    pred = th.radial_step(r2, gamma2, eta=eta, lam=lam)
    np.testing.assert_allclose(pred, np.sum(new**2, axis=1), rtol=1e-14)


def test_homogeneous_step_exact_on_relu_mlp(rng):
    # f(x) = W2 relu(W1 x) is 2-homogeneous in (W1, W2); (E5) at the probe step eta/(1-eta lam)
    eta, lam, k = 0.5, 0.05, 2
    w1, w2 = rng.normal(size=(6, 4)), rng.normal(size=(3, 6))
    g1, g2 = rng.normal(size=w1.shape), rng.normal(size=w2.shape)
    x = rng.normal(size=4)

    def f(a, b):
        return b @ np.maximum(a @ x, 0)

    z = f(w1, w2)
    new = f((1 - eta * lam) * w1 - eta * g1, (1 - eta * lam) * w2 - eta * g2)
    et = th.probe_step(eta, lam, kind="homogeneous")
    delta = f(w1 - et * g1, w2 - et * g2) - z
    pred = th.homogeneous_step(z @ z, z @ delta, delta @ delta, eta=eta, lam=lam, k=k)
    assert pred == pytest.approx(new @ new, rel=1e-13)


# ---------------------------------------------------------------- (E12)
def test_momentum_corrections():
    assert th.momentum_heat_correction(1.0, 0.9) == pytest.approx(100.0)
    assert th.momentum_heat_correction(1.0, 0.9, l2_in_momentum=True) == pytest.approx(10.0)
    assert th.momentum_drift_correction(1.0, 0.9) == pytest.approx(10.0)
    assert th.momentum_drift_correction(1.0, 0.9, l2_in_momentum=True) == pytest.approx(1.0)
    with pytest.raises(InputError, match="beta"):
        th.momentum_heat_correction(1.0, 1.0)
