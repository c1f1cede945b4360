"""``normscope embed``: raw embeddings of a file of items, with a norm summary.

A thin wrapper around :func:`normscope.engine.embed_input` (local engine: :func:`normscope.encoders.embed.embed_input`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from normscope.cli import app
from normscope.cli._console import make_console, styled
from normscope.cli._options import Address, Engine, JunkError, Precision, Workers
from normscope.encoders import DEFAULT_MODEL


@app.command()
def embed(
    out: Annotated[
        Path,
        typer.Option("-o", "--out", help="Output parquet (id, text, norm, vector); required, must end in .parquet "
                     "(with --engine ray: a directory of parquet shards)."),
    ],
    input: Annotated[
        Optional[Path],
        typer.Argument(
            help="Text file (one item per line), .jsonl[.gz] (text, id/_id, BEIR title), .csv (text, id), "
            "a BEIR corpus directory, a folder of PNG/JPEG images (image models: hf-clip:...), or .npy/.parquet "
            "of precomputed vectors. Required unless --wordfreq-top is given.",
            show_default=False,
            metavar="INPUT",
        ),
    ] = None,
    model: Annotated[
        str,
        typer.Option(
            "--model", "-m", help="Model: bundled default, ST dir/hub id, hf:<name>, hf-clip:<name>, open_clip:<arch>/<pretrained>, glove:6B-50d."
        ),
    ] = DEFAULT_MODEL,
    backend: Annotated[
        str, typer.Option("--backend", help="auto | sentence-transformers | huggingface | open_clip | hf-clip | precomputed | static.")
    ] = "auto",
    pooling: Annotated[Optional[str], typer.Option("--pooling", help="mean | cls (huggingface backend).")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Texts per model call and cache shard.")] = 64,
    device: Annotated[str, typer.Option("--device", help="Torch device.")] = "cpu",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the norm summary as JSON.")] = None,
    wordfreq_top: Annotated[
        int, typer.Option("--wordfreq-top", min=0, help="Embed the top-N English words of wordfreq instead of INPUT.")
    ] = 0,
    trust_remote_code: Annotated[
        bool, typer.Option("--trust-remote-code", help="Let the model repository run its own code.")
    ] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the embedding cache.")] = False,
    junk_error: JunkError = False,
    precision: Precision = "fp32",
    engine: Engine = "local",
    address: Address = None,
    workers: Workers = None,
) -> None:
    """Embed items with a real model and write raw vectors and norms.

    Give INPUT, or --wordfreq-top N instead of it (not both); -o OUT.parquet is required.
    """
    from normscope.engine import embed_input

    console = make_console(stderr=True)
    summary, _ = embed_input(
        input,
        out=out,
        json_path=json_path,
        model=model,
        backend=backend,
        pooling=pooling,
        batch_size=batch_size,
        device=device,
        wordfreq_top=wordfreq_top,
        cache=not no_cache,
        progress=True,
        trust_remote_code=trust_remote_code,
        junk="error" if junk_error else "drop",
        precision=precision,
        engine=engine,
        address=address,
        workers=workers,
    )
    fp = summary["fingerprint"]
    tbl = Table(title="raw embedding norms ||z||", title_justify="left")
    tbl.add_column("quantity")
    tbl.add_column("value", justify="right")
    rows = [
        ("items n", str(summary["n"])),
        ("dimension d", str(summary["dim"])),
        ("model", str(summary["model"])),
        ("backend, pooling", f"{fp['backend']}, {fp['pooling']}"),
        ("revision", str(fp["revision"])),
        ("precision", str(fp.get("precision", "fp32"))),
        ("dropped modules", ", ".join(fp["dropped_modules"]) or "none"),
        ("norm mean", f"{summary['norm_mean']:.4f}"),
        ("norm sd", f"{summary['norm_std']:.4f}"),
        ("norm min", f"{summary['norm_min']:.4f}"),
        ("norm max", f"{summary['norm_max']:.4f}"),
    ]
    err = summary.get("norm_rel_error_vs_fp32")
    if err:
        rows.append((f"norm rel. error vs fp32 (median / max, {err['n_sample']} items)",
                     f"{err['median']:.1e} / {err['max']:.1e}"))
    if summary.get("norm_quantiles"):
        qs = summary["norm_quantiles"]
        rows.append((f"norm quantiles 5/50/95% (sketch, rel. error {summary['norm_quantile_rel_error']:g})",
                     f"{qs['0.05']:.4f} / {qs['0.5']:.4f} / {qs['0.95']:.4f}"))
    if summary.get("n_truncated") is not None:
        rows.append(("truncated items (cut at max length)", str(summary["n_truncated"])))
    junk = summary.get("junk") or {}
    if junk.get("count"):
        shown = ", ".join(junk["ids"][:5]) + (f" (and {junk['count'] - 5} more)" if junk["count"] > 5 else "")
        rows.append(("junk items left out", f"{junk['count']}: ids {shown}"))
    for k, v in rows:
        tbl.add_row(k, v)
    make_console().print(tbl)
    for warning in summary.get("warnings") or []:
        console.print(styled(f"warning: {warning}", "yellow"))
    console.print(f"wrote {out}" + (f" and {json_path}" if json_path else ""))
