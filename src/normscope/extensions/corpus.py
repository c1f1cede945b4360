"""Corpus files for the Ray engine: checks before any work, Ray Data readers, the record columns.

Formats: ``.jsonl``/``.jsonl.gz`` (one JSON object a line; fields ``_id`` or ``id``, ``text``,
optional BEIR ``title``), parquet with those columns, or a BEIR directory holding
``corpus.jsonl[.gz]``. Unlike the local reader (:func:`normscope.inputs.read_items`), every record
needs an id: a distributed read has no global line number to default to.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from normscope.engine.shards import MANIFEST
from normscope.engine.shards import check_out_dir
from normscope.errors import InputError

__all__ = ["check_shard_out", "corpus_file", "read_corpus", "corpus_columns"]


def check_shard_out(out: Path) -> None:
    """An output path for shards: a ``*.parquet`` name in a writable directory; if it exists, a previous output.

    Raises
    ------
    InputError
        Another suffix, missing or read-only parent directory, an existing file, or an existing
        directory that normscope did not write (no manifest).
    """
    if out.suffix.lower() != ".parquet":
        raise InputError(f"-o/--out must name a .parquet directory (the ray engine writes parquet shards), got '{out}'")
    check_out_dir(out, MANIFEST, "a normscope shard directory")


def corpus_file(input: Path) -> tuple[Path, list[str]]:
    """The corpus file behind ``input`` and its fields, checked before any work (first record / parquet schema).

    Raises
    ------
    InputError
        Missing input, a directory without ``corpus.jsonl[.gz]``, another format, a first record that
        is not a JSON object, no ``text`` or no ``_id``/``id`` field, or a parquet that holds vectors.
    """
    if not input.exists():
        raise InputError(f"input does not exist: {input}")
    path = input
    if input.is_dir():
        cands = [input / c for c in ("corpus.jsonl", "corpus.jsonl.gz") if (input / c).is_file()]
        if not cands:
            raise InputError(f"directory {input} is not a BEIR dataset: no corpus.jsonl or corpus.jsonl.gz in it")
        path = cands[0]
    name = path.name.lower()
    if name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        import gzip

        opener = gzip.open if name.endswith(".gz") else open
        try:
            with opener(path, "rt", encoding="utf-8") as f:
                first = next((line for line in f if line.strip()), None)
            rec = json.loads(first) if first is not None else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"cannot read the first record of {path}: {exc}") from None
        if rec is None:
            raise InputError(f"input file is empty: {path}")
        if not isinstance(rec, dict):
            raise InputError(f"{path}: line 1 is a JSON {type(rec).__name__}, expected an object with a 'text' field")
        fields = list(rec)
    elif name.endswith(".parquet"):
        import pyarrow.parquet as pq

        try:
            fields = pq.read_schema(path).names
        except (pa.ArrowInvalid, OSError) as exc:
            raise InputError(f"cannot read parquet {path}: {str(exc).splitlines()[0]}") from None
        if "vector" in fields:
            raise InputError(f"{input} already holds vectors (a 'vector' column); no engine is needed")
    else:
        raise InputError(
            f"the ray engine reads .jsonl[.gz], .parquet (columns id/_id, text[, title]) or a BEIR directory, "
            f"got {input}; convert it, or use --engine local"
        )
    if "text" not in fields:
        raise InputError(f"{path}: records have no 'text' field (fields: {sorted(fields)[:8]})")
    if "_id" not in fields and "id" not in fields:
        raise InputError(f"{path}: the ray engine needs an 'id' or '_id' field in every record (BEIR corpora have '_id')")
    return path, fields


def read_corpus(path: Path, fields: list[str]):
    """The Ray Dataset of a corpus file checked by :func:`corpus_file` (Ray Data's own readers)."""
    import ray.data

    if path.name.lower().endswith(".parquet"):
        return ray.data.read_parquet(str(path), columns=[c for c in ("_id", "id", "title", "text") if c in fields])
    return ray.data.read_json(str(path), file_extensions=None)


def corpus_columns(batch: pa.Table) -> pa.Table:
    """Records of a jsonl/parquet/BEIR corpus as ``id`` and ``text`` string columns.

    The id is ``_id`` else ``id`` (strings, or integers written in decimal); a BEIR ``title`` is
    joined as ``(title + " " + text).strip()``, the rule of :func:`normscope.inputs.read_items`.

    Raises
    ------
    InputError
        No ``text`` column, no id column, null ids or texts, ids of another type.
    """
    names = batch.column_names
    if "text" not in names:
        raise InputError(f"corpus records have no 'text' field (fields: {sorted(names)[:8]})")
    id_col = "_id" if "_id" in names else ("id" if "id" in names else None)
    if id_col is None:
        raise InputError("the ray engine needs an 'id' or '_id' field in every record (BEIR corpora have '_id')")
    ids = batch.column(id_col)
    if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type) or pa.types.is_integer(ids.type)):
        raise InputError(f"ids must be strings or integers, got {ids.type} in field '{id_col}'")
    if ids.null_count or batch.column("text").null_count:
        raise InputError(f"corpus records with a missing '{id_col}' or 'text' value")
    texts = batch.column("text").to_pylist()
    if "title" in names:
        titles = batch.column("title").to_pylist()
        texts = [(t + " " + b).strip() if t else b for t, b in zip(titles, texts)]
    return pa.table({"id": ids.cast(pa.string()), "text": pa.array(texts, type=pa.string())})
