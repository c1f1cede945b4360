"""Tests of the transformer lab (normscope.lab.transformer) on a tiny BERT built from a config.

The model has random weights (2 layers, hidden 32) and the bundled MiniLM's tokenizer; the pairs are
a small synthetic two-column file. Checked against independent computations: the trajectory q/c
against a replay of the run with torch.optim.SGD, its own InfoNCE and finite-difference lambda_rad
(float64); the (E12) wiring against the SGD run's own probe; permutation equivariance of every
per-item output; resume = uninterrupted; byte-reproducible results.
"""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pandas as pd
import pytest
from _close import assert_item_columns_match
import torch

from normscope.errors import InputError
from normscope.lab.analysis import wilson_interval
from normscope.lab.trajectory import TrajectoryRecord, motion, trajectory_estimates
from normscope.lab.transformer import run_transformer_lab as _run_transformer_lab


def run_transformer_lab(*, encoder=None, checkpoint=None, progress=False, seed=0, n_boot=2000, **kw):
    """``run_transformer_lab(TransformerLabRequest(...), encoder=, checkpoint=)`` from flat keywords."""
    from normscope.requests import Resampling
    from normscope.requests.lab import TransformerLabRequest

    if kw.get("probe_items") is not None and not isinstance(kw["probe_items"], int):
        kw["probe_items"] = str(kw["probe_items"])
    request = TransformerLabRequest(resampling=Resampling(n_boot=n_boot, seed=seed), **kw)
    return _run_transformer_lab(request, encoder=encoder, checkpoint=checkpoint, progress=progress)

WORDS = ("cat dog bird fish tree rock river cloud house car road book pen cup door wall hand foot star moon sun rain "
         "snow wind fire").split()
