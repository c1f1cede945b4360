"""Report stage ``setup``: the model, its fingerprint, the run's settings, and the datasets: those the
selected stages read are obtained here (found, else fetched unless offline), all are listed."""

from __future__ import annotations

import dataclasses
import platform

import torch

from normscope import __version__
from normscope.data import data_path, dataset_names, dataset_status, datasets_here
from normscope.errors import DataError
from normscope.report.stage import Command, KeyNumber, Section, Stage, Table
from normscope.requests import Request
from normscope.values import Record

__all__ = ["SetupStage", "SetupRequest", "SetupResult"]

SECTION = "setup"


@dataclasses.dataclass(frozen=True)
class SetupResult(Record):
    """The set-up section's result: the model and its fingerprint, the run's settings, the datasets, the versions."""

    model: str | None = None
    fingerprint: dict | None = None
    dim: int | None = None
    max_seq_length: int | None = None
    device: str | None = None
    seed: int | None = None
    preset: str | None = None
    sizes: dict | None = None
    data_dir: str | None = None
    datasets: dict | None = None
    normscope_version: str | None = None
    torch_version: str | None = None
    torch_threads: int | None = None
    python: str | None = None
    platform: str | None = None


@dataclasses.dataclass(frozen=True)
class SetupRequest(Request):
    """What the set-up section states: the run's settings and which datasets its stages read."""

    device: str
    seed: int
    preset: str
    sizes: tuple[tuple[str, int | str | None], ...]
    needed: tuple[tuple[str, tuple[str, ...]], ...]
    datasets_here: tuple[str, ...]


def _datasets(needed: dict[str, tuple[str, ...]]) -> tuple[dict, list[list]]:
    """Obtain the datasets this run needs (found, else fetched unless offline), then describe every
    registry dataset: ``{name: status}`` (:func:`normscope.data.dataset_status`) and table rows."""
    failed = {}
    for name in needed:
        try:
            data_path(name)  # one stderr line per fetch; a failure is shown here and again by its stage
        except DataError as exc:
            failed[name] = str(exc)
    status, rows = {}, []
    for name in dataset_names():
        st = dataset_status(name)
        status[name] = {k: st[k] for k in ("present", "where", "path", "origin", "licence", "verified_by")}
        status[name]["needed_by"] = list(needed.get(name, ()))
        if st["present"]:
            fetched = st["fetched"] or {}
            how = (f"fetched from {fetched['urls'][-1] if fetched.get('urls') else '?'} on "
                   f"{str(fetched.get('fetched_utc') or '?')[:10]}" if fetched else f"{st['where']}: {st['path']}")
        else:
            how = failed.get(name) or f"not here: `{st['fetch_command']}`"
        rows.append([name, ", ".join(needed.get(name, ())) or "-", "yes" if st["present"] else "no", how,
                     st["verified_by"]])
    return status, rows


class SetupStage(Stage[SetupRequest]):
    """The model and the run's settings; the datasets the selected stages read, obtained up front."""

    name = "setup"
    sections = {SECTION: "Model and set-up"}

    def request(self, config) -> SetupRequest:
        need = config.needed_datasets()
        return SetupRequest(device=config.device, seed=config.seed, preset=config.preset,
                            sizes=tuple(config.sizes.to_dict().items()),
                            needed=tuple((k, tuple(v)) for k, v in need.items()),
                            datasets_here=tuple(datasets_here()))  # the table lists them: re-run when it changes

    def commands(self, request: SetupRequest) -> list[Command]:
        return []  # no single command gives these numbers: see the notes

    def run(self, ctx, request: SetupRequest) -> dict[str, Section]:
        enc = ctx.encoder()
        fp = enc.fingerprint
        data = ctx.data_dir()
        datasets, rows = _datasets(dict(request.needed))
        absent = [name for name, d in datasets.items() if d["needed_by"] and not d["present"]]
        if absent:  # said now, before "setup: ok": the stages that read them will be unavailable
            n_needed = sum(bool(d["needed_by"]) for d in datasets.values())
            ctx.console.print(f"setup: {len(absent)} of {n_needed} needed datasets not here ({', '.join(absent)}): "
                              "the stages that read them will say so; the final summary lists them again",
                              markup=False, highlight=False)
        result = SetupResult(
            model=fp.name, fingerprint=fp.to_dict(), dim=int(enc.dim), max_seq_length=getattr(enc, "max_seq_length", None),
            device=request.device, seed=request.seed, preset=request.preset, sizes=dict(request.sizes),
            data_dir=str(data) if data is not None else None, datasets=datasets, normscope_version=__version__,
            torch_version=torch.__version__, torch_threads=torch.get_num_threads(), python=platform.python_version(),
            platform=platform.platform())
        present = sum(d["present"] for d in datasets.values())
        key_numbers = [
            KeyNumber("model", "model", fp.name),
            KeyNumber("fingerprint.backend", "backend", fp.backend),
            KeyNumber("fingerprint.revision", "revision", fp.revision),
            KeyNumber("fingerprint.pooling", "pooling", fp.pooling),
            KeyNumber("fingerprint.dropped_modules", "modules dropped to get raw vectors",
                      ", ".join(fp.dropped_modules) or "none"),
            KeyNumber("dim", "embedding dimension d", int(enc.dim)),
            KeyNumber("max_seq_length", "max sequence length", result.max_seq_length, "tokens"),
            KeyNumber("device,torch_threads", "device / torch threads", f"{request.device} / {result.torch_threads}"),
            KeyNumber("seed", "seed", request.seed),
            KeyNumber("preset", "size preset", request.preset),
            KeyNumber("datasets", "datasets present", f"{present} of {len(datasets)}"),
        ]
        return {SECTION: Section(
            SECTION, result=result.to_json(), key_numbers=key_numbers,
            tables=[Table("Datasets (origins, licences and checks: docs/data.md)",
                          ["dataset", "read by", "here", "where from / how to get it", "verified by"], rows)],
            notes=["The model fingerprint is the `fingerprint` of every command's --json; "
                   "the dataset table is `normscope data list`."])}

    def headline(self, section: Section) -> str:
        r = section.result or {}
        fp = r["fingerprint"]
        return (f"{r['model']} (d = {r['dim']}, {fp['pooling']} pooling, dropped: "
                f"{', '.join(fp['dropped_modules']) or 'none'}); {r['preset']} sizes")
