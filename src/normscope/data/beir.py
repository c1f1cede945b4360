"""BEIR datasets: the directory layout, and Hugging Face hub copies when online.

Directory layout (Thakur et al., BEIR, NeurIPS 2021 datasets track)::

    DIR/corpus.jsonl[.gz]        {"_id", "title", "text", ...} one object per line
    DIR/queries.jsonl[.gz]       {"_id", "text", ...}
    DIR/qrels/{split}.tsv[.gz]   header "query-id<TAB>corpus-id<TAB>score", then rows

Every file is read by :func:`normscope.inputs.read_text` and split by
:func:`normscope.inputs.split_lines`, the reader of ``normscope embed``: a UTF-8 byte-order
mark, CRLF line endings and gzip are handled the same way in both, and a corrupt or truncated
``.gz`` is a one-line :class:`DataError` naming the file. Document text is ``title + " " + text``
stripped (the BEIR / sentence-transformers convention); a document without title is its text.
The original TREC-style NFCorpus release is converted to this layout by
:func:`normscope.retrieval.trec.convert_trec` (``normscope beir-convert``).

Problems in the data are either errors (:class:`DataError`, naming the file, line or
id: empty corpus, duplicate ids, malformed lines, a missing split) or warnings
counted in :attr:`SplitQueries.counts` (qrels naming unknown documents, judged queries
without text or without any relevant document; such queries are excluded).
"""

from __future__ import annotations

import dataclasses
import json
import re
import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

from normscope._format import noun, plural
from normscope.data import data_path
from normscope.errors import DataError, InputError
from normscope.inputs import join_title, read_text, split_lines

__all__ = ["BeirDataset", "SplitQueries", "load_beir", "load_beir_hub", "load_qrels", "doc_text", "BeirDataWarning", "load_dataset_any"]


class BeirDataWarning(UserWarning):
    """Data problems that do not stop evaluation (unknown documents in qrels, excluded queries)."""


def doc_text(doc: Mapping) -> str:
    """``title + " " + text``, stripped (BEIR / sentence-transformers convention; :func:`normscope.inputs.join_title`)."""
    return join_title(doc.get("title"), doc.get("text") or "")


@dataclasses.dataclass
class SplitQueries:
    """The evaluable queries of one split.

    Attributes
    ----------
    split : str
    query_ids : list of str
        Queries with text and at least one relevant (score > 0) judgement, in qrels order.
    texts : list of str
    qrels : dict of {qid: {docid: int}}
        Judgements of those queries (including documents absent from the corpus).
    counts : dict of str -> int
        ``judged`` (distinct query ids in the qrels file), ``evaluated``,
        ``excluded_no_text`` (judged ids missing from queries.jsonl),
        ``excluded_no_relevant`` (judged ids with no score > 0),
        ``qrels_unknown_docs`` (judgement rows naming a document not in the corpus),
        ``queries_without_qrels`` (queries.jsonl ids not judged in this split; not an error:
        BEIR keeps every split's queries in one file).
    """

    split: str
    query_ids: list[str]
    texts: list[str]
    qrels: dict[str, dict[str, int]]
    counts: dict[str, int]


