"""Fault injection (issue 18, section 2): each fault is real and each outcome is compared with an uninterrupted run.

Faults: weights changed on disk under a cached report; read-only output places (a read-only bind mount
as root, else chmod); a file size limit (``RLIMIT_FSIZE``) and a full tmpfs, before and while writing; an
unwritable or filling cache; stage records that are valid JSON but not records; a damaged shard; a
directory appearing at an output path during the commit; two concurrent runs over one cache. Plus the
file modes under the umask and transformers' token-length warning. Mounts need root with
``CAP_SYS_ADMIN``; without it those tests skip with the reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from normscope.cli import run
from test_cache import TOY_SRC, TEXTS, ToyEncoder, toy_vector

WORDS = [f"word{i}" for i in range(10)] + ["apple", "river", "quantum", "justice", "green", "the", "of", "music"]


# ---------------------------------------------------------------------------------------------------------
# real faults: read-only mounts, small file systems, file size limits
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """One intra-op thread: on the shared 2-core CI box two spinning OpenMP threads make MiniLM 20x slower."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _sh(*argv) -> bool:
    return subprocess.run([str(a) for a in argv], capture_output=True).returncode == 0


@contextlib.contextmanager
def read_only(path: Path):
    """Make ``path`` (a directory) unwritable: a read-only bind mount as root, chmod 0555 otherwise."""
    if os.geteuid() != 0:
        path.chmod(0o555)
        try:
            yield path
        finally:
            path.chmod(0o755)
        return
    if shutil.which("mount") is None or not _sh("mount", "--bind", path, path):
        pytest.skip("root but cannot bind-mount here (no mount or no CAP_SYS_ADMIN)")
    try:
        if not _sh("mount", "-o", "remount,bind,ro", path):
            pytest.skip("cannot remount a bind mount read-only here")
        yield path
    finally:
        _sh("umount", path) or _sh("umount", "-l", path)  # lazily when a file is still open there


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    """A tmpfs of ``size`` mounted at ``path`` (skips without root or CAP_SYS_ADMIN)."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None or not _sh("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path):
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        yield path
    finally:
        _sh("umount", path) or _sh("umount", "-l", path)  # lazily when a file is still open there


@contextlib.contextmanager
def file_size_limit(nbytes: int):
    """Lower this process's soft ``RLIMIT_FSIZE`` (Python ignores SIGXFSZ: writes past it fail with EFBIG)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


def _fill(fs: Path, leave: int) -> Path:
    """Fill the file system of ``fs`` so that exactly ``leave`` bytes (whole pages) stay free."""
    st = os.statvfs(fs)
    filler = fs / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * (st.f_bavail * st.f_frsize - leave))
    assert os.statvfs(fs).f_bavail * st.f_frsize == leave
    return filler


@pytest.fixture
def private_cache(tmp_path, monkeypatch, bundled_encoder):
    """An empty NORMSCOPE_CACHE whose models/ links to the extracted bundled model (no re-extraction)."""
    from normscope.encoders.bundled import bundled_model_path

    model = bundled_model_path()
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    (cache / "models" / model.name).symlink_to(model)
    monkeypatch.setenv("NORMSCOPE_CACHE", str(cache))
    return cache


def _shards(cache: Path) -> list[Path]:
    return sorted(cache.glob("embeddings/*/shard-*.npz"))


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def words_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("words") / "words.txt"
    p.write_text("\n".join(WORDS) + "\n")
    return p


@pytest.fixture(scope="module")
def reference(tmp_path_factory, words_file, bundled_encoder):
    """Outputs of an uninterrupted ``embed`` of WORDS (own empty cache): (parquet bytes, json bytes)."""
    d = tmp_path_factory.mktemp("reference")
    with pytest.MonkeyPatch.context() as m:
        m.setenv("NORMSCOPE_CACHE", str(d / "cache"))
        assert run(["embed", str(words_file), "-o", str(d / "o.parquet"), "--json", str(d / "o.json"),
                    "--batch-size", "4"]) == 0
    return (d / "o.parquet").read_bytes(), (d / "o.json").read_bytes()


def _embed(words_file, out, js=None, *extra) -> int:
    argv = ["embed", str(words_file), "-o", str(out), "--batch-size", "4", *map(str, extra)]
    return run(argv + (["--json", str(js)] if js is not None else []))


