"""Report stages ``retrieval`` and ``calibration`` (``normscope retrieval``), with their claims rows."""

from __future__ import annotations

from pathlib import Path

from normscope.report.claims import claim_row, verdict_not_testable, verdict_sign
from normscope.report.context import StageContext, StageUnavailable
from normscope.report.stages._common import ci_text, jsonable
from normscope.report.text import pct

__all__ = ["stage_retrieval", "similarity_gain_claim", "calibration_claim"]

#: The scorer the paper's gain claim is about: cos / (1 + alpha ||z||).
CLAIM_SCORER = "inverse_norm"
#: The norm signal of the calibration claim (the query's own norm), in its pre-specified direction.
CLAIM_SIGNAL = "query_norm"


def _scifact_dir(ctx: StageContext) -> Path:
    from normscope.data import data_path
    from normscope.errors import DataError

    try:
        return data_path("scifact")  # --data / shared copy, else fetched; offline: names the fetch command
    except DataError as exc:
        raise StageUnavailable(str(exc)) from None


def similarity_gain_claim(summary: dict) -> dict:
    """Scorecard row of the paper's 1.2-2.3 % gain: relative delta nDCG@10 of inverse_norm vs cosine (paired CI over
    queries); a direction only when the CI excludes 0 and the paired t-test gives p < 0.05."""
    r = (summary.get("scorers") or {}).get(CLAIM_SCORER)
    what = ("relative \u0394 nDCG@10 of cos/(1 + alpha||d||) vs cosine, mean(scorer)/mean(cosine) - 1; paired percentile "
            "bootstrap CI resampling evaluation queries (parameter fitted on other queries)")
    if not r:
        v, why = verdict_not_testable(f"the {CLAIM_SCORER} scorer was not run")
        return claim_row("similarity_gain", measured=None, ci=None, verdict=v, why=why, section="retrieval", what=what)
    v, why = verdict_sign(r.get("relative"), r.get("relative_ci"), +1, p=r.get("p_value"))  # the page's sentence rule
    rows = ((summary.get("strata") or {}).get("scorers") or {}).get(CLAIM_SCORER) or []
    sig = [x for x in rows if x.get("p_holm") is not None and x["p_holm"] < 0.05]
    strata = (f"; pre-specified strata: {len(sig)} of {len(rows)} differ from cosine at Holm-adjusted p < 0.05"
              + (" (" + ", ".join(f"{x['stratifier']} Q{x['quartile']} {pct(x['relative'])}" for x in sig) + ")" if sig else "")
              if rows else "; strata not computed")
    return claim_row("similarity_gain", measured=r.get("relative"), ci=r.get("relative_ci"), verdict=v,
                     why=f"{why} (paper: +1.2 to +2.3 %, measured {pct(r.get('relative'))}){strata}",
                     section="retrieval", n=(summary.get("n_queries") or {}).get("eval"), what=what)


def calibration_claim(summary: dict) -> dict:
    """Scorecard row of "the norm is a free calibration signal": AUROC of the query norm (pre-specified direction) minus 0.5."""
    e = (summary.get("calibration") or {}).get(CLAIM_SIGNAL) or {}
    what = (f"AUROC - 0.5 of {CLAIM_SIGNAL} for 'the cosine top-1 is relevant', a larger norm read as less reliable "
            "(as the paper's cos/(1 + alpha||z||)); percentile bootstrap CI resampling evaluation queries")
    if e.get("status") != "ok" or e.get("auroc_raw") is None or not e.get("auroc_raw_ci"):
        v, why = verdict_not_testable(e.get("reason") or e.get("auroc_note") or f"{CLAIM_SIGNAL} AUROC not computed")
        return claim_row("calibration", measured=None, ci=None, verdict=v, why=why, section="calibration", what=what)
    a, (lo, hi) = e["auroc_raw"], e["auroc_raw_ci"]
    v, why = verdict_sign(a - 0.5, [lo - 0.5, hi - 0.5], +1)
    other = (summary.get("calibration") or {}).get("top_doc_norm") or {}
    tail = (f"; top_doc_norm AUROC {other['auroc_raw']:.3f} {ci_text(other.get('auroc_raw_ci'))}"
            if other.get("auroc_raw") is not None else "")
    return claim_row("calibration", measured=a - 0.5, ci=[lo - 0.5, hi - 0.5], verdict=v,
                     why=f"{why} (AUROC {a:.3f}, CI [{lo:.3f}, {hi:.3f}]; 0.5 = chance){tail}", section="calibration",
                     n=(summary.get("n_queries") or {}).get("eval"), what=what)


