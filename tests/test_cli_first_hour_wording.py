"""What a new user's first hour hit in the CLI's wording (newuser trial, 2026-12-03): the global options also after
the command, error strings that name only options that exist, ``data list`` at 80 columns."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "normscope"


def _cli(argv):
    from normscope.cli import run

    return run(argv)


@pytest.fixture
def local_simlex(tmp_path, monkeypatch):
    """A --data folder holding a SimLex-999 copy (two files; not the real ones: used with --no-verify), an empty
    cache and an empty $NORMSCOPE_DATA, so the copy can only be found through --data."""
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "nodata").mkdir()
    monkeypatch.setenv("NORMSCOPE_DATA", str(tmp_path / "nodata"))
    monkeypatch.delenv("NORMSCOPE_OFFLINE", raising=False)
    monkeypatch.delenv("NORMSCOPE_NO_VERIFY", raising=False)
    d = tmp_path / "mydata"
    (d / "simlex999").mkdir(parents=True)
    (d / "simlex999" / "SimLex-999.txt").write_text("word1\tword2\tPOS\tSimLex999\nold\tnew\tA\t1.58\n")
    (d / "simlex999" / "README.txt").write_text("copy\n")
    return d


@pytest.mark.parametrize("where", ["before", "after"])
def test_data_and_no_verify_before_or_after_the_command_mean_the_same(local_simlex, tmp_path, where):
    out = tmp_path / f"{where}.json"
    opts = ["--data", str(local_simlex), "--no-verify"]
    argv = ([*opts, "data", "list", "--json", str(out)] if where == "before"
            else ["data", "list", "--json", str(out), *opts])
    assert _cli(argv) == 0
    row = next(r for r in json.loads(out.read_text())["datasets"] if r["name"] == "simlex-999")
    assert row["present"] is True
    assert row["where"] == "--data"
    assert Path(row["path"]).resolve() == (local_simlex / "simlex999" / "SimLex-999.txt").resolve()
    # without --data the copy is not found (the fixture hides every other place)
    assert _cli(["data", "list", "--json", str(tmp_path / "none.json")]) == 0
    none = next(r for r in json.loads((tmp_path / "none.json").read_text())["datasets"] if r["name"] == "simlex-999")
    assert none["present"] is False


def test_data_after_a_command_that_recommends_it(capsys, tmp_path):
    """``correlate ... --data DIR`` (what the missing-data errors recommend) parses: a missing folder is named as
    the global option names it, before any model is loaded."""
    assert _cli(["correlate", "--signal", "concreteness", "--n-items", "30", "--data", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: --data directory does not exist: {tmp_path / 'nope'}"
    assert _cli(["--data", str(tmp_path / "nope"), "correlate", "--signal", "concreteness"]) == 2
    assert capsys.readouterr().err.strip() == err


def test_offline_after_the_command(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "nodata").mkdir()
    monkeypatch.setenv("NORMSCOPE_DATA", str(tmp_path / "nodata"))
    monkeypatch.delenv("NORMSCOPE_OFFLINE", raising=False)
    want = "error: normscope data fetch downloads: drop --offline / $NORMSCOPE_OFFLINE to use it"
    assert _cli(["data", "fetch", "simlex-999", "--offline"]) == 2
    assert capsys.readouterr().err.strip() == want
    assert _cli(["--offline", "data", "fetch", "simlex-999"]) == 2
    assert capsys.readouterr().err.strip() == want


def _all_options() -> set[str]:
    import typer.main

    from normscope.cli import _click_exceptions, app  # noqa: F401

    try:
        from typer import _click as click
    except ImportError:  # older typer
        import click
    names: set[str] = set()

    def walk(cmd, parent=None):
        ctx = click.Context(cmd, parent=parent, info_name=cmd.name)
        for p in cmd.get_params(ctx):
            names.update(o for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ())) if o.startswith("--"))
        for sub in getattr(cmd, "commands", {}).values():
            walk(sub, ctx)

    walk(typer.main.get_command(app))
    return names


#: ``--x`` in src/ strings that are not normscope's options: pip's (the PyPI route runs pip) and docstring examples.
NOT_OURS = {"--no-deps", "--no-binary", "--require-hashes", "--hash", "--no-input", "--progress-bar",
            "--disable-pip-version-check", "--a", "--name", "--fig-dir"}


def test_every_option_named_in_src_exists():
    """Every ``--option`` named in a string of src/normscope (error messages, hints, help, docstrings) is an option of
    some command: a message never sends the user to ``--n`` when the option is ``--n-items``."""
    opts = _all_options()
    assert {"--n-items", "--data", "--dataset", "--offline"} <= opts
    rx = re.compile(r"(?<![\w\-/.])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
    bad = {}
    for f in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in rx.findall(node.value):
                    if name not in opts and name not in NOT_OURS:
                        bad.setdefault(name, f"{f.relative_to(SRC)}:{node.lineno}")
    assert bad == {}


def test_too_few_items_names_n_items(capsys, tmp_path):
    from normscope.requests import CLI_NAMES
    from normscope.signals.study import _check_args

    # the API names the field, the CLI the option
    with pytest.raises(Exception, match=r"^n must be >= 0"):
        _check_args("concreteness", (), [], -1, "depth", None, None, None, None, None)
    tok = CLI_NAMES.set(True)
    try:
        with pytest.raises(Exception, match=r"^--n-items must be >= 0, got -1$"):
            _check_args("concreteness", (), [], -1, "depth", None, None, None, None, None)
    finally:
        CLI_NAMES.reset(tok)


def _list_lines(capsys, monkeypatch, columns, *extra):
    monkeypatch.setenv("COLUMNS", str(columns))
    assert _cli(["data", "list", *extra]) == 0
    return capsys.readouterr().out.splitlines()


def test_data_list_fits_80_columns_and_details_on_request(capsys, monkeypatch, tmp_path):
    from normscope.data import dataset_names

    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    lines = _list_lines(capsys, monkeypatch, 80)
    assert max(map(len, lines)) <= 80
    header = next(ln for ln in lines if "name" in ln and "here" in ln)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["name", "here", "download", "what"]
    names = [ln.split("│")[1].strip() for ln in lines if ln.startswith("│") and ln.split("│")[1].strip()]
    assert names == list(dataset_names())  # one line per dataset's name, each whole
    assert len(lines) < 4 * len(names) + 8
    assert lines[-1] == "licence, origin, checks and paths: `normscope data list --details`"
    wide = _list_lines(capsys, monkeypatch, 220, "--details")
    header = next(ln for ln in wide if "licence" in ln)
    assert [c.strip() for c in header.strip("┃ ").split("┃")] == ["name", "here", "download", "what", "licence",
                                                                   "origin", "PyPI route", "verified by"]
    assert max(map(len, wide)) <= 220


def _beat_lines(label, work, every=0.05):
    from rich.console import Console

    from normscope._progress import heartbeat

    console = Console(record=True, width=300, force_terminal=False)
    with heartbeat(label, every=every, console=console):
        work()
    return [ln for ln in console.export_text().splitlines() if ln.strip()]


def test_progress_lines_name_model_loading_and_embedding(monkeypatch):
    """A slow model load and a slow embedding (no progress bar: one batch) are named in the heartbeat's line, not
    ``working``."""
    import time

    import numpy as np

    import normscope.encoders as enc
    import normscope.encoders._hub as hub
    from normscope.encoders.cache import encode_cached

    class Slow:
        dim, cacheable, hf_tokenizer = 3, True, None

        def at_precision(self, precision):
            return self

        def encode(self, texts, batch_size=32, progress=False):
            time.sleep(0.3)
            return np.ones((len(texts), 3), dtype=np.float32)

    def slow_build(*a):
        time.sleep(0.3)
        return Slow()

    monkeypatch.setattr(enc, "_build_memo", slow_build)
    monkeypatch.setattr(hub, "check_name", lambda name: None)
    lines = _beat_lines("embed", lambda: enc.load_encoder("some-org/some-model", runtime="torch"))
    assert lines and all(re.fullmatch(r"embed: loading model some-org/some-model, [0-9.]+ (ms|s) elapsed", ln)
                         for ln in lines), lines
    lines = _beat_lines("correlate", lambda: encode_cached(Slow(), ["a", "b", "a"], batch_size=8, cache=False))
    assert lines and all(re.fullmatch(r"correlate: embedding 3 texts, [0-9.]+ (ms|s) elapsed", ln) for ln in lines), lines


def test_a_file_given_as_a_beir_folder_is_named_as_such(tmp_path):
    from normscope.data.beir import load_beir
    from normscope.errors import DataError

    (tmp_path / "mydata").mkdir()
    f = tmp_path / "mydata" / "corpus.jsonl"
    f.write_text('{"_id": "d1", "text": "x"}\n')
    with pytest.raises(DataError) as e:
        load_beir(f)
    assert str(e.value) == (f"a BEIR dataset is a folder (the one holding corpus.jsonl, queries.jsonl and qrels/), "
                            f"not a file: {f}; give its folder, {tmp_path / 'mydata'}")


def test_an_unreachable_source_is_not_called_not_found(tmp_path, monkeypatch, capsys):
    """Every source unreachable (a mirror whose host has no DNS answer: ``.invalid`` never resolves, RFC 2606):
    the message says the data could not be fetched, not that it is missing upstream."""
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    (tmp_path / "nodata").mkdir()
    monkeypatch.setenv("NORMSCOPE_DATA", str(tmp_path / "nodata"))
    monkeypatch.delenv("NORMSCOPE_OFFLINE", raising=False)
    assert _cli(["data", "fetch", "simlex-999", "--mirror", "http://x.invalid"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("error: simlex-999: SimLex-999 could not be fetched (no source reachable): "
                             "http://x.invalid/"), err
    assert "cannot resolve x.invalid" in err[0] and " not found" not in err[0]
    assert err[-1] == "not fetched: simlex-999 (nothing of it was kept; run the command again to retry)"
