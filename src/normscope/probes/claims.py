"""Scorecard rows of the probe's claims (heat, drift, Theorem 1's balance) from a probe summary dict.

Pure functions of :meth:`ProbeResult.to_dict` (``normscope probe --json``); the verdict rules are
:mod:`normscope.claims`. Three rows, one statistic each:

- ``corr_norm_heat``: the direction is read from the **R-free** statistic, Spearman rho(R,
  E||a||^2) (heat = R^2 E||a||^2 correlates with R by construction); the size from the raw
  Pearson r(R, heat), the statistic the paper's +0.38 measures, shown beside it. When the R-free CI
  includes 0 the row is *not decided*: the raw correlation may be only the R^2 inside heat.
- ``corr_norm_drift``: Pearson r(R, D~) against the paper's -0.58.
- ``req_predicts_norm`` (exploratory: the paper does not claim it): the theorem's own requirement, q(x) = c
  for every item (:mod:`normscope.probes.balance`): the dispersion mean |q/c - 1| (c = median q) against a
  permutation null (direction) and against 0.20 (size). On an AdamW checkpoint the 0.20 of the SGD form
  does not apply: the row is *not testable here* and its reason states the measured dispersion against
  that bound and against the null, as the numbers say it. The rank correlation of R_eq with R is shown in the
  details, not judged: when heat is a negligible share of the balance it ranks items as drift does
  and is the drift row's statistic again.

Every row is *not decided at this size* below the sign-stable design (:data:`SIGN_STABLE_ITEMS`
items, :data:`SIGN_STABLE_BATCHES` batches; docs/probe.md).
"""

from __future__ import annotations

from normscope.claims import CLAIMS, Gate, claim_row, fmt_value, judge, not_testable_row, permutation_direction
from normscope.stats import p_text

__all__ = ["probe_claims", "design_gate", "SIGN_STABLE_ITEMS", "SIGN_STABLE_BATCHES", "NEGLIGIBLE_HEAT_SHARE"]

#: The smallest probe design whose headline signs were stable in >= 95 % of resamples on
#: all-MiniLM-L6-v2 (docs/probe.md); the report's full sizes.
SIGN_STABLE_ITEMS = 500
SIGN_STABLE_BATCHES = 16
#: Below this median heat share of the balance, R_eq's ranks are drift's ranks.
NEGLIGIBLE_HEAT_SHARE = 0.05

_SRC = "95% CI over batches and items (two-stage bootstrap)"


def design_gate(summary: dict) -> Gate:
    """Passed when the probe has at least the sign-stable design (P items, K batches)."""
    p, k = summary.get("n_items") or 0, summary.get("batches") or 0
    if p >= SIGN_STABLE_ITEMS and k >= SIGN_STABLE_BATCHES:
        return Gate(True)
    return Gate(False, f"P = {p} items, K = {k} batches is below the sign-stable design (P = {SIGN_STABLE_ITEMS}, "
                       f"K = {SIGN_STABLE_BATCHES})",
                f"a probe of at least {SIGN_STABLE_ITEMS} items and {SIGN_STABLE_BATCHES} batches (the full report, or "
                f"normscope probe ITEMS --batches {SIGN_STABLE_BATCHES})")


def _ci(block: dict, key: str):
    return ((block or {}).get("ci") or {}).get(key)


def _adamw(summary: dict) -> str:
    opt = str(((summary.get("training") or {}).get("optimizer") or {}).get("value") or "")
    return opt if opt.lower().startswith("adam") else ""


def _fmt_ci(ci) -> str:
    if not ci or None in ci:
        return "[n/a]"
    return f"[{fmt_value(ci[0], sign=True)}, {fmt_value(ci[1], sign=True)}]"


def probe_claims(summary: dict) -> list[dict]:
    """Rows ``corr_norm_heat``, ``corr_norm_drift``, ``req_predicts_norm`` of a probe summary dict.

    Parameters
    ----------
    summary : dict
        :meth:`ProbeResult.to_dict` (``n_items``, ``batches``, the correlation blocks, ``balance``,
        ``training``, ``model``).

    Returns
    -------
    list of dict
        :func:`normscope.claims.claim_row` rows.
    """
    design = design_gate(summary)
    opt = _adamw(summary)
    adam_note = (f"trained with {opt}: the SGD form of Theorem 1 is not expected to hold quantitatively "
                 "(docs/theory.md C3)") if opt else ""
    tested = f"{summary.get('model')}, {summary.get('n_items')} items, K = {summary.get('batches')} batches"
    rows = []

    heat, free = summary.get("corr_norm_heat") or {}, summary.get("corr_norm_displacement") or {}
    fci, hci = _ci(free, "spearman"), _ci(heat, "pearson")
    gate = design
    if design.passed and fci and None not in fci and fci[0] <= 0 <= fci[1]:
        gate = Gate(False, "the R-free statistic's CI includes 0: the raw correlation may be only the R\u00b2 inside "
                           "heat", "an R-free CI that excludes 0 (more probe items and batches)")
    j = judge("corr_norm_heat", free.get("spearman"), fci, size_ci=hci, gate=gate)
    raw = f"size from the raw Pearson r(R, \u03a3\u00b2) {fmt_value(heat.get('pearson'), sign=True)} {_fmt_ci(hci)}"
    rows.append(claim_row(
        "corr_norm_heat", measured=free.get("spearman"), ci=fci, judged=j, n=free.get("n"), beside=raw,
        label="R-free Spearman \u03c1(R, E||a||\u00b2)",
        tested_on=tested, needs=gate.needs if not gate.passed else "",
        statistic="probe: Spearman rho(R, E||a||^2)",
        what=(f"direction: Spearman \u03c1(R, E||a||\u00b2), the R-free displacement (heat = R\u00b2 E||a||\u00b2 without "
              f"its built-in R\u00b2); size: the raw Pearson r(R, \u03a3\u00b2), which the paper's figure measures; {_SRC}"),
        details={"raw Pearson r(R, heat)": heat.get("pearson"), "raw Pearson 95% CI": hci,
                 "raw Spearman rho(R, heat)": heat.get("spearman"),
                 "Spearman rho(R, heat rate S/R^4)": (summary.get("corr_norm_heat_rate") or {}).get("spearman")},
        note=adam_note))

    drift = summary.get("corr_norm_drift") or {}
    dci = _ci(drift, "pearson")
    j = judge("corr_norm_drift", drift.get("pearson"), dci, gate=design)
    rows.append(claim_row(
        "corr_norm_drift", measured=drift.get("pearson"), ci=dci, judged=j, n=drift.get("n"), tested_on=tested,
        label="Pearson r(R, D~)",
        needs=design.needs if not design.passed else "", statistic="probe: Pearson r(R, drift)",
        beside=f"Spearman {fmt_value(drift.get('spearman'), sign=True)} {_fmt_ci(_ci(drift, 'spearman'))}",
        what=f"Pearson r(R, D~) over the probe items (the paper does not name its coefficient); {_SRC}",
        note=adam_note))

    rows.append(_balance_row(summary, design, opt, adam_note, tested))
    return rows


