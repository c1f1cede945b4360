"""Long work is never silent for more than LINE_EVERY seconds (issue 38 item 6): the heartbeat every command runs
under, tested with a fake clock and with a slow step, and in a captured log of a real command."""

from __future__ import annotations

import re
import time

from rich.console import Console

from normscope import _progress
from normscope._progress import Tracker, heartbeat, step


def _lines(console: Console) -> list[str]:
    return [ln for ln in console.export_text().splitlines() if ln]


def test_a_slow_step_gets_a_line_every_period_with_the_fake_clock_elapsed():
    ticks = iter([100.0, 110.0, 120.0, 130.0, 140.0, 150.0, 160.0, 170.0, 180.0, 190.0, 200.0])
    console = Console(record=True, width=200, force_terminal=False)
    with heartbeat("correlate", every=0.1, console=console, clock=lambda: next(ticks)):
        with step("bootstrap CIs (2,000 resamples)"):
            time.sleep(0.55)
    lines = _lines(console)
    assert 3 <= len(lines) <= 6, lines
    # the fake clock started at 100 s: the n-th line says 10 n s elapsed, with the step it is in
    for n, ln in enumerate(lines, start=1):
        assert ln == f"correlate: bootstrap CIs (2,000 resamples), {10 * n}.0 s elapsed", lines


def test_the_running_trackers_line_is_repeated_and_other_lines_reset_the_silence(monkeypatch):
    monkeypatch.setattr(_progress, "LINE_EVERY", 100.0)  # the tracker itself stays quiet
    console = Console(record=True, width=200, force_terminal=False)
    with heartbeat("probe", every=0.1, console=console):
        t = Tracker("probe", 10, unit="batches", console=console).start()
        t.update(advance=3)
        time.sleep(0.35)  # one slow batch
        t.stop()
    lines = _lines(console)
    assert len(lines) >= 3
    assert all(re.fullmatch(r"probe: 3/10 batches \(30 %\), [0-9.]+ (ms|s) elapsed, ETA .+", ln) for ln in lines), lines
    # a line printed by the work itself counts as progress: no heartbeat line right after it
    console = Console(record=True, width=200, force_terminal=False)
    with heartbeat("x", every=0.3, console=console):
        for _ in range(6):
            time.sleep(0.1)
            console.print("own line")
            _progress._said()
    assert _lines(console) == ["own line"] * 6


def test_only_the_innermost_heartbeat_speaks():
    console = Console(record=True, width=200, force_terminal=False)
    with heartbeat("report", every=0.1, console=console):
        with heartbeat("lab", every=0.1, console=console, line=lambda e: "lab: still running"):
            time.sleep(0.4)
    lines = _lines(console)
    assert lines and set(lines) == {"lab: still running"}


def test_a_real_command_log_has_a_line_at_least_every_period(monkeypatch, capsys, bundled_encoder):
    """``normscope tokens`` with its statistics slowed down by 1.2 s (a slow step) and a 0.2 s period: the captured
    stderr names the step at least four times; the command's output is unchanged."""
    import normscope.encoders
    import normscope.tokens.run as run_mod
    from normscope.cli import run

    monkeypatch.setattr(_progress, "LINE_EVERY", 0.2)
    monkeypatch.setattr(normscope.encoders, "load_encoder", lambda *a, **k: bundled_encoder)
    monkeypatch.setattr(run_mod, "load_encoder", lambda *a, **k: bundled_encoder)
    real = run_mod.tokens_statistics

    def slow(*a, **k):
        time.sleep(1.2)
        return real(*a, **k)

    monkeypatch.setattr(run_mod, "tokens_statistics", slow)
    assert run(["tokens", "--n-boot", "20", "--n-perm", "20"]) == 0
    cap = capsys.readouterr()
    beats = [ln for ln in cap.err.splitlines() if ln.startswith("tokens: statistics over ")]
    assert len(beats) >= 4, cap.err
    assert "bootstrap CIs (20 resamples), permutation p (20 permutations)" in beats[0]
    assert "Spearman" in cap.out or "rho" in cap.out.lower()
