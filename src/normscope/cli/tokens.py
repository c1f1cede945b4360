"""``normscope tokens``: the input embedding table's row norms against token frequency and use.

A thin wrapper over :func:`normscope.tokens.run_tokens` (its result's ``to_dict()`` is the ``--json``
output) and :func:`normscope.tokens.plot_tokens` (``--fig``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope.cli import app
from normscope.cli._outputs import compare_models, figure_outputs, write_outputs
from normscope.cli._options import Device, JsonOut, Models, Seed, TableOut
from normscope.encoders import DEFAULT_MODEL


def _ci(ci) -> str:
    return "—" if not ci or ci[0] is None else f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"


def _table(res):
    from rich.table import Table

    table = Table(title=f"input embedding table — {res.model} ({res.n_rows:,} rows x {res.dim})",
                  caption=f"95% CIs: bootstrap over tokens ({res.n_boot} resamples); frequency: wordfreq Zipf")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_column("95% CI")
    for k in ("word", "subword", "special", "unused"):
        med = res.norm_median.get(k)
        table.add_row(f"{k} rows: n, median norm", f"{res.counts.get(k, 0):,}, {'—' if med is None else f'{med:.3f}'}", "")
    for g, label in (("word", "words"), ("subword", "## pieces (string as a word)"), ("used", "all used tokens")):
        r = res.frequency.get(g)
        if r is not None:
            table.add_row(f"Spearman ρ(norm, Zipf), {label} (n = {r['n']:,})", f"{r['spearman']:+.3f}", _ci(r["spearman_ci"]))
    c = res.unused_vs_used
    if c is not None:
        table.add_row(f"median norm, unused − used (n = {c['n_unused']:,} / {c['n_used']:,})", f"{c['difference']:+.3f}",
                      _ci(c["ci"]))
        table.add_row("median norm, unused / used", f"{c['ratio']:.3f}", _ci(c["ratio_ci"]).replace("+", ""))
    if res.init_norm is not None:
        table.add_row("row norm at initialisation (sd·√d)", f"{res.init_norm:.3f}", "")
    return table


@app.command()
def tokens(
    model: Models = None,
    seed: Seed = 0,
    n_boot: Annotated[int, typer.Option("--n-boot", min=0, help="Bootstrap resamples over tokens (CIs).")] = 2000,
    n_perm: Annotated[int, typer.Option("--n-perm", min=0, help="Permutations of the p-values.")] = 2000,
    device: Device = "cpu",
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: Annotated[Optional[Path], typer.Option("--fig", help="Figure: norm vs frequency, and norms per kind.")] = None,
) -> None:
    """Row norms of the model's input embedding table: vs token frequency, and never-used vs used rows."""
    from normscope.cli._console import make_console
    from normscope.tokens import plot_tokens, run_tokens
    from normscope.validate import check_paths

    models = list(dict.fromkeys(model or [DEFAULT_MODEL]))
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)])

    def call(m):
        return run_tokens(model=m, device=device, n_boot=n_boot, n_perm=n_perm, seed=seed)

    console = make_console(stderr=True)
    if len(models) > 1:
        compare_models(models, call, _table, title=f"input embedding tables: {len(models)} models side by side",
                       console=console, out=out, json_path=json_path, fig=fig, plot=plot_tokens)
        return
    res = call(models[0])
    make_console().print(_table(res))
    for note in res.notes:
        console.print(f"note: {note}", markup=False)
    write_outputs(res, console, out=out, json_path=json_path, fig=fig, plot=plot_tokens)
