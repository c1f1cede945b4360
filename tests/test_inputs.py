"""normscope.inputs.read_items: every format, and every bad-input message."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from normscope.errors import InputError
from normscope.inputs import detect_format, read_items


def _jsonl(path, rows, gz=False):
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def test_text_file_crlf_bom_and_trailing_newline(tmp_path):
    p = tmp_path / "items.txt"
    p.write_bytes("\ufeffthe cat\r\nsat on\r\nthe mat\r\n".encode())
    ids, texts = read_items(p)
    assert texts == ["the cat", "sat on", "the mat"]
    assert ids == ["0", "1", "2"]


def test_text_file_no_suffix_keeps_unicode_separators_inside_items(tmp_path):
    p = tmp_path / "words"
    p.write_text("caf\u00e9\u2028x\nna\u00efve")  # U+2028 is not a line break for us
    assert read_items(p)[1] == ["caf\u00e9\u2028x", "na\u00efve"]


def test_jsonl_beir_title_join_matches_beir_rule(tmp_path):
    rows = [
        {"_id": "d1", "title": "Norms", "text": "grow with certainty."},
        {"_id": "d2", "title": "", "text": "no title here"},
        {"_id": "d3", "text": " untitled "},
    ]
    ids, texts = read_items(_jsonl(tmp_path / "c.jsonl", rows))
    assert ids == ["d1", "d2", "d3"]
    # BEIR SentenceBERT: (title + " " + text).strip() when the doc has a title, else text.strip()
    assert texts == ["Norms grow with certainty.", "no title here", "untitled"]


def test_jsonl_gz_and_beir_directory_agree(tmp_path):
    rows = [{"_id": str(i), "title": f"T{i}", "text": f"body {i}"} for i in range(5)]
    d = tmp_path / "beir"
    d.mkdir()
    _jsonl(d / "corpus.jsonl.gz", rows, gz=True)
    a = read_items(d / "corpus.jsonl.gz")
    b = read_items(d)
    assert a == b
    assert a[1][3] == "T3 body 3"


def test_jsonl_id_field_and_blank_lines(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"id": 7, "text": "a"}\n\n{"id": 8, "text": "b"}\n')
    assert read_items(p) == (["7", "8"], ["a", "b"])


def test_csv_text_and_id_columns_with_quoted_newline(tmp_path):
    p = tmp_path / "x.csv"
    with open(p, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "text", "label"])
        w.writerow(["q1", "line one\nline two", "x"])
        w.writerow(["q2", "plain", "y"])
    assert read_items(p) == (["q1", "q2"], ["line one\nline two", "plain"])


def test_real_scifact_corpus(shared_data):
    ids, texts = read_items(shared_data / "scifact")
    assert len(ids) == 5183 == len(set(ids))  # SOURCE.md: 5,183 abstracts
    first = json.loads(gzip.open(shared_data / "scifact" / "corpus.jsonl.gz", "rt").readline())
    assert ids[0] == first["_id"]
    assert texts[0] == (first["title"] + " " + first["text"]).strip()


@pytest.mark.parametrize(
    "name, content, pattern",
    [
        ("empty.txt", b"", "empty"),
        ("blank.txt", b"\n  \n", "empty"),
        ("bad.txt", b"good\nalso good\nbad \xff byte\n", r"not valid UTF-8: byte 0xff at byte offset 19 \(line 3\)"),
        ("x.xlsx", b"PK", "unknown input format '.xlsx'"),
        ("x.json", b"[]", "unknown input format '.json'"),
        ("nojson.jsonl", b'{"text": "a"}\n{oops\n', "line 2 is not valid JSON"),
        ("notext.jsonl", b'{"title": "a"}\n', "line 1 has no 'text' field"),
        ("dup.jsonl", b'{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', "duplicate id.*'a' \\(lines 1 and 2\\)"),
        ("mixed.jsonl", b'{"_id": "a", "text": "x"}\n{"text": "y"}\n', "missing at line 2"),
        ("nocol.csv", b"id,body\n1,hello\n", "CSV has no 'text' column"),
        ("dup.csv", b"id,text\n1,a\n1,b\n", "duplicate id"),
    ],
)
def test_bad_inputs_name_the_problem(tmp_path, name, content, pattern):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(InputError, match=pattern):
        read_items(p)


def test_missing_file_and_non_beir_directory(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        read_items(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="not a BEIR dataset"):
        read_items(tmp_path)


def test_junk_error_lists_first_five_then_counts():
    from normscope.inputs import find_junk

    found = find_junk(["a"] + [" "] * 8 + ["b"])
    assert found.index == list(range(1, 9))
    assert str(found.error()) == (
        "8 junk items found (empty after NFKC normalisation and removal of whitespace and invisible format "
        "characters): ids 1, 2, 3, 4, 5 (and 3 more) (drop --junk-error to leave them out)"
    )


def test_bad_gzip_and_non_utf8_in_gzip(tmp_path):
    p = tmp_path / "x.jsonl.gz"
    p.write_bytes(b"not gzip")
    with pytest.raises(InputError, match="not a valid gzip"):
        read_items(p)
    p.write_bytes(gzip.compress(b'{"text": "a"}\n{"text": "\xe9"}\n'))
    with pytest.raises(InputError, match=r"byte 0xe9 at byte offset 24 \(line 2\)"):
        read_items(p)


def test_detect_format():
    assert detect_format("a.TXT") == "text"
    assert detect_format("a.jsonl.gz") == "jsonl"
    assert detect_format("a.csv") == "csv"
    with pytest.raises(InputError):
        detect_format("a.pdf")


def test_unknown_format_lists_every_accepted_format(tmp_path):
    p = tmp_path / "s.docx"
    p.write_bytes(b"PK\x03\x04")
    with pytest.raises(InputError) as err:
        read_items(p)
    msg = str(err.value)
    assert "unknown input format '.docx'" in msg
    for fmt in (".txt", ".jsonl", ".jsonl.gz", ".csv", "BEIR corpus directory", ".npy", ".parquet"):
        assert fmt in msg, fmt


def test_check_items_strings_only():
    from normscope.inputs import check_items

    assert check_items(["a", 3, " "]) == ["a", "3", " "]
    with pytest.raises(InputError, match="single string"):
        check_items("abc")
    with pytest.raises(InputError, match=r"^2 items are None, at indexes 0, 2$"):
        check_items([None, "a", None])


@pytest.mark.parametrize(
    "name, content, junk_ids",
    [
        ("ws.txt", b"ok\n   \nfine\n\t\nlast\n", ["1", "3"]),
        ("emptytext.jsonl", b'{"_id": "a", "text": "x"}\n{"_id": "b", "text": ""}\n', ["b"]),
        ("zw.csv", "id,text\n1,hello\n2,\u200b\ufeff\n".encode(), ["2"]),
    ],
)
def test_blank_items_are_read_and_found_as_junk(tmp_path, name, content, junk_ids):
    """Files keep their blank items; the one junk rule (find_junk) lists them by id for every command."""
    from normscope.inputs import find_junk

    p = tmp_path / name
    p.write_bytes(content)
    ids, texts = read_items(p)
    assert find_junk(texts, ids).ids == junk_ids
