"""Scorecard rows of the retrieval and calibration claims (verdict rules: :mod:`normscope.claims`).

Pure functions of :meth:`RetrievalResult.to_dict` (``normscope retrieval --json``, which carries
the rows of :func:`retrieval_claims` under ``claims``), so a user who runs the command on their
own dataset gets the verdicts the report would give:

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

from normscope.claims import CLAIMS, ceiling_gate, claim_row, fmt_value, judge, not_testable_row

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


def _tested(summary: dict) -> str:
    n = (summary.get("n_queries") or {}).get("eval")
    return (f"{summary.get('model')}, {summary.get('dataset_name')} '{summary.get('split')}' ({n} queries), "
            f"fitted on {summary.get('fit_split')}")


def _ceiling(summary: dict, *, stratum: bool = False):
    """The ceiling / floor gate of the gain rows from cosine's per-query nDCG@10 counts (None: a summary written
    before they were recorded). ``stratum``: for a row on a subset of the queries, only the all-at-the-ceiling /
    all-at-the-floor cases of the whole set apply (they hold on every subset)."""
    cos = (summary.get("scorers") or {}).get("cosine") or {}
    n = (summary.get("n_queries") or {}).get("eval")
    if cos.get("ndcg10_at_ceiling") is None or n is None:
        return None
    size = CLAIMS["similarity_gain"].size
    return ceiling_gate(cos.get("ndcg@10"), cos["ndcg10_at_ceiling"], cos.get("ndcg10_at_floor") or 0, int(n),
                        claimed_gain=size.low if size.kind == "range" and not stratum else None)


def gain_claim(summary: dict) -> dict:
    """Row ``similarity_gain``: the relative nDCG@10 gain of ``inverse_norm`` over cosine."""
    r = (summary.get("scorers") or {}).get(CLAIM_SCORER)
    if not r:
        return not_testable_row("similarity_gain", f"the {CLAIM_SCORER} scorer was not run", what=_GAIN_WHAT)
    j = judge("similarity_gain", r.get("relative"), r.get("relative_ci"), p=r.get("p_value"),
              degenerate=_unchanged(r.get("relative"), "overall"), gate=_ceiling(summary))
    rows = ((summary.get("strata") or {}).get("scorers") or {}).get(CLAIM_SCORER) or []
    sig = [x for x in rows if x.get("p_holm") is not None and x["p_holm"] < 0.05]
    strata = (f"pre-specified strata: {len(sig)} of {len(rows)} differ from cosine at Holm-adjusted p < 0.05"
              + (" (" + ", ".join(f"{x['stratifier']} Q{x['quartile']} {_pct(x.get('relative'))}" for x in sig) + ")"
                 if sig else "") if rows else "strata not computed")
    what = _gain_what(r.get("ci_resamples"))
    p = r.get("param")
    param = (f"\u03b1 per fold {', '.join(fmt_value(x) for x in p)}" if isinstance(p, list)
             else f"\u03b1 = {fmt_value(p)}")
    return claim_row("similarity_gain", measured=r.get("relative"), ci=r.get("relative_ci"), judged=j, percent=True,
                     n=(summary.get("n_queries") or {}).get("eval"), what=what, tested_on=_tested(summary),
                     statistic=f"retrieval: relative delta nDCG@10 {CLAIM_SCORER} ({summary.get('dataset_name')})",
                     beside=f"paired t p = {fmt_value(r.get('p_value'))}", label="relative \u0394 nDCG@10",
                     details={"parameter": param, "nDCG@10 (scorer)": r.get("ndcg@10"),
                              "nDCG@10 (cosine)": ((summary.get("scorers") or {}).get("cosine") or {}).get("ndcg@10"),
                              "delta nDCG@10": r.get("delta"), "delta 95% CI": r.get("delta_ci"),
                              "p (paired t)": r.get("p_value"), "p (randomisation)": r.get("p_value_randomization")},
                     note=strata)


def high_frequency_claim(summary: dict) -> dict:
    """Row ``gain_high_frequency``: the relative gain in the top quartile of query word frequency."""
    st = summary.get("strata") or {}
    rows = (st.get("scorers") or {}).get(CLAIM_SCORER) or []
    name, q = HIGH_FREQUENCY_STRATUM
    what = ("relative \u0394 nDCG@10 of cos/(1 + \u03b1||d||) vs cosine in the pre-specified top quartile of the "
            "queries' mean word Zipf frequency; paired percentile bootstrap CI over that quartile's queries")
    row = next((x for x in rows if x.get("stratifier") == name and x.get("quartile") == q), None)
    if row is None or row.get("relative") is None:
        info = (st.get("stratifiers") or {}).get(name) or {}
        return not_testable_row("gain_high_frequency", info.get("reason") or st.get("reason")
                                or "the frequency strata were not computed", what=what)
    if row.get("ci_resamples"):
        what = what.replace("over that quartile's queries", f"in that quartile: {row['ci_resamples']}")
    j = judge("gain_high_frequency", row["relative"], row.get("relative_ci"),
              degenerate=_unchanged(row["relative"], "in this stratum"), gate=_ceiling(summary, stratum=True))
    return claim_row(
        "gain_high_frequency", measured=row["relative"], ci=row.get("relative_ci"), judged=j, n=row.get("n"),
        what=what, tested_on=_tested(summary) + f"; Zipf {fmt_value(row['range'][0])} to {fmt_value(row['range'][1])}",
        statistic=f"retrieval: relative delta nDCG@10 {CLAIM_SCORER}, {name} Q{q} ({summary.get('dataset_name')})",
        beside=f"{row.get('n')} queries, Zipf {fmt_value(row['range'][0])}-{fmt_value(row['range'][1])}",
        label="relative \u0394 nDCG@10, top frequency quartile",
        details={"delta nDCG@10": row.get("mean_delta"), "delta 95% CI": row.get("mean_delta_ci"),
                 "p (randomisation, this stratum)": row.get("p"), "p (Holm over all strata)": row.get("p_holm")},
        note=("the claim names this stratum, so its own CI decides; over all 12 strata the Holm-adjusted p is "
              f"{fmt_value(row.get('p_holm'))}"))


def discrimination_claim(summary: dict) -> dict:
    """Row ``calibration_discrimination`` (a): AUROC of the query norm (pre-specified direction) minus 0.5."""
    e = (summary.get("calibration") or {}).get(CLAIM_SIGNAL) or {}
    what = (f"AUROC - 0.5 of {CLAIM_SIGNAL} for 'the cosine top-1 is relevant', a larger norm read as less reliable "
            "(as the paper's cos/(1 + \u03b1||z||)); percentile bootstrap CI resampling evaluation queries")
    if e.get("status") != "ok" or e.get("auroc_raw") is None or not e.get("auroc_raw_ci"):
        return not_testable_row("calibration_discrimination",
                                e.get("reason") or e.get("auroc_note") or f"{CLAIM_SIGNAL} AUROC not computed", what=what)
    a, (lo, hi) = e["auroc_raw"], e["auroc_raw_ci"]
    j = judge("calibration_discrimination", a - 0.5, [lo - 0.5, hi - 0.5])
    other = (summary.get("calibration") or {}).get("top_doc_norm") or {}
    return claim_row("calibration_discrimination", measured=a - 0.5, ci=[lo - 0.5, hi - 0.5], judged=j,
                     n=(summary.get("n_queries") or {}).get("eval"), what=what, tested_on=_tested(summary),
                     statistic=f"calibration: AUROC {CLAIM_SIGNAL} ({summary.get('dataset_name')})",
                     beside=f"AUROC {a:.3f} [{lo:.3f}, {hi:.3f}] (0.5 = chance)", label="AUROC \u2212 0.5, query norm",
                     details={"AUROC top_doc_norm": other.get("auroc_raw"), "its 95% CI": other.get("auroc_raw_ci"),
                              "AUROC margin (free)": ((summary.get("calibration") or {}).get("margin") or {}).get(
                                  "auroc_raw")})


def incremental_claim(summary: dict) -> dict:
    """Row ``calibration_incremental`` (b): does adding the norm signals to the free ones raise the AUROC?"""
    inc = summary.get("calibration_incremental")
    what = ("cross-fitted AUROC with the norm signals minus without them (logistic regression, folds fixed first); "
            "paired CI")
    if not isinstance(inc, dict) or inc.get("diff") is None:
        why = (f"the cross-fitted comparison was not computed: {inc['reason']}" if isinstance(inc, dict)
               and inc.get("reason") else "this run has no cross-fitted comparison with and without the norm "
               "(calibration_incremental)")
        return not_testable_row("calibration_incremental", why, what=what)
    j = judge("calibration_incremental", inc["diff"], inc.get("ci"))
    base, added = ", ".join(inc.get("baseline") or []), ", ".join(inc.get("added") or [])
    return claim_row(
        "calibration_incremental", measured=inc["diff"], ci=inc.get("ci"), judged=j, n=inc.get("n_queries"),
        what=(f"AUROC for '{inc.get('task')}' with {added} added to {base} minus without, {inc.get('folds')}-fold "
              f"cross-fitted" + (f" over {inc['fold_draws']} fold draws" if inc.get("fold_draws") else "")
              + f"; paired CI resampling {inc.get('ci_covers') or inc.get('resamples')}"),
        tested_on=_tested(summary), statistic=f"calibration: incremental AUROC ({summary.get('dataset_name')})",
        beside=f"AUROC {fmt_value(inc.get('auroc_without'))} \u2192 {fmt_value(inc.get('auroc_with'))}",
        label="\u0394 AUROC, with minus without the norm",
        details={"baseline signals": base, "added signals": added, "AUROC without": inc.get("auroc_without"),
                 "AUROC with": inc.get("auroc_with"), "folds": inc.get("folds"), "seed": inc.get("seed")})


def nauc_claim(summary: dict) -> dict:
    """Row ``norm_confidence_nauc``: nAUC of nDCG@10 of the query norm minus that of the best MTEB confidence."""
    ab = summary.get("abstention") or {}
    c = ab.get("comparison") or {}
    what = ("nAUC of nDCG@10 (MTEB's abstention metric, arXiv 2402.12997) of the query norm, a larger norm read as "
            "less confident, minus that of the best of MTEB's max/std/diff1 on the same queries (chosen before the "
            "bootstrap); paired percentile bootstrap CI resampling evaluation queries")
    if ab.get("status") != "ok" or c.get("diff") is None or not c.get("ci"):
        why = ab.get("reason") or c.get("reason") or "this run has no nAUC study (abstention)"
        return not_testable_row("norm_confidence_nauc", why, what=what)
    j = judge("norm_confidence_nauc", c["diff"], c["ci"])
    best, bci = c["best_baseline"], c.get("baseline_ci")
    pos = (f"{c['position']} {best}'s CI [{fmt_value(bci[0])}, {fmt_value(bci[1])}]" if bci else "no CI for the baseline")
    sig = ab.get("signals") or {}
    return claim_row(
        "norm_confidence_nauc", measured=c["diff"], ci=c["ci"], judged=j, n=c.get("n_queries"), what=what,
        tested_on=_tested(summary) + f"; cosine run, depth {ab.get('depth')}",
        statistic=f"calibration: nAUC nDCG@10 query_norm - {best} ({summary.get('dataset_name')})",
        beside=f"nAUC query norm {fmt_value(c['nauc'])} vs {best} {fmt_value(c['baseline_nauc'])}: {pos}",
        label=f"\u0394 nAUC nDCG@10, query norm minus {best}",
        details={**{f"nAUC {k}{sfx}": v.get(f) for k, v in sig.items() for sfx, f in (("", "nauc"), (" 95% CI", "nauc_ci"))},
                 "computed by": ab.get("implementation")},
        note=f"the query norm's nAUC lies {pos}")


def retrieval_claims(summary: dict) -> list[dict]:
    """The rows a retrieval run feeds: ``similarity_gain``, ``gain_high_frequency``, ``gain_low_quality``,
    ``calibration_discrimination``, ``calibration_incremental``, ``norm_confidence_nauc`` (in that order)."""
    return [gain_claim(summary), high_frequency_claim(summary),
            not_testable_row("gain_low_quality", "the dataset has no per-item quality label", tested_on=_tested(summary)),
            discrimination_claim(summary), incremental_claim(summary), nauc_claim(summary)]


def cost_claim(cost: dict | None, reason: str = "") -> dict:
    """Row ``inference_cost`` from :func:`normscope.retrieval.cost.norm_scoring_cost` (None: ``reason``)."""
    if not cost:
        return not_testable_row("inference_cost", reason or "the cost was not measured")
    j = judge("inference_cost", cost["ratio"], cost["range"])
    return claim_row(
        "inference_cost", measured=cost["ratio"], ci=cost["range"], judged=j, n=cost.get("n_items"),
        what=("cost ratio: seconds of norm-aware scoring (each item's ||z|| and the discount of its "
              f"{cost.get('k')} candidate scores) over seconds of encoding the same items; median over "
              f"{cost.get('repeats')} repeats, with their range (timing noise, not a sampling CI)"),
        tested_on=f"{cost.get('model')}, {cost.get('n_items')} queries, {cost.get('threads')} thread(s)",
        statistic="cost: norm-aware scoring / encoder", label="cost ratio, norm-aware scoring / encoder",
        beside=f"encoder {fmt_value(cost.get('encoder_s_per_item'))} s/item, norm-aware scoring "
               f"{fmt_value(cost.get('norm_s_per_item'))} s/item",
        details={k: cost.get(k) for k in ("encoder_s_per_item", "norm_s_per_item", "ratios", "repeats", "device")})
