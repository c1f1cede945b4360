"""``run_retrieval``: the norm-aware retrieval and calibration study on one BEIR dataset.

The entry point behind ``normscope retrieval`` (same summary dict as ``--json``), and the
figure functions :func:`plot_reliability` and :func:`plot_risk_coverage`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from normscope.errors import InputError
from normscope.retrieval.beir import BeirDataset, SplitQueries, load_dataset_any
from normscope.retrieval.calibration import N_BINS, SIGNALS, fit_predict_signals, query_signals, score_signal
from normscope.retrieval.evaluate import METRICS, compare_to_baseline, default_grid, fit_parameter, per_query_scores
from normscope.retrieval.scoring import NEUTRAL_PARAM, PARAM_NAMES, SCORERS, check_scorer
from normscope.retrieval.search import FoldedIndex, run_to_frame

__all__ = ["run_retrieval", "plot_reliability", "plot_risk_coverage", "embed_texts"]

N_FOLDS = 5


def embed_texts(encoder, texts: Sequence[str], *, batch_size: int = 64, progress: bool = False) -> np.ndarray:
    """Raw vectors of ``texts`` through the embedding cache when available.

    Uses ``normscope.encoders.cache.encode_cached`` (content-addressed cache of the
    foundation) if that module exists, else ``encoder.encode``.

    Returns
    -------
    ndarray of shape (len(texts), d), float32
    """
    try:
        from normscope.encoders.cache import encode_cached
    except ImportError:
        encode_cached = None
    if encode_cached is not None:
        out = encode_cached(encoder, list(texts), batch_size=batch_size, progress=progress)
    else:
        out = encoder.encode(list(texts), batch_size=batch_size, progress=progress)
    return np.ascontiguousarray(np.asarray(out, dtype=np.float32))


def _subsample_queries(sq: SplitQueries, n: int | None, rng: np.random.Generator) -> SplitQueries:
    if n is None or n >= len(sq.query_ids):
        return sq
    if n < 1:
        raise InputError(f"max_queries must be >= 1, got {n}")
    keep = np.sort(rng.choice(len(sq.query_ids), size=n, replace=False))
    ids = [sq.query_ids[i] for i in keep]
    counts = dict(sq.counts)
    counts["subsampled_out"] = len(sq.query_ids) - n
    counts["evaluated"] = n
    return SplitQueries(sq.split, ids, [sq.texts[i] for i in keep], {q: sq.qrels[q] for q in ids}, counts)


def _subsample_docs(ds: BeirDataset, splits: Sequence[SplitQueries], n: int | None, rng) -> tuple[list[str], list[str], dict]:
    if n is None or n >= len(ds.doc_ids):
        return ds.doc_ids, ds.doc_texts, {"n_docs": len(ds.doc_ids), "subsampled": False}
    if n < 2:
        raise InputError(f"max_docs must be >= 2, got {n}")
    pos = {d: i for i, d in enumerate(ds.doc_ids)}
    rel = sorted({pos[d] for sq in splits for q in sq.qrels.values() for d, v in q.items() if v > 0 and d in pos})
    rest = np.setdiff1d(np.arange(len(ds.doc_ids)), rel)
    n_fill = max(0, n - len(rel))
    fill = rng.choice(rest, size=min(n_fill, rest.size), replace=False) if n_fill else np.zeros(0, dtype=int)
    keep = np.sort(np.concatenate([np.asarray(rel, dtype=int), fill.astype(int)]))
    info = {
        "n_docs": int(keep.size),
        "subsampled": True,
        "rule": "every document relevant to a kept query, plus a seeded random sample of the others up to max_docs",
        "n_relevant_kept": len(rel),
    }
    return [ds.doc_ids[i] for i in keep], [ds.doc_texts[i] for i in keep], info


def _resolve_fit_split(ds: BeirDataset, fit_split: str | None, split: str) -> tuple[str, str]:
    """(mode, split name): mode 'split' fits on a named split, 'cv' cross-validates on the eval split."""
    if fit_split is not None and fit_split == split:
        raise InputError(f"fit split '{fit_split}' equals the evaluation split: parameters are never fitted on test queries")
    if fit_split in (None, "cv"):
        return "cv", split
    if fit_split in ds.qrels:
        return "split", fit_split
    if fit_split == "train":
        for alt in ("dev", "validation"):
            if alt in ds.qrels and alt != split:
                warnings.warn(f"no train split: fitting on '{alt}'", UserWarning, stacklevel=3)
                return "split", alt
        warnings.warn(f"no train or dev split: {N_FOLDS}-fold cross-validation on '{split}'", UserWarning, stacklevel=3)
        return "cv", split
    from normscope.errors import DataError

    raise DataError(f"dataset '{ds.name}' has no qrels split '{fit_split}' (available: {', '.join(ds.splits)})")


def _fit_and_search(scorer, Qfit, fit_ids, fit_qrels, D, doc_ids, Qev, ev_ids, k, grid=None):
    if PARAM_NAMES[scorer] is None:
        param, curve = None, []
    else:
        param, curve = fit_parameter(scorer, Qfit, D, query_ids=fit_ids, doc_ids=doc_ids, qrels=fit_qrels, grid=grid)
    run = FoldedIndex(D, doc_ids, scorer, param).search(Qev, ev_ids, k=k)
    return param, curve, run


def run_retrieval(
    dataset_dir,
    *,
    encoder=None,
    model: str | None = None,
    scorers: Sequence[str] = SCORERS,
    fit_split: str | None = "train",
    split: str = "test",
    max_docs: int | None = None,
    max_queries: int | None = None,
    seed: int = 0,
    progress: bool = False,
    k: int = 100,
    batch_size: int = 64,
    n_permutations: int = 10000,
    device: str = "cpu",
    grids: Mapping[str, Sequence[float]] | None = None,
):
    """Norm-aware retrieval and confidence calibration on a BEIR dataset.

    Steps: load the dataset; embed documents (``title + " " + text``) and queries with
    raw vectors; for each scorer fit its parameter (``alpha`` / ``beta``) by grid search
    maximising nDCG@10 on ``fit_split`` queries (never on ``split``); exact top-``k`` search
    of ``split`` queries with faiss on folded vectors; nDCG@10, MRR@10, Recall@100 (ranx)
    with paired tests against cosine; confidence signals of the cosine run's top-1 and their
    AUROC / ECE (15 bins, Platt-mapped) / AURC on ``split``, maps fitted on ``fit_split``.

    Parameters
    ----------
    dataset_dir : str or Path
        BEIR directory, or ``hf:BeIR/<name>`` (needs the ``datasets`` extra and network).
    encoder : Encoder, keyword-only, optional
        Raw-vector encoder; default ``normscope.load_encoder(model)``.
    model : str, keyword-only, optional
        Model name for :func:`normscope.load_encoder` (default the bundled MiniLM).
    scorers : sequence of str, keyword-only
        Subset of ``('cosine', 'dot', 'inverse_norm', 'power')``; cosine is always run
        (baseline of the tests and of the calibration study).
    fit_split : str or None, keyword-only
        Split whose queries fit the parameters and confidence maps. ``'train'`` falls back
        to ``dev``/``validation`` when absent, then to 5-fold cross-validation over the
        evaluation queries (each fold scored with parameters fitted on the other folds).
        ``'cv'`` or None asks for cross-validation directly.
    split : str, keyword-only
        Evaluation split.
    max_docs, max_queries : int or None, keyword-only
        Subsample for quick runs: ``max_queries`` per split (seeded); ``max_docs`` keeps every
        document relevant to a kept query plus a seeded random sample of the others.
    seed : int, keyword-only
        Seeds subsampling, cross-validation folds and the randomisation test.
    progress : bool, keyword-only
        Rich progress bars on stderr.
    k : int, keyword-only
        Depth of the evaluated runs (100 for Recall@100).
    batch_size : int, keyword-only
    n_permutations : int, keyword-only
        Of the paired randomisation test.
    device : str, keyword-only
        Torch device of the default encoder.
    grids : dict of {scorer: sequence of float}, keyword-only, optional
        Parameter grids replacing :func:`~normscope.retrieval.evaluate.default_grid`.

    Returns
    -------
    summary : dict
        JSON-serialisable; keys ``dataset``, ``model``, ``split``, ``fit_split``, ``n_docs``,
        ``n_queries``, ``excluded_queries``, ``scorers`` (per scorer: ``param_name``,
        ``param``, ``fitted_on``, ``ndcg@10``, ``mrr@10``, ``recall@100``, ``p_value``
        (two-sided paired t-test on per-query nDCG@10 vs cosine), ``p_values`` (every metric, both tests),
        ``fit_curve``), ``calibration`` (per signal: ``auroc``, ``ece``, ``aurc``, ...),
        ``calibration_info``, ``significance``.
    runs : pandas.DataFrame
        One row per (scorer, query, rank): ``scorer, query_id, rank, doc_id, score,
        relevance, doc_norm, query_norm``.

    Raises
    ------
    InputError
        Unknown scorer, fit split equal to the evaluation split, bad sizes.
    DataError
        Missing or malformed dataset, missing split.
    ModelError
        Model cannot be loaded.
    """
    import pandas as pd

    scorers = [check_scorer(s) for s in scorers]
    if not scorers:
        raise InputError("no scorer given")
    order = ["cosine"] + [s for s in dict.fromkeys(scorers) if s != "cosine"]
    if k < 10:
        raise InputError(f"k must be >= 10 for the @10 metrics, got {k}")
    rng = np.random.default_rng(seed)
    wanted = None
    ds = load_dataset_any(dataset_dir, splits=wanted)
    mode, fit_name = _resolve_fit_split(ds, fit_split, split)
    ev = _subsample_queries(ds.split_queries(split), max_queries, rng)
    fit = _subsample_queries(ds.split_queries(fit_name), max_queries, rng) if mode == "split" else None
    doc_ids, doc_texts, doc_info = _subsample_docs(ds, [ev] + ([fit] if fit else []), max_docs, rng)

    if encoder is None:
        from normscope.encoders import DEFAULT_MODEL, load_encoder

        encoder = load_encoder(model or DEFAULT_MODEL, device=device)
    D = embed_texts(encoder, doc_texts, batch_size=batch_size, progress=progress)
    Qev = embed_texts(encoder, ev.texts, batch_size=batch_size, progress=progress)
    Qfit = embed_texts(encoder, fit.texts, batch_size=batch_size, progress=progress) if fit else None
    doc_norms = np.linalg.norm(D.astype(np.float64), axis=1)
    qev_norms = np.linalg.norm(Qev.astype(np.float64), axis=1)

    runs: dict[str, dict] = {}
    results: dict[str, dict] = {}
    folds = None
    if mode == "cv":
        if len(ev.query_ids) < 2 * N_FOLDS:
            raise InputError(f"cross-validation needs at least {2 * N_FOLDS} evaluation queries, got {len(ev.query_ids)}")
        perm = rng.permutation(len(ev.query_ids))
        folds = [np.sort(f) for f in np.array_split(perm, N_FOLDS)]
    fitted_on = fit_name if mode == "split" else f"{N_FOLDS}-fold cross-validation over '{split}' queries"

    grids = dict(grids or {})
    for g in grids:
        check_scorer(g)

    def grid_of(scorer):
        return list(grids[scorer]) if scorer in grids else None

    prog = None
    if progress:
        from rich.console import Console
        from rich.progress import Progress

        prog = Progress(console=Console(stderr=True), transient=True)
        prog.start()
        task = prog.add_task("fitting and searching", total=len(order))
    try:
        for scorer in order:
            if mode == "split":
                param, curve, run = _fit_and_search(
                    scorer, Qfit, fit.query_ids, fit.qrels, D, doc_ids, Qev, ev.query_ids, k, grid_of(scorer)
                )
                params = param
            else:
                run, params, curve = {}, [], []
                for f in folds:
                    tr = np.setdiff1d(np.arange(len(ev.query_ids)), f)
                    tr_ids = [ev.query_ids[i] for i in tr]
                    te_ids = [ev.query_ids[i] for i in f]
                    p, _, r = _fit_and_search(
                        scorer, Qev[tr], tr_ids, {q: ev.qrels[q] for q in tr_ids}, D, doc_ids, Qev[f], te_ids, k, grid_of(scorer)
                    )
                    params.append(p)
                    run.update(r)
                run = {q: run[q] for q in ev.query_ids}
            runs[scorer] = run
            grid = grid_of(scorer) or default_grid(scorer, doc_norms)
            pvals = [params] if not isinstance(params, list) else params
            edge = (
                None
                if PARAM_NAMES[scorer] is None
                else bool(any(p is not None and (np.isclose(p, min(grid)) or np.isclose(p, max(grid))) for p in pvals))
            )
            results[scorer] = {
                "param_name": PARAM_NAMES[scorer],
                "param": params,
                "neutral_param": NEUTRAL_PARAM[scorer],
                "fitted_on": None if PARAM_NAMES[scorer] is None else fitted_on,
                "fit_metric": None if PARAM_NAMES[scorer] is None else "ndcg@10",
                "param_at_grid_edge": edge,
                "fit_curve": curve,
            }
            if prog is not None:
                prog.advance(task)
    finally:
        if prog is not None:
            prog.stop()

    per = {s: per_query_scores(ev.qrels, runs[s], METRICS) for s in order}
    comp = compare_to_baseline(ev.qrels, runs, baseline="cosine", metrics=METRICS, n_permutations=n_permutations, seed=seed)
    for s in order:
        for m in METRICS:
            results[s][m] = float(per[s][m].mean())
        if s == "cosine":
            results[s]["p_value"] = None
            results[s]["p_values"] = None
        else:
            results[s]["p_value"] = comp[s]["ndcg@10"]["p_t_test"]
            results[s]["p_value_randomization"] = comp[s]["ndcg@10"]["p_randomization"]
            results[s]["p_values"] = comp[s]
    results = {s: results[s] for s in order if s in scorers or s == "cosine"}

    # calibration of the cosine run's top-1
    sig_ev = query_signals(
        runs["cosine"], query_ids=ev.query_ids, query_norms=qev_norms, doc_ids=doc_ids, doc_norms=doc_norms, qrels=ev.qrels
    )
    y_ev = sig_ev["top1_relevant"].to_numpy()
    if mode == "split":
        fit_cos = FoldedIndex(D, doc_ids, "cosine").search(Qfit, fit.query_ids, k=2)
        sig_fit = query_signals(
            fit_cos,
            query_ids=fit.query_ids,
            query_norms=np.linalg.norm(Qfit.astype(np.float64), axis=1),
            doc_ids=doc_ids,
            doc_norms=doc_norms,
            qrels=fit.qrels,
        )
        fitted = fit_predict_signals(sig_fit, sig_ev)
        conf = {s: fitted[s]["confidence"] for s in SIGNALS}
        infos = {s: fitted[s]["info"] for s in SIGNALS}
        base_fit = float(sig_fit["top1_relevant"].mean())
    else:
        conf = {s: np.zeros(len(ev.query_ids)) for s in SIGNALS}
        infos = {s: [] for s in SIGNALS}
        for f in folds:
            tr = np.setdiff1d(np.arange(len(ev.query_ids)), f)
            fitted = fit_predict_signals(sig_ev.iloc[tr], sig_ev.iloc[f])
            for s in SIGNALS:
                conf[s][f] = fitted[s]["confidence"]
                infos[s].append(fitted[s]["info"])
        base_fit = None
    calibration = {}
    for s in SIGNALS:
        raw = sig_ev[s].to_numpy(np.float64) if s in sig_ev else None
        entry = score_signal(conf[s], y_ev, raw=raw)
        calibration[s] = {"fit": infos[s], **entry}

    def _counts(sq):
        return {k_: int(v) for k_, v in sq.counts.items()}

    fp = getattr(encoder, "fingerprint", None)
    summary = {
        "dataset": str(dataset_dir),
        "dataset_name": ds.name,
        "model": fp.name if fp is not None else type(encoder).__name__,
        "model_revision": getattr(fp, "revision", None),
        "split": split,
        "fit_split": fitted_on,
        "fit_mode": mode,
        "seed": int(seed),
        "k": int(k),
        "n_docs": len(doc_ids),
        "docs": doc_info,
        "n_queries": {"eval": len(ev.query_ids), "fit": len(fit.query_ids) if fit else None},
        "excluded_queries": {"eval": _counts(ev), "fit": _counts(fit) if fit else None},
        "metrics": list(METRICS),
        "significance": {
            "p_value": "two-sided paired Student t-test on per-query nDCG@10 vs cosine (ranx.statistical_tests.paired_student_t_test, the test of ranx.compare(stat_test='student'))",
            "p_value_randomization": "two-sided paired sign-flip randomisation test (Fisher), numpy default_rng(seed)",
            "n_permutations": int(n_permutations),
            "seed": int(seed),
        },
        "scorers": results,
        "calibration": calibration,
        "calibration_info": {
            "label": "top-1 document of the cosine run is relevant",
            "reference_run": "cosine",
            "fitted_on": fitted_on,
            "ece_bins": N_BINS,
            "mapping": "Platt scaling (1-D logistic regression) for raw signals; learned signals are logistic-regression probabilities",
            "base_rate_eval": float(y_ev.mean()),
            "base_rate_fit": base_fit,
        },
        "doc_norm_range": [float(doc_norms.min()), float(doc_norms.max())],
    }

    frames = []
    dnorm = dict(zip(doc_ids, doc_norms))
    qnorm = dict(zip(ev.query_ids, qev_norms))
    for s in order:
        if s not in results:
            continue
        df = run_to_frame(runs[s], scorer=s)
        df["relevance"] = [int(ev.qrels.get(q, {}).get(d, 0)) for q, d in zip(df["query_id"], df["doc_id"])]
        df["doc_norm"] = df["doc_id"].map(dnorm).astype(np.float32)
        df["query_norm"] = df["query_id"].map(qnorm).astype(np.float32)
        frames.append(df)
    return summary, pd.concat(frames, ignore_index=True)


def _calibration_of(summary_or_data) -> dict:
    if isinstance(summary_or_data, dict) and "calibration" in summary_or_data:
        return summary_or_data["calibration"]
    if isinstance(summary_or_data, dict):
        return summary_or_data
    raise InputError("expected a run_retrieval summary or its 'calibration' dict")


def plot_reliability(summary_or_data, path, *, signals: Sequence[str] | None = None) -> Path:
    """Reliability diagram (15 bins) of each confidence signal; writes a PNG.

    Parameters
    ----------
    summary_or_data : dict
        :func:`run_retrieval` summary, or its ``calibration`` dict.
    path : str or Path
    signals : sequence of str, optional
        Default all.

    Returns
    -------
    Path
    """
    from normscope.validate import check_output_path
    from normscope._plot import pyplot, save_figure

    plt = pyplot()
    path = check_output_path(path)
    cal = _calibration_of(summary_or_data)
    signals = list(signals or cal)
    n = len(signals)
    cols = min(3, n)
    rows = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.8 * rows), squeeze=False)
    for ax, s in zip(axes.ravel(), signals):
        r = cal[s]["reliability"]
        edges = np.asarray(r["edges"])
        mids = (edges[:-1] + edges[1:]) / 2
        acc = np.asarray(r["accuracy"], dtype=float)
        ok = np.asarray(r["count"]) > 0
        ax.bar(mids[ok], acc[ok], width=edges[1] - edges[0], edgecolor="k", alpha=0.7, label="accuracy (n per bin above)")
        for x, a, c in zip(mids[ok], acc[ok], np.asarray(r["count"])[ok]):
            ax.text(x, min(a + 0.02, 0.95), str(int(c)), ha="center", fontsize=6)
        ax.plot([0, 1], [0, 1], "k--", lw=1, label="perfect calibration")
        ax.set_title(f"{s}\nECE={cal[s]['ece']:.3f}, AUROC={cal[s]['auroc']:.3f}", fontsize=9)
        ax.set_xlabel("confidence (probability top-1 relevant)")
        ax.set_ylabel("fraction top-1 relevant")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return save_figure(fig, path, dpi=110, bbox_inches=None)


def plot_risk_coverage(summary_or_data, path, *, signals: Sequence[str] | None = None) -> Path:
    """Risk-coverage curves (error rate of the top-1 vs fraction of queries answered); writes a PNG.

    Parameters
    ----------
    summary_or_data : dict
        :func:`run_retrieval` summary, or its ``calibration`` dict.
    path : str or Path
    signals : sequence of str, optional

    Returns
    -------
    Path
    """
    from normscope.validate import check_output_path
    from normscope._plot import pyplot, save_figure

    plt = pyplot()
    path = check_output_path(path)
    cal = _calibration_of(summary_or_data)
    signals = list(signals or cal)
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for s in signals:
        rc = cal[s]["risk_coverage"]
        ax.plot(rc["coverage"], rc["risk"], lw=1.5, label=f"{s} (AURC {cal[s]['aurc']:.3f})")
    first = cal[signals[0]]
    full_risk = first["risk_coverage"]["risk"][-1]
    ax.axhline(full_risk, color="grey", ls=":", lw=1, label=f"no selection (risk {full_risk:.3f})")
    ax.set_xlabel("coverage (fraction of queries answered)")
    ax.set_ylabel("risk (fraction with non-relevant top-1)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path, dpi=110, bbox_inches=None)
