"""Stage orchestration of ``normscope report``: resumable stage cache, progress, assembly.

The runner iterates over :data:`~normscope.report.stages.STAGES`. For each selected stage it builds
the stage's typed request from the settings (:meth:`Stage.request`), derives the cache key from the
request and the model's fingerprint (:meth:`Stage.key`), and either reads ``OUT/stages/<stage>.json``
(same key, every figure present) or runs the stage. A :class:`~normscope.report.stage.StageRecord`
with status ``ok`` is written atomically once its figures are on disk. A record that is not a
well-formed record of its stage is recomputed, with one line saying so. A stage that cannot run
(missing data, missing optional module) has status ``unavailable`` and says why; a stage that raises
has status ``failed`` with the one-line error. Neither is cached. A write failure (read-only place,
full disk) stops the run with one :class:`~normscope.errors.OutputError` line.

A stage not selected (``--only``) keeps the record an earlier run wrote in the same folder, with its
figures, so ``--only X`` into an existing report updates X and leaves the rest as it was; without one
its sections say "not run". "Sizes of this run" lists the sizes of the stages that ran.

Each section's ``result`` is, verbatim, what the commands printed in its ``command`` write with
``--json`` (:meth:`Stage.section_results`), so the report's numbers are the individual commands'.
A failed or unavailable record goes to ``OUT/stages/<stage>.failed.json`` and never replaces a finished
``<stage>.json``. Paths and user files (``--items``) are checked before any stage runs
(:func:`check_report_inputs`). A stage stopped by absent data names the datasets it lacks; the summary
says once per dataset what it stopped and how to get it (:func:`normscope.report.missing.availability`).

The log (:mod:`normscope.report.runlog`) has a line when each stage starts and ends, a heartbeat
while it runs, and no library warnings: those are kept in the stage record (``warnings``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import platform
import time
import traceback
from pathlib import Path

from rich.console import Console
from rich.text import Text
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from normscope import __version__
from normscope._format import duration, noun, plural
from normscope._progress import LINE_EVERY, step
from normscope._io import OutsideFolder, file_inside, output_set, read_inside, write_json
from normscope.datasets import data_root
from normscope.errors import InputError, OutputError
from normscope.report.config import ReportConfig
from normscope.report.context import StageContext
from normscope.report.html import render_report
from normscope.report.missing import availability
from normscope.report.runlog import dedupe, quiet_libraries, stage_log
from normscope.report.scorecard import gather_claims
from normscope.report.sizes import Sizes
from normscope.report.stage import RecordError, Stage, StageRecord, StageUnavailable, is_current, made_with
from normscope.report.stages import SECTIONS, STAGES
from normscope.inputs import read_items
from normscope.validate import check_output_path, check_paths, write_failure
from normscope.values import Status

__all__ = ["ReportResult", "run_report", "assemble_summary", "what_this_says", "load_cached", "sizes_used",
           "check_report_inputs", "folder_lock"]

STAGE_BY_NAME = {st.name: st for st in STAGES}


def _stage_path(out: Path, stage: Stage) -> Path:
    return out / "stages" / f"{stage.name}.json"


def _failed_path(out: Path, stage: Stage) -> Path:
    """Where a stage's last failed or unavailable record goes (never over a finished record)."""
    return out / "stages" / f"{stage.name}.failed.json"


