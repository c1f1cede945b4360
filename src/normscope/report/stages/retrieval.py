"""Report stage ``retrieval`` (sections ``retrieval`` and ``calibration``: ``normscope retrieval``), with its claims rows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from normscope._format import ci as ci_text, num, p_text, pct
from normscope._io import to_jsonable
from normscope.data import data_path
from normscope.errors import DataError
from normscope.report.missing import data_unavailable
from normscope.report.stage import Command, Figure, KeyNumber, Section, Stage, Table
from normscope.report.text import ci_excludes_zero, ci_words
from normscope.requests import Embedding, Resampling
from normscope.requests.retrieval import RetrievalRequest
from normscope.retrieval import RetrievalResult, run_retrieval
from normscope.retrieval.claims import CLAIM_SCORER, cost_claim
from normscope.retrieval.cost import InferenceCost, norm_scoring_cost
from normscope.retrieval.figures import plot_reliability, plot_risk_coverage
from normscope.retrieval.result import (SCORER_LABELS, SIGNAL_LABELS, EceBins, IncrementalNdcg, IncrementalValue,
                                        QppInfo, QueryCounts, ScorerEval, SignalCalibration, SignalFit, Significance,
                                        Strata, StratumRow)

__all__ = ["RetrievalStage", "RetrievalRequest", "measure_cost", "COST_ITEMS", "COST_REPEATS", "retrieval_sentences",
           "calibration_sentences"]

#: Keys of the command's JSON that the calibration section shows (the retrieval section shows the others).
_CALIBRATION_KEYS = ("calibration", "calibration_info", "qpp", "qpp_info")
#: Per-signal curves of the command's JSON that the page draws instead of listing.
_CURVES = ("reliability", "risk_coverage")
#: Items (evaluation queries) and repeats of the inference-cost measurement.
COST_ITEMS = 128
COST_REPEATS = 5


def measure_cost(res: RetrievalResult, encoder) -> tuple[InferenceCost | None, str]:
    """Time norm-aware scoring against the encoder on the first :data:`COST_ITEMS` evaluation queries
    (:func:`normscope.retrieval.cost.norm_scoring_cost`); ``(cost, reason)``, cost None when it cannot be measured."""
    alpha = (res.scorers.get(CLAIM_SCORER) or ScorerEval()).param_mean
    if alpha is None:
        return None, f"the {CLAIM_SCORER} scorer was not run"
    pq = res.per_query.head(COST_ITEMS)
    cos = res.items[res.items["scorer"] == "cosine"]
    groups = {q: g.sort_values("rank") for q, g in cos.groupby("query_id", sort=False)}
    k = min(len(groups[q]) for q in pq["query_id"])
    scores = np.stack([groups[q]["score"].to_numpy()[:k] for q in pq["query_id"]])
    norms = np.stack([groups[q]["doc_norm"].to_numpy()[:k] for q in pq["query_id"]])
    return norm_scoring_cost(encoder, list(pq["text"]), scores, norms, alpha=float(alpha), repeats=COST_REPEATS), ""


def _scorer_sentence(name: str, s: ScorerEval, base: float) -> str | None:
    """nDCG@10 difference of one scorer to cosine: a direction only when the paired CI over queries excludes 0
    and the paired p < 0.05; when they disagree, no firm evidence."""
    nd, d, p = s.ndcg10, s.delta, s.p_value
    if nd is None:
        return None
    d = nd - base if d is None else d
    ci = list(s.delta_ci) if s.delta_ci is not None else None
    how = f" ({s.param_name} fixed at {num(s.param)}, not fitted)" if s.param_source == "fixed (not fitted)" else ""
    stats = (f"{num(nd)} vs {num(base)}, \u0394 {num(d)}, {ci_words(ci)} over queries, relative {pct(s.relative)}"
             + (f", paired p = {num(p)}" if p is not None else ""))
    ex = ci_excludes_zero(ci)
    if ex is None:
        return f"Scorer {name}{how}: nDCG@10 {stats}; no CI, so no claim about the sign."
    if ex and p is not None and p >= 0.05:
        return (f"For the {name} scorer{how} the bootstrap CI of the nDCG@10 difference to cosine excludes 0 but the "
                f"paired test does not reject equality (p = {num(p)} >= 0.05): no firm evidence of a difference ({stats}).")
    if ex:
        return (f"The {name} scorer{how} {'improves' if d > 0 else 'lowers'} test nDCG@10 over cosine ({stats}); the CI "
                "excludes 0" + (" and the paired p < 0.05." if p is not None else "."))
    return (f"For the {name} scorer{how} the CI of the nDCG@10 difference to cosine includes 0: no evidence of a "
            f"difference ({stats}).")


def _strata_sentence(rows: list[StratumRow]) -> str:
    """The pre-specified strata of inverse_norm (Holm-corrected)."""
    sig = [r for r in rows if r.p_holm is not None and r.p_holm < 0.05]
    where = "(quartiles of query norm, query word frequency and top-1 document norm)"
    if sig:
        listed = "; ".join(f"{r.stratifier} Q{r.quartile}: \u0394 {num(r.mean_delta)} ({pct(r.relative)}, "
                           f"Holm p = {num(r.p_holm)})" for r in sig)
        return (f"In the pre-specified strata {where}, {len(sig)} of {len(rows)} differ from cosine after Holm "
                f"correction: {listed}.")
    ps = [r.p_holm for r in rows if r.p_holm is not None]
    return (f"In none of the {len(rows)} pre-specified strata {where} does inverse_norm differ from cosine after Holm "
            "correction" + (f" (smallest adjusted p = {num(min(ps))})." if ps else "."))


def retrieval_sentences(result: dict | None) -> list[str]:
    """One sentence per norm-aware scorer (its nDCG@10 difference to cosine), and one on the pre-specified strata."""
    res = RetrievalResult.from_dict(result)
    cos = res.scorers.get("cosine")
    if cos is None or cos.ndcg10 is None:
        return []
    out = [s for name, sc in res.scorers.items() if name != "cosine" for s in [_scorer_sentence(name, sc, cos.ndcg10)] if s]
    rows = ((res.strata or Strata()).scorers or {}).get(CLAIM_SCORER)
    if rows:
        out.append(_strata_sentence(rows))
    return out


def _signal_sentence(name: str, c: SignalCalibration) -> str | None:
    if not c.ok:
        return f"{name}: not computed ({c.reason})."
    raw = c.auroc_raw is not None
    auc, ci = (c.auroc_raw, c.auroc_raw_ci) if raw else (c.auroc, c.auroc_ci)
    if auc is None:
        return None
    cal = f"; calibrated map AUROC {num(c.auroc)}" if (c.fit or SignalFit()).mapping == "platt" and c.auroc is not None else ""
    flag = (c.ece_bins or EceBins()).flag or ""
    ece_txt = f"; ECE {num(c.ece)}" + (f" ({flag})" if flag else "") if c.ece is not None else ""
    ci = list(ci) if ci is not None else None
    if ci_excludes_zero(ci) is None:
        return f"{name}: AUROC {num(auc)} for a relevant top-1 (0.5 = chance; no CI, so no claim){ece_txt}."
    stats = f"AUROC {num(auc)}, 95% CI {num(ci[0])} to {num(ci[1])}{cal}{ece_txt}"
    if ci[0] > 0.5:
        return f"{name} predicts a relevant top-1 better than chance ({stats})."
    if ci[1] < 0.5:
        return (f"{name} ranks relevant top-1 results below chance in its pre-specified direction ({stats}): it works "
                "the other way round.")
    return f"For {name} the AUROC CI includes 0.5: no evidence that it predicts a relevant top-1 ({stats})."


def calibration_sentences(result: dict | None) -> list[str]:
    """One sentence per confidence signal, chosen by whether the AUROC CI (bootstrap over queries) excludes 0.5.

    Raw signals are judged by ``auroc_raw`` (the signal in its pre-specified direction), learned ones by ``auroc``.
    """
    out = [_signal_sentence(name, SignalCalibration.from_json(c)) for name, c in (result or {}).items()]
    return [s for s in out if s]


def qpp_tables(res: RetrievalResult) -> list[Table]:
    """The QPP baselines beside the norm signals (two tasks, CIs over queries), the nAUC of nDCG@10 (MTEB's abstention
    metric) and the cross-fitted incremental value."""
    q, qi, inc = res.qpp or {}, res.qpp_info or QppInfo(), res.calibration_incremental or IncrementalValue()
    tables = []
    if q:
        rows = []
        for name, e in q.items():
            if e.status != "ok":
                rows.append([name, e.kind, e.direction, f"not computed: {e.reason}", None, None, None, None, None, None,
                             e.formula])
                continue
            rows.append([name, e.kind, e.direction, e.auroc, ci_text(e.auroc_ci), e.aurc, e.kendall_tau,
                         ci_text(e.kendall_tau_ci), e.spearman_rho, ci_text(e.spearman_rho_ci),
                         f"{e.formula} ({e.reference})"])
        ag = (f"; model_agreement: Jaccard of this model's top-{qi.agreement['k']} and {qi.agreement['model']}'s"
              if qi.agreement else "")
        tables.append(Table("Query performance predictors beside the norm signals, each in its pre-specified direction "
                            f"(top-1 relevant: AUROC, AURC; nDCG@10: Kendall tau-b, Spearman rho; {qi.ci or ''}{ag})",
                            ["signal", "kind", "direction", "AUROC", "95% CI", "AURC", "Kendall tau", "95% CI",
                             "Spearman rho", "95% CI", "formula (reference)"], rows))
    ab = res.abstention or {}
    if ab.get("status") == "ok":
        rows = [[name, e["kind"], e["direction"], e["formula"], e["nauc"], ci_text(e["nauc_ci"])]
                for name, e in ab["signals"].items()]
        tables.append(Table(f"nAUC of {ab['metric']} by abstention (MTEB's metric, arXiv 2402.12997; the cosine run, depth "
                            f"{ab['depth']}; computed by {ab['implementation']}; CI: {ab['ci']})",
                            ["signal", "kind", "direction", "confidence", "nAUC", "95% CI"], rows))
    if inc.ok:
        base = ", ".join(inc.baseline)
        rows = [["top-1 relevant (AUROC)", base, inc.auroc_without, inc.auroc_with, inc.diff, ci_text(inc.ci)]]
        nd = inc.ndcg10 or IncrementalNdcg()
        if nd.status == "ok":
            rows.append(["nDCG@10 (Kendall tau)", base, nd.tau_without, nd.tau_with, nd.diff, ci_text(nd.ci)])
        for r in inc.single_baselines or []:
            rows.append(["top-1 relevant (AUROC)", ", ".join(r.baseline), r.auroc_without, r.auroc_with, r.diff,
                         ci_text(r.ci)])
        tables.append(Table(f"Incremental value of the norm signals ({', '.join(inc.added)}): cross-fitted models "
                            f"with and without them ({inc.folds} folds x {inc.fold_draws} fold draws, fixed before "
                            f"fitting; CI: {inc.ci_covers})",
                            ["task", "baseline signals", "without norms", "with norms", "difference", "95% CI"], rows))
    return tables


def incremental_notes(res: RetrievalResult) -> list:
    """One sentence on the norm's incremental value, chosen by whether its CI excludes 0 (the table's numbers)."""
    inc = res.calibration_incremental
    if inc is None or not inc.ok:
        return [f"Incremental value of the norm signals: not computed ({inc.reason})."] if inc else []
    out = []
    nd = inc.ndcg10 or IncrementalNdcg()
    for what, e in (("the cross-fitted AUROC for a relevant top-1", (inc.status, inc.ci, inc.auroc_without,
                                                                     inc.auroc_with, inc.diff)),
                    ("the cross-fitted Kendall tau with nDCG@10", (nd.status, nd.ci, nd.tau_without, nd.tau_with,
                                                                   nd.diff))):
        status, ci, without, with_, diff = e
        if status != "ok" or not ci:
            continue
        lo, hi = ci
        nums = (f"{without:.3f} without, {with_:.3f} with, difference {diff:+.3f}, "
                f"95% CI [{lo:+.3f}, {hi:+.3f}]")
        if lo > 0:
            out.append(f"Adding the norm signals to every free baseline raises {what} ({nums}).")
        elif hi < 0:
            out.append(f"Adding the norm signals to every free baseline lowers {what} ({nums}): they add noise, not "
                       "information.")
        else:
            out.append(f"Adding the norm signals to every free baseline does not measurably change {what} ({nums}).")
    return out


def _param_value(r: ScorerEval) -> str:
    if r.param_name is None:
        return "none"
    if isinstance(r.param, list):
        return ", ".join(f"{x:.3g}" for x in r.param) + f" (mean {r.param_mean:.3g})"
    return f"{r.param:.4g}"


def _scorer_rows(res: RetrievalResult) -> list:
    n_perm = int((res.significance or Significance()).n_permutations or 0)
    rows = []
    for name, r in res.scorers.items():
        fitted = {"fitted": r.fitted_on, "fixed (not fitted)": "not fitted (fixed)"}.get(r.param_source, "-")
        rows.append([name, r.param_name or "none", _param_value(r), fitted, r.ndcg10, r.mrr10, r.recall100, r.delta,
                     ci_text(r.delta_ci), None if r.relative is None else pct(r.relative), r.p_value,
                     None if r.p_value_randomization is None else p_text(r.p_value_randomization, n_perm)])
    return rows


def _excluded_table(res: RetrievalResult) -> Table:
    exc = res.excluded_queries or {}
    names = {"eval": f"evaluation ('{res.split}')", "fit": f"fitting ('{res.fit_split}')"}
    cols = [k for k in names if exc.get(k)]
    keys = list(dict.fromkeys(k for c in cols for k in exc[c]))  # the counts the pipeline kept, in its order
    return Table("Queries judged, evaluated and excluded, per split", ["count"] + [names[c] for c in cols],
                 [[k.replace("_", " ")] + [exc[c].get(k) for c in cols] for k in keys])


def _examples(res) -> list:
    """The three lowest- and highest-norm queries with their cosine top-1 (document title, then id)."""
    pq = res.per_query.sort_values(["query_norm", "query_id"])
    pick = list(pq.head(3).itertuples()) + list(pq.tail(3).itertuples())
    return [[t.text, float(t.query_norm), f"{res.doc_titles.get(t.top1_doc, '')} ({t.top1_doc})",
             "yes" if int(t.top1_relevant) else "no"] for t in pick]


def _strata_tables(res: RetrievalResult) -> list[Table]:
    """One table per norm-aware scorer: its difference to cosine in each pre-specified stratum."""
    tables = []
    st = res.strata or Strata()
    for scorer, rows in (st.scorers or {}).items():
        tables.append(Table(f"{scorer} vs cosine in the pre-specified strata ({st.correction}; CI over the stratum's queries)",
                            ["stratifier", "quartile", "range", "n", "cosine nDCG@10", f"{scorer} nDCG@10", "\u0394",
                             "95% CI", "relative \u0394", "p (Holm)"],
                            [[r.stratifier, f"Q{r.quartile}", ci_text(r.range), r.n, r.baseline_mean, r.scorer_mean,
                              r.mean_delta, ci_text(r.mean_delta_ci), pct(r.relative), r.p_holm] for r in rows]))
    return tables


def _retrieval_tables(res: RetrievalResult) -> list[Table]:
    tables = [Table("Scorers on the evaluation queries (parameters fitted on other queries; \u0394 and p vs cosine on nDCG@10)",
                    ["scorer", "parameter", "value", "fitted on"] + [SCORER_LABELS[k] for k in (
                        "ndcg@10", "mrr@10", "recall@100", "delta", "delta_ci", "relative", "p_value",
                        "p_value_randomization")], _scorer_rows(res))]
    return tables + _strata_tables(res) + [_excluded_table(res),
                     Table("Lowest- and highest-norm queries (cosine top-1)",
                           ["query", "||q||", "top-1 document (title, id)", "top-1 relevant"], _examples(res))]


def _retrieval_notes(res: RetrievalResult) -> list[str]:
    self_hits = (res.identical_ids or {}).get(res.split, 0)
    notes = [f"Tie rule: {res.tie_rule}; {res.relevance} relevance; self-hits "
             f"{'left out' if res.ignore_identical_ids else 'kept'} ({self_hits} evaluation queries share an id with a "
             "document)."]
    notes += [f"{name}: the fitted {r.param_name} lies at the edge of its search grid."
              for name, r in res.scorers.items() if r.param_at_grid_edge]
    notes += [f"{j.count} junk {side} left out of every statistic (ids {', '.join(j.ids[:5])})."
              for side, j in (("documents", res.junk.documents), ("queries", res.junk.queries)) if j and j.count]
    sig = res.significance
    return notes + [f"p (paired t): {sig.p_value}", f"p (randomisation): {sig.p_value_randomization}",
                    f"\u0394 CI: {sig.delta_ci}"]


def _calibration_rows(res: RetrievalResult) -> tuple[list, list[str]]:
    info = res.calibration_info
    rows, flags = [], []
    for name, c in res.calibration.items():
        if not c.ok:
            rows.append([name, "-", f"not computed: {c.reason}", None, None, None, None, None, None, None])
            continue
        bins = c.ece_bins
        rows.append([name, c.fit.direction or "-", c.auroc_raw, ci_text(c.auroc_raw_ci), c.auroc,
                     ci_text(c.auroc_ci), c.ece,
                     f"{bins.populated_bins} of {info.ece_bins}" + (" (!)" if bins.flag else ""),
                     c.aurc, c.aurc_optimal])
        if bins.flag:
            flags.append(f"{name}: {bins.flag}.")
    return rows, flags


def _calibration_figures(ctx, res: RetrievalResult, cal: dict) -> list[Figure]:
    computed = [n for n, c in res.calibration.items() if c.ok]
    figs = []
    for i in range(0, len(computed), 2):
        name = "calibration_reliability.png" if i == 0 else f"calibration_reliability_{i // 2 + 1}.png"
        p = plot_reliability(cal, ctx.figure_path(name), signals=computed[i : i + 2], ncols=2)
        figs.append(Figure(Path(p).name, f"Reliability diagrams (15 bins) of {' and '.join(computed[i:i + 2])}: "
                           "fraction of queries whose cosine top-1 is relevant per confidence bin (dashed: perfect "
                           "calibration); below, the queries per bin."))
    if computed:
        p2 = plot_risk_coverage(cal, ctx.figure_path("calibration_risk_coverage.png"))
        figs.append(Figure(Path(p2).name, "Risk-coverage: error rate of the answered queries as queries with the lowest "
                           "confidence are withheld (lower is better); AURC in the legend."))
    return figs


def _calibration_section(ctx, res: RetrievalResult, summary: dict, result: dict, commands: list[Command],
                         n_boot: int) -> Section:
    info = res.calibration_info
    rows, flags = _calibration_rows(res)
    return Section(
        "calibration", commands=commands,
        sizes=f"{res.n_queries.eval} evaluation queries; maps fitted on {info.fitted_on}",
        result=result, derived={"info": summary["calibration_info"], "n_boot": n_boot, "qpp": summary["qpp"],
                                "qpp_info": summary["qpp_info"],
                                "calibration_incremental": summary["calibration_incremental"],
                                "abstention": summary.get("abstention")},
        key_numbers=[KeyNumber("calibration_info.label", "label", info.label),
                     KeyNumber("calibration_info.base_rate_eval", "base rate (evaluation)", info.base_rate_eval),
                     KeyNumber("calibration_info.fitted_on", "fitted on", info.fitted_on),
                     KeyNumber("calibration_info.ece_bins", "ECE bins", info.ece_bins)],
        tables=[Table("Confidence signals for 'the top-1 is relevant' (AUROC 0.5 = chance; raw: direction x signal; "
                      f"calibrated: the fitted map; CIs: {info.auroc_ci})",
                      ["signal", "direction"] + [SIGNAL_LABELS[k] for k in ("auroc_raw", "auroc_raw_ci", "auroc", "auroc_ci",
                                                                            "ece", "ece_bins", "aurc", "aurc_optimal")],
                      rows)] + qpp_tables(res),
        figures=_calibration_figures(ctx, res, summary["calibration"]),
        notes=[info.mapping, info.direction_rule] + flags + incremental_notes(res),
        claims=[c for c in res.claims if c.section == "calibration"])


class RetrievalStage(Stage[RetrievalRequest]):
    """Norm-aware scorers on SciFact (fitted on train, evaluated on test) and the norm as a confidence signal."""

    name = "retrieval"
    sections = {"retrieval": "Norm-aware retrieval", "calibration": "Calibration: the norm as a confidence signal"}
    size_names = ("retrieval_docs", "retrieval_queries", "n_boot")
    reads = ("scifact",)

    def request(self, config) -> RetrievalRequest:
        """SciFact: scorers fitted on train, evaluated on test (None sizes: all documents and queries)."""
        s = config.sizes
        return RetrievalRequest(dataset="scifact", max_docs=s.retrieval_docs, max_queries=s.retrieval_queries,
                                engine=config.engine, address=config.address,
                                embedding=Embedding(model=config.model, device=config.device, precision=config.precision,
                                                    runtime=config.runtime),
                                resampling=Resampling(n_boot=s.n_boot, n_perm=10000, seed=config.seed))

    def key(self, request: RetrievalRequest, *, fingerprint, data_dir) -> str:
        # the engine is not part of the key: the vectors are equal to 1e-6 on either engine (docs/scale.md)
        return super().key(request.replace(engine="local", address=None, workers=None), fingerprint=fingerprint,
                           data_dir=data_dir)

    def commands(self, request: RetrievalRequest) -> list[Command]:
        return [Command(tuple(request.argv() + ["--json", "retrieval.json"]))]

    def section_results(self, commands: Sequence[Command], outputs: Sequence[dict]) -> dict[str, dict]:
        (out,) = outputs
        return {"retrieval": {k: v for k, v in out.items() if k not in _CALIBRATION_KEYS},
                "calibration": {k: {kk: vv for kk, vv in v.items() if kk not in _CURVES}
                                for k, v in out["calibration"].items()}}

    def run(self, ctx, request: RetrievalRequest) -> dict[str, Section]:
        try:
            data_path(request.dataset)  # --data / shared copy, else fetched; offline: names the fetch command
        except DataError as exc:
            raise data_unavailable([exc]) from None
        # by name, as the command names it (found the same way), so that its JSON names no machine's path
        res = run_retrieval(request, encoder=ctx.encoder(), progress=True)
        summary = to_jsonable(res.to_dict())
        cost, why = measure_cost(res, ctx.encoder())
        commands = self.commands(request)
        results = self.section_results(commands, [summary])
        retrieval = Section(
            "retrieval", commands=commands,
            sizes=(f"SciFact: {res.n_docs} documents, {res.n_queries.eval} '{res.split}' queries evaluated, "
                   f"parameters fitted on {res.n_queries.fit} queries of '{res.fit_split}'"),
            result=results["retrieval"], derived={"delta_ndcg10_vs_cosine": {n: r.delta for n, r in res.scorers.items()},
                                                  "inference_cost": cost},
            key_numbers=[KeyNumber(f"scorers.{n}.ndcg@10", f"nDCG@10, {n}", r.ndcg10) for n, r in res.scorers.items()],
            tables=_retrieval_tables(res), notes=_retrieval_notes(res),
            claims=[c for c in res.claims if c.section != "calibration"] + [cost_claim(cost, why)])
        calibration = _calibration_section(ctx, res, summary, results["calibration"], commands, request.resampling.n_boot)
        return {"retrieval": retrieval, "calibration": calibration}

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        if section.key == "retrieval":
            return retrieval_sentences(section.result)
        return calibration_sentences(section.result)

    def headline(self, section: Section) -> str:
        if section.key == "calibration":
            return "AUROC: " + ", ".join(f"{k} {num(SignalCalibration.from_json(v).auroc)}"
                                         for k, v in (section.result or {}).items())
        res = RetrievalResult.from_dict(section.result)
        return "nDCG@10: " + ", ".join(f"{name} {num(v.ndcg10)}" + (f" (p {num(v.p_value)})" if v.p_value is not None else "")
                                       for name, v in res.scorers.items())

    def sizes_used(self, sizes, request: RetrievalRequest, sections) -> dict[str, int]:
        used = super().sizes_used(sizes, request, sections)
        sec = sections["retrieval"]
        if sec.ok and sec.result:
            res = RetrievalResult.from_dict(sec.result)
            if isinstance(res.n_docs, int):
                used["retrieval_docs"] = res.n_docs
            if isinstance((res.n_queries or QueryCounts()).eval, int):
                used["retrieval_queries"] = res.n_queries.eval
        return used

