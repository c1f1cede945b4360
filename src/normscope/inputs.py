"""Reading the items to embed: text files, JSONL (BEIR), CSV and BEIR corpus directories.

:func:`read_items` turns a user file into ``(ids, texts)`` and rejects bad input
with a one-line :class:`~normscope.errors.InputError` that names the problem
(missing or empty file, malformed lines with their line numbers,
non-UTF-8 bytes with their byte offset and line, unknown format, duplicate ids,
a CSV without a ``text`` column, malformed JSON).

Supported formats (chosen by name; ``.gz`` is allowed after any of them):

=====================  ==========================================================
``.txt`` / no suffix   one item per line; id = 0-based item index
``.jsonl``             one JSON object per line, field ``text``; optional ``id``
                       or ``_id``; a BEIR ``title`` is joined as
                       ``(title + " " + text).strip()``, the text alone is
                       stripped (:func:`join_title`, as BEIR's SentenceBERT
                       wrapper does, Thakur et al. 2021)
``.csv``               header row with a ``text`` column; optional ``id``/``_id``
directory              a BEIR dataset directory holding ``corpus.jsonl[.gz]``
=====================  ==========================================================

CRLF line endings and a UTF-8 byte-order mark are tolerated.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from normscope._format import noun, plural
from normscope.errors import InputError

__all__ = [
    "read_items", "read_text", "split_lines", "csv_records", "join_title", "detect_format", "check_items", "Junk", "find_junk", "junk_text_reason",
    "TEXT_SUFFIXES", "FORMATS", "zero_vector_rows", "ZERO_NORM_FLOOR", "JUNK_ZERO",
    "collapse_duplicates",
]

TEXT_SUFFIXES = (".txt", ".text", ".lines", "")
FORMATS = ("text", "jsonl", "csv", "beir")
_SHOW = 5  # how many offending line numbers an error message names


def detect_format(path: str | Path) -> str:
    """Format of ``path``: ``"text"``, ``"jsonl"``, ``"csv"`` or ``"beir"`` (directory).

    Raises
    ------
    InputError
        If the suffix is not one of the supported formats.
    """
    path = Path(path)
    if path.is_dir():
        return "beir"
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    suffix = Path(name).suffix
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    if suffix in TEXT_SUFFIXES:
        return "text"
    raise InputError(
        f"unknown input format '{suffix}' of {path}: use .txt (one item per line), .jsonl, .jsonl.gz, .csv, "
        "a BEIR corpus directory, or .npy/.parquet of precomputed vectors (normscope embed)"
    )


def read_items(path: str | Path) -> tuple[list[str], list[str]]:
    """Read the items of a user file.

    Parameters
    ----------
    path : str or Path
        A text file (one item per line), ``.jsonl``/``.jsonl.gz`` (field ``text``,
        optional ``id``/``_id``, optional BEIR ``title``), ``.csv`` (column ``text``,
        optional ``id``/``_id``) or a BEIR dataset directory (``corpus.jsonl[.gz]``).

    Returns
    -------
    ids : list of str, length n
        Item ids: the file's ``id``/``_id`` values, else the 0-based item index.
    texts : list of str, length n
        The items, n >= 1. Junk items (empty after normalisation, see :func:`find_junk`) are
        kept here: every command leaves them out of its statistics with the same rule.

    Raises
    ------
    InputError
        Missing or empty file; non-UTF-8 bytes (byte offset and line named); unknown format; malformed
        JSON; a missing ``text`` field/column; duplicate or partly missing ids.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(f"input does not exist: {path}")
    fmt = detect_format(path)
    if fmt == "beir":
        for cand in ("corpus.jsonl", "corpus.jsonl.gz"):
            if (path / cand).is_file():
                return read_items(path / cand)
        raise InputError(f"directory {path} is not a BEIR dataset: no corpus.jsonl or corpus.jsonl.gz in it")
    if not path.is_file():
        raise InputError(f"input is not a regular file: {path}")
    text = read_text(path)
    if not text.strip():
        raise InputError(f"input file is empty: {path}")
    if fmt == "text":
        ids, texts, lines = _parse_text(text)
    elif fmt == "jsonl":
        ids, texts, lines = _parse_jsonl(text, path)
    else:
        ids, texts, lines = _parse_csv(text, path)
    if not texts:
        raise InputError(f"input file has no items: {path}")
    _check_unique(ids, lines, path)
    return ids, texts


