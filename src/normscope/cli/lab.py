"""``normscope lab``: train a contrastive model and test Theorem 1 end to end (docs/theory.md).

``--encoder table|mlp`` trains the small labs of :func:`normscope.lab.run_lab`; ``--encoder
transformer`` continues training a pretrained encoder (:func:`normscope.lab.run_transformer_lab`);
``--encoder tower`` trains free WordNet noun vectors against a frozen tower's gloss embeddings
(:func:`normscope.lab.tower.run_tower_lab`).
The ``--json`` file holds the results, then the run's seconds in a separate ``"timings"`` block.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from normscope._io import write_json, write_outputs
from normscope.cli._app import app
from normscope.cli._console import make_console, styled
from normscope.cli._options import Device, FigOut, JsonOut, Seed, TableOut, option_for
from normscope.cli._outputs import print_claim_lines
from normscope.claims import ClaimRow
from normscope.encoders import resolve_backend
from normscope.encoders.glove import static_refusal
from normscope.errors import InputError
from normscope.pairs import pair_source_path
from normscope.requests import from_options, option_fields
from normscope.requests.lab import DecisiveRequest, LabRequest, TowerLabRequest, TransformerLabRequest
from normscope.validate import check_paths


def _fmt(x, spec=".4g"):
    return "n/a" if x is None else format(x, spec)


def _beside(fig: Path, name: str) -> Path:
    """Where a command's second figure goes: ``<stem>_<name>.png`` beside ``--fig``."""
    return fig.with_name(f"{fig.stem}_{name}{fig.suffix or '.png'}")


def _ci(ci) -> str:
    return "" if not ci or None in ci else f" [{ci[0]:.3f}, {ci[1]:.3f}]"


#: The request each kind of lab run builds, by its label (``--encoder``, or ``--design decisive``).
_REQUESTS = {"--encoder table": LabRequest, "--encoder mlp": LabRequest, "--encoder transformer": TransformerLabRequest,
             "--design decisive": DecisiveRequest, "--encoder tower": TowerLabRequest}
#: Options of a kind of run that are no field of its request (paths of the run, the design switch).
_EXTRA = {"--encoder transformer": ("design", "checkpoint"), "--design decisive": ("design", "run_dir")}


#: How ``lab``'s help names each kind of run.
_KINDS = {LabRequest: "table/mlp", TransformerLabRequest: "transformer", DecisiveRequest: "--design decisive",
          TowerLabRequest: "tower"}


def _lab_option(name: str):
    """The ``lab`` option of field ``name``, one for every request that has it (their :class:`Option` s agree on the
    name): its help is each request's own, labelled with the kinds of run it applies to unless all take it, with the
    request's default; the parameter's default None keeps the request's."""
    helps: dict[str, list[str]] = {}
    first = None
    for cls, kind in _KINDS.items():
        entry = option_fields(cls).get(name)
        if entry is None:
            continue
        owner, opt, default = entry
        first = first or (owner, opt)
        shown = default is not None and not isinstance(default, bool)
        helps.setdefault(opt.help.rstrip(".") + (f" (default {default})" if shown else ""), []).append(kind)
    owner, opt = first
    if len(helps) == 1 and len(next(iter(helps.values()))) == len(_KINDS):
        text = next(iter(helps))
    else:
        text = "; ".join(f"{'/'.join(kinds)}: {t}" for t, kinds in helps.items())
    return option_for(owner, name, help=text + ".", optional=True)


