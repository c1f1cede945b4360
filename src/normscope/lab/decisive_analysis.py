"""Analysis of the decisive transformer design: from the runs' records to :class:`DecisiveResult`.

Every statistic is computed with the probe items in a canonical order (sorted by text, then id), so
the summary is invariant under a permutation of the probe items and the per-item table permutes
with them. Every sentence about what was excluded or claimed is built from the same arrays.
"""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from normscope._io import write_json
from normscope.lab.analysis import wilson_interval
from normscope.lab.claims import transformer_claim_row, transformer_items_claim_row
from normscope.lab.decisive_run import DESIGN_VERSION, relaxation_time
from normscope.lab.decisive_scale import (SCALE_EXPONENTS, scale_blocks, scale_growth, scale_over_seeds, scale_summary,
                                          window_blocks)
from normscope.lab.prediction import snapshot_prediction
from normscope.lab.result import DecisiveResult
from normscope.lab.scaling import growth_without_decay, lambda_scaling_fit
from normscope.lab.stationarity import classify_window
from normscope.lab.trajectory import TrajectoryRecord, trajectory_estimates

__all__ = ["run_window", "grid_rows", "write_predictions", "analyse_design", "OPTIMIZERS"]

OPTIMIZERS = ("sgd", "momentum", "adamw")
#: time blocks of a scaling run's window (the lambda-scaling CI resamples them)
SCALING_BLOCKS = 8


