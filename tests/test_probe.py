"""Probe estimators on small networks, checked against independent computations.

- JVP displacements vs float64 central finite differences (acceptance: 1e-6 relative);
- D2 (finite differences) vs forward-over-forward AD;
- lambda_rad (E4) = k lambda for a k-homogeneous bias-free ReLU MLP;
- validation: on a two-tower bias-free ReLU MLP trained by SGD with decoupled decay, the probe's
  per-item heat matches the heat measured along the training trajectory (Spearman >= 0.9) and
  the sign of the drift agrees.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import stats as sps
from torch.func import functional_call, jvp

from _probe_call import run_probe
from normscope import theory
from normscope.errors import InputError, ModelError
from normscope.probes import (
    ModuleAdapter,
    decay_mask_for,
    probe_moments,
    sample_pair_batches,
    symmetric_info_nce,
)


def _tanh_net(seed=0, d_in=6, hidden=10, d_out=5, dtype=torch.float64):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, d_out))
    return net.to(dtype)


def _grad(net, left, right, idx, tau):
    params = {k: v.detach().clone().requires_grad_(True) for k, v in net.named_parameters()}
    zl = functional_call(net, params, (left[idx],))
    zr = functional_call(net, params, (right[idx],))
    loss = symmetric_info_nce(zl, zr, tau)
    g = torch.autograd.grad(loss, list(params.values()))
    return dict(zip(params, g))


def test_info_nce_matches_theory():
    rng = np.random.default_rng(1)
    za, zb = rng.normal(size=(7, 4)), rng.normal(size=(7, 4)) * 3
    ours = float(symmetric_info_nce(torch.tensor(za), torch.tensor(zb), 0.1))
    assert ours == pytest.approx(theory.info_nce_loss(za, zb, 0.1), rel=1e-12)


def test_jvp_displacement_matches_float64_finite_difference():
    """Acceptance: <z, a> and ||a||^2 from the JVP equal float64 central differences to 1e-6 relative."""
    net = _tanh_net()
    gen = torch.Generator().manual_seed(3)
    items = torch.randn(9, 6, generator=gen, dtype=torch.float64)
    left = torch.randn(20, 6, generator=gen, dtype=torch.float64)
    right = left + 0.3 * torch.randn(20, 6, generator=gen, dtype=torch.float64)
    m = probe_moments(ModuleAdapter(net), items, (left, right), batch_size=8, batches=3, tau=0.1, seed=5, chunk_size=4)
    theta = {k: v.detach() for k, v in net.named_parameters()}
    z = functional_call(net, theta, (items,))
    h = 1e-6
    for k, idx in enumerate(sample_pair_batches(20, 8, 3, 5)):
        g = _grad(net, left, right, torch.as_tensor(idx), 0.1)
        zp = functional_call(net, {n: theta[n] - h * g[n] for n in theta}, (items,))
        zm = functional_call(net, {n: theta[n] + h * g[n] for n in theta}, (items,))
        a_fd = (zp - zm) / (2 * h)  # direction -g
        za_fd = (z * a_fd).sum(1).numpy()
        aa_fd = (a_fd * a_fd).sum(1).numpy()
        np.testing.assert_allclose(m.za[k], za_fd, rtol=1e-6, atol=1e-6 * np.abs(za_fd).max())
        np.testing.assert_allclose(m.aa[k], aa_fd, rtol=1e-6)
        # second-order radial term vs forward-over-forward AD: c = 0.5 f''[g, g]
        v = {n: -g[n] for n in theta}
        first = lambda p, v=v: jvp(lambda q: functional_call(net, q, (items,)), (p,), (v,))[1]  # noqa: E731
        _, second = jvp(first, (theta,), (v,))
        zc_ad = (z * 0.5 * second).sum(1).numpy()
        np.testing.assert_allclose(m.zc[k], zc_ad, rtol=1e-5, atol=1e-6 * np.abs(zc_ad).max())
    assert np.all(m.r == pytest.approx(z.norm(dim=1).numpy(), rel=1e-12))


def test_float32_model_d2_uses_float64_copy_and_matches():
    """A float32 model: D2 from the float64 copy agrees with float64 AD to < 1e-4 (float32 at the
    same step would not: docs/theory.md section 9)."""
    net64 = _tanh_net(seed=2)
    net32 = _tanh_net(seed=2, dtype=torch.float32)
    gen = torch.Generator().manual_seed(0)
    items = torch.randn(12, 6, generator=gen)
    left = torch.randn(16, 6, generator=gen)
    right = left + 0.5 * torch.randn(16, 6, generator=gen)
    kw = dict(batch_size=8, batches=2, tau=0.1, seed=0, second_order="fd")
    m32 = probe_moments(ModuleAdapter(net32), items, (left, right), **kw)  # fd default: float64 copy at 3e-3
    m64 = probe_moments(ModuleAdapter(net64), items.double(), (left.double(), right.double()), **kw)
    assert m32.fd_dtype == m64.fd_dtype == "float64" and m32.fd_target == 3e-3 and m64.fd_check is None
    np.testing.assert_allclose(m32.zc, m64.zc, rtol=2e-3, atol=2e-3 * np.abs(m64.zc).max())
    np.testing.assert_allclose(m32.za, m64.za, rtol=1e-4, atol=1e-4 * np.abs(m64.za).max())
    assert next(net32.parameters()).dtype == torch.float32  # the caller's model is untouched
    # float32 differences at step 1e-2 (the top of docs/theory.md's range), with a float64 spot check that
    # agrees with the independent float64 model to the same precision it reports
    mauto = probe_moments(ModuleAdapter(net32), items, (left, right), fd_dtype="float32", **kw)
    assert mauto.fd_dtype == "float32" and mauto.fd_target == 1e-2
    chk = mauto.fd_check
    assert chk is not None and chk["max_rel_diff"] < 0.05
    scale = np.abs(m64.zc[0]).mean()
    assert np.median(np.abs(mauto.zc[0] - m64.zc[0])) / scale < 0.05


class _BiasFreeMLP(torch.nn.Module):
    def __init__(self, d_in, hidden, d_out, gen):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(hidden, d_in, generator=gen, dtype=torch.float64) / d_in**0.5)
        self.w2 = torch.nn.Parameter(torch.randn(d_out, hidden, generator=gen, dtype=torch.float64) / hidden**0.5)

    def forward(self, x):
        return torch.relu(x @ self.w1.T) @ self.w2.T


def test_lambda_rad_is_k_lambda_for_homogeneous_mlp():
    """(E4): a bias-free 2-layer ReLU MLP is 2-homogeneous, so lambda_rad = 2 lambda for every x."""
    gen = torch.Generator().manual_seed(0)
    q, d = _BiasFreeMLP(8, 16, 4, gen), _BiasFreeMLP(8, 16, 4, gen)
    x = torch.randn(10, 8, generator=gen, dtype=torch.float64)
    res = run_probe((q, d), x, (x, x + 0.1), batch_size=5, batches=2, lr=0.1, weight_decay=1e-3, n_boot=50)
    np.testing.assert_allclose(res.items["lambda_rad_per_lambda"], 2.0, rtol=1e-10)
    np.testing.assert_allclose(res.items["lambda_rad"], 2e-3, rtol=1e-10)
    # per-item algebra of (E8), (E9), (E7)
    it = res.items
    np.testing.assert_allclose(it["heat"], 0.01 * it["s"], rtol=1e-12)
    np.testing.assert_allclose(it["drift"], 0.1 * it["d1"] + 0.01 * it["d2"], rtol=1e-12)
    np.testing.assert_allclose(it["q"], it["drift"] / it["r"] ** 2 + it["heat"] / (2 * it["r"] ** 4), rtol=1e-12)
    ok = it["r_eq_flag"] == ""
    c = 0.1 * 2e-3
    r2 = (it["drift"][ok] + np.sqrt(it["drift"][ok] ** 2 + 2 * c * it["heat"][ok])) / (2 * c)
    np.testing.assert_allclose(it["r_eq"][ok], np.sqrt(r2), rtol=1e-10)
    assert it["r_eq"][~ok].isna().all()
    assert res.summary["n_negative_q"] == int((it["q"] < 0).sum())


def test_decay_mask_matrices_excludes_biases_and_layernorm():
    params = {"lin.weight": torch.zeros(3, 3), "lin.bias": torch.zeros(3), "LayerNorm.weight": torch.zeros(3),
              "emb.weight": torch.zeros(10, 3)}
    assert decay_mask_for(params) == {"lin.weight": True, "lin.bias": False, "LayerNorm.weight": False, "emb.weight": True}
    assert all(decay_mask_for(params, "all").values())
    assert decay_mask_for(params, lambda n, v: n.startswith("emb"))["emb.weight"]
    with pytest.raises(InputError, match="nope"):
        decay_mask_for(params, "nope")


def test_bad_inputs():
    net = _tanh_net()
    x = torch.randn(6, 6, dtype=torch.float64)
    with pytest.raises(InputError, match="batches must be >= 2"):
        run_probe(net, x, (x, x), batch_size=4, batches=1)
    with pytest.raises(InputError, match="only 6 pairs"):
        run_probe(net, x, (x, x), batch_size=8, batches=2)
    for p in net.parameters():
        p.requires_grad_(False)
    with pytest.raises(ModelError, match="no trainable parameters"):
        run_probe(net, x, (x, x), batch_size=4, batches=2)


# ----------------------------------------------------------------------------- validation
def _toy_two_tower(seed=0, n_items=48, n_concepts=12, d_in=16, hidden=48, d_out=12):
    """Items with 1-3 ambiguous concepts; pairs (item input, concept input)."""
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    concept_x = torch.randn(n_concepts, d_in, generator=gen, dtype=torch.float64)
    item_x = torch.randn(n_items, d_in, generator=gen, dtype=torch.float64)
    amb = np.arange(n_items) % 3 + 1
    pi, pc = [], []
    for i in range(n_items):
        for c in rng.choice(n_concepts, size=amb[i], replace=False):
            for _ in range(2 if amb[i] == 1 else 1):
                pi.append(i)
                pc.append(c)
    pi, pc = np.array(pi), np.array(pc)
    q = _BiasFreeMLP(d_in, hidden, d_out, gen)
    d = _BiasFreeMLP(d_in, hidden, d_out, gen)
    return q, d, item_x, concept_x, pi, pc, amb


@pytest.fixture
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_probe_heat_matches_training_trajectory(one_thread):
    """Acceptance: probe heat vs training-time heat (trajectory form), Spearman >= 0.9; drift sign agrees.

    The model is trained with plain SGD + decoupled decay (A2); during the last T steps each
    actual gradient step is used as the probe (K = 1 per step, docs/theory.md section 6), giving per-item
    heat ``R^2 ||Delta_t||^2`` and drift ``<z, Delta_t>`` averaged over the trajectory. The probe is
    then run on snapshots with the same pair distribution, B and tau.
    """
    q, d, item_x, concept_x, pi, pc, amb = _toy_two_tower()
    eta, lam, tau, bsz = 0.5, 2e-3, 0.1, 32
    left, right = item_x[pi], concept_x[pc]
    params = list(q.parameters()) + list(d.parameters())
    rng = np.random.default_rng(1)
    burn, T = 1500, 600
    heat_t = np.zeros(len(item_x))
    drift_t = np.zeros(len(item_x))
    snapshots = []
    for t in range(burn + T):
        idx = torch.as_tensor(rng.choice(len(pi), size=bsz, replace=False))
        loss = symmetric_info_nce(q(left[idx]), d(right[idx]), tau)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            if t >= burn:
                z = q(item_x)
                w_old = [p.clone() for p in params]
                for p, g in zip(params, grads):
                    p -= eta * g
                delta = q(item_x) - z
                heat_t += (z.norm(dim=1) ** 2 * (delta**2).sum(1)).numpy()
                drift_t += (z * delta).sum(1).numpy()
                for p, w, g in zip(params, w_old, grads):
                    p.copy_(w - eta * g - eta * lam * w)
            else:
                for p, g in zip(params, grads):
                    p.mul_(1 - eta * lam).sub_(eta * g)
            if t >= burn and (t - burn) % (T // 4) == 0:
                snapshots.append(([p.detach().clone() for p in params]))
    heat_t /= T
    drift_t /= T
    # probe each snapshot and average (docs/theory.md B3: snapshot drift is noisy)
    heat_p, drift_p = np.zeros(len(item_x)), np.zeros(len(item_x))
    for s, snap in enumerate(snapshots):
        with torch.no_grad():
            for p, w in zip(params, snap):
                p.copy_(w)
        res = run_probe((q, d), item_x, (left, right), batch_size=bsz, batches=24, tau=tau, lr=eta,
                        weight_decay=lam, seed=s, n_boot=50)
        heat_p += res.items["heat"].to_numpy() / len(snapshots)
        drift_p += res.items["drift"].to_numpy() / len(snapshots)
    rho = sps.spearmanr(heat_p, heat_t).statistic
    print(f"heat Spearman(probe, trajectory) = {rho:.3f}; mean drift probe {drift_p.mean():.3e} vs trajectory "
          f"{drift_t.mean():.3e}; per-item drift sign agreement {np.mean(np.sign(drift_p) == np.sign(drift_t)):.2f}; "
          f"drift Spearman {sps.spearmanr(drift_p, drift_t).statistic:.3f}")
    assert rho >= 0.9, rho
    # heat follows ambiguity in both
    assert sps.spearmanr(heat_t, amb).statistic > 0.5
    # mean drift sign agrees (inward in docs/theory.md B1)
    assert np.sign(drift_p.mean()) == np.sign(drift_t.mean())
    # lambda_rad = 2 lambda (k = 2) and summary keys are present
    np.testing.assert_allclose(res.items["lambda_rad"], 2 * lam, rtol=1e-9)
    for key in ("corr_norm_heat", "corr_norm_drift", "corr_req_norm", "corr_norm_displacement", "corr_norm_heat_rate",
                "corr_norm_d2", "heat_cancelled_by_d2", "n_negative_q", "n_negative_lambda_rad", "c_fit",
                "q_over_c_mean", "caveats", "n_truncated", "batch_size", "tau", "lr", "weight_decay"):
        assert key in res.summary
