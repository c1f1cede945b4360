"""Convert a TREC-style release (the original NFCorpus layout) to a BEIR directory.

The original NFCorpus release (Boteva et al., ECIR 2016) is not in BEIR's layout::

    SRC/{split}.docs                 ID<TAB>TEXT, one document per line
    SRC/{split}.{kind}.queries       ID<TAB>TEXT (kind: titles, all, nontopic-titles, vid-titles, vid-desc)
    SRC/{split}.{grades}.qrel        TREC qrels "qid 0 docid rel" (grades: 2-1-0 or 3-2-1)

:func:`convert_trec` (command ``normscope beir-convert SRC OUT``) writes the BEIR layout that
:func:`normscope.data.beir.load_beir` reads: ``OUT/corpus.jsonl`` (the union of every
``*.docs`` file), ``OUT/queries.jsonl`` (the ``{kind}`` queries of every split, default
``titles``, as ir_datasets' ``nfcorpus/*`` queries) and ``OUT/qrels/{split}.tsv`` (the
``{grades}`` judgements, default ``2-1-0``: BEIR's grading of NFCorpus, where the release's lowest
level, a marginal / topic-level link, is 0 and not relevant; ``3-2-1`` keeps the release's other
grading, as ir_datasets, where that level is 1 and counts as relevant). A plain ``{split}.queries`` or
``{split}.qrel`` is used when the variant-less name is what the folder holds. The grading used and
the file each split was read from are written to ``OUT/conversion.json`` (:data:`CONVERSION_FILE`)
and returned. Every file is read
with :func:`normscope.inputs.read_text` (BOM, CRLF, ``.gz``), so the same bytes read the same way
as in ``normscope embed``.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

from normscope._io import atomic_path
from normscope.errors import DataError, InputError
from normscope.inputs import read_text, split_lines
from normscope.data.beir import load_qrels
from normscope.engine.shards import replace_dir
from normscope.validate import check_paths, write_failure

__all__ = ["convert_trec", "read_id_text", "GRADINGS", "DEFAULT_GRADING", "CONVERSION_FILE"]

#: The NFCorpus gradings: variant -> what it means.
GRADINGS: dict[str, str] = {
    "2-1-0": "BEIR's grading: 2 direct, 1 indirect, 0 marginal (topic-level) link, which is then not relevant",
    "3-2-1": "the release's other grading (as ir_datasets): 3 direct, 2 indirect, 1 marginal link, which then counts "
             "as relevant",
}
#: The grading read unless ``--qrels`` names another (BEIR's).
DEFAULT_GRADING = "2-1-0"
#: The file of the converted folder that records how it was converted.
CONVERSION_FILE = "conversion.json"


def read_id_text(path: str | Path) -> list[tuple[str, str]]:
    """``(id, text)`` rows of an ``ID<TAB>TEXT`` file (``.gz`` allowed); blank lines skipped.

    Raises
    ------
    DataError
        A non-blank line without a tab (file and line named), an empty id, a repeated id with a
        different text, a corrupt ``.gz`` or non-UTF-8 bytes.
    """
    path = Path(path)
    rows: dict[str, str] = {}
    for ln, line in enumerate(split_lines(read_text(path, error=DataError)), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise DataError(f"{path}:{ln}: expected ID<TAB>TEXT")
        i, text = line.split("\t", 1)
        i = i.strip()
        if not i:
            raise DataError(f"{path}:{ln}: empty id")
        if i in rows and rows[i] != text.strip():
            raise DataError(f"{path}:{ln}: id '{i}' appears twice with different texts")
        rows[i] = text.strip()
    return list(rows.items())


def _pick(src: Path, split: str, variant: str, suffix: str) -> Path | None:
    for name in (f"{split}.{variant}.{suffix}", f"{split}.{suffix}"):
        for cand in (src / name, src / f"{name}.gz"):
            if cand.is_file():
                return cand
    return None


def _merge(rows, into: dict[str, str], where: Path, what: str) -> None:
    for i, text in rows:
        if i in into and into[i] != text:
            raise DataError(f"{where}: {what} id '{i}' has another text in an earlier file")
        into[i] = text


def convert_trec(src: str | Path, out: str | Path, *, queries: str = "titles", qrels: str = DEFAULT_GRADING) -> dict:
    """Write a BEIR directory from a TREC-style release (see the module docstring).

    Parameters
    ----------
    src : str or Path
        Folder holding ``*.docs``, ``*.queries`` and ``*.qrel`` files.
    out : str or Path
        New folder to create (its parent must exist; an existing non-empty folder is refused,
        so nothing is overwritten).
    queries : str, keyword-only
        Query variant: ``{split}.{queries}.queries`` (default ``titles``).
    qrels : str, keyword-only
        Judgement variant (grading): ``{split}.{qrels}.qrel`` (default ``2-1-0``, BEIR's; ``3-2-1`` the
        release's other grading, :data:`GRADINGS`).

    Returns
    -------
    dict
        ``n_docs``, ``n_queries``, ``splits`` ({split: judged queries}), ``grading`` (the variant asked),
        ``grading_meaning`` (:data:`GRADINGS`, or what the file names say for another variant),
        ``qrels_files`` ({split: file read}), ``files`` (paths written, :data:`CONVERSION_FILE` last).

    Raises
    ------
    InputError
        ``src`` missing, ``out`` existing and not empty, or its parent missing.
    DataError
        No ``*.docs`` or no ``*.qrel`` file; a split whose qrels have no matching queries file;
        malformed lines (file and line named); one id with two texts.
    """
    src, out = Path(src), Path(out)
    if not src.is_dir():
        raise InputError(f"TREC-style source folder not found: {src}")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"output folder exists and is not empty: {out} (choose a new folder)")
    check_paths([("OUT", out, "dir")], inputs=[("SRC", src)])
    doc_files = sorted(p for p in src.iterdir() if p.name.endswith((".docs", ".docs.gz")))
    if not doc_files:
        raise DataError(f"{src}: no *.docs file (ID<TAB>TEXT documents)")
    splits = sorted({p.name.split(".")[0] for p in src.iterdir() if p.name.endswith((".qrel", ".qrel.gz"))})
    if not splits:
        raise DataError(f"{src}: no *.qrel file (TREC qrels)")
    docs: dict[str, str] = {}
    for f in doc_files:
        _merge(read_id_text(f), docs, f, "document")
    qmap: dict[str, str] = {}
    judged: dict[str, dict[str, dict[str, int]]] = {}
    read_from: dict[str, str] = {}
    for split in splits:
        qf = _pick(src, split, queries, "queries")
        rf = _pick(src, split, qrels, "qrel")
        if rf is None:
            continue  # this split has only another grading variant
        if qf is None:
            raise DataError(f"{src}: split '{split}' has {rf.name} but no {split}.{queries}.queries")
        _merge(read_id_text(qf), qmap, qf, "query")
        judged[split] = load_qrels(rf, trec=True)
        read_from[split] = rf.name
    if not judged:
        raise DataError(f"{src}: no {{split}}.{qrels}.qrel file (grading variants present: "
                        f"{', '.join(sorted({p.name for p in src.glob('*.qrel*')}))})")
    # the folder is written whole in a staging folder beside OUT, then renamed: OUT is never half written

    stage = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:12]}"
    files = [("corpus.jsonl", "".join(json.dumps({"_id": i, "title": "", "text": t}, ensure_ascii=False) + "\n"
                                     for i, t in docs.items())),
             ("queries.jsonl", "".join(json.dumps({"_id": i, "text": t}, ensure_ascii=False) + "\n" for i, t in qmap.items()))]
    files += [(f"qrels/{split}.tsv", "query-id\tcorpus-id\tscore\n"
               + "".join(f"{q}\t{d}\t{v}\n" for q, ds in qr.items() for d, v in ds.items())) for split, qr in judged.items()]
    plain = sorted(s for s, f in read_from.items() if f".{qrels}." not in f)
    meaning = GRADINGS.get(qrels, f"the grades of the '{qrels}' files as written")
    if plain:
        meaning += f" ({', '.join(read_from[s] for s in plain)}: a file without a grading in its name, read as written)"
    record = {"source": str(src), "queries": queries, "grading": qrels, "grading_meaning": meaning,
              "gradings_known": GRADINGS, "qrels_files": read_from}
    files.append((CONVERSION_FILE, json.dumps(record, indent=2, ensure_ascii=False) + "\n"))
    try:
        (stage / "qrels").mkdir(parents=True)
        for name, body in files:
            with atomic_path(stage / name, "OUT") as tmp:
                Path(tmp).write_text(body, encoding="utf-8")
        replace_dir(stage, out)
    except OSError as exc:
        raise (write_failure(exc, out, "OUT") or exc) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    written = [str(out / name) for name, _ in files]
    return {"n_docs": len(docs), "n_queries": len(qmap), "splits": {s: len(q) for s, q in judged.items()},
            "grading": qrels, "grading_meaning": meaning, "qrels_files": read_from, "files": written}
