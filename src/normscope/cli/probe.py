"""``normscope probe``: heat and radial drift of each item, predicted vs observed norm (THEORY section 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from normscope.cli import app
from normscope.encoders import DEFAULT_MODEL
from normscope.errors import InputError


def load_probe_items(spec: str) -> tuple[list[str], list[str]]:
    """Probe items from ``wordfreq:N`` (top-N English words of wordfreq) or a file read by
    :func:`normscope.inputs.read_items`.

    Returns
    -------
    (ids, texts) : two lists of str

    Raises
    ------
    InputError
        Malformed ``wordfreq:N`` or an unreadable items file.
    """
    if spec.startswith("wordfreq:"):
        n = spec.split(":", 1)[1]
        if not n.isdigit() or int(n) < 1:
            raise InputError(f"wordfreq:N needs a positive integer N, got {spec!r}")
        from normscope.datasets import wordfreq_words

        texts = wordfreq_words(int(n))
        return [str(i) for i in range(len(texts))], texts
    from normscope.inputs import read_items

    return read_items(spec)


def _fmt(c: dict | None) -> tuple[str, str]:
    if not c or c.get("pearson") is None:
        return "n/a", "n/a"
    ci = c["ci"]
    p = f"{c['pearson']:+.2f} [{ci['pearson'][0]:+.2f}, {ci['pearson'][1]:+.2f}]"
    s = f"{c['spearman']:+.2f} [{ci['spearman'][0]:+.2f}, {ci['spearman'][1]:+.2f}]"
    return p, s


@app.command()
def probe(
    items: Annotated[str, typer.Argument(help="Items file (.txt one per line, .jsonl, .csv, BEIR dir) or wordfreq:N.")],
    model: Annotated[str, typer.Option("--model", "-m", help="Model name or path.")] = DEFAULT_MODEL,
    pairs: Annotated[str, typer.Option("--pairs", help="Pair source: wordnet[:pos], scifact[:split], beir:DIR[:split], or a 2-column .tsv/.csv.")] = "wordnet",
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", help="Probe batch size B (default: training B if known, capped at 64).")] = None,
    batches: Annotated[int, typer.Option("--batches", help="Number of probe batches K (>= 2).")] = 16,
    lr: Annotated[Optional[float], typer.Option("--lr", help="Learning rate eta (default: known training value, else fitted by E11).")] = None,
    weight_decay: Annotated[Optional[float], typer.Option("--weight-decay", help="Weight decay lambda (default: known training value).")] = None,
    tau: Annotated[Optional[float], typer.Option("--tau", help="InfoNCE temperature (default: known training value, else 0.05).")] = None,
    decay_mask: Annotated[str, typer.Option("--decay-mask", help="matrices (ndim>=2, no biases/LayerNorm) or all.")] = "matrices",
    fd_dtype: Annotated[str, typer.Option("--fd-dtype", help="Precision of the D2 finite differences: auto (the model's, with a float64 spot check), float64 or float32.")] = "auto",
    chunk_size: Annotated[int, typer.Option("--chunk-size", min=1, help="Probe items per JVP chunk.")] = 128,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    device: Annotated[str, typer.Option("--device")] = "cpu",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the summary as JSON.")] = None,
    out: Annotated[Optional[Path], typer.Option("-o", "--out", help="Per-item parquet table (must end in .parquet).")] = None,
    fig: Annotated[Optional[Path], typer.Option("--fig", help="PNG: predicted vs observed norm (a _heat_drift.png beside it).")] = None,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code")] = False,
) -> None:
    """Estimate heat and radial drift per item by virtual SGD steps and compare R_eq with the norm."""
    from normscope._io import atomic_path, write_json
    from normscope.validate import check_output_path
    from normscope.encoders import load_encoder, resolve_backend
    from normscope.pairs import load_pairs
    from normscope.probes import plot_heat_drift, plot_predicted_vs_observed, run_probe

    console = Console(stderr=True)
    from normscope.validate import check_parquet_out

    for p in (json_path, fig):
        if p is not None:
            check_output_path(p)
    if out is not None:
        check_parquet_out(out)
    if batches < 2:
        raise InputError(f"--batches must be >= 2 (standard errors and split-half reliability need two batches), got {batches}")
    if batch_size is not None and batch_size < 2:
        raise InputError(f"--batch-size must be >= 2 (in-batch negatives), got {batch_size}")
    if decay_mask not in ("matrices", "all"):
        raise InputError(f"--decay-mask must be 'matrices' or 'all', got {decay_mask!r}")
    if resolve_backend(model)[0] == "precomputed":
        raise InputError(f"--model {model}: precomputed vectors cannot be probed (the probe differentiates the model's weights); give a model")
    encoder = load_encoder(model, device=device, trust_remote_code=trust_remote_code)
    ids, texts = load_probe_items(items)
    pair_source = load_pairs(pairs)
    res = run_probe(
        encoder, texts, pair_source, batch_size=batch_size, batches=batches, tau=tau, lr=lr,
        weight_decay=weight_decay, decay_mask=decay_mask, seed=seed, progress=True, ids=ids,
        chunk_size=chunk_size, fd_dtype=fd_dtype,
    )
    s = res.summary
    if out is not None:
        with atomic_path(out) as tmp:
            res.items.to_parquet(tmp, index=False)
    if json_path is not None:
        write_json(s, json_path)
    if fig is not None:
        plot_predicted_vs_observed(res, fig)
        plot_heat_drift(res, fig.with_name(fig.stem + "_heat_drift.png"))

    t = Table(title=f"probe: {s['model']} | {s['n_items']} items | K={s['batches']} B={s['batch_size']} tau={s['tau']} eta={s['lr']:.3g}")
    t.add_column("comparison")
    t.add_column("Pearson [95% CI]")
    t.add_column("Spearman [95% CI]")
    t.add_column("n", justify="right")
    for key, label in (
        ("corr_norm_heat", "R vs heat Sigma^2"),
        ("corr_norm_drift", "R vs drift D~"),
        ("corr_req_norm", "R_eq(c_fit) vs R"),
        ("corr_norm_displacement", "R vs E||a||^2 (R-free)"),
        ("corr_norm_heat_rate", "R vs heat rate S/R^4"),
        ("corr_norm_d2", "R vs D2"),
    ):
        c = s.get(key) or {}
        t.add_row(label, *_fmt(c), str(c["n"]) if c.get("n") is not None else "n/a")
    console.print(t)
    console.print(
        f"heat cancelled by D2 (median): {s['heat_cancelled_by_d2']:.2f} | q<0: {s['n_negative_q']} | "
        f"lambda_rad<0: {s['n_negative_lambda_rad']} | c_fit: {s['c_fit']:.3g} | truncated: {s['n_truncated']}"
    )
    for c in s["caveats"]:
        console.print(f"[yellow]caveat:[/] {c}")
