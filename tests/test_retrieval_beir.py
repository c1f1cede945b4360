"""BEIR directory loader: layout, CRLF, gzip, bad input (errors and counted warnings), hub loader."""

from __future__ import annotations

import gzip
import json
import sys
import types

import pytest

from normscope.errors import DataError
from normscope.data.beir import BeirDataWarning, doc_text, load_beir, load_beir_hub, load_qrels


def _write(tmp_path, corpus, queries, qrels: dict[str, str], *, gz=False, crlf=False):
    nl = "\r\n" if crlf else "\n"
    body = nl.join(json.dumps(o) for o in corpus) + nl
    if gz:
        with gzip.open(tmp_path / "corpus.jsonl.gz", "wt", encoding="utf-8", newline="") as f:
            f.write(body)
    else:
        (tmp_path / "corpus.jsonl").write_bytes(body.encode())
    (tmp_path / "queries.jsonl").write_bytes((nl.join(json.dumps(o) for o in queries) + nl).encode())
    (tmp_path / "qrels").mkdir(exist_ok=True)
    for split, text in qrels.items():
        (tmp_path / "qrels" / f"{split}.tsv").write_bytes(text.replace("\n", nl).encode())
    return tmp_path


CORPUS = [
    {"_id": "d1", "title": "Title one", "text": "Body one."},
    {"_id": "d2", "title": "", "text": "  Body two. "},
    {"_id": "d3", "title": "T3", "text": "B3"},
]
QUERIES = [{"_id": "q1", "text": "first"}, {"_id": "q2", "text": "second"}, {"_id": "q3", "text": "third"}]


@pytest.mark.parametrize("gz,crlf", [(False, False), (True, True)])
def test_layout_gzip_crlf(tmp_path, gz, crlf):
    _write(tmp_path, CORPUS, QUERIES, {"test": "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t2\n"}, gz=gz, crlf=crlf)
    ds = load_beir(tmp_path)
    assert ds.doc_ids == ["d1", "d2", "d3"]
    assert ds.doc_texts == ["Title one Body one.", "Body two.", "T3 B3"]
    assert ds.qrels == {"test": {"q1": {"d1": 1}, "q2": {"d3": 2}}}
    sq = ds.split_queries("test")
    assert sq.query_ids == ["q1", "q2"] and sq.texts == ["first", "second"]
    assert sq.counts["queries_without_qrels"] == 1 and sq.counts["evaluated"] == 2


def test_doc_text_convention():
    assert doc_text({"title": "A", "text": "b"}) == "A b"
    assert doc_text({"text": " b "}) == "b"


def test_bad_qrels_warn_and_count(tmp_path):
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tghost\t1\nq2\tghost2\t1\nq3\td2\t0\nq9\td1\t1\n"
    ds = load_beir(_write(tmp_path, CORPUS, QUERIES, {"test": qrels}))
    with pytest.warns(BeirDataWarning) as rec:
        sq = ds.split_queries("test")
    msgs = " ".join(str(w.message) for w in rec)
    assert "2 qrels rows name documents absent" in msgs
    assert "excluded 1 judged quer(ies) without text and 1 without any relevant document" in msgs
    assert sq.query_ids == ["q1", "q2"]  # q3: only a 0 judgement; q9: no text
    assert sq.counts == {
        "judged": 4,
        "evaluated": 2,
        "excluded_no_text": 1,
        "excluded_no_relevant": 1,
        "qrels_unknown_docs": 2,
        "queries_without_qrels": 0,
    }
    assert sq.qrels["q1"] == {"d1": 1, "ghost": 1}  # unknown docs stay relevant (recall denominator)