# ---------------------------------------------------------------------------------------------------------
# 1. stale report after the weights change
# ---------------------------------------------------------------------------------------------------------


def test_report_recomputes_when_weights_change_in_place(tmp_path, monkeypatch, bundled_encoder):
    """A local model's weights rewritten in place: the report's norms follow the new weights, not the cache."""
    from safetensors.torch import load_file, save_file

    from normscope.encoders import load_encoder
    from normscope.encoders.bundled import bundled_model_path
    from normscope.report import ReportConfig, Sizes, run_report

    src = bundled_model_path()
    model = tmp_path / "my-model"
    model.mkdir()
    for f in src.iterdir():
        if f.name != "model.safetensors":
            (model / f.name).symlink_to(f)
    weights = load_file(src / "model.safetensors")
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    cfg = ReportConfig(out=tmp_path / "report", model=str(model), only=("norms",), sizes=Sizes(words=40))
    first = run_report(cfg, progress=False).summary["norm_distribution"]["result"]

    ln = next(k for k in weights if k.endswith("encoder.layer.5.output.LayerNorm.weight"))
    weights[ln] = weights[ln] * 0.8  # fine-tuned in place: same file, same size, new bytes
    save_file(weights, model / "model.safetensors", metadata={"format": "pt"})
    again = run_report(cfg, progress=False)
    got = again.summary["norm_distribution"]["result"]
    assert again.records["norms"].cached is False

    from normscope.datasets import wordfreq_words

    fresh = load_encoder(str(model), fresh=True)  # uninterrupted: the new weights, loaded from scratch
    ref = np.linalg.norm(fresh.encode(wordfreq_words(40)).astype(np.float64), axis=1)
    assert got["norm_mean"] == pytest.approx(ref.mean(), rel=1e-5)
    assert abs(first["norm_mean"] - got["norm_mean"]) > 0.1 * ref.std()
    assert got["fingerprint"]["revision"] == fresh.fingerprint.revision != first["fingerprint"]["revision"]
    # an unchanged model is still served from the stage cache
    assert run_report(cfg, progress=False).records["norms"].cached is True


# ---------------------------------------------------------------------------------------------------------
# 2. writability before the work; disk full and size limits while writing
# ---------------------------------------------------------------------------------------------------------