@dataclasses.dataclass
class BeirDataset:
    """A loaded BEIR dataset.

    Attributes
    ----------
    name : str
    doc_ids : list of str, length n_docs
    doc_texts : list of str
        ``title + " " + text`` per document.
    queries : dict of {qid: text}
    qrels : dict of {split: {qid: {docid: int}}}
    doc_titles : list of str, length n_docs
        The ``title`` field of each document ("" when absent), for display.
    """

    name: str
    doc_ids: list[str]
    doc_texts: list[str]
    queries: dict[str, str]
    qrels: dict[str, dict[str, dict[str, int]]]
    doc_titles: list[str] = dataclasses.field(default_factory=list)

    @property
    def splits(self) -> list[str]:
        """Available qrels splits, sorted."""
        return sorted(self.qrels)

    def split_queries(self, split: str, *, warn: bool = True) -> SplitQueries:
        """Evaluable queries of ``split`` with exclusion counts (see :class:`SplitQueries`).

        Raises
        ------
        DataError
            Unknown split, or no evaluable query left.
        """
        if split not in self.qrels:
            raise DataError(f"dataset '{self.name}' has no qrels split '{split}' (available: {', '.join(self.splits) or 'none'})")
        qrels = self.qrels[split]
        docset = set(self.doc_ids)
        unknown_docs = sum(1 for q in qrels.values() for d in q if d not in docset)
        no_text = [q for q in qrels if q not in self.queries]
        no_rel = [q for q in qrels if q in self.queries and not any(v > 0 for v in qrels[q].values())]
        keep = [q for q in qrels if q in self.queries and any(v > 0 for v in qrels[q].values())]
        counts = {
            "judged": len(qrels),
            "evaluated": len(keep),
            "excluded_no_text": len(no_text),
            "excluded_no_relevant": len(no_rel),
            "qrels_unknown_docs": unknown_docs,
            "queries_without_qrels": sum(1 for q in self.queries if q not in qrels),
        }
        if warn and unknown_docs:
            warnings.warn(
                f"{self.name}/{split}: {plural(unknown_docs, 'qrels row')} {noun(unknown_docs, 'names a document', 'name documents')} "
                "absent from the corpus "
                "(kept as relevant but unretrievable)",
                BeirDataWarning,
                stacklevel=2,
            )
        if warn and (no_text or no_rel):
            warnings.warn(
                f"{self.name}/{split}: excluded {len(no_text)} judged quer(ies) without text "
                f"and {len(no_rel)} without any relevant document",
                BeirDataWarning,
                stacklevel=2,
            )
        if not keep:
            raise DataError(f"dataset '{self.name}' split '{split}' has no query with text and a relevant document")
        return SplitQueries(
            split=split,
            query_ids=keep,
            texts=[self.queries[q] for q in keep],
            qrels={q: dict(qrels[q]) for q in keep},
            counts=counts,
        )


def _find(directory: Path, stem: str) -> Path | None:
    for name in (f"{stem}.jsonl", f"{stem}.jsonl.gz"):
        if (directory / name).is_file():
            return directory / name
    return None


def _read_jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    for lineno, line in enumerate(split_lines(read_text(path, error=DataError)), start=1):
        line = line.strip()
        if not line:
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or "_id" not in obj:
            raise DataError(f"{path}:{lineno}: expected an object with an '_id' field")
        yield lineno, obj


def _qrels_files(qdir: Path) -> dict[str, Path]:
    """``{split: path}`` of ``qrels/{split}.tsv`` and ``qrels/{split}.tsv.gz`` (DataError when both exist)."""
    out: dict[str, Path] = {}
    if not qdir.is_dir():
        return out
    for p in sorted(qdir.iterdir()):
        name = p.name
        split = name[: -len(".tsv.gz")] if name.endswith(".tsv.gz") else name[: -len(".tsv")] if name.endswith(".tsv") else None
        if split is None or not p.is_file():
            continue
        if split in out:
            raise DataError(f"{qdir}: both {out[split].name} and {name} exist; keep one")
        out[split] = p
    return out


#: Header names of a qrels file's first line (BEIR writes ``query-id corpus-id score``); any other
#: non-numeric score is an error naming its line, never a silently skipped row.
_QRELS_HEADER = {"query-id", "query_id", "qid", "query", "corpus-id", "corpus_id", "docid", "doc-id", "doc_id",
                 "score", "rel", "relevance", "label", "grade", "iteration", "iter", "q0"}


