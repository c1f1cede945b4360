"""``normscope embed`` end to end: real run, JSON summary, and every bad input of issue 2 (exit 2, no output)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from normscope.cli import run
from normscope.encoders import load_encoder


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")


def test_embed_jsonl_writes_table_and_summary(tmp_path, bundled_encoder, capsys):
    src = tmp_path / "docs.jsonl"
    rows = [
        {"_id": "a", "title": "Apples", "text": "are red."},
        {"_id": "b", "text": "Quantum chromodynamics describes the strong force."},
        {"_id": "c", "text": "the"},
    ]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out, js = tmp_path / "out.parquet", tmp_path / "summary.json"
    assert run(["embed", str(src), "-o", str(out), "--json", str(js), "--batch-size", "2"]) == 0
    tbl = pq.read_table(out)
    assert tbl.column_names == ["id", "text", "norm", "vector", "tokens"]
    assert tbl.column("id").to_pylist() == ["a", "b", "c"]
    texts = ["Apples are red.", rows[1]["text"], "the"]
    assert tbl.column("text").to_pylist() == texts
    vec = np.asarray(tbl.column("vector").to_pylist(), dtype=np.float32)
    ref = bundled_encoder.encode(texts)
    np.testing.assert_allclose(vec, ref, atol=1e-5)
    norms = np.linalg.norm(ref.astype(np.float64), axis=1)
    np.testing.assert_allclose(tbl.column("norm").to_numpy(), norms, rtol=1e-5)
    tok = bundled_encoder.hf_tokenizer  # tokens the model saw, with [CLS] and [SEP]
    assert tbl.column("tokens").to_pylist() == [len(tok(t)["input_ids"]) for t in texts]
    s = json.loads(js.read_text())
    assert s["n"] == 3 and s["dim"] == 384 and s["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert s["norm_mean"] == pytest.approx(norms.mean(), rel=1e-5)
    assert s["norm_std"] == pytest.approx(norms.std(ddof=1), rel=1e-4)
    assert s["norm_min"] == pytest.approx(norms.min(), rel=1e-5)
    assert s["norm_max"] == pytest.approx(norms.max(), rel=1e-5)
    assert s["fingerprint"]["dropped_modules"] == ["Normalize"] and s["cache"] is True
    assert "norm mean" in capsys.readouterr().out
    # the second run is served from the cache: no model call at all (the spy sits on the encoder the default
    # --runtime auto runs: the memoised one load_encoder returns, OpenVINO or torch)
    enc = load_encoder(runtime="auto")
    assert s["fingerprint"] == enc.fingerprint.to_dict()
    calls = []
    orig = enc.encode
    enc.encode = lambda t, **kw: calls.append(t) or orig(t, **kw)
    try:
        assert run(["embed", str(src), "-o", str(tmp_path / "again.parquet")]) == 0
    finally:
        del enc.encode
    assert calls == []
    # --no-cache recomputes
    enc.encode = lambda t, **kw: calls.append(t) or orig(t, **kw)
    try:
        assert run(["embed", str(src), "-o", str(tmp_path / "nocache.parquet"), "--no-cache"]) == 0
    finally:
        del enc.encode
    assert sum(len(c) for c in calls) == 3


def test_embed_precomputed_npy_input(tmp_path, rng):
    v = rng.normal(size=(4, 6)).astype(np.float32)
    np.save(tmp_path / "v.npy", v)
    out, js = tmp_path / "o.parquet", tmp_path / "o.json"
    assert run(["embed", str(tmp_path / "v.npy"), "-o", str(out), "--json", str(js)]) == 0
    s = json.loads(js.read_text())
    n = np.linalg.norm(v.astype(np.float64), axis=1)
    assert (s["n"], s["dim"]) == (4, 6)
    assert s["norm_max"] == pytest.approx(n.max(), rel=1e-6)
    assert s["fingerprint"]["backend"] == "precomputed"


def _write(path, data: bytes):
    path.write_bytes(data)
    return str(path)


BAD = {
    "missing input": (lambda d: str(d / "absent.txt"), [], "input does not exist"),
    "empty input": (lambda d: _write(d / "empty.txt", b""), [], "input file is empty"),
    "junk items with --junk-error": (lambda d: _write(d / "ws.txt", b"cat\n \ndog\n\t\n"), ["--junk-error"], r"^error: 2 junk items found .*: ids 1, 3 \(drop --junk-error"),
    "non-utf8": (lambda d: _write(d / "latin1.txt", "caf\u00e9\n".encode("latin-1")), [], r"not valid UTF-8: byte 0xe9 at byte offset 3 \(line 1\)"),
    "unknown format": (lambda d: _write(d / "doc.pdf", b"%PDF-1.4"), [], "unknown input format '.pdf'"),
    "unknown model": (
        lambda d: _write(d / "ok.txt", b"cat\n"),
        ["--model", "not/a-real-model"],
        "not/a-real-model.*HF_HUB_OFFLINE.*offline default is 'sentence-transformers/all-MiniLM-L6-v2'",
    ),
    "npy wrong shape": (lambda d: _npy(d / "flat.npy", np.zeros(5, np.float32)), [], r"shape \(5,\)"),
    "npy NaN": (lambda d: _npy(d / "nan.npy", np.array([[1.0, np.nan]], np.float32)), [], "NaN/Inf"),
}


def _npy(path, arr):
    np.save(path, arr)
    return str(path)


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exit_2_one_line_no_output(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    make, extra, pattern = BAD[case]
    inp = make(tmp_path)
    out, js = tmp_path / "out.parquet", tmp_path / "out.json"
    assert run(["embed", inp, "-o", str(out), "--json", str(js), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    import re

    assert re.search(pattern, err), err
    assert not out.exists() and not js.exists()
    assert not list(tmp_path.glob(".out.*"))  # no temp leftovers


def test_output_in_missing_directory(tmp_path, capsys):
    inp = _write(tmp_path / "ok.txt", b"cat\n")
    assert run(["embed", inp, "-o", str(tmp_path / "no" / "such" / "dir" / "o.parquet")]) == 2
    assert "output directory does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    assert run(["embed", inp, "-o", str(tmp_path / "o.parquet"), "--json", str(tmp_path / "nodir" / "s.json")]) == 2
    assert not (tmp_path / "o.parquet").exists()


def test_usage_errors(tmp_path):
    assert run(["embed", "-o", str(tmp_path / "o.parquet")]) == 2  # no INPUT
    assert run(["embed", _write(tmp_path / "a.txt", b"x\n"), "--batch-size", "0"]) == 2
    assert not (tmp_path / "o.parquet").exists()


def test_out_must_end_in_parquet(tmp_path, capsys):
    """``-o o.csv`` used to receive parquet bytes silently; now exit 2 before any work, nothing written."""
    inp = _write(tmp_path / "ok.txt", b"cat\n")
    for name in ("o.csv", "o", "o.parquet.tmp"):
        assert run(["embed", inp, "-o", str(tmp_path / name), "--model", "not/loaded"]) == 2
        err = capsys.readouterr().err.strip()
        # the suffix is checked before the model is resolved (the model name here would be a ModelError)
        assert err == f"error: -o/--out must be a .parquet file (the table is written as parquet), got '{tmp_path / name}'"
        assert not (tmp_path / name).exists()
    from normscope.encoders.embed import embed_input
    from normscope.errors import InputError

    with pytest.raises(InputError, match=r"must be a \.parquet file"):
        embed_input(inp, out=tmp_path / "o.csv")


def test_out_is_required_and_help_says_when_input_is(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inp = _write(tmp_path / "ok.txt", b"cat\n")
    assert run(["embed", inp]) == 2  # no silent default embeddings.parquet
    assert "--out" in capsys.readouterr().err
    assert not (tmp_path / "embeddings.parquet").exists()
    assert run(["embed", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "wordfreq:N" in help_text
    assert "embeddings.parquet" not in help_text and "[required]" in help_text