def check_items(texts) -> list[str]:
    """Items given directly (Python API) as a list of str; rejects a bare string and non-text items.

    Parameters
    ----------
    texts : sequence of str, length n

    Returns
    -------
    list of str

    Raises
    ------
    InputError
        ``texts`` is a single string (a common slip: it would be embedded character by character)
        or holds ``None``.
    """
    if isinstance(texts, (str, bytes)):
        raise InputError("texts must be a sequence of strings, got a single string")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if t is None]
    if bad:
        raise InputError(f"{plural(len(bad), 'item')} {'is' if len(bad) == 1 else 'are'} None, at "
                         f"{'index' if len(bad) == 1 else 'indexes'} {', '.join(map(str, bad[:_SHOW]))}")
    return [str(t) for t in texts]


# ----------------------------------------------------------------------------- junk
#: Why an item is junk (the ``reason`` of :class:`Junk`).
JUNK_EMPTY = "empty after NFKC normalisation and removal of whitespace and invisible format characters"
JUNK_TOKENS = "tokenizes to special and unknown tokens only"
#: Vectors whose norm is 0 or below this fraction of the median norm of their set are junk vectors.
ZERO_NORM_FLOOR = 1e-3
JUNK_ZERO = f"zero vector (norm 0 or below {ZERO_NORM_FLOOR:g} x the median norm)"


def junk_text_reason(text: str) -> str | None:
    """The text part of the junk rule: :data:`JUNK_EMPTY` or None.

    The text is NFKC-normalised (Unicode normal form KC), then whitespace (``str.isspace``),
    format characters (category Cf: zero-width space U+200B, BOM U+FEFF, word joiner U+2060,
    soft hyphen...) and control characters (category Cc) are removed; an empty rest is junk.
    """
    norm = unicodedata.normalize("NFKC", str(text))
    for ch in norm:
        if not ch.isspace() and unicodedata.category(ch) not in ("Cf", "Cc"):
            return None
    return JUNK_EMPTY


@dataclass(frozen=True)
class Junk:
    """Items left out as junk, by the one rule every command applies (:func:`find_junk`).

    Attributes
    ----------
    index : list of int
        0-based positions in the input, increasing.
    ids : list of str
        Their ids.
    reasons : list of str
        One of :data:`JUNK_EMPTY`, :data:`JUNK_TOKENS`, :data:`JUNK_ZERO` per item.
    """

    index: list[int] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.index)

    def __bool__(self) -> bool:
        return bool(self.index)

    def to_dict(self) -> dict:
        """JSON form (key ``junk`` of every command's ``--json``): ``count``, ``ids``, ``reasons`` (counts)."""
        counts: dict[str, int] = {}
        for r in self.reasons:
            counts[r] = counts.get(r, 0) + 1
        return {"count": self.count, "ids": list(self.ids), "reasons": counts}

    def message(self, what: str = "items") -> str:
        """One line naming the count and the first ids, e.g. for the console."""
        shown = ", ".join(self.ids[:_SHOW]) + (f" (and {self.count - _SHOW} more)" if self.count > _SHOW else "")
        return f"{self.count} junk {what} left out ({'; '.join(sorted(set(self.reasons)))}): ids {shown}"

    def merged(self, index: Sequence[int], ids: Sequence[str], reason: str) -> "Junk":
        """This junk plus the items at ``index`` (positions in the same input) for ``reason``, by position."""
        rows = sorted({**{i: (d, r) for i, d, r in zip(self.index, self.ids, self.reasons)},
                       **{int(i): (str(d), reason) for i, d in zip(index, ids)}}.items())
        return Junk(index=[i for i, _ in rows], ids=[d for _, (d, _) in rows], reasons=[r for _, (_, r) in rows])

    def error(self, what: str = "items") -> InputError:
        """The :class:`InputError` raised when junk is an error (``--junk-error``)."""
        return InputError(self.message(what).replace("left out", "found", 1) + " (drop --junk-error to leave them out)")


