"""Files normscope reads back never come from outside their folder; a report folder holds one model (issue 36).

Items 1 and 4 of issue 36: a kept figure, a stage record or a lock file that is a symbolic link out of the
report folder is never read (nothing of its target reaches the page) nor written through; the helpers of
``normscope._io`` refuse such links and FIFOs; a report folder records the model, precision and normscope
version of each stage record, ``--only`` with another model or precision is refused before any stage runs, and
two concurrent ``--only`` runs into one folder take turns, so neither finished section is dropped.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from normscope._io import OutsideFolder, file_inside, open_inside, read_inside, write_json, write_text_atomic
from normscope.errors import InputError

SECRET = b"\x89PNG\r\n\x1a\n" + b"-----BEGIN PRIVATE KEY----- s3cr3t-material -----END PRIVATE KEY-----\n" * 4


def _tree(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        rel = str(p.relative_to(d))
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_file():
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
        else:
            out[rel] = "dir"
    return out


# ---------------------------------------------------------------------------------------------------------
# the helpers
# ---------------------------------------------------------------------------------------------------------


def test_open_inside_refuses_links_out_and_follows_links_inside(tmp_path):
    folder, private = tmp_path / "out", tmp_path / "private"
    folder.mkdir()
    private.mkdir()
    (private / "key").write_bytes(SECRET)
    (folder / "real.png").write_bytes(b"mine")
    (folder / "out.png").symlink_to(private / "key")
    (folder / "in.png").symlink_to(folder / "real.png")
    (folder / "sub").symlink_to(private)  # a directory link: the file behind it is outside too
    assert read_inside(folder / "real.png", folder) == b"mine"
    assert read_inside(folder / "in.png", folder) == b"mine"
    for p in (folder / "out.png", folder / "sub" / "key"):
        with pytest.raises(OutsideFolder, match="symbolic link to a place outside"):
            read_inside(p, folder)
        assert not file_inside(p, folder)
    assert file_inside(folder / "in.png", folder) and not file_inside(folder / "none.png", folder)
    assert issubclass(OutsideFolder, InputError)
    os.mkfifo(folder / "fifo.png")  # a FIFO would block a reader forever: refused, never read
    with pytest.raises(OSError, match="not a regular file"):
        open_inside(folder / "fifo.png", folder)
    assert not file_inside(folder / "fifo.png", folder)


def test_atomic_writes_replace_a_link_and_never_write_through_it(tmp_path):
    target = tmp_path / "private.txt"
    target.write_bytes(SECRET)
    os.chmod(target, 0o600)
    link = tmp_path / "out.json"
    link.symlink_to(target)
    write_json({"a": 1}, link)
    assert target.read_bytes() == SECRET and not link.is_symlink() and json.loads(link.read_text()) == {"a": 1}
    assert link.stat().st_mode & 0o777 == 0o666 & ~_umask()  # not the private target's 0600
    link.unlink()
    link.symlink_to(target)
    write_text_atomic("7", link)
    assert target.read_bytes() == SECRET and link.read_text() == "7"


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


# ---------------------------------------------------------------------------------------------------------
# the report folder
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def report_dir(tmp_path, monkeypatch, bundled_encoder):
    """A finished norms + setup report of the bundled model (30 words) and a private file beside it."""
    from normscope.report import ReportConfig, Sizes, run_report

    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "rep"
    run_report(ReportConfig(out=out, only=("norms",), sizes=Sizes(words=30)), progress=False, encoder=bundled_encoder)
    run_report(ReportConfig(out=out, only=("setup",), sizes=Sizes(words=30)), progress=False, encoder=bundled_encoder)
    key = tmp_path / "id_ed25519"
    key.write_bytes(SECRET)
    return out, key


def _run(out, enc, console=None, **kw):
    from normscope.report import ReportConfig, Sizes, run_report

    return run_report(ReportConfig(out=out, sizes=Sizes(words=30), **kw), progress=False, encoder=enc, console=console)


def _no_secret_in(out: Path) -> None:
    needles = [SECRET[8:40], base64.b64encode(SECRET)[:40], base64.b64encode(SECRET[8:])[:40]]
    for p in out.rglob("*"):
        if p.is_file() and not p.is_symlink():
            data = p.read_bytes()
            assert not any(n in data for n in needles), p


def test_a_kept_figure_linking_out_of_the_folder_never_reaches_the_page(report_dir, bundled_encoder):
    """The issue's case: norm_distribution.png links to a key file, then ``report --only setup`` into the folder."""
    out, key = report_dir
    fig = out / "norm_distribution.png"
    fig.unlink()
    fig.symlink_to(key)
    buf = io.StringIO()
    res = _run(out, bundled_encoder, Console(file=buf, width=300), only=("setup",))
    assert res.records["norms"].status.value == "not_run"  # the kept norms record is not reused
    assert "norm_distribution.png is a symbolic link out of the report folder; not read" in buf.getvalue()
    _no_secret_in(out)
    assert key.read_bytes() == SECRET and fig.is_symlink()
    # selecting norms again: recomputed, the link replaced by the new figure (its target untouched)
    res = _run(out, bundled_encoder, only=("norms",))
    assert res.records["norms"].status.value == "ok" and res.records["norms"].cached is False
    assert not fig.is_symlink() and fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and key.read_bytes() == SECRET
    _no_secret_in(out)