def load_qrels(path: str | Path, *, grade_scale: int = 1, trec: bool = False) -> dict[str, dict[str, int]]:
    """Read a BEIR qrels TSV (``query-id, corpus-id, score``, optional header; CRLF, BOM, ``.gz`` ok).

    Four-column TREC qrels (``qid iteration docid rel``, whitespace separated) are also read.
    Relevance grades are integers, as trec_eval and pytrec_eval read them; a grade such as ``0.5``
    is refused with its line named (it would be truncated to 0), unless ``grade_scale`` makes every
    grade an integer: each grade is read times ``grade_scale`` (nDCG is unchanged by a common
    scale of the gains; binary measures then count a grade >= 1 / ``grade_scale`` as relevant).

    Parameters
    ----------
    path : str or Path
    grade_scale : int, keyword-only
        Factor applied to every grade before it must be an integer (default 1).
    trec : bool, keyword-only
        Only TREC's four fields per line (``normscope beir-convert``): a three-field line is an
        error, not read as BEIR's ``query-id corpus-id score``.

    Returns
    -------
    dict of {qid: {docid: int}}, in file order.

    Raises
    ------
    DataError
        Missing file, a corrupt ``.gz``, non-UTF-8 bytes, a malformed row or a ``#`` comment line (line
        number named), a grade that is not a finite number or not an integer (times ``grade_scale``),
        or the same (qid, docid) judged twice with different scores. Identical repeated rows are merged
        with a :class:`BeirDataWarning`.
    """
    from fractions import Fraction

    path = Path(path)
    if not path.is_file():
        raise DataError(f"qrels file not found: {path}")
    if isinstance(grade_scale, bool) or not isinstance(grade_scale, int) or grade_scale < 1:
        raise InputError(f"grade_scale must be a positive integer, got {grade_scale!r}")
    qrels: dict[str, dict[str, int]] = {}
    repeats = 0
    fractional: list[tuple[int, str]] = []
    want = "4 whitespace-separated fields (qid iteration docid rel)" if trec else \
        "3 tab-separated fields (query-id, corpus-id, score)"
    for lineno, line in enumerate(split_lines(read_text(path, error=DataError)), start=1):
        row = _qrels_row(line, lineno, path, trec=trec, want=want)
        if row is None:
            continue
        q, d, s = row
        scaled = Fraction(s) * grade_scale  # exact: "0.1" is 1/10, not the float nearest it
        if scaled.denominator != 1:
            fractional.append((lineno, s))
            continue
        rel = int(scaled)
        prev = qrels.setdefault(q, {}).get(d)
        if prev is not None:
            if prev != rel:
                raise DataError(f"{path}:{lineno}: query '{q}' judges document '{d}' twice with scores {prev} and {rel}")
            repeats += 1
        qrels[q][d] = rel
    if fractional:
        raise _fractional_grades(path, fractional, grade_scale)
    if repeats:
        warnings.warn(f"{path}: {plural(repeats, 'repeated identical judgement row')} merged", BeirDataWarning, stacklevel=2)
    return qrels


#: a grade as trec_eval writes and reads it (``float()`` alone would accept ``1_0`` as 10 and other scripts' digits)
_PLAIN_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _qrels_row(line: str, lineno: int, path: Path, *, trec: bool, want: str) -> tuple[str, str, str] | None:
    """(query id, document id, grade as written) of one qrels line; None for a blank line or the header row;
    :class:`DataError` naming the line for a comment, a wrong field count or a grade that is not a finite
    number."""
    import math

    if not line.strip():
        return None
    if line.lstrip().startswith("#"):
        raise DataError(f"{path}:{lineno}: a comment line ('#'); qrels files have no comments (trec_eval rejects "
                        "them too): remove the line")
    parts = line.split() if trec else (line.split("\t") if "\t" in line else line.split())
    if len(parts) == 4:
        parts = [parts[0], parts[2], parts[3]]
    elif trec or len(parts) != 3:
        raise DataError(f"{path}:{lineno}: expected {want}, got {len(parts)}")
    q, d, s = (p.strip() for p in parts)
    try:
        value = float(s)
    except ValueError:
        if lineno == 1 and s.lower() in _QRELS_HEADER and q.lower() in _QRELS_HEADER:  # a header row
            return None
        raise DataError(f"{path}:{lineno}: score '{s}' is not a number") from None
    if not math.isfinite(value):
        raise DataError(f"{path}:{lineno}: score '{s}' is not a finite number")
    if not _PLAIN_NUMBER.fullmatch(s):  # Python's float() also reads "1_0" as 10 and non-ASCII digits
        raise DataError(f"{path}:{lineno}: score '{s}' is not a plain number (ASCII digits, with an optional sign, "
                        f"'.' and exponent); it is not read as {value:g}")
    return q, d, s


