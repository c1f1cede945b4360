"""--engine / --address / --workers: every bad combination stops before any work (exit 2, nothing written).

No Ray cluster is started here; the cases that reach Ray's import are skipped without the extra.
"""

from __future__ import annotations

import builtins
import json

import pytest

from normscope.cli import run


@pytest.fixture
def corpus(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"_id": "a", "text": "a cat"}) + "\n")
    return p


def _exit2(capsys, argv, pattern):
    import re

    assert run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    assert re.search(pattern, err), err


def test_local_engine_rejects_ray_options_and_unknown_engines(corpus, tmp_path, capsys):
    out = str(tmp_path / "o.parquet")
    _exit2(capsys, ["embed", str(corpus), "-o", out, "--engine", "spark"], r"unknown engine 'spark' \(choose from local, ray\)")
    _exit2(capsys, ["embed", str(corpus), "-o", out, "--address", "auto"], "--address and --workers apply to --engine ray")
    _exit2(capsys, ["embed", str(corpus), "-o", out, "--workers", "2"], "--address and --workers apply to --engine ray")
    assert not (tmp_path / "o.parquet").exists()


def test_missing_extra_is_a_one_line_error(corpus, tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    _exit2(capsys, ["embed", str(corpus), "-o", str(tmp_path / "o.parquet"), "--engine", "ray"],
           r"--engine ray needs Ray Data: pip install 'normscope\[ray\]'")


RAY_BAD = {
    "wordfreq": (["wordfreq:10"], None, "wordfreq:N runs on the local engine"),
    "text file": ([], "items.txt", r"the ray engine reads \.jsonl\[\.gz\], \.parquet .* or a BEIR directory"),
    "no ids": ([], "noid.jsonl", r"needs an 'id' or '_id' field"),
    "no text": ([], "notext.jsonl", r"records have no 'text' field"),
    "vectors": ([], "vectors.parquet", r"already holds vectors"),
    "out suffix": (["-o", "{d}/o.csv"], "c.jsonl", r"must name a \.parquet directory"),
    "out is a file": (["-o", "{d}/file.parquet"], "c.jsonl", r"exists and is a file"),
    "foreign dir": (["-o", "{d}/foreign.parquet"], "c.jsonl", r"does not hold a normscope shard directory"),
    "precomputed model": (["--model", "precomputed:x.npy"], "c.jsonl", "precomputed vectors need no engine"),
    "mps": (["--device", "mps"], "c.jsonl", "runs workers on cpu or cuda"),
}


@pytest.mark.parametrize("case", list(RAY_BAD))
def test_ray_engine_bad_input_before_any_work(case, corpus, tmp_path, capsys):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "items.txt").write_text("a cat\n")
    (tmp_path / "noid.jsonl").write_text('{"text": "a"}\n')
    (tmp_path / "notext.jsonl").write_text('{"_id": "1", "body": "a"}\n')
    pq.write_table(pa.table({"id": ["1"], "vector": [np.ones(3, np.float32)]}), tmp_path / "vectors.parquet")
    (tmp_path / "file.parquet").write_text("x")
    (tmp_path / "foreign.parquet").mkdir()
    (tmp_path / "foreign.parquet" / "mine.txt").write_text("keep me")
    extra, inp, pattern = RAY_BAD[case]
    extra = [a.format(d=tmp_path) for a in extra]
    argv = ["embed"] + ([str(tmp_path / inp)] if inp else []) + ["--engine", "ray"]
    if "-o" not in extra:
        argv += ["-o", str(tmp_path / "o.parquet")]
    _exit2(capsys, argv + extra, pattern)
    import ray

    assert not ray.is_initialized()  # refused before any cluster was started
    assert not (tmp_path / "o.parquet").exists() and (tmp_path / "foreign.parquet" / "mine.txt").exists()