@app.command()
def lab(
    encoder: Annotated[str, typer.Option("--encoder", help="table (free embeddings, k=1), mlp (two-tower bias-free ReLU MLP, k=2), transformer (continue training a pretrained encoder) or tower (free WordNet noun vectors against a frozen tower's gloss embeddings).")] = "table",
    dataset: _lab_option("dataset") = None,
    optimizer: _lab_option("optimizer") = None,
    lr: _lab_option("lr") = None,
    weight_decay: _lab_option("weight_decay") = None,
    steps: _lab_option("steps") = None,
    burn_in: _lab_option("burn_in") = None,
    seed: Seed = 0,
    estimator: _lab_option("estimator") = None,
    snapshots: _lab_option("snapshots") = None,
    probe_batches: _lab_option("probe_batches") = None,
    n_items: _lab_option("n_items") = None,
    n_concepts: _lab_option("n_concepts") = None,
    dim: _lab_option("dim") = None,
    hidden: _lab_option("hidden") = None,
    input_dim: _lab_option("input_dim") = None,
    record_every: _lab_option("record_every") = None,
    track: _lab_option("track") = None,
    model: _lab_option("model") = None,
    n_boot: _lab_option("n_boot") = None,
    pairs: _lab_option("pairs") = None,
    probe_items: _lab_option("probe_items") = None,
    precision: _lab_option("precision") = None,
    batch_size: _lab_option("batch_size") = None,
    tau: _lab_option("tau") = None,
    beta: _lab_option("beta") = None,
    decay_mask: _lab_option("decay_mask") = None,
    dropout: _lab_option("dropout") = None,
    max_tokens: _lab_option("max_tokens") = None,
    checkpoint_every: _lab_option("checkpoint_every") = None,
    lambda_every: _lab_option("lambda_every") = None,
    checkpoint: Annotated[Optional[Path], typer.Option("--checkpoint", help="transformer: checkpoint file; resumed when it exists with the same settings.")] = None,
    design: Annotated[Optional[str], typer.Option("--design", help="transformer: single (continue training --model, default) or decisive (a small BERT trained to stationarity under the theorem's conditions: grid, SGD/momentum/AdamW, snapshot probes, lambda scaling; docs/lab.md).")] = None,
    size: _lab_option("size") = None,
    run_dir: Annotated[Optional[Path], typer.Option("--run-dir", help="--design decisive: the resumable directory (default ./lab_decisive_<size>); a rerun continues there. --encoder tower: a resumable directory (default: none, nothing kept).")] = None,
    workers: _lab_option("workers") = None,
    device: Device = "cpu",
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: FigOut = None,
) -> None:
    """Train a contrastive model, track every item's norm, heat and drift, and compare R with R_eq (E7)."""
    if encoder not in ("table", "mlp", "transformer", "tower"):
        raise InputError(f"--encoder must be table, mlp, transformer or tower, got {encoder!r}")
    if design not in (None, "single", "decisive"):
        raise InputError(f"--design must be single or decisive, got {design!r}")
    values = dict(locals())
    kind = "--design decisive" if encoder == "transformer" and design == "decisive" else f"--encoder {encoder}"
    figs = _figure_paths(fig, encoder, design)
    probe_file = probe_items if probe_items is not None and not probe_items.isdigit() else None
    # the checkpoint is this run's own state (read to resume, then rewritten): an output, never another input
    check_paths([("--json", json_path, "json"), ("-o/--out", out, "table"), ("--checkpoint", checkpoint, "file"), *figs],
                inputs=[("--pairs", pair_source_path(pairs) if pairs else None), ("--probe-items", probe_file)])
    _refuse_others(kind, values)
    request = from_options(_REQUESTS[kind], values)
    if kind == "--encoder transformer":
        if model is not None and resolve_backend(model)[0] == "static":  # GloVe: no network to train or differentiate
            raise static_refusal(model)
        return _transformer_lab(request, checkpoint=checkpoint, json_path=json_path, out=out, fig=fig)
    if kind == "--design decisive":
        return _decisive(request, run_dir=run_dir, json_path=json_path, out=out, fig=fig)
    if kind == "--encoder tower":
        return _tower(request, json_path=json_path, out=out, fig=fig)
    return _small_lab(request, json_path=json_path, out=out, fig=fig)


#: ``lab`` parameters every kind of run takes, or that :func:`_refuse_others` checks itself.
_EVERY = ("encoder", "seed", "device", "dataset", "json_path", "out", "fig")


