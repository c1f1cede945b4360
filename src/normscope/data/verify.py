"""Verification of a dataset copy: sha256 of byte-pinned files, then content facts.

Every copy, whatever its source, goes through :func:`verify`: each installed file whose upstream
bytes are known (:attr:`~normscope.data.registry.Dataset.sha256`) must hash to the pinned value,
and the content must show the published facts below (row counts, known records). The counts are
those of the shared data's ``SOURCE.md`` files; NFCorpus's are ir_datasets' metadata for
``beir/nfcorpus`` (docs 3,633, queries 3,237; qrels per split and relevance grade).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from normscope._io import write_json
from normscope.data.registry import Dataset
from normscope.encoders.bundled import cache_dir
from normscope.errors import DataError, OutputError
from normscope.inputs import read_text, split_lines

__all__ = ["verify", "sha256_file", "check_hashes", "verify_copy", "VERIFIED_FILE"]


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def _first(folder: Path, *names: str) -> Path:
    for n in names:
        if (folder / n).is_file():
            return folder / n
    raise DataError(f"{folder} has none of {', '.join(names)}")


def _lines(path: Path) -> list[str]:
    """Text lines of a (possibly gzipped) UTF-8 file, CRLF tolerated, no trailing empty line."""
    return split_lines(read_text(path, error=DataError))


def _jsonl(path: Path) -> list[dict]:
    out = []
    for i, line in enumerate(_lines(path), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                raise DataError(f"{path.name} line {i} is not JSON") from None
    return out


def _expect(what: str, got, want) -> str:
    if got != want:
        raise DataError(f"content check failed: {what} is {got!r}, expected {want!r}")
    return f"{what} = {want:,}" if isinstance(want, int) else f"{what} = {want!r}"


# ------------------------------------------------------------------------------------------- BEIR
def _beir(folder: Path, *, docs: int, queries: int, qrels: dict[str, tuple[int, int, dict[int, int] | None]],
          first_doc: tuple[str, str] | None = None, id_prefix: str | None = None) -> list[str]:
    corpus = _jsonl(_first(folder, "corpus.jsonl", "corpus.jsonl.gz"))
    facts = [_expect("documents", len(corpus), docs)]
    facts.append(_expect("distinct document ids", len({str(d.get("_id")) for d in corpus}), docs))
    if first_doc is not None:
        facts.append(_expect("first document (id, title start)",
                             (str(corpus[0].get("_id")), str(corpus[0].get("title", ""))[:len(first_doc[1])]), first_doc))
    if id_prefix is not None:
        facts.append(_expect(f"document ids starting with {id_prefix}",
                             sum(str(d.get("_id")).startswith(id_prefix) for d in corpus), docs))
    facts.append(_expect("queries", len(_jsonl(_first(folder, "queries.jsonl", "queries.jsonl.gz"))), queries))
    for split, (rows, nq, grades) in qrels.items():
        lines = _lines(folder / "qrels" / f"{split}.tsv")
        body = [ln.split("\t") for ln in lines[1:] if ln.strip()]
        facts.append(_expect(f"qrels/{split}.tsv header", lines[0].split("\t") if lines else [], ["query-id", "corpus-id", "score"]))
        facts.append(_expect(f"qrels/{split}.tsv rows", len(body), rows))
        facts.append(_expect(f"qrels/{split}.tsv queries", len({r[0] for r in body}), nq))
        if grades is not None:
            got = dict(sorted(Counter(int(r[2]) for r in body if len(r) == 3).items(), reverse=True))
            facts.append(_expect(f"qrels/{split}.tsv rows per grade", got, grades))
    return facts


def _scifact(folder: Path) -> list[str]:
    return _beir(folder, docs=5183, queries=1109, qrels={"train": (919, 809, None), "test": (339, 300, None)},
                 first_doc=("4983", "Microstructural development of human newborn cerebral white matter"))


def _nfcorpus(folder: Path) -> list[str]:
    return _beir(folder, docs=3633, queries=3237, id_prefix="MED-",
                 qrels={"train": (110575, 2590, {1: 110575}), "dev": (11385, 324, {2: 521, 1: 10864}),
                        "test": (12334, 323, {2: 576, 1: 11758})})


# ---------------------------------------------------------------------------------------- WordNet
_WN_SYNSETS = {"noun": 82115, "verb": 13767, "adj": 18156, "adv": 3621}


def _wordnet_files(folder: Path) -> Callable[[str], bytes]:
    """Reader of the database files: from ``corpora/wordnet/`` or from the ``wordnet-3.0.tgz`` archive."""
    db = folder / "corpora" / "wordnet"
    if (db / "data.noun").is_file():
        return lambda name: (db / name).read_bytes()
    tgz = folder / "wordnet-3.0.tgz"
    try:
        tf = tarfile.open(tgz, "r:*")
        members = {Path(m.name).name: m for m in tf.getmembers() if m.isfile()}
    except (tarfile.TarError, OSError) as exc:
        raise DataError(f"{tgz.name} is not a readable archive ({exc})") from None

    def read(name: str) -> bytes:
        if name not in members:
            raise DataError(f"{tgz.name} has no {name}")
        return tf.extractfile(members[name]).read()

    return read


def _wordnet(folder: Path) -> list[str]:
    read = _wordnet_files(folder)
    facts = []
    data_noun = b""
    for pos, n in _WN_SYNSETS.items():
        data = read(f"data.{pos}")
        data_noun = data if pos == "noun" else data_noun
        facts.append(_expect(f"{pos} synsets", sum(1 for ln in data.splitlines() if ln and not ln.startswith(b"  ")), n))
    facts.append(_expect("synset 00001740 of data.noun", any(ln.startswith(b"00001740 03 n 01 entity ")
                                                              for ln in data_noun.splitlines()), True))
    facts.append(_expect("index.noun lists 'poodle'", any(ln.startswith(b"poodle n ")
                                                          for ln in read("index.noun").splitlines()), True))
    return facts


# ------------------------------------------------------------------------------- lexical tables
def _tsv(path: Path, *, header: list[str], rows: int, first: list[str], ncol: int | None = None) -> tuple[list[list[str]], list[str]]:
    lines = _lines(path)
    head = lines[0].split("\t") if lines else []
    body = [ln.split("\t") for ln in lines[1:]]
    if ncol is not None:
        body = [r for r in body if len(r) == ncol]
    facts = [_expect(f"{path.name} header", head[:len(header)], header), _expect(f"{path.name} rows", len(body), rows)]
    facts.append(_expect(f"{path.name} first row", body[0][:len(first)] if body else [], first))
    return body, facts


def _concreteness(folder: Path) -> list[str]:
    body, facts = _tsv(_first(folder, "Concreteness_ratings_Brysbaert_et_al_BRM.txt"),
                       header=["Word", "Bigram", "Conc.M", "Conc.SD"], rows=39954, first=["roadsweeper", "0", "4.85"])
    facts.append(_expect("rows per Bigram value", dict(Counter(r[1] for r in body)), {"0": 37058, "1": 2896}))
    return facts


def _subtlex(folder: Path) -> list[str]:
    path = _first(folder, "SUBTLEXus74286wordstextversion.txt", "SUBTLEXus74286wordstextversion.txt.gz")
    return _tsv(path, header=["Word", "FREQcount", "CDcount"], rows=74286, first=["the", "1501908"], ncol=9)[1]


def _simlex(folder: Path) -> list[str]:
    return _tsv(folder / "SimLex-999.txt", header=["word1", "word2", "POS", "SimLex999"], rows=999,
                first=["old", "new", "A", "1.58"])[1]


def _chaosnli(folder: Path) -> list[str]:
    facts = []
    for sub, n, uid in (("snli", 1514, "2407214681.jpg#0r1n"), ("mnli_m", 1599, "50830c"), ("alphanli", 1532, None)):
        rows = _jsonl(folder / f"chaosNLI_{sub}.jsonl")
        facts.append(_expect(f"chaosNLI_{sub}.jsonl rows", len(rows), n))
        facts.append(_expect(f"chaosNLI_{sub}.jsonl rows with 100 labels", sum(sum(r.get("label_count") or []) == 100 for r in rows), n))
        if uid is not None:
            facts.append(_expect(f"chaosNLI_{sub}.jsonl first uid", rows[0].get("uid"), uid))
    return facts


def _cifar10h(folder: Path) -> list[str]:
    import numpy as np

    def load(name: str):
        try:
            return np.load(io.BytesIO((folder / name).read_bytes()), allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"{name} is not a readable .npy array ({exc})") from None

    counts, probs = load("cifar10h-counts.npy"), load("cifar10h-probs.npy")
    facts = [_expect("counts shape", counts.shape, (10000, 10)), _expect("probs shape", probs.shape, (10000, 10))]
    facts.append(_expect("total annotations", int(counts.sum()), 511000))
    facts.append(_expect("counts of image 0", counts[0].astype(int).tolist(), [0, 1, 1, 48, 0, 1, 0, 0, 0, 0]))
    facts.append(_expect("probability rows summing to 1", int(np.sum(np.abs(probs.sum(axis=1) - 1) < 1e-9)), 10000))
    return facts


#: The FEVEROUS sample's strata as its README states them (graphrag-core 0.18.1, eval/fixtures/feverous).
FEVEROUS_LABELS = {"SUPPORTS": 18, "REFUTES": 16, "NOT ENOUGH INFO": 16}
FEVEROUS_CHALLENGES = {"Search terms not in claim": 9, "Entity Disambiguation": 9, "Numerical Reasoning": 8, "Other": 8,
                       "Combining Tables and Text": 8, "Multi-hop Reasoning": 8}


def _feverous(folder: Path) -> list[str]:
    rows = _jsonl(folder / "sample.jsonl")
    facts = [_expect("sample.jsonl claims", len(rows), 50),
             _expect("distinct ids", len({r["id"] for r in rows}), 50)]
    labels, challenges = {k: 0 for k in FEVEROUS_LABELS}, {k: 0 for k in FEVEROUS_CHALLENGES}
    for r in rows:
        labels[r["label"]] = labels.get(r["label"], 0) + 1
        challenges[r["challenge"]] = challenges.get(r["challenge"], 0) + 1
    facts.append(_expect("claims per label", labels, FEVEROUS_LABELS))
    facts.append(_expect("claims per challenge", challenges, FEVEROUS_CHALLENGES))
    timed = sum(bool(r["annotator_operations"]) and r["annotator_operations"][0]["operation"] == "start"
                and r["annotator_operations"][-1]["operation"] == "finish" and isinstance(r["claim"], str)
                for r in rows)
    facts.append(_expect("claims with a text and a start ... finish annotation", timed, 50))
    first = {r["id"]: r for r in rows}.get(10220, {})
    facts.append(_expect("claim 10220 (label, first words)", (first.get("label"), str(first.get("claim"))[:30]),
                         ("NOT ENOUGH INFO", "The Chilestinians or the Pales")))
    return facts


_CHECKS: dict[str, Callable[[Path], list[str]]] = {
    "feverous": _feverous,
    "scifact": _scifact, "nfcorpus": _nfcorpus, "wordnet": _wordnet, "concreteness": _concreteness,
    "subtlex-us": _subtlex, "chaosnli": _chaosnli, "simlex-999": _simlex, "cifar10h": _cifar10h,
}


def check_hashes(ds: Dataset, folder: Path, files: Iterable[str] | None = None) -> list[str]:
    """sha256 of every byte-pinned file present in ``folder`` (or of ``files``); DataError on a mismatch."""
    checked = []
    for rel, want in ds.sha256.items():
        p = folder / rel
        if (files is not None and rel not in files) or not p.is_file():
            continue
        got = sha256_file(p)
        if got != want:
            raise DataError(f"{ds.title}: {rel} has sha256 {got[:16]}..., expected {want[:16]}... "
                            "(a corrupted or different file)")
        checked.append(rel)
    return checked


def verify(ds: Dataset, folder: Path) -> dict:
    """Check a dataset folder: pinned sha256 values, then the content facts.

    Returns
    -------
    dict
        ``{"sha256": [files checked], "content": [facts checked]}``.

    Raises
    ------
    DataError
        A hash or a content fact differs (one line naming the file and both values).
    """
    hashed = check_hashes(ds, folder)
    try:
        facts = _CHECKS[ds.name](folder)
    except (OSError, IndexError, KeyError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"content check failed: {type(exc).__name__}: {exc}") from None
    return {"sha256": hashed, "content": facts}


# ------------------------------------------------------------------------------ local copies, once
#: Record of the local copies already verified, in normscope's cache folder: ``{copy folder: {"dataset",
#: "files": {path: [size, mtime_ns]}, "checked"}}``. A copy is verified again when any file changed.
VERIFIED_FILE = "verified-data.json"


def _signature(folder: Path) -> dict[str, list[int]]:
    """``{relative path: [size, mtime_ns]}`` of every file under ``folder`` (what a re-verification keys on)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[p.relative_to(folder).as_posix()] = [st.st_size, st.st_mtime_ns]
    return out


