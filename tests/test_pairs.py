"""Pair sources: BEIR qrels pairs, WordNet (term, gloss) pairs, user pair files, batch sampling."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from normscope.errors import DataError, InputError
from normscope.pairs import PairSource, beir_pairs, file_pairs, load_pairs, wordnet_pairs


def _write_beir(root, *, crlf=True, gz=True):
    (root / "qrels").mkdir(parents=True)
    with open(root / "queries.jsonl", "w") as f:
        for qid, text in (("q1", "what is a cat"), ("q2", "capital of France")):
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    docs = [{"_id": "d1", "title": "Cat", "text": "A small feline."}, {"_id": "d2", "title": "", "text": "Paris is the capital."},
            {"_id": "d3", "title": "Dog", "text": "A canine."}]
    payload = "".join(json.dumps(d) + "\n" for d in docs).encode()
    if gz:
        (root / "corpus.jsonl.gz").write_bytes(gzip.compress(payload))
    else:
        (root / "corpus.jsonl").write_bytes(payload)
    nl = "\r\n" if crlf else "\n"
    (root / "qrels" / "train.tsv").write_text(nl.join(["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t1", "q1\td3\t0"]) + nl)


def test_beir_pairs_small_crlf(tmp_path):
    _write_beir(tmp_path)
    p = beir_pairs(tmp_path, "train")
    assert p.left == ["what is a cat", "capital of France"]
    assert p.right == ["Cat A small feline.", "Paris is the capital."]  # title + text; score-0 row dropped
    assert len(beir_pairs(tmp_path, "train", min_score=0)) == 3
    with pytest.raises(DataError, match="qrels/test.tsv"):
        beir_pairs(tmp_path, "test")


def test_beir_pairs_unknown_id(tmp_path):
    _write_beir(tmp_path, crlf=False, gz=False)
    with open(tmp_path / "qrels" / "train.tsv", "a") as f:
        f.write("q9\td1\t1\n")
    with pytest.raises(DataError, match="q9"):
        beir_pairs(tmp_path)


def test_scifact_train_pairs_match_files(shared_data):
    """Independent reading with pandas: 919 train qrels rows, all score 1."""
    root = shared_data / "scifact"
    p = load_pairs("scifact:train")
    qrels = pd.read_csv(root / "qrels" / "train.tsv", sep="\t", dtype=str)
    assert len(p) == len(qrels) == 919
    queries = {o["_id"]: o["text"] for o in map(json.loads, open(root / "queries.jsonl"))}
    row = qrels.iloc[5]
    assert p.left[5] == queries[row["query-id"]]
    with gzip.open(root / "corpus.jsonl.gz", "rt") as f:
        doc = next(o for o in map(json.loads, f) if o["_id"] == row["corpus-id"])
    assert p.right[5] == f"{doc['title']} {doc['text']}"


def test_wordnet_adverb_pairs_count_matches_database(shared_data):
    """Number of (lemma, gloss) pairs = sum of the hex w_cnt fields of data.adv (WordNet file format)."""
    p = wordnet_pairs(pos="r")
    from normscope.pairs import _wordnet_reader

    wn = _wordnet_reader()
    root = wn.root.path if hasattr(wn.root, "path") else str(wn.root)
    total = 0
    first = None
    with open(f"{root}/data.adv", encoding="utf-8") as f:
        for line in f:
            if line.startswith("  "):
                continue  # licence header
            fields = line.split()
            total += int(fields[3], 16)
            if first is None:
                first = (fields[4].replace("_", " "), line.split("|", 1)[1].split(";")[0].strip())
    assert len(p) == total
    assert (p.left[0], p.right[0].split(";")[0].strip()) == first


def test_file_pairs_tsv_csv_and_one_column(tmp_path):
    f = tmp_path / "p.tsv"
    f.write_text("query\tdoc\nred fruit\tapple\nyellow fruit\tbanana\n")
    p = file_pairs(f)
    assert (p.left, p.right) == (["red fruit", "yellow fruit"], ["apple", "banana"])
    g = tmp_path / "p.csv"
    g.write_text('x,"b, with comma"\nc,d\n')
    p = file_pairs(g, header=False)
    assert p.right == ["b, with comma", "d"]
    one = tmp_path / "one.tsv"
    one.write_text("only\nsingle\ncolumn\n")
    with pytest.raises(InputError, match="line 1 has 1 column"):
        file_pairs(one, header=False)
    with pytest.raises(InputError, match="one.tsv"):
        load_pairs(str(one))
    with pytest.raises(InputError, match="unknown pair source"):
        load_pairs("no-such-thing")
    (tmp_path / "empty.tsv").write_text("")
    with pytest.raises(InputError, match="empty"):
        file_pairs(tmp_path / "empty.tsv")


def test_batches_deterministic_and_distinct():
    src = PairSource([str(i) for i in range(50)], [str(i) for i in range(50)], name="x")
    a, b, c = src.batches(8, 5, seed=3), src.batches(8, 5, seed=3), src.batches(8, 5, seed=4)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))
    assert all(len(set(x.tolist())) == 8 for x in a)
    with pytest.raises(InputError, match="only 50 pairs"):
        src.batches(64, 1)
    with pytest.raises(InputError):
        PairSource(["a"], [], name="bad")
