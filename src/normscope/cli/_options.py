"""Options shared by the commands, declared once (same flag, help and default everywhere)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope.encoders import DEFAULT_MODEL

__all__ = ["Model", "Device", "Seed", "JsonOut", "TableOut", "JunkError", "TrustRemoteCode", "BatchSize", "Engine", "Address", "Workers", "DEFAULT_MODEL"]

Model = Annotated[
    str,
    typer.Option("--model", "-m", help="Model: the bundled default, a sentence-transformers dir or hub id, hf:<name>, "
                 "open_clip:<arch>/<pretrained>, or .npy/.parquet vectors."),
]
Device = Annotated[str, typer.Option("--device", help="Torch device (cpu, cuda, cuda:N, mps).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of every random choice (subsets, batches, resamples).")]
JsonOut = Annotated[Optional[Path], typer.Option("--json", help="Write the summary as (strict) JSON to this path.")]
TableOut = Annotated[Optional[Path], typer.Option("-o", "--out", help="Write the per-item table (parquet) to this path.")]
JunkError = Annotated[
    bool,
    typer.Option("--junk-error", help="Stop with an error on junk items (empty after normalisation, or only special "
                 "tokens) instead of leaving them out and listing them."),
]
TrustRemoteCode = Annotated[
    bool, typer.Option("--trust-remote-code", help="Let the model repository run its own code (off by default).")
]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Texts per model call and per cache shard.")]
Engine = Annotated[
    str,
    typer.Option("--engine", help="Where to embed: local (this process) or ray (a Ray cluster through Ray Data; "
                 "pip install 'normscope[ray]'; see docs/scale.md)."),
]
Address = Annotated[
    Optional[str],
    typer.Option("--address", help="Ray cluster to use with --engine ray (auto, host:port, ray://host:10001); "
                 "default: start a local one."),
]
Workers = Annotated[
    Optional[int],
    typer.Option("--workers", min=1, help="Encoder actors with --engine ray (default: one per GPU with --device cuda, "
                 "else one per CPU)."),
]
