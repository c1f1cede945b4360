"""Every bad input of every command, in one table (issue 24): each row is a command line, the exit code and
the first (and only) line it must print; every file in the sandbox (inputs and earlier outputs) must be
byte-identical afterwards, and no file may appear.

The sandbox (built once per module) holds small real inputs: text/jsonl/csv items, ``.npy``/parquet vectors,
a flat faiss index, a BEIR folder, a TREC-style folder, pair files, earlier outputs and a report folder. No
row loads a model except where its check needs one (they use ``.npy`` vectors or stop before the model).
Rows run in-process through :func:`normscope.cli.run`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

from normscope.cli import run

D = "{d}"  # the sandbox, substituted in every argument


def _w(p: Path, data) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


class _Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _build(d: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    rng = np.random.default_rng(0)
    words = ["apple", "river", "quantum", "justice", "green", "music", "stone", "cloud", "violin", "harbour",
             "lantern", "meadow"]
    # --- items
    _w(d / "items.txt", "\n".join(words) + "\n")
    _w(d / "items.jsonl", _jsonl({"_id": f"w{i}", "text": w} for i, w in enumerate(words)))
    _w(d / "items.csv", "id,text\n" + "".join(f"w{i},{w}\n" for i, w in enumerate(words)))
    _w(d / "empty.txt", "")
    _w(d / "blank.txt", "  \n\n \t\n")
    _w(d / "latin1.txt", "caf\xe9\n".encode("latin-1"))
    _w(d / "bad.gz", b"not gzip at all")
    _w(d / "latin1.txt.gz", gzip.compress("na\xefve\n".encode("latin-1")))
    _w(d / "items.xyz", "a\nb\n")
    _w(d / "badjson.jsonl", '{"text": "ok"}\n{"text": "broken\n')
    _w(d / "notext.jsonl", '{"id": "a", "body": "x"}\n')
    _w(d / "list.jsonl", '["a", "b"]\n')
    _w(d / "dupid.jsonl", _jsonl([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]))
    _w(d / "partid.jsonl", _jsonl([{"id": "a", "text": "x"}, {"text": "y"}]))
    _w(d / "nocol.csv", "id,body\na,x\n")
    _w(d / "unterminated.csv", 'id,text\na,"hello\nb,world\nc,three\n')
    _w(d / "midquote.csv", 'id,text\na,"hello" there\nb,world\n')
    _w(d / "extra.csv", "id,text\na,hello, world\nb,x\n")
    _w(d / "dupid.csv", "id,text\na,x\na,y\n")
    _w(d / "items.json", '{"not": "an items file"}')
    (d / "emptydir").mkdir()
    (d / "dirout.parquet").mkdir()
    (d / "link.txt").symlink_to(d / "items.txt")
    os.link(d / "items.txt", d / "hard.txt")
    # --- vectors
    v = rng.normal(size=(20, 8)).astype(np.float32)
    np.save(d / "vec.npy", v)
    np.save(d / "vec4.npy", rng.normal(size=(3, 4)).astype(np.float32))
    np.save(d / "zeros.npy", np.zeros((5, 8), np.float32))
    np.save(d / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    _w(d / "pickled.npy", pickle.dumps({"a": 1}))
    np.save(d / "flat.npy", np.arange(5, dtype=np.float32))
    np.save(d / "cube.npy", np.zeros((2, 2, 2), np.float32))
    nan = v.copy()
    nan[3, 1] = np.nan
    np.save(d / "nan.npy", nan)
    np.save(d / "str.npy", np.array([["a", "b"]]))
    pq.write_table(pa.table({"id": [f"d{i}" for i in range(20)], "vector": [list(map(float, r)) for r in v]}),
                   d / "vec.parquet")
    pq.write_table(pa.table({"id": pa.array([], pa.string()), "vector": pa.array([], pa.list_(pa.float32()))}),
                   d / "empty.parquet")
    pq.write_table(pa.table({"id": ["a", "b"], "emb": [[1.0, 2.0], [3.0, 4.0]]}), d / "novector.parquet")
    pq.write_table(pa.table({"id": ["a", "b"], "vector": [[1.0, 2.0], [3.0]]}), d / "ragged.parquet")
    pq.write_table(pa.table({"id": ["a", "a"], "vector": [[1.0, 2.0], [3.0, 4.0]]}), d / "dupid.parquet")
    _w(d / "garbage.parquet", b"PAR1 this is not parquet")
    os.link(d / "vec.parquet", d / "vec_hard.parquet")
    (d / "vec_link.parquet").symlink_to(d / "vec.parquet")
    # --- a flat index over vec.npy (bare vectors: no model recorded)
    assert run(["index", "build", str(d / "vec.npy"), "-o", str(d / "idx"), "--kind", "flat"]) == 0
    _w(d / "notindex" / "x.txt", "x")
    # --- BEIR folder and bad variants
    docs = [{"_id": f"d{i}", "title": "", "text": f"document {w}"} for i, w in enumerate(words)]
    queries = [{"_id": f"q{i}", "text": f"query {w}"} for i, w in enumerate(words[:6])]
    good_qrels = "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(6))

    def beir(name, corpus=docs, qs=queries, qrels=good_qrels, split="test"):
        b = d / name
        if corpus is not None:
            _w(b / "corpus.jsonl", _jsonl(corpus) if isinstance(corpus, list) else corpus)
        if qs is not None:
            _w(b / "queries.jsonl", _jsonl(qs) if isinstance(qs, list) else qs)
        if qrels is not None:
            _w(b / "qrels" / f"{split}.tsv", qrels)

    beir("beir")
    beir("beir_nocorpus", corpus=None)
    beir("beir_noqueries", qs=None)
    beir("beir_dev", split="dev")
    beir("beir_frac", qrels="query-id\tcorpus-id\tscore\nq0\td0\t1.5\nq1\td1\t0.5\nq2\td2\t2.0\n")
    beir("beir_comment", qrels="query-id\tcorpus-id\tscore\n# judged by hand\nq0\td0\t1\n")
    beir("beir_2field", qrels="query-id\tcorpus-id\tscore\nq0\td0\nq1\td1\t1\n")
    beir("beir_nan", qrels="query-id\tcorpus-id\tscore\nq0\td0\tnan\n")
    beir("beir_word", qrels="query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\thigh\n")
    beir("beir_header", qrels="a\tb\tc\nq0\td0\t1\n")
    beir("beir_conflict", qrels="query-id\tcorpus-id\tscore\nq0\td0\t1\nq0\td0\t2\n")
    beir("beir_badjson", corpus='{"_id": "d0", "text": "x"}\n{"_id": \n')
    beir("beir_dupdoc", corpus=docs + [docs[0]])
    beir("beir_dupq", qs=queries + [queries[0]])
    beir("beir_latin1", qrels="query-id\tcorpus-id\tscore\nq0\td0\t1\n".encode() + "q1\td\xe91\t1\n".encode("latin-1"))
    beir("beir_emptycorpus", corpus="")
    # --- TREC-style folders (beir-convert)
    def trec(name, qrel="PLAIN-1 0 MED-1 2\nPLAIN-2 0 MED-2 1\n", docs_="MED-1\tfirst doc\nMED-2\tsecond doc\n",
             queries_="PLAIN-1\tfirst query\nPLAIN-2\tsecond query\n"):
        t = d / name
        t.mkdir()
        if docs_ is not None:
            _w(t / "test.docs", docs_)
        if queries_ is not None:
            _w(t / "test.titles.queries", queries_)
        if qrel is not None:
            _w(t / "test.2-1-0.qrel", qrel)

    trec("trec")
    trec("trec_nodocs", docs_=None)
    trec("trec_noqrel", qrel=None)
    trec("trec_noqueries", queries_=None)
    trec("trec_comment", qrel="# qid iter docid rel\nPLAIN-1 0 MED-1 2\n")
    trec("trec_3field", qrel="PLAIN-1 0 MED-1 2\nPLAIN-2 MED-2 1\n")
    trec("trec_frac", qrel="PLAIN-1 0 MED-1 1.5\n")
    trec("trec_notab", docs_="MED-1 first doc without a tab\n")
    trec("trec_emptyid", docs_="\tno id\n")
    trec("trec_twotexts", docs_="MED-1\tone\nMED-1\ttwo\n")
    _w(d / "nonempty" / "keep.txt", "x")
    # --- pairs
    _w(d / "pairs.tsv", "".join(f"{a}\tthe {a} and more\n" for a in words))
    _w(d / "onecol.tsv", "alpha\nbeta\n")
    _w(d / "emptymember.tsv", "a\tb\nc\t \n")
    _w(d / "simlex.txt", "word1\tword2\tPOS\tSimLex999\n" + "".join(
        f"{a}\t{b}\tN\t{(i * 7) % 10}.0\n" for i, (a, b) in enumerate(zip(words, words[1:] + words[:1]))))
    _w(d / "simlex_small.txt", "word1\tword2\tPOS\tSimLex999\napple\triver\tN\t1.0\n")
    _w(d / "simlex_badscore.txt", "word1\tword2\tPOS\tSimLex999\napple\triver\tN\thigh\n")
    # --- covariate files
    _w(d / "cov.csv", "item,value\n" + "".join(f"{w},{i}\n" for i, w in enumerate(words)))
    _w(d / "cov_nocol.csv", "word,score\napple,1\n")
    # --- earlier outputs that must survive every failure
    _w(d / "prev.json", '{"earlier": "output"}\n')
    _w(d / "prev.parquet", (d / "vec.parquet").read_bytes())
    _w(d / "prev.png", b"\x89PNG earlier figure")
    _w(d / "f_heat_drift.png", b"\x89PNG an earlier panel")
    # --- a finished report folder (a stage record and a page)
    _w(d / "rep" / "index.html", "<html>earlier report</html>")
    _w(d / "rep" / "summary.json", '{"earlier": "summary"}\n')
    _w(d / "rep" / "stages" / "norms.json", '{"stage": "norms", "status": "ok"}\n')
    # --- unsafe files
    torch.save({"format": 2, "extra": _Payload(d / "PAYLOAD_RAN")}, d / "payload.ckpt")
    _w(d / "garbage.ckpt", b"not a checkpoint")
    (d / "cifar").mkdir()
    _w(d / "cifar" / "test_batch", pickle.dumps({b"data": _Payload(d / "PAYLOAD_RAN")}, protocol=2))
    (d / "cifar_list").mkdir()
    _w(d / "cifar_list" / "test_batch", pickle.dumps([1, 2, 3]))
    np.save(d / "cifar_small.npy", np.zeros((10, 32, 32, 3), np.uint8))
    np.save(d / "cifar_float.npy", np.zeros((10, 32, 32, 3), np.float32))
    (d / "afile").write_text("x")
    _build_issue36(d, beir)


def _calibrator() -> dict:
    """A well-formed isotonic calibrator (two signals, thresholds) for a made-up model."""
    from normscope.table import ModelFingerprint

    fp = ModelFingerprint(name="someone/model", revision="r1", pooling="mean")
    return {"format": "normscope-calibrator", "version": 1, "signals": ["top1_score", "margin"], "method": "isotonic",
            "target": "top1_relevant", "scaler_mean": [0.5, 0.1], "scaler_scale": [0.1, 0.05], "coef": [1.2, 0.8],
            "intercept": -0.3, "map": {"x": [-2.0, 0.0, 2.0], "y": [0.1, 0.4, 0.9]},
            "model": {**fp.to_dict(), "key": fp.key}, "scorer": "cosine", "depth": 2,
            "fitted_on": {"dataset": "x", "split": "train", "queries": 40, "seed": 0},
            "thresholds": {"answer": {"threshold": 0.7, "precision": 0.8, "delta": 0.1},
                           "keep_documents": {"threshold": 0.4, "k": 10, "precision": 0.8}}}


def _build_issue36(d: Path, beir) -> None:
    """Issue 36's kinds: calibrators, odd grades, a tokenizer-less model folder, mixed report folders, run folders."""
    from normscope.encoders.bundled import bundled_model_path
    from normscope.report.stage import Section, StageRecord
    from normscope.table import ModelFingerprint
    from normscope.values import Status

    (d / "private").mkdir()
    _w(d / "private" / "id_key", "-----BEGIN PRIVATE KEY----- s3cr3t -----END PRIVATE KEY-----\n")
    # --- calibrators: one good, then one damaged field each
    good = _calibrator()
    _w(d / "cal" / "good.json", json.dumps(good))

    def cal(name, **edits):
        c = json.loads(json.dumps(good))
        for path, v in edits.items():
            node = c
            *head, last = path.split("__")
            for k in head:
                node = node[k]
            node[last] = v
        _w(d / "cal" / f"{name}.json", json.dumps(c))  # NaN written as the NaN token, as Python's json does

    cal("reversed_map", map__x=[2.0, 0.0, -2.0])
    cal("decreasing_map", map__y=[0.9, 0.4, 0.1])
    cal("map_above_one", map__y=[0.1, 0.4, 1.5])
    cal("nan_threshold", thresholds__answer__threshold=float("nan"))
    cal("string_threshold", thresholds__answer__threshold="0.7")
    cal("threshold_above_one", thresholds__answer__threshold=1.5)
    cal("target_k0", target="any_relevant_at_0")
    cal("target_unknown", target="best_guess")
    cal("signal_unknown", signals=["top1_score", "vibes"])
    cal("precision_fp16", model__precision="fp16")
    cal("key_edited", model__name="someone/other-model")
    cal("scale_zero", scaler_scale=[0.1, 0.0])
    cal("coef_short", coef=[1.2])
    cal("keep_k0", thresholds__keep_documents__k=0)
    cal("cosine_threshold_2", thresholds__keep_documents__threshold=2.0)
    cal("platt_nan", method="platt", map={"a": float("nan"), "b": 0.0})
    _w(d / "cal" / "a_list.json", "[1, 2, 3]")
    (d / "cal" / "link_out.json").symlink_to(d / "cal_elsewhere.json")
    _w(d / "cal_elsewhere.json", json.dumps(good))
    # --- odd qrels grades
    beir("beir_underscore", qrels="query-id\tcorpus-id\tscore\nq0\td0\t1\nq1\td1\t1_0\n")
    beir("beir_arabic_digit", qrels="query-id\tcorpus-id\tscore\nq0\td0\t\u0661\n")
    # --- a model folder without its vocabulary files (every other file of the bundled model linked)
    src = bundled_model_path()
    (d / "novocab").mkdir()
    for f in src.iterdir():
        if f.name not in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
            (d / "novocab" / f.name).symlink_to(f)
    # --- report folders: one whose kept norms section was made with another model; one with a planted lock link

    def norms_record(model: str) -> dict:
        fp = ModelFingerprint(name=model, revision="r1", pooling="mean")
        rec = StageRecord(stage="norms", status=Status.OK, key="k" * 64,
                          request={"request": {}, "model": fp.to_dict()},
                          sections={"norm_distribution": Section("norm_distribution", Status.OK)})
        from normscope._io import dumps

        return json.loads(dumps(rec))

    _w(d / "rep_mixed" / "stages" / "norms.json", json.dumps(norms_record("someone/other-model")))
    _w(d / "rep_mixed" / "index.html", "<html>earlier report</html>")
    _w(d / "rep_mixed" / ".normscope.lock", "")
    (d / "rep_link" / "stages").mkdir(parents=True)
    (d / "rep_link" / ".normscope.lock").symlink_to(d / "private" / "id_key")
    # --- damaged decisive-lab run folders
    _w(d / "run_design" / "design.json", "{not json")
    _w(d / "run_data" / "data.json", json.dumps({"probe_ids": [], "probe_texts": [], "train_left": "x",
                                                  "train_right": [], "eval_left": [], "eval_right": []}))
    _w(d / "run_lambda" / "lambda0.json", '{"key": "k", "median_lambda_rad_per_lambda": NaN}')
    _w(d / "run_json" / "runs" / "pretrain.json", '{"key": "k", "spec": {}, "timin')
    _w(d / "run_npz" / "runs" / "pretrain.npz", b"PK\x03\x04 half a record")
    _w(d / "run_ckpt" / "runs" / "base_sgd.ckpt", b"\x00" * 64)
    _w(d / "run_final" / "runs" / "pretrain.final.pt", b"PK\x03\x04" + b"\x00" * 40)
    (d / "run_progress" / "runs").mkdir(parents=True)
    (d / "run_progress" / "runs" / "base_sgd.progress").symlink_to(d / "private" / "id_key")
    # --- an index folder whose ids.parquet links to a parquet outside it
    (d / "idx_link").mkdir()
    for f in (d / "idx").iterdir():
        _w(d / "idx_link" / f.name, f.read_bytes())
    (d / "idx_link" / "ids.parquet").unlink()
    (d / "idx_link" / "ids.parquet").symlink_to(d / "vec.parquet")
    (d / "run_datalink").mkdir()
    (d / "run_datalink" / "data.json").symlink_to(d / "private" / "id_key")


