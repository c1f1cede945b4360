"""The CLI as a new user meets it: help text, --version, fast one-line errors; values on the page."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import normscope

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = [[], ["embed"], ["probe"], ["correlate"], ["report"], ["lab"], ["retrieval"], ["calibrate"], ["similarity"],
            ["inspect"], ["index"], ["index", "build"], ["index", "search"],
            ["data"], ["data", "list"], ["data", "fetch"], ["data", "path"]]


def _cli(argv):
    from normscope.cli import run

    return run(argv)


def test_version_is_the_package_version(capsys):
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _cli(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"normscope {want}"


def test_help_pages_flags_usage_and_option_help(capsys):
    import typer.main
    from typer.core import TyperOption

    from normscope.cli import app

    for argv in COMMANDS:
        assert _cli([*argv, "--help"]) == 0, argv
        out = capsys.readouterr().out
        assert "<bool>" not in out, argv  # flags (and --help) take no value
        usage = next(ln for ln in out.splitlines() if "Usage:" in ln)
        assert "{" not in usage, usage
    assert _cli(["probe", "--help"]) == 0
    assert "Usage: normscope probe [OPTIONS] ITEMS" in capsys.readouterr().out
    assert _cli(["data", "fetch", "--help"]) == 0
    assert "Usage: normscope data fetch [OPTIONS] [NAMES...]" in capsys.readouterr().out
    # every option of every command says what it does (--seed, --device, --trust-remote-code included)
    missing = []

    def walk(cmd, path):
        for p in cmd.get_params(cmd.context_class(cmd)):
            if isinstance(p, TyperOption) and not (p.help or "").strip():
                missing.append((path, p.opts))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    assert missing == []
    probe = typer.main.get_command(app).commands["probe"]
    helps = {p.name: p.help for p in probe.get_params(probe.context_class(probe))}
    assert helps["trust_remote_code"] == "Let the model repository run its own code (off by default)."


@pytest.mark.parametrize("argv, message", [
    (["probe", "wordfreq:5", "--model", "x.parquet"], "precomputed vectors cannot be probed"),
    (["probe", "no-such-items.txt", "--model", "/no/such/model/dir"], "unknown model '/no/such/model/dir'"),
])
def test_probe_model_errors_come_first_and_at_once(argv, message, tmp_path):
    """The model's error comes before any model, item list or WordNet is loaded (it took 14-29 s when they were):
    checked in a fresh interpreter by the modules the run imported, not by a wall-clock bound."""
    code = ("import sys; from normscope.cli import run; rc = run(sys.argv[1:]); "
            "print(rc, [m for m in ('torch', 'transformers', 'sentence_transformers', 'nltk', 'wordfreq', 'openvino') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(Path(normscope.__file__).parents[1])})
    assert out.stdout == "2 []\n", out.stdout + out.stderr
    assert message in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_probe_missing_pair_file(capsys, tmp_path, monkeypatch, bundled_encoder):
    monkeypatch.chdir(tmp_path)
    assert _cli(["probe", "wordfreq:5", "--pairs", "missing.tsv"]) == 2
    assert capsys.readouterr().err == "error: pair file not found: missing.tsv\n"


def test_random_bytes_named_npy(tmp_path, capsys):
    bad = tmp_path / "vectors.npy"
    bad.write_bytes(np.random.default_rng(0).bytes(2000))
    good = tmp_path / "ok.npy"
    np.save(good, np.ones((3, 4), dtype=np.float32))
    items = tmp_path / "items.txt"
    items.write_text("a\nb\nc\n")
    assert _cli(["embed", str(items), "--model", str(bad), "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert "is not a .npy file (no NumPy header)" in err and "pickle" not in err
    from normscope.encoders.precomputed import load_npy_vectors

    assert load_npy_vectors(good).shape == (3, 4)


def test_values_on_the_page_render_as_tables():
    from normscope.report.html import render_value

    html = str(render_value({"judged": 300, "evaluated": 297, "excluded_no_text": 0, "<b>": "<script>"}))
    assert html.startswith('<table class="kv">') and "<th>judged</th>" in html
    assert '<td class="num">300</td>' in html and "{'judged'" not in html
    assert "&lt;script&gt;" in html and "<script>" not in html and "&lt;b&gt;" in html
    rows = str(render_value([{"split": "train", "n": 809}, {"split": "test", "n": 300}]))
    assert rows.count("<tr>") == 3 and "<th>split</th><th>n</th>" in rows
    note = str(render_value({"text": "excluded eval queries:", "table": {"judged": 300}}))
    assert note.startswith("excluded eval queries:<table")
    assert str(render_value([0.123456, None, "a"])) == "0.123, n/a, a"


@pytest.mark.parametrize("seconds, text", [(0.0213, "0.02 s"), (12.34, "12.3 s"), (2040.2, "34 min 00 s"), (119.6, "2 min 00 s"), (7199, "2 h 00 min"),
                                           (3725, "1 h 02 min"), (None, "n/a")])
def test_durations(seconds, text):
    from normscope._format import duration

    assert duration(seconds) == text


def test_cached_rerun_summary_line(tmp_path):
    """The one-screen summary of a re-run from the cache states a readable time and the cache hits."""
    from rich.console import Console

    from normscope.cli.report import print_summary
    from normscope.report import ReportConfig, Sizes, run_report

    cfg = ReportConfig(out=tmp_path / "r", sizes=Sizes(lab_steps=300, lab_snapshots=8, lab_probe_batches=10),
                       only=("lab",))
    run_report(cfg, progress=False)
    again = run_report(cfg, progress=False)
    console = Console(record=True, width=200)
    print_summary(again, console)
    title = console.export_text().splitlines()[0]
    assert "custom sizes, " in title and "; 1 of 1 stage from the cache)" in title
    assert "e-0" not in title


@pytest.mark.parametrize("argv, message", [
    (["similarity", "--n-boot", "x"], "error: Invalid value for '--n-boot'"),
    (["embed", "--nope"], "error: No such option"),
    (["nosuch"], "error: No such command 'nosuch'."),
])
def test_usage_errors_are_one_line(argv, message, capsys):
    """A malformed or unknown option or command: one `error:` line naming the help to read, exit 2, no box."""
    assert _cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(message) and "--help`" in err and len(err.splitlines()) == 1 and "\u256d" not in err


def test_scorecard_statistic_names_keep_their_parentheses():
    from normscope.cli.report import _lead

    assert _lead("Pearson r(R, heat) over the probe items, 95% CI over batches") == "Pearson r(R, heat) over the probe items"
    assert _lead("relative \u0394 nDCG@10 of cos/(1 + alpha||d||) vs cosine; paired CI") == (
        "relative \u0394 nDCG@10 of cos/(1 + alpha||d||) vs cosine")


# ---------------------------------------------------------------------------------------------------------
# one convention: repeated single-value options, list options, help at 80 columns
# ---------------------------------------------------------------------------------------------------------


def _params(argv):
    """The parameters a command line parses to (nothing runs)."""
    import typer.main

    from normscope.cli import app

    group = typer.main.get_command(app)
    cmd = group.commands[argv[0]]
    return cmd.make_context(argv[0], argv[1:], parent=group.make_context("normscope", [argv[0]])).params


def test_a_repeated_single_value_option_is_a_usage_error(capsys, tmp_path):
    assert _cli(["embed", "wordfreq:5", "--model", "A", "--model", "B", "-o", str(tmp_path / "o.parquet")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --model given 2 times: the option takes one value") and len(err.splitlines()) == 1
    assert not (tmp_path / "o.parquet").exists()
    assert _cli(["lab", "--steps", "10", "--steps=20"]) == 2 and "--steps given 2 times" in capsys.readouterr().err
    assert _cli(["embed", "wordfreq:5", "-m", "A", "--model=B", "-o", "o.parquet"]) == 2  # short and long forms
    assert "given 2 times" in capsys.readouterr().err
    # an option's value that looks like an option is a value, not a repeat
    assert _params(["similarity", "--json", "--seed"])["json_path"].name == "--seed"


@pytest.mark.parametrize("argv, flag, name", [
    (["retrieval", "--dataset", "d"], "--scorer", "scorers"), (["similarity"], "--scorer", "scorers"),
    (["report"], "--only", "only"), (["report"], "--signals", "signals"),
    (["correlate", "--signal", "frequency"], "--control", "controls"), (["report"], "--model", "model"),
])
def test_list_options_take_a_comma_list_as_the_repeated_option(argv, flag, name):
    values = {"--scorer": ["inverse_norm", "power"], "--only": ["norms", "lab"], "--signals": ["frequency", "uncertainty"],
              "--control": ["frequency", "length"], "--model": ["a", "b/c"]}[flag]
    repeated = _params(argv + [x for v in values for x in (flag, v)])[name]
    comma = _params(argv + [flag, ",".join(values)])[name]
    mixed = _params(argv + [flag, values[0], flag, ",".join(values[1:])])[name]
    assert repeated == comma == mixed == values


def test_help_is_readable_at_80_columns(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "80")
    for argv in COMMANDS:
        assert _cli([*argv, "--help"]) == 0
        out = capsys.readouterr().out
        assert max(map(len, out.splitlines())) <= 80, argv
        assert "\u2026" not in out and "<str>" not in out, argv  # nothing cut, no typer placeholders
