"""Scorecard rows of the training labs' claims (verdict rules: :mod:`normscope.claims`).

- ``theorem1_lab``: mean |R_eq - R| / R of a free-table or MLP lab run against the 5 % gate
  (the gate of docs/theory.md section 7), with a bootstrap CI over items; the row names what ran (a free table
  satisfies the theorem's assumptions A1-A3 by construction, so it checks the balance and its
  estimator, not a network).
- ``optimizer_momentum`` / ``optimizer_adamw``: the limits of the SGD form, from lab runs with
  heavy-ball momentum (the SGD formula without the (E12) correction) and AdamW.
- ``theorem1_transformer`` from the decisive design (:func:`transformer_claim_row`, the report's row):
  the mean relative error ``|R_eq - R-bar| / R-bar`` of the prediction with no fitted constant, with
  its CI over snapshots, batches and items. Direction: the items' own heat and drift predict better
  than other items' (one-sided permutation tests, :func:`normscope.claims.permutation_direction`); size:
  at most :data:`REL_TOL`. *Not decided at this size* unless the SGD base run passed every
  stationarity check (not collapsed, mean R^2 stable, window after one relaxation time). Why 0.10:
  10 % in R is 40 % in the heat/decay balance (R ~ (Sigma^2/c)^(1/4)), twice the gate the free table
  passes, because a transformer's heat and drift are measured on fewer, noisier snapshots
  (docs/theory.md section 7).
- the same claim from a single transformer run (:func:`transformer_claim`, ``normscope lab --encoder
  transformer --design single``): the partial Spearman rho(R_eq at step 0, R_T | R_0), a direction
  only; *not decided* unless the run is at least one relaxation time long before its window and the
  window passed a stationarity check.

- ``ambiguity_heat_lab`` from the frozen-tower arm (:func:`tower_claim_row`, ``normscope lab --encoder
  tower``): mean |R_eq - R-bar| / R-bar of free WordNet noun vectors trained against a frozen tower's gloss
  embeddings, with no fitted constant; size at most 0.05 (the free table's gate), the whole CI; *not decided at
  this size* unless the SGD window is stationary; ``reproduced`` also needs the heat-permutation null beaten,
  ambiguity to order the heat, Pearson >= 0.95 and every control to miss as it should.

Each builder is a pure function of a lab result (a :class:`LabResult` /
:class:`TransformerLabResult` or its ``to_dict()``; the per-item errors of a free-table / MLP run
come from its ``items`` table).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from normscope.claims import (CLAIMS, Gate, Size, claim_row, fmt_value, judge, not_testable_row,
                              permutation_direction)

__all__ = ["lab_claim", "optimizer_claim", "transformer_claim", "transformer_claim_row", "tower_claim_row", "ENCODER_NAMES",
           "SHORT_NAMES", "REL_TOL", "SINGLE_RUN_CLAIM"]

#: Largest mean |R_eq - R-bar| / R-bar of the decisive design that counts as the theorem holding in size
#: (the size of ``CLAIMS["theorem1_transformer"]``).
REL_TOL = 0.10
#: The claim as a single transformer run tests it: a direction only (partial Spearman rho).
SINGLE_RUN_CLAIM = dataclasses.replace(CLAIMS["theorem1_transformer"], size=Size())

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


def lab_claim(res, *, n_boot: int, seed: int) -> dict:
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
    gate = res.gate or {}
    others = (res.median_rel_error is not None and abs(res.median_rel_error) <= gate.get("abs_median_rel_error", 0.02)
              and res.pearson is not None and res.pearson >= gate.get("pearson", 0.95))
    j = judge("theorem1_lab", res.mean_abs_rel_error, ci, conditions_met=others)
    return claim_row(
        "theorem1_lab", measured=res.mean_abs_rel_error, ci=ci, judged=j, n=int(rel.size), tested_on=_tested_on(res),
        beside=_ran(res), label="mean |R_eq \u2212 R| / R",
        statistic=f"lab {res.encoder}/{res.optimizer}: mean |rel. error|", what=what + f" ({n_boot} resamples)",
        details={"median relative error (gate |.| <= 0.02)": res.median_rel_error,
                 "Pearson r(R_eq, R) (gate >= 0.95)": res.pearson, "gate passed": bool(gate.get("passed"))},
        note=f"the gate's median and Pearson parts {'hold' if others else 'fail'} (median "
             f"{fmt_value(res.median_rel_error, sign=True)}, Pearson {fmt_value(res.pearson)})")


def optimizer_claim(res, *, n_boot: int, seed: int) -> dict:
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
                f"{'passed' if (res.gate or {}).get('passed') else 'not passed'})")
    return claim_row(key, measured=float(rel.mean()), ci=ci, judged=j, n=int(rel.size), tested_on=_tested_on(res),
                     beside=_ran(res), label="mean |R_eq \u2212 R| / R, SGD formula",
                     statistic=f"lab {res.encoder}/{res.optimizer}: mean |rel. error| of the SGD formula", what=what,
                     details=details, note=note)


def _as_dict(res) -> dict:
    return res.to_dict() if hasattr(res, "to_dict") else dict(res)


def transformer_claim(res) -> dict:
    """Row ``theorem1_transformer`` from the SGD run of the transformer lab.

    The statistic is the partial Spearman rho between each probe item's step-0 predicted R_eq and
    its final norm R_T given its start R_0 (CI: bootstrap over probe items), claimed positive. The
    row is *not decided at this size* unless the run is at least one relaxation time long before
    its window (``long_enough``) and the window passed a stationarity check (``trajectory.stationary``
    is True; a missing check counts as not passed).
    """
    r = _as_dict(res)
    m = r.get("motion") or {}
    rho = m.get("partial_spearman_predicted_vs_final_given_start")
    ci = m.get("partial_spearman_predicted_vs_final_given_start_ci")
    what = ("partial Spearman \u03c1(R_eq at step 0, R_T | R_0) over held-out probe items; CI: bootstrap over probe "
            "items")
    tested = (f"{r.get('model')}, {r.get('optimizer')} \u03b7 = {fmt_value(r.get('lr'))}, \u03bb = "
              f"{fmt_value(r.get('weight_decay'))}, {r.get('steps')} steps, {r.get('probe_items')} probe items")
    if rho is None:
        return not_testable_row("theorem1_transformer", f"fewer than 4 probe items with a step-0 R_eq "
                                f"({m.get('n_with_prediction', 0)} of {r.get('probe_items')})", what=what,
                                tested_on=tested)
    relax = r.get("relaxation_steps")
    stationary = (r.get("trajectory") or {}).get("stationary")
    need = (f"a run of at least {math.ceil(relax)} steps before its measurement window whose norms pass the "
            "stationarity check (normscope lab --encoder transformer --steps N)" if relax else
            "a run with a positive radial decay (no relaxation time exists without one)")
    if not r.get("long_enough"):
        gate = Gate(False, f"{r.get('steps')} steps is shorter than one relaxation time "
                           f"({fmt_value(relax)} steps)" if relax else "no relaxation time (no radial decay)", need)
    elif stationary is not True:
        gate = Gate(False, "the window's norms failed the stationarity check" if stationary is False
                    else "no stationarity check of the window", need)
    else:
        gate = Gate(True)
    j = judge(SINGLE_RUN_CLAIM, rho, ci, gate=gate)
    notes = []
    frac, fc = r.get("fraction_moved_toward_req"), m.get("fraction_moved_toward_common_target")
    if frac is not None:
        notes.append(f"{m.get('n_toward')} of {m.get('n_decided')} items ({frac:.0%}) moved toward their step-0 R_eq"
                     + (f" ({fc:.0%} toward a common target, the median R_eq)" if fc is not None else ""))
    r0, rt, req = ((m.get(k) or {}).get("median") for k in ("r0", "r_final", "r_eq0"))
    if None not in (r0, rt, req):
        notes.append(f"the median norm went from {r0:.4g} to {rt:.4g} against a median step-0 R_eq of {req:.4g}")
    return claim_row("theorem1_transformer", measured=rho, ci=ci, judged=j, n=m.get("n_partial"), tested_on=tested,
                     claim=SINGLE_RUN_CLAIM,
                     label="partial Spearman \u03c1(R_eq, R_T | R_0)",
                     statistic="transformer lab: partial Spearman rho(R_eq0, R_T | R_0)", what=what,
                     needs=gate.needs if not gate.passed else "",
                     details={"relaxation time (steps)": relax, "long enough": r.get("long_enough"),
                              "stationary window": stationary,
                              "fraction moved toward R_eq": frac, "fraction toward a common target": fc},
                     note="; ".join(notes))


def _f(x, spec=".3g") -> str:
    return "n/a" if x is None else format(float(x), spec)


def _ci(ci) -> str:
    return "n/a" if not ci or None in ci else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


def transformer_claim_row(d: dict, *, full_command: str = "") -> dict:
    """Row ``theorem1_transformer`` of the decisive design (a pure function of its JSON).

    Parameters
    ----------
    d : dict
        :meth:`normscope.lab.result.DecisiveResult.to_dict` (``base``, ``mean_abs_rel_error`` and its
        CI, ``stationary``, the permutation null of the SGD base run's prediction).
    full_command : str
        The command that runs the full design (what would decide a row that is not decided).

    Returns
    -------
    dict
        A :func:`normscope.claims.claim_row` (``verdict`` one of ``reproduced``, ``refuted``,
        ``inconclusive``, ``not decided at this size``, ``not testable here``), with the SGD base
        run's stationarity checks and :data:`REL_TOL` in ``details``.
    """
    base = (d.get("base") or {}).get("sgd") or {}
    pred = base.get("prediction") or {}
    st = base.get("stationarity") or {}
    stat, ci = d.get("mean_abs_rel_error"), d.get("mean_abs_rel_error_ci")
    null = (pred.get("null") or {}).get("mean_abs_rel_error") or {}
    design = pred.get("design") or {}
    relax, steps = base.get("relaxation_steps"), base.get("steps")
    time_part = (f"{steps:,} steps = {steps / relax:.3g} relaxation times 1/(2 eta lambda_rad) of {relax:.0f} steps"
                 if steps and relax else "relaxation time unknown")
    what = (f"mean |R_eq - R-bar| / R-bar over {pred.get('n_items', d.get('probe_items'))} held-out probe items of a "
            f"{(d.get('encoder') or {}).get('config', {}).get('hidden', '?')}-wide BERT trained to stationarity with SGD "
            f"(eta={_f(base.get('eta'), 'g')}, lambda={_f(base.get('lambda'), '.4g')}, mask {d.get('decay_mask')}); R_eq "
            f"from (E7) with c = eta lambda_rad (E4), no fitted constant, {design.get('snapshots', '?')} snapshots x "
            f"{design.get('batches', '?')} fresh batches; CI over snapshots, batches and items; direction against a "
            "permutation null shuffling the R-free statistics across items")
    tested = f"the '{d.get('design')}' decisive design, {time_part}"
    details = {"stationarity checks (SGD base run)": st.get("checks"), "tolerance": REL_TOL,
               "Pearson(R_eq, R-bar)": d.get("pearson"), "Pearson CI": d.get("pearson_ci"),
               "null median of the mean |rel. error|": null.get("median")}
    if stat is None or ci is None or None in ci:
        return not_testable_row("theorem1_transformer", "the decisive design gave no prediction with a CI "
                                f"(SGD base run: {base.get('label') or 'not run'})", what=what, tested_on=tested)
    reasons = "; ".join(base.get("reasons") or []) or "a stationarity check failed"
    gate = (Gate(True) if d.get("stationary") else
            Gate(False, f"the SGD base run is {base.get('label') or 'not stationary'} ({reasons})",
                 f"a run whose SGD base run passes every stationarity check ({full_command or 'the full design'})"))
    n_perm = int(pred.get("n_perm") or 0)
    direction = permutation_direction(null.get("p"), null.get("p_above"), n_perm, f"the mean |rel. error| {_f(stat)}")
    j = judge("theorem1_transformer", stat, ci, direction=direction, gate=gate)
    note = (f"stationarity: mean R^2 moved {_f(st.get('relative_change'), '+.2%')} between the window's halves, loss "
            f"{_f(st.get('loss_mean'))} vs chance {_f(st.get('chance_loss'))}, held-out accuracy {_f(st.get('accuracy'))}")
    return claim_row("theorem1_transformer", measured=stat, ci=ci, judged=j, n=pred.get("n_items"), what=what,
                     label="mean |R_eq - R-bar| / R-bar", tested_on=tested, note=note,
                     statistic="transformer lab (decisive): mean |R_eq - R-bar| / R-bar",
                     beside=f"Pearson(R_eq, R-bar) {_f(d.get('pearson'))} {_ci(d.get('pearson_ci'))}",
                     needs=gate.needs if not gate.passed else "", details=details)


def _tower_conditions(d: dict) -> tuple[bool, list[str]]:
    """Whether the frozen-tower row's further conditions hold, and one phrase per condition."""
    out = []
    null = d.get("null") or {}
    p = null.get("p")
    ok = p is not None and p < 0.05
    out.append(f"the nouns' own heat predicts better than another noun's (null median {_f(null.get('median'))}, "
               f"p {_f(p, '.2g')}, one-sided)" if ok else
               f"the prediction does not beat the heat-permutation null (p {_f(p, '.2g')})")
    rho, rho_ci = d.get("spearman_heat_senses"), d.get("spearman_heat_senses_ci")
    good = bool(rho_ci and rho_ci[0] is not None and rho_ci[0] > 0)
    ok &= good
    out.append(f"ambiguity {'orders' if good else 'does not order'} the heat (Spearman(heat, senses) {_f(rho)} "
               f"{_ci(rho_ci)})")
    pr = d.get("pearson")
    good = pr is not None and pr >= 0.95
    ok &= good
    out.append(f"Pearson(R_eq, R-bar) {_f(pr)} {'>=' if good else '<'} 0.95")
    ctl = d.get("controls") or {}
    checks = {
        "adamw": lambda c: (c.get("mean_abs_rel_error_sgd_form_ci") or [0])[0] > GATE_REL,
        "momentum": lambda c: (c.get("mean_abs_rel_error_sgd_form_ci") or [0])[0] > GATE_REL,
        "nodecay": lambda c: c.get("share_grown") == 1.0 and not c.get("stationary"),
    }
    words = {"adamw": "AdamW: the SGD form misses by {m}", "momentum": "heavy ball without (E12): misses by {m}",
             "nodecay": "no decay: {g} of the norms grew by {m} on average"}
    for name, check in checks.items():
        c = ctl.get(name)
        if c is None:
            ok = False
            out.append(f"control {name} not run")
            continue
        good = bool(check(c))
        ok &= good
        m = c.get("mean_growth") if name == "nodecay" else c.get("median_rel_error_sgd_form")
        text = words[name].format(m=_f(m, "+.1%"), g=_f(c.get("share_grown"), ".0%"))
        out.append(text + ("" if good else " (the control does not fail as it must)"))
    return bool(ok), out


#: The frozen-tower row's size bound (the claim's ``Size``).
GATE_REL = 0.05


def tower_claim_row(d: dict) -> dict:
    """Row ``ambiguity_heat_lab`` of the frozen-tower arm (a pure function of its ``to_dict()``).

    Parameters
    ----------
    d : dict
        :meth:`normscope.lab.tower.TowerLabResult.to_dict`: ``mean_abs_rel_error`` and its CI (nouns and
        probe-batch blocks resampled), ``null``, ``stationary``, ``stationarity``, ``pearson``,
        ``spearman_heat_senses`` (+ CI), ``controls``.

    Returns
    -------
    dict
        A :func:`normscope.claims.claim_row`: *not decided at this size* unless the SGD window is stationary;
        otherwise the size (no direction is claimed): ``refuted`` when the whole CI lies above 0.05, ``reproduced``
        when it lies wholly below and the further conditions hold: the heat-permutation null is beaten (one-sided p
        < 0.05), ambiguity orders the heat (Spearman CI above 0), Pearson >= 0.95 and the three controls fail the
        SGD form (AdamW and heavy ball without (E12) miss by more than 0.05, the
        no-decay run's every norm grows and its window is not stationary); otherwise ``inconclusive``.
    """
    stat, ci = d.get("mean_abs_rel_error"), d.get("mean_abs_rel_error_ci")
    null = d.get("null") or {}
    st = d.get("stationarity") or {}
    what = (f"mean |R_eq - R-bar| / R-bar over {d.get('n_items')} WordNet nouns ({d.get('n_items', 0) // 4 or '?'} per "
            f"number of senses 1-4), free vectors trained with InfoNCE (tau = {_f(d.get('tau'), 'g')}, B = "
            f"{d.get('batch_size')}) against the frozen {d.get('model')}'s gloss embeddings by SGD (eta = "
            f"{_f(d.get('lr'), 'g')}, lambda = {_f(d.get('weight_decay'), 'g')}); R_eq from (E7) with the heat of "
            f"{d.get('probe_batches')} probe batches at the end, no fitted constant; R-bar the window's time-RMS norm; "
            "CI: bootstrap over nouns and blocks of probe batches; direction against a null giving each noun "
            "another's heat")
    tested = (f"frozen-tower lab ({d.get('size')}): {d.get('burn_in')} + {d.get('window')} steps, relaxation time "
              f"{_f(d.get('relaxation_steps'), '.0f')} steps")
    if stat is None or not ci or None in ci:
        return not_testable_row("ambiguity_heat_lab", "the frozen-tower arm gave no prediction with a CI", what=what,
                                tested_on=tested)
    gate = (Gate(True) if d.get("stationary") else
            Gate(False, "the SGD window is not stationary (" + ("; ".join(st.get("reasons") or []) or "a check failed")
                 + ")", "a longer burn-in (normscope lab --encoder tower --size full)"))
    cond, phrases = _tower_conditions(d)
    j = judge("ambiguity_heat_lab", stat, ci, gate=gate, conditions_met=cond)
    groups = d.get("groups") or []
    by = " / ".join(_f(g.get("r_obs")) for g in groups)
    note = (f"stationarity: mean R moved {_f(d.get('mean_r_change'), '+.2%')} between the window's halves; (E1) "
            f"balance {_f(d.get('balance'), '.4f')}; mean R by senses 1-4: {by}; " + "; ".join(phrases))
    return claim_row("ambiguity_heat_lab", measured=stat, ci=ci, judged=j, n=d.get("n_items"), what=what,
                     label="mean |R_eq - R-bar| / R-bar", tested_on=tested, note=note,
                     statistic="frozen-tower lab: mean |R_eq - R-bar| / R-bar",
                     beside=f"Pearson(R_eq, R-bar) {_f(d.get('pearson'))} {_ci(d.get('pearson_ci'))}",
                     needs=gate.needs if not gate.passed else "",
                     details={"stationary": d.get("stationary"), "mean R change between halves": d.get("mean_r_change"),
                              "(E1) balance": d.get("balance"), "null median": null.get("median"), "null p": null.get("p"),
                              "Spearman(heat, senses)": d.get("spearman_heat_senses"),
                              "mean R by senses": [g.get("r_obs") for g in groups],
                              "controls": {k: {kk: vv for kk, vv in (v or {}).items() if kk != "groups"}
                                           for k, v in (d.get("controls") or {}).items()},
                              "conditions met": cond})
