"""Start-up time of ``normscope --help``: this tree's CLI against a previous one, measured in the same run.

Each repeat runs ``python -m normscope --help`` once per side in a fresh process (output discarded), in
alternating order, with ``PYTHONPATH`` set to that side's ``src``: this tree's, and a copy of ``src`` at
``--baseline`` (a git revision, extracted with ``git archive``). Timed per run: wall clock and the child's
CPU seconds (user + system, from ``os.wait4``). The headline ratio is previous / this on the best
(minimum) wall time, as ``timeit`` recommends (other processes only ever add time); the medians of wall
and CPU time are printed beside it. Also printed, per side: the modules loaded by ``import normscope.cli``
and whether numpy, pandas, pyarrow, scipy and torch are among them (``python -X importtime -c "import
normscope.cli"`` names who imports what).

Usage: python benchmarks/cli_startup.py [--baseline 79ac157] [--repeats 7]

The default baseline, 79ac157, is main before the start-up change of issue 38 (2026-12-03).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "torch")


def _baseline_src(rev: str, into: Path) -> Path:
    """``src`` of revision ``rev`` of this repository, extracted under ``into``."""
    archive = into / "src.tar"
    with archive.open("wb") as fh:
        subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev, "src"], stdout=fh, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _run_once(src: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one ``python -m normscope --help`` with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "normscope", "--help"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"normscope --help exited {proc.returncode} with PYTHONPATH={src}")
    return wall, usage.ru_utime + usage.ru_stime


def _modules(src: Path) -> tuple[int, list[str]]:
    """How many modules ``import normscope.cli`` loads, and which of :data:`HEAVY`."""
    code = ("import sys, normscope.cli; heavy = " + repr(HEAVY) + "; print(len(sys.modules)); "
            "print(','.join(h for h in heavy if h in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(src)},
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return int(out[0]), [h for h in out[1].split(",") if h]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="79ac157", help="git revision of the previous CLI (default: %(default)s)")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this tree": ROOT / "src", f"baseline {a.baseline}": _baseline_src(a.baseline, Path(tmp))}
        names = list(sides)
        times: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
        _run_once(sides[names[0]])  # warm the file cache for both sides before timing
        _run_once(sides[names[1]])
        for i in range(a.repeats):
            for n in (names if i % 2 == 0 else names[::-1]):
                times[n].append(_run_once(sides[n]))
        mods = {n: _modules(sides[n]) for n in names}
    print(f"normscope --help, {a.repeats} runs per side, alternating; load average {os.getloadavg()[0]:.1f}, "
          f"{os.cpu_count()} CPUs")
    for n in names:
        wall, cpu = zip(*times[n])
        count, heavy = mods[n]
        print(f"  {n:>22}: best wall {min(wall):.2f} s, median wall {statistics.median(wall):.2f} s, median CPU "
              f"{statistics.median(cpu):.2f} s; import normscope.cli loads {count} modules "
              f"(of {', '.join(HEAVY)}: {', '.join(heavy) or 'none'})")
    new, old = (list(zip(*times[n])) for n in names)
    print(f"  previous / this: best wall {min(old[0]) / min(new[0]):.2f}x, median wall "
          f"{statistics.median(old[0]) / statistics.median(new[0]):.2f}x, median CPU "
          f"{statistics.median(old[1]) / statistics.median(new[1]):.2f}x")


if __name__ == "__main__":
    main()