PROBES = ["lantern", "a quiet harbour at dawn", "violin", "red brick chimney", "owl"]  # mixed token lengths


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(model dir, pairs file, probe file): a random 2-layer BERT as a sentence-transformers model."""
    from _tiny import tiny_sentence_transformer

    d = tmp_path_factory.mktemp("tiny")
    tiny_sentence_transformer(d)
    rng = np.random.default_rng(0)
    lines = ["left\tright"]
    for i in range(120):
        a, b = rng.choice(WORDS, 2)
        lines.append(f"{a} {i}\tthe {b} near a {a} {i % 7}")
    lines.append("lantern\ta lamp")  # a probe item in the pairs: held out of training
    (d / "pairs.tsv").write_text("\n".join(lines) + "\n")
    (d / "probes.txt").write_text("\n".join(PROBES) + "\n")
    return d / "st", d / "pairs.tsv", d / "probes.txt"


def _kw(tiny, **over):
    model, pairs, probes = tiny
    kw = dict(model=str(model), pairs=str(pairs), probe_items=probes, probe_batches=2, batch_size=8, lr=0.05,
              weight_decay=0.5, steps=6, burn_in=2, lambda_every=2, max_tokens=None, n_boot=50, seed=3)
    kw.update(over)
    return kw


@pytest.fixture(scope="module")
def sgd_run(tiny):
    return run_transformer_lab(**_kw(tiny, decay_mask="matrices"))


# ---------------------------------------------------------------- pure functions
def test_trajectory_identity_and_motion_by_hand():
    rng = np.random.default_rng(1)
    t, p = 7, 4
    r2 = 1 + rng.random((t + 1, p))
    zd, dd = rng.normal(size=(t, p)) * 1e-2, rng.random((t, p)) * 1e-3
    dec = (r2[1:] - r2[:-1]) - 2 * zd - dd  # exact decomposition R_{t+1}^2 - R_t^2 = 2 zd + dd + dec
    rec = TrajectoryRecord(r2, zd, dd, dec, np.zeros(t), np.array([0, 3, 6]), 0.5 + rng.random((3, p)), np.zeros((t, 2)))
    est = trajectory_estimates(rec, eta=0.1, weight_decay=0.2, burn_in=3)
    w = slice(3, 7)
    r2m = r2[w].mean(0)
    q = zd[w].mean(0) / r2m + r2m * dd[w].mean(0) / (2 * r2m**2)
    np.testing.assert_allclose(est["q"], q, rtol=1e-12)
    np.testing.assert_allclose(est["c"], 0.1 * 0.2 * rec.lam[1:].mean(0), rtol=1e-12)  # E4 at steps 3, 6 (window)
    np.testing.assert_allclose(est["q"] - est["c_realised"], (r2[7] - r2[3]) / (2 * 4 * r2m), rtol=1e-10)
    m = motion(np.array([1.0, 1.0, 1.0, 2.0]), np.array([1.5, 0.5, 1.0, 2.5]), np.array([2.0, 2.0, np.nan, 3.0]))
    np.testing.assert_array_equal(m["toward"], [1.0, 0.0, np.nan, 1.0])
    np.testing.assert_allclose(m["fraction_of_distance"], [0.5, -0.5, np.nan, 0.5])
    lo, hi = wilson_interval(7, 10)  # textbook value (Wilson 1927): [0.3968, 0.8922]
    assert lo == pytest.approx(0.39677, abs=1e-4) and hi == pytest.approx(0.89222, abs=1e-4)


def _synthetic_run(order=None, seed=0, lr=0.01):
    """A consistent synthetic record and step-0 probe for 9 items (analysis only, no model)."""
    from normscope.lab.analysis import analyse_transformer_run
    from normscope.lab.transformer_data import ProbeSet

    rng = np.random.default_rng(seed)
    t, p = 40, 9
    r0 = 3 + rng.random(p)
    r_eq0 = 2.5 + 1.5 * rng.random(p)
    r_eq0[4] = np.nan  # one item without a prediction
    frac = np.clip(np.arange(t + 1) / 30, 0, 1)[:, None]
    r = r0 + frac * (np.nan_to_num(r_eq0, nan=3.0) - r0) + 0.01 * rng.normal(size=(t + 1, p))
    r2 = r**2
    zd, dd = rng.normal(size=(t, p)) * 1e-3, rng.random((t, p)) * 1e-3
    dec = (r2[1:] - r2[:-1]) - 2 * zd - dd
    rec = TrajectoryRecord(r2, zd, dd, dec, rng.random(t), np.array([0, 20, 40]), 0.8 + 0.4 * rng.random((3, p)),
                           np.zeros((t, 4), dtype=int))
    probe0 = {"r": r0, "r_eq": r_eq0, "flag": np.where(np.isfinite(r_eq0), "", "q<0"), "heat": rng.random(p),
              "drift": rng.normal(size=p), "q": rng.random(p), "lambda_rad": 0.5 + rng.random(p), "summary": {}}
    ids = [f"i{j}" for j in range(p)]
    texts = [f"word{j}" for j in range(p)]
    o = np.arange(p) if order is None else np.asarray(order)
    rec_o = rec.take(o)
    probe0_o = {k: (v[o] if isinstance(v, np.ndarray) else v) for k, v in probe0.items()}
    info = {"lr": lr, "weight_decay": 0.5, "steps": t, "burn_in": 20, "optimizer": "sgd", "seed": 1, "model": "m",
            "precision": "fp32"}
    return analyse_transformer_run(info, ProbeSet([ids[i] for i in o], [texts[i] for i in o], "test"), rec_o,
                                   probe0_o, {}, n_boot=200)


def test_analysis_is_permutation_equivariant_and_partial_matches_closed_form():
    from scipy import stats

    from normscope._io import dumps

    a = _synthetic_run()
    perm = [5, 2, 8, 0, 7, 4, 1, 3, 6]
    b = _synthetic_run(perm)
    pd.testing.assert_frame_equal(b.items.reset_index(drop=True), a.items.iloc[perm].reset_index(drop=True),
                                  check_exact=False, rtol=1e-12)
    assert dumps(b.to_dict()) == dumps(a.to_dict())  # canonical order: summary and CIs identical
    m, it = a.motion, a.items[np.isfinite(a.items["r_eq0"])]
    np.testing.assert_allclose(a.items["heat_share"] + a.items["drift_share"], a.items["q_over_c"], rtol=1e-10)  # E9
    assert m["n_with_prediction"] == 8 and "1 of 9 probe items have no step-0 R_eq (1 with q<0" in a.caveats[0]
    rxy = stats.spearmanr(it["r_eq0"], it["r_final"])[0]
    rxz = stats.spearmanr(it["r_eq0"], it["r0"])[0]
    ryz = stats.spearmanr(it["r_final"], it["r0"])[0]
    ref = (rxy - rxz * ryz) / math.sqrt((1 - rxz**2) * (1 - ryz**2))
    assert m["partial_spearman_predicted_vs_final_given_start"] == pytest.approx(ref, abs=1e-9)
    assert a.spearman_predicted_vs_final == pytest.approx(rxy, abs=1e-12)
    toward = np.sign(it["r_eq0"] - it["r0"]) == np.sign(it["r_final"] - it["r0"])
    assert a.fraction_moved_toward_req == pytest.approx(toward.mean())
    lo, hi = a.fraction_moved_toward_req_ci
    assert lo <= a.fraction_moved_toward_req <= hi
    common = np.median(it["r_eq0"])
    tc = np.sign(common - it["r0"]) == np.sign(it["r_final"] - it["r0"])
    assert m["fraction_moved_toward_common_target"] == pytest.approx(tc.mean())
    # relaxation time 1/(2 eta lambda_rad) of the median item; the stationary check needs the window to start
    # after it AND measured stationarity (|median q/c_realised - 1| <= 0.25)
    assert a.relaxation_steps == pytest.approx(1 / (2 * 0.01 * np.median(a.items["lambda_rad0"])))
    assert a.pearson_final_vs_req_trajectory is None and "run too short" in a.pearson_final_vs_req_trajectory_reason
    fast = _synthetic_run(lr=1.0)  # relaxation time < 1 step: the time criterion holds
    qcr = np.median(fast.items["q_over_c_realised"])
    assert fast.long_enough and fast.trajectory["stationary"] == (abs(qcr - 1) <= 0.25)
    if not fast.trajectory["stationary"]:
        assert "not stationary" in fast.pearson_final_vs_req_trajectory_reason and fast.pearson_final_vs_req_trajectory is None


# ---------------------------------------------------------------- hand-computed q/c
def _replay(tiny, res, *, lr, lam, tau=0.05):
    """Independent replay: torch.optim.SGD (L2 = decoupled decay for plain SGD), own InfoNCE, own forwards."""
    from sentence_transformers import SentenceTransformer
    from torch.func import functional_call

    model_dir, pairs_file, _ = tiny
    st = SentenceTransformer(str(model_dir), device="cpu")
    st.eval()
    for mod in st.modules():  # the lab trains with eager attention (forward-mode AD needs it)
        if hasattr(mod, "set_attn_implementation") and hasattr(mod, "get_input_embeddings"):
            mod.set_attn_implementation("eager")
    rows = [ln.split("\t") for ln in pairs_file.read_text().splitlines()[1:]]
    held = set(PROBES)
    rows = [r for r in rows if r[0] not in held and r[1] not in held]
    named = [(n, p) for n, p in st.named_parameters()]
    decayed = [p for n, p in named if p.ndim >= 2 and "norm" not in n.lower()]
    plain = [p for n, p in named if not (p.ndim >= 2 and "norm" not in n.lower())]
    opt = torch.optim.SGD([{"params": decayed, "weight_decay": lam}, {"params": plain, "weight_decay": 0.0}], lr=lr)
    tokenize = getattr(st, "preprocess", None) or st.tokenize
    feats = tokenize(PROBES)

    def emb(module, texts_or_feats):
        f = tokenize(texts_or_feats) if isinstance(texts_or_feats, list) else texts_or_feats
        return module(dict(f))["sentence_embedding"]

    def lam_per_lam(module):  # (E4) by central differences on a float64 copy: <z, (f(th+e thD) - f(th-e thD))/2e> / R^2
        m64 = copy.deepcopy(module).double()
        base = {n: p.detach().clone() for n, p in m64.named_parameters()}
        eps = 1e-4
        with torch.no_grad():
            z = emb(m64, feats)
            up = {n: v * (1 + eps) if (v.ndim >= 2 and "norm" not in n.lower()) else v for n, v in base.items()}
            dn = {n: v * (1 - eps) if (v.ndim >= 2 and "norm" not in n.lower()) else v for n, v in base.items()}
            jd = (functional_call(m64, up, (dict(feats),))["sentence_embedding"]
                  - functional_call(m64, dn, (dict(feats),))["sentence_embedding"]) / (2 * eps)
        return ((z * jd).sum(1) / (z * z).sum(1)).numpy()

    steps = res.steps
    r2 = np.zeros((steps + 1, len(PROBES)))
    zd, dd, dec = (np.zeros((steps, len(PROBES))) for _ in range(3))
    lam_at = {0: lam_per_lam(st)}
    with torch.no_grad():
        z = emb(st, feats).double()
    r2[0] = (z * z).sum(1).numpy()
    for t in range(steps):
        idx = res.record.batches[t]
        a = torch.nn.functional.normalize(emb(st, [rows[i][0] for i in idx]), dim=1)
        b = torch.nn.functional.normalize(emb(st, [rows[i][1] for i in idx]), dim=1)
        logits = a @ b.T / tau
        target = torch.arange(len(idx))
        loss = (torch.nn.functional.cross_entropy(logits, target) + torch.nn.functional.cross_entropy(logits.T, target)) / 2
        opt.zero_grad()
        loss.backward()
        shifted = copy.deepcopy(st)
        with torch.no_grad():
            for (_, p), (_, q) in zip(st.named_parameters(), shifted.named_parameters()):
                if p.grad is not None:
                    q -= lr * p.grad
            z_free = emb(shifted, feats).double()
        opt.step()
        with torch.no_grad():
            z_new = emb(st, feats).double()
        delta = z_free - z
        zd[t] = (z * delta).sum(1).numpy()
        dd[t] = (delta * delta).sum(1).numpy()
        dec[t] = ((z_new * z_new).sum(1) - (z_free * z_free).sum(1)).numpy()
        r2[t + 1] = (z_new * z_new).sum(1).numpy()
        z = z_new
        if (t + 1) % 2 == 0:
            lam_at[t + 1] = lam_per_lam(st)
    return r2, zd, dd, dec, lam_at


def test_trajectory_q_over_c_matches_an_independent_replay(tiny, sgd_run):
    res = sgd_run
    lr, lam, burn = 0.05, 0.5, 2
    r2, zd, dd, dec, lam_at = _replay(tiny, res, lr=lr, lam=lam)
    # the record itself, step by step (different code path, float32 model: agreement to ~1e-5 relative)
    np.testing.assert_allclose(res.record.r2, r2, rtol=2e-5)
    np.testing.assert_allclose(res.record.dd, dd, rtol=1e-3)
    # q/c over the window by hand: D~ = <zd>, Sigma^2 = <R^2><dd>, q = D~/<R^2> + Sigma^2/(2<R^2>^2) (E9),
    # c = eta * lambda * mean of the E4 ratios measured in the window (steps 2, 4, 6)
    w = slice(burn, res.steps)
    r2m = r2[w].mean(0)
    q = zd[w].mean(0) / r2m + (r2m * dd[w].mean(0)) / (2 * r2m**2)
    lam_w = np.mean([v for s, v in lam_at.items() if s >= burn], axis=0)
    c = lr * lam * lam_w
    qc = np.where(c > 0, q / c, np.nan)  # the matrices mask gives some items lambda_rad < 0: q/c undefined
    assert np.isfinite(qc).sum() >= 2 and (c <= 0).any()
    got = res.items.set_index("text").loc[PROBES]
    scale = np.nanmax(np.abs(qc))
    np.testing.assert_allclose(got["q_over_c"].to_numpy(), qc, rtol=2e-3, atol=2e-3 * scale)
    np.testing.assert_allclose(got["lambda_rad"].to_numpy(), lam * lam_w, rtol=2e-3)
    # exact telescoping identity of the realised decay: q - c_real = (R_T^2 - R_t0^2) / (2 W <R^2>)
    c_real = -dec[w].mean(0) / (2 * r2m)
    np.testing.assert_allclose(got["c_realised"].to_numpy(), c_real, rtol=5e-3, atol=1e-6)
    assert res.q_over_c_median == pytest.approx(float(np.nanmedian(got["q_over_c"])), rel=1e-12)
    # R at step 0 by index, R at the end: the per-item table follows the probe file's order
    np.testing.assert_allclose(res.items["r0"], np.sqrt(r2[0]), rtol=1e-5)
    np.testing.assert_allclose(res.items["r_final"], np.sqrt(r2[-1]), rtol=2e-5)
    assert list(res.items["text"]) == PROBES
    assert res.n_held_out_pairs == 1 and res.n_pairs == 120  # "lantern\ta lamp" held out


def test_permuting_probe_items_permutes_every_per_item_output(tiny, sgd_run, tmp_path):
    perm = [3, 0, 4, 1, 2]
    (tmp_path / "probes.txt").write_text("\n".join(PROBES[i] for i in perm) + "\n")
    b = run_transformer_lab(**_kw(tiny, decay_mask="matrices", probe_items=tmp_path / "probes.txt"))
    a = sgd_run
    assert list(b.items["text"]) == [PROBES[i] for i in perm]
    assert_item_columns_match(a.items, b.items, PROBES, rtol=1e-5)
    np.testing.assert_allclose(b.norms, a.norms[:, perm], rtol=1e-6)
    # the summary (CIs included) is computed in a canonical item order: invariant
    sa, sb = a.to_dict(), b.to_dict()
    for k in ("q_over_c_mean", "q_over_c_median", "spearman_predicted_vs_final", "fraction_moved_toward_req",
              "relaxation_steps"):
        assert (sa[k] is None and sb[k] is None) or sb[k] == pytest.approx(sa[k], rel=1e-5), k
    assert sa["motion"]["spearman_start_vs_final_ci"] == pytest.approx(sb["motion"]["spearman_start_vs_final_ci"], rel=1e-6)


def test_momentum_step0_prediction_applies_e12(tiny, sgd_run):
    beta = 0.9
    m = run_transformer_lab(**_kw(tiny, decay_mask="matrices", optimizer="momentum", beta=beta, steps=2, burn_in=0))
    s, mm = sgd_run.items, m.items
    # same model, pairs, probe batches and eta: the plain-gradient probe is identical, then (E12)
    np.testing.assert_allclose(mm["heat0"], s["heat0"] / (1 - beta) ** 2, rtol=1e-6)
    np.testing.assert_allclose(mm["drift0"], s["drift0"] / (1 - beta), rtol=1e-6)
    assert "E12" in m.caveats[0]
    a = run_transformer_lab(**_kw(tiny, optimizer="adamw", lr=1e-3, weight_decay=5.0, steps=2, burn_in=0))
    assert "not expected to hold" in a.caveats[0]
    assert np.isfinite(a.record.r2).all()


def test_resume_equals_uninterrupted_and_checks_settings(tiny, sgd_run, tmp_path):
    from normscope._io import dumps

    ck = tmp_path / "run.ckpt"
    run_transformer_lab(**_kw(tiny, decay_mask="matrices", steps=3, burn_in=1), checkpoint=ck, checkpoint_every=2)
    res = run_transformer_lab(**_kw(tiny, decay_mask="matrices"), checkpoint=ck, checkpoint_every=2)
    assert res.timings["steps_run"] == 3
    for k in ("r2", "zd", "dd", "dec", "loss", "lam", "lam_steps", "batches"):
        np.testing.assert_array_equal(getattr(res.record, k), getattr(sgd_run.record, k), err_msg=k)
    assert dumps(res.to_dict()) == dumps(sgd_run.to_dict())  # results byte-identical; timings apart
    with pytest.raises(InputError, match="differs in: lr"):
        run_transformer_lab(**_kw(tiny, decay_mask="matrices", lr=0.01), checkpoint=ck)
    ck.write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="not readable"):
        run_transformer_lab(**_kw(tiny), checkpoint=ck)


def test_bad_input_is_refused_before_any_work(tiny, tmp_path):
    for over, match in (({"optimizer": "lbfgs"}, "optimizer"), ({"lr": -1.0}, "lr"), ({"burn_in": 6}, "burn_in"),
                        ({"precision": "fp16"}, "precision"), ({"probe_items": tmp_path / "none.txt"}, "does not exist"),
                        ({"probe_items": 2}, "probe_items"), ({"decay_mask": "some"}, "decay_mask"),
                        ({"lr": 2.0, "weight_decay": 0.6}, "lr \\* weight_decay"),
                        ({"checkpoint": tmp_path / "no" / "c.ckpt"}, "does not exist")):
        with pytest.raises(InputError, match=match):
            run_transformer_lab(**_kw(tiny, model=str(tmp_path / "not-loaded"), **over))


# ---------------------------------------------------------------- CLI and JSON
ISSUE_KEYS = ("encoder", "model", "optimizer", "lr", "weight_decay", "steps", "relaxation_steps", "q_over_c_mean",
              "q_over_c_median", "spearman_predicted_vs_final", "fraction_moved_toward_req",
              "pearson_final_vs_req_trajectory", "estimator", "precision")


def _strict(text):
    def bad(c):
        raise ValueError(f"non-strict JSON constant {c}")
    return json.loads(text, parse_constant=bad)


def test_cli_transformer_outputs_and_errors(tiny, tmp_path, capsys):
    from normscope.cli import run

    model, pairs, probes = tiny
    js, pq = tmp_path / "t.json", tmp_path / "t.parquet"
    argv = ["lab", "--encoder", "transformer", "--model", str(model), "--pairs", str(pairs), "--probe-items", str(probes),
            "--steps", "4", "--probe-batches", "2", "--batch-size", "8", "--lr", "0.05", "--weight-decay", "0.5",
            "--max-tokens", "32", "--precision", "bf16", "--json", str(js), "-o", str(pq), "--fig", str(tmp_path / "t.png")]
    assert run(argv) == 0
    s = _strict(js.read_text())
    for k in ISSUE_KEYS:
        assert k in s, k
    assert s["encoder"] == "transformer" and s["precision"] == "bf16" and s["estimator"] == "trajectory"
    assert list(s)[-1] == "timings" and "s_per_step" in s["timings"]
    assert not any(k in s for k in ("wall_s", "cpu_s", "steps_per_s"))  # timings only in their block
    items = pd.read_parquet(pq)
    assert list(items["text"]) == PROBES
    assert s["q_over_c_median"] == pytest.approx(float(np.nanmedian(items["q_over_c"])), rel=1e-12)
    assert (tmp_path / "t.png").stat().st_size > 1000 and (tmp_path / "t_predicted_vs_final.png").stat().st_size > 1000
    err = capsys.readouterr().err
    assert f"wrote {js}, {pq}" in err
    # options of the other lab, and bad values: one-line error, exit 2
    assert run(["lab", "--encoder", "transformer", "--dataset", "wordnet"]) == 2
    assert run(["lab", "--encoder", "table", "--pairs", "wordnet"]) == 2
    bad = argv[:-6]
    bad[bad.index("--precision") + 1] = "fp8"
    assert run(bad) == 2
    assert "error: unknown precision 'fp8'" in capsys.readouterr().err
    assert run(bad + ["--precision", "fp32"]) == 2  # a repeated single-value option is a usage error
    assert "--precision given 2 times" in capsys.readouterr().err


def test_small_lab_json_results_are_byte_reproducible(tmp_path):
    """Issue 18: the lab's --json holds the results, then the timings in a separate last block."""
    from normscope.cli import run

    texts = []
    for i in (1, 2):
        p = tmp_path / f"s{i}.json"
        assert run(["lab", "--steps", "300", "--burn-in", "100", "--snapshots", "2", "--probe-batches", "10",
                    "--seed", "4", "--json", str(p)]) == 0
        texts.append(p.read_text())
    a, b = (_strict(t) for t in texts)
    assert list(a)[-1] == "timings" and set(a["timings"]) == {"wall_s", "cpu_s", "steps_per_s"}
    head = [t[: t.index('  "timings"')] for t in texts]
    assert head[0] == head[1]  # every byte before the timings block
    assert a["timings"] != b["timings"] or math.isclose(a["timings"]["wall_s"], b["timings"]["wall_s"])


