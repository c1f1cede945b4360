"""``normscope retrieval`` (norm-aware scoring, where the gain lies, confidence calibration on a BEIR dataset)
and ``normscope beir-convert`` (a TREC-style release such as the original NFCorpus to a BEIR folder)."""

from __future__ import annotations

import math

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope._format import MISSING, ci_fixed, fixed, p_text, p_value
from normscope.cli._app import app
from normscope._io import write_json, write_outputs
from normscope.cli._console import make_console
from normscope.cli._outputs import Row, Rows, compare_models, figure_outputs, print_claim_lines
from normscope.requests import Resampling, from_options
from normscope.requests.retrieval import RetrievalRequest
from normscope.validate import check_paths
from normscope.cli._options import (Address, BatchSize, Device, Engine, FigOut, JsonOut, JunkError, Models, NBoot,
                                    Precision, Runtime, Seed, TableOut, Workers, models_of, option_for)


def _param_text(r) -> str:
    if r.param_name is None:
        return MISSING
    p = r.param
    if isinstance(p, list):
        return f"{r.param_name} per fold {', '.join(f'{x:.3g}' for x in p)} (mean {r.param_mean:.3g})"
    return f"{r.param_name}={p:.4g}"


def _fitted_text(r: dict) -> str:
    return {"fitted": "fitted", "fixed (not fitted)": "not fitted (fixed)"}.get(r.param_source, MISSING)


def _param_short(r) -> str:
    """The parameter and whether it was fitted, in one short cell: ``alpha=0.05 (fitted)``."""
    if r.param_name is None:
        return MISSING
    p = r.param
    if isinstance(p, list):
        return f"{r.param_name} mean {r.param_mean:.3g}, {len(p)} folds"
    return f"{r.param_name}={p:.3g} ({'fitted' if r.param_source == 'fitted' else 'not fitted'})"


def _rel(x) -> str:
    return MISSING if x is None else f"{100 * x:+.2f} %"


def _rel_ci(ci) -> str:
    return MISSING if not ci or ci[0] is None or ci[1] is None else f"[{100 * ci[0]:+.2f}, {100 * ci[1]:+.2f}]"


def _scorer_table(res, full: bool = False) -> Rows:
    """The scorers' metrics against cosine (one row per scorer). Default: about 90 columns (nDCG@10, its relative
    change with its CI, the paired-t p); ``full``: every metric (MRR@10, Recall@100, the absolute change and its
    CI, the randomisation p) at about 160 columns."""
    from normscope.retrieval.result import SCORER_LABELS  # retrieval/ imports torch and faiss: start-up stays light

    if not full:
        rows = tuple(Row(f"scorers.{name}", name, (
            _param_short(r), fixed(r.ndcg10), f"{_rel(r.relative)} {_rel_ci(r.relative_ci)}".strip()
            if r.relative is not None else MISSING, p_value(r.p_value))) for name, r in res.scorers.items())
        return Rows(f"{res.dataset_name} / {res.split}: {res.n_queries.eval} queries, {res.n_docs} docs; "
                    f"fitted on {res.fit_split}",
                    ("scorer", "parameter", "nDCG@10", "relative \u0394 [95% CI]", "p (t)"), rows,
                    caption="\u0394: nDCG@10 vs cosine; CI: queries resampled, parameter refitted; p: paired t; "
                            "--full adds MRR@10, Recall@100, the absolute \u0394 and the randomisation p")

    keys = ("ndcg@10", "mrr@10", "recall@100", "delta", "delta_ci", "relative", "p_value", "p_value_randomization")
    n_perm = int(res.significance.n_permutations or 0) if res.significance is not None else 0
    rows = tuple(Row(f"scorers.{name}", name, (
        _param_text(r), _fitted_text(r), fixed(r.ndcg10), fixed(r.mrr10), fixed(r.recall100),
        fixed(r.delta), ci_fixed(r.delta_ci, ".4f"), MISSING if r.relative is None else f"{100 * r.relative:+.2f} %",
        p_value(r.p_value), MISSING if r.p_value_randomization is None
        else p_text(r.p_value_randomization, n_perm).removeprefix("p = "))) for name, r in res.scorers.items())
    return Rows(f"{res.dataset_name} / {res.split} ({res.n_queries.eval} queries, {res.n_docs} docs); "
                f"parameters fitted on {res.fit_split}; {res.relevance} relevance",
                ("scorer", "parameter", "fitted?", *[SCORER_LABELS[k] for k in keys]), rows)