def _fractional_grades(path: Path, fractional: list[tuple[int, str]], grade_scale: int) -> DataError:
    """The error for grades that are not integers times ``grade_scale``: the first line, their count and
    the smallest ``--grade-scale`` that makes every grade an integer."""
    import math
    from fractions import Fraction

    ln, s = fractional[0]
    lcm = 1
    for _, t in fractional:
        den = Fraction(t).limit_denominator(10**6).denominator
        lcm = lcm * den // math.gcd(lcm, den)
    scale = grade_scale * lcm
    return DataError(f"{path}:{ln}: grade '{s}' is not an integer{f' times {grade_scale}' if grade_scale > 1 else ''} "
                     f"({plural(len(fractional), 'such line')}); trec_eval and pytrec_eval read integer grades and truncating "
                     f"would change them: read every grade times {scale} with --grade-scale {scale} (nDCG is unchanged "
                     "by a common scale)")


def _build(name: str, docs: Iterable[tuple[str, dict]], queries: Iterable[tuple[str, dict]], qrels: dict) -> BeirDataset:
    doc_ids: list[str] = []
    doc_texts: list[str] = []
    doc_titles: list[str] = []
    seen: set[str] = set()
    for where, obj in docs:
        did = str(obj["_id"])
        if did in seen:
            raise DataError(f"{where}: duplicate document id '{did}'")
        seen.add(did)
        doc_ids.append(did)
        doc_texts.append(doc_text(obj))
        doc_titles.append(str(obj.get("title") or "").strip())
    if not doc_ids:
        raise DataError(f"dataset '{name}': the corpus is empty")
    qmap: dict[str, str] = {}
    for where, obj in queries:
        qid = str(obj["_id"])
        if qid in qmap:
            raise DataError(f"{where}: duplicate query id '{qid}'")
        qmap[qid] = str(obj.get("text") or "").strip()
    return BeirDataset(name=name, doc_ids=doc_ids, doc_texts=doc_texts, queries=qmap, qrels=qrels, doc_titles=doc_titles)


def load_beir(path: str | Path, *, splits: Iterable[str] | None = None, grade_scale: int = 1) -> BeirDataset:
    """Load a BEIR dataset directory.

    Parameters
    ----------
    path : str or Path
        Directory with ``corpus.jsonl[.gz]``, ``queries.jsonl[.gz]`` and ``qrels/*.tsv[.gz]``.
    splits : iterable of str, keyword-only
        Qrels splits to read (default: every ``qrels/*.tsv[.gz]``).
    grade_scale : int, keyword-only
        Every relevance grade is read times this factor and must then be an integer (:func:`load_qrels`).

    Returns
    -------
    BeirDataset

    Raises
    ------
    DataError
        Missing directory or file, empty corpus, duplicate ids, malformed lines, a corrupt ``.gz``,
        non-UTF-8 bytes, a requested split without a qrels file.
    """
    path = Path(path)
    if path.is_file():
        raise DataError(f"a BEIR dataset is a folder (the one holding corpus.jsonl, queries.jsonl and qrels/), not a "
                        f"file: {path}; give its folder, {path.parent}")
    if not path.is_dir():
        raise DataError(f"BEIR dataset directory not found: {path}")
    corpus = _find(path, "corpus")
    queries = _find(path, "queries")
    if corpus is None:
        hint = " (a TREC-style release? convert it with: normscope beir-convert SRC OUT)" if any(path.glob("*.docs")) else ""
        raise DataError(f"{path}: no corpus.jsonl or corpus.jsonl.gz{hint}")
    if queries is None:
        raise DataError(f"{path}: no queries.jsonl or queries.jsonl.gz")
    files = _qrels_files(path / "qrels")
    available = sorted(files)
    wanted = list(splits) if splits is not None else available
    for s in wanted:
        if s not in files:
            raise DataError(f"{path}: no qrels/{s}.tsv (available splits: {', '.join(available) or 'none'})")
    qrels = {s: load_qrels(files[s], grade_scale=grade_scale) for s in wanted}
    return _build(
        path.name,
        ((f"{corpus}:{n}", o) for n, o in _read_jsonl(corpus)),
        ((f"{queries}:{n}", o) for n, o in _read_jsonl(queries)),
        qrels,
    )


