"""``normscope correlate``: what does the raw norm track? Norm vs a semantic covariate.

A thin wrapper over :func:`normscope.signals.run_correlate` (the summary dict is the ``--json``
output) and :func:`normscope.signals.plot_signal` (``--fig``); this module parses the options,
prints the rich table and writes the files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope._io import atomic_path, write_json
from normscope.validate import check_output_path
from normscope.cli import app
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import InputError
from normscope.signals.study import SIGNALS, plot_signal, read_covariate_file, read_items, run_correlate


def _fmt(v, nd=3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{nd}f}"


def _fmt_p(p) -> str:
    return "—" if p is None else (f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}")


@app.command()
def correlate(
    signal: Annotated[str, typer.Option("--signal", "-s", help="specificity, frequency, concreteness or uncertainty.")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model name or path.")] = DEFAULT_MODEL,
    items_path: Annotated[Optional[Path], typer.Option("--items", help="Text file, one item per line (default: the signal's dataset).")] = None,
    n: Annotated[Optional[int], typer.Option("--n", help="Number of default items (specificity 2000, frequency 5000, concreteness 5000 (0 = all), uncertainty all).")] = None,
    control: Annotated[str, typer.Option("--control", help="Comma-separated controls: frequency,length,words or covariate-file columns; '' for none.")] = "frequency,length",
    covariate_file: Annotated[Optional[Path], typer.Option("--covariate-file", help="CSV with columns item,value (+ extra control columns).")] = None,
    measure: Annotated[str, typer.Option("--measure", help="Specificity measure: min_depth, max_depth, n_hyponyms, n_senses.")] = "min_depth",
    dataset: Annotated[str, typer.Option("--dataset", help="Uncertainty dataset: chaosnli or cifar10h.")] = "chaosnli",
    images: Annotated[Optional[Path], typer.Option("--images", help="CIFAR-10 test images (.npy, test_batch, or a folder of 10000 PNG/JPEG named by position) for --dataset cifar10h.")] = None,
    subtlex: Annotated[Optional[Path], typer.Option("--subtlex", help="SUBTLEX-US file: use its Zipf values for frequency.")] = None,
    wordnet: Annotated[Optional[Path], typer.Option("--wordnet", help="WordNet directory or .tgz (default: $NORMSCOPE_WORDNET, NLTK data, shared data).")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    n_boot: Annotated[int, typer.Option("--n-boot", min=0)] = 2000,
    n_perm: Annotated[int, typer.Option("--n-perm", min=0)] = 2000,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
    device: Annotated[str, typer.Option("--device")] = "cpu",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the summary as JSON.")] = None,
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Per-item parquet (item, norm, covariate, controls).")] = None,
    fig: Annotated[Optional[Path], typer.Option("--fig", help="Figure: norm vs covariate with binned means.")] = None,
) -> None:
    """Correlate raw embedding norms with a semantic signal (rho, bootstrap CI, permutation p, partial rho)."""
    from rich.table import Table

    if signal not in SIGNALS:
        raise InputError(f"unknown signal {signal!r}; choose from {', '.join(SIGNALS)}")
    for p in (json_path, out, fig):
        if p is not None:
            check_output_path(p)
    items = read_items(items_path) if items_path is not None else None
    cov = read_covariate_file(covariate_file, signal) if covariate_file is not None else None
    summary, per_item = run_correlate(
        signal, model=model, items=items, n=n, controls=control.split(","), seed=seed, progress=True,
        covariates=cov, measure=measure, dataset=dataset, subtlex=subtlex, wordnet=wordnet, images=images,
        n_boot=n_boot, n_perm=n_perm, batch_size=batch_size, device=device,
    )
    from rich.console import Console

    console = Console(stderr=True)

    table = Table(title=f"norm vs {signal} — {summary['model']}", caption=summary["dataset"])
    for col in ("statistic", "value", f"{int(summary['ci_level'] * 100)}% CI", "p", "n"):
        table.add_column(col)
    lo, hi = summary["spearman_ci"]
    table.add_row("Spearman ρ", _fmt(summary["spearman"]), f"[{_fmt(lo)}, {_fmt(hi)}]", _fmt_p(summary["p_value"]), str(summary["n"]))
    lo, hi = summary["pearson_ci"]
    table.add_row("Pearson r", _fmt(summary["pearson"]), f"[{_fmt(lo)}, {_fmt(hi)}]", _fmt_p(summary["pearson_p"]), str(summary["n"]))
    part = summary["partial_spearman"]
    if part:
        table.add_row(f"partial ρ | {', '.join(part['controls'])}", _fmt(part["rho"]),
                      f"[{_fmt(part['ci'][0])}, {_fmt(part['ci'][1])}]", _fmt_p(part["p_value"]), str(part["n"]))
    elif summary.get("partial_reason"):
        table.add_row("partial ρ", "—", "not computed: " + ", ".join(summary.get("controls_dropped") or [])
                      + " constant", "", "")
    for m, r in (summary.get("measures") or {}).items():
        table.add_row(f"  ρ with {m}", _fmt(r["spearman"]), f"[{_fmt(r['spearman_ci'][0])}, {_fmt(r['spearman_ci'][1])}]", "", str(r["n"]))
    Console().print(table)
    if summary["n_missing"]:
        console.print(f"[yellow]{summary['n_missing']} of {summary['n_items']} items have no {signal} value "
                      f"(excluded), e.g. {summary['missing_examples'][:5]}[/]")
    for note in summary["notes"]:
        console.print(f"note: {note}")
    if out is not None:
        with atomic_path(out) as tmp:
            per_item.to_parquet(tmp, index=False)
    if json_path is not None:
        write_json(summary, json_path)
    if fig is not None:
        plot_signal(per_item, summary, fig)
    written = [str(p) for p in (out, json_path, fig) if p is not None]
    if written:
        console.print("wrote " + ", ".join(written), soft_wrap=True)
