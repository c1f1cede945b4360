"""Report stage ``setup``: the model, its fingerprint, the run's settings and the datasets present."""

from __future__ import annotations

import platform

from normscope.report.context import StageContext

__all__ = ["stage_setup"]


def _datasets() -> tuple[dict, list[list]]:
    """``{name: status}`` of every registry dataset (:func:`normscope.data.dataset_status`) and table rows."""
    from normscope.data import dataset_names, dataset_status, offline

    status, rows = {}, []
    for name in dataset_names():
        st = dataset_status(name)
        status[name] = {k: st[k] for k in ("present", "where", "path", "origin", "licence", "verified_by")}
        if st["present"]:
            fetched = st["fetched"] or {}
            how = (f"fetched from {fetched.get('urls', ['?'])[-1]} on {fetched.get('fetched_utc', '?')[:10]}"
                   if fetched else st["where"])
            rows.append([name, "yes", how, st["verified_by"]])
        else:
            rows.append([name, "no", f"`{st['fetch_command']}`" + ("" if offline() else " (or fetched when a stage needs it)"),
                         st["verified_by"]])
    return status, rows


def stage_setup(ctx: StageContext) -> dict:
    import torch

    from normscope import __version__

    enc = ctx.encoder()
    fp = enc.fingerprint
    data = ctx.data_dir()
    datasets, rows = _datasets()
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
        "datasets": datasets,
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
        ["datasets present", f"{sum(d['present'] for d in datasets.values())} of {len(datasets)}", ""],
    ]
    return {
        "setup": {
            "status": "ok",
            "reason": None,
            "command": None,  # no single command gives these numbers: see the notes
            "result": result,
            "key_numbers": key_numbers,
            "tables": [{"title": "Datasets (origins, licences and checks: docs/data.md)",
                        "columns": ["dataset", "here", "where from / how to get it", "verified by"], "rows": rows}],
            "figures": [],
            "notes": ["The model fingerprint is the `fingerprint` of every command's --json; "
                      "the dataset table is `normscope data list`."],
        }
    }
