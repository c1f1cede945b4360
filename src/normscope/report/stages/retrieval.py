"""Report stages ``retrieval`` and ``calibration`` (``normscope retrieval``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from normscope.report.context import StageContext, StageUnavailable
from normscope.report.stages._common import jsonable, ci_text

__all__ = ["stage_retrieval"]


def _scifact_dir(ctx: StageContext) -> Path:
    from normscope.data import data_path
    from normscope.errors import DataError

    try:
        return data_path("scifact")  # --data / shared copy, else fetched; offline: names the fetch command
    except DataError as exc:
        raise StageUnavailable(str(exc)) from None


def stage_retrieval(ctx: StageContext) -> dict:
    d = _scifact_dir(ctx)
    from normscope.retrieval.beir import load_beir
    from normscope.retrieval.calibration import auroc_bootstrap_ci
    from normscope.retrieval.pipeline import plot_reliability, plot_risk_coverage, run_retrieval

    s = ctx.sizes
    seed = ctx.config.seed
    summary, run_df = run_retrieval(d, encoder=ctx.encoder(), max_docs=s.retrieval_docs,
                                    max_queries=s.retrieval_queries, seed=seed, progress=True,
                                    device=ctx.config.device)
    summary = jsonable(summary)
    cmd = f"normscope retrieval --dataset {d}"
    if s.retrieval_docs is not None:
        cmd += f" --max-docs {s.retrieval_docs}"
    if s.retrieval_queries is not None:
        cmd += f" --max-queries {s.retrieval_queries}"
    cmd += f" --seed {seed} --json retrieval.json"
    scorers = summary.get("scorers") or {}
    base = (scorers.get("cosine") or {}).get("ndcg@10")
    rows = []
    for name, r in scorers.items():
        param = r.get("param")
        if isinstance(param, list):
            param = ", ".join(f"{p:.4g}" for p in param if p is not None)
        nd = r.get("ndcg@10")
        rows.append([name, r.get("param_name") or "none", param if param is not None else "none",
                     r.get("fitted_on") or "nothing fitted", nd, r.get("mrr@10"), r.get("recall@100"),
                     (nd - base) if (nd is not None and base is not None and name != "cosine") else None,
                     r.get("p_value"), r.get("p_value_randomization")])
    nq = summary.get("n_queries") or {}
    sizes = (f"SciFact: {summary.get('n_docs')} documents, {nq.get('eval')} '{summary.get('split')}' queries "
             f"evaluated, parameters fitted on {nq.get('fit')} queries of '{summary.get('fit_split')}'")
    notes = []
    for name, r in scorers.items():
        if r.get("param_at_grid_edge"):
            notes.append(f"{name}: the fitted {r.get('param_name')} lies at the edge of its search grid.")
    exc = summary.get("excluded_queries") or {}
    for split_name, counts in exc.items():
        if counts and any(counts.values()):
            notes.append(f"excluded {split_name} queries: {counts}")
    sig = summary.get("significance") or {}
    notes += [f"p (t-test): {sig.get('p_value')}", f"p (randomisation): {sig.get('p_value_randomization')}"]
    # example queries (dataset text: escaped on the page)
    qtext = load_beir(d, splits=[]).queries
    cos = run_df[(run_df["scorer"] == "cosine") & (run_df["rank"] == run_df["rank"].min())]
    cos = cos.sort_values("query_norm")
    examples = []
    pick = list(cos.head(3).itertuples()) + list(cos.tail(3).itertuples())
    for t in pick:
        examples.append([qtext.get(str(t.query_id), ""), float(t.query_norm), str(t.doc_id),
                         "yes" if int(t.relevance) > 0 else "no"])
    retrieval = {
        "status": "ok",
        "reason": None,
        "command": cmd,
        "sizes": sizes,
        "result": {k: v for k, v in summary.items() if k not in ("calibration", "calibration_info")},
        "derived": {"delta_ndcg10_vs_cosine": {n: (r.get("ndcg@10") - base) if base is not None and r.get("ndcg@10") is not None else None
                                               for n, r in scorers.items()}},
        "key_numbers": [[f"nDCG@10, {n}", r.get("ndcg@10"), ""] for n, r in scorers.items()],
        "tables": [
            {"title": "Scorers on the evaluation queries (parameters fitted on another split; p vs cosine on nDCG@10)",
             "columns": ["scorer", "parameter", "fitted value", "fitted on", "nDCG@10", "MRR@10", "Recall@100",
                         "\u0394 nDCG@10 vs cosine", "p (paired t)", "p (randomisation)"],
             "rows": rows},
            {"title": "Lowest- and highest-norm queries (cosine top-1)",
             "columns": ["query", "||q||", "top-1 document", "top-1 relevant"], "rows": examples},
        ],
        "figures": [],
        "notes": notes,
    }

    # calibration
    cal = summary.get("calibration") or {}
    info = summary.get("calibration_info") or {}
    top1 = run_df[run_df["scorer"] == "cosine"].sort_values(["query_id", "rank"])
    first = top1.groupby("query_id", sort=False).nth(0).set_index("query_id")
    second = top1.groupby("query_id", sort=False).nth(1).set_index("query_id")
    raw = {
        "query_norm": first["query_norm"].to_numpy(np.float64),
        "top_doc_norm": first["doc_norm"].to_numpy(np.float64),
        "top1_score": first["score"].to_numpy(np.float64),
        "margin": (first["score"] - second["score"].reindex(first.index)).to_numpy(np.float64),
    }
    y = (first["relevance"].to_numpy() > 0).astype(np.int64)
    from sklearn.metrics import roc_auc_score

    cal_rows = []
    derived = {}
    for name, c in cal.items():
        ci = None
        if name in raw and len(np.unique(y)) == 2 and c.get("auroc_raw") is not None:
            a_raw = float(roc_auc_score(y, raw[name]))
            if abs(a_raw - c["auroc_raw"]) < 1e-9 and c.get("auroc") is not None:
                flipped = abs(c["auroc"] - (1 - a_raw)) < 1e-9 and abs(c["auroc"] - a_raw) > 1e-9
                r_ci = auroc_bootstrap_ci(-raw[name] if flipped else raw[name], y, n_boot=s.n_boot, seed=seed)
                ci = r_ci
        derived[name] = {"auroc_ci": ci}
        cal_rows.append([name, c.get("auroc"), ci_text(ci) if ci else "n/a", c.get("auroc_raw"), c.get("ece"),
                         c.get("aurc"), c.get("aurc_optimal")])
    figs = []
    if cal:
        p1 = plot_reliability(summary, ctx.figure_path("calibration_reliability.png"))
        figs.append({"file": Path(p1).name, "caption": "Reliability diagrams (15 bins): fraction of queries whose "
                     "cosine top-1 is relevant against the mapped confidence of each signal; dashed: perfect calibration."})
        p2 = plot_risk_coverage(summary, ctx.figure_path("calibration_risk_coverage.png"))
        figs.append({"file": Path(p2).name, "caption": "Risk-coverage: error rate of the answered queries as queries "
                     "with the lowest confidence are withheld (lower is better); AURC in the legend."})
    calibration = {
        "status": "ok" if cal else "unavailable",
        "reason": None if cal else "the retrieval run returned no calibration",
        "command": cmd,
        "sizes": f"{nq.get('eval')} evaluation queries; maps fitted on {info.get('fitted_on')}",
        "result": {k: {kk: vv for kk, vv in v.items() if kk not in ("reliability", "risk_coverage")}
                   for k, v in cal.items()},
        "derived": {"auroc_bootstrap_ci": derived, "info": info, "n_boot": s.n_boot},
        "key_numbers": [["label", info.get("label"), ""], ["base rate (evaluation)", info.get("base_rate_eval"), ""],
                        ["fitted on", info.get("fitted_on"), ""], ["ECE bins", info.get("ece_bins"), ""]],
        "tables": [{"title": "Confidence signals for 'the top-1 is relevant' (AUROC 0.5 = chance; CI: report's "
                             "percentile bootstrap over queries)",
                    "columns": ["signal", "AUROC", "95% CI", "AUROC (raw signal)", "ECE", "AURC", "AURC (oracle)"],
                    "rows": cal_rows}],
        "figures": figs,
        "notes": [str(info.get("mapping"))] if info.get("mapping") else [],
    }
    return {"retrieval": retrieval, "calibration": calibration}