def collapse_duplicates(keys: Sequence, ids: Sequence[str]) -> tuple[list[int], dict]:
    """Exact duplicates of ``keys`` (e.g. texts): one position kept per distinct key.

    The copy kept is the one with the smallest id (as a string), so the result does not depend on
    the input order (per-item outputs stay permutation-equivariant).

    Parameters
    ----------
    keys : sequence of hashable, length n
        What makes two items the same (a text; ``(stratum, text)`` with strata).
    ids : sequence of str, length n

    Returns
    -------
    keep : list of int
        Positions kept, increasing.
    info : dict
        ``count`` (items left out as copies), ``groups`` (distinct keys that had copies),
        ``ids`` (the left-out ids, at most 20, sorted), ``kept_ids`` (the kept id of the first 20 groups).
    """
    best: dict = {}
    size: dict = {}
    for pos, (k, i) in enumerate(zip(keys, ids)):
        size[k] = size.get(k, 0) + 1
        if k not in best or str(i) < str(ids[best[k]]):
            best[k] = pos
    keep = sorted(best.values())
    kept = set(keep)
    dropped = sorted(str(ids[p]) for p in range(len(ids)) if p not in kept)
    groups = [k for k, c in size.items() if c > 1]
    info = {"count": len(dropped), "groups": len(groups), "ids": dropped[:20],
            "kept_ids": sorted(str(ids[best[k]]) for k in groups)[:20]}
    return keep, info


def zero_vector_rows(norms):
    """Positions of the junk (zero) vectors among ``norms``: norm 0, not finite, or below
    :data:`ZERO_NORM_FLOOR` times the median of the positive norms.

    A zero vector has no direction: cosine scores are 0 (or NaN) against every document, so it would
    be "ranked" in id order, and its norm is an outlier that moves every correlation. Such vectors come
    from float16 underflow, placeholder rows of vector stores, or failed encodes.

    Parameters
    ----------
    norms : array-like of shape (n,)

    Returns
    -------
    ndarray of int64, increasing
    """
    import numpy as np

    r = np.asarray(norms, dtype=np.float64)
    pos = r[np.isfinite(r) & (r > 0)]
    floor = ZERO_NORM_FLOOR * float(np.median(pos)) if pos.size else np.inf
    return np.flatnonzero(~np.isfinite(r) | (r <= 0) | (r < floor)).astype(np.int64)