def test_report_claim_rows_follow_the_numbers(sgd_run):
    from scipy import stats

    from normscope.lab.claims import transformer_claim

    row = transformer_claim(sgd_run)
    m = sgd_run.motion
    it = sgd_run.items[np.isfinite(sgd_run.items["r_eq0"])]
    if len(it) >= 4:  # the partial Spearman by its closed form (one control)
        rxy = stats.spearmanr(it["r_eq0"], it["r_final"])[0]
        rxz = stats.spearmanr(it["r_eq0"], it["r0"])[0]
        ryz = stats.spearmanr(it["r_final"], it["r0"])[0]
        ref = (rxy - rxz * ryz) / math.sqrt((1 - rxz**2) * (1 - ryz**2))
        assert m["partial_spearman_predicted_vs_final_given_start"] == pytest.approx(ref, abs=1e-9)
    assert row["key"] == "theorem1_transformer"
    assert row["measured"] == m["partial_spearman_predicted_vs_final_given_start"] or (row["measured"] is None)
    if row["ci"] is not None:
        lo, hi = row["ci"]
        assert row["direction"] == ("reproduced" if lo > 0 else "refuted" if hi < 0 else "inconclusive")
        # a run shorter than one relaxation time (or not stationary) decides nothing, whatever the CI says
        decided = sgd_run.long_enough and (sgd_run.trajectory or {}).get("stationary") is True
        assert (row["verdict"] == "not decided at this size") == (not decided)
        if not sgd_run.long_enough:
            assert "shorter than one relaxation time" in row["reason"] and "steps before its measurement" in row["needs"]
    else:
        assert row["verdict"] == "not testable here"