def _rows():
    """(id, argv, exit code, first-line pattern): every row a bad input."""
    R = []

    def add(id_, argv, pattern, code=2):
        R.append(pytest.param(argv.split(" ") if isinstance(argv, str) else argv, code, pattern, id=id_))

    # ------------------------------------------------------------------ usage
    add("usage-unknown-command", "frobnicate", r"No such command 'frobnicate'")
    add("usage-unknown-option", "embed {d}/items.txt -o {d}/o.parquet --frob", r"No such option: --frob")
    add("usage-embed-no-out", "embed {d}/items.txt", r"Missing option '-o' / '--out'")
    add("usage-batch-size-0", "embed {d}/items.txt -o {d}/o.parquet --batch-size 0", r"--batch-size must be >= 1, got 0")
    add("usage-seed-not-int", "correlate --signal frequency --seed x", r"Invalid value for '--seed'")
    add("usage-lab-steps-1", "lab --steps 1", r"--steps must be >= 2, got 1")
    add("usage-retrieval-n-boot-5", "retrieval --dataset {d}/beir --n-boot 5", r"--n-boot must be >= 10, got 5")
    add("usage-retrieval-grade-scale-0", "retrieval --dataset {d}/beir --grade-scale 0", r"--grade-scale must be >= 1, got 0")
    add("usage-search-k-0", "index search {d}/idx {d}/vec.npy -k 0", r"Invalid value for '-k'")
    add("usage-retrieval-no-dataset", "retrieval", r"Missing option '--dataset'")
    # ------------------------------------------------------------------ embed: inputs
    add("embed-missing-input", "embed {d}/none.txt -o {d}/o.parquet", r"input does not exist: .*none\.txt")
    add("embed-empty-dir", "embed {d}/emptydir -o {d}/o.parquet", r"emptydir")
    add("embed-empty-file", "embed {d}/empty.txt -o {d}/o.parquet", r"input file is empty: .*empty\.txt")
    add("embed-blank-file", "embed {d}/blank.txt -o {d}/o.parquet", r"input file is empty|no items|junk")
    add("embed-latin1", "embed {d}/latin1.txt -o {d}/o.parquet", r"latin1\.txt.*(UTF-8|utf-8)")
    add("embed-bad-gzip", "embed {d}/bad.gz -o {d}/o.parquet", r"bad\.gz")
    add("embed-latin1-gz", "embed {d}/latin1.txt.gz -o {d}/o.parquet", r"latin1\.txt\.gz.*(UTF-8|utf-8)")
    add("embed-unknown-suffix", "embed {d}/items.xyz -o {d}/o.parquet", r"unknown input format '\.xyz'")
    add("embed-bad-json", "embed {d}/badjson.jsonl -o {d}/o.parquet", r"badjson\.jsonl.*line 2")
    add("embed-jsonl-no-text", "embed {d}/notext.jsonl -o {d}/o.parquet", r"notext\.jsonl.*text")
    add("embed-jsonl-not-object", "embed {d}/list.jsonl -o {d}/o.parquet", r"list\.jsonl.*line 1")
    add("embed-jsonl-dup-id", "embed {d}/dupid.jsonl -o {d}/o.parquet", r"duplicate id 'a' \(lines 1 and 2\)")
    add("embed-jsonl-part-id", "embed {d}/partid.jsonl -o {d}/o.parquet", r"some items have an id and others not; missing at line 2")
    add("embed-csv-no-text", "embed {d}/nocol.csv -o {d}/o.parquet", r"CSV has no 'text' column")
    add("embed-csv-unterminated", "embed {d}/unterminated.csv -o {d}/o.parquet", r"unterminated\.csv: line 2: a quoted field .* never closed")
    add("embed-csv-mid-quote", "embed {d}/midquote.csv -o {d}/o.parquet", r"midquote\.csv: malformed CSV in the record starting on line 2")
    add("embed-csv-extra-fields", "embed {d}/extra.csv -o {d}/o.parquet", r"extra\.csv: line 2: 3 fields but the header has 2")
    add("embed-csv-dup-id", "embed {d}/dupid.csv -o {d}/o.parquet", r"duplicate id 'a' \(lines 2 and 3\)")
    add("embed-wordfreq-bad-n", "embed wordfreq:ten -o {d}/o.parquet", r"wordfreq:N needs a positive integer N, got 'wordfreq:ten'")
    add("embed-no-input", "embed -o {d}/o.parquet", r"Missing argument 'INPUT'")
    # ------------------------------------------------------------------ embed: vectors
    add("embed-npy-object", "embed {d}/obj.npy -o {d}/o.parquet", r"obj\.npy holds an object \(pickled\) array; normscope never unpickles")
    add("embed-npy-pickle-bytes", "embed {d}/pickled.npy -o {d}/o.parquet", r"pickled\.npy is not a \.npy file")
    add("embed-npy-1d", "embed {d}/flat.npy -o {d}/o.parquet", r"flat\.npy has shape \(5,\)")
    add("embed-npy-3d", "embed {d}/cube.npy -o {d}/o.parquet", r"cube\.npy has shape \(2, 2, 2\)")
    add("embed-npy-nan", "embed {d}/nan.npy -o {d}/o.parquet", r"nan\.npy holds NaN/Inf values in 1 row, first rows \[3\]")
    add("embed-npy-str", "embed {d}/str.npy -o {d}/o.parquet", r"str\.npy has dtype <U1")
    add("embed-npy-all-zero", "embed {d}/zeros.npy -o {d}/o.parquet", r"every one of the 5 vectors in .*zeros\.npy is junk \(zero vector")
    add("embed-parquet-empty", "embed {d}/empty.parquet -o {d}/o.parquet", r"empty\.parquet has no rows")
    add("embed-parquet-no-vector", "embed {d}/novector.parquet -o {d}/o.parquet", r"novector\.parquet has no 'vector' column")
    add("embed-parquet-ragged", "embed {d}/ragged.parquet -o {d}/o.parquet", r"ragged\.parquet: 'vector' rows have differing")
    add("embed-parquet-garbage", "embed {d}/garbage.parquet -o {d}/o.parquet", r"cannot read parquet .*garbage\.parquet")
    add("embed-parquet-dup-id", "embed {d}/dupid.parquet -o {d}/o.parquet", r"dupid\.parquet: duplicate id 'a'")
    add("embed-npy-bf16", "embed {d}/vec.npy -o {d}/o.parquet --precision bf16", r"--precision bf16 applies to models")
    add("embed-missing-npy", "embed {d}/none.npy -o {d}/o.parquet", r"input does not exist: .*none\.npy")
    # ------------------------------------------------------------------ embed: outputs
    add("embed-out-csv", "embed {d}/items.txt -o {d}/o.csv", r"-o/--out must be a \.parquet file \(the table is written as parquet\), got '.*o\.csv'")
    add("embed-out-no-dir", "embed {d}/items.txt -o {d}/nodir/o.parquet", r"output directory does not exist: .*nodir")
    add("embed-out-is-dir", ["embed", "{d}/items.txt", "-o", "{d}/dirout.parquet"], r"output path is a directory", 2)
    add("embed-json-txt", "embed {d}/items.txt -o {d}/o.parquet --json {d}/items.txt", r"--json must be a \.json file \(the summary is written as JSON\)")
    add("embed-json-is-input", "embed {d}/items.json -o {d}/o.parquet --json {d}/items.json", r"--json .*items\.json is also the input INPUT: an output never replaces an input")
    add("embed-out-is-input", "embed {d}/vec.parquet -o {d}/vec.parquet", r"-o/--out .*vec\.parquet is also the input INPUT")
    add("embed-out-symlink-to-input", "embed {d}/vec.parquet -o {d}/vec_link.parquet", r"-o/--out .*vec_link\.parquet is also the input INPUT")
    add("embed-out-hardlink-to-input", "embed {d}/vec.parquet -o {d}/vec_hard.parquet", r"-o/--out .*vec_hard\.parquet is also the input INPUT")
    add("embed-out-json-same", "embed {d}/vec.npy -o {d}/same.parquet --json {d}/same.parquet", r"--json must be a \.json file")
    add("embed-out-over-prev-bad-input", "embed {d}/empty.txt -o {d}/prev.parquet --json {d}/prev.json", r"input file is empty")
    # ------------------------------------------------------------------ embed: model options
    add("embed-precision-fp16", "embed {d}/items.txt -o {d}/o.parquet --precision fp16", r"unknown precision 'fp16'")
    add("embed-backend-bogus", "embed {d}/items.txt -o {d}/o.parquet --backend bogus", r"backend")
    add("embed-pooling-st", "embed {d}/items.txt -o {d}/o.parquet --backend sentence-transformers --pooling cls",
        r"pooling='cls' applies to the huggingface backend only")
    add("embed-pooling-bogus", "embed {d}/items.txt -o {d}/o.parquet --model hf:x --pooling max", r"unknown pooling 'max'")
    add("embed-model-missing-path", "embed {d}/items.txt -o {d}/o.parquet --model {d}/nomodel", r"nomodel")
    add("embed-model-not-model-dir", "embed {d}/items.txt -o {d}/o.parquet --model {d}/emptydir", r"emptydir")
    add("embed-engine-bogus", "embed {d}/items.txt -o {d}/o.parquet --engine spark", r"engine")
    add("embed-device-bogus", "embed {d}/items.txt -o {d}/o.parquet --device tpu9", r"unknown device 'tpu9'")
    add("embed-device-cuda", "embed {d}/items.txt -o {d}/o.parquet --device cuda", r"CUDA is not available")
    add("embed-workers-local", "embed {d}/items.txt -o {d}/o.parquet --workers 2", r"--workers")
    add("embed-model-hub-offline", "embed {d}/items.txt -o {d}/o.parquet --model nobody/no-such-model-xyz", r"no-such-model-xyz")
    # ------------------------------------------------------------------ probe
    P = "probe {d}/items.txt --pairs {d}/pairs.tsv"
    add("probe-issue-json-fig-same", P + " --json {d}/o.json --fig {d}/o.json", r"--fig must be a \.png, \.pdf or \.svg file")
    add("probe-issue-out-fig-same", P + " -o {d}/o.parquet --fig {d}/o.parquet", r"--fig must be a \.png, \.pdf or \.svg file")
    add("probe-fig-over-panel-input", "probe {d}/f_heat_drift.png --pairs {d}/pairs.tsv --fig {d}/f.png",
        r"--fig \(heat/drift panel\) .*f_heat_drift\.png is also the input ITEMS")
    add("probe-fig-is-input-pairs", "probe {d}/items.txt --pairs {d}/prev.png --fig {d}/prev.png", r"--fig .*prev\.png is also the input --pairs")
    add("probe-out-csv", P + " -o {d}/o.csv", r"-o/--out must be a \.parquet file")
    add("probe-json-txt", P + " --json {d}/o.txt", r"--json must be a \.json file")
    add("probe-fig-txt", P + " --fig {d}/o.txt", r"--fig must be a \.png, \.pdf or \.svg file")
    add("probe-fig-no-dir", P + " --fig {d}/nodir/f.png", r"output directory does not exist")
    add("probe-json-is-items", "probe {d}/items.json --pairs {d}/pairs.tsv --json {d}/items.json", r"--json .*items\.json is also the input ITEMS")
    add("probe-batches-1", P + " --batches 1", r"--batches must be >= 2, got 1")
    add("probe-batch-size-1", P + " --batch-size 1", r"--batch-size must be >= 2, got 1")
    add("probe-tau-0", P + " --tau 0", r"--tau must be > 0.0, got 0.0")
    add("probe-tau-neg", P + " --tau -1", r"--tau must be > 0.0, got -1.0")
    add("probe-tau-inf", P + " --tau inf", r"--tau must be a finite number, got inf")
    add("probe-lr-nan", P + " --lr nan", r"--lr must be > 0.0, got nan")
    add("probe-wd-neg", P + " --weight-decay -0.1", r"--weight-decay must be >= 0")
    add("probe-decay-mask", P + " --decay-mask some", r"unknown decay mask 'some'; choose from matrices, all")
    add("probe-fd-dtype", P + " --fd-dtype float16", r"unknown fd dtype 'float16'; choose from float64, float32, auto")
    add("probe-precision", P + " --precision fp16", r"unknown precision 'fp16'")
    add("probe-n-boot-0", P + " --n-boot 0", r"--n-boot must be >= 1, got 0")
    add("probe-chunk-0", P + " --chunk-size 0", r"--chunk-size must be >= 1, got 0")
    add("probe-precomputed-model", P + " --model {d}/vec.npy", r"precomputed vectors cannot be probed")
    add("probe-items-missing", "probe {d}/none.txt --pairs {d}/pairs.tsv", r"input does not exist: .*none\.txt")
    add("probe-items-empty", "probe {d}/empty.txt --pairs {d}/pairs.tsv", r"input file is empty")
    add("probe-items-latin1", "probe {d}/latin1.txt --pairs {d}/pairs.tsv", r"latin1\.txt")
    add("probe-items-csv-unterminated", "probe {d}/unterminated.csv --pairs {d}/pairs.tsv", r"line 2: a quoted field")
    add("probe-wordfreq-0", "probe wordfreq:0 --pairs {d}/pairs.tsv", r"wordfreq:N needs a positive integer N, got 'wordfreq:0'")
    add("probe-wordfreq-x", "probe wordfreq:x --pairs {d}/pairs.tsv", r"wordfreq:N needs a positive integer N")
    add("probe-pairs-missing", "probe {d}/items.txt --pairs {d}/none.tsv", r"pair file not found: .*none\.tsv")
    add("probe-pairs-unknown", "probe {d}/items.txt --pairs glove", r"unknown pair source 'glove'")
    add("probe-pairs-one-col", "probe {d}/items.txt --pairs {d}/onecol.tsv", r"onecol\.tsv: line 1 has 1 column")
    add("probe-pairs-empty", "probe {d}/items.txt --pairs {d}/empty.txt", r"pair file is empty")
    add("probe-pairs-empty-member", "probe {d}/items.txt --pairs {d}/emptymember.tsv", r"line 2 has an empty member")
    add("probe-pairs-beir-missing", "probe {d}/items.txt --pairs beir:{d}/nobeir", r"nobeir")
    # ------------------------------------------------------------------ correlate
    C = "correlate --signal frequency --items {d}/items.txt"
    add("correlate-unknown-signal", "correlate --signal happiness", r"unknown signal 'happiness'")
    add("correlate-unknown-control", C + " --control mood", r"unknown control \['mood'\]")
    add("correlate-n-neg", "correlate --signal frequency --n-items -1", r"--n-items must be >= 0, got -1")
    add("correlate-measure", "correlate --signal specificity --measure height", r"unknown measure 'height'; choose from min_depth")
    add("correlate-dataset", "correlate --signal uncertainty --dataset mnist", r"unknown dataset 'mnist'; choose from chaosnli, cifar10h")
    add("correlate-uncertainty-items", "correlate --signal uncertainty --items {d}/items.txt", r"needs human labels for user items")
    add("correlate-by-txt", C + " --by source", r"--by source: the items file .*items\.txt has no columns")
    add("correlate-by-missing-col", "correlate --signal frequency --items {d}/items.csv --by source", r"--by source: no such column")
    add("correlate-by-is-control", "correlate --signal frequency --items {d}/items.csv --by length --control length", r"--by")
    add("correlate-out-csv", C + " -o {d}/o.csv", r"-o/--out must be a \.parquet file")
    add("correlate-json-txt", C + " --json {d}/o.txt", r"--json must be a \.json file")
    add("correlate-fig-txt", C + " --fig {d}/x.txt", r"--fig must be a \.png, \.pdf or \.svg file")
    add("correlate-fig-json", C + " --fig {d}/prev.json", r"--fig must be a \.png, \.pdf or \.svg file")
    add("correlate-fig-over-input", "correlate --signal frequency --items {d}/prev.png --fig {d}/prev.png", r"--fig .*prev\.png is also the input --items")
    add("correlate-json-is-items", "correlate --signal frequency --items {d}/items.json --json {d}/items.json", r"--json .*items\.json is also the input --items")
    add("correlate-json-is-covariates", "correlate --signal frequency --covariate-file {d}/prev.json --json {d}/prev.json", r"is also the input --covariate-file")
    add("correlate-fig-two-models", C + " --model a --model b --fig {d}/f.txt", r"--fig \(a\) must be a \.png")
    add("correlate-items-missing", "correlate --signal frequency --items {d}/none.txt", r"input does not exist")
    add("correlate-items-empty", "correlate --signal frequency --items {d}/empty.txt", r"input file is empty")
    add("correlate-items-latin1", "correlate --signal frequency --items {d}/latin1.txt", r"latin1\.txt")
    add("correlate-items-unterminated", "correlate --signal frequency --items {d}/unterminated.csv", r"line 2: a quoted field")
    add("correlate-items-extra", "correlate --signal frequency --items {d}/extra.csv", r"3 fields but the header has 2")
    add("correlate-cov-missing", "correlate --signal frequency --covariate-file {d}/none.csv", r"none\.csv")
    add("correlate-cov-no-cols", "correlate --signal frequency --covariate-file {d}/cov_nocol.csv", r"cov_nocol\.csv")
    add("correlate-cifar-no-images", "correlate --signal uncertainty --dataset cifar10h", r"needs the CIFAR-10 test images \(--images\)")
    add("correlate-cifar-payload", "correlate --signal uncertainty --dataset cifar10h --images {d}/cifar",
        r"names a Python object the CIFAR-10 format never holds \((io|builtins)\.open\); normscope never runs code")
    add("correlate-cifar-list", "correlate --signal uncertainty --dataset cifar10h --images {d}/cifar_list",
        r"is not a CIFAR-10 python batch: it holds a list")
    add("correlate-cifar-npy-shape", "correlate --signal uncertainty --dataset cifar10h --images {d}/cifar_small.npy",
        r"must have shape \(10000, 32, 32, 3\), got \(10, 32, 32, 3\)")
    add("correlate-cifar-npy-float", "correlate --signal uncertainty --dataset cifar10h --images {d}/cifar_float.npy",
        r"must be uint8 \(0-255\), got float32")
    add("correlate-cifar-npy-pickle", "correlate --signal uncertainty --dataset cifar10h --images {d}/pickled.npy",
        r"pickled\.npy is not a numeric \.npy array")
    add("correlate-cifar-missing", "correlate --signal uncertainty --dataset cifar10h --images {d}/none.npy", r"CIFAR-10 test images not found")
    add("correlate-cifar-empty-dir", "correlate --signal uncertainty --dataset cifar10h --images {d}/emptydir", r"emptydir")
    add("correlate-precision", C + " --precision fp16", r"unknown precision 'fp16'")
    add("correlate-n-perm-neg", C + " --n-perm -1", r"--n-perm must be >= 0, got -1")
    # ------------------------------------------------------------------ similarity
    S = "similarity --dataset {d}/simlex.txt"
    add("similarity-missing", "similarity --dataset {d}/none.txt", r"none\.txt")
    add("similarity-empty", "similarity --dataset {d}/empty.txt", r"empty\.txt")
    add("similarity-latin1", "similarity --dataset {d}/latin1.txt", r"latin1\.txt")
    add("similarity-too-few", "similarity --dataset {d}/simlex_small.txt", r"simlex_small\.txt")
    add("similarity-bad-score", "similarity --dataset {d}/simlex_badscore.txt", r"simlex_badscore\.txt")
    add("similarity-format", S + " --format xml", r"xml")
    add("similarity-fit-format", S + " --fit {d}/simlex_small.txt --fit-format xml", r"xml")
    add("similarity-scorer", S + " --scorer cosine,manhattan", r"manhattan")
    add("similarity-fit-is-dataset", S + " --fit {d}/simlex.txt", r"--fit .*simlex\.txt is the evaluated file")
    add("similarity-fit-missing", S + " --fit {d}/none.txt", r"none\.txt")
    add("similarity-out-csv", S + " -o {d}/o.csv", r"-o/--out must be a \.parquet file")
    add("similarity-json-txt", S + " --json {d}/o.txt", r"--json must be a \.json file")
    add("similarity-fig-txt", S + " --fig {d}/o.txt", r"--fig must be a \.png, \.pdf or \.svg file")
    add("similarity-json-is-dataset", "similarity --dataset {d}/prev.json --json {d}/prev.json", r"is also the input --dataset")
    add("similarity-fig-is-fit", S + " --fit {d}/prev.png --fig {d}/prev.png", r"--fig .*prev\.png is also the input --fit")
    add("similarity-n-boot-neg", S + " --n-boot -1", r"--n-boot must be >= 0, got -1")
    add("similarity-precision", S + " --precision fp16", r"unknown precision 'fp16'")
    # ------------------------------------------------------------------ retrieval
    B = "retrieval --dataset {d}/beir --fit-split cv"
    add("retrieval-missing", "retrieval --dataset {d}/nobeir", r"dataset not found: .*nobeir")
    add("retrieval-not-beir", "retrieval --dataset {d}/emptydir", r"emptydir: no corpus\.jsonl")
    add("retrieval-no-corpus", "retrieval --dataset {d}/beir_nocorpus", r"no corpus\.jsonl or corpus\.jsonl\.gz")
    add("retrieval-no-queries", "retrieval --dataset {d}/beir_noqueries", r"no queries\.jsonl or queries\.jsonl\.gz")
    add("retrieval-no-test-split", "retrieval --dataset {d}/beir_dev --fit-split cv", r"no qrels split 'test'|no qrels/test\.tsv")
    add("retrieval-frac-grades", B.replace("beir ", "beir_frac "), r"beir_frac/qrels/test\.tsv:2: grade '1\.5' is not an integer \(2 such lines\).*--grade-scale 2")
    add("retrieval-frac-grades-scale-3", B.replace("beir ", "beir_frac ") + " --grade-scale 3", r"grade '1\.5' is not an integer times 3.*--grade-scale 6")
    add("retrieval-qrels-comment", B.replace("beir ", "beir_comment "), r"test\.tsv:2: a comment line \('#'\); qrels files have no comments")
    add("retrieval-qrels-2-fields", B.replace("beir ", "beir_2field "), r"test\.tsv:2: expected 3 tab-separated fields \(query-id, corpus-id, score\), got 2")
    add("retrieval-qrels-nan", B.replace("beir ", "beir_nan "), r"test\.tsv:2: score 'nan' is not a finite number")
    add("retrieval-qrels-word", B.replace("beir ", "beir_word "), r"test\.tsv:3: score 'high' is not a number")
    add("retrieval-qrels-header-unknown", B.replace("beir ", "beir_header "), r"test\.tsv:1: score 'c' is not a number")
    add("retrieval-qrels-conflict", B.replace("beir ", "beir_conflict "), r"test\.tsv:3: query 'q0' judges document 'd0' twice with scores 1 and 2")
    add("retrieval-qrels-latin1", B.replace("beir ", "beir_latin1 "), r"test\.tsv")
    add("retrieval-corpus-bad-json", B.replace("beir ", "beir_badjson "), r"corpus\.jsonl")
    add("retrieval-corpus-dup", B.replace("beir ", "beir_dupdoc "), r"duplicate document id 'd0'")
    add("retrieval-queries-dup", B.replace("beir ", "beir_dupq "), r"duplicate query id 'q0'")
    add("retrieval-corpus-empty", B.replace("beir ", "beir_emptycorpus "), r"empty")
    add("retrieval-fit-equals-split", "retrieval --dataset {d}/beir --fit-split test", r"fit split 'test' equals the evaluation split")
    add("retrieval-fit-split-unknown", "retrieval --dataset {d}/beir --fit-split nope", r"has no qrels split 'nope'")
    add("retrieval-scorer", B + " --scorer manhattan", r"manhattan")
    add("retrieval-alpha-nan", B + " --alpha nan", r"alpha=nan is not finite")
    add("retrieval-relevance", B + " --relevance fuzzy", r"unknown relevance 'fuzzy'")
    add("retrieval-out-csv", B + " -o {d}/o.csv", r"-o/--out must be a \.parquet file")
    add("retrieval-json-txt", B + " --json {d}/o.txt", r"--json must be a \.json file")
    add("retrieval-json-no-dir", B + " --json {d}/nodir/o.json", r"output directory does not exist")
    add("retrieval-precision", B + " --precision fp16", r"unknown precision 'fp16'")
    add("retrieval-engine", B + " --engine spark", r"engine")
    add("retrieval-max-queries-0", B + " --max-queries 0", r"--max-queries must be >= 1, got 0")
    add("retrieval-max-docs-1", B + " --max-docs 1", r"--max-docs must be >= 2, got 1")
    # ------------------------------------------------------------------ beir-convert
    add("convert-src-missing", "beir-convert {d}/notrec {d}/out_beir", r"TREC-style source folder not found")
    add("convert-no-docs", "beir-convert {d}/trec_nodocs {d}/out_beir", r"no \*\.docs file")
    add("convert-no-qrel", "beir-convert {d}/trec_noqrel {d}/out_beir", r"no \*\.qrel file")
    add("convert-no-queries", "beir-convert {d}/trec_noqueries {d}/out_beir", r"has test\.2-1-0\.qrel but no test\.titles\.queries")
    add("convert-qrel-comment", "beir-convert {d}/trec_comment {d}/out_beir", r"test\.2-1-0\.qrel:1: a comment line \('#'\)")
    add("convert-qrel-3-fields", "beir-convert {d}/trec_3field {d}/out_beir",
        r"test\.2-1-0\.qrel:2: expected 4 whitespace-separated fields \(qid iteration docid rel\), got 3")
    add("convert-qrel-frac", "beir-convert {d}/trec_frac {d}/out_beir", r"test\.2-1-0\.qrel:1: grade '1\.5' is not an integer")
    add("convert-docs-no-tab", "beir-convert {d}/trec_notab {d}/out_beir", r"test\.docs:1: expected ID<TAB>TEXT")
    add("convert-docs-empty-id", "beir-convert {d}/trec_emptyid {d}/out_beir", r"test\.docs:1: empty id")
    add("convert-docs-two-texts", "beir-convert {d}/trec_twotexts {d}/out_beir", r"test\.docs:2: id 'MED-1' appears twice with different texts")
    add("convert-variant", "beir-convert {d}/trec {d}/out_beir --qrels 3-2-1", r"no \{split\}\.3-2-1\.qrel file")
    add("convert-out-nonempty", "beir-convert {d}/trec {d}/nonempty", r"output folder exists and is not empty")
    add("convert-out-is-src", "beir-convert {d}/trec {d}/trec", r"output folder exists and is not empty")
    add("convert-out-file", "beir-convert {d}/trec {d}/afile", r"output folder exists and is not empty|is a file")
    add("convert-out-no-parent", "beir-convert {d}/trec {d}/nodir/out", r"output directory does not exist")
    add("convert-src-is-file", "beir-convert {d}/afile {d}/out_beir", r"TREC-style source folder not found")
    # ------------------------------------------------------------------ index build
    IB = "index build {d}/vec.npy -o {d}/idx2"
    add("build-vectors-missing", "index build {d}/none.npy -o {d}/idx2", r"none\.npy")
    add("build-vectors-txt", "index build {d}/items.txt -o {d}/idx2", r"items\.txt")
    add("build-vectors-object", "index build {d}/obj.npy -o {d}/idx2", r"obj\.npy")
    add("build-vectors-pickle", "index build {d}/pickled.npy -o {d}/idx2", r"pickled\.npy")
    add("build-vectors-empty-parquet", "index build {d}/empty.parquet -o {d}/idx2", r"empty\.parquet")
    add("build-all-zero", "index build {d}/zeros.npy -o {d}/idx2", r"every one of the 5 document vectors is junk \(zero vector")
    add("build-out-file", "index build {d}/vec.npy -o {d}/afile", r"afile exists and is a file")
    add("build-out-foreign-dir", "index build {d}/vec.npy -o {d}/nonempty", r"nonempty is a directory that does not hold a normscope index")
    add("build-out-no-parent", "index build {d}/vec.npy -o {d}/nodir/idx", r"output directory does not exist")
    add("build-out-holds-input", "index build {d}/idx/ids.parquet -o {d}/idx", r"-o/--out .*idx holds the input VECTORS|VECTORS")
    add("build-json-inside-out", IB.replace("idx2", "idx") + " --json {d}/idx/summary.json", r"--json .*summary\.json lies inside -o/--out .*idx, which is replaced as a whole")
    add("build-json-txt", IB + " --json {d}/o.txt", r"--json must be a \.json file")
    add("build-scorer", IB + " --scorer manhattan", r"manhattan")
    add("build-alpha-cosine", IB + " --alpha 0.1", r"--alpha applies to the inverse_norm scorer, not cosine")
    add("build-beta-inverse", IB + " --scorer inverse_norm --beta 1", r"--beta applies to the power scorer, not inverse_norm")
    add("build-inverse-no-alpha", IB + " --scorer inverse_norm", r"scorer inverse_norm needs --alpha")
    add("build-kind", IB + " --kind lsh", r"lsh")
    add("build-nlist-too-big", IB + " --kind ivf --nlist 500", r"nlist")
    add("build-m-0", IB + " --m 0", r"Invalid value for '--m'")
    add("build-threads-0", IB + " --threads 0", r"Invalid value for '--threads'")
    # ------------------------------------------------------------------ index search
    Q = "index search {d}/idx {d}/vec.npy"
    add("search-issue-out-is-queries", "index search {d}/idx {d}/vec.parquet -o {d}/vec.parquet", r"-o/--out .*vec\.parquet is also the input QUERIES")
    add("search-out-is-queries-link", "index search {d}/idx {d}/vec.parquet -o {d}/vec_link.parquet", r"is also the input QUERIES")
    add("search-index-missing", "index search {d}/noidx {d}/vec.npy", r"noidx is not a normscope index directory")
    add("search-not-index", "index search {d}/notindex {d}/vec.npy", r"notindex is not a normscope index directory")
    add("search-dim", "index search {d}/idx {d}/vec4.npy", r"vec4\.npy holds vectors of dimension 4, the index 8")
    add("search-all-zero", "index search {d}/idx {d}/zeros.npy", r"every one of the 5 query vectors in .*zeros\.npy is junk")
    add("search-queries-missing", "index search {d}/idx {d}/none.npy", r"none\.npy")
    add("search-queries-text-bare-index", "index search {d}/idx {d}/items.txt", r"this index records no model")
    add("search-out-csv", Q + " -o {d}/o.csv", r"-o/--out must be a \.parquet file")
    add("search-json-txt", Q + " --json {d}/o.txt", r"--json must be a \.json file")
    add("search-nprobe-flat", Q + " --nprobe 4", r"nprobe")
    add("search-ef-flat", Q + " --ef-search 4", r"ef")
    # ------------------------------------------------------------------ lab
    add("lab-encoder", "lab --encoder cnn", r"--encoder must be table, mlp, transformer or tower, got 'cnn'")
    add("lab-optimizer", "lab --optimizer lbfgs", r"lbfgs")
    add("lab-lr-inf", "lab --lr inf", r"--lr must be a finite number, got inf")
    add("lab-lr-nan", "lab --lr nan", r"--lr must be > 0.0, got nan")
    add("lab-lr-neg", "lab --lr -1", r"--lr must be > 0.0, got -1.0")
    add("lab-wd-inf", "lab --weight-decay inf", r"--weight-decay must be a finite number, got inf")
    add("lab-wd-neg", "lab --weight-decay -1", r"--weight-decay must be >= 0.0, got -1.0")
    add("lab-lr-wd", "lab --lr 10 --weight-decay 1", r"lr \* weight_decay must be < 1")
    add("lab-burn-in", "lab --steps 10 --burn-in 10", r"--burn-in must be < --steps, got 10 >= 10")
    add("lab-data", "lab --dataset imagenet", r"unknown dataset 'imagenet'; choose from synthetic, wordnet")
    add("lab-estimator", "lab --estimator kalman", r"unknown estimator 'kalman'; choose from snapshot, trajectory")
    add("lab-model-table", "lab --model x", r"--model does not apply to --encoder table \(it applies to --encoder transformer and --encoder tower\)")
    add("lab-checkpoint-table", "lab --checkpoint {d}/c.ckpt", r"--checkpoint does not apply to --encoder table \(it applies to --encoder transformer\)")
    add("lab-device-table", "lab --device cuda", r"the table and mlp labs run on cpu only")
    add("lab-out-csv", "lab -o {d}/o.csv", r"-o/--out must be a \.parquet file")
    add("lab-json-txt", "lab --json {d}/o.txt", r"--json must be a \.json file")
    add("lab-fig-missing-dir", "lab --fig {d}/nofigs/f.png", r"output directory does not exist: .*nofigs")
    add("lab-fig-not-a-figure", "lab --fig {d}/afile", r"--fig must be")
    T = "lab --encoder transformer --pairs {d}/pairs.tsv --steps 2 --batch-size 4 --probe-items 3 --probe-batches 2"
    add("lab-checkpoint-payload", T + " --checkpoint {d}/payload.ckpt",
        r"--checkpoint .*payload\.ckpt names Python objects a checkpoint never holds .*never runs code from a file")
    add("lab-checkpoint-garbage", T + " --checkpoint {d}/garbage.ckpt", r"garbage\.ckpt is not readable as a normscope lab checkpoint")
    add("lab-checkpoint-dir", T + " --checkpoint {d}/emptydir", r"output path is a directory|emptydir")
    add("lab-checkpoint-is-json", T + " --checkpoint {d}/prev.json --json {d}/prev.json", r"--checkpoint and --json name the same file|--json")
    add("lab-transformer-data", "lab --encoder transformer --dataset wordnet", r"--dataset applies to --encoder table/mlp only")
    add("lab-transformer-precision", T + " --precision fp16", r"fp16")
    add("lab-transformer-decay-mask", T + " --decay-mask some", r"decay mask")
    add("lab-transformer-probe-items-missing", "lab --encoder transformer --probe-items {d}/none.txt", r"none\.txt")
    add("lab-transformer-tau-0", T + " --tau 0", r"tau")
    add("lab-transformer-optimizer", T + " --optimizer lbfgs", r"lbfgs")
    add("lab-transformer-pairs-missing", "lab --encoder transformer --pairs {d}/none.tsv", r"none\.tsv")
    add("lab-transformer-json-is-pairs", "lab --encoder transformer --pairs {d}/prev.json --json {d}/prev.json", r"is also the input --pairs")
    # ------------------------------------------------------------------ report
    add("report-issue-items-empty-over-report", "report --out {d}/rep --only norms --items {d}/empty.txt", r"input file is empty: .*empty\.txt")
    add("report-issue-items-latin1-over-report", "report --out {d}/rep --only norms --items {d}/latin1.txt", r"latin1\.txt")
    add("report-items-unterminated", "report --out {d}/rep --only norms --items {d}/unterminated.csv", r"line 2: a quoted field")
    add("report-items-missing", "report --out {d}/rep --items {d}/none.txt", r"--items file does not exist")
    add("report-items-npy-object", "report --out {d}/rep --only norms --items {d}/obj.npy", r"obj\.npy holds an object")
    add("report-items-zero-npy", "report --out {d}/rep --only norms --items {d}/zeros.npy", r"every one of the 5 vectors")
    add("report-out-file", "report --out {d}/afile", r"-o/--out .*afile exists and is a file")
    add("report-out-no-parent", "report --out {d}/nodir/rep", r"output directory does not exist")
    add("report-json-txt", "report --out {d}/rep --json {d}/o.txt", r"--json must be a \.json file")
    add("report-json-is-summary", "report --out {d}/rep --json {d}/rep/summary.json", r"name the same file")
    add("report-json-is-items", "report --out {d}/rep2 --items {d}/prev.json --json {d}/prev.json", r"is also the input --items")
    add("report-only", "report --out {d}/rep --only nonsense", r"nonsense")
    add("report-signals", "report --out {d}/rep --signals mood", r"unknown signal.* 'mood'; choose from frequency")
    add("report-data-missing", "report --out {d}/rep --data {d}/nodata", r"--data directory does not exist")
    add("report-precision", "report --out {d}/rep --precision fp16", r"unknown precision 'fp16'")
    add("report-engine", "report --out {d}/rep --engine spark", r"engine")
    add("report-words-small", "report --out {d}/rep --items wordfreq:0", r"wordfreq:N needs a positive integer N")
    # ------------------------------------------------------------------ data
    add("data-fetch-nothing", "data fetch", r"name the datasets to fetch, or --all")
    add("data-fetch-both", "data fetch scifact --all", r"give dataset names or --all, not both")
    add("data-fetch-unknown", "data fetch imagenet", r"imagenet")
    add("data-fetch-offline", "--offline data fetch scifact", r"drop --offline")
    add("data-path-unknown", "data path imagenet", r"imagenet")
    add("data-list-json-txt", "data list --json {d}/o.txt", r"--json must be a \.json file")
    add("data-list-json-no-dir", "data list --json {d}/nodir/o.json", r"output directory does not exist")
    add("data-list-json-dir", ["data", "list", "--json", "{d}/dirout.parquet"], r"--json must be a \.json file")
    _rows_issue36(add)
    return R


