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

import importlib
import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np

from normscope.report.runner import StageContext, StageUnavailable

__all__ = ["STAGE_FUNCS", "encode_texts"]


def _import(module: str, what: str):
    """Import ``module`` or raise StageUnavailable naming it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise StageUnavailable(f"{what} is not available in this build ({module}: {exc})") from None


def encode_texts(ctx: StageContext, texts: list[str], *, batch_size: int = 64) -> np.ndarray:
    """Raw vectors of ``texts`` with the report's encoder, through the embedding cache when present.

    Returns
    -------
    ndarray of shape (n, d), float32
    """
    enc = ctx.encoder()
    try:
        from normscope.encoders.cache import encode_cached
    except ImportError:
        return enc.encode(texts, batch_size=batch_size, progress=True)
    return np.asarray(encode_cached(enc, texts, batch_size=batch_size, progress=True), dtype=np.float32)


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


def _read_items(path: Path) -> tuple[list[str], list[str]]:
    try:
        from normscope.inputs import read_items
    except ImportError:
        from normscope.errors import InputError

        lines = Path(path).read_text(encoding="utf-8").splitlines()
        if not lines:
            raise InputError(f"empty input file: {path}") from None
        return [str(i) for i in range(len(lines))], lines
    return read_items(path)


def stage_norms(ctx: StageContext) -> dict:
    from normscope.datasets import wordfreq_words
    from normscope.report.figures import plot_norm_distribution
    from normscope.table import EmbeddingTable

    cfg = ctx.config
    if cfg.items is not None:
        ids, texts = _read_items(cfg.items)
        source = f"items of {cfg.items.name}"
        sizes = f"{_fmt_n(len(texts))} items from {cfg.items.name}"
        command = f"normscope embed {cfg.items} --model {cfg.model} -o items.parquet --json items.json"
    else:
        texts = wordfreq_words(ctx.sizes.words)
        ids = [str(i) for i in range(len(texts))]
        source = f"top-{_fmt_n(len(texts))} wordfreq words"
        sizes = f"top {_fmt_n(len(texts))} alphabetic English words of wordfreq (most frequent first)"
        command = f"normscope embed --wordfreq-top {ctx.sizes.words} --model {cfg.model} -o words.parquet --json words.json"
    vecs = encode_texts(ctx, texts)
    table = EmbeddingTable(ids=list(ids), texts=list(texts), vectors=vecs, fingerprint=ctx.encoder().fingerprint)
    result = table.summary()
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
    lab = _import("normscope.lab", "the training lab")
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
    rows = [[g.get("ambiguity"), g.get("n"), g.get("r_obs"), g.get("r_eq"), g.get("heat"), g.get("drift"),
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


SIGNAL_ORDER = ("frequency", "specificity", "concreteness", "uncertainty")


def stage_signals(ctx: StageContext) -> dict:
    try:
        from normscope.cli.correlate import plot_signal, run_correlate
    except ImportError as exc:
        raise StageUnavailable(f"the semantic-signal stage is not available in this build ({exc})") from None
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
        n = s.signal_items
        if n is not None and sig == "specificity":
            n = min(n, 2000)
        ctx.console.log(f"signals: {sig}")
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
                     part.get("rho"), _ci(part.get("ci")), ", ".join(part.get("controls") or [])])
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


def stage_probes(ctx: StageContext) -> dict:
    _import("normscope.probes", "the probe stage")
    raise StageUnavailable("the probe stage is not integrated yet")


def _scifact_dir(ctx: StageContext) -> Path:
    data = ctx.data_dir()
    if data is None:
        raise StageUnavailable("SciFact needs ../shared/data (or --data DIR / $NORMSCOPE_DATA): not found")
    d = Path(data) / "scifact"
    if not d.is_dir():
        raise StageUnavailable(f"SciFact not found: {d} does not exist")
    return d


def stage_retrieval(ctx: StageContext) -> dict:
    _scifact_dir(ctx)
    _import("normscope.retrieval", "the retrieval stage")
    raise StageUnavailable("the retrieval stage is not integrated yet")


STAGE_FUNCS: dict[str, Callable[[StageContext], dict]] = {
    "setup": stage_setup,
    "norms": stage_norms,
    "probes": stage_probes,
    "lab": stage_lab,
    "signals": stage_signals,
    "retrieval": stage_retrieval,
}