def qpp_tables(summary: dict) -> list:
    """The QPP baselines beside the norm signals (two tasks, CIs over queries) and the cross-fitted incremental value."""
    q, qi, inc = summary.get("qpp") or {}, summary.get("qpp_info") or {}, summary.get("calibration_incremental") or {}
    tables = []
    if q:
        rows = []
        for name, e in q.items():
            if e.get("status") != "ok":
                rows.append([name, e.get("kind"), e.get("direction"), f"not computed: {e.get('reason')}", None, None, None,
                             None, None, None, e.get("formula")])
                continue
            rows.append([name, e.get("kind"), e.get("direction"), e.get("auroc"), ci_text(e.get("auroc_ci")), e.get("aurc"),
                         e.get("kendall_tau"), ci_text(e.get("kendall_tau_ci")), e.get("spearman_rho"),
                         ci_text(e.get("spearman_rho_ci")), f"{e.get('formula')} ({e.get('reference')})"])
        tables.append({"title": "Query performance predictors beside the norm signals, each in its pre-specified direction "
                                f"(top-1 relevant: AUROC, AURC; nDCG@10: Kendall tau-b, Spearman rho; {qi.get('ci', '')})",
                       "columns": ["signal", "kind", "direction", "AUROC", "95% CI", "AURC", "Kendall tau", "95% CI",
                                   "Spearman rho", "95% CI", "formula (reference)"],
                       "rows": rows})
    if inc.get("status") == "ok":
        base = ", ".join(inc["baseline"])
        rows = [["top-1 relevant (AUROC)", base, inc["auroc_without"], inc["auroc_with"], inc["diff"], ci_text(inc["ci"])]]
        nd = inc.get("ndcg@10") or {}
        if nd.get("status") == "ok":
            rows.append(["nDCG@10 (Kendall tau)", base, nd["tau_without"], nd["tau_with"], nd["diff"], ci_text(nd["ci"])])
        for r in inc.get("single_baselines") or []:
            rows.append(["top-1 relevant (AUROC)", ", ".join(r["baseline"]), r["auroc_without"], r["auroc_with"], r["diff"],
                         ci_text(r["ci"])])
        tables.append({"title": f"Incremental value of the norm signals ({', '.join(inc['added'])}): cross-fitted models "
                                f"with and without them ({inc['folds']} folds x {inc['fold_draws']} fold draws, fixed before "
                                f"fitting; CI: {inc['ci_covers']})",
                       "columns": ["task", "baseline signals", "without norms", "with norms", "difference", "95% CI"],
                       "rows": rows})
    return tables


def incremental_notes(summary: dict) -> list:
    """One sentence on the norm's incremental value, chosen by whether its CI excludes 0 (the table's numbers)."""
    inc = summary.get("calibration_incremental") or {}
    if inc.get("status") != "ok":
        return [f"Incremental value of the norm signals: not computed ({inc.get('reason')})."] if inc else []
    out = []
    for what, e, stat in (("the cross-fitted AUROC for a relevant top-1", inc, "auroc"),
                          ("the cross-fitted Kendall tau with nDCG@10", inc.get("ndcg@10") or {}, "tau")):
        if e.get("status") != "ok" or not e.get("ci"):
            continue
        lo, hi = e["ci"]
        nums = (f"{e[stat + '_without']:.3f} without, {e[stat + '_with']:.3f} with, difference {e['diff']:+.3f}, "
                f"95% CI [{lo:+.3f}, {hi:+.3f}]")
        if lo > 0:
            out.append(f"Adding the norm signals to every free baseline raises {what} ({nums}).")
        elif hi < 0:
            out.append(f"Adding the norm signals to every free baseline lowers {what} ({nums}): they add noise, not "
                       "information.")
        else:
            out.append(f"Adding the norm signals to every free baseline does not measurably change {what} ({nums}).")
    return out


def _scorer_rows(summary: dict) -> list:
    rows = []
    for name, r in summary["scorers"].items():
        p = r.get("param")
        if r.get("param_name") is None:
            value = "none"
        elif isinstance(p, list):
            value = ", ".join(f"{x:.3g}" for x in p) + f" (mean {r['param_mean']:.3g})"
        else:
            value = f"{p:.4g}"
        fitted = {"fitted": r.get("fitted_on"), "fixed (not fitted)": "not fitted (fixed)"}.get(r.get("param_source"), "-")
        rows.append([name, r.get("param_name") or "none", value, fitted, r.get("ndcg@10"), r.get("mrr@10"),
                     r.get("recall@100"), r.get("delta"), ci_text(r.get("delta_ci")),
                     None if r.get("relative") is None else pct(r["relative"]), r.get("p_value"),
                     r.get("p_value_randomization")])
    return rows