def _rows_issue36(add) -> None:
    """Issue 36: calibrators, odd grades, tokenizer-less model, mixed or linked report folders, damaged run folders."""
    A = "calibrate --dataset {d}/beir --apply {d}/cal/"
    F = r"cal/{}\.json: calibrator field '{}' "
    add("calibrate-reversed-map", A + "reversed_map.json", F.format("reversed_map", r"map\.x") + "is not increasing")
    add("calibrate-decreasing-map", A + "decreasing_map.json", F.format("decreasing_map", r"map\.y") + "is not non-decreasing")
    add("calibrate-map-above-one", A + "map_above_one.json", F.format("map_above_one", r"map\.y") + r"holds values outside \[0, 1\]")
    add("calibrate-nan-threshold", A + "nan_threshold.json",
        F.format("nan_threshold", r"thresholds\.answer\.threshold") + r"is NaN, not a finite number in \[0, 1\]")
    add("calibrate-string-threshold", A + "string_threshold.json",
        F.format("string_threshold", r"thresholds\.answer\.threshold") + r"is \"0\.7\", not a finite number")
    add("calibrate-threshold-above-one", A + "threshold_above_one.json",
        F.format("threshold_above_one", r"thresholds\.answer\.threshold") + r"is 1\.5, not a finite number in \[0, 1\]")
    add("calibrate-target-k0", A + "target_k0.json",
        F.format("target_k0", "target") + r"is \"any_relevant_at_0\", not top1_relevant or any_relevant_at_K with an integer K >= 1")
    add("calibrate-target-unknown", A + "target_unknown.json", F.format("target_unknown", "target") + r"is \"best_guess\"")
    add("calibrate-signal-unknown", A + "signal_unknown.json", F.format("signal_unknown", "signals") + "names unknown signal 'vibes'")
    add("calibrate-precision-fp16", A + "precision_fp16.json",
        F.format("precision_fp16", r"model\.precision") + r"is \"fp16\", not one of fp32, bf16")
    add("calibrate-fingerprint-edited", A + "key_edited.json",
        F.format("key_edited", r"model\.key") + r"does not match the fingerprint's fields")
    add("calibrate-scale-zero", A + "scale_zero.json", F.format("scale_zero", r"scaler_scale\[1\]") + "is 0.0, not a positive finite number")
    add("calibrate-coef-short", A + "coef_short.json", F.format("coef_short", "coef") + "should be a list of 2 numbers, is 1 entries")
    add("calibrate-keep-k0", A + "keep_k0.json", F.format("keep_k0", r"thresholds\.keep_documents\.k") + "is 0, not an integer >= 1")
    add("calibrate-cosine-threshold-2", A + "cosine_threshold_2.json",
        F.format("cosine_threshold_2", r"thresholds\.keep_documents\.threshold") + r"is 2\.0, not a finite cosine in \[-1, 1\]")
    add("calibrate-platt-nan", A + "platt_nan.json", F.format("platt_nan", "map") + "of a Platt calibrator should hold finite numbers")
    add("calibrate-not-an-object", A + "a_list.json", r"a_list\.json is not a normscope calibrator file")
    add("calibrate-link-out-of-folder", A + "link_out.json",
        r"calibrator file .*link_out\.json is a symbolic link out of its folder; normscope does not follow it")
    # odd grades: float() would read '1_0' as 10 and an Arabic-Indic one as 1
    add("retrieval-qrels-underscore", "retrieval --dataset {d}/beir_underscore --fit-split cv",
        r"test\.tsv:3: score '1_0' is not a plain number \(ASCII digits.*it is not read as 10")
    add("retrieval-qrels-arabic-digit", "retrieval --dataset {d}/beir_arabic_digit --fit-split cv",
        r"test\.tsv:2: score '\u0661' is not a plain number")
    # a model folder without its vocabulary files
    add("tokens-model-without-vocabulary", "tokens --model {d}/novocab --n-boot 10 --n-perm 10",
        r"novocab: the tokenizer's vocabulary names 0 of the 30,522 rows .*lacks its vocabulary")
    # report folders: another model's section kept there; a planted lock link
    add("report-only-another-model", "report --out {d}/rep_mixed --only setup --quick",
        r"rep_mixed holds the section of stage norms made with model 'someone/other-model'; this run uses model "
        r"'sentence-transformers/all-MiniLM-L6-v2'.*start a new folder with --out NEW_FOLDER")
    add("report-lock-link", "report --out {d}/rep_link --only setup --quick",
        r"rep_link/\.normscope\.lock is a symbolic link; normscope never writes through one")
    # damaged decisive-lab run folders: one line naming the file and the field, before anything runs
    L = "lab --encoder transformer --design decisive --size quick --run-dir {d}/"
    add("lab-run-design-garbage", L + "run_design", r"run_design: design\.json is damaged \(not JSON: .*line 1 column 2\)")
    add("lab-run-data-field", L + "run_data", r"data\.json is damaged \(field 'train_left' should be a list, is str")
    add("lab-run-lambda-nan", L + "run_lambda", r"lambda0\.json is damaged \(field 'median_lambda_rad_per_lambda' is nan")
    add("lab-run-json-truncated", L + "run_json", r"runs/pretrain\.json is damaged \(not JSON: ")
    add("lab-run-npz-truncated", L + "run_npz", r"runs/pretrain\.npz is damaged \(not a readable \.npz record")
    add("lab-run-checkpoint-garbage", L + "run_ckpt", r"runs/base_sgd\.ckpt is damaged \(not a readable checkpoint")
    add("lab-run-final-truncated", L + "run_final", r"runs/pretrain\.final\.pt is damaged \(not a readable checkpoint")
    add("lab-run-progress-link", L + "run_progress",
        r"runs/base_sgd\.progress is damaged \(a symbolic link out of the run folder; normscope neither reads nor writes")
    add("lab-run-data-link", L + "run_datalink", r"data\.json is damaged \(a symbolic link out of the run folder")
    add("search-index-file-link-out", "index search {d}/idx_link {d}/vec.npy",
        r"idx_link/ids\.parquet is a symbolic link to a place outside .*idx_link; normscope does not read files outside")