def _print_abstention(ab: dict, console: Console, err: Console, *, full: bool = False) -> None:
    """The nAUC table (MTEB's abstention metric) and the norm against the best MTEB confidence."""
    if ab.get("status") != "ok":
        if ab.get("status") or ab.get("reason"):
            err.print(f"nAUC not computed: {ab.get('reason')}", soft_wrap=True, markup=False)
        return
    if full:
        t = Table(title=f"nAUC of {ab['metric']} by abstention (MTEB's metric; {ab['n_queries']} queries, cosine run "
                        f"depth {ab['depth']}; CIs: {ab['ci']})")
        cols = ("signal", "kind", "confidence", "nAUC", "95% CI")
    else:
        t = Table(title=f"nAUC of {ab['metric']} by abstention (MTEB's metric; {ab['n_queries']} queries)",
                  caption="CI: bootstrap over queries")
        cols = ("signal", "confidence", "nAUC [95% CI]")
    for col in cols:
        t.add_column(col, no_wrap=col == "signal")
    for name, e in ab["signals"].items():
        if full:
            t.add_row(name, e["kind"], e["formula"], fixed(e["nauc"], ".3f"), ci_fixed(e["nauc_ci"]))
        else:
            t.add_row(name, e["formula"], f"{fixed(e['nauc'], '.3f')} {ci_fixed(e['nauc_ci'])}")
    console.print(t)
    undefined = [k for k, e in ab["signals"].items() if e.get("nauc") is None or not math.isfinite(e["nauc"])]
    if undefined:  # nauc_normscope / mteb's nauc: NaN when the oracle's curve is flat
        err.print(f"n/a: nAUC is undefined for {', '.join(undefined)}: every query has the same {ab['metric']} "
                  "(the oracle's curve is flat, so no abstention can help)", soft_wrap=True, markup=False)
    c = ab.get("comparison") or {}
    if c.get("diff") is not None:
        err.print(f"nAUC {c['signal']} {c['nauc']:.3f} vs best MTEB confidence {c['best_baseline']} "
                  f"{c['baseline_nauc']:.3f} {ci_fixed(c['baseline_ci'])}: {c['position']} its CI; difference "
                  f"{c['diff']:+.3f} {ci_fixed(c['ci'])} (paired bootstrap over queries); computed by "
                  f"{ab['implementation']}", soft_wrap=True, markup=False)


def _strata_summary(st) -> Table | None:
    """One row per scorer: how many pre-specified strata differ from cosine after Holm, and the stratum of the
    largest relative gain with its CI (``--full`` prints every stratum)."""
    scorers = (st.scorers if st is not None else None) or {}
    if not scorers:
        return None
    k = max(len(rows) for rows in scorers.values())
    t = Table(title=f"where the gain lies: {k} pre-specified strata per scorer (nDCG@10 vs cosine)",
              caption=f"p Holm-corrected over the {k} strata; CI over the stratum's queries; --full: every stratum")
    for c in ("scorer", "strata apart (p < 0.05)", "largest gain: stratum", "relative \u0394 [95% CI]"):
        t.add_column(c, no_wrap=c == "scorer")
    for scorer, rows in scorers.items():
        apart = sum(r.p_holm is not None and r.p_holm < 0.05 for r in rows)
        best = max((r for r in rows if r.relative is not None), key=lambda r: r.relative, default=None)
        t.add_row(scorer, f"{apart} of {len(rows)}", MISSING if best is None else f"{best.stratifier} Q{best.quartile}",
                  MISSING if best is None else f"{_rel(best.relative)} {_rel_ci(best.relative_ci)}")
    return t


