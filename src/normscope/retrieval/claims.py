"""Scorecard rows of the retrieval and calibration claims (verdict rules: :mod:`normscope.claims`).

Pure functions of the typed :class:`~normscope.retrieval.result.RetrievalResult` (its attributes; a
``normscope retrieval --json`` dict, which carries the rows of :func:`retrieval_claims` under ``claims``, is read
back with :meth:`~normscope.results.StageResult.from_dict`), so a user who runs the command on their own dataset
gets the verdicts the report would give:

- ``similarity_gain``: the relative change of nDCG@10, ``mean(scorer)/mean(cosine) - 1``, of
  ``cos/(1 + alpha||d||)`` (``inverse_norm``, alpha fitted on other queries), paired bootstrap CI
  over queries and the paired t-test beside it; direction only (the paper gives its +1.2 to +2.3 %
  for high-frequency words and low-quality samples, not overall);
- ``gain_high_frequency``: the same in the pre-specified stratum of the most frequent queries
  (top quartile of the mean word Zipf frequency), the stratum the claim names, so its own CI and
  unadjusted randomisation p decide (the Holm-adjusted p over all 12 strata is shown beside),
  against the paper's +1.2 to +2.3 %. A CI of zero width (the fitted alpha changes no ranking in the
  stratum: the scorer is cosine there) is *not decided at this size*;
- ``gain_low_quality``: not testable without a per-item quality label;
- ``calibration_discrimination`` (a): the AUROC of the query norm, in its pre-specified direction,
  for "the cosine top-1 is relevant", CI over queries, against 0.5;
- ``calibration_incremental`` (b): the cross-fitted difference of AUROC with and without the norm
  signals (``calibration_incremental`` of the summary: ``{"task", "baseline", "added",
  "auroc_without", "auroc_with", "diff", "ci", "resamples", "folds", "n_queries", "seed"}``);
  ``not testable here`` when the summary has none;
- ``norm_confidence_nauc``: nAUC of nDCG@10 (MTEB's abstention metric) of the query norm, in its
  pre-specified direction, minus that of the best of MTEB's max/std/diff1 on the same queries, paired
  bootstrap CI over queries (``abstention.comparison`` of the summary,
  :func:`normscope.retrieval.abstention.abstention_study`); the row also says whether the norm's nAUC
  lies within, below or above the best baseline's own CI.

:func:`cost_claim` judges ``inference_cost`` from :func:`normscope.retrieval.cost.norm_scoring_cost`.
"""

from __future__ import annotations

from collections.abc import Mapping

from normscope.claims import CLAIMS, ClaimRow, ceiling_gate, claim_row, fmt_value, judge, not_testable_row
from normscope.retrieval.cost import InferenceCost
from normscope.retrieval.result import (Abstention, AbstentionComparison, IncrementalValue, QueryCounts,
                                        RetrievalResult, ScorerEval, SignalCalibration, Strata, StratifierInfo)

__all__ = ["retrieval_claims", "gain_claim", "high_frequency_claim", "discrimination_claim", "incremental_claim",
           "nauc_claim", "cost_claim", "CLAIM_SCORER", "CLAIM_SIGNAL", "HIGH_FREQUENCY_STRATUM"]

#: The scorer the paper's gain claim is about: cos / (1 + alpha ||z||).
CLAIM_SCORER = "inverse_norm"
#: The norm signal of the calibration claim (the query's own norm), in its pre-specified direction.
CLAIM_SIGNAL = "query_norm"
#: The stratum of "high-frequency words": (stratifier, quartile).
HIGH_FREQUENCY_STRATUM = ("query_zipf", 4)

_GAIN_WHAT = ("relative \u0394 nDCG@10 of cos/(1 + \u03b1||d||) vs cosine, mean(scorer)/mean(cosine) - 1; paired "
              "percentile bootstrap CI resampling evaluation queries (\u03b1 fitted on other queries)")


def _gain_what(resamples: str | None) -> str:
    """The gain row's ``what``: the CI's sources of sampling as the run reports them (``ci_resamples``)."""
    if not resamples:
        return _GAIN_WHAT
    return ("relative \u0394 nDCG@10 of cos/(1 + \u03b1||d||) vs cosine, mean(scorer)/mean(cosine) - 1; paired "
            f"percentile bootstrap CI: {resamples}")


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:+.2f} %"


