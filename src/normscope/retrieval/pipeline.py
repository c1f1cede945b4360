"""``run_retrieval``: the norm-aware retrieval and calibration study on one BEIR dataset.

The entry point behind ``normscope retrieval``; it returns a :class:`RetrievalResult` whose
``to_dict()`` is the ``--json`` summary and whose ``items`` table is the ``-o`` parquet.
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from normscope import encoders  # load_encoder looked up when called (tests replace it)
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import DataError, InputError
from normscope.data.beir import BeirDataset, SplitQueries, load_dataset_any
from normscope.engine import check_engine, embed_texts
from normscope.retrieval.abstention import MTEB_CONFIDENCES as MTEB_NAMES
from normscope.retrieval.abstention import NORM_CONFIDENCES, abstention_study, confidence_table
from normscope.retrieval.calibration import N_BINS
from normscope.retrieval.claims import retrieval_claims
from normscope.retrieval.confidence import DIRECTION, SIGNALS, calibration_study, query_signals
from normscope.retrieval import evaluate as _evaluate_module  # default_grid read when called (tests replace it)
from normscope.retrieval.evaluate import METRICS, compare_to_baseline, default_grid, per_query_scores
from normscope.retrieval.incremental import FOLD_DRAWS, FOLDS, incremental_value
from normscope.retrieval.refit import RefitDesign, per_query_grid
from normscope.retrieval.qpp import (BASELINE_SIGNALS, NORM_SIGNALS, QPP_SIGNALS, corpus_scores, csls_hubness, evaluate_qpp,
                                    qpp_signals)
from normscope.requests.retrieval import RetrievalRequest
from normscope.retrieval.result import RetrievalResult
from normscope.scoring import NEUTRAL_PARAM, PARAM_NAMES, check_scorer, choose_param, validate_param
from normscope.retrieval.search import TIE_RULE, FoldedIndex, run_to_frame
from normscope.retrieval.strata import quartiles, query_zipf, strata_study
from normscope.table import require_raw_norms

__all__ = ["run_retrieval", "N_FOLDS"]

N_FOLDS = 5


class _Phases:
    """Start and end lines with elapsed time (so a redirected log is never silent), and the timings."""

    def __init__(self, show: bool, name: str = "retrieval"):
        self.timings: dict[str, float] = {}
        self.name = name
        self.console = None
        if show:
            from rich.console import Console

            self.console = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

    def __call__(self, name: str, detail: str = "", *, announce: bool = True):
        """A phase; ``announce=False``: no start line (a phase that checks input: a bad input is then its
        one error line, not a start line followed by the error)."""
        import contextlib

        @contextlib.contextmanager
        def phase():
            if self.console is not None and announce:
                self.console.print(f"{self.name}: {name}{f' ({detail})' if detail else ''} ...")
            t0 = time.perf_counter()
            yield
            dt = time.perf_counter() - t0
            self.timings[name] = round(dt, 3)
            if self.console is not None:
                self.console.print(f"{self.name}: {name} done in {dt:.1f} s")

        return phase()


def _sorted_split(sq: SplitQueries) -> SplitQueries:
    """Queries in id order: every later step (folds, subsamples, bootstraps) then ignores the input order."""
    order = sorted(range(len(sq.query_ids)), key=sq.query_ids.__getitem__)
    ids = [sq.query_ids[i] for i in order]
    return dataclasses.replace(sq, query_ids=ids, texts=[sq.texts[i] for i in order], qrels={q: sq.qrels[q] for q in ids})


def _subsample_queries(sq: SplitQueries, n: int | None, rng: np.random.Generator) -> SplitQueries:
    if n is None or n >= len(sq.query_ids):
        return sq
    keep = np.sort(rng.choice(len(sq.query_ids), size=n, replace=False))
    ids = [sq.query_ids[i] for i in keep]
    counts = dict(sq.counts, subsampled_out=len(sq.query_ids) - n, evaluated=n)
    return SplitQueries(sq.split, ids, [sq.texts[i] for i in keep], {q: sq.qrels[q] for q in ids}, counts)


def _subsample_docs(ds: BeirDataset, splits: Sequence[SplitQueries], n: int | None, rng) -> tuple[list[int], dict]:
    """Positions of the kept documents (in id order) and the subsampling record."""
    by_id = sorted(range(len(ds.doc_ids)), key=ds.doc_ids.__getitem__)
    if n is None or n >= len(ds.doc_ids):
        return by_id, {"n_docs": len(ds.doc_ids), "subsampled": False}
    pos = {d: i for i, d in enumerate(ds.doc_ids)}
    rel = {pos[d] for sq in splits for q in sq.qrels.values() for d, v in q.items() if v >= 1 and d in pos}
    rest = [i for i in by_id if i not in rel]
    n_fill = max(0, n - len(rel))
    fill = [rest[j] for j in rng.choice(len(rest), size=min(n_fill, len(rest)), replace=False)] if n_fill else []
    keep = sorted(rel | set(fill), key=ds.doc_ids.__getitem__)
    return keep, {"n_docs": len(keep), "subsampled": True, "n_relevant_kept": len(rel),
                  "rule": "every document relevant to a kept query, plus a seeded random sample of the others up to max_docs"}


def _duplicate_docs(ds: BeirDataset, keep: list[int], splits: list, dedupe: bool) -> tuple[list[int], list, dict]:
    """Exact duplicate documents (same embedded text) among ``keep``: reported, and collapsed with ``dedupe``.

    Copies of one text get the same score under every scorer, so the tie rule (:data:`TIE_RULE`) alone
    orders them, and they fill ranks: an unjudged copy with a larger id ranks above a judged one and can
    push it below rank k. With ``dedupe`` the copies of a text are one document, the copy with the
    smallest id, whose judgements are the copies' (the highest grade per query).

    Returns
    -------
    keep : list of int
        Kept document positions (copies removed with ``dedupe``).
    splits : list of SplitQueries or None
        The same splits, their qrels pointing at the kept copy with ``dedupe``.
    info : dict
        ``count`` (documents that copy another's text), ``groups`` (texts with copies), ``judged_copies``
        (copies judged in an evaluated split), ``collapsed`` (bool), ``kept_ids`` (first 20 groups).
    """
    groups: dict[str, list[int]] = {}
    for i in keep:
        groups.setdefault(ds.doc_texts[i], []).append(i)
    multi = [sorted(g, key=ds.doc_ids.__getitem__) for g in groups.values() if len(g) > 1]
    judged = {d for sq in splits if sq is not None for q in sq.qrels.values() for d in q}
    copies = [i for g in multi for i in g]
    info = {"count": sum(len(g) - 1 for g in multi), "groups": len(multi),
            "judged_copies": sum(ds.doc_ids[i] in judged for i in copies), "collapsed": bool(dedupe and multi),
            "kept_ids": sorted(ds.doc_ids[g[0]] for g in multi)[:20]}
    if not multi or not dedupe:
        return keep, splits, info
    rep = {ds.doc_ids[i]: ds.doc_ids[g[0]] for g in multi for i in g[1:]}
    drop = {i for g in multi for i in g[1:]}
    out = []
    for sq in splits:
        if sq is None:
            out.append(None)
            continue
        qrels = {}
        for q, docs in sq.qrels.items():
            merged: dict[str, int] = {}
            for d, v in docs.items():
                r = rep.get(d, d)
                merged[r] = max(v, merged.get(r, v))
            qrels[q] = merged
        out.append(dataclasses.replace(sq, qrels=qrels))
    return [i for i in keep if i not in drop], out, info


def _resolve_fit_split(ds: BeirDataset, fit_split: str | None, split: str, *, stacklevel: int = 3) -> tuple[str, str]:
    """(mode, split name): mode 'split' fits on a named split, 'cv' cross-validates on the eval split.

    ``stacklevel`` of the fallback warnings: 3 names the caller's caller."""
    if fit_split is not None and fit_split == split:
        raise InputError(f"fit split '{fit_split}' equals the evaluation split: parameters are never fitted on test queries")
    if fit_split in (None, "cv"):
        return "cv", split
    if fit_split in ds.qrels:
        return "split", fit_split
    if fit_split == "train":
        for alt in ("dev", "validation"):
            if alt in ds.qrels and alt != split:
                warnings.warn(f"no train split: fitting on '{alt}'", UserWarning, stacklevel=stacklevel)
                return "split", alt
        warnings.warn(f"no train or dev split: {N_FOLDS}-fold cross-validation on '{split}'", UserWarning,
                      stacklevel=stacklevel)
        return "cv", split
    raise DataError(f"dataset '{ds.name}' has no qrels split '{fit_split}' (available: {', '.join(ds.splits)})")


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


def _embed(encoder, texts, ids, *, junk, what, batch_size, progress, engine="local", address=None, workers=None):
    return embed_texts(texts, ids, encoder=encoder, junk=junk, what=what, batch_size=batch_size, progress=progress,
                       engine=engine, address=address, workers=workers)


def _drop_junk(sq: SplitQueries, table) -> SplitQueries:
    if not table.junk:
        return dataclasses.replace(sq, counts=dict(sq.counts, excluded_junk=0))
    bad = set(table.junk.ids)
    ids = [q for q in sq.query_ids if q not in bad]
    if not ids:
        raise DataError(f"every evaluable query of '{sq.split}' is junk")
    texts = dict(zip(sq.query_ids, sq.texts))
    counts = dict(sq.counts, excluded_junk=len(bad), evaluated=len(ids))
    return SplitQueries(sq.split, ids, [texts[q] for q in ids], {q: sq.qrels[q] for q in ids}, counts)


def _junk_entry(tables: Mapping[str, object]) -> dict:
    ids, reasons, by = [], {}, {}
    for split, t in tables.items():
        d = t.junk.to_dict()
        by[split] = d["count"]
        ids += [i for i in d["ids"] if i not in ids]
        for r, c in d["reasons"].items():
            reasons[r] = reasons.get(r, 0) + c
    return {"count": len(ids), "ids": ids, "reasons": reasons, "by_split": by}


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
    folds = _cv_folds(sp, rng)
    fitted_on = sp.fit_name if sp.mode == "split" else f"{N_FOLDS}-fold cross-validation over '{r.split}' queries"
    runs, results, grids = {}, {}, {}  # scorer -> its run; its summary; its per-query nDCG@10 over the grid
    for s in order:
        runs[s], results[s] = _score(s, sp, vec, r, fixed=fixed, folds=folds, fitted_on=fitted_on, ph=ph, store=grids)
    _refit_grids(sp, vec, grids, r, ph)
    per = _evaluate(sp.ev, runs, results, order, r, ph)
    designs = _refit_overall(grids, per, results, order, r, ph)
    res = RetrievalResult(**_run_fields(r, sp, vec, encoder, fitted_on), scorers={s: results[s] for s in order},
                          **_query_studies(sp, vec, runs, per, order, folds, fitted_on, r, ph, designs),
                          doc_norm_range=[float(vec.doc_norms.min()), float(vec.doc_norms.max())],
                          items=_items_frame(sp.ev, vec, runs, order), doc_titles=_titles(sp.ds, vec.doc_ids),
                          timings=ph.timings)
    res.claims = retrieval_claims(res)
    return res


def _load_model(r: RetrievalRequest, ph: _Phases):
    """The request's model (the default when none is named) at its device and precision."""
    e = r.embedding
    with ph("loading the model", e.model or DEFAULT_MODEL):
        return encoders.load_encoder(e.model or DEFAULT_MODEL, device=e.device, precision=e.precision, runtime=e.runtime)


def _query_studies(sp: _Splits, vec: _Vectors, runs: dict, per: dict, order: list[str], folds, fitted_on: str,
                   r: RetrievalRequest, ph: _Phases, designs: dict | None = None) -> dict:
    """The per-query studies of the evaluation queries, as result fields: strata (their CIs refitting each
    fitted scorer's parameter, ``designs``), calibration, QPP and the norm's incremental value, and the
    per-query table."""
    covariates, strata = _strata(sp.ev, vec, runs, per, order, r, ph, designs or {})
    sig_ev, sig_fit, calibration, conf = _calibration(sp, vec, runs, folds, r, ph)
    y_ev = sig_ev["top1_relevant"].to_numpy()
    s_corpus, qpp_df, qpp, incremental = _qpp_study(sp.ev, vec, runs, per, y_ev, r, ph)
    abstention = _abstention(sp.ev, runs, per, sig_ev, r, ph)
    n_boot = r.resampling.n_boot
    return dict(
        abstention=abstention,
        strata=strata, calibration=calibration,
        calibration_info=_calibration_info(fitted_on, n_boot=n_boot, y_ev=y_ev, sig_fit=sig_fit),
        qpp=qpp, qpp_info=qpp_info(n_boot=n_boot, smv_cut=int(qpp_df.attrs.get("smv_cut", 0)), depth=r.k),
        calibration_incremental=incremental,
        per_query=_per_query_table(sp.ev, sig_ev, covariates, s_corpus, qpp_df, per, conf, strata, order),
    )


@dataclasses.dataclass
class _Splits:
    """The loaded dataset and what of it is evaluated: query splits (in id order, subsampled, junk dropped
    once embedded), kept document positions and the records of their subsampling and duplicates."""

    ds: BeirDataset
    mode: str  # "split": parameters and maps fitted on the split fit_name; "cv": cross-validated on ev
    fit_name: str
    ev: SplitQueries
    fit: SplitQueries | None
    keep: list[int]
    doc_info: dict
    dup_docs: dict

    @property
    def splits(self) -> list[SplitQueries]:
        """The evaluated split, then the fitting split when there is one."""
        return [self.ev] + ([self.fit] if self.fit else [])


@dataclasses.dataclass
class _Vectors:
    """The embedded corpus and queries: tables, document vectors ``D`` (n, d) float32 with float64 norms,
    evaluation (and fitting) query vectors in their split's id order, and self-hit counts per split."""

    dtab: object
    qtabs: dict
    doc_ids: list[str]
    D: np.ndarray
    doc_norms: np.ndarray
    Qev: np.ndarray
    Qfit: np.ndarray | None
    qev_norms: np.ndarray
    identical: dict


def _load_splits(r: RetrievalRequest, rng: np.random.Generator, ph: _Phases) -> _Splits:
    """Load the dataset, resolve the fitting mode, subsample queries and documents (in this order, from ``rng``)
    and find duplicate documents (collapsed with ``dedupe_docs``; a warning either way)."""
    with ph("loading the dataset", str(r.dataset), announce=False):
        ds = load_dataset_any(r.dataset, grade_scale=int(r.grade_scale))
        mode, fit_name = _resolve_fit_split(ds, r.fit_split, r.split, stacklevel=4)
        ev = _subsample_queries(_sorted_split(ds.split_queries(r.split)), r.max_queries, rng)
        fit = _subsample_queries(_sorted_split(ds.split_queries(fit_name)), r.max_queries, rng) if mode == "split" else None
        keep, doc_info = _subsample_docs(ds, [ev] + ([fit] if fit else []), r.max_docs, rng)
        keep, (ev, fit), dup_docs = _duplicate_docs(ds, keep, [ev, fit], r.dedupe_docs)
    if dup_docs["count"]:
        how = ("collapsed (--dedupe-docs): each text is one document, the copy with the smallest id, judged with the "
               "highest grade of its copies" if dup_docs["collapsed"] else
               "kept: copies score the same, the tie rule (score, then document id, descending) alone orders them and "
               "they fill ranks, so an unjudged copy can push a judged one down or out of the top k; --dedupe-docs "
               "counts each text once")
        warnings.warn(f"{dup_docs['count']} of the corpus documents copy another document's text ({dup_docs['groups']} "
                      f"texts with copies, {dup_docs['judged_copies']} of their documents judged): {how}",
                      UserWarning, stacklevel=3)
    return _Splits(ds, mode, fit_name, ev, fit, keep, doc_info, dup_docs)


def _embed_splits(sp: _Splits, encoder, r: RetrievalRequest, ph: _Phases, progress: bool) -> tuple[_Splits, _Vectors]:
    """Embed the kept documents (on the request's engine) and each split's queries (here), drop junk queries,
    check the norms are raw, count judged junk documents and queries that share a document's id (a warning)."""
    e = r.embedding
    ds, keep = sp.ds, sp.keep
    with ph("embedding the corpus", f"{len(keep):,} documents"):
        dtab = _embed(encoder, [ds.doc_texts[i] for i in keep], [ds.doc_ids[i] for i in keep], junk=e.junk,
                      what="documents", batch_size=e.batch_size, progress=progress, engine=r.engine, address=r.address,
                      workers=r.workers)
    qtabs = {}
    for sq in sp.splits:
        with ph(f"embedding the '{sq.split}' queries", f"{len(sq.query_ids):,} queries"):
            qtabs[sq.split] = _embed(encoder, sq.texts, sq.query_ids, junk=e.junk, what=f"'{sq.split}' queries",
                                     batch_size=e.batch_size, progress=progress)
    ev = _drop_junk(sp.ev, qtabs[sp.ev.split])
    fit = _drop_junk(sp.fit, qtabs[sp.fit.split]) if sp.fit else None
    sp = dataclasses.replace(sp, ev=ev, fit=fit)
    doc_ids, D = list(dtab.ids), dtab.vectors
    doc_norms = np.linalg.norm(D.astype(np.float64), axis=1)
    require_raw_norms(doc_norms, "norm-aware retrieval")
    qpos = {s: {q: i for i, q in enumerate(t.ids)} for s, t in qtabs.items()}
    Qev = qtabs[ev.split].vectors[[qpos[ev.split][q] for q in ev.query_ids]]
    Qfit = qtabs[fit.split].vectors[[qpos[fit.split][q] for q in fit.query_ids]] if fit else None
    qev_norms = np.linalg.norm(Qev.astype(np.float64), axis=1)
    docset, junk_docs = set(doc_ids), set(dtab.junk.ids)
    for sq in sp.splits:
        sq.counts["qrels_junk_docs"] = sum(1 for q in sq.qrels.values() for d in q if d in junk_docs)
    identical = {sq.split: sum(q in docset for q in sq.query_ids) for sq in sp.splits}
    if any(identical.values()):
        what = "left out of their results (BEIR's default)" if r.ignore_identical_ids else "kept (--keep-identical-ids)"
        warnings.warn(f"{identical[ev.split]} of {len(ev.query_ids)} '{ev.split}' queries have the id of a corpus document "
                      f"(as in ArguAna or Quora); these self-hits are {what}", UserWarning, stacklevel=3)
    return sp, _Vectors(dtab, qtabs, doc_ids, D, doc_norms, Qev, Qfit, qev_norms, identical)


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
    with ph("refitted CIs", f"{len(grids)} fitted scorer(s), {r.resampling.n_boot:,} draws"):
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
               ph: _Phases):
    """The QPP predictors of the cosine run, their evaluation on top-1 relevance and nDCG@10, and the norm's
    incremental value: (corpus scores s(C), predictor frame, QPP table, incremental study)."""
    n_boot, seed = r.resampling.n_boot, r.resampling.seed
    with ph("QPP baselines and the norm's incremental value",
            f"{len(QPP_SIGNALS)} predictors; {FOLDS}-fold cross-fitting x {FOLD_DRAWS} fold draws"):
        s_corpus = corpus_scores(vec.Qev, vec.D)
        qpp_df = qpp_signals(runs["cosine"], query_ids=ev.query_ids, query_texts=ev.texts, query_norms=vec.qev_norms,
                             doc_ids=vec.doc_ids, doc_norms=vec.doc_norms, corpus_score=s_corpus,
                             doc_hubness=csls_hubness(vec.D, vec.Qev))  # CSLS's query bank: the evaluated queries
        ndcg_cos = per["cosine"]["ndcg@10"]
        qpp = evaluate_qpp(qpp_df, top1_relevant=y_ev, ndcg=ndcg_cos, n_boot=n_boot, seed=seed)
        incremental = incremental_study(qpp_df, y_ev, ndcg_cos, n_boot=n_boot, seed=seed)
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
                              **{c: qpp_df[c].to_numpy() for c in QPP_SIGNALS if c not in sig_ev.columns},
                              **{f"ndcg@10_{s}": per[s]["ndcg@10"] for s in order},
                              **{f"confidence_{s}": c for s, c in conf.items()})
    if isinstance(strata.get("stratifiers"), dict):
        for name, info in strata["stratifiers"].items():
            per_query[f"quartile_{name}"] = quartiles(covariates[name])[0] if info["status"] == "ok" else 0
    return per_query


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


