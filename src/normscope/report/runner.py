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
stage. The key hashes the stage's settings and, for every stage that runs the model, the model's
fingerprint (weights hash or hub revision, pooling, backend, precision) -- not its name -- so
changed weights recompute. A cached record that is not a well-formed record of that stage (``null``,
a list, missing sections) is recomputed, with one line saying so. A stage that cannot run (missing
data, missing optional module) has status ``unavailable`` and says why; a stage that raises has
status ``failed`` with the one-line error. Neither is cached: their record goes to
``OUT/stages/<stage>.failed.json`` and never replaces a finished ``<stage>.json``. Paths and user
files (``--items``) are checked before any stage runs (:func:`check_report_inputs`). A write failure
(read-only place, full disk) stops the run with one :class:`~normscope.errors.OutputError` line.

The log (:mod:`normscope.report.runlog`) has a line when each stage starts and ends, a heartbeat
while it runs, and no library warnings: those are kept in the stage record (``warnings``).
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

from normscope._io import output_set, write_json
from normscope.data import datasets_here
from normscope.validate import check_output_path
from normscope.errors import InputError, OutputError
from normscope.report.stages import STAGE_FUNCS
from normscope.report.config import MODEL_STAGES, SECTIONS, STAGE_SECTIONS, STAGES, ReportConfig, sizes_used
from normscope.report.context import StageContext, StageUnavailable
from normscope.report.html import render_report
from normscope.report.missing import availability
from normscope.report.scorecard import gather_claims
from normscope.report.runlog import dedupe, quiet_libraries, stage_log
from normscope.report.text import fmt_duration
from normscope.report.text import what_this_says

__all__ = ["ReportResult", "run_report", "assemble_summary", "stage_settings", "settings_key", "load_cached",
           "check_record", "check_report_inputs", "STAGE_VERSION"]

#: Bump when a stage's computation or record layout changes: invalidates cached records.
STAGE_VERSION = 4


# ---------------------------------------------------------------------------------------------
# cache
# ---------------------------------------------------------------------------------------------


