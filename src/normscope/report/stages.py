"""The report's stages: each calls one normscope entry point and returns its page sections.

A stage function takes a :class:`~normscope.report.runner.StageContext` and returns
``{section_key: section}`` where a section is::

    {"status": "ok" | "unavailable", "reason": str | None,
     "command": "normscope embed --wordfreq-top 5000 ...",   # the equivalent individual command
     "sizes": "5,000 words",                                 # stated on the page
     "result": {...},        # verbatim the dict the command writes with --json
     "derived": {...},       # extra numbers computed here (quantiles, examples)
     "key_numbers": [[label, value, unit], ...],
     "tables": [{"title", "columns", "rows"}],
     "figures": [{"file", "caption"}],
     "notes": [str]}         # caveats copied from the stage's output

It raises :class:`~normscope.report.runner.StageUnavailable` when the stage cannot run here.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np

from normscope.report.runner import StageContext, StageUnavailable

__all__ = ["STAGE_FUNCS", "encode_texts"]


def encode_texts(ctx: StageContext, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
    """Raw vectors of ``texts`` with the report's encoder, through the embedding cache when present.

    Returns
    -------
    ndarray of shape (n, d), float32
    """
    from normscope.encoders.cache import encode_cached

    return np.asarray(encode_cached(ctx.encoder(), texts, batch_size=batch_size, progress=True), dtype=np.float32)


def _fmt_n(n) -> str:
    return f"{int(n):,}"


# ---------------------------------------------------------------------------------------------
# setup
# ---------------------------------------------------------------------------------------------


def stage_setup(ctx: StageContext) -> dict:
    import torch

    from normscope import __version__

    enc = ctx.encoder()
    fp = enc.fingerprint
    data = ctx.data_dir()
    datasets = {}
    if data is not None:
        for name in ("scifact", "wordnet-3.0", "concreteness_brysbaert2014", "chaosnli", "subtlex_us", "simlex999"):
            datasets[name] = (Path(data) / name).is_dir()
    result = {
        "model": fp.name,
        "fingerprint": fp.to_dict(),
        "dim": int(enc.dim),
        "max_seq_length": getattr(enc, "max_seq_length", None),
        "device": ctx.config.device,
        "seed": ctx.config.seed,
        "preset": ctx.config.preset,
        "sizes": ctx.sizes.to_dict(),
        "data_dir": str(data) if data is not None else None,
        "datasets_present": datasets,
        "normscope_version": __version__,
        "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    dropped = ", ".join(fp.dropped_modules) or "none"
    key_numbers = [
        ["model", fp.name, ""],
        ["backend", fp.backend, ""],
        ["revision", fp.revision, ""],
        ["pooling", fp.pooling, ""],
        ["modules dropped to get raw vectors", dropped, ""],
        ["embedding dimension d", int(enc.dim), ""],
        ["max sequence length", result["max_seq_length"], "tokens"],
        ["device / torch threads", f"{ctx.config.device} / {result['torch_threads']}", ""],
        ["seed", ctx.config.seed, ""],
        ["size preset", ctx.config.preset, ""],
        ["shared data", str(data) if data is not None else "not found (../shared/data or $NORMSCOPE_DATA)", ""],
    ]
    if datasets:
        key_numbers.append(["datasets present", ", ".join(k for k, v in datasets.items() if v) or "none", ""])
    return {
        "setup": {
            "status": "ok",
            "reason": None,
            "command": f"normscope report --model {fp.name} --seed {ctx.config.seed}",
            "result": result,
            "key_numbers": key_numbers,
            "tables": [],
            "figures": [],
            "notes": [],
        }
    }


# ---------------------------------------------------------------------------------------------
# norm distribution
# ---------------------------------------------------------------------------------------------


def stage_norms(ctx: StageContext) -> dict:
    from normscope.report.figures import plot_norm_distribution

    from normscope.encoders.embed import embed_input

    cfg = ctx.config
    ctx.encoder()  # loaded once (load_encoder is memoised: embed_input reuses it)
    if cfg.items is not None:
        result, table = embed_input(cfg.items, model=cfg.model, device=cfg.device, progress=True)
        source = f"items of {cfg.items.name}"
        sizes = f"{_fmt_n(len(table))} items from {cfg.items.name}"
        command = f"normscope embed {cfg.items} --model {cfg.model} -o items.parquet --json items.json"
    else:
        result, table = embed_input(wordfreq_top=ctx.sizes.words, model=cfg.model, device=cfg.device, progress=True)
        source = f"top-{_fmt_n(len(table))} wordfreq words"
        sizes = f"top {_fmt_n(len(table))} alphabetic English words of wordfreq (most frequent first)"
        command = f"normscope embed --wordfreq-top {ctx.sizes.words} --model {cfg.model} -o words.parquet --json words.json"
    result = _jsonable(result)
    texts = table.texts
    r = table.norms.astype(np.float64)
    qs = [5, 25, 50, 75, 95]
    quant = {f"p{q}": float(np.percentile(r, q)) for q in qs}
    order = np.argsort(r, kind="stable")
    k = min(10, len(r))
    lowest = [{"text": texts[i], "norm": float(r[i])} for i in order[:k]]
    highest = [{"text": texts[i], "norm": float(r[i])} for i in order[::-1][:k]]
    derived = {
        "quantiles": quant,
        "cv": float(r.std(ddof=1) / r.mean()) if len(r) > 1 else float("nan"),
        "lowest": lowest,
        "highest": highest,
        "source": source,
    }
    fig = plot_norm_distribution(r, ctx.figure_path("norm_distribution.png"), model=cfg.model, source=source)
    key_numbers = [
        ["items embedded n", result["n"], ""],
        ["mean norm", result["norm_mean"], "||z||"],
        ["sd of norm", result["norm_std"], "||z||"],
        ["min / max", f"{result['norm_min']:.3f} / {result['norm_max']:.3f}", "||z||"],
        ["5% / 50% / 95% quantile", f"{quant['p5']:.3f} / {quant['p50']:.3f} / {quant['p95']:.3f}", "||z||"],
        ["coefficient of variation", derived["cv"], ""],
    ]
    rows = [[lo["text"], lo["norm"], hi["text"], hi["norm"]] for lo, hi in zip(lowest, highest)]
    return {
        "norm_distribution": {
            "status": "ok",
            "reason": None,
            "command": command,
            "sizes": sizes,
            "result": result,
            "derived": derived,
            "key_numbers": key_numbers,
            "tables": [
                {
                    "title": f"The {k} lowest- and highest-norm items",
                    "columns": ["lowest-norm item", "||z||", "highest-norm item", "||z||"],
                    "rows": rows,
                }
            ],
            "figures": [{"file": fig.name, "caption": f"Histogram of raw norms ||z|| of the {source}."}],
            "notes": [],
        }
    }


# ---------------------------------------------------------------------------------------------
# stages still to integrate (replaced as their modules land)
# ---------------------------------------------------------------------------------------------


def _jsonable(obj):
    """Round-trip through JSON so the record holds exactly what ``--json`` would write."""
    import json

    from normscope._io import _json_default

    return json.loads(json.dumps(obj, default=_json_default))


def stage_lab(ctx: StageContext) -> dict:
    from normscope import lab

    s = ctx.sizes
    seed = ctx.config.seed
    kw = {"encoder": "table", "optimizer": "sgd", "data": "synthetic", "seed": seed}
    cmd = ["normscope lab --encoder table --optimizer sgd --data synthetic", f"--seed {seed}"]
    for name, value, flag in (("steps", s.lab_steps, "--steps"), ("snapshots", s.lab_snapshots, "--snapshots"),
                              ("probe_batches", s.lab_probe_batches, "--probe-batches")):
        if value is not None:
            kw[name] = value
            cmd.append(f"{flag} {value}")
    res = lab.run_lab(**kw, progress=True)
    summary = _jsonable(res.summary)
    figs = []
    p1 = lab.plot_predicted_vs_observed(res, ctx.figure_path("training_lab_predicted_vs_observed.png"))
    figs.append({"file": Path(p1).name, "caption": "Training lab: predicted stationary norm R_eq (E7, from measured "
                 "heat and drift) against the observed time-RMS norm, one point per item, coloured by ambiguity; "
                 "dashed: R_eq = R_obs."})
    p2 = lab.plot_trajectories(res, ctx.figure_path("training_lab_trajectories.png"))
    figs.append({"file": Path(p2).name, "caption": "Training lab: mean norm per ambiguity group over training steps; "
                 "the measurement window starts at the dashed line."})
    gate = summary.get("gate") or {}
    qc = summary.get("q_over_c") or {}
    key_numbers = [
        ["mean |relative error| of R_eq (gate \u2264 %s)" % gate.get("mean_abs_rel_error", 0.05),
         summary.get("mean_abs_rel_error"), ""],
        ["median signed relative error (gate |.| \u2264 %s)" % gate.get("abs_median_rel_error", 0.02),
         summary.get("median_rel_error"), ""],
        ["Pearson r, R_eq vs observed R (gate \u2265 %s)" % gate.get("pearson", 0.95), summary.get("pearson"), ""],
        ["Spearman \u03c1, R_eq vs observed R", summary.get("spearman"), ""],
        ["gate passed", "yes" if gate.get("passed") else "no", ""],
        ["mean q/c (E9; 1 = balance)", qc.get("mean"), ""],
        ["items / dimension / batch", f"{summary.get('n_items')} / {summary.get('dim')} / {summary.get('batch_size')}", ""],
        ["learning rate \u03b7 / weight decay \u03bb", f"{summary.get('lr')} / {summary.get('weight_decay')}", ""],
        ["steps (burn-in)", f"{summary.get('steps')} ({summary.get('burn_in')})", "steps"],
        ["estimator", f"{summary.get('estimator')} ({summary.get('snapshots')} states \u00d7 {summary.get('probe_batches')} batches)", ""],
    ]
    # heat and drift: 3 significant digits (groups differ in the 2nd-3rd significant digit, which 3 decimals hide)
    rows = [[g.get("ambiguity"), g.get("n"), g.get("r_obs"), g.get("r_eq"), _sig3(g.get("heat")), _sig3(g.get("drift")),
             g.get("mean_abs_rel_error")] for g in summary.get("groups") or []]
    notes = list(summary.get("caveats") or [])
    if summary.get("sgd_formula_expected") is False:
        notes.append("The SGD formula (E7) is not expected to hold for this optimizer.")
    sizes = (f"free embedding table, {summary.get('n_items')} items in d = {summary.get('dim')}, "
             f"{summary.get('steps')} SGD steps, synthetic pairs with ambiguity 1..4")
    return {
        "training_lab": {
            "status": "ok",
            "reason": None,
            "command": " ".join(cmd) + " --json lab.json",
            "sizes": sizes,
            "result": summary,
            "derived": {},
            "key_numbers": key_numbers,
            "tables": [{"title": "Per ambiguity group (means)",
                        "columns": ["ambiguity (concepts)", "items", "observed R", "predicted R_eq", "heat \u03a3\u00b2",
                                    "drift D~", "mean |rel. error|"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
        }
    }


def _sig3(x):
    """A number as a string with 3 significant digits (``None`` stays ``None``)."""
    return None if x is None else format(float(x), ".3g")


SIGNAL_ORDER = ("frequency", "specificity", "concreteness", "uncertainty")


def stage_signals(ctx: StageContext) -> dict:
    from normscope.signals import plot_signal, run_correlate
    from normscope.errors import NormscopeError

    s = ctx.sizes
    seed = ctx.config.seed
    enc = ctx.encoder()
    results: dict[str, dict] = {}
    unavailable: dict[str, str] = {}
    commands: dict[str, str] = {}
    figs = []
    rows = []
    for sig in SIGNAL_ORDER:
        if sig not in ctx.config.signals:
            unavailable[sig] = "not selected"
            continue
        n = s.signal_items
        if n is not None and sig == "specificity":
            n = min(n, 2000)
        ctx.console.print(f"signals: {sig}")
        try:
            summary, per_item = run_correlate(sig, encoder=enc, model=ctx.config.model, n=n, seed=seed,
                                              n_boot=s.n_boot, n_perm=s.n_perm, progress=True,
                                              device=ctx.config.device)
        except (NormscopeError, FileNotFoundError, LookupError) as exc:
            unavailable[sig] = f"{type(exc).__name__}: {exc}".splitlines()[0]
            continue
        summary = _jsonable(summary)
        results[sig] = summary
        cmd = f"normscope correlate --signal {sig}" + (f" --n {n}" if n is not None else "")
        commands[sig] = cmd + f" --n-boot {s.n_boot} --n-perm {s.n_perm} --seed {seed} --json {sig}.json"
        fig = plot_signal(per_item, summary, ctx.figure_path(f"semantic_signals_{sig}.png"))
        figs.append({"file": Path(fig).name, "caption": f"Raw norm vs {summary.get('covariate', sig)}: items (grey), "
                     f"equal-count binned means with 95% CIs (red); {summary.get('dataset', '')}."})
        part = summary.get("partial_spearman") or {}
        rows.append([sig, summary.get("dataset"), summary.get("n"), summary.get("n_missing"), summary.get("spearman"),
                     _ci(summary.get("spearman_ci")), summary.get("p_value"), summary.get("pearson"),
                     part.get("rho"), _ci(part.get("ci")), ", ".join(part.get("controls") or [])
                     + "".join(f"{'; ' if part.get('controls') else ''}{c} not controlled (constant)"
                               for c in summary.get("controls_dropped") or [])])
    if not results:
        raise StageUnavailable("no signal could run: " + "; ".join(f"{k}: {v}" for k, v in unavailable.items()))
    notes = [f"{k}: not available ({v})" for k, v in unavailable.items()]
    for sig, r in results.items():
        notes += [f"{sig}: {x}" for x in r.get("notes") or []]
        if r.get("n_missing"):
            notes.append(f"{sig}: {r['n_missing']} of {r.get('n_items')} items have no value and are excluded "
                         f"(e.g. {', '.join(map(str, (r.get('missing_examples') or [])[:5]))}).")
    key_numbers = [[f"Spearman \u03c1, norm vs {k} (n = {r.get('n')})", r.get("spearman"), ""] for k, r in results.items()]
    sizes = "; ".join(f"{k}: {r.get('dataset')}" for k, r in results.items())
    sizes += f"; {s.n_boot} bootstrap resamples, {s.n_perm} permutations"
    return {
        "semantic_signals": {
            "status": "ok",
            "reason": None,
            "command": " ; ".join(commands.values()),
            "sizes": sizes,
            "result": results,
            "derived": {"unavailable": unavailable, "commands": commands},
            "key_numbers": key_numbers,
            "tables": [{"title": "One row per signal (95% bootstrap CIs, permutation p)",
                        "columns": ["signal", "items", "n", "missing", "Spearman \u03c1", "95% CI", "p",
                                    "Pearson r", "partial \u03c1", "95% CI", "controls"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
        }
    }


def _ci(ci) -> str:
    from normscope.report.text import fmt

    if not ci or len(ci) != 2:
        return "n/a"
    return f"[{fmt(ci[0])}, {fmt(ci[1])}]"


_PROBE_CORRS = (
    ("corr_req_norm", "R_eq (E7, c_fit) vs observed R"),
    ("corr_norm_heat", "R vs heat \u03a3\u00b2"),
    ("corr_norm_drift", "R vs drift D~"),
    ("corr_norm_displacement", "R vs R-free displacement E||a||\u00b2 (guard)"),
    ("corr_norm_heat_rate", "R vs heat rate S/R\u2074 (guard)"),
    ("corr_norm_d2", "R vs second-order drift D2 (guard)"),
)


def _pair_source(ctx: StageContext):
    """WordNet (term, gloss) pairs, else SciFact train pairs; StageUnavailable when neither exists."""
    from normscope.errors import NormscopeError
    from normscope.pairs import load_pairs

    reasons = []
    for spec in ("wordnet", "scifact"):
        try:
            return spec, load_pairs(spec)
        except (NormscopeError, OSError, LookupError) as exc:
            reasons.append(f"{spec}: {exc}".splitlines()[0])
    raise StageUnavailable("no training-like pairs: " + "; ".join(reasons))


def stage_probes(ctx: StageContext) -> dict:
    from normscope import probes
    from normscope.datasets import wordfreq_words

    s = ctx.sizes
    seed = ctx.config.seed
    spec, pairs = _pair_source(ctx)
    P = s.probe_items or 1000
    K = s.probe_batches or 16
    texts = wordfreq_words(P)
    ids = [str(i) for i in range(len(texts))]
    res = probes.run_probe(ctx.encoder(), texts, pairs, batch_size=s.probe_batch_size, batches=K, seed=seed,
                           progress=True, ids=ids)
    summary = _jsonable(res.summary)
    cmd = f"normscope probe wordfreq:{P} --pairs {spec} --batches {K}"
    if s.probe_batch_size is not None:
        cmd += f" --batch-size {s.probe_batch_size}"
    cmd += f" --seed {seed} --json probe.json"
    figs = []
    p1 = probes.plot_predicted_vs_observed(res, ctx.figure_path("equilibrium_predicted_vs_observed.png"))
    figs.append({"file": Path(p1).name, "caption": "Predicted norm R_eq(x; c_fit) from the probed heat and drift "
                 "(E7) against the observed raw norm R = ||z||, one point per word; dashed: y = x."})
    p2 = probes.plot_heat_drift(res, ctx.figure_path("equilibrium_heat_drift.png"))
    figs.append({"file": Path(p2).name, "caption": "Heat \u03a3\u00b2, radial drift D~ and the R-free displacement "
                 "E||a||\u00b2 against the observed norm R (the last panel guards against the circularity of heat, "
                 "which contains R\u00b2)."})
    rows = []
    for key, label in _PROBE_CORRS:
        c = summary.get(key) or {}
        ci = c.get("ci") or {}
        rows.append([label, c.get("pearson"), _ci(ci.get("pearson")), c.get("spearman"), _ci(ci.get("spearman")),
                     c.get("n"), c.get("p_value")])
    req = summary.get("corr_req_norm") or {}
    key_numbers = [
        ["Spearman \u03c1, predicted R_eq vs observed R", req.get("spearman"), ""],
        ["95% CI", _ci((req.get("ci") or {}).get("spearman")), ""],
        ["Pearson r, predicted R_eq vs observed R", req.get("pearson"), ""],
        ["median share of heat cancelled by D2 (\u22122 D2 R\u00b2 / S)", summary.get("heat_cancelled_by_d2"), ""],
        ["items with q < 0 (no stationary prediction)", summary.get("n_negative_q"), "items"],
        ["items with \u03bb_rad < 0", summary.get("n_negative_lambda_rad"), "items"],
        ["fitted c (c_fit)", summary.get("c_fit"), "per step"],
        ["mean q/c", summary.get("q_over_c_mean"), ""],
        ["probe batch size B / batches K / \u03c4", f"{summary.get('batch_size')} / {summary.get('batches')} / {summary.get('tau')}", ""],
        ["\u03b7 / \u03bb", f"{summary.get('lr')} / {summary.get('weight_decay')}", ""],
    ]
    notes = list(summary.get("caveats") or [])
    for k, label in (("batch_size_source", "probe batch size B"), ("tau_source", "temperature \u03c4"),
                     ("lr_given_source", "learning rate \u03b7"), ("weight_decay_source", "weight decay \u03bb")):
        if summary.get(k):
            notes.append(f"{label}: {summary[k]}")
    sizes = (f"P = {summary.get('n_items')} probe words (top of wordfreq), K = {summary.get('batches')} virtual SGD "
             f"batches of B = {summary.get('batch_size')} {spec} pairs ({summary.get('pairs', '')})")
    return {
        "equilibrium_theory": {
            "status": "ok",
            "reason": None,
            "command": cmd,
            "sizes": sizes,
            "result": summary,
            "derived": {"pairs_spec": spec},
            "key_numbers": key_numbers,
            "tables": [{"title": "Correlations with the observed norm (95% bootstrap CIs) and circularity guards",
                        "columns": ["comparison", "Pearson r", "95% CI", "Spearman \u03c1", "95% CI", "n", "p"],
                        "rows": rows}],
            "figures": figs,
            "notes": notes,
        }
    }


def _scifact_dir(ctx: StageContext) -> Path:
    data = ctx.data_dir()
    if data is None:
        raise StageUnavailable("SciFact needs ../shared/data (or --data DIR / $NORMSCOPE_DATA): not found")
    d = Path(data) / "scifact"
    if not d.is_dir():
        raise StageUnavailable(f"SciFact not found: {d} does not exist")
    return d


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
    summary = _jsonable(summary)
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
        cal_rows.append([name, c.get("auroc"), _ci(ci) if ci else "n/a", c.get("auroc_raw"), c.get("ece"),
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


STAGE_FUNCS: dict[str, Callable[[StageContext], dict]] = {
    "setup": stage_setup,
    "norms": stage_norms,
    "probes": stage_probes,
    "lab": stage_lab,
    "signals": stage_signals,
    "retrieval": stage_retrieval,
}
