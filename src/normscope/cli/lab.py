"""``normscope lab``: train a small contrastive model and test Theorem 1 end to end (THEORY.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope._io import atomic_path, write_json
from normscope.validate import check_output_path
from normscope.cli import app
from normscope.errors import InputError


def _fmt(x, spec=".4g"):
    return "n/a" if x is None else format(x, spec)


@app.command()
def lab(
    encoder: Annotated[str, typer.Option("--encoder", help="table (free embeddings, k=1) or mlp (two-tower bias-free ReLU MLP, k=2).")] = "table",
    data: Annotated[str, typer.Option("--data", help="synthetic (controlled ambiguity) or wordnet (WordNet 3.0 nouns).")] = "synthetic",
    optimizer: Annotated[str, typer.Option("--optimizer", help="sgd, momentum (heavy ball, beta 0.9) or adamw; decay always decoupled.")] = "sgd",
    lr: Annotated[Optional[float], typer.Option("--lr", help="Learning rate eta (default per encoder/optimizer).")] = None,
    weight_decay: Annotated[Optional[float], typer.Option("--weight-decay", help="Decoupled weight decay lambda.")] = None,
    steps: Annotated[Optional[int], typer.Option("--steps", min=2, help="Training steps (table 12000, mlp 8000).")] = None,
    burn_in: Annotated[Optional[int], typer.Option("--burn-in", min=0, help="Steps before the measurement window.")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    estimator: Annotated[Optional[str], typer.Option("--estimator", help="snapshot (default for table) or trajectory (default for mlp).")] = None,
    snapshots: Annotated[Optional[int], typer.Option("--snapshots", min=1, help="Snapshot estimator: number of states S.")] = None,
    probe_batches: Annotated[Optional[int], typer.Option("--probe-batches", min=1, help="Snapshot estimator: virtual batches K per state.")] = None,
    device: Annotated[str, typer.Option("--device", help="Only cpu (the lab's models are tiny).")] = "cpu",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the summary as JSON.")] = None,
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Write the per-item table (parquet).")] = None,
    fig_dir: Annotated[Optional[Path], typer.Option("--fig-dir", help="Write lab_trajectories.png and lab_predicted_vs_observed.png here.")] = None,
) -> None:
    """Train a contrastive model, track every item's norm, heat and drift, and compare R with R_eq (E7)."""
    from normscope.lab import plot_predicted_vs_observed, plot_trajectories, run_lab

    console = Console()
    err = Console(stderr=True)
    if device != "cpu":
        raise InputError(f"the lab runs on cpu only, got --device {device}")
    for p in (json_path, out):
        if p is not None:
            check_output_path(p)
    if fig_dir is not None and not fig_dir.is_dir():
        raise InputError(f"--fig-dir does not exist: {fig_dir}")
    res = run_lab(encoder=encoder, data=data, optimizer=optimizer, lr=lr, weight_decay=weight_decay, steps=steps,
                  burn_in=burn_in, seed=seed, estimator=estimator, snapshots=snapshots, probe_batches=probe_batches,
                  progress=True)
    s = res.summary
    title = (f"{s['encoder']} / {s['data']} / {s['optimizer']}: eta={s['lr']:g}, lambda={s['weight_decay']:g}, "
             f"{s['steps']} steps (window {s['steps'] - s['burn_in']}), estimator {s['estimator']}")
    t = Table(title=title)
    for col in ("ambiguity", "n", "R observed", "heat Sigma^2", "drift D~", "R_eq (E7)", "mean |rel|"):
        t.add_column(col, justify="right")
    for g in s["groups"]:
        t.add_row(str(g["ambiguity"]), str(g["n"]), _fmt(g["r_obs"], ".4f"), _fmt(g["heat"], ".3g"),
                  _fmt(g["drift"], ".3g"), _fmt(g["r_eq"], ".4f"), _fmt(g["mean_abs_rel_error"], ".4f"))
    console.print(t)
    qc = s["q_over_c"]
    console.print(
        f"R_eq vs time-RMS R over {s['n_items']} items: mean|rel| {_fmt(s['mean_abs_rel_error'], '.4f')}, "
        f"median rel {_fmt(s['median_rel_error'], '+.4f')}, max|rel| {_fmt(s['max_abs_rel_error'], '.4f')}, "
        f"Pearson {_fmt(s['pearson'], '.4f')}, Spearman {_fmt(s['spearman'], '.4f')}"
    )
    console.print(f"balance q/c (E9): mean {_fmt(qc['mean'], '.4f')}, sd {_fmt(qc['sd'], '.4f')} (c = {s['c']:.4g}, {s['c_row']} row)")
    if "single_snapshot" in s:
        ss = s["single_snapshot"]
        console.print(f"single snapshot for comparison: mean|rel| {_fmt(ss['mean_abs_rel_error'], '.4f')}, Pearson {_fmt(ss['pearson'], '.4f')}")
    if s["optimizer"] == "momentum" and "uncorrected" in s:
        u = s["uncorrected"]
        console.print(f"without the (E12) momentum correction: mean|rel| {_fmt(u['mean_abs_rel_error'], '.4f')}, "
                      f"median rel {_fmt(u['median_rel_error'], '+.4f')}")
    g = s["gate"]
    verdict = "passed" if g["passed"] else "not passed"
    console.print(f"THEORY.md 7A gate, defined for SGD (mean|rel| <= {g['mean_abs_rel_error']}, |median| <= {g['abs_median_rel_error']}, "
                  f"Pearson >= {g['pearson']}): [bold]{verdict}[/]")
    if not s["sgd_formula_expected"]:
        console.print("[yellow]note:[/] AdamW: the SGD form of Theorem 1 is NOT expected to hold (THEORY.md 7 C3); "
                      "read these figures as a measurement, not a test of the theorem")
    elif s["optimizer"] == "momentum" and s["estimator"] == "snapshot":
        console.print("[yellow]note:[/] momentum: the SGD formula is used with the (E12) heat correction "
                      "Sigma^2/(1-beta)^2; the drift correction 1/(1-beta) is untested in THEORY.md")
    for c in s["caveats"]:
        console.print(f"[yellow]caveat:[/] {c}")
    console.print(f"wall time {s['wall_s']:.1f} s ({s['steps_per_s']:.0f} training steps/s with tracking)")
    if json_path is not None:
        write_json(s, json_path)
    if out is not None:
        with atomic_path(out) as tmp:
            res.items.to_parquet(tmp, index=False)
    written = [p for p in (json_path, out) if p is not None]
    if fig_dir is not None:
        written.append(plot_trajectories(res, fig_dir / "lab_trajectories.png"))
        written.append(plot_predicted_vs_observed(res, fig_dir / "lab_predicted_vs_observed.png"))
    if written:
        err.print("wrote " + ", ".join(str(p) for p in written), soft_wrap=True)
    err.print(f"done in {s['wall_s']:.1f} s")
