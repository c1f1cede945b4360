"""Execution of the decisive design's runs (:mod:`normscope.lab.decisive`): the process-pool workers of a phase and
the progress lines and bars (stderr) with each phase's ETA."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from normscope._io import read_inside, write_text_atomic
from normscope.lab.decisive_run import RunContext, RunSpec, run_done, run_one

__all__ = ["execute_phase_runs", "PhaseProgress"]


def _worker_init(num_threads: int | None) -> None:
    import torch

    if num_threads is not None:
        torch.set_num_threads(int(num_threads))


def _worker(spec_d: dict, ctx_d: dict) -> str:
    """Process-pool entry point: run one spec, reporting progress through a small file."""
    spec_d = dict(spec_d, snapshots=tuple(spec_d["snapshots"]), eval_steps=tuple(spec_d["eval_steps"]))
    spec = RunSpec(**spec_d)
    ctx = RunContext(**{**ctx_d, "directory": Path(ctx_d["directory"])})
    prog = Path(ctx.directory) / "runs" / f"{spec.name}.progress"

    def report(n: int) -> None:
        write_text_atomic(str(int(n)), prog)  # replaced, never written through a planted link

    run_one(spec, ctx, progress=report)
    prog.unlink(missing_ok=True)
    return spec.name


class PhaseProgress:
    """One progress bar per phase (stderr, rich) with the phase's ETA, and one line per phase."""

    def __init__(self, show: bool, n_phases: int = 5):
        self.show = show
        self.n = n_phases
        self.console = None
        self.rate = None  # measured seconds per step (wall), for the ETA before a phase starts
        if show:
            from rich.console import Console

            self.console = Console(stderr=True)

    def line(self, text: str) -> None:
        if self.console is not None:
            self.console.print(text, soft_wrap=True, markup=False, highlight=False)

    def phase(self, i: int, name: str, specs: list, ctx: RunContext):
        todo = [s for s in specs if not run_done(s, ctx)]
        steps = sum(s.steps for s in todo)
        eta = "" if self.rate is None or not steps else f", ETA about {_dur(steps * self.rate)}"
        self.line(f"[phase {i}/{self.n}] {name}: {len(specs)} run(s), {len(todo)} to run, {steps:,} steps{eta}")
        return _PhaseBar(self, name, todo)


def _dur(s: float) -> str:
    return f"{s / 60:.0f} min" if s >= 90 else f"{s:.0f} s"


class _PhaseBar:
    def __init__(self, prog: PhaseProgress, name: str, todo: list):
        self.prog = prog
        self.done = {s.name: 0 for s in todo}
        self.total = sum(s.steps for s in todo)
        self.bar = None
        self.t0 = time.perf_counter()
        if prog.show and self.total:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn(f"[bold]{name}[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("steps"),
                                TimeRemainingColumn(), console=prog.console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task(name, total=self.total)

    def update(self, name: str, n: int) -> None:
        self.done[name] = n
        if self.bar is not None:
            self.bar.update(self.task, completed=sum(self.done.values()))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
        secs = time.perf_counter() - self.t0
        steps = sum(self.done.values())
        if steps:
            self.prog.rate = secs / steps
        self.prog.line(f"  done in {_dur(secs)}" + (f" ({secs / steps:.3f} s per step)" if steps else ""))


def execute_phase_runs(specs: list[RunSpec], ctx: RunContext, bar: _PhaseBar, workers: int, num_threads: int | None) -> None:
    todo = [s for s in specs if not run_done(s, ctx)]
    if workers <= 1 or len(todo) <= 1:
        for s in todo:
            run_one(s, ctx, progress=lambda n, _s=s.name: bar.update(_s, n))
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    ctx_d = {f.name: (str(getattr(ctx, f.name)) if f.name == "directory" else getattr(ctx, f.name))
             for f in dataclasses.fields(ctx)}
    with ProcessPoolExecutor(max_workers=min(workers, len(todo)), mp_context=mp.get_context("spawn"),
                             initializer=_worker_init, initargs=(num_threads,)) as pool:
        futures = {pool.submit(_worker, s.to_dict(), ctx_d): s for s in todo}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=2.0, return_when=FIRST_COMPLETED)
            for f in done:
                f.result()  # re-raise a worker's error here
                s = futures[f]
                bar.update(s.name, s.steps)
            for f in pending:
                s = futures[f]
                try:
                    bar.update(s.name, int(read_inside(Path(ctx.directory) / "runs" / f"{s.name}.progress", ctx.directory,
                                                         text=True) or 0))
                except (OSError, ValueError):
                    pass


