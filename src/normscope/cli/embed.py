"""``normscope embed``: raw embeddings of a file of items, with a norm summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from normscope._io import check_output_path, write_json
from normscope.cli import app
from normscope.encoders import DEFAULT_MODEL, load_encoder
from normscope.errors import InputError


@app.command()
def embed(
    input: Annotated[Optional[Path], typer.Argument(help="Text file (one item per line), .jsonl, .csv or BEIR corpus directory.")] = None,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output parquet (id, text, norm, vector).")] = Path("embeddings.parquet"),
    model: Annotated[str, typer.Option("--model", "-m", help="Model name or path.")] = DEFAULT_MODEL,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 64,
    device: Annotated[str, typer.Option("--device")] = "cpu",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the norm summary as JSON.")] = None,
    wordfreq_top: Annotated[int, typer.Option("--wordfreq-top", help="Embed the top-N English words of wordfreq instead of INPUT.")] = 0,
    trust_remote_code: Annotated[bool, typer.Option("--trust-remote-code")] = False,
) -> None:
    """Embed items with a real model and write raw vectors and norms."""
    from normscope.datasets import wordfreq_words

    console = Console(stderr=True)
    check_output_path(out)
    if json_path is not None:
        check_output_path(json_path)
    if wordfreq_top > 0:
        texts = wordfreq_words(wordfreq_top)
        ids = [str(i) for i in range(len(texts))]
    elif input is None:
        raise InputError("give INPUT or --wordfreq-top N")
    else:
        lines = Path(input).read_text(encoding="utf-8").splitlines()
        texts = lines
        ids = [str(i) for i in range(len(texts))]
    encoder = load_encoder(model, device=device, trust_remote_code=trust_remote_code)
    table = encoder.embed_table(texts, ids, batch_size=batch_size, progress=True)
    table.to_parquet(out)
    summary = table.summary()
    if json_path is not None:
        write_json(summary, json_path)
    console.print(
        f"[bold]{summary['n']}[/] items, dim {summary['dim']}, model {summary['model']}: "
        f"norm mean {summary['norm_mean']:.3f}, sd {summary['norm_std']:.3f}, "
        f"min {summary['norm_min']:.3f}, max {summary['norm_max']:.3f}"
    )
    typer.echo(str(out))