def _unchanged(relative, where: str) -> str:
    """Why a zero-width CI of the relative gain has zero width when the gain is exactly 0: the fitted alpha
    moved no top-10 (the scorer is cosine there); "" otherwise (the shared rule gives its own reason)."""
    return (f"the fitted \u03b1 changes no ranking {where} (the scorer equals cosine there)"
            if relative is not None and float(relative) == 0.0 else "")


def _result(result: RetrievalResult | Mapping) -> RetrievalResult:
    """The typed result (a ``--json`` dict read back)."""
    return result if isinstance(result, RetrievalResult) else RetrievalResult.from_dict(dict(result))


def _eval_queries(res: RetrievalResult) -> int | None:
    return (res.n_queries or QueryCounts()).eval


def _tested(res: RetrievalResult) -> str:
    return (f"{res.model}, {res.dataset_name} '{res.split}' ({_eval_queries(res)} queries), "
            f"fitted on {res.fit_split}")


def _cosine(res: RetrievalResult) -> ScorerEval:
    return (res.scorers or {}).get("cosine") or ScorerEval()


def _ceiling(res: RetrievalResult, *, stratum: bool = False):
    """The ceiling / floor gate of the gain rows from cosine's per-query nDCG@10 counts (None: a summary written
    before they were recorded). ``stratum``: for a row on a subset of the queries, only the all-at-the-ceiling /
    all-at-the-floor cases of the whole set apply (they hold on every subset)."""
    cos = _cosine(res)
    n = _eval_queries(res)
    if cos.ndcg10_at_ceiling is None or n is None:
        return None
    size = CLAIMS["similarity_gain"].size
    return ceiling_gate(cos.ndcg10, cos.ndcg10_at_ceiling, cos.ndcg10_at_floor or 0, int(n),
                        claimed_gain=size.low if size.kind == "range" and not stratum else None)


def _claim_strata(res: RetrievalResult) -> tuple[Strata, list]:
    """The strata and the claim scorer's rows of them."""
    st = res.strata or Strata()
    return st, (st.scorers or {}).get(CLAIM_SCORER) or []


def _alpha_condition(r: ScorerEval) -> tuple[bool | None, str]:
    """Whether the fitted alpha has the paper's sign: cos/(1 + alpha||d||) with alpha > 0 discounts documents with a
    large norm; alpha <= 0 (in any fold) favours them, the opposite mechanism, so a gain cannot reproduce the paper's
    claim. ``(True, "")``, ``(False, why)``, or ``(None, "")`` when no fitted alpha is recorded."""
    p = r.param
    alphas = [x for x in (p if isinstance(p, list) else [p]) if isinstance(x, (int, float))]
    if not alphas:
        return None, ""
    bad = [x for x in alphas if not x > 0]
    if not bad:
        return True, ""
    return False, (f"the fitted \u03b1 ({', '.join(fmt_value(x) for x in alphas)}) is not positive in "
                   f"{len(bad)} of {len(alphas)} {'fit' if len(alphas) == 1 else 'fits'}: it favours documents "
                   "with a large norm, the opposite of the paper's discount, so a gain here is not the paper's effect")


def _sign_judged(sign_ok: bool | None, key: str, estimate, ci, **kw):
    """:func:`~normscope.claims.judge` of a gain row; a gain that would reproduce the claim but was made with the wrong
    sign of alpha (``sign_ok`` False) is inconclusive and its one-line reason says so. The sign changes nothing else:
    a CI that includes 0 keeps its own reason."""
    j = judge(key, estimate, ci, **kw)
    if sign_ok is False and j.verdict == "reproduced":
        j = judge(key, estimate, ci, conditions_met=False, **kw).but(
            reason="a gain, but the fitted \u03b1 favours large-norm documents (the paper discounts them)")
    return j


