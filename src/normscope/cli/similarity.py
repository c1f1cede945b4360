"""``normscope similarity``: norm-aware pair scorers against human similarity ratings (STS-B, word lists).

A thin wrapper over :func:`normscope.similarity.run_similarity` (its result's ``to_dict()`` is the
``--json`` output) and :func:`normscope.similarity.plot_similarity` (``--fig``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope.cli import app
from normscope.cli._console import make_console, styled
from normscope.cli._outputs import compare_models, figure_outputs, print_claim_lines, write_outputs
from normscope.cli._options import BatchSize, Device, JsonOut, JunkError, Models, Precision, Seed, TableOut
from normscope.encoders import DEFAULT_MODEL
from normscope.validate import check_paths


def _f(v) -> str:
    return "—" if v is None else f"{v:+.4f}" if abs(v) < 0.1 else f"{v:.3f}"


def _table(res):
    from rich.table import Table

    fit_txt = (f"fitted on {res.fit['n_pairs']} pairs ({res.fit['source']}"
               + (f": {Path(res.fit['path']).name}" if res.fit["source"] != "random half" else f", seed {res.seed}")
               + ")")
    table = Table(title=f"{Path(res.dataset).name}: {res.n_pairs} evaluated pairs — {res.model}", caption=fit_txt)
    for col in ("scorer", "parameter", "Spearman ρ", "95% CI", "Pearson r", "Δ Spearman vs cosine", "95% CI (paired)"):
        table.add_column(col)
    for name, s in res.scorers.items():
        par = "—" if s["param"] is None else f"{s['param_name']} = {s['param']:.4g}"
        dci = "—" if s["delta_ci"] is None else f"[{_f(s['delta_ci'][0])}, {_f(s['delta_ci'][1])}]"
        table.add_row(name, par, f"{s['spearman']:.3f}", f"[{s['spearman_ci'][0]:.3f}, {s['spearman_ci'][1]:.3f}]",
                      f"{s['pearson']:.3f}", "—" if name == "cosine" else _f(s["delta_spearman"]), dci)
    return table


@app.command()
def similarity(
    dataset: Annotated[Optional[Path], typer.Option("--dataset", help="Evaluated pairs: an STS-B file (sts-dev.csv, sts-test.csv) or a word-similarity list (SimLex-999.txt, WS-353, MEN, RW); default SimLex-999 (found or fetched: normscope data path simlex-999).")] = None,
    fit: Annotated[Optional[Path], typer.Option("--fit", help="Fit the scorers' parameters on this pair file (default: sts-train.csv beside an STS-B file, else a seeded random half of --dataset).")] = None,
    scorer: Annotated[str, typer.Option("--scorer", help="Comma-separated: cosine, dot, inverse_norm, power (cosine is always the baseline).")] = "cosine,dot,inverse_norm,power",
    fmt: Annotated[str, typer.Option("--format", help="Format of --dataset: auto, sts or words.")] = "auto",
    fit_format: Annotated[str, typer.Option("--fit-format", help="Format of --fit: auto, sts or words.")] = "auto",
    model: Models = None,
    seed: Seed = 0,
    n_boot: Annotated[int, typer.Option("--n-boot", min=0, help="Bootstrap resamples of the evaluated pairs.")] = 2000,
    batch_size: BatchSize = 64,
    device: Device = "cpu",
    precision: Precision = "fp32",
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: Annotated[Optional[Path], typer.Option("--fig", help="Figure: fit curves and the difference to cosine with CIs.")] = None,
    junk_error: JunkError = False,
    keep_duplicates: Annotated[bool, typer.Option("--keep-duplicates", help="Keep pairs that repeat another pair (same "
                                                  "texts and score; default: count each once and say how many were left out).")] = False,
    whiten: Annotated[str, typer.Option("--whiten", help="Comma-separated: zipf, uniform. Also score the pairs by the cosine of whitened vectors (Zipfian whitening, Yokoi et al. 2024: mean and covariance weighted by word frequency; or uniform), fitted on --whiten-vocab wordfreq words, never on the pairs.")] = "",
    whiten_vocab: Annotated[int, typer.Option("--whiten-vocab", min=2, help="Words of the whitening vocabulary: the top-N alphabetic English words of wordfreq, embedded by the model.")] = 20000,
) -> None:
    """Score human-rated pairs with norm-aware similarities fitted on other pairs; Spearman, Pearson, gain over cosine."""
    from normscope.similarity import plot_similarity, run_similarity

    models = list(dict.fromkeys(model or [DEFAULT_MODEL]))
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)],
                inputs=[("--dataset", dataset), ("--fit", fit)])
    if dataset is None:
        from normscope.data import data_path

        dataset = data_path("simlex-999")

    def call(m):
        return run_similarity(dataset, fit=fit, scorers=[s.strip() for s in scorer.split(",") if s.strip()], fmt=fmt,
                             fit_format=fit_format, model=m, seed=seed, n_boot=n_boot, batch_size=batch_size,
                             device=device, precision=precision, progress=True, junk="error" if junk_error else "drop",
                             keep_duplicates=keep_duplicates,
                             whiten=[w.strip() for w in whiten.split(",") if w.strip()], whiten_vocab=whiten_vocab)

    console = make_console(stderr=True)
    if len(models) > 1:
        compare_models(models, call, _table, title=f"{Path(dataset).name}: {len(models)} models side by side",
                       console=console, out=out, json_path=json_path, fig=fig, plot=plot_similarity)
        return
    res = call(models[0])
    make_console().print(_table(res))
    if res.junk.get("count"):
        console.print(styled(f"{res.junk['count']} junk text(s) left out with their {res.n_pairs_junk} evaluated "
                             f"pair(s): {', '.join(res.junk['ids'][:5])}", "yellow"))
    if res.n_truncated:
        console.print(f"{res.n_truncated} text(s) were cut at the model's maximum sequence length")
    for note in res.notes:
        console.print(f"note: {note}")
    print_claim_lines(res.claims, console)
    write_outputs(res, console, out=out, json_path=json_path, fig=fig, plot=plot_similarity)
