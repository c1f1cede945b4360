"""What the decisive transformer design feeds the scorecard's ``theorem1_transformer`` row (a pure function).

The row is built from the design's JSON (:meth:`DecisiveResult.to_dict`) only:

- **not decided at this size** unless the SGD base run passed every stationarity check
  (:func:`~normscope.lab.stationarity.classify_window`: not collapsed, mean R^2 stable, window after
  one relaxation time) and the snapshot prediction has its CI: the reasons say which check failed;
- otherwise the statistic is the mean relative error ``|R_eq - R-bar| / R-bar`` of the prediction with
  no fitted constant (:mod:`normscope.lab.prediction`), with its CI over snapshots, batches and items,
  and the permutation null's p (R-free statistics shuffled across items):

  * **reproduced**: the CI lies within :data:`REL_TOL` and the items' own heat and drift predict
    better than other items' (null p < 0.05): size and per-item specificity both shown;
  * **refuted**: the CI lies above :data:`REL_TOL` (the prediction misses by more, confidently);
  * **inconclusive**: the CI straddles :data:`REL_TOL`, or the size agrees but the null is not beaten.

Why 0.10: 10 % in R is 40 % in the heat/decay balance (R ~ (Sigma^2/c)^(1/4)), twice the gate the
free table passes with 32 x 300 probe batches (docs/theory.md section 7A), because a transformer's
heat and drift are measured on fewer, noisier snapshots (section 7 B3).
"""

from __future__ import annotations

import math

__all__ = ["transformer_claim_row", "REL_TOL", "NOT_DECIDED"]

#: largest mean |R_eq - R-bar| / R-bar that counts as the theorem holding in size
REL_TOL = 0.10
#: the verdict when the design's checks fail
NOT_DECIDED = "not decided at this size"


def _f(x, spec=".3g") -> str:
    return "n/a" if x is None else format(float(x), spec)


def _ci(ci) -> str:
    return "n/a" if not ci or None in ci else f"[{ci[0]:.3g}, {ci[1]:.3g}]"


def transformer_claim_row(d: dict) -> dict:
    """The scorecard row of the decisive design (keys of :func:`normscope.report.claims.claim_row` but ``claim`` and ``paper``).

    Parameters
    ----------
    d : dict
        :meth:`normscope.lab.result.DecisiveResult.to_dict`.

    Returns
    -------
    dict
        ``key`` (``theorem1_transformer``), ``measured``, ``ci``, ``verdict`` (``reproduced``,
        ``refuted``, ``inconclusive`` or :data:`NOT_DECIDED`), ``why``, ``n``, ``what``, ``section``,
        ``checks`` (the SGD base run's stationarity checks), ``tolerance``.
    """
    base = (d.get("base") or {}).get("sgd") or {}
    pred = base.get("prediction") or {}
    st = base.get("stationarity") or {}
    stat = d.get("mean_abs_rel_error")
    ci = d.get("mean_abs_rel_error_ci")
    p = d.get("null_p_mean_abs_rel_error")
    design = pred.get("design") or {}
    relax = base.get("relaxation_steps")
    steps = base.get("steps")
    time_part = (f"{steps:,} steps = {steps / relax:.3g} relaxation times 1/(2 eta lambda_rad) of {relax:.0f} steps"
                 if steps and relax else "relaxation time unknown")
    what = (f"mean |R_eq - R-bar| / R-bar over {pred.get('n_items', d.get('probe_items'))} held-out probe items of a "
            f"{(d.get('encoder') or {}).get('config', {}).get('hidden', '?')}-wide BERT trained to stationarity with SGD "
            f"(eta={_f(base.get('eta'), 'g')}, lambda={_f(base.get('lambda'), '.4g')}, mask {d.get('decay_mask')}); R_eq "
            f"from (E7) with c = eta lambda_rad (E4), no fitted constant, {design.get('snapshots', '?')} snapshots x "
            f"{design.get('batches', '?')} fresh batches; CI over snapshots, batches and items; permutation null "
            "shuffling the R-free statistics across items")
    row = {"key": "theorem1_transformer", "section": "transformer_lab", "measured": stat, "ci": ci,
           "n": pred.get("n_items"), "what": what, "checks": st.get("checks"), "tolerance": REL_TOL}
    checks_ok = bool(d.get("stationary")) and stat is not None and ci is not None and None not in ci
    if not checks_ok:
        label = base.get("label") or "not run"
        reasons = "; ".join(base.get("reasons") or []) or "no prediction with a CI"
        row.update(verdict=NOT_DECIDED,
                   why=(f"the SGD base run is {label} ({reasons}); {time_part}; design "
                        f"'{d.get('design')}'" + (f"; at this size the prediction's mean |rel. error| is {_f(stat)} "
                                                   f"{_ci(ci)}, reported but not a verdict" if stat is not None else "")))
        return row
    lo, hi = float(ci[0]), float(ci[1])
    null_med = ((pred.get("null") or {}).get("mean_abs_rel_error") or {}).get("median")
    pear = d.get("pearson")
    tail = (f"; Pearson(R_eq, R-bar) {_f(pear)} {_ci(d.get('pearson_ci'))}; the null (other items' R-free statistics) "
            f"gives a median mean |rel. error| of {_f(null_med)}, p = {_f(p)}; stationary: mean R^2 moved "
            f"{_f(st.get('relative_change'), '+.2%')} between the window's halves, loss {_f(st.get('loss_mean'))} vs chance "
            f"{_f(st.get('chance_loss'))}, held-out accuracy {_f(st.get('accuracy'))}; {time_part}")
    beats_null = p is not None and math.isfinite(p) and p < 0.05
    if hi <= REL_TOL and beats_null:
        verdict, why = "reproduced", (f"the 95% CI {_ci(ci)} of the mean |rel. error| lies within {REL_TOL:g} and the "
                                      f"items' own heat and drift predict better than other items' (p = {_f(p)})")
    elif lo > REL_TOL:
        verdict, why = "refuted", f"the 95% CI {_ci(ci)} of the mean |rel. error| lies above {REL_TOL:g}"
    elif hi <= REL_TOL:
        verdict, why = "inconclusive", (f"the 95% CI {_ci(ci)} lies within {REL_TOL:g}, but other items' heat and drift "
                                        f"predict as well (permutation p = {_f(p)}): agreement in size, not per item")
    else:
        verdict, why = "inconclusive", f"the 95% CI {_ci(ci)} of the mean |rel. error| includes {REL_TOL:g}"
    row.update(verdict=verdict, why=why + tail)
    return row