def _refuse_others(kind: str, values: dict) -> None:
    """A one-line error for an option given that the kind of run does not take (its request has no such field):
    ``--model does not apply to --encoder table (it applies to --encoder transformer/tower)``."""
    takes = {label: set(option_fields(cls)) | set(_EXTRA.get(label, ())) for label, cls in _REQUESTS.items()}
    if values["device"] != "cpu" and "device" not in takes[kind]:
        raise InputError(f"the {'frozen-tower lab runs' if kind == '--encoder tower' else 'table and mlp labs run'} on "
                         f"cpu only, got --device {values['device']}")
    dataset = values["dataset"]
    if kind == "--encoder tower" and dataset not in (None, "wordnet"):
        raise InputError(f"--encoder tower trains on WordNet nouns only: --dataset must be wordnet, got {dataset!r}")
    if dataset is not None and kind not in ("--encoder tower", "--encoder table", "--encoder mlp"):
        raise InputError("--dataset applies to --encoder table/mlp only (the transformer lab uses the trajectory "
                         "estimator)")
    for name, value in values.items():
        if name in _EVERY or value is None or value is False or name in takes[kind]:
            continue
        where = [label for label in _REQUESTS if name in takes[label]]
        where = ["--encoder table/mlp" if w == "--encoder table" else w for w in where if w != "--encoder mlp"]
        raise InputError(f"{_flag(name)} does not apply to {kind} (it applies to {' and '.join(where)})")


def _flag(name: str) -> str:
    """The option of ``lab`` parameter ``name`` (``--probe-items``)."""
    for cls in _REQUESTS.values():
        entry = option_fields(cls).get(name)
        if entry is not None:
            return entry[1].name.split("/")[0]
    return "--" + name.replace("_", "-")


def _figure_paths(fig, encoder: str, design) -> list:
    """``--fig`` and the figures written beside it, as ``check_paths`` entries (none without ``--fig``)."""
    if fig is None:
        return []
    beside = (("trajectories",) if encoder in ("table", "mlp", "tower") else
              ("trajectories", "lambda_scaling") if design == "decisive" else ("predicted_vs_final",))
    return [("--fig", fig, "figure")] + [(f"--fig ({n})", _beside(fig, n), "figure") for n in beside]


def _write(res, json_path, out) -> list:
    """The ``--json`` summary (results, then the ``timings`` block) and the ``-o`` table, as one set (all or none)."""
    return write_outputs({json_path: lambda p: write_json({**res.to_dict(), "timings": res.timings}, p),
                          out: lambda p: res.items.to_parquet(p, index=False)},
                         options={json_path: "--json", out: "-o/--out"})


def _small_lab(request: LabRequest, *, json_path, out, fig) -> None:
    from normscope.lab import plot_predicted_vs_observed, plot_trajectories, run_lab  # torch: start-up stays light

    console = make_console()
    err = make_console(stderr=True)
    res = run_lab(request, progress=True)
    title = (f"{res.encoder} / {res.data} / {res.optimizer}: eta={res.lr:g}, lambda={res.weight_decay:g}, "
             f"{res.steps} steps (window {res.steps - res.burn_in}), estimator {res.estimator}")
    t = Table(title=title)
    for col in ("ambiguity", "n", "R observed", "heat Sigma^2", "drift D~", "R_eq (E7)", "mean |rel|"):
        t.add_column(col, justify="right")
    for g in res.groups:
        t.add_row(str(g.ambiguity), str(g.n), _fmt(g.r_obs, ".4f"), _fmt(g.heat, ".3g"), _fmt(g.drift, ".3g"),
                  _fmt(g.r_eq, ".4f"), _fmt(g.mean_abs_rel_error, ".4f"))
    console.print(t)
    qc = res.q_over_c
    console.print(
        f"R_eq vs time-RMS R over {res.n_items} items: mean|rel| {_fmt(res.mean_abs_rel_error, '.4f')}, "
        f"median rel {_fmt(res.median_rel_error, '+.4f')}, max|rel| {_fmt(res.max_abs_rel_error, '.4f')}, "
        f"Pearson {_fmt(res.pearson, '.4f')}, Spearman {_fmt(res.spearman, '.4f')}"
    )
    console.print(f"balance q/c (E9): mean {_fmt(qc.mean, '.4f')}, sd {_fmt(qc.sd, '.4f')} (c = {res.c:.4g}, {res.c_row} row)")
    if res.single_snapshot is not None:
        ss = res.single_snapshot
        console.print(f"single snapshot for comparison: mean|rel| {_fmt(ss.mean_abs_rel_error, '.4f')}, "
                      f"Pearson {_fmt(ss.pearson, '.4f')}")
    if res.optimizer == "momentum" and res.uncorrected is not None:
        u = res.uncorrected
        console.print(f"without the (E12) momentum correction: mean|rel| {_fmt(u.mean_abs_rel_error, '.4f')}, "
                      f"median rel {_fmt(u.median_rel_error, '+.4f')}")
    g = res.gate
    verdict = "passed" if g.passed else "not passed"
    console.print(f"docs/theory.md 7A gate, defined for SGD (mean|rel| <= {g.mean_abs_rel_error}, |median| <= "
                  f"{g.abs_median_rel_error}, Pearson >= {g.pearson}):", styled(verdict, "bold"))
    if not res.sgd_formula_expected:
        console.print(styled("note:", "yellow"), "AdamW: the SGD form of Theorem 1 is NOT expected to hold (docs/theory.md C3); "
                      "read these figures as a measurement, not a test of the theorem")
    elif res.optimizer == "momentum" and res.estimator == "snapshot":
        console.print(styled("note:", "yellow"), "momentum: the SGD formula is used with the (E12) heat correction "
                      "Sigma^2/(1-beta)^2; the drift correction 1/(1-beta) is untested in docs/theory.md")
    for c in res.caveats:
        console.print(styled("caveat:", "yellow"), c)
    tm = res.timings
    console.print(f"wall time {tm['wall_s']:.1f} s ({tm['steps_per_s']:.0f} training steps/s with tracking)")
    written = _write(res, json_path, out)
    if fig is not None:  # --fig: predicted vs observed; the trajectories beside it
        written.append(plot_predicted_vs_observed(res, fig))
        written.append(plot_trajectories(res, _beside(fig, "trajectories")))
    if written:
        err.print("wrote " + ", ".join(str(p) for p in written), soft_wrap=True, markup=False)
    err.print(f"done in {tm['wall_s']:.1f} s")


