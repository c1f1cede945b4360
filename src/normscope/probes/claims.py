"""Scorecard rows of the probe's claims (heat, drift, Theorem 1's balance) from a probe result.

Pure functions of the typed :class:`~normscope.probes.result.ProbeResult` (its attributes; a ``normscope probe
--json`` dict is read back with :meth:`~normscope.results.StageResult.from_dict`); the verdict rules are
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

from collections.abc import Mapping

from normscope.claims import CLAIMS, ClaimRow, Gate, claim_row, fmt_value, judge, not_testable_row, permutation_direction
from normscope.probes.result import Balance, BalanceNull, BalanceP, BalanceStats, NullSummary, ProbeCorrelation, ProbeResult
from normscope.stats import p_text
from normscope.values import Interval

__all__ = ["probe_claims", "design_gate", "SIGN_STABLE_ITEMS", "SIGN_STABLE_BATCHES", "NEGLIGIBLE_HEAT_SHARE"]

#: The smallest probe design whose headline signs were stable in >= 95 % of resamples on
#: all-MiniLM-L6-v2 (docs/probe.md); the report's full sizes.
SIGN_STABLE_ITEMS = 500
SIGN_STABLE_BATCHES = 16
#: Below this median heat share of the balance, R_eq's ranks are drift's ranks.
NEGLIGIBLE_HEAT_SHARE = 0.05

_SRC = "95% CI over batches and items (two-stage bootstrap)"


def _result(result: ProbeResult | Mapping) -> ProbeResult:
    """The typed result (a ``--json`` dict read back)."""
    return result if isinstance(result, ProbeResult) else ProbeResult.from_dict(dict(result))


def design_gate(result: ProbeResult | Mapping) -> Gate:
    """Passed when the probe has at least the sign-stable design (P items, K batches)."""
    res = _result(result)
    p, k = res.n_items or 0, res.batches or 0
    if p >= SIGN_STABLE_ITEMS and k >= SIGN_STABLE_BATCHES:
        return Gate(True)
    return Gate(False, f"P = {p} items, K = {k} batches is below the sign-stable design (P = {SIGN_STABLE_ITEMS}, "
                       f"K = {SIGN_STABLE_BATCHES})",
                f"a probe of at least {SIGN_STABLE_ITEMS} items and {SIGN_STABLE_BATCHES} batches (the full report, or "
                f"normscope probe ITEMS --batches {SIGN_STABLE_BATCHES})")


def _pearson_ci(c: ProbeCorrelation) -> Interval | None:
    return c.ci.pearson if c.ci is not None else None


def _spearman_ci(c: ProbeCorrelation) -> Interval | None:
    return c.ci.spearman if c.ci is not None else None


def _adamw(res: ProbeResult) -> str:
    opt = str(res.training_value("optimizer") or "")
    return opt if opt.lower().startswith("adam") else ""


def _known(ci: Interval | None) -> bool:
    return ci is not None and ci.known


def _fmt_ci(ci: Interval | None) -> str:
    if not _known(ci):
        return "[n/a]"
    return f"[{fmt_value(ci.lo, sign=True)}, {fmt_value(ci.hi, sign=True)}]"


def probe_claims(result: ProbeResult | Mapping) -> list[ClaimRow]:
    """Rows ``corr_norm_heat``, ``corr_norm_drift``, ``req_predicts_norm`` of a probe.

    Parameters
    ----------
    result : ProbeResult or mapping
        The probe's result (``n_items``, ``batches``, the correlation blocks, ``balance``, ``training``,
        ``model``); a mapping is its :meth:`~normscope.results.StageResult.to_dict`.

    Returns
    -------
    list of ClaimRow
        :func:`normscope.claims.claim_row` rows.
    """
    res = _result(result)
    design = design_gate(res)
    opt = _adamw(res)
    adam_note = (f"trained with {opt}: the SGD form of Theorem 1 is not expected to hold quantitatively "
                 "(docs/theory.md C3)") if opt else ""
    tested = f"{res.model}, {res.n_items} items, K = {res.batches} batches"
    rows = []

    heat, free = res.corr_norm_heat or ProbeCorrelation(), res.corr_norm_displacement or ProbeCorrelation()
    fci, hci = _spearman_ci(free), _pearson_ci(heat)
    gate = design
    if design.passed and _known(fci) and fci.lo <= 0 <= fci.hi:
        gate = Gate(False, "the R-free statistic's CI includes 0: the raw correlation may be only the R\u00b2 inside "
                           "heat", "an R-free CI that excludes 0 (more probe items and batches)")
    j = judge("corr_norm_heat", free.spearman, fci, size_ci=hci, gate=gate)
    raw = f"size from the raw Pearson r(R, \u03a3\u00b2) {fmt_value(heat.pearson, sign=True)} {_fmt_ci(hci)}"
    rows.append(claim_row(
        "corr_norm_heat", measured=free.spearman, ci=fci, judged=j, n=free.n, beside=raw,
        label="R-free Spearman \u03c1(R, E||a||\u00b2)",
        tested_on=tested, needs=gate.needs if not gate.passed else "",
        statistic="probe: Spearman rho(R, E||a||^2)",
        what=(f"direction: Spearman \u03c1(R, E||a||\u00b2), the R-free displacement (heat = R\u00b2 E||a||\u00b2 without "
              f"its built-in R\u00b2); size: the raw Pearson r(R, \u03a3\u00b2), which the paper's figure measures; {_SRC}"),
        details={"raw Pearson r(R, heat)": heat.pearson, "raw Pearson 95% CI": hci,
                 "raw Spearman rho(R, heat)": heat.spearman,
                 "Spearman rho(R, heat rate S/R^4)": (res.corr_norm_heat_rate or ProbeCorrelation()).spearman},
        note=adam_note))

    drift = res.corr_norm_drift or ProbeCorrelation()
    dci = _pearson_ci(drift)
    j = judge("corr_norm_drift", drift.pearson, dci, gate=design)
    rows.append(claim_row(
        "corr_norm_drift", measured=drift.pearson, ci=dci, judged=j, n=drift.n, tested_on=tested,
        label="Pearson r(R, D~)",
        needs=design.needs if not design.passed else "", statistic="probe: Pearson r(R, drift)",
        beside=f"Spearman {fmt_value(drift.spearman, sign=True)} {_fmt_ci(_spearman_ci(drift))}",
        what=f"Pearson r(R, D~) over the probe items (the paper does not name its coefficient); {_SRC}",
        note=adam_note))

    rows.append(_balance_row(res, design, opt, adam_note, tested))
    return rows


def _vs_null(value, null: NullSummary | None, p_below, n_perm: int) -> str:
    """A balance statistic beside its permutation null (mean, one-sided p below)."""
    if null is None or null == NullSummary():
        return fmt_value(value)
    return f"{fmt_value(value)} (null mean {fmt_value(null.mean)}, {p_text(p_below, n_perm)} below)"


def _balance_row(res: ProbeResult | Mapping, design: Gate, opt: str, adam_note: str, tested: str) -> ClaimRow:
    res = _result(res)
    b = res.balance
    what = ("dispersion of the implied decay, mean |q(x)/c - 1| with c = median q (0 when one decay balances every "
            f"item); direction: against the permutation null that shuffles the R-free statistics across items; {_SRC}")
    if b is None or b == Balance():
        return not_testable_row("req_predicts_norm", "the probe summary has no balance test (an older probe)", what=what)
    if b.c_fit is None or b.c_fit <= 0:
        why = (f"the median implied decay q is {fmt_value(b.c_fit)}, not positive: no single positive decay "
               "balances the median item, so Theorem 1 predicts no finite norm")
        if not design.passed:
            return not_testable_row("req_predicts_norm", design.reason, what=what, tested_on=tested, needs=design.needs,
                                    verdict=design.verdict, note=why)
        return not_testable_row("req_predicts_norm", why, what=what, tested_on=tested)
    st, null = b.statistics or BalanceStats(), b.null or BalanceNull()
    below, above = b.p_below or BalanceP(), b.p_above or BalanceP()
    dci = b.ci.dispersion if b.ci is not None else None
    n_perm = int(b.n_perm or 0)
    pb, pa = below.dispersion, above.dispersion
    direction = permutation_direction(pb, pa, n_perm, f"the dispersion {fmt_value(st.dispersion)}")
    gate = design
    if design.passed and opt:
        bound = CLAIMS["req_predicts_norm"].size.high
        where = ("wholly above" if _known(dci) and dci.lo > bound else
                 "wholly within" if _known(dci) and dci.hi <= bound else "straddling")
        null_words = {"reproduced": "below its permutation null", "refuted": "above its permutation null"}.get(
            direction[0], "not distinguishable from its permutation null")
        gate = Gate(False, f"outside the claim's scope: {opt} is outside the SGD form of Theorem 1 (docs/theory.md "
                           f"C3); measured mean |q/c - 1| {fmt_value(st.dispersion)} {_fmt_ci(dci)}, {where} "
                           f"the SGD form's {fmt_value(bound)}, {null_words}",
                    "an SGD-trained checkpoint", verdict="not testable here")
    j = judge("req_predicts_norm", st.dispersion, dci, direction=direction, gate=gate, adamw=bool(opt))
    share = st.heat_share
    notes = [f"share of items with q < 0: "
             f"{_vs_null(st.share_negative_q, null.share_negative_q, below.share_negative_q, n_perm)}",
             f"mean |R_eq - R| / R: "
             f"{_vs_null(st.mean_abs_rel_error, null.mean_abs_rel_error, below.mean_abs_rel_error, n_perm)}"]
    req = res.corr_req_norm or ProbeCorrelation()
    if share is not None:
        same = share < NEGLIGIBLE_HEAT_SHARE
        notes.append(f"heat is a median {share:.2%} of the balance" + (
            f"; so R_eq ranks the items as drift does, and Spearman \u03c1(R_eq, R) = "
            f"{fmt_value(req.spearman, sign=True)} is the drift row's statistic again: it gets no verdict here"
            if same else ""))
    if adam_note:
        notes.append(adam_note)
    return claim_row(
        "req_predicts_norm", measured=st.dispersion, ci=dci, judged=j, n=b.n_items,
        label="mean |q/c \u2212 1|",
        tested_on=tested, needs=design.needs if not design.passed else "",
        statistic="probe: mean |q/c - 1| (c = median q) vs permutation null", what=what,
        beside=f"permutation null mean {fmt_value((null.dispersion or NullSummary()).mean)}",
        details={"c = median q (per step)": b.c_fit, "heat share of the balance (median)": share,
                 "share of items with q < 0": st.share_negative_q,
                 "mean |R_eq - R| / R": st.mean_abs_rel_error,
                 "Spearman rho(R_eq, R) (not judged here)": req.spearman,
                 "permutations": n_perm, "p below the null": pb},
        note="; ".join(notes))