def _num(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _med(a) -> float | None:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return float(np.median(a)) if a.size else None


def _blocks(r2: np.ndarray, steps: np.ndarray, edges: list[int]) -> np.ndarray:
    """Mean R^2 per item over the tracked steps in each ``[edges[i], edges[i+1])`` block, shape (len(edges)-1, P)."""
    out = []
    for a, b in zip(edges[:-1], edges[1:]):
        sel = (steps >= a) & (steps < b)
        out.append(r2[sel].mean(axis=0) if sel.any() else np.full(r2.shape[1], np.nan))
    return np.stack(out)


def run_window(spec, run: dict, *, batch_size: int, n_eval: int, n_blocks: int | None = None, n_boot: int = 500,
               seed: int = 0) -> dict:
    """Stationarity, trajectory estimates and block means of one run's window ``[burn_in, steps)``.

    Parameters
    ----------
    spec : RunSpec
    run : dict
        :func:`normscope.lab.decisive_run.load_run`'s dict.
    batch_size, n_eval : int
        B (the chance loss ln B) and the held-out candidates (chance 1/n_eval).
    n_blocks : int, optional
        Cut the window into this many equal time blocks (default: at the snapshot steps when the run
        has snapshots, else :data:`SCALING_BLOCKS`).
    n_boot, seed : int
        Resamples and seed of the scale's block-bootstrap CI (:func:`~normscope.lab.decisive_scale.scale_summary`).

    Returns
    -------
    dict
        ``stationarity`` (:func:`~normscope.lab.stationarity.classify_window`), ``estimates`` (per-item
        arrays of :func:`~normscope.lab.trajectory.trajectory_estimates` over the tracked steps of the
        window), ``blocks`` (block-mean R^2, shape (n_blocks, P)), ``relaxation_steps`` (the
        optimizer's relaxation unit, lambda_rad from the window's E4 measurements, median item), ``r_bar``
        (time-RMS norm per item), ``lam_per_lambda`` (median, window), ``summary`` (JSON-able figures;
        ``scale``: the decayed scale's (E1) checks and (E2) prediction when the run recorded theta_D).
    """
    ts = run["track_steps"]
    w = ts >= spec.burn_in
    r2, r2n = run["r2"][w], run["r2_next"][w]
    loss_w = run["loss"][spec.burn_in:spec.steps]
    lam_rows = run["lam"][(run["lam_steps"] >= spec.burn_in)] if run["lam"].size else run["lam"]
    if lam_rows.size == 0:
        lam_rows = run["lam"]
    lam_med = _med(lam_rows.mean(axis=0)) if lam_rows.size else None
    tau_r = relaxation_time(spec.lr, spec.weight_decay, lam_med, spec.optimizer) if lam_med is not None else None
    tau_r = tau_r if tau_r is not None and math.isfinite(tau_r) else None
    acc = float(run["eval_acc"][-1]) if run["eval_acc"].size else None
    st = classify_window(r2, loss_w, batch_size=batch_size, accuracy=acc, n_eval=n_eval, burn_in=spec.burn_in,
                         relaxation_steps=tau_r, relaxation_unit=("1/(2 eta lambda_rad)" if spec.optimizer == "adamw"
                                                                  else "1/(4 eta lambda_rad)"))
    est = None
    if r2.shape[0] >= 1 and spec.weight_decay > 0:
        rec = TrajectoryRecord(np.vstack([r2, r2n[-1:]]), run["zd"][w], run["dd"][w], run["dec"][w], loss_w,
                               np.zeros(len(lam_rows), dtype=np.int64), lam_rows, np.zeros((r2.shape[0], 1)))
        est = trajectory_estimates(rec, eta=spec.lr, weight_decay=spec.weight_decay, burn_in=0)
    if n_blocks is None and len(spec.snapshots):
        edges = [int(s) for s in spec.snapshots] + [spec.steps]
    else:
        nb = max(1, min(n_blocks or SCALING_BLOCKS, int(w.sum())))  # every block holds a tracked step
        edges = [int(spec.burn_in + (spec.steps - spec.burn_in) * i // nb) for i in range(nb)] + [spec.steps]
    blocks = _blocks(run["r2"], ts, edges)
    r_bar = np.sqrt(r2.mean(axis=0)) if r2.size else np.full(run["r2"].shape[1], np.nan)
    summary = {
        "name": spec.name, "optimizer": spec.optimizer, "eta": spec.lr, "lambda": spec.weight_decay,
        "steps": spec.steps, "burn_in": spec.burn_in, "start": spec.start,
        "relaxation_steps": _num(tau_r), "relaxations": _num(spec.steps / tau_r) if tau_r else None,
        "relaxation_unit": "1/(2 eta lambda_rad)" if spec.optimizer == "adamw" else "1/(4 eta lambda_rad)",
        "arrival_units": _num(spec.burn_in / tau_r) if tau_r else None,
        "window_units": _num((spec.steps - spec.burn_in) / tau_r) if tau_r else None,
        "label": st["label"], "reasons": st["reasons"], "stationarity": st,
        "lambda_rad_per_lambda": lam_med,
        "relative_step": _med(np.sqrt(run["dd"][w].mean(axis=0) / r2.mean(axis=0))) if r2.size else None,
        "loss": {"first": _num(run["loss"][: max(1, min(50, spec.steps // 10))].mean()),
                 "window": st["loss_mean"], "chance": st["chance_loss"]},
        "accuracy": {"steps": run["eval_steps"].tolist(), "values": run["eval_acc"].tolist()},
        "mean_r": {"start": _num(np.sqrt(run["r2"][0]).mean()) if run["r2"].size else None,
                   "window": _num(r_bar.mean())},
    }
    if est is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            ds = np.where(est["c"] > 0, est["drift"] / (est["r_window"] ** 2 * est["c"]), np.nan)
            creal = est["c_realised"] / np.where(est["c"] > 0, est["c"], np.nan)
        summary["trajectory"] = {"q_over_c": _med(est["q_over_c"]), "q_over_c_realised": _med(est["q_over_c_realised"]),
                                 "c_realised_over_c": _med(creal), "heat_share": _med(est["heat_share"]),
                                 "drift_share": _med(ds)}
    td = run.get("theta_d")
    if td is not None and len(td) == spec.steps and spec.weight_decay > 0 and spec.steps - spec.burn_in >= 4:
        summary["scale"] = scale_summary(td, eta=spec.lr, weight_decay=spec.weight_decay, optimizer=spec.optimizer,
                                         beta=spec.beta, burn_in=spec.burn_in, relaxation_steps=tau_r,
                                         n_boot=n_boot, seed=seed)
        eq = run.get("equilibrate")
        if eq is not None and np.asarray(eq).any():
            summary["scale"]["equilibrated_start"] = {"s_before": float(np.sqrt(eq[0])), "s_after": float(np.sqrt(eq[1])),
                                                      "batches": int(eq[4])}
    every = max(1, int(math.ceil(len(ts) / 200)))
    summary["curve"] = {"steps": ts[::every].tolist(), "mean_r": np.sqrt(run["r2"][::every]).mean(axis=1).tolist(),
                        "loss_steps": list(range(0, spec.steps, max(1, spec.steps // 200))),
                        "loss": [float(np.mean(run["loss"][a:a + max(1, spec.steps // 200)]))
                                 for a in range(0, spec.steps, max(1, spec.steps // 200))]}
    return {"stationarity": st, "estimates": est, "blocks": blocks, "relaxation_steps": tau_r, "r_bar": r_bar,
            "lam_per_lambda": lam_med, "summary": summary}


def grid_rows(runs: list, sizes, lam_per_lambda: float) -> list[dict]:
    """One row per grid setting: eta, lambda, relaxation time, label (collapse checks), loss, accuracy, norms."""
    rows = []
    for spec, run in runs:
        win = run_window(spec, run, batch_size=sizes.batch_size, n_eval=sizes.n_eval)
        s = win["summary"]
        w = run["track_steps"] >= spec.burn_in
        rel = (_med(np.sqrt(run["dd"][w].mean(axis=0) / run["r2"][w].mean(axis=0)))
               if w.any() and np.isfinite(run["r2"][w]).all() else None)
        rows.append({"eta": spec.lr, "lambda": spec.weight_decay, "eta_lambda": spec.lr * spec.weight_decay,
                     "mask": spec.decay_mask or sizes.decay_mask, "relative_step": rel,
                     "relaxation_steps": relaxation_time(spec.lr, spec.weight_decay, lam_per_lambda),
                     "steps": spec.steps, "label": s["label"], "reasons": s["reasons"], "loss_window": s["loss"]["window"],
                     "accuracy_end": s["accuracy"]["values"][-1] if s["accuracy"]["values"] else None,
                     "mean_r_start": s["mean_r"]["start"], "mean_r_window": s["mean_r"]["window"],
                     "relative_change": win["stationarity"]["relative_change"]})
    return rows


def write_predictions(directory: Path, base_runs: list, *, key: str = "") -> dict:
    """State the lambda-scaling exponent of the decayed scale s = ||theta_D|| per optimizer, before any scaled run.

    The exponents follow from the free-vector form that holds exactly for theta_D
    (:data:`~normscope.lab.decisive_scale.SCALE_EXPONENTS`: -1/4 SGD and heavy ball, -1/2 AdamW); they do not
    depend on the base runs' numbers. The first design predicted ``-1/(2(1 + h))`` from the items' measured heat
    share h: that form needs heat and drift fixed as lambda changes, but here both come from the undecayed weights,
    scale with R and cancel, so they exert no restoring force; only theta_D restores (issue 35). Written once to
    ``<directory>/predictions.json`` with the time and ``key`` (the base runs' keys); a resumed design reads the
    statement made the first time.
    """
    path = Path(directory) / "predictions.json"
    if path.is_file():
        old = json.loads(path.read_text())
        if old.get("key") == key:
            return old
    out = {"stated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "key": key,
           "note": "written after the base runs and before any lambda-scaled run started",
           "quantity": "s = ||theta_D||, the decayed scale (every item's R(x) = s rho(x))"}
    for spec, _run in base_runs:
        e = SCALE_EXPONENTS.get(spec.optimizer)
        out[spec.optimizer] = {
            "exponent": e, "free_vector": e,
            "basis": ("AdamW: s^2 = eta E||u||^2 / (2 lambda), s ~ lambda^(-1/2) (docs/theory.md C3; Kosson et al. 2024)"
                      if spec.optimizer == "adamw" else
                      "theta_D is a free vector (E1): s^4 = eta^2 gamma^2 / (2 eta lambda) (E2), s ~ lambda^(-1/4)"
                      + (" (heavy ball, decay outside the buffer: the heat / (1-beta)^2 of E12 does not depend on "
                         "lambda)" if spec.optimizer == "momentum" else ""))}
    write_json(out, path)
    return out


def _prediction(spec, run, win, sizes, order, seed) -> dict | None:
    if not run["snap_steps"].size or run["snap_za"].shape[0] < 2:
        return None
    return snapshot_prediction(run["snap_za"], run["snap_zc"], run["snap_aa"], run["snap_r"], run["snap_zjd"],
                               win["blocks"], eta=spec.lr, weight_decay=spec.weight_decay, optimizer=spec.optimizer,
                               beta=spec.beta, order=order, n_boot=sizes.n_boot, n_perm=sizes.n_perm, seed=seed)


def analyse_design(*, sizes, data: dict, runs: dict, phases: dict, lam_per_lambda: float, grid: list, selected: dict,
                   predictions: dict, seed: int, device: str, workers: int, directory: Path, timings: dict):
    """The :class:`~normscope.lab.result.DecisiveResult` of a finished design (see :mod:`normscope.lab.decisive`)."""
    ids, texts = list(data["probe_ids"]), list(data["probe_texts"])
    p = len(texts)
    order = np.lexsort((np.asarray(ids, dtype=str), np.asarray(texts, dtype=str)))
    kw = dict(batch_size=sizes.batch_size, n_eval=sizes.n_eval, n_boot=sizes.n_boot, seed=seed)
    encoder = _encoder_summary(sizes, runs["pretrain"], lam_per_lambda)
    cols: dict = {"id": ids, "text": texts}  # the per-item table, filled by each phase in turn
    base, wins = _base_summaries(phases["base"], runs, sizes, ids, order, seed, kw, cols)
    if phases.get("replicates") and "sgd" in base:
        base["sgd"].update(_replicate_summaries(phases, runs, wins["sgd"], sizes, seed, kw))
    scaling = _scaling_summaries(phases, runs, predictions, sizes, order, seed, kw, cols)
    nodecay = _nodecay_summary(phases, runs, wins, sizes, order, seed, cols)
    items = pd.DataFrame(cols)
    sgd = base.get("sgd", {})
    headline = (sgd.get("prediction") or {})
    result = DecisiveResult(
        design=sizes.name, sizes=sizes.to_dict(), encoder=encoder, seed=seed, device=device, workers=workers,
        pairs=data["pairs"], n_train_pairs=len(data["train_left"]), n_eval_pairs=len(data["eval_left"]),
        n_source_pairs=data["n_source"], n_long_pairs=data["n_long"], n_held_out_probe_pairs=data["n_held_out_probe"],
        probe_items=p, probe_set=data["probe_set"], decay_mask=sizes.decay_mask,
        lambda_rad_per_lambda_pretrained=lam_per_lambda, grid=grid, selected=selected, base=base,
        predictions=predictions, scaling=scaling, nodecay=nodecay,
        stationary=sgd.get("label") == "stationary", stationarity_label=sgd.get("label"),
        mean_abs_rel_error=(headline.get("stats") or {}).get("mean_abs_rel_error"),
        mean_abs_rel_error_ci=(headline.get("ci") or {}).get("mean_abs_rel_error"),
        pearson=(headline.get("stats") or {}).get("pearson"), pearson_ci=(headline.get("ci") or {}).get("pearson"),
        spearman=(headline.get("stats") or {}).get("spearman"), spearman_ci=(headline.get("ci") or {}).get("spearman"),
        null_p_mean_abs_rel_error=((headline.get("null") or {}).get("mean_abs_rel_error") or {}).get("p"),
        caveats=_caveats(selected, base, headline, p), items=items, timings=timings, directory=str(directory),
        design_version=DESIGN_VERSION)
    d = result.to_dict()
    result.claim = transformer_claim_row(d)
    result.claim_items = transformer_items_claim_row(d)
    return result


def _encoder_summary(sizes, pretrain: tuple, lam_per_lambda: float) -> dict:
    """The pre-trained encoder: its configuration, pre-training, held-out accuracy (Wilson CI) and loss."""
    pre_spec, pre = pretrain
    acc = float(pre["eval_acc"][-1])
    k = int(round(acc * sizes.n_eval))
    return {"config": {"hidden": sizes.hidden, "layers": sizes.layers, "heads": sizes.heads,
                       "intermediate": 4 * sizes.hidden, "pooling": "mean", "tokenizer": "all-MiniLM-L6-v2 (bundled)"},
            "pretrain": {"optimizer": "adamw", "lr": pre_spec.lr, "weight_decay": 0.0, "steps": pre_spec.steps,
                         "batch_size": sizes.batch_size, "tau": sizes.tau},
            "heldout_accuracy": acc, "heldout_accuracy_ci": wilson_interval(k, sizes.n_eval),
            "chance": 1.0 / sizes.n_eval, "n_eval": sizes.n_eval,
            "accuracy_curve": {"steps": pre["eval_steps"].tolist(), "values": pre["eval_acc"].tolist()},
            "loss": {"first": _num(pre["loss"][: max(1, pre_spec.steps // 20)].mean()),
                     "last": _num(pre["loss"][-max(1, pre_spec.steps // 20):].mean())},
            "lambda_rad_per_lambda": lam_per_lambda}


def _base_summaries(base_specs: list, runs: dict, sizes, ids: list, order, seed: int, kw: dict,
                    cols: dict) -> tuple[dict, dict]:
    """Each base run's window summary (stationarity, trajectory) with its snapshot prediction of R_eq; the
    per-item columns go into ``cols``. Returns (summary per optimizer, window per optimizer)."""
    base, wins = {}, {}
    for spec in base_specs:
        _s, run = runs[spec.name]
        win = run_window(spec, run, **kw)
        wins[spec.optimizer] = win
        pr = _prediction(spec, run, win, sizes, order, seed)
        summ = dict(win["summary"])
        if pr is not None:
            summ["prediction"] = {k2: v for k2, v in pr.items() if k2 != "items"}
            it = pr["items"]
            summ["prediction"]["per_item"] = {"id": ids, "r_bar": it["r_bar"], "r_eq": it["r_eq"], "q": it["q"]}
            for c in ("r_bar", "r_eq", "rel_error", "heat", "drift", "lambda_rad", "c", "q", "q_over_c", "flag"):
                cols[f"{spec.optimizer}_{c}"] = it[c]
        if spec.optimizer == "adamw" and summ["label"] == "drifting":
            acc = summ["accuracy"]["values"]
            if len(acc) >= 2 and acc[-1] > acc[0]:
                summ["drift_kind"] = (f"representation learning: the undecayed weights keep learning under AdamW (held-out "
                                      f"accuracy {acc[0]:.3f} -> {acc[-1]:.3f} within the window), so the items' "
                                      "geometric factors rho(x) move; this is not a failure of the balance of theta_D")
        if win["estimates"] is not None:
            cols[f"{spec.optimizer}_heat_share"] = win["estimates"]["heat_share"]
            cols[f"{spec.optimizer}_q_over_c_trajectory"] = win["estimates"]["q_over_c"]
        base[spec.optimizer] = summ
    return base, wins


def _replicate_summaries(phases: dict, runs: dict, base_win: dict, sizes, seed: int, kw: dict) -> dict:
    """The SGD base run's replicates on other batch seeds: each one's window summary (label, scale) and the decayed
    scale's (E2) relative error over the base run and its replicates with a CI over seeds and time blocks
    (:func:`~normscope.lab.decisive_scale.scale_over_seeds`)."""
    base_spec = next(s for s in phases["base"] if s.optimizer == "sgd")
    specs = [base_spec] + list(phases["replicates"])
    recs, reps = [], []
    for spec in specs:
        win = base_win if spec is base_spec else run_window(spec, runs[spec.name][1], **kw)
        td = runs[spec.name][1].get("theta_d")
        if td is None or len(td) != spec.steps:
            return {}
        recs.append((td, spec.burn_in, win["relaxation_steps"]))
        if spec is not base_spec:
            sm = win["summary"]
            sc = sm.get("scale") or {}
            reps.append({"name": spec.name, "replicate": spec.replicate, "label": sm["label"], "reasons": sm["reasons"],
                         "scale_label": (sc.get("stationarity") or {}).get("label"),
                         "scale_relative_change": (sc.get("stationarity") or {}).get("relative_change"),
                         "s_observed": sc.get("s_observed"), "s_predicted": sc.get("s_predicted"),
                         "rel_error": sc.get("rel_error"), "rel_error_ci": sc.get("rel_error_ci"),
                         "e1_balance": (sc.get("e1") or {}).get("balance"), "mean_r": sm["mean_r"]})
    seeds = scale_over_seeds(recs, eta=base_spec.lr, weight_decay=base_spec.weight_decay, optimizer="sgd",
                             beta=base_spec.beta, n_boot=sizes.n_boot, seed=seed)
    return {"replicates": reps, "scale_seeds": seeds}


def _scaling_summaries(phases: dict, runs: dict, predictions: dict, sizes, order, seed: int, kw: dict,
                       cols: dict) -> dict:
    """Per optimizer: the fit of the decayed scale s = ||theta_D|| against lambda over its base and lambda-scaled runs
    (``scale_fit``, time blocks of each window; compared with the exponent stated before the scaled runs), and the
    same fit of the items' R-bar (``fit``, items in canonical order; reported beside it)."""
    scaling = {}
    for opt in OPTIMIZERS:
        b = next((s for s in phases["base"] if s.optimizer == opt), None)
        sc = [s for s in phases["scaling"] if s.kind == "scaling" and s.optimizer == opt]
        if b is None or not sc:
            continue
        members = sorted([b, *sc], key=lambda s: s.weight_decay)
        blocks, sblocks, labels = [], [], []
        for s in members:
            run = runs[s.name][1]
            w = run_window(s, run, n_blocks=SCALING_BLOCKS, **kw)
            blocks.append(w["blocks"][:, order])
            sc_sum = w["summary"].get("scale") or {}
            if "theta_d" in run and len(run["theta_d"]) == s.steps:
                nb = window_blocks(s.steps - s.burn_in, w["relaxation_steps"], SCALING_BLOCKS)
                sblocks.append(scale_blocks(run["theta_d"], s.burn_in, nb))
            labels.append({"name": s.name, "lambda": s.weight_decay, "steps": s.steps, "label": w["summary"]["label"],
                           "reasons": w["summary"]["reasons"], "relaxations": w["summary"]["relaxations"],
                           "mean_r_window": w["summary"]["mean_r"]["window"],
                           "scale_label": (sc_sum.get("stationarity") or {}).get("label"),
                           "s_observed": sc_sum.get("s_observed"), "s_predicted": sc_sum.get("s_predicted")})
            cols[f"{opt}_r_bar_lambda{s.weight_decay:.4g}"] = w["r_bar"]
        lams = [s.weight_decay for s in members]
        fit = lambda_scaling_fit(lams, blocks, n_boot=sizes.n_boot, seed=seed)
        pred = predictions.get(opt) or {}
        e = pred.get("exponent")
        out = {"fit": fit, "prediction": pred, "runs": labels,
               "all_stationary": all(r["label"] == "stationary" for r in labels),
               "items_prediction_in_ci": (bool(fit["ci"][0] <= e <= fit["ci"][1]) if e is not None else None)}
        if len(sblocks) == len(members):
            sfit = lambda_scaling_fit(lams, sblocks, n_boot=sizes.n_boot, seed=seed)
            sfit["resamples"] = ("per run, time blocks of its window (one per relaxation unit, at least 2; one seed); "
                                 "percentile")
            out["scale_fit"] = sfit
            out["scale_all_stationary"] = all(r["scale_label"] == "stationary" for r in labels)
            out["prediction_in_ci"] = bool(sfit["ci"][0] <= e <= sfit["ci"][1]) if e is not None else None
            sp = [r["s_predicted"] for r in labels]
            if all(x is not None and x > 0 for x in sp):  # the slope the runs' own (E2) predictions give: -1/4 plus the
                # heat's own dependence on lambda (the fixed exponent assumes a heat that does not depend on lambda)
                out["scale_predicted_slope"] = float(np.polyfit(np.log(lams), 0.5 * np.log(np.square(sp)), 1)[0])
        else:
            out["prediction_in_ci"] = None
        scaling[opt] = out
    return scaling


def _nodecay_summary(phases: dict, runs: dict, wins: dict, sizes, order, seed: int, cols: dict) -> dict | None:
    """The run without decay: growth of the norms, the initial rate of mean R^2 against the rate the SGD base
    run's drift and displacement predict, and (into ``cols``) each item's late / early RMS norm ratio."""
    nd = next((s for s in phases["scaling"] if s.kind == "nodecay"), None)
    if nd is None:
        return None
    run = runs[nd.name][1]
    g = growth_without_decay(run["r2"][:, order], n_boot=sizes.n_boot, seed=seed)
    ts = run["track_steps"].astype(float)
    q = max(2, len(ts) // 4)
    mr2 = run["r2"][:q].mean(axis=1)
    measured_rate = float(np.polyfit(ts[:q], mr2, 1)[0]) if q >= 2 else None
    pred_rate = None
    if wins.get("sgd") is not None:
        bs = next(s for s in phases["base"] if s.optimizer == "sgd")
        brun = runs[bs.name][1]
        w = brun["track_steps"] >= bs.burn_in
        pred_rate = float(np.mean(2 * brun["zd"][w].mean(axis=0) + brun["dd"][w].mean(axis=0)))
    cols["nodecay_ratio"] = np.sqrt(run["r2"][-max(1, len(ts) // 4):].mean(axis=0)
                                    / run["r2"][: max(1, len(ts) // 4)].mean(axis=0))
    scale = scale_growth(run["theta_d"]) if "theta_d" in run and len(run["theta_d"]) == nd.steps else None
    return {**g, "steps": nd.steps, "start": nd.start, "eta": nd.lr, "scale": scale,
            "initial_rate_of_mean_r2": measured_rate,
            "predicted_initial_rate": pred_rate,
            "predicted_rule": ("E[R_{t+1}^2 - R_t^2] = 2 D~ + E||Delta||^2 with no decay: the SGD base run's window "
                               "drift and displacement, averaged over the probe items"),
            "accuracy_end": float(run["eval_acc"][-1]) if run["eval_acc"].size else None}


def _caveats(selected: dict, base: dict, headline: dict, p: int) -> list[str]:
    """What limits the result: a fallback grid choice, base runs that are not stationary, AdamW and momentum,
    negative q and items with lambda_rad <= 0 in the SGD prediction."""
    caveats = []
    if selected.get("fallback"):
        caveats.append(f"grid: {selected['reason']}")
    for opt, b in base.items():
        if b["label"] != "stationary":
            caveats.append(f"{opt} base run's items are {b['label']}: " + "; ".join(b["reasons"])
                           + (f" ({b['drift_kind']})" if b.get("drift_kind") else ""))
        sc = (b.get("scale") or {}).get("stationarity") or {}
        if sc.get("label") == "drifting":
            caveats.append(f"{opt} base run's scale ||theta_D|| is drifting: " + "; ".join(sc.get("reasons") or []))
    if "adamw" in base:
        caveats.append("AdamW: the SGD form of Theorem 1 is not expected to hold (docs/theory.md C3); its SGD-form "
                       "prediction is a control that must fail")
    if "momentum" in base:
        caveats.append("momentum: the prediction uses (E12) heat/(1-beta)^2 and drift/(1-beta) (the drift factor is "
                       "untested in docs/theory.md)")
    neg = headline.get("negative_q")
    if neg and headline.get("n_negative_q"):
        caveats.append(f"SGD: {neg}")
    if headline.get("n_excluded"):
        caveats.append(f"SGD: {headline['n_excluded']} of {p} probe items have lambda_rad <= 0 (E4): no root of (E7) "
                       "with c > 0; they are left out of the prediction statistics")
    return caveats
