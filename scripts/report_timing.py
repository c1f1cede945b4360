"""Per-stage wall time, CPU time and peak memory of one ``normscope report`` run (what ``make run`` runs).

Runs :func:`normscope.report.run_report` in this process with every stage function wrapped, and prints
one row per stage: wall seconds, CPU seconds of the whole process (all threads, ``time.process_time``),
CPU / wall (the cores the stage kept busy) and the peak resident memory of the process at the stage's end
(``ru_maxrss``, a high-water mark). The embedding cache is a fresh empty folder (``$NORMSCOPE_CACHE``)
unless ``--cache DIR`` is given, and every stage runs (``--force``), so nothing is reused from an
earlier run. The load average before and after is printed beside the figures: on a shared machine the
wall times are context, the CPU seconds the comparable figure.

``--profile STAGE`` also runs that stage under cProfile and prints its 25 most expensive functions
(cumulative time); ``--json PATH`` writes the table.

Usage::

    python scripts/report_timing.py --out /tmp/report            # full sizes (make run)
    python scripts/report_timing.py --out /tmp/report --quick --profile retrieval
    python scripts/report_timing.py --out /tmp/report --only probes,signals
    python scripts/report_timing.py --out /tmp/report --runtime openvino   # (--backend openvino: the same)
    python scripts/report_timing.py --out /tmp/report --runtime torch      # the torch figures (default: auto)

The runtime that ran is printed (the report's ``summary["report"]["runtime"]``: ``--runtime openvino`` falls
back to torch with a warning when openvino is missing, ``auto`` takes OpenVINO only when it passes its
equality check). Loading the model -- and, with an empty cache, its one conversion to OpenVINO IR -- happens
before the first stage: it is the row ``(outside stages)`` (total minus the stages, with writing the page).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="report folder")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default=None, help="comma-separated stages (default: all)")
    ap.add_argument("--cache", default=None, help="embedding cache folder (default: a fresh empty one)")
    ap.add_argument("--profile", default=None, help="stage to run under cProfile")
    ap.add_argument("--json", default=None, help="write the per-stage figures here")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "bf16"),
                    help="the report's --precision (bf16: the stages that embed run under autocast)")
    ap.add_argument("--runtime", default="auto", choices=("auto", "torch", "openvino"),
                    help="the report's --runtime (default auto, as the report's; openvino: the stages that embed run "
                    "the model in OpenVINO; with an empty cache its one conversion is timed before the first stage, "
                    "in the row '(outside stages)')")
    ap.add_argument("--backend", dest="runtime", choices=("auto", "torch", "openvino"), help="same as --runtime")
    args = ap.parse_args(argv)

    cache = args.cache or tempfile.mkdtemp(prefix="normscope-cache-")
    os.environ["NORMSCOPE_CACHE"] = cache

    from normscope.report import runner
    from normscope.report.config import ReportConfig
    from normscope.report.stages import STAGES, parse_stages

    rows: dict[str, dict] = {}

    def wrap(name, func):
        def timed(*a, **k):
            w0, c0 = time.perf_counter(), time.process_time()
            prof = cProfile.Profile() if name == args.profile else None
            try:
                if prof is not None:
                    prof.enable()
                return func(*a, **k)
            finally:
                if prof is not None:
                    prof.disable()
                wall, cpu = time.perf_counter() - w0, time.process_time() - c0
                rows[name] = {"wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                              "cores": round(cpu / wall, 2) if wall > 0 else None,
                              "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)}
                if prof is not None:
                    buf = io.StringIO()
                    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
                    rows[name]["profile"] = buf.getvalue()

        return timed

    for st in STAGES:  # each Stage object's run, timed (an instance attribute shadows the method)
        st.run = wrap(st.name, st.run)
    only = parse_stages(args.only) if args.only else None
    kw = {"only": tuple(only)} if only else {}
    config = ReportConfig(out=Path(args.out), quick=args.quick, force=True, precision=args.precision,
                          runtime=args.runtime, **kw)
    load0 = _load()
    w0, c0 = time.perf_counter(), time.process_time()
    result = runner.run_report(config, heartbeat=None)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    ran = result.summary.get("report", {}).get("runtime") or "no model loaded"
    load1 = _load()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"\nnormscope report ({'quick' if args.quick else 'full'}, {args.precision}, runtime {args.runtime}), "
          f"{'cache ' if args.cache else 'empty cache '}{cache}; load average before "
          f"{load0}, after {load1}; {os.cpu_count()} CPUs")
    print(f"runtime that ran: {ran}")
    out_w = wall - sum(r["wall_s"] for r in rows.values())
    out_c = cpu - sum(r["cpu_s"] for r in rows.values())
    print(f"{'stage':<18}{'wall s':>9}{'CPU s':>9}{'cores':>7}{'peak RSS GB':>13}")
    for name, r in rows.items():
        print(f"{name:<18}{r['wall_s']:>9.1f}{r['cpu_s']:>9.1f}{(r['cores'] or 0):>7.2f}{r['peak_rss_gb']:>13.2f}")
    print(f"{'(outside stages)':<18}{out_w:>9.1f}{out_c:>9.1f}{(out_c / out_w if out_w > 0 else 0):>7.2f}")
    print(f"{'total':<18}{wall:>9.1f}{cpu:>9.1f}{cpu / wall:>7.2f}{peak:>13.2f}")
    for name, r in rows.items():
        if "profile" in r:
            print(f"\ncProfile of stage {name} (cumulative):\n{r['profile']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"stages": {k: {kk: vv for kk, vv in v.items() if kk != "profile"}
                                                          for k, v in rows.items()},
                                               "total": {"wall_s": wall, "cpu_s": cpu, "peak_rss_gb": peak},
                                               "load_before": load0, "load_after": load1, "cache": cache,
                                               "quick": args.quick, "precision": args.precision,
                                               "runtime": args.runtime, "runtime_ran": ran,
                                               "outside_stages": {"wall_s": out_w, "cpu_s": out_c}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
