"""The frozen-tower arm (issue 35 item 3): numerics against independent forms, (E1), the prediction on a planted
problem, permutation equivariance, the controls, resume, the scorecard row and the CLI's refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from normscope import theory
from normscope.errors import DataError
from normscope.lab.claims import tower_claim_row
from normscope.lab.tower import TOWER_RUNS, TowerRun, TowerSizes, run_tower_lab, train_run
from normscope.lab.tower_core import batch_grads, item_moments
from normscope.lab.tower_data import TowerData, tower_data
from normscope.requests.lab import TowerLabRequest

SMALL = TowerSizes(per_group=8, burn_in=1500, window=3000, probe_batches=512, blocks=16, n_boot=200, n_perm=200)


def _planted(d: int = 16, per_group: int = 8, seed: int = 0) -> tuple[TowerData, np.ndarray]:
    """Nouns with 1..4 senses, each sense its own random unit 'gloss' in R^d."""
    rng = np.random.default_rng(seed)
    senses = np.repeat(np.arange(1, 5), per_group)
    indptr = np.concatenate([[0], np.cumsum(senses)])
    g = int(indptr[-1])
    v = rng.standard_normal((g, d))
    names = [f"noun{i:02d}" for i in range(senses.size)]
    data = TowerData(names, senses, [f"gloss {j}" for j in range(g)], indptr, np.arange(g))
    return data, v


@pytest.fixture(scope="module")
def small():
    data, v = _planted()
    req = TowerLabRequest(size="quick", batch_size=16)
    return data, v, req, run_tower_lab(req, data=data, gloss_vectors=v, sizes=SMALL)


def test_batch_grads_match_theory_closed_form():
    rng = np.random.default_rng(1)
    z = rng.standard_normal((3, 8, 5)) * rng.uniform(0.2, 3, (3, 8, 1))
    v = rng.standard_normal((3, 8, 5))
    v /= np.linalg.norm(v, axis=2, keepdims=True)
    g, loss = batch_grads(z, v, 0.2, return_loss=True)
    for k in range(3):
        ga, _, lk = theory.info_nce_grad(z[k], v[k], 0.2, return_loss=True)
        np.testing.assert_allclose(g[k], ga, rtol=1e-12, atol=1e-14)
        assert loss[k] == pytest.approx(lk, rel=1e-12)
    assert np.max(np.abs(np.einsum("kbd,kbd->kb", z, g))) < 1e-13  # tangent (A1)


def test_item_moments_sum_duplicate_slots_like_the_table_gradient():
    """A noun drawn twice in a batch gets the sum of its slot gradients: the same as theory.info_nce_table_grad on a
    table holding the nouns and the glosses."""
    rng = np.random.default_rng(2)
    n, g, d, b = 5, 7, 4, 6
    table = rng.standard_normal((n, d))
    v = rng.standard_normal((g, d))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    nouns = np.array([[0, 0, 1, 2, 2, 2], [3, 4, 4, 1, 0, 3]])
    glosses = rng.integers(0, g, size=(2, b))
    g2, zg, _ = item_moments(table, v, nouns, glosses, 0.2)
    full = np.vstack([table, v])
    for k in range(2):
        ref = theory.info_nce_table_grad(full, nouns[k], n + glosses[k], 0.2)[:n]
        np.testing.assert_allclose(g2[k], (ref * ref).sum(1), rtol=1e-11, atol=1e-15)
        assert np.max(np.abs(zg[k])) < 1e-13
    assert g2[0, 3] == 0 and g2[0, 4] == 0  # not in batch 0


def test_e1_balance_on_a_planted_problem():
    """Every SGD step obeys (E1) exactly, so the window's balance equals its telescoped form to rounding, and is 1 at
    stationarity (to 2 % over this short window)."""
    data, v = _planted(per_group=4, seed=3)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    run = TowerRun("sgd", "sgd", 1.0, 2e-3)
    sz = TowerSizes(4, 1000, 4000, 16, 4, 0, 0)
    rec = train_run(run, data, v, sz, batch_size=8)
    r2_end = (rec["table"] ** 2).sum(1)
    den = 2 * run.c * rec["sum_r2"].sum(0)
    balance = rec["g2"] / den
    telescoped = 1 + (r2_end - rec["r2_start"]) / den
    np.testing.assert_allclose(balance, telescoped, rtol=0, atol=1e-10)
    assert rec["g2"].sum() / den.sum() == pytest.approx(1.0, abs=0.02)


def test_prediction_matches_observed_norms_on_a_small_run(small):
    _, _, _, res = small
    assert res.stationary
    assert res.balance == pytest.approx(1.0, abs=0.03)
    assert res.balance_identity_residual < 1e-9
    assert res.max_abs_drift_over_heat < 1e-10  # free vector: no radial drift
    assert res.mean_abs_rel_error < 0.05 and res.mean_abs_rel_error_ci[1] < 0.08
    assert res.pearson > 0.95
    assert res.null["p"] < 0.01 and res.null["median"] > 3 * res.mean_abs_rel_error
    r = [g["r_obs"] for g in res.groups]
    assert r == sorted(r)  # more senses, longer vectors
    assert res.spearman_heat_senses_ci[0] > 0


def test_controls_miss_as_they_must(small):
    _, _, _, res = small
    c = res.controls
    assert c["adamw"]["mean_abs_rel_error_sgd_form_ci"][0] > 0.05  # AdamW: the SGD form misses
    m = c["momentum"]
    assert m["median_rel_error_sgd_form"] == pytest.approx(np.sqrt(0.1) - 1, abs=0.06)  # C2: -68 %
    assert m["mean_abs_rel_error_e12"] < 0.08  # (E12) repairs it
    assert c["nodecay"]["share_grown"] == 1.0 and not c["nodecay"]["stationary"]
    assert res.claim["key"] == "ambiguity_heat_lab" and res.claim["verdict"] == "reproduced"


def test_deterministic_and_permuting_nouns_permutes_every_per_item_output(small):
    data, v, req, res = small
    perm = np.random.default_rng(5).permutation(data.n_items)
    again = run_tower_lab(req, data=data.permuted(perm), gloss_vectors=v, sizes=SMALL)
    assert again.to_dict() == res.to_dict()
    expected = res.items.iloc[perm].reset_index(drop=True)
    assert again.items.equals(expected)


def test_resume_equals_an_uninterrupted_run(tmp_path):
    data, v = _planted(per_group=4, seed=4)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    sz = TowerSizes(4, 500, 1000, 16, 4, 0, 0)
    for name in ("sgd", "momentum", "adamw"):
        ref = train_run(TOWER_RUNS[name], data, v, sz, batch_size=8)
        assert train_run(TOWER_RUNS[name], data, v, sz, batch_size=8, directory=tmp_path, checkpoint_every=500,
                         stop_after=500) is None
        res = train_run(TOWER_RUNS[name], data, v, sz, batch_size=8, directory=tmp_path)
        assert res["resumed"]
        for k in ("table", "sum_r2", "g2", "r2_start", "loss", "traj"):
            np.testing.assert_array_equal(res[k], ref[k], err_msg=f"{name}: {k}")
        again = train_run(TOWER_RUNS[name], data, v, sz, batch_size=8, directory=tmp_path)
        assert again["train_s"] == 0.0 and np.array_equal(again["table"], ref["table"])


def _row_input(**kw) -> dict:
    d = {"mean_abs_rel_error": 0.03, "mean_abs_rel_error_ci": [0.02, 0.04], "null": {"p": 0.0005, "p_above": 1.0,
         "n_perm": 2000, "median": 0.8}, "stationary": True, "stationarity": {"reasons": []}, "pearson": 0.99,
         "spearman_heat_senses": 0.8, "spearman_heat_senses_ci": [0.7, 0.9], "n_items": 256, "groups": [],
         "controls": {"adamw": {"mean_abs_rel_error_sgd_form_ci": [0.9, 0.95]},
                      "momentum": {"mean_abs_rel_error_sgd_form_ci": [0.6, 0.7]},
                      "nodecay": {"share_grown": 1.0, "stationary": False}}}
    d.update(kw)
    return d


def test_claim_row_verdicts():
    assert tower_claim_row(_row_input())["verdict"] == "reproduced"
    assert tower_claim_row(_row_input(stationary=False))["verdict"] == "not decided at this size"
    assert tower_claim_row(_row_input(mean_abs_rel_error=0.09, mean_abs_rel_error_ci=[0.07, 0.11]))["verdict"] == "refuted"
    assert tower_claim_row(_row_input(mean_abs_rel_error_ci=[0.02, 0.07]))["verdict"] == "inconclusive"
    weak = _row_input(controls={**_row_input()["controls"], "adamw": {"mean_abs_rel_error_sgd_form_ci": [0.01, 0.04]}})
    row = tower_claim_row(weak)
    assert row["verdict"] == "inconclusive" and "does not fail as it must" in row["why"]
    flat = _row_input(spearman_heat_senses_ci=[-0.1, 0.3])
    assert tower_claim_row(flat)["verdict"] == "inconclusive"
    chance = _row_input(null={"p": 0.4, "p_above": 0.6, "n_perm": 2000, "median": 0.03})
    assert tower_claim_row(chance)["verdict"] == "inconclusive"
    assert tower_claim_row(_row_input(mean_abs_rel_error=None))["verdict"] == "not testable here"


def test_tower_data_from_wordnet():
    try:
        d = tower_data(3, seed=0)
    except DataError:
        pytest.skip("WordNet 3.0 not available")
    assert d.n_items == 12 and d.senses.tolist() == [1] * 3 + [2] * 3 + [3] * 3 + [4] * 3
    assert np.diff(d.indptr).tolist() == d.senses.tolist()  # one gloss per sense
    assert tower_data(3, seed=0).names == d.names and tower_data(3, seed=1).names != d.names


@pytest.mark.parametrize("args, msg", [
    (["--optimizer", "adamw"], "--optimizer does not apply to --encoder tower"),
    (["--dataset", "synthetic"], "--dataset must be wordnet"),
    (["--pairs", "wordnet"], "--pairs does not apply to --encoder tower"),
    (["--size", "huge"], "size"),
])
def test_cli_refuses_options_of_other_labs(args, msg, capsys):
    from normscope.cli import run

    assert run(["lab", "--encoder", "tower", *args]) == 2
    assert msg in capsys.readouterr().err


def test_request_argv_round_trip():
    r = TowerLabRequest(size="quick", seed=3, tau=0.1, run_dir="d")
    assert r.argv() == ["normscope", "lab", "--encoder", "tower", "--size", "quick", "--seed", "3", "--tau", "0.1",
                        "--run-dir", "d"]
    assert dataclasses.replace(r, model="m").argv()[-2:] == ["--run-dir", "d"]


def test_the_report_shows_the_stored_full_run_labelled_as_stored():
    """The report's lab section carries the stored full frozen-tower run's row (its figures are the stored file's,
    judged by the same rule) and says it was not rerun."""
    import json

    from normscope.lab.claims import tower_claim_row
    from normscope.report.stages.lab import TOWER_STORED, stored_tower_row

    d = json.loads(TOWER_STORED.read_text(encoding="utf-8"))
    row, direct = stored_tower_row(), tower_claim_row(d)
    assert row["measured"] == d["mean_abs_rel_error"] and list(row.ci) == list(d["mean_abs_rel_error_ci"])
    assert row["verdict"] == direct["verdict"] and row["kind"] == "construction"
    assert row["tested_on"].startswith("stored full run") and "not rerun by this report" in row["tested_on"]