ROWS = _rows()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_inputs")
    _build(d)
    return d


def _tree(d: Path) -> dict:
    """Every path under ``d``: sha256 of files, target of links, ``dir`` for directories."""
    out = {}
    for root, dirs, files in os.walk(d):
        for n in dirs + files:
            p = Path(root) / n
            rel = str(p.relative_to(d))
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_dir():
                out[rel] = "dir"
            else:
                st = p.stat()
                out[rel] = (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return out


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setattr("normscope.encoders.cache.cache_dir", lambda: tmp_path / "cache")
    # no heartbeat ("report: working ...") on a loaded machine: this table checks the error line alone, and the
    # heartbeat has its own fake-clock test
    monkeypatch.setattr("normscope._progress.LINE_EVERY", 1e9)


@pytest.mark.parametrize("argv, code, pattern", ROWS)
def test_bad_input(sandbox, capsys, argv, code, pattern):
    argv = [a.replace(D, str(sandbox)) for a in argv]
    before = _tree(sandbox)
    got = run(argv)
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert got == code, f"exit {got}, stderr:\n{err}"
    assert len(lines) == 1, f"expected one line, got:\n{err}"
    assert lines[0].startswith("error: ") and "Traceback" not in err, lines[0]
    assert re.search(pattern, lines[0]), f"{lines[0]!r} does not match {pattern!r}"
    assert _tree(sandbox) == before, "an input or an earlier output changed, or a file appeared"
    assert not (sandbox / "PAYLOAD_RAN").exists()


def test_the_table_is_large():
    assert len(ROWS) >= 250