def find_junk(texts: Sequence[str], ids: Sequence[str] | None = None, *, tokenizer=None, token_ids=None) -> Junk:
    """Find the junk items of ``texts``: the one rule of every command (embed, probe, correlate, retrieval, report).

    An item is junk when it is empty after Unicode NFKC normalisation and removal of whitespace,
    format and control characters (:func:`junk_text_reason`), or, when ``tokenizer`` is given,
    when it tokenizes to nothing but special and unknown tokens (e.g. a string of emoji for a
    WordPiece vocabulary without them).

    Parameters
    ----------
    texts : sequence of str, length n
    ids : sequence of str, length n, optional
        Default: ``"0".."n-1"``.
    tokenizer : Hugging Face tokenizer, optional
        The model's tokenizer (:attr:`normscope.encoders.base.Encoder.hf_tokenizer`).
    token_ids : sequence of n sequences of int, optional, keyword-only
        Each text's ``input_ids`` from ``tokenizer`` with special tokens added and truncation off (the
        tokenization of :meth:`~normscope.encoders.base.Encoder.token_counts`), to save tokenizing
        again. Used only for a fast tokenizer whose added tokens (those of the empty text) are all
        special: there "special and unknown tokens only" holds with them exactly when it holds
        without (a fast tokenizer adds them after its model, leaving the text's own tokens as they
        are). Otherwise the texts are tokenized here, without special tokens.

    Returns
    -------
    Junk
    """
    texts = [str(t) for t in texts]
    ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(len(texts))]
    reasons: dict[int, str] = {}
    for i, t in enumerate(texts):
        r = junk_text_reason(t)
        if r is not None:
            reasons[i] = r
    if tokenizer is not None and callable(tokenizer):
        rest = [i for i in range(len(texts)) if i not in reasons]
        if rest:
            special = set(getattr(tokenizer, "all_special_ids", None) or [])
            unk = getattr(tokenizer, "unk_token_id", None)
            if unk is not None:
                special.add(unk)
            if (token_ids is not None and len(token_ids) == len(texts) and getattr(tokenizer, "is_fast", False)
                    and set(tokenizer("", add_special_tokens=True)["input_ids"]) <= special):
                rest_ids = [token_ids[i] for i in rest]
            else:
                rest_ids = tokenizer([texts[i] for i in rest], add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
            for i, tok_ids in zip(rest, rest_ids):
                if all(t in special for t in tok_ids):
                    reasons[i] = JUNK_TOKENS
    index = sorted(reasons)
    return Junk(index=index, ids=[ids[i] for i in index], reasons=[reasons[i] for i in index])


# ----------------------------------------------------------------------------- reading (shared with the BEIR loader)
def read_text(path: str | Path, *, error: type[Exception] = InputError) -> str:
    """The text of a UTF-8 file, ``.gz`` or not: the one reader of ``embed`` and the BEIR loader.

    A leading UTF-8 byte-order mark is dropped; line endings are left for :func:`split_lines`.

    Parameters
    ----------
    path : str or Path
        A file; a name ending in ``.gz`` is gunzipped.
    error : exception class, keyword-only
        Raised (with a one-line message naming the file) on a bad file: :class:`InputError` for
        ``embed`` items, :class:`~normscope.errors.DataError` for a dataset.

    Returns
    -------
    str

    Raises
    ------
    error
        A corrupt or truncated gzip stream, or bytes that are not UTF-8 (byte offset and line named).
    """
    import zlib

    path = Path(path)
    raw = path.read_bytes()
    if path.name.lower().endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile, truncated stream, corrupt deflate data
            raise error(f"{path} is not a valid gzip file ({str(exc) or type(exc).__name__})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{path} is not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} (line {line})"
        ) from None
    return text.removeprefix("\ufeff")


def join_title(title: str | None, text: str) -> str:
    """A document's text as BEIR's SentenceBERT wrapper builds it: ``(title + " " + text).strip()``, or
    ``text.strip()`` without a title (Thakur et al. 2021). Shared by ``embed`` and the BEIR loader."""
    title = str(title or "")
    return (title + " " + str(text)).strip() if title else str(text).strip()


def split_lines(text: str) -> list[str]:
    """Lines of ``text``: only ``\\n``, ``\\r\\n`` and ``\\r`` end a line (``str.splitlines`` would also split
    on ``\\x0b``, ``\\x1c``, ``\\u2028`` ... inside a JSON string); a final empty line is dropped."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


# ----------------------------------------------------------------------------- helpers
def _parse_text(text: str):
    lines = split_lines(text)
    return [str(i) for i in range(len(lines))], lines, list(range(1, len(lines) + 1))


def _parse_jsonl(text: str, path: Path):
    ids: list[str | None] = []
    texts: list[str] = []
    lines: list[int] = []
    for ln, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue  # blank separator lines are not items
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {ln} is not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}: line {ln} is a JSON {type(obj).__name__}, expected an object with a 'text' field")
        if "text" not in obj:
            raise InputError(f"{path}: line {ln} has no 'text' field (fields: {sorted(obj)[:8]})")
        body, title = obj["text"], obj.get("title")
        if not isinstance(body, str) or (title is not None and not isinstance(title, str)):
            raise InputError(f"{path}: line {ln}: 'text' and 'title' must be strings")
        texts.append(join_title(title, body))
        raw_id = obj.get("_id", obj.get("id"))
        ids.append(None if raw_id is None else str(raw_id))
        lines.append(ln)
    return _fill_ids(ids, lines, path), texts, lines


def _parse_csv(text: str, path: Path):
    """Rows of a CSV with a ``text`` column, read by :func:`csv_records` (strict; a text of any length:
    the model truncates, and the truncation is counted)."""
    rows = csv_records(text, path)
    header = next(rows, None)
    fields = header[1] if header is not None else []
    if "text" not in fields:
        raise InputError(f"{path}: CSV has no 'text' column (columns: {fields})")
    col = {name: k for k, name in reversed(list(enumerate(fields)))}  # first column of a name, as DictReader
    id_col = "id" if "id" in fields else ("_id" if "_id" in fields else None)
    ids: list[str | None] = []
    texts: list[str] = []
    lines: list[int] = []
    for start, row in rows:
        if not any(v.strip() for v in row):
            continue  # fully blank row
        if len(row) > len(fields):
            raise InputError(f"{path}: line {start}: {len(row)} fields but the header has {len(fields)} "
                             "(an unquoted comma in a text? quote the field)")
        row = row + [""] * (len(fields) - len(row))
        texts.append(row[col["text"]])
        ids.append((row[col[id_col]] or None) if id_col else None)
        lines.append(start)
    return _fill_ids(ids, lines, path), texts, lines


def csv_records(text: str, path: str | Path, *, delimiter: str = ","):
    """``(line the record starts on, fields)`` of each non-empty record of a CSV text, read strictly.

    The one CSV reader of user files (items, ``--by`` columns, pair files): ``csv.reader(strict=True)``
    with no field size limit. A quote that is never closed, or closed in the middle of a field, is an
    :class:`~normscope.errors.InputError` naming the line where that record starts (a lenient reader
    would silently swallow the rows after it).

    Yields
    ------
    (int, list of str)
    """
    old_limit = csv.field_size_limit()
    csv.field_size_limit(2**31 - 1)
    try:
        yield from _csv_records(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True), Path(path))
    finally:
        csv.field_size_limit(old_limit)


def _csv_records(reader, path: Path):
    """``(line the record starts on, fields)`` of each non-empty record of a strict ``csv.reader``."""
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                raise InputError(f"{path}: line {start}: a quoted field opened in this record is never closed "
                                 "(an unterminated quote would swallow every row after it)") from None
            raise InputError(f"{path}: malformed CSV in the record starting on line {start} ({exc}; a quote inside a "
                             "quoted field is written twice, \"\")") from None
        if row:
            yield start, row


def _fill_ids(ids: list[str | None], lines: list[int], path: Path) -> list[str]:
    missing = [ln for ln, i in zip(lines, ids) if i is None]
    if not missing:
        return [str(i) for i in ids]
    if len(missing) == len(ids):
        return [str(k) for k in range(len(ids))]
    raise InputError(
        f"{path}: some items have an id and others not; missing at {noun(len(missing), 'line')} "
        f"{', '.join(map(str, missing[:_SHOW]))}"
    )


def _check_unique(ids: list[str], lines: list[int], path: Path) -> None:
    seen: dict[str, int] = {}
    dups: list[str] = []
    for i, ln in zip(ids, lines):
        if i in seen:
            dups.append(f"'{i}' (lines {seen[i]} and {ln})")
        else:
            seen[i] = ln
    if dups:
        more = f" (and {len(dups) - 3} more)" if len(dups) > 3 else ""
        raise InputError(f"{path}: duplicate {noun(len(dups), 'id')} {', '.join(dups[:3])}{more}")