def _transformer_lab(request, *, checkpoint, json_path, out, fig) -> None:
    from normscope.lab import plot_predicted_vs_final, plot_transformer_trajectories, run_transformer_lab  # torch

    console = make_console()
    err = make_console(stderr=True)
    res = run_transformer_lab(request, checkpoint=checkpoint, progress=True)
    t = Table(title=(f"transformer lab: {res.model} | {res.optimizer} eta={res.lr:g} lambda={res.weight_decay:g} | "
                     f"{res.steps} steps, B={res.batch_size}, tau={res.tau:g}, decay mask {res.decay_mask}, "
                     f"dropout {'on' if res.dropout else 'off'}, {res.precision}"))
    t.add_column("quantity")
    t.add_column("value", justify="right")
    lab_ = type(res).label
    rows = [
        ("relaxation_steps", _fmt(res.relaxation_steps, ".0f")),
        ("long_enough", "yes" if res.long_enough else "no"),
        ("norms stationary over the window (measured: |median q/c_realised - 1| <= 0.25)",
         "yes" if res.trajectory is not None and res.trajectory.stationary else "no"),
        ("q_over_c_mean", _fmt(res.q_over_c_mean, ".3f")),
        ("q_over_c_median", _fmt(res.q_over_c_median, ".3f")),
        ("fraction_moved_toward_req", _fmt(res.fraction_moved_toward_req, ".3f") + _ci(res.fraction_moved_toward_req_ci)),
        ("spearman_predicted_vs_final", _fmt(res.spearman_predicted_vs_final, ".3f") + _ci(res.spearman_predicted_vs_final_ci)),
        ("pearson_final_vs_req_trajectory", _fmt(res.pearson_final_vs_req_trajectory, ".3f")),
    ]
    for key, val in rows:
        t.add_row(lab_(key), val)
    if res.motion is not None:
        m = res.motion
        t.add_row("Spearman \u03c1, norm at step 0 vs final R (persistence baseline)",
                  _fmt(m.spearman_start_vs_final, ".3f") + _ci(m.spearman_start_vs_final_ci))
        t.add_row("partial Spearman \u03c1, step-0 R_eq vs final R given R_0 (the per-item test)",
                  _fmt(m.partial_spearman_predicted_vs_final_given_start, ".3f")
                  + _ci(m.partial_spearman_predicted_vs_final_given_start_ci))
        t.add_row("fraction moved toward a common target (median R_eq) (baseline)",
                  _fmt(m.fraction_moved_toward_common_target, ".3f") + _ci(m.fraction_moved_toward_common_target_ci))
        t.add_row("median fraction of the predicted distance travelled", _fmt(m.fraction_of_distance.median, ".3f"))
        t.add_row("probe items with a step-0 prediction", f"{m.n_with_prediction} of {res.probe_items}")
    console.print(t)
    if res.pearson_final_vs_req_trajectory_reason:
        console.print(f"stationary check not computed: {res.pearson_final_vs_req_trajectory_reason}")
    for c in res.caveats:
        console.print(styled("caveat:", "yellow"), c)
    tm = res.timings
    if tm.get("s_per_step") is not None:  # timings: a free-form dict of seconds
        console.print(f"{tm['s_per_step']:.3f} s per step with tracking ({tm['steps_run']} steps run here), "
                      f"step-0 probe {tm['probe0_s']:.1f} s")
    written = _write(res, json_path, out)
    if fig is not None and res.norms is not None:  # --fig: the trajectories; predicted vs final beside it
        written.append(plot_transformer_trajectories(res, fig))
        written.append(plot_predicted_vs_final(res, _beside(fig, "predicted_vs_final")))
    if written:
        err.print("wrote " + ", ".join(str(p) for p in written), soft_wrap=True, markup=False)
    err.print(f"done in {tm['wall_s']:.1f} s")


