"""Options shared by the commands, declared once (same flag, help and default everywhere)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from normscope.encoders import DEFAULT_MODEL

__all__ = ["Model", "Models", "Device", "Seed", "JsonOut", "TableOut", "FigOut", "JunkError", "TrustRemoteCode",
           "BatchSize", "NBoot", "Precision", "Runtime", "Engine", "Address", "Workers", "DEFAULT_MODEL", "split_list", "models_of"]


def split_list(values: list[str] | None) -> list[str] | None:
    """A list option's values with comma lists split: ``["a,b", "c"]`` -> ``["a", "b", "c"]`` (the callback of
    every repeatable option: ``--scorer a,b`` is ``--scorer a --scorer b``). Empty parts are dropped."""
    if values is None:
        return None
    return [part.strip() for v in values for part in str(v).split(",") if part.strip()]


def models_of(values: list[str] | None) -> list[str]:
    """The models of a ``--model`` list option, in order, each once (default: the bundled model)."""
    return list(dict.fromkeys(values or [DEFAULT_MODEL]))


Model = Annotated[
    str,
    typer.Option("--model", "-m", help="Model: the bundled default, a sentence-transformers dir or hub id, hf:<name>, "
                 "hf-clip:<name> (CLIP), open_clip:<arch>/<pretrained>, glove:6B-50d, or .npy/.parquet vectors."),
]
Models = Annotated[
    Optional[list[str]],
    typer.Option("--model", "-m", metavar="MODEL", callback=split_list,
                 help="Model (the bundled default, a sentence-transformers dir or hub id, hf:<name>, hf-clip:<name>, "
                 "open_clip:<arch>/<pretrained>, glove:6B-50d); several (repeated, or a comma list) run each and show "
                 "them side by side."),
]
Device = Annotated[str, typer.Option("--device", help="Torch device (cpu, cuda, cuda:N, mps).")]
Seed = Annotated[int, typer.Option("--seed", help="Seed of every random choice (subsets, batches, resamples).")]
JsonOut = Annotated[Optional[Path], typer.Option("--json", help="Write the summary as (strict) JSON to this path.")]
TableOut = Annotated[Optional[Path], typer.Option("-o", "--out", help="Write the per-item table (parquet) to this path.")]
FigOut = Annotated[Optional[Path], typer.Option("--fig", help="Write the figure (PNG) to this path; a command with "
                                                "several figures writes the others beside it (<stem>_<name>.png).")]
NBoot = Annotated[int, typer.Option("--n-boot", min=0, help="Bootstrap resamples of every confidence interval.")]
JunkError = Annotated[
    bool,
    typer.Option("--junk-error", help="Stop with an error on junk items (empty after normalisation, or only special "
                 "tokens) instead of leaving them out and listing them."),
]
TrustRemoteCode = Annotated[
    bool, typer.Option("--trust-remote-code", help="Let the model repository run its own code (off by default).")
]
BatchSize = Annotated[int, typer.Option("--batch-size", min=1, help="Texts per model call and per cache shard.")]

#: ``--precision fp32|bf16`` (default fp32). Wiring it into a command that embeds is one line each:
#: a parameter ``precision: Precision = "fp32"`` and ``load_encoder(..., precision=precision)`` (or
#: ``embed_texts(..., precision=precision)`` / ``embed_input(..., precision=precision)``); the
#: fingerprint, cache key, ``precision`` and ``norm_rel_error_vs_fp32`` then follow (docs/embed.md).
Precision = Annotated[
    str,
    typer.Option("--precision", metavar="[fp32|bf16]",
                 help="Precision of the model's forward pass: fp32, or bf16 (matrix products in bfloat16 under "
                      "torch.autocast, about 2x faster on CPUs with AVX-512 BF16/AMX; vectors stay float32, the "
                      "norm error vs fp32 is measured on a sample and written to the JSON)."),
]
#: ``--runtime torch|openvino`` (default torch); named apart from ``embed --backend`` (the model loader) and
#: ``--engine`` (where a corpus is embedded). Wiring: ``load_encoder(..., runtime=runtime)`` or
#: ``Embedding(..., runtime=runtime)``.
Runtime = Annotated[
    str,
    typer.Option("--runtime", metavar="[torch|openvino]",
                 help="Inference runtime of the model's forward passes: torch, or openvino (sentence-transformers "
                      "models on the CPU; pip install 'normscope[openvino]'; the model is converted once and cached; "
                      "fp32 vectors equal torch's to ~1e-7 relative in norm; falls back to torch with a warning when "
                      "openvino is missing). Probes and the lab always run on torch."),
]
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
