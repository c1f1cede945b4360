"""Tests of normscope.lab: kernels vs normscope.theory / torch, optimizers vs torch.optim, small end-to-end runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from normscope import theory as th
from normscope.errors import InputError
from normscope.lab import GATE, LabRequest, run_lab, synthetic_data
from normscope.lab.encoders import MLPTwoTower, TableEncoder, clip_grad, clip_loss
from normscope.lab.optim import AdamW, Momentum, SGD, make_optimizer


# ---------------------------------------------------------------- kernels
def test_clip_grad_batched_matches_theory(rng):
    za = rng.normal(size=(3, 10, 5))
    zb = rng.normal(size=(3, 10, 5))
    ga, gb = clip_grad(torch.from_numpy(za), torch.from_numpy(zb), 0.1)
    for k in range(3):
        ra, rb = th.info_nce_grad(za[k], zb[k], 0.1)
        np.testing.assert_allclose(ga[k].numpy(), ra, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(gb[k].numpy(), rb, rtol=1e-12, atol=1e-14)
    loss = clip_loss(torch.from_numpy(za), torch.from_numpy(zb), 0.1)
    assert loss[1].item() == pytest.approx(th.info_nce_loss(za[1], zb[1], 0.1), rel=1e-13)


def test_table_grads_and_batched_probe_match_theory(rng):
    gen = torch.Generator().manual_seed(0)
    enc = TableEncoder(40, 6, 0.1, gen)
    t = enc.table.numpy().copy()
    ia = rng.integers(0, 40, size=(4, 12))
    ib = rng.integers(0, 40, size=(4, 12))
    g = enc.grads(torch.from_numpy(ia[0]), torch.from_numpy(ib[0]))[0].numpy()
    np.testing.assert_allclose(g, th.info_nce_table_grad(t, ia[0], ib[0], 0.1), rtol=1e-12, atol=1e-15)
    eta = 0.7
    zd, dd = enc.probe(torch.from_numpy(ia), torch.from_numpy(ib), eta, enc.table)
    ref_zd = np.zeros(40)
    ref_dd = np.zeros(40)
    for k in range(4):
        delta = -eta * th.info_nce_table_grad(t, ia[k], ib[k], 0.1)
        ref_zd += np.sum(t * delta, axis=1)
        ref_dd += np.sum(delta**2, axis=1)
    np.testing.assert_allclose(dd.numpy(), ref_dd, rtol=1e-12, atol=1e-16)
    # the free-table drift vanishes identically (tangent gradients, section 2)
    assert np.max(np.abs(zd.numpy())) < 1e-14 * np.max(ref_dd) + 1e-16
    np.testing.assert_allclose(zd.numpy(), ref_zd, atol=1e-15)


def test_mlp_is_two_homogeneous_and_grads_match_autograd(rng):
    enc = MLPTwoTower(20, 4, 0.1, torch.Generator().manual_seed(1), hidden=8, input_dim=5)
    z = enc.embed()
    scaled = [2.5 * p for p in enc.params]
    np.testing.assert_allclose(enc.embed(scaled).numpy(), 2.5**2 * z.numpy(), rtol=1e-13)
    ia, ib = torch.tensor([0, 3, 5, 3]), torch.tensor([1, 2, 2, 7])
    g = enc.grads(ia, ib)
    # finite difference on one weight of tower b (independent of autograd)
    h = 1e-6
    def loss_at(params):
        za = enc._tower(params[0], params[1], enc.x[ia])
        zb = enc._tower(params[2], params[3], enc.x[ib])
        return clip_loss(za, zb, enc.tau).item()
    for j, (r, c) in [(2, (1, 3)), (1, (0, 2))]:
        plus = [p.clone() for p in enc.params]
        minus = [p.clone() for p in enc.params]
        plus[j][r, c] += h
        minus[j][r, c] -= h
        assert (loss_at(plus) - loss_at(minus)) / (2 * h) == pytest.approx(g[j][r, c].item(), abs=1e-8)


# ---------------------------------------------------------------- optimizers
def _params(rng):
    return [torch.from_numpy(rng.normal(size=(4, 3))), torch.from_numpy(rng.normal(size=5))]


def test_sgd_update_is_exactly_decoupled(rng):
    p = _params(rng)
    g = [torch.from_numpy(rng.normal(size=q.shape)) for q in p]
    ref = [(1 - 0.5 * 0.1) * q - 0.5 * gq for q, gq in zip(p, g)]
    SGD(0.5, 0.1).step(p, g)
    for a, b in zip(p, ref):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", ["momentum", "adamw"])
def test_optimizers_match_torch(rng, name):
    lr, wd = 0.05, 0.3
    p = _params(rng)
    q = [x.clone().requires_grad_(True) for x in p]
    if name == "adamw":
        ours = AdamW(lr, wd)
        ref = torch.optim.AdamW(q, lr=lr, weight_decay=wd, betas=(0.9, 0.999), eps=1e-8)
    else:
        ours = Momentum(lr, wd, beta=0.9)
        ref = torch.optim.SGD(q, lr=lr, momentum=0.9)  # decay applied outside the buffer, below
    for _ in range(5):
        g = [torch.from_numpy(rng.normal(size=x.shape)) for x in p]
        ours.step(p, g)
        with torch.no_grad():
            if name == "momentum":
                for x in q:
                    x.mul_(1 - lr * wd)
        for x, gx in zip(q, g):
            x.grad = gx.clone()
        ref.step()
    for a, b in zip(p, q):
        torch.testing.assert_close(a, b.detach(), rtol=1e-12, atol=1e-13)


def test_optimizer_validation():
    with pytest.raises(InputError, match="optimizer"):
        make_optimizer("rmsprop", 0.1, 0.1)
    with pytest.raises(InputError, match="weight_decay"):
        SGD(1.0, 1.0)
    with pytest.raises(InputError, match="beta"):
        Momentum(0.1, 0.1, beta=1.0)


# ---------------------------------------------------------------- data
def test_synthetic_ambiguity_is_number_of_concepts():
    d = synthetic_data(128, 16, seed=3)
    primary = np.arange(128) % 16
    for i in range(128):
        pos = d.indices[d.indptr[i]:d.indptr[i + 1]]
        assert i not in pos
        assert len(set(primary[pos])) == d.ambiguity[i] == len(d.info["concepts"][i])
    assert np.bincount(d.ambiguity).tolist() == [0, 32, 32, 32, 32]
    ia, ib = d.sample(np.random.default_rng(0), (3, 50))
    assert ia.shape == (3, 50)
    for a, b in zip(ia.ravel(), ib.ravel()):
        assert b in d.indices[d.indptr[a]:d.indptr[a + 1]]


@pytest.mark.shared
def test_wordnet_pairs_share_synset_or_hypernym(shared_data, tmp_path, monkeypatch):
    from normscope.lab.data import wordnet_data
    from normscope.lab.wordnet_data import load_wordnet

    wn = load_wordnet()
    d = wordnet_data(48, seed=1, wordnet=wn)
    assert np.bincount(d.ambiguity, minlength=5)[1:].tolist() == [12, 12, 12, 12]
    for i, w in enumerate(d.names):
        senses = [s for s in wn.synsets(w, pos="n") if w in {m.lower() for m in s.lemma_names()}]
        assert len(senses) == d.ambiguity[i]
        syn = {s.name() for s in senses}
        hyp = {h.name() for s in senses for h in s.hypernyms() + s.instance_hypernyms()}
        for j in d.indices[d.indptr[i]:d.indptr[i + 1]]:
            o = [s for s in wn.synsets(d.names[j], pos="n") if d.names[j] in {m.lower() for m in s.lemma_names()}]
            osyn = {s.name() for s in o}
            ohyp = {h.name() for s in o for h in s.hypernyms() + s.instance_hypernyms()}
            assert syn & osyn or hyp & ohyp


def test_wordnet_missing_is_a_user_error(tmp_path, monkeypatch):
    from normscope.cli import run
    from normscope.errors import NormscopeError
    from normscope.lab.data import wordnet_data

    monkeypatch.setenv("NORMSCOPE_WORDNET", str(tmp_path / "nowhere"))
    with pytest.raises(NormscopeError, match="NORMSCOPE_WORDNET"):
        wordnet_data(16)
    assert run(["lab", "--dataset", "wordnet", "--steps", "10"]) == 2


# ---------------------------------------------------------------- end to end
def test_table_sgd_small_run_passes_gate():
    res = run_lab(LabRequest(steps=4000, burn_in=1500, snapshots=16, probe_batches=200, seed=0))
    s = res.summary
    assert s["mean_abs_rel_error"] <= GATE["mean_abs_rel_error"]
    assert abs(s["median_rel_error"]) <= GATE["abs_median_rel_error"]
    assert s["pearson"] >= GATE["pearson"]
    assert s["gate"]["passed"]
    # the free table has exactly zero drift (tangent gradients), and heat orders the norms
    assert np.max(np.abs(res.items["drift"])) < 1e-12 * res.items["heat"].max()
    assert s["corr_r_heat"] > 0.9
    # recompute the headline figures from the per-item table
    rel = (res.items["r_eq"] - res.items["r_obs"]) / res.items["r_obs"]
    assert s["mean_abs_rel_error"] == pytest.approx(np.mean(np.abs(rel)), rel=1e-12)
    assert s["pearson"] == pytest.approx(np.corrcoef(res.items["r_eq"], res.items["r_obs"])[0, 1], rel=1e-10)
    np.testing.assert_allclose(res.items["r_eq"] ** 4, res.items["heat"] / (2 * s["c"]), rtol=1e-9)
    assert json.loads(json.dumps(s)) == s
    for key in ("encoder", "optimizer", "lr", "weight_decay", "steps", "mean_abs_rel_error", "median_rel_error",
                "pearson", "spearman", "groups", "estimator", "q_over_c", "caveats"):
        assert key in s
    assert [g["ambiguity"] for g in s["groups"]] == [1, 2, 3, 4]
    r_by_group = [g["r_obs"] for g in s["groups"]]
    assert r_by_group == sorted(r_by_group)  # more ambiguity, more heat, larger norm


def test_mlp_trajectory_balance_small_run():
    res = run_lab(LabRequest(encoder="mlp", steps=3000, burn_in=1500, seed=0))
    s = res.summary
    assert s["estimator"] == "trajectory" and s["k"] == 2
    assert s["lambda_rad"] == pytest.approx(2 * s["weight_decay"])
    assert abs(s["q_over_c"]["mean"] - 1) <= 0.02
    assert s["e5_max_rel_residual"] < 1e-12  # (E5) holds per step, every item
    assert s["c"] == pytest.approx(th.discrete_c(s["lr"], s["weight_decay"], kind="homogeneous", k=2))


def test_momentum_uses_e12_and_adamw_is_flagged():
    s = run_lab(LabRequest(optimizer="momentum", steps=3000, burn_in=1000, snapshots=8, probe_batches=100)).summary
    assert s["mean_abs_rel_error"] < 0.05  # with (E12)
    assert s["uncorrected"]["median_rel_error"] < -0.5  # without it the SGD formula is far off
    assert any("E12" in c for c in s["caveats"])
    a = run_lab(LabRequest(optimizer="adamw", steps=300, burn_in=100, snapshots=2, probe_batches=10)).summary
    assert not a["sgd_formula_expected"] and "not expected to hold" in a["caveats"][0]
    # trajectory form with the actual (non-tangent) momentum / AdamW steps: (E5) exact per step
    for opt in ("momentum", "adamw"):
        t = run_lab(LabRequest(optimizer=opt, estimator="trajectory", steps=400, burn_in=200)).summary
        assert t["e5_max_rel_residual"] < 1e-12


def test_deterministic_and_validated():
    a = run_lab(LabRequest(steps=300, burn_in=100, snapshots=2, probe_batches=20, seed=5))
    b = run_lab(LabRequest(steps=300, burn_in=100, snapshots=2, probe_batches=20, seed=5))
    pd.testing.assert_frame_equal(a.items, b.items)
    with pytest.raises(InputError, match="encoder"):
        run_lab(LabRequest(encoder="resnet"))
    with pytest.raises(InputError, match="burn_in"):
        run_lab(LabRequest(steps=100, burn_in=100))
    with pytest.raises(InputError, match="estimator"):
        run_lab(LabRequest(estimator="oracle"))


def test_cli_lab_writes_outputs(tmp_path, capsys):
    from normscope.cli import run

    js, pq = tmp_path / "s.json", tmp_path / "items.parquet"
    rc = run(["lab", "--steps", "400", "--burn-in", "100", "--snapshots", "4", "--probe-batches", "20",
              "--json", str(js), "-o", str(pq), "--fig", str(tmp_path / "lab.png")])
    assert rc == 0
    s = json.loads(js.read_text())
    items = pd.read_parquet(pq)
    assert len(items) == s["n_items"] == 256
    assert s["mean_abs_rel_error"] == pytest.approx(np.mean(np.abs(items["rel_error"])), rel=1e-12)
    assert (tmp_path / "lab_trajectories.png").stat().st_size > 1000 and (tmp_path / "lab.png").stat().st_size > 1000
    cap = capsys.readouterr()
    assert f"wrote {js}, {pq}, " in cap.err
    assert f"{tmp_path / 'lab.png'}, {tmp_path / 'lab_trajectories.png'}" in cap.err
    # heat and drift with 3 significant digits (3 decimals made the groups look identical)
    for g in s["groups"]:
        assert format(g["heat"], ".3g") in cap.out and format(g["drift"], ".3g") in cap.out
    assert run(["lab", "--optimizer", "lbfgs", "--steps", "10"]) == 2
    assert run(["lab", "--json", str(tmp_path / "missing" / "s.json")]) == 2


def test_too_few_steps_points_to_the_options():
    with pytest.raises(InputError) as exc:
        run_lab(LabRequest(steps=2))
    msg = str(exc.value)
    # default 32 snapshots, burn-in steps // 3: 47 - 15 = 32 is the smallest window that fits (46 - 15 = 31)
    assert "--snapshots 32" in msg and "--steps >= 47" in msg
    assert 47 - 47 // 3 >= 32 > 46 - 46 // 3
    with pytest.raises(InputError) as exc:
        run_lab(LabRequest(steps=30, burn_in=10, snapshots=25))
    assert "--burn-in 10" in str(exc.value) and "--steps >= 35" in str(exc.value)
