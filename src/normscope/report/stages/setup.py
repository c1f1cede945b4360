"""Report stage ``setup``: the model, its fingerprint, the run's settings and the data present."""

from __future__ import annotations

import platform
from pathlib import Path

from normscope.report.context import StageContext

__all__ = ["stage_setup"]


def stage_setup(ctx: StageContext) -> dict:
    import torch

    from normscope import __version__

    enc = ctx.encoder()
    fp = enc.fingerprint
    data = ctx.data_dir()
    datasets = {}
    if data is not None:
        for name in ("scifact", "wordnet-3.0", "concreteness_brysbaert2014", "chaosnli", "subtlex_us", "simlex999"):
            datasets[name] = (Path(data) / name).is_dir()
    result = {
        "model": fp.name,
        "fingerprint": fp.to_dict(),
        "dim": int(enc.dim),
        "max_seq_length": getattr(enc, "max_seq_length", None),
        "device": ctx.config.device,
        "seed": ctx.config.seed,
        "preset": ctx.config.preset,
        "sizes": ctx.sizes.to_dict(),
        "data_dir": str(data) if data is not None else None,
        "datasets_present": datasets,
        "normscope_version": __version__,
        "torch_version": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    dropped = ", ".join(fp.dropped_modules) or "none"
    key_numbers = [
        ["model", fp.name, ""],
        ["backend", fp.backend, ""],
        ["revision", fp.revision, ""],
        ["pooling", fp.pooling, ""],
        ["modules dropped to get raw vectors", dropped, ""],
        ["embedding dimension d", int(enc.dim), ""],
        ["max sequence length", result["max_seq_length"], "tokens"],
        ["device / torch threads", f"{ctx.config.device} / {result['torch_threads']}", ""],
        ["seed", ctx.config.seed, ""],
        ["size preset", ctx.config.preset, ""],
        ["shared data", str(data) if data is not None else "not found (../shared/data or $NORMSCOPE_DATA)", ""],
    ]
    if datasets:
        key_numbers.append(["datasets present", ", ".join(k for k, v in datasets.items() if v) or "none", ""])
    return {
        "setup": {
            "status": "ok",
            "reason": None,
            "command": f"normscope report --model {fp.name} --seed {ctx.config.seed}",
            "result": result,
            "key_numbers": key_numbers,
            "tables": [],
            "figures": [],
            "notes": [],
        }
    }
