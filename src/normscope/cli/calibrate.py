"""``normscope calibrate``: fit a deployable calibrator of "the top-1 is relevant" on a BEIR dataset, with thresholds
measured on held-out queries and a Learn-then-Test guarantee; or (``--apply``) evaluate a fitted one on another dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope._io import to_jsonable, write_json, write_outputs
from normscope.cli._app import app
from normscope.cli._console import make_console
from normscope.cli._options import BatchSize, Device, JsonOut, NBoot, Precision, Runtime, Seed, TableOut, option_for
from normscope.errors import InputError
from normscope.requests import from_options
from normscope.requests.retrieval import CalibrateRequest
from normscope.validate import check_paths


def _f(x, spec: str = ".3f") -> str:
    return "-" if x is None else format(float(x), spec)


def _ci(ci, spec: str = ".3f") -> str:
    return "-" if not ci else f"[{_f(ci[0], spec)}, {_f(ci[1], spec)}]"


def print_result(res, console: Console, err: Console) -> None:
    """The tables of ``normscope calibrate`` for a :class:`~normscope.extensions.calibrate.CalibrateResult`."""
    from normscope.extensions.calibrate import AnswerThreshold, DocumentThreshold, ThresholdStats  # torch, faiss

    h, th_cal = res.heldout, res.thresholds
    parts = ", ".join(f"{v} {k}" for k, v in res.parts.items())
    t = Table(title=f"{res.dataset_name} / {res.model}: P({res.target}) from {', '.join(res.signals)} ({res.method}); "
                    f"queries: {parts}", title_justify="left")
    t.add_column("held-out ('" + h.split + "')")
    t.add_column("value", justify="right")
    t.add_column("95% CI (bootstrap over queries)")
    t.add_row("queries", str(h.n), "")
    t.add_row("base rate", _f(h.base_rate), "")
    t.add_row("mean P(relevant)", _f(h.mean_p), "")
    t.add_row("AUROC", _f(h.auroc), _ci(h.auroc_ci))
    t.add_row(f"ECE (15 bins, {h.ece_bins.populated_bins} populated)", _f(h.ece), _ci(h.ece_ci))
    console.print(t)
    if h.auroc is None:  # say why the table shows "-"
        if h.base_rate in (0.0, 1.0):
            why = (f"{res.target} is {'true' if h.base_rate == 1.0 else 'false'} for every one of the {h.n} held-out "
                   "queries: with one class there is nothing to rank (the calibrator may still be judged by its ECE)")
        else:
            why = "too few held-out queries of each class to rank"
        err.print(f"AUROC '-': {why}", soft_wrap=True, markup=False, highlight=False)
    th = Table(title="thresholds (chosen on the calibration queries; precision and coverage on held-out queries)",
               title_justify="left")
    for c in ("rule", "threshold", "held-out precision", "95% CI", "held-out coverage", "95% CI", "guarantee"):
        th.add_column(c)
    ans = th_cal.answer or AnswerThreshold()
    a = h.answer or ThresholdStats()
    th.add_row(f"answer when P >= lambda (target precision {_f(ans.precision, '.2f')})", _f(ans.threshold, ".2f"),
               _f(a.precision), _ci(a.precision_ci), _f(a.coverage), _ci(a.coverage_ci),
               f"Learn-then-Test, 1 - delta = {1 - ans.delta:g}" if ans.threshold is not None else "none found")
    for r in h.answer_at or []:
        th.add_row("answer when P >= p (asked)", _f(r.threshold, ".2f"), _f(r.precision), _ci(r.precision_ci),
                   _f(r.coverage), _ci(r.coverage_ci), "none (measured)")
    kd = th_cal.keep_documents or DocumentThreshold()
    k = h.keep_documents or ThresholdStats()
    th.add_row(f"keep top-{kd.k if kd.k is not None else '-'} documents with cosine >= t", _f(kd.threshold),
               _f(k.precision), _ci(k.precision_ci), _f(k.coverage), _ci(k.coverage_ci), "none (measured)")
    console.print(th)
    _print_nauc(res.abstention, console)
    if ans.statement:
        err.print(f"guarantee: {ans.statement}; assumption: {ans.assumption}", soft_wrap=True, markup=False)
    if h.ece_bins.flag:
        err.print(f"(!) {h.ece_bins.flag}", soft_wrap=True, markup=False)
    if res.shift:
        s = res.shift
        err.print(f"shift: fitted on {s.fitted_on.dataset_name} '{s.fitted_on.split}', evaluated on "
                  f"{s.evaluated_on.dataset_name} '{s.evaluated_on.split}': {s.note}", soft_wrap=True, markup=False)


def _print_nauc(ab, console: Console) -> None:
    """nAUC of nDCG@10 on the held-out queries (MTEB's abstention metric), one row per confidence."""
    if not ab:
        return
    if ab.get("status") != "ok":
        console.print(f"nAUC (MTEB abstention): not computed: {ab.get('reason')}", markup=False, highlight=False)
        return
    t = Table(title=f"nAUC of {ab['metric']} on the held-out queries (MTEB's abstention metric; {ab['n_queries']} "
                    "queries; 95% CI: bootstrap over queries)", title_justify="left")
    for c in ("confidence", "kind", "nAUC", "95% CI"):
        t.add_column(c)
    for name, v in ab["signals"].items():
        t.add_row(name, v["kind"], _f(v["nauc"]), _ci(v["nauc_ci"]))
    console.print(t)


def _print_shipped(model: str | None, json_path: Path | None, err: Console) -> None:
    """``normscope calibrate [--model M]`` without data: print M's shipped thresholds file (default: the bundled
    MiniLM), ``--json`` writes it; a model with none is one error line (exit 2)."""
    from normscope.encoders import DEFAULT_MODEL
    from normscope.extensions.model_thresholds import describe_thresholds, load_thresholds

    check_paths([("--json", json_path, "json")])
    d = load_thresholds(model or DEFAULT_MODEL)
    if json_path is not None:
        write_outputs({json_path: lambda p: write_json(d, p)}, options={json_path: "--json"})
    console = make_console(wide=160)
    console.print("measured thresholds shipped with normscope (no --dataset given; `normscope calibrate --dataset D` "
                  "measures them on D):", markup=False, highlight=False, soft_wrap=True)
    for line in describe_thresholds(d):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if json_path is not None:
        err.print(f"wrote {json_path}", soft_wrap=True, markup=False)


_DEFAULT = CalibrateRequest(dataset="scifact")


@app.command()
def calibrate(
    dataset: option_for(CalibrateRequest, "dataset") = None,
    run_file: option_for(CalibrateRequest, "run_file") = None,
    qrels_file: option_for(CalibrateRequest, "qrels_file") = None,
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="Model (default: the bundled MiniLM; with --apply, the calibrator's model). Alone, without --dataset "
                                                                                    "or --run: print the thresholds measured for it on SciFact, shipped with normscope.")] = None,
    signals: option_for(CalibrateRequest, "signals") = None,
    method: option_for(CalibrateRequest, "method") = _DEFAULT.method,
    target_k: option_for(CalibrateRequest, "target_k") = _DEFAULT.target_k,
    fit_split: option_for(CalibrateRequest, "fit_split") = _DEFAULT.fit_split,
    split: option_for(CalibrateRequest, "split") = _DEFAULT.split,
    precision_target: option_for(CalibrateRequest, "precision_target") = _DEFAULT.precision_target,
    delta: option_for(CalibrateRequest, "delta") = _DEFAULT.delta,
    answer_at: option_for(CalibrateRequest, "answer_at") = None,
    keep_k: option_for(CalibrateRequest, "keep_k") = _DEFAULT.keep_k,
    calibration_fraction: option_for(CalibrateRequest, "calibration_fraction") = _DEFAULT.calibration_fraction,
    apply: option_for(CalibrateRequest, "apply") = None,
    calibrator_out: Annotated[Optional[Path], typer.Option("--calibrator", "-c", help="Write the fitted calibrator (JSON) here.")] = None,
    fig: Annotated[Optional[Path], typer.Option("--fig", help="Reliability diagram of the held-out queries (PNG).")] = None,
    max_docs: option_for(CalibrateRequest, "max_docs") = None,
    max_queries: option_for(CalibrateRequest, "max_queries") = None,
    n_boot: NBoot = _DEFAULT.resampling.n_boot,
    seed: Seed = _DEFAULT.resampling.seed,
    device: Device = _DEFAULT.embedding.device,
    precision: Precision = _DEFAULT.embedding.precision,
    runtime: Runtime = _DEFAULT.embedding.runtime,
    batch_size: BatchSize = _DEFAULT.embedding.batch_size,
    json_path: JsonOut = None,
    out: TableOut = None,
) -> None:
    """Fit P(relevant) from per-query signals on train queries, choose thresholds (Learn-then-Test for precision) on
    other train queries, and measure all of it on held-out queries; --apply evaluates a fitted calibrator elsewhere.
    Without --dataset or --run: print the thresholds shipped for --model (measured on SciFact)."""
    err = make_console(stderr=True)
    if all(v is None for v in (dataset, run_file, qrels_file, apply, calibrator_out, fig, out)) and not signals:
        _print_shipped(model, json_path, err)  # --model M alone: the thresholds measured for M, shipped with normscope
        return
    from normscope.extensions.calibrate import run_calibrate  # retrieval/ imports torch and faiss: start-up stays light
    from normscope.retrieval.figures import plot_reliability

    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), ("--calibrator", calibrator_out, "json"),
                 ("--fig", fig, "figure")],
                inputs=[("--dataset", dataset if dataset is not None and Path(dataset).exists() else None), ("--run", run_file),
                        ("--qrels", qrels_file), ("--apply", apply)])
    if apply is not None and calibrator_out is not None:
        raise InputError("--apply evaluates an existing calibrator; --calibrator writes a new one: give one of them")
    if apply is not None and signals:
        raise InputError("--signal cannot be given with --apply (the calibrator fixes its signals)")
    request = from_options(CalibrateRequest, locals())
    res = run_calibrate(request, progress=True)
    panel = {f"P({res.target}), held-out": {"status": "ok", **to_jsonable(res.heldout)}}
    write_outputs({out: lambda p: res.items.to_parquet(p, index=False), json_path: lambda p: write_json(res.to_dict(), p),
                   calibrator_out: lambda p: write_json(res.calibrator, p),
                   fig: lambda p: plot_reliability(panel, p, ncols=1)},
                  options={out: "-o/--out", json_path: "--json", calibrator_out: "--calibrator", fig: "--fig"})
    if res.signals_note:
        err.print(f"note: {res.signals_note}", soft_wrap=True, markup=False, highlight=False)
    print_result(res, make_console(wide=160), err)
    written = [str(p) for p in (calibrator_out, json_path, out, fig) if p is not None]
    if written:
        err.print("wrote " + ", ".join(written), soft_wrap=True, markup=False)