def _confidence_compact(res) -> tuple[Table, list[str]]:
    """The confidence signals in about 90 columns: the signal's own AUROC with its CI, the fitted map's AUROC, the
    ECE with its populated bins, the AURC (``--full`` adds the direction, the map's CI and the oracle AURC)."""
    info = res.calibration_info
    oracle = next((e.aurc_optimal for e in res.calibration.values() if e.status == "ok"), None)
    t = Table(title=f"confidence that the cosine top-1 is relevant (base rate {info.base_rate_eval:.3f}; maps fitted on "
                    f"{info.fitted_on})",
              caption="CI: bootstrap over queries" + (f"; AURC of the oracle {oracle:.3f}" if oracle is not None else ""))
    for c in ("signal", "AUROC raw [95% CI]", "AUROC calibrated", "ECE (bins)", "AURC"):
        t.add_column(c, no_wrap=c == "signal")
    why: dict[str, list[str]] = {}
    for name, e in res.calibration.items():
        if e.status != "ok":
            why.setdefault(str(e.reason), []).append(name)
            t.add_row(name, "not computed (below)", "", "", "")
            continue
        raw = MISSING if e.auroc_raw is None else f"{fixed(e.auroc_raw, '.3f')} {ci_fixed(e.auroc_raw_ci)}"
        t.add_row(name, raw, fixed(e.auroc, ".3f"),
                  f"{fixed(e.ece, '.3f')} ({e.ece_bins.populated_bins}{' !' if e.ece_bins.flag else ''})",
                  fixed(e.aurc, ".3f"))
    # each reason once, however many signals it stopped
    return t, [f"confidence not computed for {', '.join(names)}: {reason}" for reason, names in why.items()]


def _strata_full(st, console: Console) -> None:
    """``--full``: every pre-specified stratum, one table per scorer."""
    for scorer, rows in ((st.scorers if st is not None else None) or {}).items():
        s = Table(title=f"{scorer} vs cosine by pre-specified stratum (nDCG@10; CI over the stratum's queries; "
                        f"p Holm-corrected over the {len(rows)} strata)")
        for c in ("stratifier", "quartile (range)", "n", "\u0394", "95% CI", "relative \u0394", "p (Holm)"):
            s.add_column(c)
        for r in rows:
            rel = MISSING if r.relative is None else f"{100 * r.relative:+.1f} %"
            s.add_row(r.stratifier, f"Q{r.quartile} ({r.range.lo:.3g}-{r.range.hi:.3g})", str(r.n),
                      fixed(r.mean_delta), ci_fixed(r.mean_delta_ci, ".4f"), rel, p_value(r.p_holm))
        console.print(s)


def _confidence_full(res) -> Table:
    """``--full``: every column of the confidence signals (direction, both AUROCs with CIs, ECE, bins, AURC, oracle)."""
    from normscope.retrieval.result import SIGNAL_LABELS  # retrieval/ imports torch and faiss: start-up stays light

    info = res.calibration_info
    c = Table(title=f"confidence that the cosine top-1 is relevant (base rate {info.base_rate_eval:.3f}; maps fitted on "
                    f"{info.fitted_on}; AUROC CIs: bootstrap over queries)")
    for col in ["signal", "direction"] + [SIGNAL_LABELS[k] for k in ("auroc_raw", "auroc_raw_ci", "auroc", "auroc_ci", "ece",
                                                                  "ece_bins", "aurc", "aurc_optimal")]:
        c.add_column(col)
    for name, e in res.calibration.items():
        if e.status != "ok":
            c.add_row(name, MISSING, f"not computed: {e.reason}", "", "", "", "", "", "", "")
            continue
        d = e.fit.direction
        bins = e.ece_bins
        c.add_row(name, MISSING if d is None else f"{d:+d}", fixed(e.auroc_raw, ".3f"), ci_fixed(e.auroc_raw_ci),
                  fixed(e.auroc, ".3f"), ci_fixed(e.auroc_ci), fixed(e.ece, ".3f"),
                  f"{bins.populated_bins}" + (" (!)" if bins.flag else ""), fixed(e.aurc, ".3f"),
                  fixed(e.aurc_optimal, ".3f"))
    return c


