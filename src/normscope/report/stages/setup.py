"""Report stage ``setup``: the model, its fingerprint, the run's settings, and the datasets: those the
selected stages read are obtained here (found, else fetched unless offline), all are listed."""

from __future__ import annotations

import platform

from normscope.report.context import StageContext

__all__ = ["stage_setup", "needed_datasets"]


#: Datasets each stage reads (the probes fall back to SciFact pairs without WordNet).
STAGE_DATA = {"probes": ("wordnet",), "transformer": ("wordnet",), "similarity": ("simlex-999",),
              "retrieval": ("scifact",)}
SIGNAL_DATA = {"specificity": "wordnet", "concreteness": "concreteness", "uncertainty": "chaosnli"}


def needed_datasets(config) -> dict[str, list[str]]:
    """``{dataset: [stages of this run that read it]}`` for the selected stages and signals."""
    need: dict[str, list[str]] = {}
    for stage in config.only:
        for name in STAGE_DATA.get(stage, ()):
            need.setdefault(name, []).append(stage)
    if "signals" in config.only:
        for sig in config.signals:
            if sig in SIGNAL_DATA:
                need.setdefault(SIGNAL_DATA[sig], []).append(f"signals ({sig})")
    return need


def _datasets(config) -> tuple[dict, list[list]]:
    """Obtain the datasets this run needs (found, else fetched unless offline), then describe every
    registry dataset: ``{name: status}`` (:func:`normscope.data.dataset_status`) and table rows."""
    from normscope.data import data_path, dataset_names, dataset_status
    from normscope.errors import DataError

    need = needed_datasets(config)
    failed = {}
    for name in need:
        try:
            data_path(name)  # one stderr line per fetch; a failure is shown here and again by its stage
        except DataError as exc:
            failed[name] = str(exc)
    status, rows = {}, []
    for name in dataset_names():
        st = dataset_status(name)
        status[name] = {k: st[k] for k in ("present", "where", "path", "origin", "licence", "verified_by")}
        status[name]["needed_by"] = need.get(name, [])
        if st["present"]:
            fetched = st["fetched"] or {}
            how = (f"fetched from {fetched.get('urls', ['?'])[-1]} on {fetched.get('fetched_utc', '?')[:10]}"
                   if fetched else f"{st['where']}: {st['path']}")
        else:
            how = failed.get(name) or f"not here: `{st['fetch_command']}`"
        rows.append([name, ", ".join(need.get(name, [])) or "-", "yes" if st["present"] else "no", how,
                     st["verified_by"]])
    return status, rows


def stage_setup(ctx: StageContext) -> dict:
    import torch

    from normscope import __version__

    enc = ctx.encoder()
    fp = enc.fingerprint
    data = ctx.data_dir()
    datasets, rows = _datasets(ctx.config)
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
                        "columns": ["dataset", "read by", "here", "where from / how to get it", "verified by"],
                        "rows": rows}],
            "figures": [],
            "notes": ["The model fingerprint is the `fingerprint` of every command's --json; "
                      "the dataset table is `normscope data list`."],
        }
    }