def qpp_info(*, n_boot: int, smv_cut: int, depth: int) -> dict:
    """How the QPP table was computed (the ``qpp_info`` of the JSON)."""
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


def incremental_study(qpp_df, top1_relevant, ndcg, *, n_boot: int, seed: int) -> dict:
    """``calibration_incremental``: the norm signals added to every free baseline at once (top-1 and nDCG@10),
    then to each baseline alone (top-1 task, :data:`SINGLE_FOLD_DRAWS` fold draws; ``single_baselines``, ``best_single``).

    Never raises on a design that cannot be fitted (too few queries, one class): the entry is then
    ``status: "not computed"`` with the reason and the contract's fields set to None.
    """
    base = {"task": "top1_relevant", "baseline": list(BASELINE_SIGNALS), "added": list(NORM_SIGNALS),
            "auroc_without": None, "auroc_with": None, "diff": None, "ci": None, "resamples": "queries", "folds": FOLDS,
            "fold_draws": FOLD_DRAWS, "n_queries": int(len(qpp_df)), "seed": int(seed)}
    try:
        out = incremental_value(qpp_df, baseline=BASELINE_SIGNALS, added=NORM_SIGNALS, top1_relevant=top1_relevant,
                                ndcg=ndcg, n_boot=n_boot, seed=seed)
    except InputError as exc:
        return {**base, "status": "not computed", "reason": str(exc)}
    singles = []
    if out.get("status") == "ok":
        for b in BASELINE_SIGNALS:
            r = incremental_value(qpp_df, baseline=[b], added=NORM_SIGNALS, top1_relevant=top1_relevant, n_boot=n_boot,
                                  seed=seed, fold_draws=SINGLE_FOLD_DRAWS)
            singles.append({k: r[k] for k in ("baseline", "auroc_without", "auroc_with", "diff", "ci", "fold_draws")})
    out["single_baselines"] = singles
    best = max(singles, key=lambda r: r["auroc_without"], default=None)
    out["best_single"] = best and {**best, "note": "the single baseline with the highest cross-fitted AUROC (chosen on "
                                                  "the same queries; the norms are added to it in the same folds)"}
    return out


def _titles(ds: BeirDataset, doc_ids: Sequence[str]) -> dict[str, str]:
    """Title of each kept document, else the first 80 characters of its text (for display)."""
    pos = {d: i for i, d in enumerate(ds.doc_ids)}
    out = {}
    for d in doc_ids:
        i = pos[d]
        t = ds.doc_titles[i] if ds.doc_titles else ""
        out[d] = t or (ds.doc_texts[i][:80] + ("\u2026" if len(ds.doc_texts[i]) > 80 else ""))
    return out
