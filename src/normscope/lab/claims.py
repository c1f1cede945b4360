"""Scorecard rows of the training labs' claims (verdict rules: :mod:`normscope.claims`).

- ``theorem1_lab``: mean |R_eq - R| / R of a free-table or MLP lab run against the 5 % gate
  (the gate of docs/theory.md section 7), with a bootstrap CI over items; the row names what ran (a free table
  satisfies the theorem's assumptions A1-A3 by construction, so it checks the balance and its
  estimator, not a network: its kind is ``construction``, an MLP's ``paper``).
- ``optimizer_momentum`` / ``optimizer_adamw`` (exploratory: the paper leaves them open): does the
  plain-SGD formula miss under heavy-ball momentum (without the (E12) correction) and AdamW?
- ``theorem1_transformer`` from the decisive design (:func:`transformer_claim_row`): the theorem's own
  conditions. The decayed group theta_D is exactly scale invariant, so its norm s obeys (E1) and (E2);
  the statistic is ``|s_pred / s_obs - 1|`` with no fitted constant (CI over window blocks), size at most
  :data:`SCALE_TOL`, with the lambda-scaling slopes (-1/4 SGD, -1/2 AdamW), the no-decay control and the
  AdamW control as conditions.
- ``theorem1_transformer_items`` (:func:`transformer_items_claim_row`): per-item norms vs the per-item
  prediction (the paper's application, outside the derivation), mean ``|R_eq - R-bar| / R-bar`` with its
  CI over snapshots, batches and items, direction against a permutation null, size at most
  :data:`REL_TOL` (10 % in R is 40 % in the heat/decay balance); *not decided* unless the items are
  stationary, the step-size gate holds (:data:`STEP_TOL`) and it beats a constant predictor (issue 34).
- the same claim from a single transformer run (:func:`transformer_claim`, ``normscope lab --encoder
  transformer --design single``): the partial Spearman rho(R_eq at step 0, R_T | R_0), a direction
  only; *not decided* unless the run is at least one relaxation time long before its window and the
  window passed a stationarity check.

- ``ambiguity_heat_lab`` from the frozen-tower arm (:func:`tower_claim_row`, ``normscope lab --encoder
  tower``): mean |R_eq - R-bar| / R-bar of free WordNet noun vectors trained against a frozen tower's gloss
  embeddings, with no fitted constant; size at most 0.05 (the free table's gate), the whole CI; *not decided at
  this size* unless the SGD window is stationary; ``reproduced`` also needs the heat-permutation null beaten,
  ambiguity to order the heat, Pearson >= 0.95 and every control to miss as it should.

Each builder is a pure function of a lab result and reads it by attribute: a :class:`LabResult`, a
:class:`TransformerLabResult`, a :class:`DecisiveResult` or a :class:`TowerLabResult` (the last three may be given as
their ``to_dict()``, which is read back once with ``from_dict``); the per-item errors of a free-table / MLP run come
from its ``items`` table. Each returns a :class:`~normscope.claims.ClaimRow`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from normscope._format import plural
from normscope.claims import (CLAIMS, ClaimRow, Gate, Size, claim_row, fmt_value, judge, not_testable_row,
                              permutation_direction)
from normscope.lab.decisive_values import (DecisiveEncoder, DecisiveRun, EncoderConfig, NoDecay, NullStat,
                                           PredictionCI, PredictionDesign, PredictionNull, PredictionStats, ScaleE1,
                                           ScaleStationarity, ScalingFit, SnapshotPrediction, Stationarity)
from normscope.lab.result import DecisiveResult, LabGate, Motion, TrajectoryCheck, TransformerLabResult
from normscope.lab._rows import _as_result, _ci, _f, _given, _or
from normscope.lab.tower_claims import GATE_REL, tower_claim_row

__all__ = ["lab_claim", "optimizer_claim", "transformer_claim", "transformer_claim_row", "transformer_items_claim_row",
           "ENCODER_NAMES", "SHORT_NAMES", "REL_TOL", "SCALE_TOL", "STEP_TOL", "MIN_SCALE_BLOCKS", "SINGLE_RUN_CLAIM", "SCALE_SLOPES",
           "tower_claim_row", "slope_tolerance", "GATE_REL"]

#: Largest mean |R_eq - R-bar| / R-bar of the decisive design's items that counts as the prediction holding in size
#: (the size of ``CLAIMS["theorem1_transformer_items"]``).
REL_TOL = 0.10
#: The claim as a single transformer run tests it: a direction only (partial Spearman rho).
#: It is about per-item norms (the items claim's text), kept under the key its scorecard used.
SINGLE_RUN_CLAIM = dataclasses.replace(CLAIMS["theorem1_transformer_items"], key="theorem1_transformer", size=Size())

#: Short names of the lab encoders (shown beside the row's figure: what actually ran).
SHORT_NAMES = {"table": "free embedding table", "mlp": "two-tower MLP"}
#: What each lab encoder is, for the row's "tested on".
ENCODER_NAMES = {
    "table": "a free embedding table (k = 1): the theorem's assumptions A1-A3 hold by construction, so this checks "
             "the balance and its estimator, not a network",
    "mlp": "a two-tower bias-free ReLU MLP (k = 2), a network whose drift is not zero",
}


def _abs_rel(items, column: str) -> np.ndarray:
    if items is None or getattr(items, "empty", True) or column not in items:
        return np.array([])
    rel = items[column].to_numpy(dtype=float)
    return np.abs(rel[np.isfinite(rel)])


def _boot_mean(v: np.ndarray, n_boot: int, seed: int) -> list[float] | None:
    """Percentile 95 % CI of the mean of ``v`` (items resampled with replacement)."""
    if v.size < 3 or n_boot < 1:
        return None
    rng = np.random.default_rng(seed)
    boot = v[rng.integers(0, v.size, size=(n_boot, v.size))].mean(axis=1)
    return [float(x) for x in np.percentile(boot, [2.5, 97.5])]


def _ran(res) -> str:
    return f"ran: {SHORT_NAMES.get(res.encoder, res.encoder)}, {res.optimizer}"


def _tested_on(res) -> str:
    return (f"lab: {ENCODER_NAMES.get(res.encoder, res.encoder)}; {res.optimizer}, {res.data} pairs, {res.n_items} "
            f"items, {res.steps} steps, {res.estimator} estimator")


def lab_claim(res, *, n_boot: int, seed: int) -> ClaimRow:
    """Row ``theorem1_lab`` from a free-table or MLP :class:`LabResult` (SGD).

    The statistic is the mean |relative error| of R_eq with a percentile bootstrap CI over items;
    the size is the gate's 0.05 (docs/theory.md section 7) (``reproduced`` when the whole CI is within it, ``refuted`` when
    the whole CI exceeds it); the gate's other parts (|median| <= 0.02, Pearson >= 0.95) must hold
    for ``reproduced``.
    """
    rel = _abs_rel(res.items, "rel_error")
    what = "mean |R_eq - R| / R over items (R: the time-RMS norm of the window); CI: bootstrap over items"
    if rel.size < 3 or res.mean_abs_rel_error is None:
        return not_testable_row("theorem1_lab", "fewer than 3 items with a predicted R_eq", what=what)
    ci = _boot_mean(rel, n_boot, seed)
    gate = LabGate.from_json(res.gate) or LabGate()
    max_median = 0.02 if gate.abs_median_rel_error is None else gate.abs_median_rel_error
    min_pearson = 0.95 if gate.pearson is None else gate.pearson
    others = (res.median_rel_error is not None and abs(res.median_rel_error) <= max_median
              and res.pearson is not None and res.pearson >= min_pearson)
    j = judge("theorem1_lab", res.mean_abs_rel_error, ci, conditions_met=others)
    return claim_row(
        "theorem1_lab", measured=res.mean_abs_rel_error, ci=ci, judged=j, n=int(rel.size), tested_on=_tested_on(res),
        kind="construction" if res.encoder == "table" else "paper",
        beside=_ran(res), label="mean |R_eq \u2212 R| / R",
        statistic=f"lab {res.encoder}/{res.optimizer}: mean |rel. error|", what=what + f" ({n_boot} resamples)",
        details={"median relative error (gate |.| <= 0.02)": res.median_rel_error,
                 "Pearson r(R_eq, R) (gate >= 0.95)": res.pearson, "gate passed": bool(gate.passed)},
        note=f"the gate's median and Pearson parts {'hold' if others else 'fail'} (median "
             f"{fmt_value(res.median_rel_error, sign=True)}, Pearson {fmt_value(res.pearson)})")


def optimizer_claim(res, *, n_boot: int, seed: int) -> ClaimRow:
    """Row ``optimizer_momentum`` or ``optimizer_adamw`` from a free-table lab run with that optimizer.

    The statistic is the mean |relative error| of the plain-SGD formula (for momentum: without the
    (E12) correction); the stated limit is reproduced when the whole CI exceeds the 0.05 gate.
    """
    key = {"momentum": "optimizer_momentum", "adamw": "optimizer_adamw"}.get(res.optimizer)
    if key is None:
        raise ValueError(f"no optimizer claim for '{res.optimizer}'")
    col = "rel_error_uncorrected" if res.optimizer == "momentum" else "rel_error"
    rel = _abs_rel(res.items, col)
    what = (f"mean |R_eq - R| / R of the plain-SGD formula under {res.optimizer}"
            + (" (heat without the (E12) 1/(1-\u03b2)\u00b2 correction)" if res.optimizer == "momentum" else "")
            + f"; CI: bootstrap over items ({n_boot} resamples)")
    if rel.size < 3:
        return not_testable_row(key, "fewer than 3 items with a predicted R_eq", what=what)
    ci = _boot_mean(rel, n_boot, seed)
    j = judge(key, float(rel.mean()), ci)
    details: dict = {"beta": res.beta} if res.optimizer == "momentum" else {}
    note = ""
    if res.optimizer == "momentum":
        details["with the (E12) correction: mean |rel. error|"] = res.mean_abs_rel_error
        note = (f"with the (E12) correction the error is {fmt_value(res.mean_abs_rel_error)} (gate "
                f"{'passed' if (LabGate.from_json(res.gate) or LabGate()).passed else 'not passed'})")
    return claim_row(key, measured=float(rel.mean()), ci=ci, judged=j, n=int(rel.size), tested_on=_tested_on(res),
                     beside=_ran(res), label="mean |R_eq \u2212 R| / R, SGD formula",
                     statistic=f"lab {res.encoder}/{res.optimizer}: mean |rel. error| of the SGD formula", what=what,
                     details=details, note=note)


def transformer_claim(res) -> ClaimRow:
    """Row ``theorem1_transformer`` from the SGD run of the transformer lab.

    The statistic is the partial Spearman rho between each probe item's step-0 predicted R_eq and
    its final norm R_T given its start R_0 (CI: bootstrap over probe items), claimed positive. The
    row is *not decided at this size* unless the run is at least one relaxation time long before
    its window (``long_enough``) and the window passed a stationarity check (``trajectory.stationary``
    is True; a missing check counts as not passed).

    Parameters
    ----------
    res : TransformerLabResult or dict
        The run's result (or its ``to_dict()``).

    Returns
    -------
    ClaimRow
    """
    r = _as_result(res, TransformerLabResult)
    m = r.motion or Motion()
    rho = m.partial_spearman_predicted_vs_final_given_start
    ci = m.partial_spearman_predicted_vs_final_given_start_ci
    what = ("partial Spearman \u03c1(R_eq at step 0, R_T | R_0) over held-out probe items; CI: bootstrap over probe "
            "items")
    tested = (f"{r.model}, {r.optimizer} \u03b7 = {fmt_value(r.lr)}, \u03bb = "
              f"{fmt_value(r.weight_decay)}, {r.steps} steps, {r.probe_items} probe items")
    if rho is None:
        return not_testable_row("theorem1_transformer", f"fewer than 4 probe items with a step-0 R_eq "
                                f"({_or(m.n_with_prediction, 0)} of {r.probe_items})", what=what,
                                tested_on=tested)
    relax = r.relaxation_steps
    stationary = (r.trajectory or TrajectoryCheck()).stationary
    need = (f"a run of at least {math.ceil(relax)} steps before its measurement window whose norms pass the "
            "stationarity check (normscope lab --encoder transformer --steps N)" if relax else
            "a run with a positive radial decay (no relaxation time exists without one)")
    if not r.long_enough:
        gate = Gate(False, f"{r.steps} steps is shorter than one relaxation time "
                           f"({fmt_value(relax)} steps)" if relax else "no relaxation time (no radial decay)", need)
    elif stationary is not True:
        gate = Gate(False, "the window's norms failed the stationarity check" if stationary is False
                    else "no stationarity check of the window", need)
    else:
        gate = Gate(True)
    j = judge(SINGLE_RUN_CLAIM, rho, ci, gate=gate)
    notes = []
    frac, fc = r.fraction_moved_toward_req, m.fraction_moved_toward_common_target
    if frac is not None:
        notes.append(f"{m.n_toward} of {m.n_decided} items ({frac:.0%}) moved toward their step-0 R_eq"
                     + (f" ({fc:.0%} toward a common target, the median R_eq)" if fc is not None else ""))
    r0, rt, req = (None if s is None else s.median for s in (m.r0, m.r_final, m.r_eq0))
    if None not in (r0, rt, req):
        notes.append(f"the median norm went from {r0:.4g} to {rt:.4g} against a median step-0 R_eq of {req:.4g}")
    return claim_row("theorem1_transformer", measured=rho, ci=ci, judged=j, n=m.n_partial, tested_on=tested,
                     claim=SINGLE_RUN_CLAIM,
                     label="partial Spearman \u03c1(R_eq, R_T | R_0)",
                     statistic="transformer lab: partial Spearman rho(R_eq0, R_T | R_0)", what=what,
                     needs=gate.needs if not gate.passed else "",
                     details={"relaxation time (steps)": relax, "long enough": r.long_enough,
                              "stationary window": stationary,
                              "fraction moved toward R_eq": frac, "fraction toward a common target": fc},
                     note="; ".join(notes))


#: Largest relative per-step displacement sqrt(<||Delta||^2> / <R^2>) of the median probe item for which the probe's
#: expansion in eta (E6)-(E8) holds (third-order terms ~ STEP_TOL^3 << c): the step-size gate of the per-item row.
STEP_TOL = 0.05
#: Largest |s_pred / s_obs - 1| of the decayed scale that counts as (E2) holding (the free table's gate, section 7).
SCALE_TOL = 0.05
#: Fewest time blocks (one per relaxation unit) behind the scale's CI for the row to be decided: a bootstrap over
#: fewer independent blocks gives no usable interval.
MIN_SCALE_BLOCKS = 4
#: the slopes of log s on log lambda the scale row compares with (stated before the scaled runs)
SCALE_SLOPES = {"sgd": -0.25, "adamw": -0.5}


def slope_tolerance(scaling_factors) -> float:
    """The equivalence margin of a lambda-scaling slope: the largest slope error that keeps the scale predicted at
    every lambda of the design's series within :data:`SCALE_TOL` of the base run's, ``ln(1 + SCALE_TOL) / max |ln f|``
    over the lambda factors ``f`` (0.0704 for factors 1/2 and 2). A slope "matches" when its whole CI lies within
    the margin of the stated exponent (an equivalence test, as the size rule of every row), not when the CI happens
    to contain the exponent: a CI a few thousandths wide excludes any exponent that a second-order effect moves.
    """
    span = max((abs(math.log(float(f))) for f in scaling_factors or () if float(f) > 0), default=math.log(2.0))
    return math.log(1.0 + SCALE_TOL) / span


def _design_what(r: DecisiveResult, base: DecisiveRun) -> str:
    cfg = (r.encoder or DecisiveEncoder()).config or EncoderConfig()
    return (f"a {_or(cfg.hidden, '?')}-wide BERT trained with SGD "
            f"(eta={_f(base.eta, 'g')}, lambda={_f(base.lam, '.4g')}, decay on {r.decay_mask})")


def _time_part(base: DecisiveRun) -> str:
    relax, steps = base.relaxation_steps, base.steps
    unit = base.relaxation_unit or "1/(4 eta lambda_rad)"
    if not (steps and relax):
        return "relaxation unit unknown"
    burn = base.burn_in or 0
    return (f"{steps:,} steps = {steps / relax:.3g} relaxation units {unit} of {relax:.0f} steps (window after "
            f"{burn / relax:.3g} units)")


def _scale_gate(base: DecisiveRun, needs: str) -> Gate:
    """Whether the SGD base run's scale can decide the row: not collapsed, stationary (its replicates too), and a
    window of at least :data:`MIN_SCALE_BLOCKS` blocks."""
    sc = base.scale
    st = sc.stationarity or ScaleStationarity()
    moving = [x.name for x in base.replicates or [] if x.scale_label != "stationary"]
    if base.label == "collapsed":
        return Gate(False, "the SGD base run collapsed", needs)
    if st.label != "stationary":
        return Gate(False, "the SGD base run's scale ||theta_D|| is not stationary", needs)
    if moving:
        return Gate(False, f"the scale of {plural(len(moving), 'replicate')} of the SGD base run is not stationary "
                           f"({', '.join(moving)})", needs)
    if (sc.n_blocks or 0) < MIN_SCALE_BLOCKS:
        return Gate(False, f"the SGD base run's window is {_f(base.window_units)} relaxation units long: its CI "
                           f"rests on {sc.n_blocks} blocks, fewer than {MIN_SCALE_BLOCKS} independent ones", needs)
    return Gate(True)


def _scale_conditions(r: DecisiveResult) -> tuple[dict, list[str]]:
    """The scale row's further conditions (the lambda-scaling slopes within :func:`slope_tolerance`, the no-decay
    control growing, AdamW failing the SGD form), each True / False / None (not measured), and a note on each."""
    conds, notes = {}, []
    tol = slope_tolerance(r.scaling_factors or (0.5, 2.0))
    for opt, e in SCALE_SLOPES.items():
        series = r.scaling_of(opt)
        f = series.scale_fit or ScalingFit()
        sci = f.ci
        ok = (bool(e - tol <= sci[0] and sci[1] <= e + tol) if sci and None not in sci else None)
        if series.scale_all_stationary is False:  # a slope between drifting runs is not the equilibrium's slope
            ok = None
            moving = [x.name for x in series.runs or [] if x.scale_label != "stationary"]
            notes.append(f"{opt} slope not judged: the scale of {plural(len(moving), 'run')} of its lambda series "
                         f"({', '.join(moving)}) is not stationary")
        conds[f"{opt} slope of log s on log lambda within {e:g} +- {tol:.3f} (its CI; its runs' scale stationary)"] = ok
        if _given(series.scale_fit):
            ps = series.scale_predicted_slope
            notes.append(f"{opt} slope {f.slope:.3f} {_ci(sci)} vs {e:g} (margin +-{tol:.3f}; the CI "
                         f"{'contains' if series.prediction_in_ci else 'excludes'} {e:g} itself"
                         + (f"; the runs' own (E2) predictions give {ps:.3f}: the heat depends on lambda"
                            if ps is not None and opt != "adamw" and abs(ps - e) > 0.005 else "") + ")")
    nd = (r.nodecay or NoDecay()).scale
    conds["no-decay control: s grows"] = nd.grew if nd is not None else None
    if _given(nd):
        notes.append(f"no decay: s RMS last / first quarter of the steps {nd.ratio:.4f}, grew in {nd.fraction_of_steps_grew:.1%} of steps")
    ad = r.base_run("adamw").scale
    aci = ad.abs_rel_error_ci if ad is not None else None
    conds[f"AdamW fails the SGD form (|rel. error| CI above {SCALE_TOL:g})"] = (bool(aci[0] > SCALE_TOL) if aci else None)
    if _given(ad):
        notes.append(f"AdamW, SGD form: |rel. error| {_f(ad.abs_rel_error)} {_ci(aci)}")
    return conds, notes


def transformer_claim_row(d, *, full_command: str = "") -> ClaimRow:
    """Row ``theorem1_transformer`` of the decisive design: the theorem's own conditions, on the decayed group theta_D.

    theta_D (the last LayerNorm's gain and bias) is exactly scale invariant under the cosine loss, so it is a free
    vector: (E1) and (E2) hold for its norm s = ||theta_D|| (:mod:`normscope.lab.decisive_scale`). The statistic is
    ``|s_pred / s_obs - 1|`` of the SGD base run, s_pred from (E2) with the window's own gradients and no fitted
    constant, CI over time blocks of the window; with replicates of the base run on other batch seeds, the mean over
    the runs with a CI over seeds and blocks (:func:`~normscope.lab.decisive_scale.scale_over_seeds`), and every
    replicate's scale must pass the stationarity rule too; size at most :data:`SCALE_TOL`. A reproduction also needs: the
    lambda-scaling slope of s equal to -1/4 (SGD) and -1/2 (AdamW) within :func:`slope_tolerance` (its whole CI inside
    the margin: the 5 % size rule carried over the design's lambda series), the no-decay control's scale growing,
    and AdamW failing the SGD form (the CI of its |rel. error| above :data:`SCALE_TOL`); a failed one gives
    ``inconclusive`` with the reason. *Not decided at this size* unless the SGD base run did not collapse and its
    scale passed the 3 % stationarity rule after the arrival (window >= 1 relaxation unit into the run) over a window
    of at least :data:`MIN_SCALE_BLOCKS` relaxation units (the CI's independent blocks). A result
    without a theta_D record (the first, batch-replaying design) is *not decided*.

    Parameters
    ----------
    d : DecisiveResult or dict
        The design's result (or its :meth:`~normscope.lab.result.DecisiveResult.to_dict`).
    full_command : str
        The command that runs the full design (what would decide a row that is not decided).

    Returns
    -------
    ClaimRow
    """
    key = "theorem1_transformer"
    r = _as_result(d, DecisiveResult)
    base = r.base_run("sgd")
    sc = base.scale
    seeds = base.scale_seeds if _given(base.scale_seeds) else None
    testable = sc is not None and sc.abs_rel_error is not None
    over_seeds = testable and seeds is not None and (seeds.n_seeds or 0) >= 2  # the base run and its replicates
    if over_seeds:
        ci_words = (f"the mean over {seeds.n_seeds} runs on different batch seeds (the base run and "
                    f"{plural(len(base.replicates or []), 'replicate')} from the same start); CI: {seeds.resamples}")
    else:
        ci_words = f"CI: {(sc.resamples if sc is not None else None) or 'time blocks of the window'}"
    what = (f"|s_pred / s_obs - 1| of the decayed scale s = ||theta_D|| of {_design_what(r, base)}; s_pred^4 = "
            "eta^2 <||g_D||^2 s^2> / (2c) (E2) from the window's own gradients, no fitted constant; s_obs the time-RMS "
            f"of s over the window; {ci_words}")
    tested = f"the '{r.design}' decisive design, {_time_part(base)}"
    needs = f"a design whose SGD base run's scale passes the stationarity rule ({full_command or 'the full design'})"
    if not testable:
        return not_testable_row(key, "this result has no record of theta_D (a design before issue 35, whose runs "
                                "replayed the pre-training batches)", what=what, tested_on=tested,
                                verdict="not decided at this size", needs=needs)
    stat, ci = (seeds.abs_rel_error, seeds.abs_rel_error_ci) if over_seeds else (sc.abs_rel_error, sc.abs_rel_error_ci)
    st = sc.stationarity or ScaleStationarity()
    gate = _scale_gate(base, needs)
    conds, notes = _scale_conditions(r)
    failed = [k for k, v in conds.items() if v is not True]
    e1 = sc.e1 or ScaleE1()
    notes.insert(0, f"s observed {_f(sc.s_observed, '.4g')}, predicted {_f(sc.s_predicted, '.4g')} "
                    f"(rel. error {_f(sc.rel_error, '+.3%')} {_ci(sc.rel_error_ci, '+.3%')}); (E1): max |cos(theta_D, "
                    f"g_D)| {_f(e1.max_abs_cos)}, window balance {_f(e1.balance, '.4f')}")
    if over_seeds:
        per = ", ".join(f"{x.rel_error:+.2%}" for x in seeds.per_seed or [])
        notes.insert(1, f"over {seeds.n_seeds} batch seeds: rel. error {_f(seeds.rel_error, '+.3%')} "
                        f"{_ci(seeds.rel_error_ci, '+.3%')} (per seed {per}; between-seed SD "
                        f"{_f(seeds.between_seed_sd, '.3%')})")
    if failed:
        notes.append("not met: " + "; ".join(f"{k} ({'not measured or not judged' if conds[k] is None else 'no'})"
                                             for k in failed))
    if base.label == "collapsed" or st.reasons:
        notes.append("why not stationary: " + "; ".join((base.reasons if base.label == "collapsed" else
                                                        st.reasons) or []))
    j = judge(key, stat, ci, gate=gate, conditions_met=not failed)
    return claim_row(key, measured=stat, ci=ci, judged=j, n=sc.window_steps, what=what,
                     label="|s_pred / s_obs - 1| (theta_D)", tested_on=tested, note="; ".join(notes),
                     statistic="transformer lab (decisive): |s_pred / s_obs - 1| of theta_D",
                     beside=f"rel. error {_f((seeds or sc).rel_error, '+.2%')}",
                     needs=gate.needs if not gate.passed else "",
                     details={"tolerance": SCALE_TOL, "conditions": conds,
                              "scale stationarity": sc.stationarity if sc.stationarity is not None else {},
                              "E1": sc.e1 if sc.e1 is not None else {}, "s observed": sc.s_observed,
                              "s predicted": sc.s_predicted, "over seeds": seeds})


def transformer_items_claim_row(d, *, full_command: str = "") -> ClaimRow:
    """Row ``theorem1_transformer_items``: per-item output norms against the per-item prediction (the paper's
    application, outside the theorem's derivation).

    Every item's norm is ``R(x) = s rho(x)``; the factor rho(x) is set by undecayed weights, for which Theorem 1's
    conditions do not hold (the paper says the same of mean-pooled outputs), so this row carries that caveat.
    The statistic is the mean ``|R_eq - R-bar| / R-bar`` of the SGD base run's snapshot prediction with no fitted
    constant (CI over snapshots, batches and items); direction against the permutation null; size at most
    :data:`REL_TOL`. *Not decided at this size* unless (in this order) the base run's items are stationary, the
    step-size gate holds (the median item moves by at most :data:`STEP_TOL` of its norm per step, measured at
    equilibrium; otherwise no number is computed: the probe's expansion does not hold), and the prediction beats a
    constant predictor (every item the geometric mean of R_eq; the CI of the gain over it above 0).

    Parameters
    ----------
    d : DecisiveResult or dict
        The design's result (or its :meth:`~normscope.lab.result.DecisiveResult.to_dict`).
    full_command : str
        The command that runs the full design.

    Returns
    -------
    ClaimRow
    """
    key = "theorem1_transformer_items"
    r = _as_result(d, DecisiveResult)
    base = r.base_run("sgd")
    pred = base.prediction or SnapshotPrediction()
    st = base.stationarity or Stationarity()
    stat, ci = r.mean_abs_rel_error, r.mean_abs_rel_error_ci
    null = (pred.null or PredictionNull()).mean_abs_rel_error or NullStat()
    design = pred.design or PredictionDesign()
    caveat = ("the per-item factor rho(x) = R(x)/||theta_D|| is set by undecayed weights, outside Theorem 1's "
              "derivation (the paper states mean-pooled outputs are not covered)")
    what = (f"mean |R_eq - R-bar| / R-bar over {_or(pred.n_items, r.probe_items)} held-out probe items of "
            f"{_design_what(r, base)}; R_eq from (E7) with c = eta lambda_rad (E4), no fitted constant, "
            f"{_or(design.snapshots, '?')} snapshots x {_or(design.batches, '?')} fresh batches; CI over snapshots, "
            "batches and items; direction against a permutation null shuffling the R-free statistics across items; "
            f"caveat: {caveat}")
    tested = f"the '{r.design}' decisive design, {_time_part(base)}"
    need_run = f"a run whose SGD base run passes every stationarity check ({full_command or 'the full design'})"
    step = base.relative_step
    if stat is None or ci is None or None in ci:
        return not_testable_row(key, "the decisive design gave no prediction with a CI "
                                f"(SGD base run: {base.label or 'not run'})", what=what, tested_on=tested)
    if step is None or step > STEP_TOL:
        return not_testable_row(key, f"step-size gate: the median item moves {_f(step)} of its norm per step at "
                                f"equilibrium (allowed {STEP_TOL:g}); no per-item prediction is judged", what=what,
                                tested_on=tested, verdict="not decided at this size",
                                note="the probe's expansion in eta (E6)-(E8) does not hold for such steps",
                                needs="a setting whose items move by at most 0.05 of their norm per step (smaller eta)")
    sd, sci = pred.stats or PredictionStats(), pred.ci or PredictionCI()
    gain, gain_ci = sd.gain_over_constant, sci.gain_over_constant
    reasons = "; ".join(base.reasons or []) or "a stationarity check failed"
    if not r.stationary:
        gate = Gate(False, f"the SGD base run's items are {base.label or 'not stationary'}", need_run)
    elif gain_ci is None or None in gain_ci or not gain_ci[0] > 0:
        gate = Gate(False, f"the per-item prediction does not beat a constant predictor (gain {_f(gain)} "
                           f"{_ci(gain_ci)})", "a prediction whose per-item content beats the constant predictor "
                                               "(every item the geometric mean of R_eq)")
    else:
        gate = Gate(True)
    n_perm = int(pred.n_perm or 0)
    direction = permutation_direction(null.p, null.p_above, n_perm, f"the mean |rel. error| {_f(stat)}")
    j = judge(key, stat, ci, direction=direction, gate=gate)
    note = (f"{caveat}; constant predictor: mean |rel. error| {_f(sd.constant_mean_abs_rel_error)}, gain "
            f"{_f(gain)} {_ci(gain_ci)}; relative step {_f(step)} (gate {STEP_TOL:g}); stationarity: mean R^2 moved "
            f"{_f(st.relative_change, '+.2%')} between the window's halves"
            + (f"; why not stationary: {reasons}" if not r.stationary else ""))
    return claim_row(key, measured=stat, ci=ci, judged=j, n=pred.n_items, what=what,
                     label="mean |R_eq - R-bar| / R-bar", tested_on=tested, note=note,
                     statistic="transformer lab (decisive): mean |R_eq - R-bar| / R-bar",
                     beside=f"Pearson(R_eq, R-bar) {_f(r.pearson)} {_ci(r.pearson_ci)}",
                     needs=gate.needs if not gate.passed else "",
                     details={"stationarity checks (SGD base run)": st.checks, "tolerance": REL_TOL,
                              "step-size gate": STEP_TOL, "relative step": step,
                              "constant predictor mean |rel. error|": sd.constant_mean_abs_rel_error,
                              "gain over the constant predictor": gain, "gain CI": gain_ci,
                              "null median of the mean |rel. error|": null.median})
