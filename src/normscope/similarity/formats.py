"""Human-rated pair benchmarks: the STS-B files and word-similarity lists, with the quirks of their releases.

Two formats (:func:`read_pairs` picks one, or ``fmt=`` forces it):

``sts``
    The STS benchmark (Cer, Diab, Agirre, Lopez-Gazpio & Specia 2017, SemEval task 1) as released in
    ``Stsbenchmark.tar.gz``: ``sts-train.csv`` (5,749 pairs), ``sts-dev.csv`` (1,500),
    ``sts-test.csv`` (1,379). Tab-separated, **no header**, fields
    ``genre, filename, year, id, score, sentence1, sentence2`` with the score in [0, 5]. Quirks
    handled: no quote processing (sentences hold unbalanced ``"``, which a CSV reader would use to
    join lines, as ``pandas.read_csv`` does without ``quoting=QUOTE_NONE``); some lines carry extra
    tab-separated fields after ``sentence2``, which are ignored (SentEval and MTEB read fields 4-6
    only) and counted; CRLF line endings, a UTF-8 byte-order mark, ``.gz`` files.
``words``
    Word-similarity lists, one pair a line: ``word1 word2 score`` separated by tabs (when the line
    has one) or else by whitespace (commas for a ``.csv`` file), with an optional header line.
    Covers SimLex-999 (``SimLex-999.txt``: a header, the score in the 4th column ``SimLex999``
    after ``POS``), WordSim-353 (``combined.tab``: header ``Word 1, Word 2, Human (mean)``;
    ``combined.csv``), MEN (``MEN_dataset_natural_form_full``: space-separated; the lemma form's
    ``-n``/``-v``/``-j`` part-of-speech suffixes are removed when every word has one) and the
    Stanford Rare Words list (``rw.txt``: ten individual ratings after the mean, ignored). The
    score column is the one a header names (``SimLex999``, ``score``, ``Human (mean)`` ...), else
    the first column after the two words that is numeric on every line. Lines starting with ``#``
    are comments.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from normscope._format import noun, plural
from normscope.errors import InputError
from normscope.inputs import read_text, split_lines

__all__ = ["PairSet", "read_pairs", "read_sts", "read_word_pairs", "detect_pair_format", "sts_train_split",
           "PAIR_FORMATS"]

PAIR_FORMATS = ("auto", "sts", "words")
_STS_NAME = re.compile(r"^sts-(train|dev|test)\.csv$", re.IGNORECASE)
_SCORE_NAMES = ("simlex999", "score", "human (mean)", "similarity", "sim", "relatedness", "mean", "gold", "rating")
_POS_SUFFIX = re.compile(r"^(.+)-[nvja]$")


@dataclasses.dataclass
class PairSet:
    """Pairs of texts with a human similarity score.

    Attributes
    ----------
    path : Path
    format : {"sts", "words"}
    ids : list of str, length n
        The pair's 1-based line number in ``path`` (unique within the file).
    text1, text2 : list of str, length n
    score : ndarray of shape (n,), float64
        Human score (STS-B 0-5, SimLex-999 0-10, WS-353 0-10, MEN 0-50 ...; only ranks and linear
        correlation are used, so the scale does not matter).
    notes : list of str
        Quirks met while reading (extra fields, a header, suffixes removed).
    """

    path: Path
    format: str
    ids: list[str]
    text1: list[str]
    text2: list[str]
    score: np.ndarray
    notes: list[str] = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, index) -> "PairSet":
        """The pairs at positions ``index`` (same path, format and notes)."""
        index = np.asarray(index, dtype=np.intp)
        return PairSet(self.path, self.format, [self.ids[i] for i in index], [self.text1[i] for i in index],
                       [self.text2[i] for i in index], self.score[index], list(self.notes))


def _lines(path: Path) -> list[tuple[int, str]]:
    """(1-based line number, line) of the non-blank lines (UTF-8, BOM dropped, ``.gz`` read)."""
    if not path.is_file():
        raise InputError(f"pair file not found: {path}")
    out = [(i, ln) for i, ln in enumerate(split_lines(read_text(path)), 1) if ln.strip()]
    if not out:
        raise InputError(f"pair file is empty: {path}")
    return out


def _float(s: str) -> float | None:
    try:
        v = float(s)
    except ValueError:
        return None
    return v if np.isfinite(v) else None


def detect_pair_format(path: str | Path) -> str:
    """``"sts"`` for an STS-B file (its name, or 7+ tab fields with a numeric 5th), else ``"words"``."""
    p = Path(path)
    if _STS_NAME.match(p.name):
        return "sts"
    first = _lines(p)[0][1].split("\t")
    return "sts" if len(first) >= 7 and _float(first[4]) is not None and first[2].strip().isdigit() else "words"


def read_sts(path: str | Path) -> PairSet:
    """Read an STS-B file (``sts-train.csv``, ``sts-dev.csv``, ``sts-test.csv``); see the module docstring.

    Raises
    ------
    InputError
        Missing or empty file, invalid UTF-8, a line with fewer than 7 tab-separated fields or a
        score that is not a number in [0, 5] (line number named).
    """
    path = Path(path)
    ids, t1, t2, sc = [], [], [], []
    extra = 0
    for lineno, line in _lines(path):
        f = line.split("\t")
        if len(f) < 7:
            raise InputError(f"{path}: line {lineno} has {plural(len(f), 'tab-separated field')}; STS-B lines have 7 "
                             "(genre, filename, year, id, score, sentence1, sentence2)")
        v = _float(f[4])
        if v is None or not 0.0 <= v <= 5.0:
            raise InputError(f"{path}: line {lineno}: score {f[4]!r} is not a number in [0, 5]")
        extra += len(f) > 7
        ids.append(str(lineno))
        t1.append(f[5].strip())
        t2.append(f[6].strip())
        sc.append(v)
    notes = ([f"{plural(extra, 'line')} {noun(extra, 'has', 'have')} extra tab-separated fields after sentence2 (ignored)"]
             if extra else [])
    return PairSet(path, "sts", ids, t1, t2, np.asarray(sc, dtype=np.float64), notes)


def _split(line: str, csv: bool) -> list[str]:
    if "\t" in line:
        return [x.strip() for x in line.split("\t")]
    return [x.strip() for x in line.split(",")] if csv else line.split()


def _numeric_columns(rows: list[tuple[int, list[str]]]) -> list[int]:
    """Columns after the two words (index >= 2) that are numeric on every row."""
    width = min(len(f) for _, f in rows)
    return [j for j in range(2, width) if all(_float(f[j]) is not None for _, f in rows)]


def read_word_pairs(path: str | Path) -> PairSet:
    """Read a word-similarity list (SimLex-999, WordSim-353, MEN, RW ...); see the module docstring.

    Raises
    ------
    InputError
        Missing or empty file, invalid UTF-8, a line with fewer than 3 fields, no column after the
        two words that is numeric on every line (after an optional header line).
    """
    path = Path(path)
    csv = path.name.lower().endswith(".csv")
    rows = [(ln, _split(line, csv)) for ln, line in _lines(path) if not line.lstrip().startswith("#")]
    short = [ln for ln, f in rows if len(f) < 3]
    if short:
        raise InputError(f"{path}: line {short[0]} has fewer than 3 fields (word1 word2 score)")
    numeric = _numeric_columns(rows)
    header = None
    if not numeric and len(rows) > 1:  # the first line may be a header
        numeric = _numeric_columns(rows[1:])
        if numeric:
            header, rows = [h.lower() for h in rows[0][1]], rows[1:]
    if not numeric:
        raise InputError(f"{path}: no column after the two words is numeric on every line (word1 word2 score)")
    named = [j for name in _SCORE_NAMES for j, h in enumerate(header or []) if h == name and j in numeric]
    col = named[0] if named else numeric[0]
    w1 = [f[0] for _, f in rows]
    w2 = [f[1] for _, f in rows]
    notes = []
    if header is not None:
        notes.append(f"header line read; score column {col + 1} ('{header[col] if col < len(header) else '?'}')")
    if all(_POS_SUFFIX.match(w) for w in w1 + w2):
        w1 = [_POS_SUFFIX.match(w).group(1) for w in w1]
        w2 = [_POS_SUFFIX.match(w).group(1) for w in w2]
        notes.append("part-of-speech suffixes (-n, -v, -j, -a) removed from every word (MEN lemma form)")
    return PairSet(path, "words", [str(ln) for ln, _ in rows], w1, w2,
                   np.asarray([float(f[col]) for _, f in rows], dtype=np.float64), notes)


def read_pairs(path: str | Path, fmt: str = "auto") -> PairSet:
    """Read a pair benchmark in format ``fmt`` (``auto``: :func:`detect_pair_format`).

    Raises
    ------
    InputError
        Unknown format, or as :func:`read_sts` / :func:`read_word_pairs`.
    """
    if fmt not in PAIR_FORMATS:
        raise InputError(f"unknown pair format {fmt!r}; choose from {', '.join(PAIR_FORMATS)}")
    fmt = detect_pair_format(path) if fmt == "auto" else fmt
    return read_sts(path) if fmt == "sts" else read_word_pairs(path)


def sts_train_split(path: str | Path) -> Path | None:
    """``sts-train.csv`` beside an STS-B ``sts-dev.csv`` / ``sts-test.csv`` file, if it exists (else None)."""
    p = Path(path)
    m = _STS_NAME.match(p.name)
    if not m or m.group(1).lower() == "train":
        return None
    train = p.with_name("sts-train.csv")
    return train if train.is_file() else None