def gain_claim(summary: RetrievalResult | Mapping) -> ClaimRow:
    """Row ``similarity_gain``: the relative nDCG@10 gain of ``inverse_norm`` over cosine."""
    res = _result(summary)
    r = (res.scorers or {}).get(CLAIM_SCORER)
    if r is None or r == ScorerEval():
        return not_testable_row("similarity_gain", f"the {CLAIM_SCORER} scorer was not run", what=_GAIN_WHAT)
    sign_ok, sign_why = _alpha_condition(r)
    j = _sign_judged(sign_ok, "similarity_gain", r.relative, r.relative_ci, p=r.p_value,
                     degenerate=_unchanged(r.relative, "overall"), gate=_ceiling(res))
    rows = _claim_strata(res)[1]
    sig = [x for x in rows if x.p_holm is not None and x.p_holm < 0.05]
    strata = (f"pre-specified strata: {len(sig)} of {len(rows)} differ from cosine at Holm-adjusted p < 0.05"
              + (" (" + ", ".join(f"{x.stratifier} Q{x.quartile} {_pct(x.relative)}" for x in sig) + ")"
                 if sig else "") if rows else "strata not computed")
    what = _gain_what(r.ci_resamples)
    p = r.param
    param = (f"\u03b1 per fold {', '.join(fmt_value(x) for x in p)}" if isinstance(p, list)
             else f"\u03b1 = {fmt_value(p)}")
    return claim_row("similarity_gain", measured=r.relative, ci=r.relative_ci, judged=j, percent=True,
                     n=_eval_queries(res), what=what, tested_on=_tested(res),
                     statistic=f"retrieval: relative delta nDCG@10 {CLAIM_SCORER} ({res.dataset_name})",
                     beside=f"paired t p = {fmt_value(r.p_value)}", label="relative \u0394 nDCG@10",
                     details={"parameter": param, "nDCG@10 (scorer)": r.ndcg10,
                              "nDCG@10 (cosine)": _cosine(res).ndcg10,
                              "delta nDCG@10": r.delta, "delta 95% CI": r.delta_ci,
                              "p (paired t)": r.p_value, "p (randomisation)": r.p_value_randomization},
                     note="; ".join(x for x in (sign_why, strata) if x))


def high_frequency_claim(summary: RetrievalResult | Mapping) -> ClaimRow:
    """Row ``gain_high_frequency``: the relative gain in the top quartile of query word frequency."""
    res = _result(summary)
    st, rows = _claim_strata(res)
    name, q = HIGH_FREQUENCY_STRATUM
    what = ("relative \u0394 nDCG@10 of cos/(1 + \u03b1||d||) vs cosine in the pre-specified top quartile of the "
            "queries' mean word Zipf frequency; paired percentile bootstrap CI over that quartile's queries")
    row = next((x for x in rows if x.stratifier == name and x.quartile == q), None)
    if row is None or row.relative is None:
        info = (st.stratifiers or {}).get(name) or StratifierInfo()
        return not_testable_row("gain_high_frequency", info.reason or st.reason
                                or "the frequency strata were not computed", what=what)
    if row.ci_resamples:
        what = what.replace("over that quartile's queries", f"in that quartile: {row.ci_resamples}")
    sign_ok, sign_why = _alpha_condition((res.scorers or {}).get(CLAIM_SCORER) or ScorerEval())
    j = _sign_judged(sign_ok, "gain_high_frequency", row.relative, row.relative_ci,
                     degenerate=_unchanged(row.relative, "in this stratum"), gate=_ceiling(res, stratum=True))
    lo, hi = row.range
    return claim_row(
        "gain_high_frequency", measured=row.relative, ci=row.relative_ci, judged=j, n=row.n,
        what=what, tested_on=_tested(res) + f"; Zipf {fmt_value(lo)} to {fmt_value(hi)}",
        statistic=f"retrieval: relative delta nDCG@10 {CLAIM_SCORER}, {name} Q{q} ({res.dataset_name})",
        beside=f"{row.n} queries, Zipf {fmt_value(lo)}-{fmt_value(hi)}",
        label="relative \u0394 nDCG@10, top frequency quartile",
        details={"delta nDCG@10": row.mean_delta, "delta 95% CI": row.mean_delta_ci,
                 "p (randomisation, this stratum)": row.p, "p (Holm over all strata)": row.p_holm},
        note=((sign_why + "; " if sign_why else "") + "the claim names this stratum, so its own CI decides; over all "
              f"12 strata the Holm-adjusted p is {fmt_value(row.p_holm)}"))


