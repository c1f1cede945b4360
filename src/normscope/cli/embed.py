"""``normscope embed``: raw embeddings of a file of items, with a norm summary.

A thin wrapper around :func:`normscope.engine.embed_input` (local engine: :func:`normscope.encoders.embed.embed_input`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from normscope._format import fixed
from normscope.cli._app import app
from normscope.cli._console import make_console, styled
from normscope.cli._options import (Address, BatchSize, Device, Engine, JunkError, Model, Precision, Runtime, TrustRemoteCode,
                                    Workers)
from normscope.datasets import wordfreq_spec
from normscope.encoders import DEFAULT_MODEL
from normscope.encoders.summary import EmbedSummary


@app.command()
def embed(
    out: Annotated[
        Path,
        typer.Option("-o", "--out", help="Output parquet (id, text, norm, vector); required, must end in .parquet "
                     "(with --engine ray: a directory of parquet shards)."),
    ],
    input: Annotated[
        str,
        typer.Argument(
            help="Text file (one item per line), .jsonl[.gz] (text, id/_id, BEIR title), .csv (text, id), "
            "a BEIR corpus directory, a folder of PNG/JPEG images (image models: hf-clip:...), .npy/.parquet "
            "of precomputed vectors, or wordfreq:N (the N most frequent English words of wordfreq).",
            show_default=False,
            metavar="INPUT",
        ),
    ],
    model: Model = DEFAULT_MODEL,
    backend: Annotated[
        str, typer.Option("--backend", help="auto | sentence-transformers | huggingface | open_clip | hf-clip | precomputed | static.")
    ] = "auto",
    pooling: Annotated[Optional[str], typer.Option("--pooling", help="mean | cls (huggingface backend).")] = None,
    batch_size: BatchSize = 64,
    device: Device = "cpu",
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Write the norm summary as JSON.")] = None,
    trust_remote_code: TrustRemoteCode = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the embedding cache.")] = False,
    junk_error: JunkError = False,
    precision: Precision = "fp32",
    runtime: Runtime = "auto",
    engine: Engine = "local",
    address: Address = None,
    workers: Workers = None,
) -> None:
    """Embed items with a real model and write raw vectors and norms (-o OUT.parquet is required)."""
    import normscope.extensions  # noqa: F401  registers --engine ray (light: ray is imported when used)
    from normscope.engine import embed_input  # imports torch: the CLI's start-up stays light

    console = make_console(stderr=True)
    top = wordfreq_spec(input)
    summary, _ = embed_input(
        None if top else Path(input),
        out=out,
        json_path=json_path,
        model=model,
        backend=backend,
        pooling=pooling,
        batch_size=batch_size,
        device=device,
        wordfreq_top=top or 0,
        cache=not no_cache,
        progress=True,
        trust_remote_code=trust_remote_code,
        junk="error" if junk_error else "drop",
        precision=precision,
        runtime=runtime,
        engine=engine,
        address=address,
        workers=workers,
    )
    s = EmbedSummary.from_json(summary)
    fp = s.fingerprint
    tbl = Table(title="raw embedding norms ||z||", title_justify="left")
    tbl.add_column("quantity")
    tbl.add_column("value", justify="right")
    rows = [
        ("items n", str(s.n)),
        ("dimension d", str(s.dim)),
        ("model", str(s.model)),
        ("backend, pooling", f"{fp['backend']}, {fp['pooling']}"),
        ("revision", str(fp["revision"])),
        ("precision", str(fp["precision"] if "precision" in fp else "fp32")),
        ("runtime", str(fp.get("runtime", "torch"))),
        ("dropped modules", ", ".join(fp["dropped_modules"]) or "none"),
        ("norm mean", fixed(s.norm_mean)),
        ("norm sd", fixed(s.norm_std)),
        ("norm min", fixed(s.norm_min)),
        ("norm max", fixed(s.norm_max)),
    ]
    err = s.norm_rel_error_vs_fp32
    if err:
        rows.append((f"norm rel. error vs fp32 (median / max, {err['n_sample']} items)",
                     f"{err['median']:.1e} / {err['max']:.1e}"))
    if s.norm_quantiles:
        qs = s.norm_quantiles
        rows.append((f"norm quantiles 5/50/95% (sketch, rel. error {s.norm_quantile_rel_error:g})",
                     " / ".join(fixed(qs[q]) for q in ("0.05", "0.5", "0.95"))))
    if s.n_truncated is not None:
        rows.append(("truncated items (cut at max length)", str(s.n_truncated)))
    junk = s.junk or {"count": 0}
    if junk["count"]:
        shown = ", ".join(junk["ids"][:5]) + (f" (and {junk['count'] - 5} more)" if junk["count"] > 5 else "")
        rows.append(("junk items left out", f"{junk['count']}: ids {shown}"))
    for k, v in rows:
        tbl.add_row(k, v)
    stdout = make_console()
    stdout.print(tbl)
    for line in extreme_norms(out):
        stdout.print(line, markup=False, highlight=False, soft_wrap=True)
    for warning in s.warnings or []:
        console.print(styled(f"warning: {warning}", "yellow"))
    console.print(f"wrote {out}" + (f" and {json_path}" if json_path else ""))


#: Items listed at each end of the norm distribution after ``embed``.
N_EXTREME = 5


def extreme_norms(out: Path, n: int = N_EXTREME) -> list[str]:
    """Lines naming the ``n`` lowest- and ``n`` highest-norm items of the written table (``id``, ``text``, ``norm``
    columns; a file or a shard folder). Ties are broken by id, so the lines do not depend on the input order."""
    import numpy as np
    import pyarrow.dataset as pads

    ds = pads.dataset(str(out), format="parquet")
    cols = [c for c in ("id", "text", "norm") if c in ds.schema.names]
    if "norm" not in cols or "id" not in cols:
        return []
    t = ds.to_table(columns=cols)
    ids = [str(x) for x in t.column("id").to_pylist()]
    texts = [str(x) for x in t.column("text").to_pylist()] if "text" in cols else ids
    norms = np.asarray(t.column("norm").to_numpy(zero_copy_only=False), dtype=np.float64)
    if len(norms) == 0:
        return []
    order = np.lexsort((np.array(ids, dtype=object).astype(str), norms))  # by norm, then id
    k = min(n, len(order))

    def item(i: int) -> str:
        text = " ".join(texts[i].split())
        text = text if len(text) <= 40 else text[:39] + "\u2026"
        return f"{text} ({norms[i]:.3f})" if text == ids[i] else f"{ids[i]} {text!r} ({norms[i]:.3f})"

    return [f"lowest norms: {', '.join(item(i) for i in order[:k])}",
            f"highest norms: {', '.join(item(i) for i in order[::-1][:k])}"]