def print_result(res, console: Console, err: Console, *, full: bool = False) -> None:
    """The tables and lines of ``normscope retrieval`` for a :class:`~normscope.retrieval.RetrievalResult`.

    Default: four tables readable at 80-120 columns (scorers, a one-row-per-scorer strata summary, confidence,
    nAUC); ``full``: every column and every stratum (about 160 columns).
    """
    console.print(_scorer_table(res, full=full).table())
    if full:
        _strata_full(res.strata, console)
        console.print(_confidence_full(res))
    else:
        summary = _strata_summary(res.strata)
        if summary is not None:
            console.print(summary)
        table, lines = _confidence_compact(res)
        console.print(table)
        for line in lines:
            err.print(line, soft_wrap=True, markup=False)
    info = res.calibration_info
    flags = [f"{name}: {note}" for name, e in res.calibration.items() if e.status == "ok"
             for note in ([e.ece_bins.flag] if e.ece_bins.flag else []) + ([f"AUROC {e.auroc_note}"] if e.auroc_note else [])]
    _print_abstention(res.abstention or {}, console, err, full=full)
    err.print(f"calibration direction: {info.direction_rule}; AUROC (calibrated) is that of the fitted map "
              "(flat, 0.5, where the fitting queries go the other way)", soft_wrap=True, markup=False)
    for f in flags:
        err.print(f"(!) {f}", soft_wrap=True, markup=False)
    for key, counts in res.excluded_queries.items():
        if counts:
            err.print(f"'{res.split if key == 'eval' else res.fit_split}' queries: {counts['evaluated']} evaluated of {counts['judged']} "
                      f"judged; excluded {counts['excluded_no_text']} without text, {counts['excluded_no_relevant']} "
                      f"without a relevant document, {counts.get('excluded_junk', 0)} junk; {counts['qrels_unknown_docs']} "
                      f"qrels rows name unknown documents, {counts.get('qrels_junk_docs', 0)} junk documents",
                      soft_wrap=True, markup=False)
    for side, j in (("documents", res.junk.documents), ("queries", res.junk.queries)):
        if j is not None and j.count:
            shown = ", ".join(j.ids[:5]) + (f" (and {j.count - 5} more)" if j.count > 5 else "")
            err.print(f"junk {side} left out: {j.count} ({shown})", soft_wrap=True, markup=False)
    trunc = {k: v for k, v in res.n_truncated.items() if v}
    if trunc:
        err.print("truncated at the model's maximum length: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in trunc.items()),
                  soft_wrap=True)


_DEFAULT = RetrievalRequest()


def _beside(fig: Path) -> Path:
    """The risk-coverage figure written beside ``--fig``."""
    fig = Path(fig)
    return fig.with_name(f"{fig.stem}_risk_coverage{fig.suffix or '.png'}")


def _plot(res, path: Path, *, beside: bool = True) -> Path:
    """``--fig``: the reliability diagrams of the confidence signals at ``path``; with ``beside``, the risk-coverage
    curves beside it (:func:`_beside`)."""
    from normscope.retrieval.figures import plot_reliability  # matplotlib: only when asked

    plot_reliability(res.to_dict(), path)
    if beside:
        _plot_risk(res, _beside(path))
    return Path(path)


def _plot_risk(res, path: Path) -> Path:
    from normscope.retrieval.figures import plot_risk_coverage  # matplotlib: only when asked

    return plot_risk_coverage(res.to_dict(), path)