def _record_path() -> Path | None:
    try:
        return cache_dir(create=False) / VERIFIED_FILE
    except OSError:
        return None


def _load_records(path: Path | None) -> dict:
    if path is None or not path.is_file():
        return {}
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return rec if isinstance(rec, dict) else {}


def verify_copy(ds: Dataset, folder: Path, where: str) -> dict:
    """Verify a local copy once against the registry: pinned sha256 values, and the content facts when
    a file it reads is not pinned. The result is remembered by the files' sizes and mtimes.

    Parameters
    ----------
    ds : Dataset
    folder : Path
        The dataset folder (``<data folder>/<ds.folder>``).
    where : str
        Label of the data folder (``"shared data"``, ``"$NORMSCOPE_DATA"``, ``"fetched"``), for messages.

    Returns
    -------
    dict
        ``{"sha256": [files], "content": [facts], "cached": bool}``.

    Raises
    ------
    DataError
        A pinned file differs or a content fact fails (one line naming the copy, the file and both
        values, and ``normscope --no-verify`` to accept the copy as it is).
    """
    folder = Path(folder)
    key = str(folder.resolve())
    sig = _signature(folder)
    path = _record_path()
    records = _load_records(path)
    old = records.get(key)
    if isinstance(old, dict) and old.get("dataset") == ds.name and old.get("files") == sig:
        return {**(old.get("checked") or {}), "cached": True}
    try:
        hashed = check_hashes(ds, folder)
        read = [next((a for a in alts if (folder / a).is_file()), alts[0]) for alts in ds.requires]
        facts = _CHECKS[ds.name](folder) if any(r not in hashed for r in read) else []
    except (DataError, OSError, IndexError, KeyError, ValueError) as exc:
        why = str(exc) if isinstance(exc, DataError) else f"{type(exc).__name__}: {exc}"
        why = why.removeprefix(f"{ds.title}: ")
        raise DataError(f"{ds.title}: the copy in {where} ({folder}) fails verification: {why}; repair or remove "
                        "it, or accept it as it is with `normscope --no-verify ...`") from None
    checked = {"sha256": hashed, "content": facts}
    if path is not None:
        records[key] = {"dataset": ds.name, "files": sig, "checked": checked}
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json(records, path)
        except (OSError, DataError) + _output_errors():
            pass  # a read-only cache: verified again next time
    return {**checked, "cached": False}


def _output_errors() -> tuple[type[Exception], ...]:
    return (OutputError,)
