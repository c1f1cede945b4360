"""Stage orchestration of ``normscope report``: settings, resumable cache, progress, assembly.

Every stage is a function ``stage(ctx) -> dict`` (see :mod:`normscope.report.stages`) that calls the
public entry point of one normscope stage -- the same function its CLI wraps -- and returns a
*stage record*::

    {"stage": "norms", "key": <sha256 of settings>, "settings": {...}, "status": "ok",
     "reason": None, "seconds": 12.3,
     "sections": {"norm_distribution": {"status", "reason", "command", "result", "derived",
                                        "key_numbers", "tables", "figures", "notes"}}}

``result`` is, verbatim, the dict that the equivalent CLI command writes with ``--json`` (its
``command`` field spells that command), so the report's numbers are the individual commands'
numbers. A record with status ``ok`` is written atomically to ``OUT/stages/<stage>.json`` once its
figures are on disk; a re-run with the same settings (same key) and all figures present skips the
stage. A stage that cannot run (missing data, missing optional module) has status ``unavailable``
and says why; a stage that raises has status ``failed`` with the one-line error. Neither is cached.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from normscope._io import write_json
from normscope.validate import check_output_path
from normscope.errors import InputError
from normscope.report.stages import STAGE_FUNCS
from normscope.report.config import STAGE_SECTIONS, STAGES, ReportConfig
from normscope.report.context import StageContext, StageUnavailable
from normscope.report.html import render_report
from normscope.report.text import what_this_says

__all__ = ["ReportResult", "run_report", "assemble_summary", "stage_settings", "settings_key", "load_cached",
           "STAGE_VERSION"]

#: Bump when a stage's computation or record layout changes: invalidates cached records.
STAGE_VERSION = 1


# ---------------------------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------------------------


def settings_key(settings: dict) -> str:
    """sha256 hex of the canonical JSON form of a stage's settings."""
    blob = json.dumps(settings, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def stage_settings(stage: str, config: ReportConfig) -> dict:
    """Everything a stage's output depends on (the cache key is its hash)."""
    s = config.sizes
    assert s is not None
    base: dict[str, Any] = {"stage": stage, "version": STAGE_VERSION, "model": config.model, "seed": config.seed}
    data = None
    if stage in ("signals", "retrieval", "probes", "lab", "setup"):
        from normscope.datasets import shared_data_dir

        d = config.data if config.data is not None else shared_data_dir()
        data = str(Path(d).resolve()) if d is not None else None
        base["data"] = data
    if stage == "norms":
        base["words"] = s.words
        if config.items is not None:
            from normscope.table import file_sha256

            base["items"] = {"path": str(config.items), "sha256": file_sha256(config.items)}
    elif stage == "probes":
        # probe_code: bump when the probe's computation changes (2: per-item alignment, batch-aware CIs)
        base.update(items=s.probe_items, batches=s.probe_batches, batch_size=s.probe_batch_size, n_boot=s.n_boot,
                    probe_code=2)
    elif stage == "lab":
        base.update(steps=s.lab_steps, snapshots=s.lab_snapshots, probe_batches=s.lab_probe_batches)
    elif stage == "signals":
        base.update(items=s.signal_items, n_boot=s.n_boot, n_perm=s.n_perm, signals=list(config.signals))
    elif stage == "retrieval":
        base.update(docs=s.retrieval_docs, queries=s.retrieval_queries, n_boot=s.n_boot)
    elif stage == "setup":
        base["device"] = config.device
    return base


def _stage_path(out: Path, stage: str) -> Path:
    return out / "stages" / f"{stage}.json"


def load_cached(out: Path, stage: str, key: str) -> dict | None:
    """The cached record of ``stage`` if its key matches and all its figures exist, else None."""
    p = _stage_path(out, stage)
    if not p.is_file():
        return None
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if rec.get("key") != key or rec.get("status") != "ok":
        return None
    for sec in rec.get("sections", {}).values():
        for fig in sec.get("figures", []):
            if not (out / fig["file"]).is_file():
                return None
    return rec


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class ReportResult:
    """What :func:`run_report` produced.

    Attributes
    ----------
    index : Path
        ``OUT/index.html``.
    summary_path : Path
        ``OUT/summary.json``.
    summary : dict
        The content of summary.json (section key -> numbers).
    records : dict
        Stage name -> stage record.
    seconds : float
        Wall time of the run.
    """

    index: Path
    summary_path: Path
    summary: dict
    records: dict
    seconds: float

    @property
    def failed(self) -> list[str]:
        return [k for k, r in self.records.items() if r.get("status") == "failed"]


@contextlib.contextmanager
def _data_env(data: Path | None) -> Iterator[None]:
    """Point ``normscope.datasets.shared_data_dir`` at ``data`` for the duration of the run."""
    if data is None:
        yield
        return
    old = os.environ.get("NORMSCOPE_DATA")
    os.environ["NORMSCOPE_DATA"] = str(Path(data).resolve())
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("NORMSCOPE_DATA", None)
        else:
            os.environ["NORMSCOPE_DATA"] = old


def _not_run_record(stage: str, reason: str) -> dict:
    return {
        "stage": stage,
        "status": "not_run",
        "reason": reason,
        "sections": {sec: {"status": "not_run", "reason": reason} for sec in STAGE_SECTIONS[stage]},
    }


def _error_record(stage: str, status: str, reason: str, key: str, settings: dict, seconds: float) -> dict:
    return {
        "stage": stage,
        "key": key,
        "settings": settings,
        "status": status,
        "reason": reason,
        "seconds": seconds,
        "sections": {sec: {"status": status, "reason": reason} for sec in STAGE_SECTIONS[stage]},
    }


def run_report(config: ReportConfig, *, console=None, progress: bool = True, encoder=None) -> ReportResult:
    """Run the selected stages (resuming from ``OUT/stages``) and write the report.

    Parameters
    ----------
    config : ReportConfig
    console : rich.console.Console, optional
        Where progress goes (default: stderr).
    progress : bool, keyword-only
        Show the rich progress bar of the stages.
    encoder : Encoder, optional, keyword-only
        An already loaded encoder for ``config.model`` (saves loading it again, e.g. in tests).

    Returns
    -------
    ReportResult

    Raises
    ------
    InputError
        Output directory's parent missing, or bad settings. Stage errors do not raise: they are
        recorded as ``failed`` on the page.
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    t0 = time.perf_counter()
    console = console or Console(stderr=True)
    out = config.out
    if out.exists() and not out.is_dir():
        raise InputError(f"--out exists and is not a directory: {out}")
    check_output_path(out / "index.html") if out.is_dir() else check_output_path(out)
    out.mkdir(exist_ok=True)
    (out / "stages").mkdir(exist_ok=True)

    ctx = StageContext(config, console)
    ctx._encoder = encoder
    records: dict[str, dict] = {}
    with _data_env(config.data):
        bar = Progress(
            TextColumn("[bold]report[/]"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} stages"),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            disable=not progress,
            transient=False,
        )
        with bar:
            selected = [st for st in STAGES if st in config.only]
            task = bar.add_task("", total=len(selected))
            for stage in STAGES:
                if stage not in config.only:
                    records[stage] = _not_run_record(stage, f"not selected (--only {','.join(config.only)})")
                    continue
                bar.update(task, description=stage)
                settings = stage_settings(stage, config)
                key = settings_key(settings)
                cached = None if config.force else load_cached(out, stage, key)
                if cached is not None:
                    cached["cached"] = True
                    records[stage] = cached
                    console.print(f"{stage}: cached ({_stage_path(out, stage)})")
                    bar.advance(task)
                    continue
                func: Callable[[StageContext], dict] = STAGE_FUNCS[stage]
                ts = time.perf_counter()
                try:
                    sections = func(ctx)
                except StageUnavailable as exc:
                    rec = _error_record(stage, "unavailable", str(exc), key, settings, time.perf_counter() - ts)
                except Exception as exc:  # recorded on the page, never hides the rest of the report
                    msg = f"{type(exc).__name__}: {exc}".splitlines()[0]
                    rec = _error_record(stage, "failed", msg, key, settings, time.perf_counter() - ts)
                    rec["traceback"] = traceback.format_exc()
                    console.print(f"[red]{stage} failed[/]: {msg}")
                else:
                    statuses = {s.get("status", "ok") for s in sections.values()}
                    rec = {
                        "stage": stage,
                        "key": key,
                        "settings": settings,
                        "status": "ok" if "ok" in statuses else sorted(statuses)[0],
                        "reason": None,
                        "seconds": round(time.perf_counter() - ts, 2),
                        "sections": sections,
                    }
                    if rec["status"] != "ok":
                        rec["reason"] = "; ".join(str(s.get("reason")) for s in sections.values() if s.get("reason"))
                write_json(rec, _stage_path(out, stage))
                rec["cached"] = False
                records[stage] = rec
                console.print(f"{stage}: {rec['status']} in {rec.get('seconds', 0):.1f} s")
                bar.advance(task)
            bar.update(task, description="done")

    summary = assemble_summary(config, records)
    summary["what_this_says"] = what_this_says(summary)
    summary["report"]["seconds"] = round(time.perf_counter() - t0, 2)
    summary_path = write_json(summary, out / "summary.json")
    index = render_report(summary, records, out / "index.html")
    _readable(out, records)
    return ReportResult(index=index, summary_path=summary_path, summary=summary, records=records,
                        seconds=time.perf_counter() - t0)


def _readable(out: Path, records: dict[str, dict]) -> None:
    """Give the page, summary.json, stage records and figures the usual file mode (0666 & ~umask).

    Atomic writes go through ``tempfile.mkstemp``, which creates files with mode 0600.
    """
    umask = os.umask(0)
    os.umask(umask)
    files = [out / "index.html", out / "summary.json"] + sorted((out / "stages").glob("*.json"))
    for rec in records.values():
        for sec in (rec.get("sections") or {}).values():
            files += [out / f["file"] for f in sec.get("figures") or []]
    for f in files:
        with contextlib.suppress(OSError):
            if f.is_file():
                os.chmod(f, 0o666 & ~umask)


def assemble_summary(config: ReportConfig, records: dict[str, dict]) -> dict:
    """summary.json: section key -> ``{status, reason, command, result, derived, key_numbers}``."""
    from normscope import __version__

    summary: dict[str, Any] = {
        "report": {
            "normscope_version": __version__,
            "model": config.model,
            "preset": config.preset,
            "sizes": config.sizes.to_dict() if config.sizes else None,
            "seed": config.seed,
            "device": config.device,
            "stages_run": list(config.only),
            "stage_seconds": {k: r.get("seconds") for k, r in records.items()},
            "stage_cached": {k: bool(r.get("cached")) for k, r in records.items()},
            "python": platform.python_version(),
        }
    }
    for stage in STAGES:
        rec = records.get(stage) or _not_run_record(stage, "not run")
        for sec in STAGE_SECTIONS[stage]:
            s = rec["sections"].get(sec) or {"status": rec.get("status"), "reason": rec.get("reason")}
            entry = {k: s.get(k) for k in ("status", "reason", "command", "sizes", "result", "derived", "key_numbers")
                     if s.get(k) is not None}
            entry.setdefault("status", "ok")
            summary[sec] = entry
    return summary