def discrimination_claim(summary: RetrievalResult | Mapping) -> ClaimRow:
    """Row ``calibration_discrimination`` (a): AUROC of the query norm (pre-specified direction) minus 0.5."""
    res = _result(summary)
    cal = res.calibration or {}
    e = cal.get(CLAIM_SIGNAL) or SignalCalibration()
    what = (f"AUROC - 0.5 of {CLAIM_SIGNAL} for 'the cosine top-1 is relevant', a larger norm read as less reliable "
            "(as the paper's cos/(1 + \u03b1||z||)); percentile bootstrap CI resampling evaluation queries")
    if e.status != "ok" or e.auroc_raw is None or e.auroc_raw_ci is None:
        return not_testable_row("calibration_discrimination",
                                e.reason or e.auroc_note or f"{CLAIM_SIGNAL} AUROC not computed", what=what)
    a, (lo, hi) = e.auroc_raw, e.auroc_raw_ci
    j = judge("calibration_discrimination", a - 0.5, [lo - 0.5, hi - 0.5])
    other = cal.get("top_doc_norm") or SignalCalibration()
    return claim_row("calibration_discrimination", measured=a - 0.5, ci=[lo - 0.5, hi - 0.5], judged=j,
                     n=_eval_queries(res), what=what, tested_on=_tested(res),
                     statistic=f"calibration: AUROC {CLAIM_SIGNAL} ({res.dataset_name})",
                     beside=f"AUROC {a:.3f} [{lo:.3f}, {hi:.3f}] (0.5 = chance)", label="AUROC \u2212 0.5, query norm",
                     details={"AUROC top_doc_norm": other.auroc_raw, "its 95% CI": other.auroc_raw_ci,
                              "AUROC margin (free)": (cal.get("margin") or SignalCalibration()).auroc_raw})


def incremental_claim(summary: RetrievalResult | Mapping) -> ClaimRow:
    """Row ``calibration_incremental`` (b): does adding the norm signals to the free ones raise the AUROC?"""
    inc = _result(summary).calibration_incremental
    what = ("cross-fitted AUROC with the norm signals minus without them (logistic regression, folds fixed first); "
            "paired CI")
    if inc is None or inc == IncrementalValue() or inc.diff is None:
        why = (f"the cross-fitted comparison was not computed: {inc.reason}" if inc is not None and inc.reason
               else "this run has no cross-fitted comparison with and without the norm (calibration_incremental)")
        return not_testable_row("calibration_incremental", why, what=what)
    res = _result(summary)
    j = judge("calibration_incremental", inc.diff, inc.ci)
    base, added = ", ".join(inc.baseline or []), ", ".join(inc.added or [])
    return claim_row(
        "calibration_incremental", measured=inc.diff, ci=inc.ci, judged=j, n=inc.n_queries,
        what=(f"AUROC for '{inc.task}' with {added} added to {base} minus without, {inc.folds}-fold "
              f"cross-fitted" + (f" over {inc.fold_draws} fold draws" if inc.fold_draws else "")
              + f"; paired CI resampling {inc.ci_covers or inc.resamples}"),
        tested_on=_tested(res), statistic=f"calibration: incremental AUROC ({res.dataset_name})",
        beside=f"AUROC {fmt_value(inc.auroc_without)} \u2192 {fmt_value(inc.auroc_with)}",
        label="\u0394 AUROC, with minus without the norm",
        details={"baseline signals": base, "added signals": added, "AUROC without": inc.auroc_without,
                 "AUROC with": inc.auroc_with, "folds": inc.folds, "seed": inc.seed})