def _balance_row(summary: dict, design: Gate, opt: str, adam_note: str, tested: str) -> dict:
    b = summary.get("balance") or {}
    st, ci = b.get("statistics") or {}, b.get("ci") or {}
    what = ("dispersion of the implied decay, mean |q(x)/c - 1| with c = median q (0 when one decay balances every "
            f"item); direction: against the permutation null that shuffles the R-free statistics across items; {_SRC}")
    if not b:
        return not_testable_row("req_predicts_norm", "the probe summary has no balance test (an older probe)", what=what)
    if b.get("c_fit") is None or b["c_fit"] <= 0:
        why = (f"the median implied decay q is {fmt_value(b.get('c_fit'))}, not positive: no single positive decay "
               "balances the median item, so Theorem 1 predicts no finite norm")
        if not design.passed:
            return not_testable_row("req_predicts_norm", design.reason, what=what, tested_on=tested, needs=design.needs,
                                    verdict=design.verdict, note=why)
        return not_testable_row("req_predicts_norm", why, what=what, tested_on=tested)
    n_perm = int(b.get("n_perm") or 0)
    pb, pa = (b.get("p_below") or {}).get("dispersion"), (b.get("p_above") or {}).get("dispersion")
    direction = permutation_direction(pb, pa, n_perm, f"the dispersion {fmt_value(st.get('dispersion'))}")
    gate = design
    dci = ci.get("dispersion")
    if design.passed and opt:
        bound = CLAIMS["req_predicts_norm"].size.high
        where = ("wholly above" if dci and None not in dci and dci[0] > bound else
                 "wholly within" if dci and None not in dci and dci[1] <= bound else "straddling")
        null_words = {"reproduced": "below its permutation null", "refuted": "above its permutation null"}.get(
            direction[0], "not distinguishable from its permutation null")
        gate = Gate(False, f"outside the claim's scope: {opt} is outside the SGD form of Theorem 1 (docs/theory.md "
                           f"C3); measured mean |q/c - 1| {fmt_value(st.get('dispersion'))} {_fmt_ci(dci)}, {where} "
                           f"the SGD form's {fmt_value(bound)}, {null_words}",
                    "an SGD-trained checkpoint", verdict="not testable here")
    j = judge("req_predicts_norm", st.get("dispersion"), dci, direction=direction, gate=gate, adamw=bool(opt))
    null = b.get("null") or {}
    share = st.get("heat_share")

    def vs_null(name: str) -> str:
        n = null.get(name) or {}
        return (f"{fmt_value(st.get(name))} (null mean {fmt_value(n.get('mean'))}, "
                f"{p_text((b.get('p_below') or {}).get(name), n_perm)} below)") if n else fmt_value(st.get(name))

    notes = [f"share of items with q < 0: {vs_null('share_negative_q')}",
             f"mean |R_eq - R| / R: {vs_null('mean_abs_rel_error')}"]
    req = summary.get("corr_req_norm") or {}
    if share is not None:
        same = share < NEGLIGIBLE_HEAT_SHARE
        notes.append(f"heat is a median {share:.2%} of the balance" + (
            f"; so R_eq ranks the items as drift does, and Spearman \u03c1(R_eq, R) = "
            f"{fmt_value(req.get('spearman'), sign=True)} is the drift row's statistic again: it gets no verdict here"
            if same else ""))
    if adam_note:
        notes.append(adam_note)
    return claim_row(
        "req_predicts_norm", measured=st.get("dispersion"), ci=ci.get("dispersion"), judged=j, n=b.get("n_items"),
        label="mean |q/c \u2212 1|",
        tested_on=tested, needs=design.needs if not design.passed else "",
        statistic="probe: mean |q/c - 1| (c = median q) vs permutation null", what=what,
        beside=f"permutation null mean {fmt_value((null.get('dispersion') or {}).get('mean'))}",
        details={"c = median q (per step)": b.get("c_fit"), "heat share of the balance (median)": share,
                 "share of items with q < 0": st.get("share_negative_q"),
                 "mean |R_eq - R| / R": st.get("mean_abs_rel_error"),
                 "Spearman rho(R_eq, R) (not judged here)": req.get("spearman"),
                 "permutations": n_perm, "p below the null": pb},
        note="; ".join(notes))