def read_record(out: Path, stage: Stage, console=None, *, then: str = "recomputing") -> StageRecord | None:
    """The record of ``stage`` in ``OUT/stages`` when it is well formed and all its figures exist, else None.

    A record that is unreadable or not a record of this stage is reported on ``console`` (one line).
    """
    p = _stage_path(out, stage)
    if not p.is_file() and not p.is_symlink():
        return None
    try:
        d = json.loads(read_inside(p, out, text=True))
        if not is_current(d):
            return None  # written by an earlier normscope: recomputed without a word
        rec = StageRecord.from_json(d, stage)
    except (OSError, ValueError) as exc:
        why = (str(exc) if isinstance(exc, RecordError) else "a symbolic link out of the report folder, not followed"
               if isinstance(exc, OutsideFolder) else f"unreadable ({type(exc).__name__})")
        if console is not None:
            console.print(f"{stage.name}: the cached record {p} is damaged ({why}); {then}")
        return None
    outside = [f.file for f in rec.figures() if (out / f.file).is_symlink() and not file_inside(out / f.file, out)]
    if outside:
        if console is not None:
            console.print(f"{stage.name}: the kept figure {out / outside[0]} is a symbolic link out of the report "
                          f"folder; not read, {then}")
        return None
    if not all(file_inside(out / f.file, out) for f in rec.figures()):
        return None
    return rec