def load_beir_hub(name: str, *, splits: Iterable[str] = ("train", "test")) -> BeirDataset:
    """Load a BEIR dataset from the Hugging Face hub (``BeIR/<name>`` and ``BeIR/<name>-qrels``).

    Needs the optional extra ``datasets`` and network access.

    Parameters
    ----------
    name : str
        ``scifact``, ``BeIR/scifact`` or ``hf:BeIR/scifact``.
    splits : iterable of str
        Qrels splits to load; splits the hub copy lacks are skipped.

    Returns
    -------
    BeirDataset
        Named after the hub repository (``BeIR/<name>``).

    Raises
    ------
    DataError
        ``datasets`` not installed (names the extra), ``HF_HUB_OFFLINE`` set, or the hub
        dataset cannot be loaded.
    """
    repo = name.removeprefix("hf:")
    if "/" not in repo:
        repo = f"BeIR/{repo}"
    try:
        import datasets
    except ImportError:
        raise DataError(
            f"loading '{repo}' from the Hugging Face hub needs the Hugging Face "
            "'datasets' package (pip install datasets); or give a BEIR directory"
        ) from None
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        raise DataError(f"cannot load hub dataset '{repo}': HF_HUB_OFFLINE is set; give a BEIR directory")
    try:
        corpus = datasets.load_dataset(repo, "corpus", split="corpus")
        queries = datasets.load_dataset(repo, "queries", split="queries")
        qrels: dict[str, dict[str, dict[str, int]]] = {}
        for s in splits:
            try:
                rows = datasets.load_dataset(f"{repo}-qrels", split=s)
            except Exception:  # split absent on the hub
                continue
            qs: dict[str, dict[str, int]] = {}
            for r in rows:
                qs.setdefault(str(r["query-id"]), {})[str(r["corpus-id"])] = int(r["score"])
            qrels[s] = qs
    except Exception as exc:
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot load hub dataset '{repo}' ({reason})") from None
    return _build(
        repo,
        ((f"{repo}/corpus row {i}", dict(r)) for i, r in enumerate(corpus)),
        ((f"{repo}/queries row {i}", dict(r)) for i, r in enumerate(queries)),
        qrels,
    )


def load_dataset_any(spec: str | Path, *, splits: Iterable[str] | None = None, grade_scale: int = 1) -> BeirDataset:
    """A BEIR directory, ``scifact`` / ``nfcorpus`` (:func:`normscope.data.data_path`), or a hub dataset
    when ``spec`` starts with ``hf:``.

    Raises
    ------
    DataError, InputError
    """
    s = str(spec)
    if s.startswith("hf:"):
        return load_beir_hub(s, splits=tuple(splits) if splits is not None else ("train", "dev", "test"))
    if s in ("scifact", "nfcorpus") and not Path(s).exists():
        s = str(data_path(s))  # a data folder's copy, else fetched (normscope data fetch NAME)
    if not Path(s).exists():
        raise InputError(f"dataset not found: {s} (a BEIR directory, scifact or nfcorpus, or hf:BeIR/<name> for the hub)")
    return load_beir(s, splits=splits, grade_scale=grade_scale)
