"""A small mutation check of the presentation code: plant each mutant, run the tests, count the kills.

    .venv/bin/python scripts/mutation_check.py [--min 0.8] [--only NAME ...] [--json PATH]

Each mutant changes one thing a reader of the page or of the CLI would see wrong (a headline field, an option
missing from a reproduce command, a size-word threshold, the forest plot's data, the side-by-side join ...). The
script replaces the snippet in the source file (it must occur exactly once), runs the mutant's tests with pytest
(``-x``, stopping at the first failure), restores the file (also on Ctrl-C), and prints which mutants survived.
A mutant is killed when its tests fail. Exit code 1 when the kill rate is below ``--min``.

It edits the working tree while it runs: run it alone (not beside another test run of the same checkout).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The presentation tests (one pytest run).
PRESENTATION = (("tests/test_presentation.py",),)
#: The typed reads of the results by the page and the CLI (tests/test_typed_results.py).
TYPED = (("tests/test_typed_results.py",),)
#: The unit tests of the sentences and claims rows (not those that run a report): one pytest run.
SENTENCES = (("tests/test_report.py", "tests/test_probe_text.py", "tests/test_retrieval_report.py",
              "tests/test_report_similarity.py", "-k", "(sentence or claim or parse_stages or guards or direction "
              "or partial or prediction or reading or disagreeing) and not scorecard"),)


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One planted mutant: in ``path`` replace ``old`` (found exactly once) by ``new``; ``tests``: the pytest runs
    (each a tuple of arguments) that should catch it."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[tuple[str, ...], ...] = PRESENTATION


MUTANTS = (
    Mutant("norms headline reports the mean as the sd", "src/normscope/report/stages/norms.py",
           'return (f"n = {num(r.n)}: mean ||z|| {num(r.norm_mean)}, sd {num(r.norm_std)}, "',
           'return (f"n = {num(r.n)}: mean ||z|| {num(r.norm_mean)}, sd {num(r.norm_mean)}, "'),
    Mutant("lab headline inverts the gate", "src/normscope/report/stages/lab.py",
           "gate {'passed' if r.gate is not None and r.gate.passed else 'not passed'}",
           "gate {'not passed' if r.gate is not None and r.gate.passed else 'passed'}"),
    Mutant("signals headline drops the CI", "src/normscope/report/stages/signals.py",
           'parts.append(f"{k} Spearman \\u03c1 {num(rho)} {ci_text(ci)}" if ci_excludes_zero(ci) is not None',
           'parts.append(f"{k} Spearman \\u03c1 {num(rho)}" if ci_excludes_zero(ci) is not None'),
    Mutant("probe command omits --model", "src/normscope/report/stages/probes.py",
           'argv = ["normscope", "probe", items, "--model", request.model, "--pairs", request.pairs,',
           'argv = ["normscope", "probe", items, "--pairs", request.pairs,'),
    Mutant("retrieval command omits --max-queries", "src/normscope/requests/__init__.py",
           "            out += opt.tokens(value, f.name)",
           '            out += [] if f.name == "max_queries" else opt.tokens(value, f.name)',
           (("tests/test_request_roundtrip.py",),)),
    Mutant("retrieval command omits --engine", "src/normscope/requests/__init__.py",
           "            out += opt.tokens(value, f.name)",
           '            out += [] if f.name == "engine" else opt.tokens(value, f.name)',
           (("tests/test_request_roundtrip.py",),)),
    Mutant("size word threshold moved", "src/normscope/report/text.py", "    if a < 0.3:", "    if a < 0.35:",
           PRESENTATION + SENTENCES),
    Mutant("correlation sentence flips the direction", "src/normscope/report/text.py",
           'direction = "rises" if up else "falls"', 'direction = "falls" if up else "rises"',
           SENTENCES),
    Mutant("forest plot marks no refuted model", "src/normscope/report/multi.py",
           'r.verdict == "refuted")', 'False)'),
    Mutant("forest plot drops the CI", "src/normscope/report/multi.py",
           'tuple(r.ci) if r.ci else None', 'None'),
    Mutant("side by side joins on labels", "src/normscope/report/multi.py",
           "labels.setdefault(k.key, k.label + (f\" ({k.unit})\" if k.unit else \"\"))\n"
           "                    values.setdefault(k.key, {})[m] = k.value",
           "labels.setdefault(k.label, k.label + (f\" ({k.unit})\" if k.unit else \"\"))\n"
           "                    values.setdefault(k.label, {})[m] = k.value"),
    Mutant("several-model scorecard drops the verdict", "src/normscope/cli/report.py",
           "return f\"{fig} {r.verdict}\".strip()", "return fig.strip()"),
    Mutant("summary.json loses the key numbers", "src/normscope/report/stage.py",
           '"key_numbers": [k.row() for k in self.key_numbers] if self.ok else None}',
           '"key_numbers": None}'),
    Mutant("percentages lose their sign", "src/normscope/_format.py",
           'f"{100 * v:+.2f} %"', 'f"{100 * v:.2f} %"'),
    Mutant("negative zero keeps its minus sign", "src/normscope/_format.py",
           'return t[1:] if t.startswith("-") and not t.strip("-0.") else t', "return t"),
    Mutant("normalised-model test threshold", "src/normscope/report/stages/norms.py",
           "if cv is not None and cv < 1e-3:", "if cv is not None and cv < 1e-9:", SENTENCES),
    Mutant("calibration sentence better-than-chance side", "src/normscope/report/stages/retrieval.py",
           "    if ci[0] > 0.5:", "    if ci[1] > 0.5:", SENTENCES),
    Mutant("transformer table reads eta as lambda", "src/normscope/report/stages/transformer.py",
           "sig3(b.eta), sig3(b.lam), f\"{b.steps:,}\"", "sig3(b.eta), sig3(b.eta), f\"{b.steps:,}\"", TYPED),
    Mutant("QPP table shows the Kendall CI for Spearman", "src/normscope/report/stages/retrieval.py",
           "e.spearman_rho, ci_text(e.spearman_rho_ci)", "e.spearman_rho, ci_text(e.kendall_tau_ci)", TYPED),
    Mutant("lab key numbers ignore the result's gate", "src/normscope/report/stages/lab.py",
           "gate = LabGate.from_json({**GATE, **(res.gate.to_json() if res.gate is not None else {})})",
           "gate = LabGate.from_json(dict(GATE))", TYPED),
    Mutant("CLI summary counts every claim as tested", "src/normscope/cli/report.py",
           "count.append(f\"claims: {ct.tested if ct.tested is not None else '?'} of \"",
           "count.append(f\"claims: {ct.total if ct.tested is not None else '?'} of \"", TYPED),
)


def run_mutant(m: Mutant, timeout: float) -> tuple[bool, float]:
    """(killed, seconds): plant ``m``, run its tests, restore the file."""
    path = ROOT / m.path
    original = path.read_text(encoding="utf-8")
    if original.count(m.old) != 1:
        raise SystemExit(f"{m.name}: the snippet occurs {original.count(m.old)} times in {m.path} (must be once)")
    t0 = time.perf_counter()
    try:
        path.write_text(original.replace(m.old, m.new), encoding="utf-8")
        killed = False
        for args in m.tests:
            cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args]
            try:
                r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                                   env=dict(os.environ, OMP_NUM_THREADS="1"))
                killed = r.returncode != 0
            except subprocess.TimeoutExpired:
                killed = True  # a mutant that hangs the tests is caught
            if killed:
                break
    finally:
        path.write_text(original, encoding="utf-8")
    return killed, time.perf_counter() - t0


def run_all(chosen, timeout: float, json_path: Path | None, min_rate: float) -> int:
    """Run each mutant of ``chosen`` against its tests, print one line each and the kill rate, write the outcome
    as JSON to ``json_path`` (when given); exit status 0 when the rate is at least ``min_rate``."""
    outcome = {}
    for m in chosen:
        killed, secs = run_mutant(m, timeout)
        outcome[m.name] = killed
        print(f"{'killed  ' if killed else 'SURVIVED'} {secs:6.1f} s  {m.name}", flush=True)
    n_killed = sum(outcome.values())
    rate = n_killed / max(len(outcome), 1)
    print(f"{n_killed} of {len(outcome)} mutants killed ({100 * rate:.0f} %)")
    if json_path:
        json_path.write_text(json.dumps({"killed": n_killed, "total": len(outcome), "mutants": outcome}, indent=1) + "\n")
    return 0 if rate >= min_rate else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=float, default=0.8, help="lowest acceptable kill rate (default 0.8)")
    ap.add_argument("--only", nargs="*", help="run only the mutants whose name contains one of these words")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant")
    ap.add_argument("--json", type=Path, help="also write the outcome as JSON here")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if not args.only or any(w in m.name for w in args.only)]
    return run_all(chosen, args.timeout, args.json, args.min)


if __name__ == "__main__":
    raise SystemExit(main())