def test_read_only_output_places_stop_before_any_work(tmp_path, words_file, private_cache, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ok = tmp_path / "ok"
    ok.mkdir()
    with read_only(ro):
        assert _embed(words_file, ro / "o.parquet", ok / "o.json") == 2
        err = _one_line_error(capsys)
        assert "not writable" in err and str(ro) in err
        assert _embed(words_file, ok / "o.parquet", ro / "o.json") == 2
        assert "--json" in _one_line_error(capsys)
        assert run(["report", "--only", "norms", "--items", "wordfreq:40", "--out", str(ro / "report")]) == 2
        assert "not writable" in _one_line_error(capsys)
    assert not list(ok.iterdir()) and not list(ro.iterdir())
    assert _shards(private_cache) == []  # nothing was embedded


def test_file_size_limit_is_checked_before_embedding(tmp_path, words_file, private_cache, capsys):
    out = tmp_path / "o.parquet"
    with file_size_limit(8192):  # the table needs about 4 * 18 * 384 bytes
        assert _embed(words_file, out, tmp_path / "o.json") == 2
    err = _one_line_error(capsys)
    assert "file size limit (ulimit -f)" in err and "nothing was computed" in err
    assert not out.exists() and not (tmp_path / "o.json").exists() and not list(tmp_path.glob(".o.*"))
    assert _shards(private_cache) == []


def test_size_limit_while_writing_is_one_line_and_keeps_old_outputs(tmp_path, words_file, reference, private_cache, capsys):
    ref_parquet, ref_json = reference
    out, js = tmp_path / "o.parquet", tmp_path / "o.json"
    out.write_bytes(b"old table")
    js.write_bytes(b"old json")
    estimate = int(0.9 * 4 * len(WORDS) * 384)
    assert estimate < len(ref_parquet)  # the limit lies between the pre-check's estimate and the real size
    with file_size_limit((estimate + len(ref_parquet)) // 2):
        assert _embed(words_file, out, js) == 2
    err = _one_line_error(capsys)
    assert err.startswith(f"error: cannot write -o/--out {out}: file too large")
    assert out.read_bytes() == b"old table" and js.read_bytes() == b"old json"  # nothing already written is lost
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    assert _embed(words_file, out, js) == 0  # without the limit: the uninterrupted run's bytes
    assert out.read_bytes() == ref_parquet and js.read_bytes() == ref_json


def test_json_on_a_full_disk_leaves_no_table_without_its_json(tmp_path, words_file, reference, private_cache, capsys):
    """The disk fills up while the model runs: the table fits, its JSON does not -> neither is written."""
    ref_parquet, ref_json = reference
    page = os.sysconf("SC_PAGE_SIZE")
    with tmpfs(tmp_path / "disk", "1m") as disk:
        out, js = disk / "o.parquet", disk / "o.json"
        filled = threading.Event()

        def fill_when_embedding_starts():
            deadline = time.monotonic() + 60
            while not _shards(private_cache) and time.monotonic() < deadline:
                time.sleep(0.001)
            _fill(disk, -(-len(ref_parquet) // page) * page)  # room for the table, none for the JSON
            filled.set()

        t = threading.Thread(target=fill_when_embedding_starts)
        t.start()
        rc = _embed(words_file, out, js)
        t.join()
        assert filled.is_set()
        assert rc == 2
        err = _one_line_error(capsys)
        assert err.startswith(f"error: cannot write --json {js}: no space left on device"), err
        assert sorted(p.name for p in disk.iterdir()) == ["filler"]  # neither output, no temp file
        (disk / "filler").unlink()
        assert _embed(words_file, out, js) == 0  # the same run with room: the uninterrupted outputs
        assert out.read_bytes() == ref_parquet and js.read_bytes() == ref_json


def test_output_set_is_all_or_none_when_the_commit_fails(tmp_path):
    """A directory appears at one output path during the run: the other output keeps its old content."""
    from normscope._io import output_set, write_json
    from normscope.errors import OutputError

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    write_json({"old": 1}, a)
    with pytest.raises(IsADirectoryError):
        with output_set(a, b) as tmp:
            write_json({"new": 1}, tmp[a])
            write_json({"new": 2}, tmp[b])
            b.mkdir()  # a concurrent process creates a directory there before the renames
    assert json.loads(a.read_text()) == {"old": 1}  # the renamed first output was rolled back
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]
    b.rmdir()
    with pytest.raises(OutputError, match=r"^cannot write output .*b\.json: file too large"):
        with file_size_limit(4096), output_set(a, b) as tmp:
            write_json({"new": 1}, tmp[a])
            write_json({"big": "x" * 10000}, tmp[b])
    assert json.loads(a.read_text()) == {"old": 1} and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


# ---------------------------------------------------------------------------------------------------------
# 3. an unwritable (or filling) cache
# ---------------------------------------------------------------------------------------------------------


def test_read_only_cache_continues_without_it_and_says_so(tmp_path, words_file, reference, private_cache, capsys):
    ref_parquet, ref_json = reference
    (private_cache / "embeddings").mkdir()
    with read_only(private_cache):
        out, js = tmp_path / "o.parquet", tmp_path / "o.json"
        assert _embed(words_file, out, js) == 0
        err = capsys.readouterr().err
        notes = [ln for ln in err.splitlines() if ln.startswith("note:")]
        assert len(notes) == 1 and "is not writable (read-only file system)" in notes[0], err
        assert "Traceback" not in err
        assert out.read_bytes() == ref_parquet and js.read_bytes() == ref_json
        # the bundled model cannot be extracted into a read-only cache: one line, not a traceback
        from normscope.encoders.bundled import bundled_model_path
        from normscope.errors import ModelError

        (tmp_path / "empty").mkdir()
        with read_only(tmp_path / "empty"), pytest.MonkeyPatch.context() as m:
            m.setenv("NORMSCOPE_CACHE", str(tmp_path / "empty"))
            with pytest.raises(ModelError, match=r"cannot extract the bundled model .*read-only file system.*NORMSCOPE_CACHE"):
                bundled_model_path()


def test_cache_filling_up_mid_run_continues_and_says_so(tmp_path, monkeypatch, capsys):
    from normscope.encoders.cache import encode_cached

    with tmpfs(tmp_path / "cachefs", "64k") as fs:
        monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: fs)
        got = encode_cached(ToyEncoder(), TEXTS * 1, batch_size=4)
        ref = np.stack([toy_vector(t) for t in TEXTS])
        np.testing.assert_array_equal(got, ref)
        _fill(fs, 0)
        more = [t + " more" for t in TEXTS]
        capsys.readouterr()
        np.testing.assert_array_equal(encode_cached(ToyEncoder(), more, batch_size=4),
                                      np.stack([toy_vector(t) for t in more]))
        err = capsys.readouterr().err
        assert err.count("note:") == 1 and "cannot be written any more (no space left on device)" in err


# ---------------------------------------------------------------------------------------------------------
# 4. stage records that are valid JSON but not records
# ---------------------------------------------------------------------------------------------------------


def test_malformed_stage_records_are_recomputed(tmp_path, bundled_encoder, monkeypatch):
    import io

    from rich.console import Console

    from normscope.report import ReportConfig, Sizes, run_report

    monkeypatch.setenv("NORMSCOPE_CACHE", str(tmp_path / "cache"))
    cfg = ReportConfig(out=tmp_path / "r", only=("norms",), sizes=Sizes(words=30))
    ref = run_report(cfg, progress=False, encoder=bundled_encoder).summary["norm_distribution"]
    good = json.loads((cfg.out / "stages" / "norms.json").read_text())
    key = good["key"]
    section = good["sections"]["norm_distribution"]
    bad = [None, [], {"key": key, "status": "ok", "sections": {"norm_distribution": None}},
           dict(good, sections={"norm_distribution": dict(section, figures=[{"file": "../norm_distribution.png"}])})]
    for rec in bad:
        (cfg.out / "stages" / "norms.json").write_text(json.dumps(rec))
        buf = io.StringIO()
        res = run_report(cfg, progress=False, encoder=bundled_encoder, console=Console(file=buf, width=300))
        assert res.records["norms"].cached is False and res.records["norms"].status == "ok", rec
        assert res.summary["norm_distribution"]["result"] == ref["result"]
        assert "norms: the cached record" in buf.getvalue() and "recomputing" in buf.getvalue()
    assert run_report(cfg, progress=False, encoder=bundled_encoder).records["norms"].cached is True


# ---------------------------------------------------------------------------------------------------------
# 6. a damaged shard is recomputed and reported once
# ---------------------------------------------------------------------------------------------------------


def test_damaged_shards_are_recomputed_and_reported_once(tmp_path, monkeypatch, capsys):
    from normscope.encoders.cache import encode_cached, model_cache_dir

    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path)
    ref = encode_cached(ToyEncoder(), TEXTS, batch_size=8)  # uninterrupted: 5 shards
    shards = sorted(model_cache_dir(ToyEncoder.fingerprint).glob("shard-*.npz"))
    blob = shards[0].read_bytes()
    shards[0].write_bytes(blob[: len(blob) // 2])  # truncated
    raw = bytearray(shards[1].read_bytes())
    raw[len(raw) // 2 :] = bytes(len(raw) - len(raw) // 2)  # zeroed tail: the zip directory is gone
    shards[1].write_bytes(bytes(raw))
    capsys.readouterr()
    enc = ToyEncoder()
    got = encode_cached(enc, TEXTS, batch_size=8)
    np.testing.assert_array_equal(got, ref)
    assert len(enc.seen) == 16  # exactly the two damaged batches
    notes = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("note:")]
    assert len(notes) == 1 and "2 damaged shards" in notes[0] and "removed" in notes[0], notes
    enc = ToyEncoder()
    np.testing.assert_array_equal(encode_cached(enc, TEXTS, batch_size=8), ref)
    assert enc.calls == 0 and "note:" not in capsys.readouterr().err  # repaired: said once, not on every run


# ---------------------------------------------------------------------------------------------------------
# smaller: file modes, the token-length warning, concurrent runs
# ---------------------------------------------------------------------------------------------------------


def test_output_files_get_the_usual_mode_under_the_umask(tmp_path, words_file, private_cache):
    from normscope._io import atomic_path, write_json

    old = os.umask(0o027)
    try:
        assert _embed(words_file, tmp_path / "o.parquet", tmp_path / "o.json") == 0
        with atomic_path(tmp_path / "lab.csv") as tmp:  # what correlate, lab, probe and the figures use
            Path(tmp).write_text("x")
        os.umask(0o022)
        write_json({"a": 1}, tmp_path / "plain.json")
    finally:
        os.umask(old)
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir() if p.is_file()}
    assert modes == {"o.parquet": 0o640, "o.json": 0o640, "lab.csv": 0o640, "plain.json": 0o644}
    os.chmod(tmp_path / "o.json", 0o600)  # a replaced file keeps the mode its owner gave it
    write_json({"b": 2}, tmp_path / "o.json")
    assert (tmp_path / "o.json").stat().st_mode & 0o777 == 0o600


def test_no_token_length_warning_and_truncated_items_counted(tmp_path, private_cache):
    """transformers warns once per tokenizer for a text longer than the model maximum: fresh ones here."""
    import logging

    from transformers import AutoTokenizer

    from normscope.encoders import load_encoder
    from normscope.encoders.bundled import bundled_model_path
    from normscope.encoders.embed import embed_texts
    from normscope.inputs import find_junk

    texts = ["word " * 700, "a short one", "tokens " * 600]
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    lg = logging.getLogger("transformers")
    handler = Keep(level=logging.WARNING)
    lg.addHandler(handler)
    try:
        enc = load_encoder(fresh=True)
        table = embed_texts(texts, encoder=enc, batch_size=2)
        find_junk(texts, [str(i) for i in range(3)], tokenizer=enc.hf_tokenizer)
        enc.token_counts(texts)
        find_junk(texts, tokenizer=AutoTokenizer.from_pretrained(str(bundled_model_path())))  # a fresh tokenizer
    finally:
        lg.removeHandler(handler)
    assert not [r for r in records if "Token indices sequence length" in r], records
    assert table.n_truncated == 2 and table.summary()["n_truncated"] == 2


CONCURRENT = TOY_SRC + textwrap.dedent(
    """
    import sys
    import numpy as np
    from normscope.encoders.cache import encode_cached

    texts = [f"concurrent text {i} " + "y" * (i % 11) for i in range(48)]
    enc = ToyEncoder(delay=0.15)
    out = encode_cached(enc, texts, batch_size=4)
    np.save(sys.argv[1], out)
    with open(sys.argv[1] + ".computed", "w") as f:
        f.write(str(len(enc.seen)))
    """
)


def test_concurrent_runs_share_batches_and_agree(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(CONCURRENT)
    env = dict(os.environ, NORMSCOPE_CACHE=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / f"out{i}.npy")], env=env) for i in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    a, b = np.load(tmp_path / "out0.npy"), np.load(tmp_path / "out1.npy")
    texts = [f"concurrent text {i} " + "y" * (i % 11) for i in range(48)]
    reference = np.stack([toy_vector(t) for t in texts])  # the uninterrupted single run's output
    assert a.tobytes() == b.tobytes() == reference.tobytes()
    computed = [int((tmp_path / f"out{i}.npy.computed").read_text()) for i in range(2)]
    assert sum(computed) == len(texts), computed  # every batch computed once, by one of the two runs
    assert min(computed) > 0  # both worked (started within the first batches of each other)
    assert not list((tmp_path / "cache").glob("embeddings/*/.lock-*"))


# ---------------------------------------------------------------------------------------------------------
# 10. damaged decisive-lab run folders (issue 36, item 3): one line naming the file and the field, nothing changed
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def finished_design(tmp_path_factory):
    """A finished tiny decisive design (test_lab_decisive's sizes, ~35 s) and its pairs and probe files."""
    from test_lab_decisive import PROBES, WORDS, _tiny_sizes

    from normscope.lab import run_decisive_design

    d = tmp_path_factory.mktemp("design")
    rng = np.random.default_rng(0)
    lines = ["left\tright"] + [f"{a} {i}\tthe {b} near a {a} {i % 7}" for i in range(160)
                               for a, b in [rng.choice(WORDS, 2)]] + ["lantern\ta lamp"]
    (d / "pairs.tsv").write_text("\n".join(lines) + "\n")
    (d / "probes.txt").write_text("\n".join(PROBES) + "\n")
    run_decisive_design(directory=d / "run", design=_tiny_sizes(), pairs=str(d / "pairs.tsv"),
                        probe_items=d / "probes.txt", seed=1)
    return d


def _design_argv(d: Path, run_dir: Path) -> list[str]:
    return ["lab", "--encoder", "transformer", "--design", "decisive", "--size", "quick", "--run-dir", str(run_dir),
            "--pairs", str(d / "pairs.tsv"), "--probe-items", str(d / "probes.txt"), "--seed", "1"]


def _snapshot(d: Path) -> dict:
    out = {}
    for p in sorted(d.rglob("*")):
        out[str(p.relative_to(d))] = ("link:" + os.readlink(p) if p.is_symlink() else
                                      p.read_bytes() if p.is_file() else "dir")
    return out


def _json_edit(path: Path, **fields) -> None:
    path.write_text(json.dumps(dict(json.loads(path.read_text()), **fields)))


def _truncate(path: Path, n: int) -> None:
    path.write_bytes(path.read_bytes()[:n])


DAMAGE = {  # case: (damage, what the line must say)
    "design-json-garbage": (lambda r, s: (r / "design.json").write_text("{not json"),
                            r"design\.json is damaged \(not JSON: .* at line 1 column 2\)"),
    "design-json-a-list": (lambda r, s: (r / "design.json").write_text("[1, 2]"),
                           r"design\.json is damaged \(a JSON list, not an object\)"),
    "design-json-no-key": (lambda r, s: (r / "design.json").write_text('{"data_key": "x", "settings": {}}'),
                           r"design\.json is damaged \(field 'key' should be a string, is missing\)"),
    "data-json-wrong-type": (lambda r, s: _json_edit(r / "data.json", train_left="x"),
                             r"data\.json is damaged \(field 'train_left' should be a list, is str \"x\"\)"),
    "data-json-lengths": (lambda r, s: _json_edit(r / "data.json", eval_right=["one"]),
                          r"data\.json is damaged \(fields 'eval_left' and 'eval_right' differ in length \(16 vs 1\)\)"),
    "lambda0-nan": (lambda r, s: (r / "lambda0.json").write_text('{"key": "k", "median_lambda_rad_per_lambda": NaN}'),
                    r"lambda0\.json is damaged \(field 'median_lambda_rad_per_lambda' is nan, not a finite number\)"),
    "run-json-truncated": (lambda r, s: _truncate(r / "runs" / "pretrain.json", 20),
                           r"runs/pretrain\.json is damaged \(not JSON: "),
    "run-json-timings-string": (lambda r, s: _json_edit(r / "runs" / "pretrain.json", timings="fast"),
                                r"runs/pretrain\.json is damaged \(field 'timings' should be an object, is str"),
    "record-npz-truncated": (lambda r, s: _truncate(r / "runs" / "pretrain.npz", 200),
                             r"runs/pretrain\.npz is damaged \(not a readable \.npz record: BadZipFile\)"),
    "final-params-truncated": (lambda r, s: _truncate(r / "runs" / "pretrain.final.pt", 300),
                               r"runs/pretrain\.final\.pt is damaged \(not a readable checkpoint"),
    "checkpoint-garbage": (lambda r, s: (r / "runs" / "base_sgd.ckpt").write_bytes(b"\x00" * 64),
                           r"runs/base_sgd\.ckpt is damaged \(not a readable checkpoint"),
    "checkpoint-truncated": (lambda r, s: (r / "runs" / "base_sgd.ckpt").write_bytes(
                                 (r / "runs" / "pretrain.final.pt").read_bytes()[:500]),
                             r"runs/base_sgd\.ckpt is damaged \(not a readable checkpoint"),
    "data-json-link-out": (lambda r, s: ((r / "data.json").unlink(), (r / "data.json").symlink_to(s)),
                           r"data\.json is damaged \(a symbolic link out of the run folder; normscope neither reads"),
    "progress-link-out": (lambda r, s: (r / "runs" / "base_sgd.progress").symlink_to(s),
                          r"runs/base_sgd\.progress is damaged \(a symbolic link out of the run folder"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_run_folder_is_one_line_and_changes_nothing(finished_design, tmp_path, monkeypatch, capsys, case):
    import re

    from test_lab_decisive import _tiny_sizes

    from normscope.lab import decisive

    monkeypatch.setitem(decisive.DESIGNS, "quick", _tiny_sizes())
    secret = tmp_path / "private.txt"
    secret.write_bytes(b"private key material\n")
    run_dir = tmp_path / "run"
    shutil.copytree(finished_design / "run", run_dir, symlinks=True)
    damage, pattern = DAMAGE[case]
    damage(run_dir, secret)
    before = _snapshot(run_dir)
    capsys.readouterr()
    assert run(_design_argv(finished_design, run_dir)) == 2
    line = _one_line_error(capsys)
    assert re.search(pattern, line), line
    assert line.startswith(f"error: --run-dir {run_dir}: ") and line.endswith("to start that part again")
    assert _snapshot(run_dir) == before and secret.read_bytes() == b"private key material\n"


def test_the_intact_run_folder_resumes_with_nothing_recomputed(finished_design, tmp_path, monkeypatch, capsys):
    """The check refuses only damage: the same folder, undamaged, finishes (every run served from its files)."""
    from test_lab_decisive import _tiny_sizes

    from normscope.lab import decisive

    monkeypatch.setitem(decisive.DESIGNS, "quick", _tiny_sizes())
    run_dir = tmp_path / "run"
    shutil.copytree(finished_design / "run", run_dir, symlinks=True)
    before = {k: v for k, v in _snapshot(run_dir).items() if k.startswith("runs/")}
    assert run(_design_argv(finished_design, run_dir)) == 0
    assert {k: v for k, v in _snapshot(run_dir).items() if k.startswith("runs/")} == before


def test_a_full_disk_during_a_design_is_one_line(finished_design, tmp_path, monkeypatch, capsys):
    """A 2 MB tmpfs: the encoder's weights (safetensors, 4 MB) do not fit; one line, exit 2, no traceback."""
    from test_lab_decisive import _tiny_sizes

    from normscope.lab import decisive

    monkeypatch.setitem(decisive.DESIGNS, "quick", _tiny_sizes())
    with tmpfs(tmp_path / "fs", "2m") as fs:
        capsys.readouterr()
        assert run(_design_argv(finished_design, fs / "run")) == 2
        line = _one_line_error(capsys)
        assert line == (f"error: cannot write --run-dir {fs / 'run'}: no space left on device; the runs finished so far "
                        "are kept (each file is written whole): free space and rerun to continue")
        assert not [p for p in (fs / "run").rglob("*") if p.name.startswith(".tiny-bert")]


def test_a_planted_progress_link_is_replaced_not_written_through(tmp_path, monkeypatch):
    """``--workers 2``: a worker reports its progress by replacing ``runs/<name>.progress`` atomically."""
    from normscope.lab import decisive, decisive_exec
    from normscope.lab.decisive_run import RunContext

    target = tmp_path / "private.txt"
    target.write_bytes(b"private\n")
    (tmp_path / "run" / "runs").mkdir(parents=True)
    spec = decisive.design_specs("pretrain", decisive.DESIGNS["quick"])[0]
    (tmp_path / "run" / "runs" / f"{spec.name}.progress").symlink_to(target)
    seen = []

    def fake_run_one(spec, ctx, progress):
        progress(7)
        p = Path(ctx.directory) / "runs" / f"{spec.name}.progress"
        seen.append((p.is_symlink(), p.read_text()))

    monkeypatch.setattr(decisive_exec, "run_one", fake_run_one)
    ctx = RunContext(tmp_path / "run", 8, 0.05, "matrices", 0, "cpu", key="k", checkpoint_every=500, data_key="d")
    ctx_d = {f: (str(getattr(ctx, f)) if f == "directory" else getattr(ctx, f)) for f in ctx.__dataclass_fields__}
    assert decisive_exec._worker(spec.to_dict(), ctx_d) == spec.name
    assert seen == [(False, "7")] and target.read_bytes() == b"private\n"