@app.command()
def retrieval(
    dataset: option_for(RetrievalRequest, "dataset"),
    models: Models = None,
    scorers: option_for(RetrievalRequest, "scorers") = None,
    fit_split: option_for(RetrievalRequest, "fit_split") = _DEFAULT.fit_split,
    split: option_for(RetrievalRequest, "split") = _DEFAULT.split,
    alpha: Annotated[Optional[float], typer.Option("--alpha", help="Evaluate inverse_norm at this fixed alpha (not fitted), e.g. a paper's setting.")] = None,
    beta: Annotated[Optional[float], typer.Option("--beta", help="Evaluate power at this fixed beta (not fitted).")] = None,
    relevance: option_for(RetrievalRequest, "relevance") = _DEFAULT.relevance,
    grade_scale: option_for(RetrievalRequest, "grade_scale") = _DEFAULT.grade_scale,
    dedupe_docs: option_for(RetrievalRequest, "dedupe_docs") = False,
    ignore_identical_ids: option_for(RetrievalRequest, "ignore_identical_ids") = _DEFAULT.ignore_identical_ids,
    junk: JunkError = False,
    max_docs: option_for(RetrievalRequest, "max_docs") = _DEFAULT.max_docs,
    max_queries: option_for(RetrievalRequest, "max_queries") = _DEFAULT.max_queries,
    k: option_for(RetrievalRequest, "k") = _DEFAULT.k,
    n_boot: NBoot = _DEFAULT.resampling.n_boot,
    n_perm: option_for(Resampling, "n_perm") = _DEFAULT.resampling.n_perm,
    seed: Seed = _DEFAULT.resampling.seed,
    device: Device = _DEFAULT.embedding.device,
    precision: Precision = _DEFAULT.embedding.precision,
    runtime: Runtime = _DEFAULT.embedding.runtime,
    engine: Engine = _DEFAULT.engine,
    address: Address = _DEFAULT.address,
    workers: Workers = _DEFAULT.workers,
    agreement_model: option_for(RetrievalRequest, "agreement_model") = None,
    batch_size: BatchSize = _DEFAULT.embedding.batch_size,
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
    full: Annotated[bool, typer.Option("--full", help="Print every column and every stratum (about 160 columns); the "
                                       "default tables fit 80-120 columns and summarise the strata in one row per "
                                       "scorer. --json holds every number either way.")] = False,
) -> None:
    """Fit norm-aware scorers on a train split, evaluate them against cosine on a test split (overall and in
    pre-specified strata), and calibrate confidence signals of the cosine top-1. --fig: the reliability diagrams
    of the confidence signals; the risk-coverage curves beside it (<stem>_risk_coverage.png; one model)."""
    import normscope.extensions  # noqa: F401  registers --engine ray (light: ray is imported when used)
    from normscope.retrieval import run_retrieval  # torch and faiss: the CLI's start-up stays light

    err = make_console(stderr=True)
    models = models_of(models)
    figs = figure_outputs(fig, models)  # several models: each model's reliability diagrams
    if fig is not None and len(models) == 1:
        figs.append(("--fig (risk coverage)", _beside(fig), "figure"))
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figs],
                inputs=[("--dataset", dataset if Path(dataset).exists() else None)])
    params = {name: value for name, value in (("inverse_norm", alpha), ("power", beta)) if value is not None}
    scorers = [x for x in scorers or () if x] or list(_DEFAULT.scorers)  # '' (no scorer named): the default
    scorers += [name for name in params if name not in scorers]  # a fixed parameter runs its scorer
    request = from_options(RetrievalRequest, locals(), scorers=tuple(scorers), params=tuple(params.items()))

    def call(m):
        return run_retrieval(request.replace(embedding=request.embedding.replace(model=m)), progress=True)

    if len(models) > 1:
        compare_models(models, call, lambda r: _scorer_table(r, full=full),
                       title=f"{Path(str(dataset)).name}: {len(models)} models side by side",
                       console=err, out=out, json_path=json_path, width=160 if full else 120, fig=fig,
                       plot=lambda r, p: _plot(r, p, beside=False))
        return
    res = call(models[0])
    risk = _beside(fig) if fig is not None else None
    write_outputs({out: lambda p: res.items.to_parquet(p, index=False), json_path: lambda p: write_json(res.to_dict(), p),
                   fig: lambda p: _plot(res, p, beside=False), risk: lambda p: _plot_risk(res, p)},
                  options={out: "-o/--out", json_path: "--json", fig: "--fig", risk: "--fig (risk coverage)"})
    print_result(res, make_console(wide=160 if full else 100), err, full=full)
    print_claim_lines(res.claims, err)
    written = [str(p) for p in (json_path, out, fig, risk) if p is not None]
    if written:
        err.print("wrote " + ", ".join(written), soft_wrap=True, markup=False)


@app.command("beir-convert")
def beir_convert(
    src: Annotated[Path, typer.Argument(help="TREC-style folder: *.docs and *.queries (ID<TAB>TEXT), *.qrel (TREC qrels).")],
    out: Annotated[Path, typer.Argument(help="New BEIR folder to write (corpus.jsonl, queries.jsonl, qrels/{split}.tsv).")],
    queries: Annotated[str, typer.Option("--queries", help="Query variant: {split}.<variant>.queries (NFCorpus: titles, all, ...).")] = "titles",
    qrels: Annotated[str, typer.Option("--qrels", help="Judgement variant (grading): {split}.<variant>.qrel. NFCorpus: 2-1-0 (default, BEIR's: a marginal link is 0, not relevant) or 3-2-1 (the release's other grading: it is 1, relevant).")] = "2-1-0",
) -> None:
    """Convert a TREC-style release (such as the original NFCorpus) to the BEIR layout that --dataset reads."""
    from normscope.retrieval.trec import convert_trec  # retrieval/ imports torch and faiss: start-up stays light

    info = convert_trec(src, out, queries=queries, qrels=qrels)
    err = make_console(stderr=True)
    err.print(f"{info['n_docs']:,} documents, {info['n_queries']:,} queries, judged queries per split "
              f"{info['splits']}; grading {info['grading']}: {info['grading_meaning']}; wrote {out} (how: "
              f"{info['files'][-1]})", soft_wrap=True, markup=False)
