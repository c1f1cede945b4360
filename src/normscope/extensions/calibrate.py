"""``run_calibrate``: fit a deployable calibrator on a BEIR dataset, or evaluate one on another (the shift).

The entry point behind ``normscope calibrate``; it returns a :class:`CalibrateResult` whose ``to_dict()``
is the ``--json`` summary, whose ``calibrator`` is the file ``--calibrator`` writes and whose ``items`` is
the ``-o`` per-query table. See :mod:`normscope.extensions.calibrator` and docs/retrieval.md.

Queries (in id order, so the input order never matters) are used three ways, never twice:

- **fit**: the map is fitted on them;
- **calibration**: the Learn-then-Test threshold and the document threshold are chosen on them;
- **held-out**: every reported precision, coverage, ECE and AUROC is measured on them.

With a fitting split (``train``, else ``dev``), its queries are drawn (seeded) into fit and calibration
parts (``calibration_fraction`` to calibration) and the evaluation split is held out. Without one, the
evaluation split's queries are drawn into fit / calibration / held-out parts of 40 / 30 / 30 %.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import numpy as np

from normscope._format import noun
from normscope import encoders  # load_encoder looked up when called (tests replace it)
from normscope.data.beir import SplitQueries, load_dataset_any, load_qrels
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import DataError, InputError
from normscope.inputs import read_text, split_lines
from normscope.requests.retrieval import DEFAULT_CALIBRATE_SIGNALS, CalibrateRequest
from normscope.retrieval.calibration import N_BINS, auroc_bootstrap_ci, ece, ece_bootstrap_ci, ece_support, reliability_data
from normscope.extensions.calibrator import (Calibrator, answer_stats, check_fingerprint,
                                            fit_calibrator, keep_stats, load_calibrator, ltt_threshold, score_threshold,
                                            target_labels, target_name)
from normscope.retrieval.pipeline import (_Phases, _drop_junk, _embed, _junk_entry, _resolve_fit_split, _sorted_split,
                                          _subsample_docs, _subsample_queries)
from normscope.retrieval.qpp import QPP_SIGNALS, QPP_SPECS, corpus_scores, qpp_signals
from normscope.retrieval.search import FoldedIndex, order_run
from normscope.table import norms_look_normalised, require_raw_norms
from normscope.extensions.calibrate_result import (AnswerThreshold, CalibrateResult, DatasetRef, DocumentThreshold,
                                                   HeldOut, Shift, Thresholds, ThresholdStats)

__all__ = ["run_calibrate", "CalibrateResult", "CV_PARTS", "evaluate_calibrator", "read_run", "ThresholdStats",
           "HeldOut", "AnswerThreshold", "DocumentThreshold", "Thresholds", "DatasetRef", "Shift"]

#: Fit / calibration / held-out fractions when the dataset has only one split.
CV_PARTS = (0.4, 0.3, 0.3)
DEPTH = 100


def evaluate_calibrator(cal: Calibrator, features, y, *, run, qrels, query_ids: Sequence[str], answer_at: Sequence[float] = (),
                        keep_k: int = 10, n_boot: int = 1000, seed: int = 0) -> dict:
    """Every held-out number of a calibrator on labelled queries it was not fitted or calibrated on.

    Parameters
    ----------
    cal : Calibrator
    features : pandas.DataFrame
        The queries' signals (:func:`normscope.retrieval.qpp.qpp_signals`).
    y : array-like of shape (n,), 0/1
        :func:`~normscope.extensions.calibrator.target_labels`.
    run, qrels : dict
        The cosine run and the judgements (document thresholds).
    query_ids : sequence of str
    answer_at : sequence of float, keyword-only
        Extra thresholds on P(relevant) a user asks for.
    keep_k, n_boot, seed : int, keyword-only

    Returns
    -------
    dict
        ``n``, ``base_rate``, ``mean_p``, ``auroc`` and ``auroc_ci``, ``ece`` and ``ece_ci`` (15 bins, bootstrap over
        queries), ``ece_bins``, ``reliability``; ``answer`` (precision / coverage with CIs at the Learn-then-Test
        threshold, or None), ``answer_at`` (one entry per asked threshold), ``keep_documents`` (at the document
        threshold, or None).
    """
    from sklearn.metrics import roc_auc_score

    p = cal.predict_proba(features)
    y = np.asarray(y).ravel().astype(np.int64)
    two = len(np.unique(y)) == 2
    rel = reliability_data(p, y, n_bins=N_BINS)
    out = {"n": int(len(y)), "base_rate": float(y.mean()), "mean_p": float(p.mean()),
           "auroc": float(roc_auc_score(y, p)) if two else None,
           "auroc_ci": auroc_bootstrap_ci(p, y, n_boot=n_boot, seed=seed) if two else None,
           "ece": ece(p, y), "ece_ci": ece_bootstrap_ci(p, y, n_boot=n_boot, seed=seed), "ece_bins": ece_support(rel),
           "reliability": rel}
    lam = (cal.thresholds.get("answer") or {}).get("threshold")
    out["answer"] = ({"threshold": lam, **answer_stats(p, y, lam, n_boot=n_boot, seed=seed)} if lam is not None else None)
    out["answer_at"] = [{"threshold": float(t), **answer_stats(p, y, float(t), n_boot=n_boot, seed=seed)} for t in answer_at]
    t = (cal.thresholds.get("keep_documents") or {}).get("threshold")
    out["keep_documents"] = (keep_stats(run, qrels, query_ids, t, k=keep_k, n_boot=n_boot, seed=seed) if t is not None
                             else None)
    out["p_relevant"] = p
    return out


def heldout_nauc(p_relevant, features, *, run, qrels, query_ids: Sequence[str], n_boot: int = 1000, seed: int = 0) -> dict:
    """nAUC of nDCG@10 (MTEB's abstention metric, :mod:`normscope.retrieval.abstention`) on the held-out queries:
    MTEB's confidences of the run's scores (max, std, diff1), the calibrator's P(relevant) and, when the calibrator
    uses it, the query norm (``-||q||``), with percentile bootstrap CIs over the queries.

    Parameters
    ----------
    p_relevant : array-like of shape (n,)
        The calibrator's P(relevant) of the queries.
    features : pandas.DataFrame
        Their signals (``query_norm`` is read when present).
    run : dict of {qid: {docid: score}}
        The cosine run (every result a query has: MTEB's std reads them all).
    qrels : dict of {qid: {docid: grade}}
    query_ids : sequence of str
        The queries, aligned with ``p_relevant`` and ``features``.
    n_boot, seed : int

    Returns
    -------
    dict
        :func:`normscope.retrieval.abstention.abstention_study`'s result (``signals`` with ``p_relevant`` of kind
        ``"calibrator"``), or ``{"status": "not computed", "reason"}`` (fewer than 10 queries, a non-finite value).
    """
    from normscope.retrieval.abstention import abstention_study, confidence_table
    from normscope.retrieval.evaluate import per_query_scores

    ids = [str(q) for q in query_ids]
    if len(ids) < 10:
        return {"status": "not computed", "reason": f"nAUC needs at least 10 held-out queries, got {len(ids)}"}
    ndcg = per_query_scores({q: qrels[q] for q in ids}, {q: run[q] for q in ids}, ["ndcg@10"])["ndcg@10"]
    conf = confidence_table(run, ids)
    conf["p_relevant"] = np.asarray(p_relevant, dtype=np.float64)
    if "query_norm" in features.columns:
        conf["query_norm"] = -features["query_norm"].to_numpy(np.float64)
    try:
        out = abstention_study(conf, ndcg, depth=max(len(run[q]) for q in ids), n_boot=n_boot, seed=seed)
    except InputError as exc:
        return {"status": "not computed", "reason": str(exc)}
    out["signals"]["p_relevant"].update(kind="calibrator", direction=+1, formula="P(relevant) of the calibrator")
    return out


def _parts(n: int, fractions: Sequence[float], rng) -> list[np.ndarray]:
    perm = rng.permutation(n)
    cuts = np.round(np.cumsum(fractions)[:-1] * n).astype(int)
    return [np.sort(x) for x in np.split(perm, cuts)]


def run_calibrate(request: CalibrateRequest, *, encoder=None, progress: bool = False) -> CalibrateResult:
    """Fit a calibrator for "the top-1 (or some top-K document) is relevant", or evaluate a fitted one.

    Parameters
    ----------
    request : CalibrateRequest
        What to run (:class:`~normscope.requests.retrieval.CalibrateRequest`). ``dataset``: a BEIR directory
        (or ``scifact`` / ``nfcorpus`` through the data registry, or ``hf:BeIR/<name>``). ``embedding.model``:
        default the calibrator's model with ``apply``, else the bundled MiniLM. ``signals``: features of the
        map, names of :data:`normscope.retrieval.qpp.QPP_SIGNALS`; None: :data:`DEFAULT_CALIBRATE_SIGNALS`
        (top1_score, margin, query_norm), less ``query_norm`` where the input cannot give it (a run file without
        a ``query_norm`` column, normalised vectors), said in :attr:`CalibrateResult.signals_note`. ``target_k``: 1, the top-1 is relevant;
        K > 1, some document of the top K is. ``fit_split``: split of the fit and calibration queries
        (``train``, falling back to ``dev``; ``cv`` or None: one split cut into three parts, :data:`CV_PARTS`);
        ``split``: the held-out split. ``precision_target``, ``delta``: "precision >= precision_target with
        probability >= 1 - delta" (Learn-then-Test), and the target of the document threshold. ``answer_at``:
        thresholds on P(relevant) to report on held-out queries. ``keep_k``: documents per query considered by
        the document threshold. ``calibration_fraction``: share of the fitting split's queries kept for
        choosing thresholds (never for fitting the map). ``apply``: evaluate this calibrator file on
        ``split`` instead of fitting one (its model, signals, target and thresholds; a calibrator fitted for
        another model fingerprint is refused). ``max_docs``, ``max_queries``, ``resampling``, ``embedding``: as
        :class:`~normscope.requests.retrieval.RetrievalRequest`. ``run_file``, ``qrels_file``: instead of a
        dataset, a cosine run (:func:`read_run`: TREC run text, or a parquet with ``query_id, doc_id, score``
        and optional ``scorer``, ``query_norm``, ``doc_norm`` columns) and its qrels (BEIR TSV or TREC). Its
        judged queries are cut into fit / calibration / held-out parts (:data:`CV_PARTS`); the signals are those
        a run can give (no corpus score: not nqc, wig, smv; no text: not query_length; the norms only from the
        parquet's norm columns). The model (required) names the model that made the run: its fingerprint goes
        into the file.
    encoder : Encoder, keyword-only, optional
    progress : bool, keyword-only

    Returns
    -------
    CalibrateResult

    Raises
    ------
    InputError
        Bad options, a calibrator file for another model, too few queries or labels of one class to fit.
    DataError
        Missing or malformed dataset, split or qrels.
    """
    r = request
    dataset_dir, signals, method, target_k, fit_split, split = (r.dataset, r.signals, r.method, r.target_k,
                                                                r.fit_split, r.split)
    precision_target, delta, answer_at, keep_k = r.precision_target, r.delta, list(r.answer_at), r.keep_k
    calibration_fraction, apply, max_docs, max_queries = r.calibration_fraction, r.apply, r.max_docs, r.max_queries
    run_file, qrels_file = r.run_file, r.qrels_file
    model, device, precision, batch_size = r.embedding.model, r.embedding.device, r.embedding.precision, r.embedding.batch_size
    runtime = r.embedding.runtime
    seed, n_boot = r.resampling.seed, r.resampling.n_boot
    cal_in = None
    by_default = signals is None and apply is None
    if signals is None:
        signals = DEFAULT_CALIBRATE_SIGNALS
    if apply is not None:
        cal_in = load_calibrator(apply)
        signals, method = list(cal_in.signals), cal_in.method
        target_k = 1 if cal_in.target == "top1_relevant" else int(cal_in.target.rsplit("_", 1)[1])
        model = model or cal_in.model["name"]
    signals = list(dict.fromkeys(signals))
    unknown = [s for s in signals if s not in QPP_SPECS]
    if not signals or unknown:
        raise InputError(f"unknown {noun(len(unknown), 'signal')} {', '.join(unknown) or '(none given)'} (choose from {', '.join(QPP_SIGNALS)})")
    ph = _Phases(progress, "calibrate")
    rng = np.random.default_rng(seed)

    if run_file is not None:
        if model is None and encoder is None:
            raise InputError("with a run file, name the model that produced it (--model): its fingerprint goes into the "
                             "calibrator")
        src = _from_run_file(run_file, qrels_file, signals=signals, target_k=target_k, max_queries=max_queries, rng=rng,
                             ph=ph, model=model, encoder=encoder, device=device, precision=precision, runtime=runtime,
                             cal_in=cal_in, by_default=by_default)
    else:
        src = _from_dataset(dataset_dir, encoder=encoder, model=model, signals=signals, target_k=target_k,
                            fit_split=fit_split, split=split, max_docs=max_docs, max_queries=max_queries, rng=rng, ph=ph,
                            device=device, precision=precision, runtime=runtime, batch_size=batch_size, progress=progress,
                            cal_in=cal_in, by_default=by_default)
    signals = src["signals"]
    return _fit_and_evaluate(src, cal_in=cal_in, dataset=str(run_file or dataset_dir), signals=signals, method=method,
                             target_k=target_k, precision_target=precision_target, delta=delta, answer_at=answer_at,
                             keep_k=keep_k, calibration_fraction=calibration_fraction, seed=seed, n_boot=n_boot, rng=rng,
                             ph=ph)


@contextlib.contextmanager
def _integer_grades_only():
    """``calibrate`` has no ``--grade-scale``: a qrels error suggesting it is reworded (its labels are grade >= 1)."""
    try:
        yield
    except DataError as exc:
        msg = str(exc)
        if "--grade-scale" not in msg:
            raise
        head = msg.split("; trec_eval and pytrec_eval", 1)[0]
        raise DataError(f"{head}; `normscope calibrate` reads integer grades only (its label is grade >= 1, "
                        "unscaled): write the grades as integers in the qrels file") from None


def _without_query_norm(signals, why: str) -> tuple[list, str]:
    """The default signals less ``query_norm``, and the note that says why."""
    return ([s for s in signals if s != "query_norm"],
            f"the default signals leave out query_norm here: {why}; the calibrator uses {', '.join(s for s in signals if s != 'query_norm')}")


def _from_dataset(dataset_dir, *, encoder, model, signals, target_k, fit_split, split, max_docs, max_queries, rng, ph,
                  device, precision, batch_size, progress, cal_in, runtime="torch", by_default=False) -> dict:
    """Load, embed and search a BEIR dataset: the splits' runs, signals and labels."""
    with ph("loading the dataset", str(dataset_dir)):
        with _integer_grades_only():
            ds = load_dataset_any(dataset_dir)
        if cal_in is not None:
            mode, fit_name = "apply", None
        else:
            mode, fit_name = _resolve_fit_split(ds, fit_split, split)
        ev = _subsample_queries(_sorted_split(ds.split_queries(split)), max_queries, rng)
        fit = _subsample_queries(_sorted_split(ds.split_queries(fit_name)), max_queries, rng) if mode == "split" else None
        keep, _ = _subsample_docs(ds, [ev] + ([fit] if fit else []), max_docs, rng)
    if encoder is None:
        with ph("loading the model", model or DEFAULT_MODEL):
            encoder = encoders.load_encoder(model or DEFAULT_MODEL, device=device, precision=precision, runtime=runtime)
    if cal_in is not None:
        check_fingerprint(cal_in, encoder)
    with ph("embedding the corpus", f"{len(keep):,} documents"):
        dtab = _embed(encoder, [ds.doc_texts[i] for i in keep], [ds.doc_ids[i] for i in keep], junk="drop",
                      what="documents", batch_size=batch_size, progress=progress)
    splits = [ev] + ([fit] if fit else [])
    qtabs = {}
    for sq in splits:
        with ph(f"embedding the '{sq.split}' queries", f"{len(sq.query_ids):,} queries"):
            qtabs[sq.split] = _embed(encoder, sq.texts, sq.query_ids, junk="drop", what=f"'{sq.split}' queries",
                                     batch_size=batch_size, progress=progress)
    ev = _drop_junk(ev, qtabs[ev.split])
    fit = _drop_junk(fit, qtabs[fit.split]) if fit else None
    doc_ids, D = list(dtab.ids), dtab.vectors
    doc_norms = np.linalg.norm(D.astype(np.float64), axis=1)
    note = None
    if by_default and "query_norm" in signals and norms_look_normalised(doc_norms):
        signals, note = _without_query_norm(signals, "the vectors are normalised (every document norm is "
                                                     f"{float(np.median(doc_norms)):.6g}), so the norm carries nothing")
    if any({"doc_norms", "query_norm"} & set(QPP_SPECS[s].needs) for s in signals):
        require_raw_norms(doc_norms, "the calibrator's norm signals")
    index = FoldedIndex(D, doc_ids, "cosine")

    def split_signals(sq):
        t = qtabs[sq.split]
        pos = {q: i for i, q in enumerate(t.ids)}
        Q = t.vectors[[pos[q] for q in sq.query_ids]]
        run = index.search(Q, sq.query_ids, k=min(DEPTH, len(doc_ids)), ignore_identical_ids=True)
        feats = qpp_signals(run, query_ids=sq.query_ids, query_texts=sq.texts,
                            query_norms=np.linalg.norm(Q.astype(np.float64), axis=1), doc_ids=doc_ids, doc_norms=doc_norms,
                            corpus_score=corpus_scores(Q, D), signals=signals)
        return run, feats, target_labels(run, sq.qrels, sq.query_ids, target_k)

    with ph("searching and computing the signals", f"{', '.join(signals)}; top {DEPTH}"):
        run_ev, f_ev, y_ev = split_signals(ev)
        run_fit, f_fit, y_fit = split_signals(fit) if fit else (None, None, None)
    return {"name": ds.name, "ev": ev, "fit": fit, "run_ev": run_ev, "f_ev": f_ev, "y_ev": y_ev, "run_fit": run_fit,
            "f_fit": f_fit, "y_fit": y_fit, "fp": encoder.fingerprint, "signals": list(signals), "signals_note": note,
            "junk": {"documents": dtab.junk.to_dict(), "queries": _junk_entry(qtabs)}}


def read_run(path) -> tuple[dict, dict]:
    """A ranked run from a file, with the norms it carries.

    Parameters
    ----------
    path : str or Path
        TREC run text (``qid Q0 docid rank score tag`` per line), or a parquet with ``query_id, doc_id, score``
        (``normscope retrieval -o``: only its ``cosine`` rows; ``normscope index search -o``) and optional
        ``query_norm`` / ``doc_norm`` columns.

    Returns
    -------
    run : dict of {qid: {docid: score}}
        Inner dicts in the tie rule's rank order (:func:`normscope.retrieval.search.order_run`).
    norms : dict
        ``query_norm`` ({qid: float}) and ``doc_norm`` ({docid: float}) when the parquet has them.

    Raises
    ------
    InputError
        Missing file, malformed line (numbered), missing columns, a parquet without cosine rows.
    """
    from pathlib import Path

    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InputError(f"run file not found: {p}")
    norms: dict = {}
    if p.suffix.lower() == ".parquet":
        try:
            df = pd.read_parquet(p)
        except Exception as exc:  # noqa: BLE001 - any pyarrow failure is one line
            raise InputError(f"cannot read {p} as parquet ({type(exc).__name__})") from None
        missing = {"query_id", "doc_id", "score"} - set(df.columns)
        if missing:
            raise InputError(f"{p} lacks {noun(len(missing), 'column')} {', '.join(sorted(missing))}")
        if "scorer" in df.columns:
            df = df[df["scorer"] == "cosine"]
            if df.empty:
                raise InputError(f"{p} has no cosine rows (the calibrator is fitted on cosine runs)")
        run: dict = {}
        for q, d, sc in zip(df["query_id"].astype(str), df["doc_id"].astype(str), df["score"].astype(float)):
            run.setdefault(q, {})[d] = sc
        if "query_norm" in df.columns:
            norms["query_norm"] = dict(zip(df["query_id"].astype(str), df["query_norm"].astype(float)))
        if "doc_norm" in df.columns:
            norms["doc_norm"] = dict(zip(df["doc_id"].astype(str), df["doc_norm"].astype(float)))
        return order_run(run), norms
    run = {}
    for n, line in enumerate(split_lines(read_text(p)), start=1):
        if not line.strip():
            continue
        f = line.split()
        if len(f) != 6:
            raise InputError(f"{p}, line {n}: a TREC run line has 6 fields (qid Q0 docid rank score tag), got {len(f)}")
        try:
            run.setdefault(f[0], {})[f[2]] = float(f[4])
        except ValueError:
            raise InputError(f"{p}, line {n}: score '{f[4]}' is not a number") from None
    return order_run(run), norms


def _from_run_file(run_file, qrels_file, *, signals, target_k, max_queries, rng, ph, model, encoder, device, precision,
                   cal_in, runtime="torch", by_default=False) -> dict:
    """A run file and its qrels: one part of judged queries, its signals and labels."""
    no = [s for s in signals if {"corpus_score", "query_text"} & set(QPP_SPECS[s].needs)]
    if no:
        raise InputError(f"{noun(len(no), 'signal')} {', '.join(no)} {noun(len(no), 'needs', 'need')} the corpus score or the query text, which a run file does not "
                         "carry; use a BEIR dataset or other signals")
    if encoder is None:
        with ph("loading the model (for its fingerprint)", model):
            encoder = encoders.load_encoder(model, device=device, precision=precision, runtime=runtime)
    if cal_in is not None:
        check_fingerprint(cal_in, encoder)
    with ph("reading the run and its qrels", f"{run_file}, {qrels_file}"):
        run, norms = read_run(run_file)
        with _integer_grades_only():
            qrels = load_qrels(qrels_file)
        ids = sorted(q for q in run if any(v >= 1 for v in (qrels.get(q) or {}).values()))
        if not ids:
            raise InputError(f"no query of {run_file} has a relevant judgement in {qrels_file}")
        if max_queries is not None and max_queries < len(ids):
            ids = [ids[i] for i in np.sort(rng.choice(len(ids), size=max_queries, replace=False))]
        kw, note = {}, None
        if by_default and "query_norm" in signals and "query_norm" not in norms:
            signals, note = _without_query_norm(signals, f"{run_file} has no query_norm column (a TREC run never has; "
                                                         "the -o parquet of `normscope retrieval` has)")
        if any("query_norm" in QPP_SPECS[s].needs for s in signals):
            if "query_norm" not in norms:
                raise InputError(f"{run_file} has no query_norm column (needed by the query_norm signal)")
            kw["query_norms"] = [norms["query_norm"][q] for q in ids]
        if any("doc_norms" in QPP_SPECS[s].needs for s in signals):
            if "doc_norm" not in norms:
                raise InputError(f"{run_file} has no doc_norm column (needed by {', '.join(signals)})")
            kw.update(doc_ids=list(norms["doc_norm"]), doc_norms=list(norms["doc_norm"].values()))
        feats = qpp_signals(run, query_ids=ids, signals=signals, **kw)
        ev = SplitQueries("run", ids, [""] * len(ids), {q: qrels[q] for q in ids},
                          {"judged": len(qrels), "evaluated": len(ids)})
    return {"name": str(run_file), "ev": ev, "fit": None, "run_ev": run, "f_ev": feats,
            "y_ev": target_labels(run, qrels, ids, target_k), "run_fit": None, "f_fit": None, "y_fit": None,
            "fp": encoder.fingerprint, "junk": {}, "signals": list(signals), "signals_note": note}


def _fit_and_evaluate(src: dict, *, cal_in, dataset, signals, method, target_k, precision_target, delta, answer_at,
                      keep_k, calibration_fraction, seed, n_boot, rng, ph) -> CalibrateResult:
    """Fit on the fit part, choose thresholds on the calibration part, measure on the held-out part."""
    import pandas as pd

    ev, fit, fp = src["ev"], src["fit"], src["fp"]
    run_ev, f_ev, y_ev, run_fit, f_fit, y_fit = (src[k] for k in ("run_ev", "f_ev", "y_ev", "run_fit", "f_fit", "y_fit"))
    part_of = {}
    if cal_in is not None:
        cal, held = cal_in, np.arange(len(ev.query_ids))
        parts = {"held-out": len(held)}
    else:
        with ph("fitting the calibrator", f"{method} on {', '.join(signals)}"):
            if fit is not None:
                fit_idx, cal_idx = _parts(len(fit.query_ids), (1 - calibration_fraction, calibration_fraction), rng)
                src_run, src_f, src_y, src_sq = run_fit, f_fit, y_fit, fit
                held = np.arange(len(ev.query_ids))
            else:
                fit_idx, cal_idx, held = _parts(len(ev.query_ids), CV_PARTS, rng)
                src_run, src_f, src_y, src_sq = run_ev, f_ev, y_ev, ev
            ids_fit = [src_sq.query_ids[i] for i in fit_idx]
            ids_cal = [src_sq.query_ids[i] for i in cal_idx]
            fitted_on = {"dataset": dataset, "dataset_name": src["name"], "split": src_sq.split,
                         "n_fit": len(ids_fit), "n_calibration": len(ids_cal), "seed": int(seed),
                         "queries": "drawn (seeded, from the queries in id order) into fit and calibration parts"}
            cal = fit_calibrator(src_f.iloc[fit_idx], src_y[fit_idx], signals=signals, method=method, seed=seed,
                                 model={**fp.to_dict(), "key": fp.key}, target_k=target_k, fitted_on=fitted_on)
            p_cal = cal.predict_proba(src_f.iloc[cal_idx])
            cal.thresholds = {
                "answer": {k: v for k, v in ltt_threshold(p_cal, src_y[cal_idx], precision=precision_target,
                                                          delta=delta).items()},
                "keep_documents": score_threshold(src_run, src_sq.qrels, ids_cal, precision=precision_target, k=keep_k),
            }
            for q in ids_fit:
                part_of[(src_sq.split, q)] = "fit"
            for q in ids_cal:
                part_of[(src_sq.split, q)] = "calibration"
            parts = {"fit": len(ids_fit), "calibration": len(ids_cal), "held-out": len(held)}
    held_ids = [ev.query_ids[i] for i in held]
    with ph("held-out evaluation", f"{len(held_ids)} queries, {n_boot} bootstrap resamples"):
        heldout = evaluate_calibrator(cal, f_ev.iloc[held], y_ev[held], run=run_ev, qrels=ev.qrels, query_ids=held_ids,
                                      answer_at=answer_at, keep_k=keep_k, n_boot=n_boot, seed=seed)
    p_held = heldout.pop("p_relevant")
    heldout["split"] = ev.split
    with ph("nAUC (MTEB abstention)", f"{len(held_ids)} held-out queries"):
        abstention = heldout_nauc(p_held, f_ev.iloc[held], run=run_ev, qrels=ev.qrels, query_ids=held_ids,
                                  n_boot=n_boot, seed=seed)
    lam = (cal.thresholds.get("answer") or {}).get("threshold")

    frames = []
    for sq, f, y in ((ev, f_ev, y_ev), (fit, f_fit, y_fit)):
        if sq is None:
            continue
        p = cal.predict_proba(f)
        part = [part_of.get((sq.split, q)) for q in sq.query_ids]
        if sq is ev:
            for i in held:
                part[i] = "held-out"
        frames.append(f.assign(split=sq.split, part=part, label=y, p_relevant=p,
                               answered=(p >= lam) if lam is not None else False))
    items = pd.concat(frames, ignore_index=True)
    items = items[items["part"].notna()].reset_index(drop=True)

    shift = None
    if cal_in is not None:
        fitted = cal_in.fitted_on or {}
        shift = {"fitted_on": fitted, "evaluated_on": {"dataset": dataset, "dataset_name": src["name"], "split": ev.split},
                 "same_dataset": fitted.get("dataset_name") == src["name"],
                 "note": "thresholds chosen on the calibrator's own calibration queries; a Learn-then-Test guarantee "
                         "holds only for queries exchangeable with those, so out of domain the held-out precision is "
                         "a measurement, not a guaranteed value"}
    return CalibrateResult(
        mode="apply" if cal_in is not None else "fit", dataset=dataset, dataset_name=src["name"], model=fp.name,
        fingerprint={**fp.to_dict(), "key": fp.key}, target=target_name(target_k), signals=list(signals),
        signals_note=src.get("signals_note"), method=method,
        split=ev.split, parts=parts, seed=int(seed), calibrator=cal.to_dict(), heldout=heldout, shift=shift,
        junk=src["junk"], abstention=abstention, items=items, timings=ph.timings)