def test_a_stage_record_linking_out_of_the_folder_is_not_read(report_dir, bundled_encoder):
    """A stage record replaced by a link to a valid record elsewhere (crafted to carry a private file's text)."""
    out, key = report_dir
    rec = out / "stages" / "norms.json"
    elsewhere = key.parent / "crafted.json"
    d = json.loads(rec.read_text())
    d["sections"]["norm_distribution"]["reason"] = SECRET[8:].decode()
    elsewhere.write_text(json.dumps(d))
    rec.unlink()
    rec.symlink_to(elsewhere)
    buf = io.StringIO()
    res = _run(out, bundled_encoder, Console(file=buf, width=300), only=("setup",))
    assert "norms: the cached record" in buf.getvalue() and "a symbolic link out of the report folder" in buf.getvalue()
    assert res.records["norms"].status.value == "not_run"
    _no_secret_in(out)


def test_a_planted_lock_link_is_refused_not_written_through(report_dir, bundled_encoder):
    out, key = report_dir
    (out / ".normscope.lock").unlink()
    (out / ".normscope.lock").symlink_to(key)
    before = _tree(out)
    with pytest.raises(InputError, match=r"\.normscope\.lock is a symbolic link; normscope never writes through one"):
        _run(out, bundled_encoder, only=("setup",))
    assert key.read_bytes() == SECRET and _tree(out) == before


def test_records_say_which_model_precision_and_version_made_them(report_dir):
    from normscope import __version__
    from normscope.encoders import load_encoder

    out, _ = report_dir
    fp = load_encoder().fingerprint
    for stage in ("norms", "setup"):
        d = json.loads((out / "stages" / f"{stage}.json").read_text())
        assert d["normscope"] == __version__
        assert d["made_with"] == {"model": fp.name, "precision": "fp32", "fingerprint": fp.key}


def test_only_with_another_precision_or_model_is_refused_before_any_stage(report_dir, bundled_encoder, capsys):
    from normscope.cli import run

    out, _ = report_dir
    before = _tree(out)
    with pytest.raises(InputError, match=r"holds the section of stage norms made with precision fp32; this run uses "
                                         r"precision bf16: one page never mixes models or precisions: start a new "
                                         r"folder with --out NEW_FOLDER, or rerun every stage here \(drop --only\)"):
        _run(out, bundled_encoder, only=("setup",), precision="bf16")
    assert _tree(out) == before
    # another model, through the CLI: one line, exit 2, nothing changed (the record names another model)
    d = json.loads((out / "stages" / "norms.json").read_text())
    d["request"]["model"]["name"] = "someone/other-model"
    (out / "stages" / "norms.json").write_text(json.dumps(d))
    before = _tree(out)
    capsys.readouterr()
    assert run(["report", "--out", str(out), "--only", "setup", "--quick"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "made with model 'someone/other-model'; this run uses model " in err[0], err
    assert "--out NEW_FOLDER" in err[0] and _tree(out) == before
    # rerunning every stage it holds (no --only mixing) is allowed: norms and setup again, one model
    res = _run(out, bundled_encoder, only=("norms", "setup"))
    assert res.records["norms"].status.value == res.records["setup"].status.value == "ok"


def test_concurrent_only_runs_take_turns_and_keep_both_sections(tmp_path, monkeypatch, bundled_encoder):
    """Two ``--only`` runs into one new folder at once: the second waits; the final page holds both sections."""
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "rep"
    logs = {"norms": io.StringIO(), "setup": io.StringIO()}
    errors = []

    def go(stage):
        try:
            _run(out, bundled_encoder, Console(file=logs[stage], width=300), only=(stage,))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    a = threading.Thread(target=go, args=("norms",))
    a.start()
    t0 = time.monotonic()
    while "norms: started" not in logs["norms"].getvalue() and time.monotonic() - t0 < 60:
        time.sleep(0.01)
    b = threading.Thread(target=go, args=("setup",))  # starts while norms runs (5 s of MiniLM)
    b.start()
    a.join()
    b.join()
    assert not errors, errors
    assert "another normscope report is writing" in logs["setup"].getvalue()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["norm_distribution"]["status"] == "ok" and summary["setup"]["status"] == "ok"
    html = (out / "index.html").read_text()
    assert "Norm distribution" in html and "data:image/png;base64," in html
