"""The frozen-tower arm: does ambiguity set heat, and heat the norm, on real text? (issue 35 item 3)

Free vectors for WordNet 3.0 nouns (``per_group`` each with 1, 2, 3, 4 noun senses,
:mod:`normscope.lab.tower_data`) are trained with the symmetric InfoNCE loss (E10) against the frozen
text tower's embeddings of their glosses (the bundled all-MiniLM-L6-v2 by default, computed once through
the embedding cache). Each of a noun's senses gives one positive gloss, so a noun with more senses is
pulled towards several directions at once: conflicting gradients, hence more heat (docs/theory.md
section 5). The noun side is a free table (k = 1): the theorem's assumptions A1-A3 hold exactly, the
drift is zero (tangency) and Theorem 1 predicts each noun's norm with no fitted constant (E2, E7 with
D~ = 0):

    R_eq^4 = Sigma^2 / (2c),   Sigma^2 = eta^2 R^2 E_b ||g_b||^2,   2c = 1 - (1 - eta lambda)^2.

Design (:data:`TOWER_SIZES`; the same initial vectors and batch sequence in every run):

- **SGD** (the test): eta = 1, lambda = 5e-4 (eta lambda = 5e-4, relaxation time 1/(4 eta lambda) =
  500 steps), ``burn_in`` steps, then a window of ``window`` steps over which every noun's norm is
  tracked at every step; the observed norm is the window's time-RMS ``R-bar = sqrt(<R^2>_t)``.
- **Heat from probe batches at the end**: K fresh batches at the final state, per noun
  ``Sigma^2 = eta^2 R^2 mean_b ||g_b||^2`` (a noun absent from a batch has ``g_b = 0``); drift
  ``D~ = -eta mean_b <z, g_b>`` (zero up to rounding); R_eq from (E7) with the exact free-vector c.
- **Checks**: stationarity (:func:`normscope.lab.stationarity.classify_window` on the window's halves,
  and the relative change of mean R between them); the (E1) balance over the window,
  ``eta^2 sum_t ||g_t||^2 / (2c sum_t R_t^2)`` (1 at stationarity; exactly
  ``1 + (R_end^2 - R_start^2) / (2c sum_t R_t^2)`` by telescoping (E1)); mean |R_eq - R-bar| / R-bar with a
  bootstrap CI over nouns and blocks of probe batches; Pearson; a permutation null that gives each noun
  another noun's heat; mean R by number of senses; Spearman of heat with the number of senses.
- **Controls** (each must miss the SGD form, or the test has no power): AdamW (eta 1e-2, lambda 5e-2),
  predicted with the SGD formula; heavy-ball momentum (beta 0.9, eta 0.1, lambda 5e-3: eta/(1 - beta) and
  eta lambda equal SGD's) predicted without the (E12) correction (and with it, which should hold); SGD with
  no decay (every norm grows, nothing is stationary).

Deterministic given the seed; the items are processed in a canonical order (sorted by name), so permuting
the input nouns permutes every per-item output and leaves the summary unchanged. Resumable: with a
``directory`` each run writes an atomic checkpoint every ``checkpoint_every`` steps and its record when
finished (keyed by a hash of its settings); a rerun continues or skips.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from normscope._progress import Tracker
from normscope.errors import InputError
from normscope.lab.tower_analysis import _groups, _spearman_ci, _stationarity, predict
from normscope.lab.tower_data import TowerData, tower_data
from normscope.lab.tower_design import (BATCH_SIZE, CHUNK, GATE_REL, R0, TAU, TOWER_RUNS, TOWER_SIZES, TowerRun,
                                        TowerSizes)
from normscope.lab.tower_train import _threads, probe_heat, train_run
from normscope.lab.tower_result import TowerControl, TowerGroup, TowerLabResult, TowerNull


__all__ = ["TowerSizes", "TOWER_SIZES", "TOWER_RUNS", "TowerRun", "TowerLabResult", "run_tower_lab", "train_run",
           "probe_heat", "predict", "GATE_REL", "TAU", "BATCH_SIZE", "R0", "TowerControl", "TowerGroup", "TowerNull"]

# --------------------------------------------------------------------------------------------------- entry point
def run_tower_lab(request=None, *, data: TowerData | None = None, gloss_vectors: np.ndarray | None = None,
                  encoder=None, sizes: TowerSizes | None = None, directory: Path | None = None,
                  runs: tuple[str, ...] = ("sgd", "adamw", "momentum", "nodecay"), progress: bool = False,
                  num_threads: int | None = 1) -> TowerLabResult:
    """Run the frozen-tower arm: the SGD test and its controls, the prediction, the checks and the scorecard row.

    Parameters
    ----------
    request : TowerLabRequest, optional
        :class:`normscope.requests.lab.TowerLabRequest` (model, size, seed, tau, batch size, run directory);
        default: the bundled MiniLM at ``full`` size.
    data : TowerData, optional, keyword-only
        Nouns and glosses instead of :func:`~normscope.lab.tower_data.tower_data` at the size's ``per_group``.
    gloss_vectors : ndarray of shape (G, d), optional, keyword-only
        The glosses' embeddings (normalised here) instead of the tower's (tests); ``encoder`` is then unused.
    encoder : Encoder, optional, keyword-only
        The frozen tower (default: :func:`normscope.encoders.load_encoder` of the request's model).
    sizes : TowerSizes, optional, keyword-only
        Instead of the request's size (tests).
    directory : Path, optional, keyword-only
        Resumable run directory (default the request's ``run_dir``; None: nothing written).
    runs : tuple of str, keyword-only
        Which of :data:`TOWER_RUNS` to run (``sgd`` is always run).
    progress : bool, keyword-only
    num_threads : int or None, keyword-only
        torch threads during the run (restored after).

    Returns
    -------
    TowerLabResult

    Raises
    ------
    InputError
        Bad sizes or gloss vectors of the wrong shape.
    DataError
        WordNet not found.
    ModelError
        The tower cannot be loaded.
    """
    from normscope.requests.lab import TowerLabRequest

    req = request if request is not None else TowerLabRequest()
    sz = sizes or TOWER_SIZES[req.size]
    directory = directory if directory is not None else req.run_dir
    with _threads(num_threads):
        return _run(req, sz, data=data, gloss_vectors=gloss_vectors, encoder=encoder,
                    directory=Path(directory) if directory is not None else None,
                    runs=tuple(dict.fromkeys(("sgd", *runs))), progress=progress)


def _embed(req, data: TowerData, gloss_vectors, encoder) -> tuple[np.ndarray, str]:
    """Unit gloss embeddings (G, d) float64 and the tower's name."""
    if gloss_vectors is not None:
        v = np.asarray(gloss_vectors, dtype=np.float64)
        name = "given vectors"
    else:
        from normscope.encoders import DEFAULT_MODEL, encode_cached, load_encoder

        enc = encoder if encoder is not None else load_encoder(req.model or DEFAULT_MODEL)
        v = encode_cached(enc, data.glosses).astype(np.float64)
        name = getattr(enc, "name", None) or req.model or DEFAULT_MODEL
    if v.ndim != 2 or v.shape[0] != len(data.glosses):
        raise InputError(f"gloss vectors must have shape ({len(data.glosses)}, d), got {v.shape}")
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    if not np.all(np.isfinite(v)) or np.any(norms == 0):
        raise InputError("gloss vectors must be finite and non-zero")
    return v / norms, str(name)


def _run(req, sz: TowerSizes, *, data, gloss_vectors, encoder, directory, runs, progress) -> TowerLabResult:
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    timings: dict = {}
    unknown = [r for r in runs if r not in TOWER_RUNS]
    if unknown:
        raise InputError(f"unknown run {unknown[0]!r}; choose from {', '.join(TOWER_RUNS)}")
    given = data if data is not None else tower_data(sz.per_group, seed=req.seed)
    if len(set(given.names)) != given.n_items:
        raise InputError("noun names must be distinct")
    order = np.argsort(np.array(given.names, dtype=object), kind="stable")  # canonical order: by name
    canon = given.permuted(order)
    t = time.perf_counter()
    v, model = _embed(req, canon, gloss_vectors, encoder)
    timings["embed_s"] = time.perf_counter() - t
    steps = sz.burn_in + sz.window
    bar = Tracker("lab tower", steps * len(runs), unit="steps").start() if progress else None
    recs, preds = {}, {}
    try:
        for name in runs:
            run = TOWER_RUNS[name]
            rec = train_run(run, canon, v, sz, seed=req.seed, tau=req.tau, batch_size=req.batch_size,
                            directory=directory, bar=bar)
            timings[f"{name}_train_s"] = rec["train_s"]
            recs[name] = rec
            if run.lam > 0:
                t = time.perf_counter()
                g2b, zgb = probe_heat(rec["table"], v, canon, sz, seed=req.seed, tau=req.tau, batch_size=req.batch_size)
                timings[f"{name}_probe_s"] = time.perf_counter() - t
                preds[name] = (g2b, zgb)
    finally:
        if bar is not None:
            bar.stop()
    res = _summarise(req, sz, canon, model, v, recs, preds)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    res.items = res.items.iloc[inv].reset_index(drop=True)  # back to the input order
    timings["steps_per_s"] = (steps * len(runs) / sum(timings[f"{r}_train_s"] for r in runs)
                              if all(timings[f"{r}_train_s"] > 0 for r in runs) else None)
    timings["wall_s"] = time.perf_counter() - t_wall
    timings["cpu_s"] = time.process_time() - t_cpu
    res.timings = timings
    return res


def _r_obs(rec: dict, sz: TowerSizes) -> np.ndarray:
    return np.sqrt(rec["sum_r2"].sum(0) / sz.window)


def _summarise(req, sz: TowerSizes, data: TowerData, model: str, v: np.ndarray, recs: dict, preds: dict
               ) -> TowerLabResult:
    """The SGD test's figures, the controls', the items table (canonical order) and the scorecard row."""
    from normscope.lab.claims import tower_claim_row

    run = TOWER_RUNS["sgd"]
    rec = recs["sgd"]
    r_obs = _r_obs(rec, sz)
    r2f = np.einsum("nd,nd->n", rec["table"], rec["table"])
    p = predict(r_obs, r2f, *preds["sgd"], eta=run.eta, c=run.c, n_boot=sz.n_boot, n_perm=sz.n_perm, seed=req.seed)
    st = _stationarity(rec, run, sz, req.batch_size)
    den = 2 * run.c * rec["sum_r2"]
    balance = float(rec["g2"].sum() / den.sum())
    identity = 1.0 + (r2f.sum() - rec["r2_start"].sum()) / den.sum()
    per_item_balance = rec["g2"] / den.sum(0)
    per_item_identity = 1.0 + (r2f - rec["r2_start"]) / den.sum(0)
    rho, rho_ci = _spearman_ci(p["heat"], data.senses.astype(float), sz.n_boot, req.seed)
    items = pd.DataFrame({"name": data.names, "senses": data.senses, "r_obs": r_obs, "r_final": np.sqrt(r2f),
                          "heat": p["heat"], "heat_se": p["heat_se"], "drift": p["drift"], "r_eq": p["r_eq"],
                          "rel_error": p["rel"], "balance": per_item_balance})
    controls = _controls(req, sz, data, recs, preds, items)
    caveats = [f"the observed norm is each noun's time-RMS over the window ({sz.window} steps), taken as exact; the CIs "
               "resample nouns and blocks of probe batches"]
    if not st["passed"]:
        caveats.append("the SGD window is not stationary: " + "; ".join(st["reasons"]))
    traj = []
    for name, r in recs.items():
        for c_, row in enumerate(r["traj"]):
            for a in np.unique(data.senses):
                traj.append({"run": name, "step": c_ * CHUNK, "senses": int(a),
                             "r_mean": float(np.sqrt(row[data.senses == a]).mean())})
    res = TowerLabResult(
        encoder="tower", model=model, size=req.size, n_items=data.n_items, n_glosses=len(data.glosses),
        dim=int(v.shape[1]), tau=req.tau, batch_size=req.batch_size, seed=req.seed, lr=run.eta, weight_decay=run.lam,
        burn_in=sz.burn_in, window=sz.window, probe_batches=sz.probe_batches, relaxation_steps=1 / (4 * run.eta * run.lam),
        stationary=bool(st["passed"]), stationarity=st, mean_r_change=st["mean_r_change"], balance=balance,
        balance_identity_residual=float(max(abs(balance - identity),
                                            np.max(np.abs(per_item_balance - per_item_identity)))),
        mean_abs_rel_error=p["mean_abs_rel_error"], mean_abs_rel_error_ci=p["mean_abs_rel_error_ci"],
        median_rel_error=p["median_rel_error"], pearson=p["pearson"], pearson_ci=p["pearson_ci"],
        spearman=p["spearman"], null=p["null"], spearman_heat_senses=rho, spearman_heat_senses_ci=rho_ci,
        max_abs_drift_over_heat=p["max_abs_drift_over_heat"],
        groups=_groups(data.senses, r_obs, p["heat"], p["r_eq"], p["rel"]), controls=controls, caveats=caveats,
        items=items, trajectories=pd.DataFrame(traj))
    res.claim = tower_claim_row(res.to_dict())
    return res


def _controls(req, sz: TowerSizes, data: TowerData, recs: dict, preds: dict, items: pd.DataFrame) -> dict:
    """Each control's figures (and its per-item column in ``items``)."""
    out: dict = {}
    for name in ("adamw", "momentum"):
        if name not in recs:
            continue
        run, rec = TOWER_RUNS[name], recs[name]
        r_obs = _r_obs(rec, sz)
        r2f = np.einsum("nd,nd->n", rec["table"], rec["table"])
        st = _stationarity(rec, run, sz, req.batch_size)
        plain = predict(r_obs, r2f, *preds[name], eta=run.eta, c=run.c, n_boot=sz.n_boot, seed=req.seed)
        row = {"optimizer": run.optimizer, "lr": run.eta, "weight_decay": run.lam, "role": run.role,
               "stationary": bool(st["passed"]), "mean_r_change": st["mean_r_change"],
               "mean_abs_rel_error_sgd_form": plain["mean_abs_rel_error"],
               "mean_abs_rel_error_sgd_form_ci": plain["mean_abs_rel_error_ci"],
               "median_rel_error_sgd_form": plain["median_rel_error"],
               "groups": _groups(data.senses, r_obs, None, None, None)}
        if name == "momentum":
            e12 = predict(r_obs, r2f, *preds[name], eta=run.eta, c=run.c, heat_factor=1 / (1 - run.beta) ** 2,
                          drift_factor=1 / (1 - run.beta), n_boot=sz.n_boot, seed=req.seed)
            row.update(beta=run.beta, mean_abs_rel_error_e12=e12["mean_abs_rel_error"],
                       mean_abs_rel_error_e12_ci=e12["mean_abs_rel_error_ci"], median_rel_error_e12=e12["median_rel_error"],
                       predicted_miss_without_e12=math.sqrt(1 - run.beta) - 1)
            items["rel_error_momentum_uncorrected"] = plain["rel"]
            items["rel_error_momentum"] = e12["rel"]
        else:
            items["rel_error_adamw"] = plain["rel"]
        out[name] = row
    if "nodecay" in recs:
        rec = recs["nodecay"]
        r_end = np.sqrt(np.einsum("nd,nd->n", rec["table"], rec["table"]))
        r_start = np.sqrt(rec["r2_start"])
        growth = r_end / r_start - 1
        st = _stationarity(rec, TOWER_RUNS["nodecay"], sz, req.batch_size)
        items["growth_nodecay"] = growth
        out["nodecay"] = {"optimizer": "sgd", "lr": TOWER_RUNS["nodecay"].eta, "weight_decay": 0.0,
                          "role": TOWER_RUNS["nodecay"].role, "mean_growth": float(growth.mean()),
                          "share_grown": float(np.mean(growth > 0)), "stationary": bool(st["passed"]),
                          "mean_r_change": st["mean_r_change"],
                          "what": "R at the end of the run / R at the window's start - 1, per noun (no decay: R^2 "
                                  "never decreases, E1 with lambda = 0)"}
    return out