def _excluded_table(summary: dict) -> dict:
    exc = summary.get("excluded_queries") or {}
    names = {"eval": f"evaluation ('{summary.get('split')}')", "fit": f"fitting ('{summary.get('fit_split')}')"}
    cols = [k for k in ("eval", "fit") if exc.get(k)]
    keys = list(dict.fromkeys(k for c in cols for k in exc[c]))
    return {"title": "Queries judged, evaluated and excluded, per split",
            "columns": ["count"] + [names[c] for c in cols],
            "rows": [[k.replace("_", " ")] + [exc[c].get(k) for c in cols] for k in keys]}


def _examples(res) -> list:
    """The three lowest- and highest-norm queries with their cosine top-1 (document title, then id)."""
    pq = res.per_query.sort_values(["query_norm", "query_id"])
    pick = list(pq.head(3).itertuples()) + list(pq.tail(3).itertuples())
    return [[t.text, float(t.query_norm), f"{res.doc_titles.get(t.top1_doc, '')} ({t.top1_doc})",
             "yes" if int(t.top1_relevant) else "no"] for t in pick]


def stage_retrieval(ctx: StageContext) -> dict:
    d = _scifact_dir(ctx)
    from normscope.retrieval.figures import plot_reliability, plot_risk_coverage
    from normscope.retrieval.pipeline import run_retrieval
    from normscope.retrieval.result import SCORER_LABELS, SIGNAL_LABELS

    s = ctx.sizes
    seed = ctx.config.seed
    res = run_retrieval(d, encoder=ctx.encoder(), max_docs=s.retrieval_docs, max_queries=s.retrieval_queries, seed=seed,
                        n_boot=s.n_boot, progress=True, device=ctx.config.device, engine=ctx.config.engine,
                        address=ctx.config.address)
    summary = jsonable(res.to_dict())
    cmd = f"normscope retrieval --dataset {d}"
    if s.retrieval_docs is not None:
        cmd += f" --max-docs {s.retrieval_docs}"
    if s.retrieval_queries is not None:
        cmd += f" --max-queries {s.retrieval_queries}"
    cmd += f" --n-boot {s.n_boot} --seed {seed} --json retrieval.json"
    nq = summary["n_queries"]
    sizes = (f"SciFact: {summary['n_docs']} documents, {nq['eval']} '{summary['split']}' queries evaluated, parameters "
             f"fitted on {nq['fit']} queries of '{summary['fit_split']}'")
    notes = [f"Tie rule: {summary['tie_rule']}; {summary['relevance']} relevance; self-hits "
             f"{'left out' if summary['ignore_identical_ids'] else 'kept'} ({summary['identical_ids'].get(summary['split'], 0)} "
             "evaluation queries share an id with a document)."]
    for name, r in summary["scorers"].items():
        if r.get("param_at_grid_edge"):
            notes.append(f"{name}: the fitted {r.get('param_name')} lies at the edge of its search grid.")
    for side, j in summary["junk"].items():
        if j["count"]:
            notes.append(f"{j['count']} junk {side} left out of every statistic (ids {', '.join(j['ids'][:5])}).")
    sig = summary["significance"]
    notes += [f"p (paired t): {sig['p_value']}", f"p (randomisation): {sig['p_value_randomization']}",
              f"\u0394 CI: {sig['delta_ci']}"]
    tables = [
        {"title": "Scorers on the evaluation queries (parameters fitted on other queries; \u0394 and p vs cosine on nDCG@10)",
         "columns": ["scorer", "parameter", "value", "fitted on"] + [SCORER_LABELS[k] for k in
                                                                     ("ndcg@10", "mrr@10", "recall@100", "delta", "delta_ci",
                                                                      "relative", "p_value", "p_value_randomization")],
         "rows": _scorer_rows(summary)},
    ]
    st = summary.get("strata") or {}
    for scorer, rows in (st.get("scorers") or {}).items():
        tables.append({"title": f"{scorer} vs cosine in the pre-specified strata ({st['correction']}; CI over the stratum's queries)",
                       "columns": ["stratifier", "quartile", "range", "n", "cosine nDCG@10", f"{scorer} nDCG@10",
                                   "\u0394", "95% CI", "relative \u0394", "p (Holm)"],
                       "rows": [[r["stratifier"], f"Q{r['quartile']}", ci_text(r["range"]), r["n"], r["baseline_mean"],
                                 r["scorer_mean"], r["mean_delta"], ci_text(r["mean_delta_ci"]), pct(r["relative"]),
                                 r["p_holm"]] for r in rows]})
    tables += [_excluded_table(summary),
               {"title": "Lowest- and highest-norm queries (cosine top-1)",
                "columns": ["query", "||q||", "top-1 document (title, id)", "top-1 relevant"], "rows": _examples(res)}]
    retrieval = {
        "status": "ok", "reason": None, "command": cmd, "sizes": sizes,
        "result": {k: v for k, v in summary.items() if k not in ("calibration", "calibration_info", "qpp", "qpp_info")},
        "derived": {"delta_ndcg10_vs_cosine": {n: r.get("delta") for n, r in summary["scorers"].items()}},
        "key_numbers": [[f"nDCG@10, {n}", r.get("ndcg@10"), ""] for n, r in summary["scorers"].items()],
        "tables": tables, "figures": [], "notes": notes, "claims": [similarity_gain_claim(summary)],
    }

    cal, info = summary["calibration"], summary["calibration_info"]
    cal_rows, flags = [], []
    for name, c in cal.items():
        if c["status"] != "ok":
            cal_rows.append([name, "-", f"not computed: {c['reason']}", None, None, None, None, None, None, None])
            continue
        bins = c["ece_bins"]
        cal_rows.append([name, c["fit"].get("direction") or "-", c.get("auroc_raw"), ci_text(c.get("auroc_raw_ci")),
                         c.get("auroc"), ci_text(c.get("auroc_ci")), c.get("ece"),
                         f"{bins['populated_bins']} of {info['ece_bins']}" + (" (!)" if bins["flag"] else ""),
                         c.get("aurc"), c.get("aurc_optimal")])
        if bins["flag"]:
            flags.append(f"{name}: {bins['flag']}.")
    computed = [n for n, c in cal.items() if c["status"] == "ok"]
    figs = []
    for i in range(0, len(computed), 2):
        name = "calibration_reliability.png" if i == 0 else f"calibration_reliability_{i // 2 + 1}.png"
        p = plot_reliability(cal, ctx.figure_path(name), signals=computed[i : i + 2], ncols=2)
        figs.append({"file": Path(p).name, "caption": f"Reliability diagrams (15 bins) of {' and '.join(computed[i:i + 2])}: "
                     "fraction of queries whose cosine top-1 is relevant per confidence bin (dashed: perfect calibration); "
                     "below, the queries per bin."})
    if computed:
        p2 = plot_risk_coverage(cal, ctx.figure_path("calibration_risk_coverage.png"))
        figs.append({"file": Path(p2).name, "caption": "Risk-coverage: error rate of the answered queries as queries "
                     "with the lowest confidence are withheld (lower is better); AURC in the legend."})
    calibration = {
        "status": "ok", "reason": None, "command": cmd,
        "sizes": f"{nq['eval']} evaluation queries; maps fitted on {info['fitted_on']}",
        "result": {k: {kk: vv for kk, vv in v.items() if kk not in ("reliability", "risk_coverage")} for k, v in cal.items()},
        "derived": {"info": info, "n_boot": s.n_boot, "qpp": summary.get("qpp"), "qpp_info": summary.get("qpp_info"),
                    "calibration_incremental": summary.get("calibration_incremental")},
        "key_numbers": [["label", info["label"], ""], ["base rate (evaluation)", info["base_rate_eval"], ""],
                        ["fitted on", info["fitted_on"], ""], ["ECE bins", info["ece_bins"], ""]],
        "tables": [{"title": "Confidence signals for 'the top-1 is relevant' (AUROC 0.5 = chance; raw: direction x signal; "
                             f"calibrated: the fitted map; CIs: {info['auroc_ci']})",
                    "columns": ["signal", "direction"] + [SIGNAL_LABELS[k] for k in ("auroc_raw", "auroc_raw_ci", "auroc",
                                                                                     "auroc_ci", "ece", "ece_bins", "aurc",
                                                                                     "aurc_optimal")],
                    "rows": cal_rows}] + qpp_tables(summary),
        "figures": figs,
        "notes": [info["mapping"], info["direction"]["rule"]] + flags + incremental_notes(summary),
        "claims": [calibration_claim(summary)],
    }
    return {"retrieval": retrieval, "calibration": calibration}