def nauc_claim(summary: RetrievalResult | Mapping) -> ClaimRow:
    """Row ``norm_confidence_nauc``: nAUC of nDCG@10 of the query norm minus that of the best MTEB confidence."""
    res = _result(summary)
    ab = res.abstention or Abstention()
    c = ab.comparison or AbstentionComparison()
    what = ("nAUC of nDCG@10 (MTEB's abstention metric, arXiv 2402.12997) of the query norm, a larger norm read as "
            "less confident, minus that of the best of MTEB's max/std/diff1 on the same queries (chosen before the "
            "bootstrap); paired percentile bootstrap CI resampling evaluation queries")
    if ab.status != "ok" or c.diff is None or c.ci is None:
        why = ab.reason or c.reason or "this run has no nAUC study (abstention)"
        return not_testable_row("norm_confidence_nauc", why, what=what)
    j = judge("norm_confidence_nauc", c.diff, c.ci)
    best, bci = c.best_baseline, c.baseline_ci
    pos = (f"{c.position} {best}'s CI [{fmt_value(bci.lo)}, {fmt_value(bci.hi)}]" if bci is not None
           else "no CI for the baseline")
    sig = ab.signals or {}
    return claim_row(
        "norm_confidence_nauc", measured=c.diff, ci=c.ci, judged=j, n=c.n_queries, what=what,
        tested_on=_tested(res) + f"; cosine run, depth {ab.depth}",
        statistic=f"calibration: nAUC nDCG@10 query_norm - {best} ({res.dataset_name})",
        beside=f"nAUC query norm {fmt_value(c.nauc)} vs {best} {fmt_value(c.baseline_nauc)}: {pos}",
        label=f"\u0394 nAUC nDCG@10, query norm minus {best}",
        details={**{k: v for name, s in sig.items() for k, v in ((f"nAUC {name}", s.nauc),
                                                                  (f"nAUC {name} 95% CI", s.nauc_ci))},
                 "computed by": ab.implementation},
        note=f"the query norm's nAUC lies {pos}")


def retrieval_claims(summary: RetrievalResult | Mapping) -> list[ClaimRow]:
    """The rows a retrieval run feeds: ``similarity_gain``, ``gain_high_frequency``, ``gain_low_quality``,
    ``calibration_discrimination``, ``calibration_incremental``, ``norm_confidence_nauc`` (in that order).

    Parameters
    ----------
    summary : RetrievalResult or mapping
        The run's result (a mapping: its :meth:`~normscope.results.StageResult.to_dict`).

    Returns
    -------
    list of ClaimRow
    """
    res = _result(summary)
    return [gain_claim(res), high_frequency_claim(res),
            not_testable_row("gain_low_quality", "the dataset has no per-item quality label", tested_on=_tested(res)),
            discrimination_claim(res), incremental_claim(res), nauc_claim(res)]


def cost_claim(cost: InferenceCost | dict | None, reason: str = "") -> ClaimRow:
    """Row ``inference_cost`` from :func:`normscope.retrieval.cost.norm_scoring_cost` (None: ``reason``).

    Parameters
    ----------
    cost : InferenceCost, dict or None
        The measured cost (a dict is its JSON, read once as an :class:`~normscope.retrieval.cost.InferenceCost`);
        None or empty when it was not measured.
    reason : str
        Why it was not measured (the row's reason then).

    Returns
    -------
    ClaimRow
        The ratio's median over repeats judged against the claim's size, its range over repeats as the interval.
    """
    if not cost:
        return not_testable_row("inference_cost", reason or "the cost was not measured")
    c = InferenceCost.from_json(cost)
    j = judge("inference_cost", c.ratio, c.range)
    return claim_row(
        "inference_cost", measured=c.ratio, ci=c.range, judged=j, n=c.n_items,
        what=("cost ratio: seconds of norm-aware scoring (each item's ||z|| and the discount of its "
              f"{c.k} candidate scores) over seconds of encoding the same items; median over "
              f"{c.repeats} repeats, with their range (timing noise, not a sampling CI)"),
        tested_on=f"{c.model}, {c.n_items} queries, {c.threads} thread(s)",
        statistic="cost: norm-aware scoring / encoder", label="cost ratio, norm-aware scoring / encoder",
        beside=f"encoder {fmt_value(c.encoder_s_per_item)} s/item, norm-aware scoring "
               f"{fmt_value(c.norm_s_per_item)} s/item",
        details={"encoder_s_per_item": c.encoder_s_per_item, "norm_s_per_item": c.norm_s_per_item,
                 "ratios": c.ratios, "repeats": c.repeats, "device": c.device})
