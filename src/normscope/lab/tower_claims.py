"""Scorecard row ``ambiguity_heat_lab`` of the frozen-tower arm (``normscope lab --encoder tower``;
re-exported by :mod:`normscope.lab.claims`).

Mean |R_eq - R-bar| / R-bar of free WordNet noun vectors trained against a frozen tower's gloss embeddings, with no
fitted constant; size at most :data:`GATE_REL` (the free table's gate), the whole CI; *not decided at this size*
unless the SGD window is stationary; ``reproduced`` also needs the heat-permutation null beaten, ambiguity to order
the heat, Pearson >= 0.95 and every control to miss as it should.
"""

from __future__ import annotations

from normscope.claims import ClaimRow, Gate, claim_row, judge, not_testable_row
from normscope.lab._rows import _as_result, _ci, _f
from normscope.lab.decisive_values import Stationarity
from normscope.lab.tower_result import TowerLabResult, TowerNull

__all__ = ["tower_claim_row", "GATE_REL"]


def _tower_conditions(r: TowerLabResult) -> tuple[bool, list[str]]:
    """Whether the frozen-tower row's further conditions hold, and one phrase per condition."""
    out = []
    null = r.null or TowerNull()
    p = null.p
    ok = p is not None and p < 0.05
    out.append(f"the nouns' own heat predicts better than another noun's (null median {_f(null.median)}, "
               f"p {_f(p, '.2g')}, one-sided)" if ok else
               f"the prediction does not beat the heat-permutation null (p {_f(p, '.2g')})")
    rho, rho_ci = r.spearman_heat_senses, r.spearman_heat_senses_ci
    good = bool(rho_ci and rho_ci[0] is not None and rho_ci[0] > 0)
    ok &= good
    out.append(f"ambiguity {'orders' if good else 'does not order'} the heat (Spearman(heat, senses) {_f(rho)} "
               f"{_ci(rho_ci)})")
    pr = r.pearson
    good = pr is not None and pr >= 0.95
    ok &= good
    out.append(f"Pearson(R_eq, R-bar) {_f(pr)} {'>=' if good else '<'} 0.95")
    ctl = r.controls or {}
    checks = {
        "adamw": lambda c: (c.mean_abs_rel_error_sgd_form_ci or [0])[0] > GATE_REL,
        "momentum": lambda c: (c.mean_abs_rel_error_sgd_form_ci or [0])[0] > GATE_REL,
        "nodecay": lambda c: c.share_grown == 1.0 and not c.stationary,
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
        m = c.mean_growth if name == "nodecay" else c.median_rel_error_sgd_form
        text = words[name].format(m=_f(m, "+.1%"), g=_f(c.share_grown, ".0%"))
        out.append(text + ("" if good else " (the control does not fail as it must)"))
    return bool(ok), out


#: The frozen-tower row's size bound (the claim's ``Size``).
GATE_REL = 0.05


def tower_claim_row(d) -> ClaimRow:
    """Row ``ambiguity_heat_lab`` of the frozen-tower arm (a pure function of the arm's result).

    Parameters
    ----------
    d : TowerLabResult or dict
        The arm's result (or its ``to_dict()``): ``mean_abs_rel_error`` and its CI (nouns and
        probe-batch blocks resampled), ``null``, ``stationary``, ``stationarity``, ``pearson``,
        ``spearman_heat_senses`` (+ CI), ``controls``.

    Returns
    -------
    ClaimRow
        *Not decided at this size* unless the SGD window is stationary;
        otherwise the size (no direction is claimed): ``refuted`` when the whole CI lies above 0.05, ``reproduced``
        when it lies wholly below and the further conditions hold: the heat-permutation null is beaten (one-sided p
        < 0.05), ambiguity orders the heat (Spearman CI above 0), Pearson >= 0.95 and the three controls fail the
        SGD form (AdamW and heavy ball without (E12) miss by more than 0.05, the
        no-decay run's every norm grows and its window is not stationary); otherwise ``inconclusive``.
    """
    r = _as_result(d, TowerLabResult)
    stat, ci = r.mean_abs_rel_error, r.mean_abs_rel_error_ci
    null = r.null or TowerNull()
    st = r.stationarity or Stationarity()
    what = (f"mean |R_eq - R-bar| / R-bar over {r.n_items} WordNet nouns ({(r.n_items or 0) // 4 or '?'} per "
            f"number of senses 1-4), free vectors trained with InfoNCE (tau = {_f(r.tau, 'g')}, B = "
            f"{r.batch_size}) against the frozen {r.model}'s gloss embeddings by SGD (eta = "
            f"{_f(r.lr, 'g')}, lambda = {_f(r.weight_decay, 'g')}); R_eq from (E7) with the heat of "
            f"{r.probe_batches} probe batches at the end, no fitted constant; R-bar the window's time-RMS norm; "
            "CI: bootstrap over nouns and blocks of probe batches; direction against a null giving each noun "
            "another's heat")
    tested = (f"frozen-tower lab ({r.size}): {r.burn_in} + {r.window} steps, relaxation time "
              f"{_f(r.relaxation_steps, '.0f')} steps")
    if stat is None or not ci or None in ci:
        return not_testable_row("ambiguity_heat_lab", "the frozen-tower arm gave no prediction with a CI", what=what,
                                tested_on=tested)
    gate = (Gate(True) if r.stationary else
            Gate(False, "the SGD window is not stationary (" + ("; ".join(st.reasons or []) or "a check failed")
                 + ")", "a longer burn-in (normscope lab --encoder tower --size full)"))
    cond, phrases = _tower_conditions(r)
    j = judge("ambiguity_heat_lab", stat, ci, gate=gate, conditions_met=cond)
    groups = r.groups or []
    by = " / ".join(_f(g.r_obs) for g in groups)
    note = (f"stationarity: mean R moved {_f(r.mean_r_change, '+.2%')} between the window's halves; (E1) "
            f"balance {_f(r.balance, '.4f')}; mean R by senses 1-4: {by}; " + "; ".join(phrases))
    controls = {k: {kk: vv for kk, vv in (v.to_json() if v is not None else {}).items() if kk != "groups"}
                for k, v in (r.controls or {}).items()}
    return claim_row("ambiguity_heat_lab", measured=stat, ci=ci, judged=j, n=r.n_items, what=what,
                     label="mean |R_eq - R-bar| / R-bar", tested_on=tested, note=note,
                     statistic="frozen-tower lab: mean |R_eq - R-bar| / R-bar",
                     beside=f"Pearson(R_eq, R-bar) {_f(r.pearson)} {_ci(r.pearson_ci)}",
                     needs=gate.needs if not gate.passed else "",
                     details={"stationary": r.stationary, "mean R change between halves": r.mean_r_change,
                              "(E1) balance": r.balance, "null median": null.median, "null p": null.p,
                              "Spearman(heat, senses)": r.spearman_heat_senses,
                              "mean R by senses": [g.r_obs for g in groups], "controls": controls,
                              "conditions met": cond})