def load_cached(out: Path, stage: Stage, key: str, console=None) -> StageRecord | None:
    """The cached ``ok`` record of ``stage`` with cache key ``key`` (:func:`read_record`), else None."""
    rec = read_record(out, stage, console)
    return rec if rec is not None and rec.key == key and rec.status is Status.OK else None


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
        Stage name -> :class:`~normscope.report.stage.StageRecord`.
    seconds : float
        Wall time of the run.
    """

    index: Path
    summary_path: Path
    summary: dict
    records: dict[str, StageRecord]
    seconds: float

    @property
    def failed(self) -> list[str]:
        """The stages of this run that failed."""
        return [k for k, r in self.records.items() if r.status is Status.FAILED and r.ran]


def _check_out(out: Path, config: ReportConfig, json_path) -> None:
    check_report_inputs(config, json_path)
    out.mkdir(exist_ok=True)
    (out / "stages").mkdir(exist_ok=True)
    check_output_path(out / "stages" / "x.json", "-o/--out")


def run_report(config: ReportConfig, *, console=None, progress: bool = True, encoder=None,
               json_path: str | Path | None = None, heartbeat: float | None = LINE_EVERY,
               on_start=None) -> ReportResult:
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
        is used at ``config.precision`` (:meth:`~normscope.encoders.base.Encoder.at_precision`) and, with
        ``config.runtime == "openvino"``, in OpenVINO (:func:`normscope.encoders.openvino_runtime.to_openvino`);
        with ``"auto"`` on the runtime :func:`~normscope.encoders.openvino_runtime.choose_runtime` picks.
    json_path : str or Path, optional, keyword-only
        Also write summary.json's content here; written as one set with ``OUT/summary.json`` and
        ``OUT/index.html`` (:func:`normscope._io.output_set`: all three or none).
    heartbeat : float or None, keyword-only
        Seconds of silence before a ``<stage>: still running`` log line (default 10 s; None: none).
    on_start : callable, optional, keyword-only
        Called with no argument once every check has passed (paths, the folder lock, the model, one model per
        folder), just before the first stage runs: the CLI prints its time and memory estimate there, so bad
        input stays one line.

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
    t0 = time.perf_counter()
    console = console or Console(stderr=True, markup=False)
    out = config.out
    _check_out(out, config, json_path)
    with folder_lock(out, console):
        return _run_locked(config, console, progress, encoder, json_path, heartbeat, t0, on_start)


@contextlib.contextmanager
def folder_lock(out: Path, console=None):
    """An exclusive lock on the report folder ``out`` (``fcntl.flock`` on ``OUT/.normscope.lock``), held for a run.

    Two runs into one folder (two ``--only`` runs at once) take turns: the second waits (one line says
    so) and then reads the first one's finished records, so no finished section is ever dropped from the
    page. The kernel releases a killed holder's lock. The lock file is opened with ``O_NOFOLLOW``: a planted
    symbolic link is refused, never written through. Where ``flock`` is unavailable (some network file
    systems) runs are not serialised.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX
        yield
        return
    path = out / ".normscope.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path} is a symbolic link; normscope never writes through one (remove it)") from None
        raise write_failure(exc, path, "-o/--out") or exc from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if console is not None:
                console.print(f"report: another normscope report is writing {out}; waiting for it to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # no locks on this file system
            pass
        yield
    finally:
        os.close(fd)


def _check_one_model(out: Path, fingerprint: dict, kept: dict[str, StageRecord]) -> None:
    """Refuse a run whose model or precision differs from the one of a section kept in ``out`` (one page, one model)."""
    mine = made_with({"model": fingerprint})
    other = [(name, w) for name, rec in kept.items()
             if rec.kept and (w := made_with(rec.request)) is not None and w["fingerprint"] != mine["fingerprint"]]
    if not other:
        return
    name, w = other[0]
    if w["model"] != mine["model"]:
        what = f"model '{w['model']}'"
        now = f"model '{mine['model']}'"
    elif w["precision"] != mine["precision"]:
        what, now = f"precision {w['precision']}", f"precision {mine['precision']}"
    else:
        what = f"model '{w['model']}' with other weights or settings (fingerprint {w['fingerprint'][:12]})"
        now = f"fingerprint {mine['fingerprint'][:12]}"
    stages = ", ".join(n for n, _ in other)
    raise InputError(f"{out} holds {noun(len(other), 'the section', 'sections')} of {noun(len(other), 'stage')} {stages} "
                     f"made with {what}; this run uses {now}: one page "
                     f"never mixes models or precisions: start a new folder with --out NEW_FOLDER, or rerun every "
                     f"stage here (drop --only)")


def _runtime_statement(encoder, requested: str) -> str:
    """Which runtime ran the report's forward passes and why (:func:`~normscope.encoders.openvino_runtime.describe_runtime`)."""
    if requested == "torch" and not hasattr(encoder, "torch_encoder"):
        return "torch"
    from normscope.encoders.openvino_runtime import describe_runtime  # deferred: the optional runtime's module

    return describe_runtime(encoder, requested)


def _run_locked(config: ReportConfig, console, progress: bool, encoder, json_path, heartbeat, t0: float,
                on_start=None) -> ReportResult:
    out = config.out
    if encoder is not None:
        encoder = encoder.at_precision(config.precision)
        if config.runtime == "openvino":
            from normscope.encoders.openvino_runtime import to_openvino  # deferred: the optional runtime

            encoder = to_openvino(encoder)
        elif config.runtime == "auto":
            from normscope.encoders.openvino_runtime import choose_runtime  # deferred: the optional runtime

            encoder = choose_runtime(encoder)
    ctx = StageContext(config, console, encoder)
    selected = [st for st in STAGES if st.name in config.only]
    kept = {st.name: _kept_record(out, st, config, console) for st in STAGES if st not in selected}
    model_kept = any(st.uses_model and made_with(kept[st.name].request) is not None
                     for st in STAGES if st.name in kept)
    # the model is loaded before any stage: a bad --model is one line now, and its fingerprint keys the stages
    # (and is compared with the sections kept from an earlier run: one page, one model)
    uses = any(st.uses_model for st in selected) or model_kept
    fingerprint = ctx.encoder().fingerprint.to_dict() if uses else None
    if fingerprint is not None:
        _check_one_model(out, fingerprint, {n: r for n, r in kept.items() if STAGE_BY_NAME[n].uses_model})
    if on_start is not None:
        on_start()
    records: dict[str, StageRecord] = {}
    with data_root(config.data):
        bar = Progress(TextColumn("[bold]report[/]"), BarColumn(), TextColumn("{task.completed}/{task.total} stages"),
                       TextColumn("{task.description}"), TimeElapsedColumn(), console=console, disable=not progress,
                       transient=False)
        with bar:
            task = bar.add_task("", total=len(selected))
            for st in STAGES:
                if st not in selected:
                    records[st.name] = kept[st.name]
                    continue
                bar.update(task, description=st.name)
                records[st.name] = _run_stage(st, ctx, fingerprint, heartbeat)
                bar.advance(task)
            bar.update(task, description="done")
    summary = assemble_summary(config, records)
    summary["what_this_says"] = what_this_says(records)
    summary["report"]["seconds"] = round(time.perf_counter() - t0, 2)
    if fingerprint is not None:
        summary["report"]["runtime"] = _runtime_statement(ctx.encoder(), config.runtime)
    summary_path, index = out / "summary.json", out / "index.html"
    with step("writing summary.json and the page (figures, tables)"), \
            output_set(summary_path, index, json_path, options={json_path: "--json"}) as tmp:
        write_json(summary, tmp[summary_path])
        render_report(summary, records, tmp[index])
        if json_path is not None:
            write_json(summary, tmp[Path(json_path)])
    console.print(f"report: written in {duration(time.perf_counter() - t0)}")
    return ReportResult(index=index, summary_path=summary_path, summary=summary, records=records,
                        seconds=time.perf_counter() - t0)


def _kept_record(out: Path, stage: Stage, config: ReportConfig, console=None) -> StageRecord:
    """A stage not selected: the record an earlier run wrote here (its sections and figures as they were),
    else "not run"."""
    rec = read_record(out, stage, console, then="its sections say \"not run\"")
    if rec is not None:
        rec.kept = True
        return rec
    return StageRecord.not_run(stage, f"not selected (--only {','.join(config.only)})")


def check_report_inputs(config: ReportConfig, json_path: str | Path | None = None) -> None:
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
        from normscope.encoders.precomputed import load_precomputed  # torch-free, but only when asked for

        load_precomputed(items)
        return
    from normscope.encoders.images import is_image_folder  # PIL: only when asked for

    if items.is_dir() and is_image_folder(items):
        return
    _, texts = read_items(items)
    if not texts:
        raise InputError(f"--items {items} holds no items")


def _run_stage(stage: Stage, ctx: StageContext, fingerprint: dict | None, heartbeat: float | None) -> StageRecord:
    """Run (or load from the stage cache) one stage; its record, with ``cached`` set."""
    out, config, console = ctx.out, ctx.config, ctx.console
    data = ctx.data_dir()
    request = stage.request(config)
    key = stage.key(request, fingerprint=fingerprint, data_dir=str(Path(data).resolve()) if data is not None else None)
    request_json = {"request": request.to_json(), "model": fingerprint if stage.uses_model else None}
    cached = None if config.force else load_cached(out, stage, key, console)
    if cached is not None:
        cached.cached = True
        console.print(f"{stage.name}: cached ({_stage_path(out, stage)})")
        return cached
    ts = time.perf_counter()
    with stage_log(console, stage.name, heartbeat=heartbeat), quiet_libraries() as noise:
        try:
            sections = stage.run(ctx, request)
        except StageUnavailable as exc:
            rec = StageRecord.error(stage, Status.UNAVAILABLE, str(exc), key=key, request=request_json,
                                    seconds=time.perf_counter() - ts)
            if exc.missing:  # the datasets it lacks: the summary says once what they stop and how to get them
                rec.missing = exc.missing
                for sec in rec.sections.values():
                    sec.missing = exc.missing
            if exc.detail:  # library text of the failed fetches: kept here, never printed
                rec.detail = exc.detail
        except OutputError:  # a read-only place or a full disk: every later write would fail too
            raise
        except Exception as exc:  # recorded on the page, never hides the rest of the report
            msg = f"{type(exc).__name__}: {exc}".splitlines()[0]
            rec = StageRecord.error(stage, Status.FAILED, msg, key=key, request=request_json,
                                    seconds=time.perf_counter() - ts)
            rec.traceback = traceback.format_exc()
            console.print(Text.assemble((f"{stage.name} failed", "red"), f": {msg}"))  # msg: user strings, no markup
        else:
            rec = _ok_record(stage, sections, key, request_json, time.perf_counter() - ts)
    if noise:
        rec.warnings = dedupe(noise)
    # a finished (ok) record is never replaced by a failed or unavailable one: those go beside it
    failed_path = _failed_path(out, stage)
    if rec.status is Status.OK:
        write_json(rec, _stage_path(out, stage))
        failed_path.unlink(missing_ok=True)
    else:
        write_json(rec, failed_path)
    note = f" ({plural(len(rec.warnings), 'library warning')} kept in the stage record)" if noise else ""
    console.print(f"{stage.name}: {rec.status.value} in {duration(rec.seconds or 0)}{note}")
    return rec


def _ok_record(stage: Stage, sections: dict, key: str, request_json: dict, seconds: float) -> StageRecord:
    statuses = {s.status for s in sections.values()}
    status = Status.OK if Status.OK in statuses else sorted(statuses, key=lambda s: s.value)[0]
    reason = None if status is Status.OK else "; ".join(str(s.reason) for s in sections.values() if s.reason)
    return StageRecord(stage=stage.name, status=status, sections=sections, key=key, request=request_json,
                       reason=reason, seconds=round(seconds, 2))


def sizes_used(config: ReportConfig, records: dict[str, StageRecord]) -> dict:
    """The sizes the stages that ran actually used: numbers, never None ("stage default").

    Each stage that ran (:attr:`StageRecord.ran`, whatever its status) reports its sizes
    (:meth:`Stage.sizes_used`): a size left to the command's default is read from its result;
    ``signal_items`` becomes one ``signal_items.<signal>`` entry per signal that ran; with ``--items``
    the norm distribution's size is ``items``. In :class:`~normscope.report.sizes.Sizes` order.
    """
    used: dict = {}
    for st in STAGES:
        rec = records.get(st.name)
        if rec is None or not rec.ran:
            continue
        used.update(st.sizes_used(config.sizes, st.request(config), rec.sections))
    order = [f.name for f in dataclasses.fields(Sizes)]
    return dict(sorted(used.items(), key=lambda kv: (order.index(kv[0].split(".")[0]) if kv[0].split(".")[0] in order
                                                    else -1, kv[0])))


def assemble_summary(config: ReportConfig, records: dict[str, StageRecord]) -> dict:
    """summary.json: ``report`` (settings, sizes used, stage times), one entry per section
    (:meth:`Section.summary`) and ``claims``: the scorecard, one row per claim of the paper
    (:func:`~normscope.report.scorecard.gather_claims`)."""
    summary: dict = {"report": {
        "normscope_version": __version__, "model": config.model, "preset": config.preset,
        "precision": config.precision, "sizes": sizes_used(config, records), "seed": config.seed,
        "device": config.device, "engine": config.engine, "stages_run": list(config.only),
        "stage_seconds": {k: r.seconds for k, r in records.items()},
        "stage_cached": {k: r.cached for k, r in records.items()},
        "stages_kept": [k for k, r in records.items() if r.kept],
        "python": platform.python_version(),
    }}
    for st in STAGES:
        rec = records.get(st.name) or StageRecord.not_run(st, "not run")
        for key in st.sections:
            summary[key] = rec.sections[key].summary()
    summary["claims"] = gather_claims(records, model=config.model)
    summary.update(availability(summary, SECTIONS))  # claims_tested, missing_data (one line per missing dataset)
    return summary


def what_this_says(records: dict[str, StageRecord]) -> dict[str, list[str]]:
    """The "what this says" paragraph: section key -> sentences, from each ok section's numbers."""
    explained_by = [st.explains for st in STAGES if st.explains and st.name in records
                    and any(s.ok for s in records[st.name].sections.values())]
    out = {}
    for st in STAGES:
        rec = records.get(st.name)
        for sec in (rec.sections.values() if rec is not None else ()):
            says = st.sentences(sec, explained_by=explained_by) if sec.ok else []
            if says:
                out[sec.key] = says
    return out
