"""The per-query studies of ``run_retrieval``'s evaluation queries: strata, calibration, the QPP table, the norm's
incremental value, nAUC (MTEB's abstention metric) and the per-query table.

Split from :mod:`normscope.retrieval.pipeline` (issue 40); ``run_retrieval`` calls :func:`_query_studies`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from normscope.data.beir import SplitQueries
from normscope.errors import InputError
from normscope.requests.retrieval import RetrievalRequest
from normscope.retrieval.abstention import MTEB_CONFIDENCES as MTEB_NAMES
from normscope.retrieval.abstention import NORM_CONFIDENCES, abstention_study, confidence_table
from normscope.retrieval.calibration import N_BINS
from normscope.retrieval.confidence import DIRECTION, SIGNALS, calibration_study, query_signals
from normscope.retrieval.incremental import FOLD_DRAWS, FOLDS, incremental_value
from normscope.retrieval.loading import _Phases, _Splits, _Vectors
from normscope.retrieval.qpp_baselines import AGREEMENT_K, topk_agreement
from normscope.retrieval.qpp import (BASELINE_SIGNALS, NORM_SIGNALS, QPP_SIGNALS, corpus_scores, csls_hubness, evaluate_qpp,
                                    qpp_signals)
from normscope.retrieval.search import FoldedIndex
from normscope.retrieval.strata import quartiles, query_zipf, strata_study

__all__ = ["qpp_info", "incremental_study", "SINGLE_FOLD_DRAWS"]


def _query_studies(sp: _Splits, vec: _Vectors, runs: dict, per: dict, order: list[str], folds, fitted_on: str,
                   r: RetrievalRequest, ph: _Phases, designs: dict | None = None, agreement: dict | None = None) -> dict:
    """The per-query studies of the evaluation queries, as result fields: strata (their CIs refitting each
    fitted scorer's parameter, ``designs``), calibration, QPP and the norm's incremental value (with
    ``model_agreement`` when a second model's run is given, ``agreement``), and the per-query table."""
    covariates, strata = _strata(sp.ev, vec, runs, per, order, r, ph, designs or {})
    sig_ev, sig_fit, calibration, conf = _calibration(sp, vec, runs, folds, r, ph)
    y_ev = sig_ev["top1_relevant"].to_numpy()
    s_corpus, qpp_df, qpp, incremental = _qpp_study(sp.ev, vec, runs, per, y_ev, r, ph, agreement)
    abstention = _abstention(sp.ev, runs, per, sig_ev, r, ph)
    n_boot = r.resampling.n_boot
    return dict(
        abstention=abstention,
        strata=strata, calibration=calibration,
        calibration_info=_calibration_info(fitted_on, n_boot=n_boot, y_ev=y_ev, sig_fit=sig_fit),
        qpp=qpp, qpp_info=qpp_info(n_boot=n_boot, smv_cut=int(qpp_df.attrs.get("smv_cut", 0)), depth=r.k,
                                   agreement=agreement),
        calibration_incremental=incremental,
        per_query=_per_query_table(sp.ev, sig_ev, covariates, s_corpus, qpp_df, per, conf, strata, order),
    )


def _strata(ev: SplitQueries, vec: _Vectors, runs: dict, per: dict, order: list[str], r: RetrievalRequest,
            ph: _Phases, designs: dict | None = None) -> tuple[dict, dict]:
    """The strata's covariates (query norm, query Zipf frequency, the cosine top-1 document's norm) and the
    strata study of nDCG@10 (not computed below 8 evaluation queries); a fitted scorer's stratum CIs refit its
    parameter on every draw (``designs``: :func:`_refit_strata`)."""
    top1 = [next(iter(runs["cosine"][q]), None) for q in ev.query_ids]
    dnorm = dict(zip(vec.doc_ids, vec.doc_norms))
    covariates = {"query_norm": vec.qev_norms, "query_zipf": query_zipf(ev.texts),
                  "top_doc_norm": np.array([dnorm[d] if d is not None else np.nan for d in top1])}
    with ph("strata", "3 stratifiers x 4 quartiles per scorer"):
        strata = (strata_study({s: per[s]["ndcg@10"] for s in order}, covariates, n_boot=r.resampling.n_boot,
                               n_permutations=r.resampling.n_perm, seed=r.resampling.seed)
                  if len(ev.query_ids) >= 8 else {"status": "not computed", "reason": "fewer than 8 evaluation queries"})
        _refit_strata(strata, covariates, designs or {}, order)
    return covariates, strata


def _refit_strata(strata: dict, covariates: dict, designs: dict, order: list[str]) -> None:
    """Replace each fitted scorer's stratum CIs by refitted ones (the fixed-parameter CIs kept as
    ``*_fixed_param``; ``ci_resamples`` on every row)."""
    if not isinstance(strata.get("scorers"), dict):
        return
    for s, rows in strata["scorers"].items():
        d = designs.get(s)
        cis = {name: d.strata(quartiles(covariates[name])[0]) for name, info in strata["stratifiers"].items()
               if info["status"] == "ok"} if d is not None else {}
        for row in rows:
            if d is None:
                row["ci_resamples"] = "the stratum's evaluation queries (nothing fitted)"
                continue
            ci = cis.get(row["stratifier"], {}).get(row["quartile"])
            row["ci_resamples"] = "the stratum's " + d.resamples
            if ci is not None and row.get("mean_delta_ci") is not None:
                row.update(mean_delta_ci_fixed_param=row["mean_delta_ci"], relative_ci_fixed_param=row["relative_ci"],
                           mean_delta_ci=ci["mean_diff_ci"], relative_ci=ci["relative_ci"])


def _calibration(sp: _Splits, vec: _Vectors, runs: dict, folds, r: RetrievalRequest, ph: _Phases):
    """Confidence signals of the cosine run's top-1 (and of the fitting split's own cosine run) and the
    calibration study: (signals of ev, signals of fit or None, calibration, calibrated confidences)."""
    ev, fit = sp.ev, sp.fit
    with ph("calibration", f"{len(SIGNALS)} signals"):
        sig_ev = query_signals(runs["cosine"], query_ids=ev.query_ids, query_norms=vec.qev_norms, doc_ids=vec.doc_ids,
                               doc_norms=vec.doc_norms, qrels=ev.qrels)
        sig_fit = None
        if sp.mode == "split":
            fit_cos = FoldedIndex(vec.D, vec.doc_ids, "cosine").search(vec.Qfit, fit.query_ids, k=2,
                                                                       ignore_identical_ids=r.ignore_identical_ids)
            sig_fit = query_signals(fit_cos, query_ids=fit.query_ids,
                                    query_norms=np.linalg.norm(vec.Qfit.astype(np.float64), axis=1),
                                    doc_ids=vec.doc_ids, doc_norms=vec.doc_norms, qrels=fit.qrels)
        calibration, conf = calibration_study(sig_ev, sig_fit=sig_fit, folds=folds, n_boot=r.resampling.n_boot,
                                              seed=r.resampling.seed)
    return sig_ev, sig_fit, calibration, conf


def _qpp_study(ev: SplitQueries, vec: _Vectors, runs: dict, per: dict, y_ev: np.ndarray, r: RetrievalRequest,
               ph: _Phases, agreement: dict | None = None):
    """The QPP predictors of the cosine run (and ``model_agreement`` with a second model's run), their evaluation
    on top-1 relevance and nDCG@10, and the norm's incremental value: (corpus scores s(C), predictor frame, QPP
    table, incremental study)."""
    n_boot, seed = r.resampling.n_boot, r.resampling.seed
    extra = ("model_agreement",) if agreement is not None else ()
    with ph("QPP baselines and the norm's incremental value",
            f"{len(QPP_SIGNALS) + len(extra)} predictors; {FOLDS}-fold cross-fitting x {FOLD_DRAWS} fold draws"):
        s_corpus = corpus_scores(vec.Qev, vec.D)
        qpp_df = qpp_signals(runs["cosine"], query_ids=ev.query_ids, query_texts=ev.texts, query_norms=vec.qev_norms,
                             doc_ids=vec.doc_ids, doc_norms=vec.doc_norms, corpus_score=s_corpus,
                             doc_hubness=csls_hubness(vec.D, vec.Qev))  # CSLS's query bank: the evaluated queries
        if agreement is not None:
            qpp_df["model_agreement"] = topk_agreement(runs["cosine"], agreement["run"], ev.query_ids, k=AGREEMENT_K)
        ndcg_cos = per["cosine"]["ndcg@10"]
        qpp = evaluate_qpp(qpp_df, top1_relevant=y_ev, ndcg=ndcg_cos, names=QPP_SIGNALS + extra, n_boot=n_boot,
                           seed=seed)
        incremental = incremental_study(qpp_df, y_ev, ndcg_cos, n_boot=n_boot, seed=seed, extra_baselines=extra)
    return s_corpus, qpp_df, qpp, incremental


def _abstention(ev: SplitQueries, runs: dict, per: dict, sig_ev, r: RetrievalRequest, ph: _Phases) -> dict:
    """nAUC of nDCG@10 of the cosine run (:mod:`normscope.retrieval.abstention`) for MTEB's confidences of the
    cosine run's scores and the norm signals; ``status: "not computed"`` with the reason when it cannot be."""
    with ph("nAUC (MTEB abstention)", f"{len(MTEB_NAMES)} MTEB confidences and {len(NORM_CONFIDENCES)} norm signals"):
        conf = confidence_table(runs["cosine"], ev.query_ids)
        conf.update({name: d * sig_ev[col].to_numpy(np.float64) for name, (col, d) in NORM_CONFIDENCES.items()})
        try:
            return abstention_study(conf, per["cosine"]["ndcg@10"], depth=r.k, n_boot=r.resampling.n_boot,
                                    seed=r.resampling.seed)
        except InputError as exc:
            return {"status": "not computed", "reason": str(exc)}


def _per_query_table(ev: SplitQueries, sig_ev, covariates: dict, s_corpus, qpp_df, per: dict, conf: dict,
                     strata: dict, order: list[str]):
    """One row per evaluation query: signals, text, covariates, QPP predictors, nDCG@10 and calibrated
    confidence per scorer, and the stratifiers' quartiles (0 for a stratifier not computed)."""
    per_query = sig_ev.assign(split=ev.split, text=ev.texts, query_zipf=covariates["query_zipf"], corpus_score=s_corpus,
                              **{c: qpp_df[c].to_numpy() for c in (*QPP_SIGNALS, "model_agreement")
                                 if c in qpp_df.columns and c not in sig_ev.columns},
                              **{f"ndcg@10_{s}": per[s]["ndcg@10"] for s in order},
                              **{f"confidence_{s}": c for s, c in conf.items()})
    if isinstance(strata.get("stratifiers"), dict):
        for name, info in strata["stratifiers"].items():
            per_query[f"quartile_{name}"] = quartiles(covariates[name])[0] if info["status"] == "ok" else 0
    return per_query


def _calibration_info(fitted_on: str, *, n_boot: int, y_ev: np.ndarray, sig_fit) -> dict:
    """How the calibration study was computed (the ``calibration_info`` of the JSON)."""
    return {
        "label": "top-1 document of the cosine run is relevant (judgement score >= 1)",
        "reference_run": "cosine", "fitted_on": fitted_on, "ece_bins": N_BINS,
        "mapping": "Platt scaling (1-D logistic regression, slope >= 0 in the fixed direction) for raw signals; "
                   "learned signals are logistic-regression probabilities; top1_score_uncalibrated has no map",
        "direction": {**DIRECTION, "rule": "fixed before any fit: +1 reads a higher value as more confidence; -1 "
                      "(the norms) reads a larger norm as less reliable, as the paper's cos/(1 + alpha||z||) does; "
                      "auroc_raw is the AUROC of direction x signal"},
        "auroc_ci": f"percentile bootstrap over evaluation queries ({n_boot} resamples), maps held fixed",
        "base_rate_eval": float(y_ev.mean()),
        "base_rate_fit": float(sig_fit["top1_relevant"].mean()) if sig_fit is not None else None}


def qpp_info(*, n_boot: int, smv_cut: int, depth: int, agreement: dict | None = None) -> dict:
    """How the QPP table was computed (the ``qpp_info`` of the JSON); ``agreement`` (the second model's run, when
    ``model_agreement`` was computed) adds the key ``agreement``: the model, its fingerprint, k and the statistic."""
    extra = {} if agreement is None else {"agreement": {
        "model": agreement["model"], "fingerprint": agreement["fingerprint"], "k": AGREEMENT_K,
        "statistic": f"Jaccard overlap of the two models' cosine top-{AGREEMENT_K} document sets (order inside the "
                     "top k ignored; not rank-biased overlap)"}}
    return {**_qpp_info(n_boot=n_boot, smv_cut=smv_cut, depth=depth), **extra}


def _qpp_info(*, n_boot: int, smv_cut: int, depth: int) -> dict:
    return {
        "run": f"the cosine run of the evaluation queries, depth {depth}",
        "corpus_score": "s(C) = mean cosine of the query with every corpus document = <q/||q||, mean_j d_j/||d_j||>",
        "adaptations": "scores are cosines, not log-probabilities: WIG without 1/sqrt(|q|); NQC and SMV divide by |s(C)|; "
                       "SMV over the top-k documents with a positive cosine",
        "smv_cut": smv_cut,
        "direction": "fixed before any data: +1 score-based predictors and query_length, -1 the norms and their spread; "
                     "every statistic is of direction x signal",
        "tasks": "top-1 relevant (AUROC, AURC) and per-query nDCG@10 of the cosine run (Kendall tau-b, Spearman rho)",
        "ci": f"percentile bootstrap over evaluation queries ({n_boot} resamples, one index set for every signal)",
        "baselines": list(BASELINE_SIGNALS), "norm_signals": list(NORM_SIGNALS),
    }


#: Fold draws of each single-baseline comparison (the joint one uses incremental.FOLD_DRAWS = 20).
SINGLE_FOLD_DRAWS = 5


def incremental_study(qpp_df, top1_relevant, ndcg, *, n_boot: int, seed: int,
                      extra_baselines: Sequence[str] = ()) -> dict:
    """``calibration_incremental``: the norm signals added to every free baseline at once (top-1 and nDCG@10),
    then to each baseline alone (top-1 task, :data:`SINGLE_FOLD_DRAWS` fold draws; ``single_baselines``, ``best_single``).
    ``extra_baselines``: columns of ``qpp_df`` beside :data:`~normscope.retrieval.qpp.BASELINE_SIGNALS` that count
    as free baselines too (``model_agreement``).

    Never raises on a design that cannot be fitted (too few queries, one class): the entry is then
    ``status: "not computed"`` with the reason and the contract's fields set to None.
    """
    baselines = tuple(BASELINE_SIGNALS) + tuple(extra_baselines)
    base = {"task": "top1_relevant", "baseline": list(baselines), "added": list(NORM_SIGNALS),
            "auroc_without": None, "auroc_with": None, "diff": None, "ci": None, "resamples": "queries", "folds": FOLDS,
            "fold_draws": FOLD_DRAWS, "n_queries": int(len(qpp_df)), "seed": int(seed)}
    try:
        out = incremental_value(qpp_df, baseline=baselines, added=NORM_SIGNALS, top1_relevant=top1_relevant,
                                ndcg=ndcg, n_boot=n_boot, seed=seed)
    except InputError as exc:
        return {**base, "status": "not computed", "reason": str(exc)}
    singles = []
    if out.get("status") == "ok":
        for b in baselines:
            r = incremental_value(qpp_df, baseline=[b], added=NORM_SIGNALS, top1_relevant=top1_relevant, n_boot=n_boot,
                                  seed=seed, fold_draws=SINGLE_FOLD_DRAWS)
            singles.append({k: r[k] for k in ("baseline", "auroc_without", "auroc_with", "diff", "ci", "fold_draws")})
    out["single_baselines"] = singles
    best = max(singles, key=lambda r: r["auroc_without"], default=None)
    out["best_single"] = best and {**best, "note": "the single baseline with the highest cross-fitted AUROC (chosen on "
                                                  "the same queries; the norms are added to it in the same folds)"}
    return out