def test_errors(tmp_path):
    with pytest.raises(DataError, match="empty"):
        load_beir(_write(tmp_path, [], QUERIES, {"test": "q1\td1\t1\n"}))
    d = tmp_path / "b"
    d.mkdir()
    with pytest.raises(DataError, match="duplicate document id 'd1'"):
        load_beir(_write(d, CORPUS + [{"_id": "d1", "text": "x"}], QUERIES, {"test": "q1\td1\t1\n"}))
    d = tmp_path / "c"
    d.mkdir()
    with pytest.raises(DataError, match="duplicate query id 'q2'"):
        load_beir(_write(d, CORPUS, QUERIES + [{"_id": "q2", "text": "y"}], {"test": "q1\td1\t1\n"}))
    d = tmp_path / "d"
    d.mkdir()
    _write(d, CORPUS, QUERIES, {"test": "q1\td1\t1\n"})
    with pytest.raises(DataError, match=r"no qrels/train.tsv \(available splits: test\)"):
        load_beir(d, splits=["train"])
    with pytest.raises(DataError, match="no qrels split 'dev'"):
        load_beir(d).split_queries("dev")
    (d / "qrels" / "bad.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\n")
    with pytest.raises(DataError, match=r"bad.tsv:2: expected 3"):
        load_qrels(d / "qrels" / "bad.tsv")
    (d / "qrels" / "bad.tsv").write_text("q1\td1\t1\nq1\td1\t0\n")
    with pytest.raises(DataError, match="twice with scores 1 and 0"):
        load_qrels(d / "qrels" / "bad.tsv")
    (d / "qrels" / "bad.tsv").unlink()
    (d / "corpus.jsonl").write_text('{"_id": "d1"}\n{not json\n')
    with pytest.raises(DataError, match=r"corpus.jsonl:2: malformed JSON"):
        load_beir(d)
    with pytest.raises(DataError, match="not found"):
        load_beir(tmp_path / "missing")


def test_qrels_header_optional_and_trec(tmp_path):
    p = tmp_path / "q.tsv"
    p.write_bytes(b"q1\td1\t1\r\nq1 0 d2 2\r\n\r\n")
    assert load_qrels(p) == {"q1": {"d1": 1, "d2": 2}}


def test_hub_loader_needs_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)  # import datasets -> ImportError
    with pytest.raises(DataError, match="needs the Hugging Face 'datasets' package"):
        load_beir_hub("scifact")


def test_hub_loader_with_fake_datasets(monkeypatch):
    rows = {
        ("BeIR/toy", "corpus"): [{"_id": "d1", "title": "A", "text": "a"}, {"_id": "d2", "title": "", "text": "b"}],
        ("BeIR/toy", "queries"): [{"_id": "q1", "text": "qa"}],
        ("BeIR/toy-qrels", "test"): [{"query-id": "q1", "corpus-id": "d2", "score": 1}],
    }

    def load_dataset(repo, name=None, split=None):
        key = (repo, name) if name else (repo, split)
        if key not in rows:
            raise ValueError(f"no split {split}")
        return rows[key]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    ds = load_beir_hub("hf:BeIR/toy", splits=("train", "test"))
    assert ds.doc_texts == ["A a", "b"] and ds.splits == ["test"]
    assert ds.split_queries("test").qrels == {"q1": {"d2": 1}}
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DataError, match="HF_HUB_OFFLINE"):
        load_beir_hub("toy")


def test_shared_scifact_counts(shared_data):
    ds = load_beir(shared_data / "scifact")
    assert len(ds.doc_ids) == 5183 and len(ds.queries) == 1109
    test = ds.split_queries("test")
    train = ds.split_queries("train")
    assert test.counts["evaluated"] == 300 and train.counts["evaluated"] == 809
    assert test.counts["qrels_unknown_docs"] == 0 and sum(len(v) for v in test.qrels.values()) == 339
    assert not set(test.query_ids) & set(train.query_ids)


def test_bom_gz_qrels_and_embed_reads_the_same(tmp_path):
    """A UTF-8 BOM in corpus, queries and qrels, and gzipped qrels: read as `embed` reads them."""
    from normscope.inputs import read_items

    _write(tmp_path, CORPUS, QUERIES, {})
    for name in ("corpus.jsonl", "queries.jsonl"):
        p = tmp_path / name
        p.write_bytes(b"\xef\xbb\xbf" + p.read_bytes())
    with gzip.open(tmp_path / "qrels" / "test.tsv.gz", "wb") as f:
        f.write("\ufeffq1\td1\t1\nq2\td3\t2\n".encode())  # BOM and no header: q1 must not be lost
    ds = load_beir(tmp_path)
    assert ds.splits == ["test"] and ds.qrels["test"] == {"q1": {"d1": 1}, "q2": {"d3": 2}}
    ids, texts = read_items(tmp_path / "corpus.jsonl")
    assert ids == ds.doc_ids and texts == ds.doc_texts
    assert ds.doc_titles == ["Title one", "", "T3"]
    (tmp_path / "qrels" / "test.tsv").write_text("q1\td1\t1\n")
    with pytest.raises(DataError, match="both test.tsv and test.tsv.gz"):
        load_beir(tmp_path)