def settings_key(settings: dict) -> str:
    """sha256 hex of the canonical JSON form of a stage's settings."""
    blob = json.dumps(settings, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()


def stage_settings(stage: str, config: ReportConfig, fingerprint=None) -> dict:
    """Everything a stage's output depends on (the cache key is its hash).

    Parameters
    ----------
    stage : str
    config : ReportConfig
    fingerprint : ModelFingerprint, optional
        The loaded model's fingerprint. Stages that run the model (:data:`MODEL_STAGES`) are keyed
        by it (weights hash or revision, pooling, backend, precision), not by the model's name;
        without it (tests, tools) the name and precision are used.

    Returns
    -------
    dict
        JSON-able settings; ``model`` is the fingerprint's dict for model stages, absent for the
        training lab (it trains its own encoder).
    """
    s = config.sizes
    assert s is not None
    base: dict[str, Any] = {"stage": stage, "version": STAGE_VERSION, "seed": config.seed}
    if stage in MODEL_STAGES:
        base["model"] = (fingerprint.to_dict() if fingerprint is not None
                         else {"name": config.model, "precision": config.precision})
    if stage in ("signals", "similarity", "retrieval", "probes", "lab", "transformer", "setup"):
        from normscope.datasets import shared_data_dir

        d = config.data if config.data is not None else shared_data_dir()
        base["data"] = str(Path(d).resolve()) if d is not None else None
    if stage == "norms":
        base["words"] = s.words
        if config.items is not None:
            from normscope.table import file_sha256

            base["items"] = {"path": str(config.items), "sha256": file_sha256(config.items)}
    elif stage == "probes":
        # probe_code: bump when the probe's computation changes (2: per-item alignment, batch-aware CIs;
        # 3: second-order term by a nested JVP)
        base.update(items=s.probe_items, batches=s.probe_batches, batch_size=s.probe_batch_size, n_boot=s.n_boot,
                    probe_code=3)
    elif stage == "lab":
        base.update(steps=s.lab_steps, snapshots=s.lab_snapshots, probe_batches=s.lab_probe_batches)
    elif stage == "transformer":
        base.update(design=s.transformer_design, device=config.device)
    elif stage == "signals":
        base.update(items=s.signal_items, n_boot=s.n_boot, n_perm=s.n_perm, signals=list(config.signals))
    elif stage == "similarity":
        base["n_boot"] = s.n_boot
    elif stage == "tokens":
        base.update(n_boot=s.n_boot, n_perm=s.n_perm)
    elif stage == "retrieval":
        base.update(docs=s.retrieval_docs, queries=s.retrieval_queries, n_boot=s.n_boot)
    elif stage == "setup":
        base["device"] = config.device
        base["datasets_here"] = datasets_here()  # the set-up table lists them: re-run when it changes
    return base


def _stage_path(out: Path, stage: str) -> Path:
    return out / "stages" / f"{stage}.json"


def _failed_path(out: Path, stage: str) -> Path:
    """Where a stage's last failed or unavailable record goes (never over a finished record)."""
    return out / "stages" / f"{stage}.failed.json"


def check_record(rec: Any, stage: str) -> str | None:
    """Why ``rec`` is not a well-formed record of ``stage`` (None when it is).

    A record must be a JSON object with a string ``key``, a string ``status`` and a ``sections``
    object holding exactly the stage's sections (:data:`STAGE_SECTIONS`), each an object whose
    ``figures``, ``tables``, ``key_numbers`` and ``notes`` (when present) are lists, figures being
    objects with a plain file name and tables objects with ``rows`` lists.
    """
    if not isinstance(rec, dict):
        return f"not a JSON object but {type(rec).__name__ if rec is not None else 'null'}"
    if not isinstance(rec.get("key"), str) or not isinstance(rec.get("status"), str):
        return "no key or status"
    secs = rec.get("sections")
    if not isinstance(secs, dict) or set(secs) != set(STAGE_SECTIONS[stage]):
        return f"sections are not {', '.join(STAGE_SECTIONS[stage])}"
    for name, sec in secs.items():
        if not isinstance(sec, dict):
            return f"section {name} is not an object"
        for field in ("figures", "tables", "key_numbers", "notes"):
            if field in sec and not isinstance(sec[field], list):
                return f"section {name}: {field} is not a list"
        for fig in sec.get("figures") or []:
            if not isinstance(fig, dict) or not isinstance(fig.get("file"), str) or Path(fig["file"]).name != fig["file"]:
                return f"section {name}: a figure entry is malformed"
        for tbl in sec.get("tables") or []:
            if not isinstance(tbl, dict) or not isinstance(tbl.get("rows", []), list):
                return f"section {name}: a table is malformed"
        if "result" in sec and not isinstance(sec["result"], (dict, type(None))):
            return f"section {name}: result is not an object"
    return None


def load_cached(out: Path, stage: str, key: str, console=None) -> dict | None:
    """The cached record of ``stage`` if it is well formed, its key matches and all its figures exist, else None.

    A record that is unreadable or not a record of this stage (:func:`check_record`) is reported
    on ``console`` (one line) and recomputed.
    """
    p = _stage_path(out, stage)
    if not p.is_file():
        return None
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        why: str | None = f"unreadable ({type(exc).__name__})"
    else:
        why = check_record(rec, stage)
    if why is not None:
        if console is not None:
            console.print(f"{stage}: the cached record {p} is damaged ({why}); recomputing")
        return None
    if rec.get("key") != key or rec.get("status") != "ok":
        return None
    for sec in rec["sections"].values():
        for fig in sec.get("figures") or []:
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


def run_report(config: ReportConfig, *, console=None, progress: bool = True, encoder=None,
               json_path: str | Path | None = None, heartbeat: float | None = 60.0) -> ReportResult:
    """Run the selected stages (resuming from ``OUT/stages``) and write the report.

    Parameters
    ----------
    config : ReportConfig
    console : rich.console.Console, optional
        Where progress goes (default: stderr).
    progress : bool, keyword-only
        Show the rich progress bar of the stages.
    encoder : Encoder, optional, keyword-only
        An already loaded encoder for ``config.model`` (saves loading it again, e.g. in tests); it
        is used at ``config.precision`` (:meth:`~normscope.encoders.base.Encoder.at_precision`).
    json_path : str or Path, optional, keyword-only
        Also write summary.json's content here; written as one set with ``OUT/summary.json`` and
        ``OUT/index.html`` (:func:`normscope._io.output_set`: all three or none).
    heartbeat : float or None, keyword-only
        Seconds between ``<stage>: still running`` log lines (None: none).

    Returns
    -------
    ReportResult

    Raises
    ------
    InputError
        Output directory's parent missing, or bad settings. Stage errors do not raise: they are
        recorded as ``failed`` on the page.
    OutputError
        An output place is read-only (checked first), or the disk filled up while writing.
    ModelError
        The model cannot be loaded (checked before any stage runs).
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    t0 = time.perf_counter()
    console = console or Console(stderr=True, markup=False)
    out = config.out
    check_report_inputs(config, json_path)
    out.mkdir(exist_ok=True)
    (out / "stages").mkdir(exist_ok=True)
    check_output_path(out / "stages" / "x.json", "-o/--out")

    ctx = StageContext(config, console)
    ctx._encoder = encoder.at_precision(config.precision) if encoder is not None else None
    selected = [st for st in STAGES if st in config.only]
    # the model is loaded before any stage: a bad --model is one line now, and its fingerprint keys the stages
    fingerprint = ctx.encoder().fingerprint if any(st in MODEL_STAGES for st in selected) else None
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
            task = bar.add_task("", total=len(selected))
            for stage in STAGES:
                if stage not in config.only:
                    records[stage] = _not_run_record(stage, f"not selected (--only {','.join(config.only)})")
                    continue
                bar.update(task, description=stage)
                records[stage] = _run_stage(stage, ctx, fingerprint, heartbeat)
                bar.advance(task)
            bar.update(task, description="done")

    summary = assemble_summary(config, records)
    summary["what_this_says"] = what_this_says(summary)
    summary["report"]["seconds"] = round(time.perf_counter() - t0, 2)
    summary_path, index = out / "summary.json", out / "index.html"
    with output_set(summary_path, index, json_path, options={json_path: "--json"}) as tmp:
        write_json(summary, tmp[summary_path])
        render_report(summary, records, tmp[index])
        if json_path is not None:
            write_json(summary, tmp[Path(json_path)])
    console.print(f"report: written in {fmt_duration(time.perf_counter() - t0)}")
    return ReportResult(index=index, summary_path=summary_path, summary=summary, records=records,
                        seconds=time.perf_counter() - t0)


def check_report_inputs(config: ReportConfig, json_path: str | Path | None = None, *, folder: str = "index.html") -> None:
    """Check a report's paths and user files before any stage runs (and before anything is written).

    Outputs (``OUT/index.html``, ``OUT/summary.json``, ``--json``) are checked with
    :func:`normscope.validate.check_paths` against the inputs (``--items``, ``--data``); ``--items``
    is read in full (:func:`normscope.inputs.read_items`, or the vectors file / image folder it
    names), so an empty, non-UTF-8 or malformed file is one line before any stage runs and no
    finished page or stage record is touched.

    Raises
    ------
    InputError
        A bad path, a ``--data`` that is not a folder, or a bad ``--items`` file.
    OutputError
        An output place is read-only.
    """
    from normscope.validate import check_paths

    out = Path(config.out)
    check_paths([("-o/--out", out, "folder"), ("-o/--out (index.html)", out / "index.html", "html"),
                 ("-o/--out (summary.json)", out / "summary.json", "json"), ("--json", json_path, "json")],
                inputs=[("--items", config.items), ("--data", config.data)])
    if config.data is not None and not Path(config.data).is_dir():
        raise InputError(f"--data is not a folder: {config.data}")
    items = config.items
    if items is None or "norms" not in config.only:
        return
    items = Path(items)
    if not items.exists():
        raise InputError(f"--items does not exist: {items}")
    if items.is_file() and items.suffix.lower() in (".npy", ".parquet"):
        from normscope.encoders.precomputed import load_precomputed

        load_precomputed(items)
        return
    from normscope.encoders.images import is_image_folder

    if items.is_dir() and is_image_folder(items):
        return
    from normscope.inputs import read_items

    _, texts = read_items(items)
    if not texts:
        raise InputError(f"--items {items} holds no items")


def _run_stage(stage: str, ctx: StageContext, fingerprint, heartbeat: float | None) -> dict:
    """Run (or load from the stage cache) one stage; its record, with ``cached`` set."""
    out = ctx.out
    config = ctx.config
    console = ctx.console
    settings = stage_settings(stage, config, fingerprint)
    key = settings_key(settings)
    cached = None if config.force else load_cached(out, stage, key, console)
    if cached is not None:
        cached["cached"] = True
        console.print(f"{stage}: cached ({_stage_path(out, stage)})")
        return cached
    from rich.text import Text

    func: Callable[[StageContext], dict] = STAGE_FUNCS[stage]
    ts = time.perf_counter()
    with stage_log(console, stage, heartbeat=heartbeat), quiet_libraries() as noise:
        try:
            sections = func(ctx)
        except StageUnavailable as exc:
            rec = _error_record(stage, "unavailable", str(exc), key, settings, time.perf_counter() - ts)
            if exc.missing:  # the datasets it lacks: the summary says once what they stop and how to get them
                rec["missing"] = exc.missing
                for sec in rec["sections"].values():
                    sec["missing"] = exc.missing
            if exc.detail:  # library text of the failed fetches: kept here, never printed
                rec["detail"] = exc.detail
        except OutputError:  # a read-only place or a full disk: every later write would fail too
            raise
        except Exception as exc:  # recorded on the page, never hides the rest of the report
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0]
            rec = _error_record(stage, "failed", msg, key, settings, time.perf_counter() - ts)
            rec["traceback"] = traceback.format_exc()
            console.print(Text.assemble((f"{stage} failed", "red"), f": {msg}"))  # msg: user strings, no markup
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
    if noise:
        rec["warnings"] = dedupe(noise)
    # a finished (ok) record is never replaced by a failed or unavailable one: those go beside it
    failed_path = _failed_path(out, stage)
    if rec["status"] == "ok":
        write_json(rec, _stage_path(out, stage))
        failed_path.unlink(missing_ok=True)
    else:
        write_json(rec, failed_path)
    rec["cached"] = False
    note = f" ({len(rec['warnings'])} library warnings kept in {_stage_path(out, stage)})" if noise else ""
    console.print(f"{stage}: {rec['status']} in {fmt_duration(rec.get('seconds') or 0)}{note}")
    return rec


def assemble_summary(config: ReportConfig, records: dict[str, dict]) -> dict:
    """summary.json: section key -> ``{status, reason, command, result, derived, key_numbers}``, and
    ``claims``: the claims scorecard, one row per claim of the paper (:func:`~normscope.report.scorecard.gather_claims`)."""
    from normscope import __version__

    summary: dict[str, Any] = {
        "report": {
            "normscope_version": __version__,
            "model": config.model,
            "preset": config.preset,
            "precision": config.precision,
            "sizes": sizes_used(config, records),
            "seed": config.seed,
            "device": config.device,
            "engine": config.engine,
            "stages_run": list(config.only),
            "stage_seconds": {k: r.get("seconds") for k, r in records.items()},
            "stage_cached": {k: bool(r.get("cached")) for k, r in records.items()},
            "python": platform.python_version(),
        }
    }
    sections: dict[str, dict] = {}
    for stage in STAGES:
        rec = records.get(stage) or _not_run_record(stage, "not run")
        for sec in STAGE_SECTIONS[stage]:
            s = rec["sections"].get(sec) or {"status": rec.get("status"), "reason": rec.get("reason")}
            entry = {k: s.get(k) for k in ("status", "reason", "missing", "command", "sizes", "result", "derived",
                                           "key_numbers") if s.get(k) is not None}
            entry.setdefault("status", "ok")
            summary[sec] = entry
            sections[sec] = s
    summary["claims"] = gather_claims(sections, model=config.model)
    summary.update(availability(summary, SECTIONS))  # claims_tested, missing_data (one line per missing dataset)
    return summary