def _decisive(request: DecisiveRequest, *, run_dir, json_path, out, fig) -> None:
    from normscope.lab import run_decisive_design  # torch: start-up stays light
    from normscope.lab.decisive_figures import plot_decisive_prediction, plot_decisive_trajectories, plot_lambda_scaling
    from normscope.lab.result import (NullStat, PredictionCI, PredictionNull, PredictionStats,  # torch, as above
                                      RunTrajectory, ScalingPrediction, SnapshotPrediction)

    console = make_console()
    err = make_console(stderr=True)
    run_dir = Path(run_dir) if run_dir is not None else Path(f"lab_decisive_{request.size}")
    from normscope.lab.run_folder import check_run_folder, run_folder_writes

    check_run_folder(run_dir)  # a damaged state file: one line before anything is printed or run
    err.print(f"decisive design '{request.size}' in {run_dir} (a rerun continues there)", soft_wrap=True, markup=False)
    with run_folder_writes(run_dir):  # a full disk in any writer (safetensors, torch, a worker): one line
        res = run_decisive_design(directory=run_dir, **request.run_kwargs(), progress=True)
    d = res.to_dict()
    enc = res.encoder
    console.print(f"encoder: BERT hidden {enc.config.hidden}, {enc.config.layers} layers; AdamW "
                  f"{enc.pretrain['steps']:,} steps; held-out top-1 accuracy {enc.heldout_accuracy:.3f}"
                  f"{_ci(enc.heldout_accuracy_ci)} among {enc.n_eval} (chance {enc.chance:.4f})", markup=False)
    g = Table(title=f"eta/lambda grid (SGD, mask {res.decay_mask}); selected: eta={res.selected.eta:g}, "
                    f"lambda={res.selected.lam:.4g} ({res.selected.rule})")
    for col in ("eta", "lambda", "eta*lambda", "mask", "relaxation (steps)", "steps", "label", "loss", "accuracy", "mean R"):
        g.add_column(col, justify="right")
    for r in res.grid:
        g.add_row(f"{r.eta:g}", f"{r.lam:.4g}", f"{r.eta_lambda:.2g}", r.mask, _fmt(r.relaxation_steps, ".0f"),
                  str(r.steps), r.label, _fmt(r.loss_window, ".3f"), _fmt(r.accuracy_end, ".3f"),
                  _fmt(r.mean_r_window, ".3f"))
    console.print(g)
    t = Table(title="base runs: stationarity and the prediction with no fitted constant (R_eq (E7) vs time-averaged R)")
    for col in ("optimizer", "eta", "lambda", "relaxations", "label", "mean |rel|", "Pearson", "Spearman",
                "null p (mean |rel|)", "heat share"):
        t.add_column(col, justify="right")
    for opt, b in (res.base or {}).items():
        pr = b.prediction or SnapshotPrediction()
        st, ci = pr.stats or PredictionStats(), pr.ci or PredictionCI()
        null = (pr.null or PredictionNull()).mean_abs_rel_error or NullStat()
        t.add_row(opt, f"{b.eta:g}", f"{b.lam:.4g}", _fmt(b.relaxations, ".3g"), b.label,
                  _fmt(st.mean_abs_rel_error, ".3f") + _ci(ci.mean_abs_rel_error),
                  _fmt(st.pearson, ".3f") + _ci(ci.pearson),
                  _fmt(st.spearman, ".3f") + _ci(ci.spearman),
                  _fmt(null.p, ".3g"), _fmt((b.trajectory or RunTrajectory()).heat_share, ".3g"))
    console.print(t)
    for opt, b in (res.base or {}).items():
        sc = b.scale or {}
        if sc:
            st, e1 = sc.get("stationarity") or {}, sc.get("e1") or {}
            console.print(f"scale ||theta_D|| ({opt}): arrival {_fmt(b.arrival_units, '.3g')} + window "
                          f"{_fmt(b.window_units, '.3g')} relaxation units {b.relaxation_unit}; {st.get('label')} "
                          f"({_fmt(st.get('relative_change'), '+.2%')}); s observed {sc['s_observed']:.5g}, predicted "
                          f"(E2{', SGD form' if not sc.get('sgd_form_expected', True) else ''}) {sc['s_predicted']:.5g}, "
                          f"rel. error {sc['rel_error']:+.2%}{_ci(sc.get('rel_error_ci'))}; (E1) max |cos| "
                          f"{_fmt(e1.get('max_abs_cos'), '.2g')}, balance {_fmt(e1.get('balance'), '.4f')}", markup=False)
    s = Table(title="lambda scaling at fixed eta: slope of log s (theta_D) on log lambda, predicted before the scaled "
                    "runs; the items' log R-bar slope beside it")
    for col in ("optimizer", "lambdas", "slope of s [95% CI]", "predicted", "items' slope [95% CI]", "labels"):
        s.add_column(col, justify="right")
    for opt, sc in (res.scaling or {}).items():
        f, sf = sc.fit, sc.scale_fit
        s.add_row(opt, ", ".join(f"{r.lam:.3g}" for r in sc.runs),
                  (f"{sf.slope:.3f}" + _ci(sf.ci)) if sf is not None and sf.slope is not None else "n/a",
                  _fmt((sc.prediction or ScalingPrediction()).exponent, ".3f"), f"{f.slope:.3f}" + _ci(f.ci),
                  ", ".join(r.label for r in sc.runs))
    console.print(s)
    nd = res.nodecay
    if nd:
        console.print(f"no decay (SGD, {nd.steps} steps from the SGD base run's end): R_end/R_start {nd.ratio:.4f}"
                      f"{_ci(nd.ci)}, {nd.fraction_grew:.0%} of items grew; initial rate of mean R^2 "
                      f"{_fmt(nd.initial_rate_of_mean_r2, '.3g')} per step vs predicted "
                      f"{_fmt(nd.predicted_initial_rate, '.3g')}", markup=False)
    for key, c in (("theorem1_transformer", res.claim), ("theorem1_transformer_items", res.claim_items)):
        row = ClaimRow.from_json(c) or ClaimRow()
        console.print(f"scorecard ({key}): {row.verdict}: {row.why}", markup=False)
    for c in res.caveats:
        console.print(styled("caveat:", "yellow"), c)
    written = write_outputs({json_path: lambda p: write_json({**d, "timings": res.timings}, p),
                             out: lambda p: res.items.to_parquet(p, index=False)},
                            options={json_path: "--json", out: "-o/--out"})
    if fig is not None:  # --fig: the prediction; the trajectories and the lambda scaling beside it
        written.append(plot_decisive_prediction(d, fig))
        written.append(plot_decisive_trajectories(d, _beside(fig, "trajectories")))
        written.append(plot_lambda_scaling(d, _beside(fig, "lambda_scaling")))
    if written:
        err.print("wrote " + ", ".join(str(p) for p in written), soft_wrap=True)
    tm = res.timings
    err.print(f"done in {tm['wall_s']:.1f} s ({tm['cpu_s']:.1f} s CPU in this process; runs: {tm['runs_cpu_s']:.1f} s CPU)")


