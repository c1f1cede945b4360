"""``normscope correlate``: what does the raw norm track? Norm vs a semantic covariate.

A thin wrapper over :func:`normscope.signals.run_correlate` (its result's ``to_dict()`` is the
``--json`` output) and :func:`normscope.signals.plot_signal` (``--fig``); this module parses the
options, prints the rich table and writes the files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope.cli import app
from normscope.cli._console import make_console, styled
from normscope.cli._outputs import compare_models, figure_outputs, write_outputs
from normscope.cli._options import BatchSize, Device, JsonOut, JunkError, Models, Precision, Seed, TableOut
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import InputError
from normscope.validate import check_paths


def _fmt(v, nd=3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{nd}f}"


def _fmt_p(p, n_perm: int = 0) -> str:
    """Permutation p for the table: ``< 1/(n_perm+1)`` at the floor (:func:`normscope.stats.p_text`)."""
    from normscope.stats import p_text

    return "—" if p is None else p_text(p, n_perm).removeprefix("p = ").removeprefix("p ")


def _ci(ci) -> str:
    return f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "—"


def _table(res):
    from rich.table import Table

    table = Table(title=f"norm vs {res.signal} — {res.model}", caption=res.dataset)
    for col in ("statistic", "value", f"{int(res.ci_level * 100)}% CI", "p", "n"):
        table.add_column(col)
    pooled = " (pooled over sources)" if res.strata else ""
    table.add_row(f"Spearman ρ{pooled}", _fmt(res.spearman), _ci(res.spearman_ci), _fmt_p(res.p_value, res.n_perm), str(res.n))
    table.add_row(f"Pearson r{pooled}", _fmt(res.pearson), _ci(res.pearson_ci), _fmt_p(res.pearson_p, res.n_perm), str(res.n))
    part = res.partial_spearman
    if part:
        within = f" (CI, p within {res.by})" if res.strata else ""
        table.add_row(f"partial ρ | {', '.join(part['controls'])}{within}", _fmt(part["rho"]), _ci(part["ci"]),
                      _fmt_p(part["p_value"], res.n_perm), str(part["n"]))
    elif res.partial_reason:
        table.add_row("partial ρ", "—", "not computed: " + ", ".join(res.controls_dropped) + " constant", "", "")
    if res.norm_length:
        nl = res.norm_length
        unit = "tokens seen" if nl["length"].startswith("tokens") else "words"
        table.add_row(f"ρ(norm, length in {unit})", _fmt(nl["spearman"]), _ci(nl["spearman_ci"]), "", str(nl["n"]))
    elif res.items is not None and "tokens" in res.items:
        table.add_row("ρ(norm, length)", "—", "not defined: the length is constant over the items", "", "")
    for row in res.strata or []:
        p = row["partial_spearman"]
        table.add_row(f"  {res.by} {row['name']}: Spearman ρ", _fmt(row["spearman"]), _ci(row["spearman_ci"]),
                      _fmt_p(row["p_value"], res.n_perm), str(row["n"]))
        if p:
            table.add_row(f"  {res.by} {row['name']}: partial ρ | {', '.join(p['controls'])}", _fmt(p["rho"]),
                          _ci(p["ci"]), _fmt_p(p["p_value"], res.n_perm), str(p["n"]))
        table.add_row(f"  {res.by} {row['name']}: ρ(norm, length); mean length, covariate",
                      _fmt(row["norm_length_spearman"]), f"{_fmt(row['mean_length'], 1)}, {_fmt(row['mean_covariate'])}",
                      "", "")
    for m, r in (res.measures or {}).items():
        table.add_row(f"  ρ with {m}", _fmt(r["spearman"]), _ci(r["spearman_ci"]), "", str(r["n"]))
    return table


@app.command()
def correlate(
    signal: Annotated[str, typer.Option("--signal", "-s", help="specificity, frequency, concreteness or uncertainty.")],
    model: Models = None,
    items_path: Annotated[Optional[Path], typer.Option("--items", help="Items: .txt (one per line), .jsonl or .csv (text, id) (default: the signal's dataset).")] = None,
    n: Annotated[Optional[int], typer.Option("--n", help="Number of default items (specificity 2000, frequency 5000, concreteness 5000 (0 = all), uncertainty all).")] = None,
    control: Annotated[str, typer.Option("--control", help="Comma-separated controls: frequency,length,words or covariate-file columns; '' for none.")] = "frequency,length",
    by: Annotated[Optional[str], typer.Option("--by", help="Column giving each item's source (of the .csv/.jsonl items file or the covariate file): report per source, control the source when pooled.")] = None,
    covariate_file: Annotated[Optional[Path], typer.Option("--covariate-file", help="CSV with columns item,value (+ extra control or --by columns).")] = None,
    measure: Annotated[str, typer.Option("--measure", help="Specificity measure: min_depth, max_depth, n_hyponyms, n_senses.")] = "min_depth",
    dataset: Annotated[str, typer.Option("--dataset", help="Uncertainty dataset: chaosnli or cifar10h.")] = "chaosnli",
    images: Annotated[Optional[Path], typer.Option("--images", help="CIFAR-10 test images (.npy, test_batch, or a folder of 10000 PNG/JPEG named by position) for --dataset cifar10h.")] = None,
    subtlex: Annotated[Optional[Path], typer.Option("--subtlex", help="SUBTLEX-US file: use its Zipf values for frequency.")] = None,
    wordnet: Annotated[Optional[Path], typer.Option("--wordnet", help="WordNet directory or .tgz (default: $NORMSCOPE_WORDNET, NLTK data, shared data).")] = None,
    seed: Seed = 0,
    n_boot: Annotated[int, typer.Option("--n-boot", min=0, help="Bootstrap resamples of every confidence interval.")] = 2000,
    n_perm: Annotated[int, typer.Option("--n-perm", min=0, help="Permutations of every p-value (0: no p-value).")] = 2000,
    batch_size: BatchSize = 64,
    device: Device = "cpu",
    precision: Precision = "fp32",
    json_path: JsonOut = None,
    out: TableOut = None,
    fig: Annotated[Optional[Path], typer.Option("--fig", help="Figure: norm vs covariate with binned means.")] = None,
    junk_error: JunkError = False,
    keep_duplicates: Annotated[bool, typer.Option("--keep-duplicates", help="Keep items whose text repeats another "
                                                  "item's (default: count each text once and say how many were left out).")] = False,
) -> None:
    """Correlate raw embedding norms with a semantic signal (rho, bootstrap CI, permutation p, partial rho)."""
    from normscope.inputs import read_items
    from normscope.signals import plot_signal, run_correlate
    from normscope.signals.items import read_covariate_file, read_item_column
    from normscope.signals.labels import SIGNALS

    if signal not in SIGNALS:
        raise InputError(f"unknown signal {signal!r}; choose from {', '.join(SIGNALS)}")
    models = list(dict.fromkeys(model or [DEFAULT_MODEL]))
    check_paths([("-o/--out", out, "table"), ("--json", json_path, "json"), *figure_outputs(fig, models)],
                inputs=[("--items", items_path), ("--covariate-file", covariate_file), ("--images", images),
                        ("--subtlex", subtlex), ("--wordnet", wordnet)])
    ids = items = strata = None
    if items_path is not None:
        ids, items = read_items(items_path)
    cov = read_covariate_file(covariate_file, signal) if covariate_file is not None else None
    if by is not None and items_path is not None and not (cov is not None and by in cov.columns):
        strata = read_item_column(items_path, by, len(items))
    def call(m):
        return run_correlate(
            signal, model=m, items=items, ids=ids, n=n, controls=control.split(","), by=by, strata=strata,
            seed=seed, progress=True, covariates=cov, measure=measure, dataset=dataset, subtlex=subtlex,
            wordnet=wordnet, images=images, n_boot=n_boot, n_perm=n_perm, batch_size=batch_size, device=device, precision=precision,
            junk="error" if junk_error else "drop", keep_duplicates=keep_duplicates,
        )

    console = make_console(stderr=True)
    if len(models) > 1:
        compare_models(models, call, _table, title=f"norm vs {signal}: {len(models)} models side by side",
                       console=console, out=out, json_path=json_path, fig=fig, plot=plot_signal)
        return
    res = call(models[0])
    make_console().print(_table(res))
    if res.n_missing:
        console.print(styled(f"{res.n_missing} of {res.n_items} items have no {signal} value "
                             f"(excluded), e.g. {res.missing_examples[:5]}", "yellow"))
    if res.junk.get("count"):
        console.print(styled(f"{res.junk['count']} junk item(s) left out: ids {', '.join(res.junk['ids'][:5])}", "yellow"))
    if res.n_truncated:
        console.print(f"{res.n_truncated} item(s) were cut at the model's maximum sequence length; the length "
                      "control counts the tokens the model saw")
    for note in res.notes:
        console.print(f"note: {note}")
    write_outputs(res, console, out=out, json_path=json_path, fig=fig, plot=plot_signal)
