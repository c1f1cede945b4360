"""``run_retrieval``: the norm-aware retrieval and calibration study on one BEIR dataset.

The entry point behind ``normscope retrieval``; it returns a :class:`RetrievalResult` whose
``to_dict()`` is the ``--json`` summary and whose ``items`` table is the ``-o`` parquet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from normscope._format import plural
from normscope import encoders  # load_encoder looked up when called (tests replace it)
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import InputError
from normscope.data.beir import BeirDataset, SplitQueries
from normscope.engine import check_engine
from normscope.retrieval.claims import retrieval_claims
from normscope.retrieval import evaluate as _evaluate_module  # default_grid read when called (tests replace it)
from normscope.retrieval.evaluate import METRICS, compare_to_baseline, default_grid, per_query_scores
# The loading steps and the per-query studies live in their own modules; the names other modules and the tests
# import from here stay importable here.
from normscope.retrieval.loading import (N_FOLDS, _duplicate_docs, _drop_junk, _embed, _embed_splits, _junk_entry,
                                         _load_splits, _Phases, _resolve_fit_split, _sorted_split, _Splits,
                                         _subsample_docs, _subsample_queries, _Vectors)
from normscope.retrieval.qpp_baselines import AGREEMENT_K
from normscope.retrieval.refit import RefitDesign, per_query_grid
from normscope.requests.retrieval import RetrievalRequest
from normscope.retrieval.result import RetrievalResult
from normscope.retrieval.studies import SINGLE_FOLD_DRAWS, _query_studies, incremental_study, qpp_info
from normscope.scoring import NEUTRAL_PARAM, PARAM_NAMES, check_scorer, choose_param, validate_param
from normscope.retrieval.search import TIE_RULE, FoldedIndex, run_to_frame

__all__ = ["run_retrieval", "N_FOLDS", "qpp_info", "incremental_study", "SINGLE_FOLD_DRAWS", "_Phases", "_drop_junk",
           "_duplicate_docs", "_embed", "_junk_entry", "_resolve_fit_split", "_sorted_split", "_subsample_docs",
           "_subsample_queries"]


def _check_params(params: Mapping[str, float] | None, scorers: Sequence[str]) -> dict[str, float]:
    out = {}
    for s, p in (params or {}).items():
        check_scorer(s)
        if PARAM_NAMES[s] is None:
            raise InputError(f"scorer '{s}' takes no parameter")
        if s not in scorers:
            raise InputError(f"a fixed {PARAM_NAMES[s]} was given but scorer '{s}' is not run")
        if p is None or not math.isfinite(float(p)):
            raise InputError(f"{s}: {PARAM_NAMES[s]}={p} is not finite")
        out[s] = float(p)
    return out


def run_retrieval(request: RetrievalRequest, *, encoder=None, progress: bool = False) -> RetrievalResult:
    """Norm-aware retrieval, where its gain lies, and confidence calibration on a BEIR dataset.

    Steps (each a phase line on stderr with ``progress``): load the dataset; embed documents
    (``title + " " + text``) and queries through :func:`normscope.embed_texts` (the embedding cache;
    junk items left out and listed); for each scorer fit its parameter (``alpha`` / ``beta``) by grid
    search maximising nDCG@10 on ``fit_split`` queries (never on ``split``), or take it fixed from
    ``params``; exact top-``k`` search of ``split`` queries under the tie rule
    (:data:`~normscope.retrieval.search.TIE_RULE`); nDCG@10, MRR@10, Recall@100 with paired tests
    and CIs against cosine; the pre-specified strata (:mod:`normscope.retrieval.strata`);
    confidence signals of the cosine run's top-1 with maps fitted on the fitting queries
    (:mod:`normscope.retrieval.confidence`).

    Parameters
    ----------
    request : RetrievalRequest
        What to run (:class:`~normscope.requests.retrieval.RetrievalRequest`). ``dataset``: a BEIR
        directory, ``scifact``/``nfcorpus`` or ``hf:BeIR/<name>`` (needs the ``datasets`` extra and
        network). ``scorers``: cosine always runs (baseline of the tests and of the calibration study).
        ``fit_split``: the split whose queries fit the parameters and confidence maps; ``'train'`` falls
        back to ``dev``/``validation``, then to 5-fold cross-validation over the evaluation queries (folds
        drawn from the queries in id order with the seed; each fold scored with parameters and maps fitted
        on the other four); ``'cv'`` or None asks for cross-validation directly. ``params``: fixed
        parameters (e.g. ``(("inverse_norm", 0.05),)`` for a paper's alpha), evaluated as given and marked
        "not fitted". ``relevance``: the gains of nDCG (:func:`~normscope.retrieval.evaluate.relevance_qrels`;
        graded as BEIR). ``embedding.junk``: junk queries or documents (:func:`normscope.inputs.find_junk`)
        are left out of every statistic and listed, or stop the run. ``max_docs``/``max_queries``: seeded
        subsamples drawn in id order, ``max_queries`` per split, ``max_docs`` keeping every document relevant
        to a kept query plus a random sample of the others. ``k``: depth of the evaluated runs.
        ``resampling``: ``n_perm`` permutations of the paired randomisation tests, ``n_boot`` bootstrap
        resamples of the CIs (queries resampled), ``seed`` of subsampling, folds, tests and bootstraps.
        ``grids``: parameter grids replacing :func:`normscope.scoring.default_grid`. ``engine``: where the
        documents are embedded (:mod:`normscope.engine`; ``'ray'`` needs the ``ray`` extra, ``address`` and
        ``workers`` its cluster and actors); queries are embedded in this process; vectors equal the local
        engine's to 1e-6.
    encoder : Encoder, keyword-only, optional
        Raw-vector encoder; default ``normscope.load_encoder(request.embedding.model, device=..., precision=...)``.
        A given encoder keeps its own precision. The result reports it and, for bf16, the norm error
        measured on a sample against fp32.
    progress : bool, keyword-only
        Phase lines and progress bars on stderr.

    Returns
    -------
    RetrievalResult

    Raises
    ------
    InputError
        Unknown scorer, relevance or junk mode, fit split equal to the evaluation split, bad sizes,
        a fixed parameter for a scorer that is not run, junk with ``junk='error'``, normalised vectors.
    DataError
        Missing or malformed dataset, missing split.
    ModelError
        Model cannot be loaded.
    """
    r = request
    order = ["cosine"] + [s for s in dict.fromkeys(r.scorers) if s != "cosine"]
    check_engine(r.engine, r.address, r.workers)
    fixed = _check_params(dict(r.params), order)
    ph = _Phases(progress)
    rng = np.random.default_rng(r.resampling.seed)
    sp = _load_splits(r, rng, ph)
    if encoder is None:
        encoder = _load_model(r, ph)
    sp, vec = _embed_splits(sp, encoder, r, ph, progress)
    agreement = _agreement_run(sp, vec, r, ph, progress) if r.agreement_model else None
    folds = _cv_folds(sp, rng)
    fitted_on = sp.fit_name if sp.mode == "split" else f"{N_FOLDS}-fold cross-validation over '{r.split}' queries"
    runs, results, grids = {}, {}, {}  # scorer -> its run; its summary; its per-query nDCG@10 over the grid
    for s in order:
        runs[s], results[s] = _score(s, sp, vec, r, fixed=fixed, folds=folds, fitted_on=fitted_on, ph=ph, store=grids)
    _refit_grids(sp, vec, grids, r, ph)
    per = _evaluate(sp.ev, runs, results, order, r, ph)
    designs = _refit_overall(grids, per, results, order, r, ph)
    res = RetrievalResult(**_run_fields(r, sp, vec, encoder, fitted_on), scorers={s: results[s] for s in order},
                          **_query_studies(sp, vec, runs, per, order, folds, fitted_on, r, ph, designs, agreement),
                          doc_norm_range=[float(vec.doc_norms.min()), float(vec.doc_norms.max())],
                          items=_items_frame(sp.ev, vec, runs, order), doc_titles=_titles(sp.ds, vec.doc_ids),
                          timings=ph.timings)
    res.claims = retrieval_claims(res)
    return res


def _agreement_run(sp: _Splits, vec: _Vectors, r: RetrievalRequest, ph: _Phases, progress: bool) -> dict:
    """The second model's cosine run (top :data:`AGREEMENT_K`) of the evaluation queries over the same kept
    documents (``r.agreement_model``, embedded through the embedding cache), with its name and fingerprint:
    ``{"model", "fingerprint", "run"}``."""
    e = r.embedding
    with ph("loading the agreement model", r.agreement_model):
        enc = encoders.load_encoder(r.agreement_model, device=e.device, precision=e.precision, runtime=e.runtime)
    ds, ev = sp.ds, sp.ev
    embedded = set(vec.doc_ids)  # the main model's documents (junk left out)
    docs = [i for i in sp.keep if ds.doc_ids[i] in embedded]
    with ph("embedding the corpus with the agreement model", f"{len(docs):,} documents"):
        dtab = _embed(enc, [ds.doc_texts[i] for i in docs], [ds.doc_ids[i] for i in docs], junk=e.junk,
                      what="documents", batch_size=e.batch_size, progress=progress, engine=r.engine, address=r.address,
                      workers=r.workers)
        qtab = _embed(enc, ev.texts, ev.query_ids, junk=e.junk, what=f"'{ev.split}' queries", batch_size=e.batch_size,
                      progress=progress)
    if len(qtab.ids) != len(ev.query_ids):
        raise InputError(f"the agreement model '{r.agreement_model}' leaves out {len(ev.query_ids) - len(qtab.ids)} "
                         "evaluation queries as junk that the main model embeds: no agreement for them")
    pos = {q: i for i, q in enumerate(qtab.ids)}
    Q = qtab.vectors[[pos[q] for q in ev.query_ids]]
    with ph("agreement run", f"cosine top-{AGREEMENT_K} of {len(ev.query_ids):,} queries"):
        run = FoldedIndex(dtab.vectors, list(dtab.ids), "cosine").search(Q, ev.query_ids, k=AGREEMENT_K,
                                                                        ignore_identical_ids=r.ignore_identical_ids)
    fp = getattr(enc, "fingerprint", None)
    return {"model": fp.name if fp is not None else str(r.agreement_model),
            "fingerprint": fp.to_dict() if fp is not None else None, "run": run}


def _load_model(r: RetrievalRequest, ph: _Phases):
    """The request's model (the default when none is named) at its device and precision."""
    e = r.embedding
    with ph("loading the model", e.model or DEFAULT_MODEL):
        return encoders.load_encoder(e.model or DEFAULT_MODEL, device=e.device, precision=e.precision, runtime=e.runtime)


def _cv_folds(sp: _Splits, rng: np.random.Generator) -> list[np.ndarray] | None:
    """The :data:`N_FOLDS` cross-validation folds (sorted positions in ``ev``) drawn from ``rng``; None when
    fitting on a named split."""
    if sp.mode != "cv":
        return None
    n = len(sp.ev.query_ids)
    if n < 2 * N_FOLDS:
        raise InputError(f"cross-validation needs at least {2 * N_FOLDS} evaluation queries, got {n}")
    return [np.sort(f) for f in np.array_split(rng.permutation(n), N_FOLDS)]


def _score(scorer: str, sp: _Splits, vec: _Vectors, r: RetrievalRequest, *, fixed: dict, folds, fitted_on: str,
           ph: _Phases, store: dict | None = None) -> tuple[dict, dict]:
    """One scorer's top-``k`` run of the evaluation queries and its parameter record: no parameter, a fixed one,
    or fitted by grid search on nDCG@10 (on the fitting split, or per fold on the other folds). A fitted
    scorer's per-query nDCG@10 over the grid goes into ``store`` (``{scorer: [params, eval values or None,
    fit split values or None]}``), what the refitted CIs draw from."""
    store = {} if store is None else store
    ev, D, doc_ids = sp.ev, vec.D, vec.doc_ids
    pname = PARAM_NAMES[scorer]
    grids = {name: list(g) for name, g in r.grids}
    grid = list(grids[scorer]) if scorer in grids else None
    search_kw = {"ignore_identical_ids": r.ignore_identical_ids}
    parts = []
    if pname is None or scorer in fixed:
        what = "searching" if pname is None else f"searching with fixed {pname}={fixed[scorer]:g}"
        with ph(f"{scorer}: {what}", f"{len(ev.query_ids):,} queries, k={r.k}"):
            p = None if pname is None else validate_param(scorer, fixed[scorer], vec.doc_norms)
            run = FoldedIndex(D, doc_ids, scorer, p).search(vec.Qev, ev.query_ids, k=r.k, **search_kw)
        param, source = p, ("none" if pname is None else "fixed (not fitted)")
    else:
        n_grid = len(grid or default_grid(scorer, vec.doc_norms))
        with ph(f"{scorer}: fitting {pname} and searching", f"{n_grid} grid values, {fitted_on}"):
            if sp.mode == "split":
                run, param, store[scorer] = _fit_on_split(scorer, sp, vec, r, grid, parts)
            else:
                run, param, store[scorer] = _fit_by_folds(scorer, sp, vec, r, grid, folds, parts)
        source = "fitted"
    g = grid or default_grid(scorer, vec.doc_norms)
    edge = None if not parts else bool(any(np.isclose(pt["param"], min(g)) or np.isclose(pt["param"], max(g))
                                           for pt in parts))
    return run, {
        "param_name": pname, "param": param, "param_source": source,
        "param_mean": float(np.mean(param)) if isinstance(param, list) else param,
        "neutral_param": NEUTRAL_PARAM[scorer],
        "fitted_on": fitted_on if source == "fitted" else None,
        "fit_metric": "ndcg@10" if source == "fitted" else None,
        "param_at_grid_edge": edge, "fit_curves": parts,
    }


def _grid_values(scorer: str, Q, sq: SplitQueries, vec: _Vectors, r: RetrievalRequest, grid) -> tuple[list, np.ndarray]:
    """Per-query nDCG@10 of ``sq``'s queries at every valid value of ``grid`` (default
    :func:`~normscope.retrieval.evaluate.default_grid`): one exact top-10 search per value."""
    grid = list(grid) if grid is not None else _evaluate_module.default_grid(scorer, vec.doc_norms)
    return per_query_grid(scorer, Q, vec.D, query_ids=sq.query_ids, doc_ids=vec.doc_ids, qrels=sq.qrels, grid=grid,
                          relevance=r.relevance, ignore_identical_ids=r.ignore_identical_ids, doc_norms=vec.doc_norms)


def _best(params: list, values: np.ndarray) -> tuple[float, list[dict]]:
    """The grid fit of :func:`~normscope.retrieval.evaluate.fit_parameter` from per-query values (n, G): its curve
    (each value's mean nDCG@10, a mean of the contiguous column as ``evaluate_run`` takes it) and the chosen value."""
    means = [float(np.ascontiguousarray(values[:, g]).mean()) for g in range(len(params))]
    curve = [{"param": p, "ndcg@10": m} for p, m in zip(params, means)]
    return params[int(choose_param(np.array([means]), params, 0.0)[0])], curve


def _fit_on_split(scorer: str, sp: _Splits, vec: _Vectors, r: RetrievalRequest, grid,
                  parts: list) -> tuple[dict, float, list]:
    """The parameter fitted on the fitting split's queries (its curve appended to ``parts``), the evaluation run
    and the fit queries' per-query values over the grid."""
    search_kw = {"ignore_identical_ids": r.ignore_identical_ids}
    fit = sp.fit
    params, values = _grid_values(scorer, vec.Qfit, fit, vec, r, grid)
    p, curve = _best(params, values)
    parts.append({"part": "fit split", "n_fit": len(fit.query_ids), "param": p, "curve": curve})
    run = FoldedIndex(vec.D, vec.doc_ids, scorer, p).search(vec.Qev, sp.ev.query_ids, k=r.k, **search_kw)
    return run, p, [params, None, values]


def _fit_by_folds(scorer: str, sp: _Splits, vec: _Vectors, r: RetrievalRequest, grid, folds,
                  parts: list) -> tuple[dict, list, list]:
    """Cross-validation: each fold's queries searched with the parameter fitted on the other folds (one part per
    fold appended to ``parts``); the run in evaluation-query order, the per-fold parameters and the evaluation
    queries' per-query values over the grid (each fold's fit is read from the other folds' rows)."""
    search_kw = {"ignore_identical_ids": r.ignore_identical_ids}
    ev = sp.ev
    params, values = _grid_values(scorer, vec.Qev, ev, vec, r, grid)
    run = {}
    for i, f in enumerate(folds):
        tr = np.setdiff1d(np.arange(len(ev.query_ids)), f)
        p, curve = _best(params, values[tr])
        parts.append({"part": f"fold {i + 1}", "n_fit": len(tr), "param": p, "curve": curve})
        run.update(FoldedIndex(vec.D, vec.doc_ids, scorer, p).search(vec.Qev[f], [ev.query_ids[j] for j in f], k=r.k,
                                                                     **search_kw))
    return {q: run[q] for q in ev.query_ids}, [pt["param"] for pt in parts], [params, values, None]


def _evaluate(ev: SplitQueries, runs: dict, results: dict, order: list[str], r: RetrievalRequest, ph: _Phases) -> dict:
    """Per-query metrics of every run and the paired tests and CIs against cosine, written into ``results``;
    returns the per-query scores (scorer -> metric -> array over ``ev``'s queries)."""
    n_permutations, n_boot, seed = r.resampling.n_perm, r.resampling.n_boot, r.resampling.seed
    with ph("evaluating", f"{len(order)} runs, paired tests with {n_permutations:,} permutations"):
        per = {s: per_query_scores(ev.qrels, runs[s], METRICS, relevance=r.relevance) for s in order}
        comp = compare_to_baseline(ev.qrels, runs, baseline="cosine", metrics=METRICS, n_permutations=n_permutations,
                                   seed=seed, relevance=r.relevance, n_boot=n_boot, per_query=per)
    for s in order:
        for m in METRICS:
            results[s][m] = float(per[s][m].mean())
        nd = per[s]["ndcg@10"]  # the ceiling / floor gate of the gain claims (normscope.claims.ceiling_gate)
        results[s].update(ndcg10_at_ceiling=int(np.sum(nd >= 1.0 - 1e-9)), ndcg10_at_floor=int(np.sum(nd <= 1e-12)))
        c = comp.get(s, {}).get("ndcg@10")
        results[s].update(p_value=c and c["p_t_test"], p_value_randomization=c and c["p_randomization"],
                          delta=c and c["mean_diff"], delta_ci=c and c["mean_diff_ci"], relative=c and c["relative"],
                          relative_ci=c and c["relative_ci"], p_values=comp.get(s))
    return per


def _refit_grids(sp: _Splits, vec: _Vectors, grids: dict, r: RetrievalRequest, ph: _Phases) -> None:
    """Complete ``grids`` (what the refitted CIs draw from): with a fitting split, the evaluation queries' per-query
    nDCG@10 at every grid value the fit tried (cross-validation computed them while fitting)."""
    todo = [s for s, g in grids.items() if g[1] is None]
    if not todo:
        return
    with ph("per-query nDCG@10 of the evaluation queries over the parameter grid", ", ".join(todo)):
        for s in todo:
            grids[s][1] = _grid_values(s, vec.Qev, sp.ev, vec, r, grids[s][0])[1]


def _refit_overall(grids: dict, per: dict, results: dict, order: list[str], r: RetrievalRequest, ph: _Phases) -> dict:
    """Each fitted scorer's CIs of the gain over cosine with its parameter refitted on every draw
    (:class:`~normscope.retrieval.refit.RefitDesign`), written into ``results`` (the fixed-parameter CIs kept
    as ``*_fixed_param``); every scorer's ``ci_resamples`` says what its CIs resample. Returns the designs."""
    designs = {}
    base = per["cosine"]["ndcg@10"]
    with ph("refitted CIs", f"{plural(len(grids), 'fitted scorer')}, {r.resampling.n_boot:,} draws"):
        for s in order:
            res = results[s]
            if s == "cosine":
                continue
            if s not in grids:
                res["ci_resamples"] = ("evaluation queries (the parameter was fixed, not fitted)"
                                       if res["param_source"] == "fixed (not fitted)" else
                                       "evaluation queries (nothing fitted)")
                continue
            params, ev_vals, fit_vals = grids[s]
            d = RefitDesign(ev_vals, base, params, NEUTRAL_PARAM[s] or 0.0, fit_values=fit_vals, n_folds=N_FOLDS,
                            n_boot=r.resampling.n_boot, seed=r.resampling.seed)
            ci = d.overall()
            res.update(delta_ci_fixed_param=res["delta_ci"], relative_ci_fixed_param=res["relative_ci"],
                       delta_ci=ci["mean_diff_ci"], relative_ci=ci["relative_ci"], ci_resamples=ci["resamples"],
                       param_draws=ci["param_draws"])
            designs[s] = d
    return designs


def _items_frame(ev: SplitQueries, vec: _Vectors, runs: dict, order: list[str]):
    """The ``-o`` table: every scorer's run, one row per (query, document) with relevance and both norms (float32)."""
    import pandas as pd

    dnorm = dict(zip(vec.doc_ids, vec.doc_norms))
    qnorm = dict(zip(ev.query_ids, vec.qev_norms))
    frames = []
    for s in order:
        df = run_to_frame(runs[s], scorer=s)
        df["relevance"] = [int(ev.qrels.get(q, {}).get(d, 0)) for q, d in zip(df["query_id"], df["doc_id"])]
        df["doc_norm"] = df["doc_id"].map(dnorm).astype(np.float32)
        df["query_norm"] = df["query_id"].map(qnorm).astype(np.float32)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _run_fields(r: RetrievalRequest, sp: _Splits, vec: _Vectors, encoder, fitted_on: str) -> dict:
    """The result's fields that describe the run: dataset, model, settings, sizes, exclusions, junk,
    truncation, precision and how significance is computed."""
    ev, fit, dtab, qtabs = sp.ev, sp.fit, vec.dtab, vec.qtabs
    fp = getattr(encoder, "fingerprint", None)
    counts = {sq.split: {k_: int(v) for k_, v in sq.counts.items()} for sq in sp.splits}
    n_permutations, n_boot, seed = r.resampling.n_perm, r.resampling.n_boot, r.resampling.seed
    return dict(
        dataset=str(r.dataset), dataset_name=sp.ds.name,
        model=fp.name if fp is not None else type(encoder).__name__, model_revision=getattr(fp, "revision", None),
        split=r.split, fit_split=fitted_on, fit_mode=sp.mode, seed=int(seed), k=int(r.k), relevance=r.relevance,
        grade_scale=int(r.grade_scale), tie_rule=TIE_RULE,
        ignore_identical_ids=bool(r.ignore_identical_ids), identical_ids=vec.identical,
        n_docs=len(vec.doc_ids), docs={**sp.doc_info, "n_docs": len(vec.doc_ids), "junk_left_out": dtab.junk.count},
        duplicate_docs=sp.dup_docs,
        n_queries={"eval": len(ev.query_ids), "fit": len(fit.query_ids) if fit else None},
        excluded_queries={"eval": counts[ev.split], "fit": counts[fit.split] if fit else None},
        junk={"documents": {**dtab.junk.to_dict()}, "queries": _junk_entry({s: t for s, t in qtabs.items()})},
        n_truncated={"documents": dtab.n_truncated, **{f"queries_{s}": t.n_truncated for s, t in qtabs.items()}},
        precision=encoder.fingerprint.precision, norm_rel_error_vs_fp32=dtab.norm_rel_error_vs_fp32,
        metrics=list(METRICS),
        significance={
            "p_value": "two-sided paired Student t-test on per-query nDCG@10 vs cosine (scipy.stats.ttest_rel, the test "
                       "of ranx.compare(stat_test='student'))",
            "metrics": "trec_eval (pytrec_eval) on the run's order: score, then document id, descending",
            "p_value_randomization": "two-sided paired sign-flip randomisation test (Fisher), numpy default_rng(seed)",
            "delta_ci": "paired percentile bootstrap over queries of the mean nDCG@10 difference (and of the relative "
                        "difference mean(scorer)/mean(cosine) - 1); a fitted scorer's parameter is refitted on every "
                        "draw (of the fit queries, or of the evaluation queries with the cross-validation folds "
                        "redrawn): each scorer's ci_resamples says what its CIs resample, and *_ci_fixed_param keeps "
                        "the CI with the fitted parameter held fixed",
            "n_permutations": int(n_permutations), "n_boot": int(n_boot), "seed": int(seed)},
    )


def _titles(ds: BeirDataset, doc_ids: Sequence[str]) -> dict[str, str]:
    """Title of each kept document, else the first 80 characters of its text (for display)."""
    pos = {d: i for i, d in enumerate(ds.doc_ids)}
    out = {}
    for d in doc_ids:
        i = pos[d]
        t = ds.doc_titles[i] if ds.doc_titles else ""
        out[d] = t or (ds.doc_texts[i][:80] + ("\u2026" if len(ds.doc_texts[i]) > 80 else ""))
    return out