def _tower(request: TowerLabRequest, *, json_path, out, fig) -> None:
    from normscope.lab.tower import run_tower_lab  # torch: start-up stays light
    from normscope.lab.tower_figures import plot_tower_prediction, plot_tower_trajectories  # matplotlib, as above

    console = make_console()
    err = make_console(stderr=True)
    res = run_tower_lab(request, progress=True)
    t = Table(title=(f"frozen tower {res.model} ({res.size}): {res.n_items} WordNet nouns, {res.n_glosses} glosses, "
                     f"SGD eta={res.lr:g} lambda={res.weight_decay:g}, tau={res.tau:g}, B={res.batch_size}, "
                     f"{res.burn_in} + {res.window} steps, heat from {res.probe_batches} probe batches at the end"))
    for col in ("senses", "n", "R observed", "heat Sigma^2", "R_eq (E2)", "mean |rel|"):
        t.add_column(col, justify="right")
    for g in res.groups:
        t.add_row(str(g["senses"]), str(g["n"]), _fmt(g["r_obs"], ".4f"), _fmt(g["heat"], ".3g"), _fmt(g["r_eq"], ".4f"),
                  _fmt(g["mean_abs_rel_error"], ".4f"))
    console.print(t)
    st = res.stationarity
    null = res.null or {}
    lines = [
        f"stationarity ({st['label']}): mean R moved {res.mean_r_change:+.2%} between the window's halves "
        f"(mean R^2 {_fmt(st['relative_change'], '+.2%')}, allowed 3 %); burn-in {res.burn_in / res.relaxation_steps:.3g} "
        f"relaxation times 1/(4 eta lambda) = {res.relaxation_steps:.0f} steps",
        f"(E1) balance eta^2 sum||g||^2 / (2c sum R^2) over the window: {res.balance:.4f} (telescoping identity to "
        f"{res.balance_identity_residual:.1e}); max |D~| R^2 / Sigma^2 {res.max_abs_drift_over_heat:.1e}",
        f"R_eq vs R-bar over {res.n_items} nouns: mean |rel| {res.mean_abs_rel_error:.4f}{_ci(res.mean_abs_rel_error_ci)}, "
        f"median rel {res.median_rel_error:+.4f}, Pearson {_fmt(res.pearson, '.4f')}{_ci(res.pearson_ci)}",
        f"heat-permutation null: median mean |rel| {_fmt(null.get('median'), '.3f')}, p {_fmt(null.get('p'), '.2g')} "
        f"({null.get('n_perm')} permutations)",
        f"ambiguity -> heat: Spearman(heat, senses) {_fmt(res.spearman_heat_senses, '.3f')}{_ci(res.spearman_heat_senses_ci)}",
    ]
    for line in lines:
        console.print(line, markup=False)
    c = res.controls
    if "adamw" in c:
        a = c["adamw"]
        console.print(f"control AdamW (eta {a['lr']:g}, lambda {a['weight_decay']:g}): the SGD form misses by "
                      f"{a['median_rel_error_sgd_form']:+.1%} (median); mean R by senses "
                      + " / ".join(f"{g['r_obs']:.3f}" for g in a["groups"]), markup=False)
    if "momentum" in c:
        m = c["momentum"]
        console.print(f"control heavy ball (beta {m['beta']:g}): without (E12) the SGD form misses by "
                      f"{m['median_rel_error_sgd_form']:+.1%} (sqrt(1 - beta) - 1 = {m['predicted_miss_without_e12']:+.1%}); "
                      f"with (E12) mean |rel| {m['mean_abs_rel_error_e12']:.3f}{_ci(m['mean_abs_rel_error_e12_ci'])}",
                      markup=False)
    if "nodecay" in c:
        n = c["nodecay"]
        console.print(f"control no decay: {n['share_grown']:.0%} of the norms grew over the window, by "
                      f"{n['mean_growth']:+.1%} on average; mean R moved {n['mean_r_change']:+.1%} between its halves",
                      markup=False)
    print_claim_lines([res.claim], console)
    for cav in res.caveats:
        console.print(styled("caveat:", "yellow"), cav)
    written = _write(res, json_path, out)
    if fig is not None:  # --fig: predicted vs observed; the trajectories beside it
        written.append(plot_tower_prediction(res, fig))
        written.append(plot_tower_trajectories(res, _beside(fig, "trajectories")))
    if written:
        err.print("wrote " + ", ".join(str(p) for p in written), soft_wrap=True, markup=False)
    tm = res.timings
    err.print(f"done in {tm['wall_s']:.1f} s ({tm['cpu_s']:.1f} s CPU)")