@pytest.mark.parametrize("damage", ["truncated", "corrupt", "not gzip"])
def test_bad_gzip_is_one_line_error(tmp_path, damage):
    _write(tmp_path, CORPUS, QUERIES, {"test": "q1\td1\t1\n"}, gz=True)
    p = tmp_path / "corpus.jsonl.gz"
    raw = p.read_bytes()
    p.write_bytes({"truncated": raw[: len(raw) // 2], "corrupt": raw[:12] + bytes(len(raw) - 12),
                   "not gzip": b"plain text"}[damage])
    with pytest.raises(DataError, match=r"corpus.jsonl.gz is not a valid gzip file") as exc:
        load_beir(tmp_path)
    assert "\n" not in str(exc.value)


def test_nfcorpus_trec_release_converts(tmp_path, capsys):
    """The original NFCorpus layout (ID<TAB>TEXT .docs/.queries, TREC .qrel) converts by one command and loads."""
    from normscope.cli import run
    from normscope.retrieval.trec import convert_trec

    src = tmp_path / "nfcorpus"
    src.mkdir()
    (src / "train.docs").write_text("MED-1\tstatins and breast cancer\r\nMED-2\tfish oil\r\n")
    (src / "test.docs").write_text("MED-3\tvitamin D\nMED-1\tstatins and breast cancer\n")
    (src / "train.titles.queries").write_text("PLAIN-1\tDo statins cause cancer?\n")
    (src / "train.all.queries").write_text("PLAIN-1\tstatins cancer long text\n")
    (src / "test.titles.queries").write_text("\ufeffPLAIN-2\tVitamin D\n")
    (src / "train.3-2-1.qrel").write_text("PLAIN-1\t0\tMED-1\t3\nPLAIN-1\t0\tMED-2\t1\n")
    (src / "test.3-2-1.qrel").write_text("PLAIN-2 0 MED-3 2\n")
    (src / "test.2-1-0.qrel").write_text("PLAIN-2\t0\tMED-3\t1\n")
    (src / "train.2-1-0.qrel").write_text("PLAIN-1\t0\tMED-1\t2\nPLAIN-1\t0\tMED-2\t0\n")
    info = convert_trec(src, tmp_path / "beir")
    assert info["n_docs"] == 3 and info["n_queries"] == 2 and info["splits"] == {"test": 1, "train": 1}
    ds = load_beir(tmp_path / "beir")
    assert sorted(ds.doc_ids) == ["MED-1", "MED-2", "MED-3"] and ds.queries == {"PLAIN-2": "Vitamin D",
                                                                                  "PLAIN-1": "Do statins cause cancer?"}
    # BEIR's 2-1-0 grading by default: the marginal link MED-2 is judged 0, not relevant
    assert ds.qrels == {"test": {"PLAIN-2": {"MED-3": 1}}, "train": {"PLAIN-1": {"MED-1": 2, "MED-2": 0}}}
    record = json.loads((tmp_path / "beir" / "conversion.json").read_text())
    assert info["grading"] == record["grading"] == "2-1-0" and "BEIR" in record["grading_meaning"]
    assert record["qrels_files"] == {"test": "test.2-1-0.qrel", "train": "train.2-1-0.qrel"}
    # the command keeps the other grading with --qrels 3-2-1 and says which it used; refusing to overwrite; a
    # directory that is not converted says how
    assert run(["beir-convert", str(src), str(tmp_path / "b2"), "--qrels", "3-2-1"]) == 0
    assert "grading 3-2-1: the release's other grading" in " ".join(capsys.readouterr().err.split())
    assert load_beir(tmp_path / "b2").qrels == {"test": {"PLAIN-2": {"MED-3": 2}},
                                                "train": {"PLAIN-1": {"MED-1": 3, "MED-2": 1}}}
    assert json.loads((tmp_path / "b2" / "conversion.json").read_text())["grading"] == "3-2-1"
    assert run(["beir-convert", str(src), str(tmp_path / "b2")]) == 2
    with pytest.raises(DataError, match="normscope beir-convert"):
        load_beir(src)
    (src / "dev.docs").write_text("MED-1\tanother text\n")
    with pytest.raises(DataError, match="MED-1"):
        convert_trec(src, tmp_path / "b3")
