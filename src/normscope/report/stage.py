"""One object per report stage (:class:`Stage`) and the typed records it produces.

A :class:`Stage` holds everything the report knows about one stage: its name, the page sections it
fills, the sizes it reads, its typed request (built from the report's settings and checked once),
its ``run``, its view of the page (key numbers, tables, figures, caveats), its claims rows, its "what
this says" sentences, its CLI headline, and its cache key and reproduce commands, both derived from
the request. The runner, the side-by-side page and the CLI iterate over
:data:`normscope.report.stages.STAGES`; nothing else names a stage.

What a stage produces is typed until the JSON edge: a :class:`Section` per page section (its
:class:`KeyNumber` rows keyed by a field path, :class:`Table` s, :class:`Figure` s, the
:class:`Command` s that reproduce it) inside a :class:`StageRecord`. ``to_json()`` writes the
record (``OUT/stages/<stage>.json``); :meth:`StageRecord.from_json` reads it back and says what is
wrong with a damaged one.
"""

from __future__ import annotations

import abc
import dataclasses
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from normscope._format import num
from normscope.claims import ClaimRow
from normscope.requests import Request
from normscope.values import Status

__all__ = ["Figure", "Table", "KeyNumber", "Command", "Section", "StageRecord", "Stage", "StageUnavailable",
           "RecordError", "STAGE_VERSION", "is_current", "made_with"]

#: Bump when a stage's computation or record layout changes: invalidates cached records.
STAGE_VERSION = 5  # 5: WordNet chains from their depth-3 synset, clustered CIs; the shuffle design


class StageUnavailable(Exception):
    """Raised by a stage that cannot run here; the message says why (shown on the page).

    Parameters
    ----------
    reason : str
        One line, shown on the page and in the summary.
    missing : dict, keyword-only
        ``{dataset name: {"title", "cause"}}`` of the datasets whose absence stops the stage (built by
        :func:`normscope.report.missing.data_unavailable`); the report counts the claims they block.
    detail : str, keyword-only
        The full error text (library messages included), kept in the stage record, never printed.
    """

    def __init__(self, reason: str, *, missing: dict | None = None, detail: str = "") -> None:
        super().__init__(reason)
        self.missing = dict(missing or {})
        self.detail = detail


class RecordError(ValueError):
    """A stage record read from disk is not a well-formed record of its stage (the message says why)."""


def is_current(d) -> bool:
    """Whether the JSON ``d`` is a record of this record layout (:data:`STAGE_VERSION`): a record an earlier
    normscope wrote is stale, not damaged (its key cannot match either)."""
    return not isinstance(d, dict) or "stage" not in d or ("version" in d and d["version"] == STAGE_VERSION)


def _normscope_version() -> str:
    from normscope import __version__

    return __version__


def made_with(request: dict | None) -> dict | None:
    """The model, precision and fingerprint key a record's sections were computed with (None: no model).

    ``request`` is a record's ``request`` (``{"request": ..., "model": fingerprint dict or None}``);
    the key is :attr:`normscope.table.ModelFingerprint.model_key` (weights, pooling, backend, precision, config;
    torch fp32 and OpenVINO f32 alike: their vectors are equal to 1e-6).
    """
    fp = request.get("model") if isinstance(request, dict) else None
    if not isinstance(fp, dict) or "name" not in fp:
        return None
    from normscope.table import ModelFingerprint

    try:
        key = ModelFingerprint.from_dict(fp).model_key
    except (KeyError, TypeError, ValueError):
        return None
    return {"model": str(fp["name"]), "precision": str(fp.get("precision", "fp32")), "fingerprint": key}


class _Reader:
    """Checked reads of one JSON object of a stage record: each accessor says what type it expects and raises
    :class:`RecordError` naming the key when the value is of another type (an absent key reads as None)."""

    def __init__(self, d, where: str) -> None:
        if not isinstance(d, dict):
            raise RecordError(f"{where} is not an object")
        self.d, self.where = d, where

    def _value(self, key: str, types: tuple, what: str):
        v = self.d[key] if key in self.d else None
        if v is not None and not isinstance(v, types):
            raise RecordError(f"{self.where}: {key} is not {what}")
        return v

    def text(self, key: str) -> str | None:
        return self._value(key, (str,), "a string")

    def items(self, key: str) -> list:
        return self._value(key, (list,), "a list") or []

    def obj(self, key: str) -> dict | None:
        return self._value(key, (dict,), "an object")

    def number(self, key: str) -> float | None:
        v = self._value(key, (int, float), "a number")
        return None if v is None else float(v)

    def any(self, key: str):
        return self.d[key] if key in self.d else None


@dataclasses.dataclass(frozen=True)
class Figure:
    """A figure of a section: a PNG beside the page (plain file name) and its caption."""

    file: str
    caption: str

    def to_json(self) -> dict:
        return {"file": self.file, "caption": self.caption}

    @classmethod
    def from_json(cls, d) -> Figure:
        try:
            r = _Reader(d, "a figure entry")
            file = r.text("file")
        except RecordError:
            file = None
        if not file or Path(file).name != file:
            raise RecordError("a figure entry is malformed")
        return cls(file, r.text("caption") or "")


@dataclasses.dataclass(frozen=True)
class Table:
    """A table of a section: title, column headings and rows of cells (numbers, strings or None)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]

    def __init__(self, title: str, columns: Sequence[str], rows: Sequence[Sequence]) -> None:
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "columns", tuple(columns))
        object.__setattr__(self, "rows", tuple(tuple(r) for r in rows))

    def to_json(self) -> dict:
        return {"title": self.title, "columns": list(self.columns), "rows": [list(r) for r in self.rows]}

    @classmethod
    def from_json(cls, d) -> Table:
        try:
            r = _Reader(d, "a table")
            rows = r.items("rows")
        except RecordError:
            raise RecordError("a table is malformed") from None
        return cls(r.text("title") or "", r.items("columns"), [row if isinstance(row, list) else [row] for row in rows])


@dataclasses.dataclass(frozen=True)
class KeyNumber:
    """One key number of a section.

    Attributes
    ----------
    key : str
        Its identity: the field path of the value in the section's result (``"norm_mean"``,
        ``"scorers.cosine.ndcg@10"``) or a stable name. Models are joined on it, never on the label.
    label : str
        How the page says it (may hold per-run details such as ``n = 120``).
    value : number, str or None
    unit : str
    """

    key: str
    label: str
    value: Any
    unit: str = ""

    def to_json(self) -> dict:
        return {"key": self.key, "label": self.label, "value": self.value, "unit": self.unit}

    def row(self) -> list:
        """``[label, value, unit]``: the summary.json layout."""
        return [self.label, self.value, self.unit]

    @classmethod
    def from_json(cls, d) -> KeyNumber:
        r = _Reader(d, "a key number")
        if r.text("key") is None or r.text("label") is None:
            raise RecordError("a key number is malformed")
        return cls(r.text("key"), r.text("label"), r.any("value"), r.text("unit") or "")


@dataclasses.dataclass(frozen=True)
class Command:
    """A normscope command that reproduces (a part of) a section, run in the report folder.

    Attributes
    ----------
    argv : tuple of str
        The command line, ``("normscope", "probe", ...)``; its ``--json FILE`` holds the numbers.
    part : str or None
        The key of the section's result that this command's JSON fills (one signal, one optimizer);
        None when its JSON is the whole result (as :meth:`Stage.section_results` maps it).
    """

    argv: tuple[str, ...]
    part: str | None = None

    @property
    def text(self) -> str:
        """The command as a shell line."""
        return shlex.join(self.argv)

    @property
    def json_file(self) -> str | None:
        """The file its ``--json`` writes (relative to the report folder)."""
        a = list(self.argv)
        return a[a.index("--json") + 1] if "--json" in a[:-1] else None

    def to_json(self) -> dict:
        return {"argv": list(self.argv), "part": self.part}

    @classmethod
    def from_json(cls, d) -> Command:
        r = _Reader(d, "a command")
        if not r.items("argv"):
            raise RecordError("a command is malformed")
        return cls(tuple(str(a) for a in r.items("argv")), r.text("part"))


@dataclasses.dataclass
class Section:
    """One page section as a stage produced it.

    Attributes
    ----------
    key : str
        The section key (= its summary.json key and page anchor).
    status : Status
    reason : str or None
        Why a section is not ``ok``.
    commands : list of Command
        The commands that reproduce its numbers (empty: none does, e.g. the set-up).
    sizes : str or None
        The sizes stated on the page.
    result : dict or None
        Verbatim what the commands write with ``--json`` (:meth:`Stage.section_results`).
    derived : dict or None
        Extra numbers computed by the stage (quantiles, examples, the prediction reading).
    key_numbers, tables, figures, notes
        The view: what the page (and the side-by-side table) shows.
    claims : list of ClaimRow
        The scorecard rows this section tests (built by the stage packages' builders, :mod:`normscope.claims`; a
        row given as its JSON object is read as a :class:`~normscope.claims.ClaimRow`).
    missing : dict or None
        ``{dataset: {"title", "cause"}}`` of the datasets whose absence stopped the section
        (:mod:`normscope.report.missing`).
    """

    key: str
    status: Status = Status.OK
    reason: str | None = None
    commands: list[Command] = dataclasses.field(default_factory=list)
    sizes: str | None = None
    result: dict | None = None
    derived: dict | None = None
    key_numbers: list[KeyNumber] = dataclasses.field(default_factory=list)
    tables: list[Table] = dataclasses.field(default_factory=list)
    figures: list[Figure] = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    claims: list[ClaimRow] = dataclasses.field(default_factory=list)
    missing: dict | None = None

    def __post_init__(self) -> None:
        self.claims = [ClaimRow.from_json(c) for c in self.claims]

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def command(self) -> str | None:
        """The commands as one shell line (``a ; b``), None when there is none."""
        return " ; ".join(c.text for c in self.commands) or None

    def to_json(self) -> dict:
        return {"status": self.status.value, "reason": self.reason, "commands": self.commands, "sizes": self.sizes,
                "result": self.result, "derived": self.derived, "key_numbers": self.key_numbers,
                "tables": self.tables, "figures": self.figures, "notes": self.notes, "claims": self.claims,
                "missing": self.missing}

    def summary(self) -> dict:
        """The section's entry of summary.json: ``status, reason, missing, command, sizes, result, derived,
        key_numbers`` (absent when None)."""
        entry = {"status": self.status.value, "reason": self.reason, "missing": self.missing or None,
                 "command": self.command, "sizes": self.sizes,
                 "result": self.result, "derived": self.derived,
                 "key_numbers": [k.row() for k in self.key_numbers] if self.ok else None}
        return {k: v for k, v in entry.items() if v is not None}

    @classmethod
    def from_json(cls, key: str, d) -> Section:
        r = _Reader(d, f"section {key}")
        try:
            status = Status.of(r.text("status"))
        except ValueError:
            raise RecordError(f"section {key}: unknown status {r.any('status')!r}") from None
        try:
            return cls(key=key, status=status, reason=r.text("reason"),
                       commands=[Command.from_json(c) for c in r.items("commands")], sizes=r.text("sizes"),
                       result=r.obj("result"), derived=r.obj("derived"),
                       key_numbers=[KeyNumber.from_json(k) for k in r.items("key_numbers")],
                       tables=[Table.from_json(t) for t in r.items("tables")],
                       figures=[Figure.from_json(f) for f in r.items("figures")],
                       notes=r.items("notes"), claims=r.items("claims"), missing=r.obj("missing"))
        except TypeError as exc:  # a scorecard row that is not a JSON object
            raise RecordError(f"section {key}: claims: {exc}") from None
        except RecordError as exc:
            msg = str(exc)
            raise RecordError(msg if msg.startswith("section ") else f"section {key}: {msg}") from None


@dataclasses.dataclass
class StageRecord:
    """What one stage produced in one run (``OUT/stages/<stage>.json``, the stage cache).

    Attributes
    ----------
    stage : str
    status : Status
        ``ok`` when a section is ok; otherwise the sections' status.
    sections : dict
        Section key -> :class:`Section`, exactly the stage's sections.
    key : str or None
        The cache key (:meth:`Stage.key`); None for a stage that was not run.
    request : dict or None
        The stage's request as JSON (what the key hashes, with the model's fingerprint).
    reason : str or None
    seconds : float or None
        Wall time of the run that computed it.
    warnings : list of str
        Library warnings kept out of the log (deduplicated).
    traceback : str or None
        Of a failed stage.
    cached : bool
        Read from the stage cache in this run (not written to disk).
    kept : bool
        Not selected in this run (``--only``) and kept from an earlier run in the same folder.
    missing : dict or None
        The datasets whose absence made the stage unavailable (:class:`StageUnavailable`).
    detail : str or None
        The full text of the data errors of an unavailable stage (library messages), never printed.
    """

    stage: str
    status: Status
    sections: dict[str, Section]
    key: str | None = None
    request: dict | None = None
    reason: str | None = None
    seconds: float | None = None
    warnings: list[str] = dataclasses.field(default_factory=list)
    traceback: str | None = None
    cached: bool = False
    kept: bool = False
    missing: dict | None = None
    detail: str | None = None

    @property
    def ran(self) -> bool:
        """Whether this run ran (or took from its cache) the stage, as opposed to not selecting it."""
        return self.status is not Status.NOT_RUN and not self.kept

    def to_json(self) -> dict:
        out = {"stage": self.stage, "version": STAGE_VERSION, "normscope": _normscope_version(), "key": self.key,
               "made_with": made_with(self.request), "request": self.request,
               "status": self.status.value,
               "reason": self.reason, "seconds": self.seconds, "sections": self.sections}
        if self.warnings:
            out["warnings"] = self.warnings
        if self.traceback:
            out["traceback"] = self.traceback
        if self.missing:
            out["missing"] = self.missing
        if self.detail:
            out["detail"] = self.detail
        return out

    @classmethod
    def from_json(cls, d, stage: Stage) -> StageRecord:
        """The record of ``stage`` in ``d`` (a stage cache file's JSON; see :func:`is_current` for its version).

        Raises
        ------
        RecordError
            ``d`` is not a well-formed record of ``stage`` (not an object, no key or status, other
            sections, a malformed figure, table or key number); the message says what is wrong.
        """
        if not isinstance(d, dict):
            raise RecordError(f"not a JSON object but {type(d).__name__ if d is not None else 'null'}")
        r = _Reader(d, "the record")
        try:
            key, status_name, secs = r.text("key"), r.text("status"), r.obj("sections")
        except RecordError:
            key = status_name = None
        if key is None or status_name is None:
            raise RecordError("no key or status")
        if secs is None or set(secs) != set(stage.sections):
            raise RecordError(f"sections are not {', '.join(stage.sections)}")
        try:
            status = Status.of(status_name)
        except ValueError:
            raise RecordError(f"unknown status {status_name!r}") from None
        return cls(stage=stage.name, status=status, sections={k: Section.from_json(k, secs[k]) for k in stage.sections},
                   key=key, request=r.obj("request"), reason=r.text("reason"), seconds=r.number("seconds"),
                   warnings=[str(w) for w in r.items("warnings")], traceback=r.text("traceback"),
                   missing=r.obj("missing"), detail=r.text("detail"))

    @classmethod
    def not_run(cls, stage: Stage, reason: str) -> StageRecord:
        return cls(stage=stage.name, status=Status.NOT_RUN, reason=reason,
                   sections={k: Section(k, Status.NOT_RUN, reason) for k in stage.sections})

    @classmethod
    def error(cls, stage: Stage, status: Status, reason: str, *, key: str, request: dict, seconds: float) -> StageRecord:
        return cls(stage=stage.name, status=status, reason=reason, key=key, request=request, seconds=round(seconds, 2),
                   sections={k: Section(k, status, reason) for k in stage.sections})

    def figures(self) -> list[Figure]:
        return [f for s in self.sections.values() for f in s.figures]


R = TypeVar("R", bound=Request)


class Stage(abc.ABC, Generic[R]):
    """One stage of the report (see the module docstring). Subclasses set the class attributes and
    implement :meth:`request`, :meth:`commands` and :meth:`run`; the text methods have defaults.

    Class attributes
    ----------------
    name : str
        The stage name (``--only`` takes it).
    sections : dict
        Section key -> page heading, in page order.
    aliases : tuple of str
        Other names ``--only`` accepts for it (its section keys are accepted too).
    size_names : tuple of str
        The fields of :class:`~normscope.report.config.Sizes` it reads.
    uses_model : bool
        It runs the report's model: its cache key holds the model's fingerprint.
    uses_data : bool
        It reads datasets: its cache key holds the data folder.
    explains : str or None
        How the norm-distribution sentence names this stage when it tries to explain the norm's spread.
    reads : tuple of str
        The datasets (:mod:`normscope.data` names) it reads; the set-up stage obtains them first.
    """

    name: ClassVar[str]
    sections: ClassVar[dict[str, str]]
    aliases: ClassVar[tuple[str, ...]] = ()
    size_names: ClassVar[tuple[str, ...]] = ()
    uses_model: ClassVar[bool] = True
    uses_data: ClassVar[bool] = True
    explains: ClassVar[str | None] = None
    reads: ClassVar[tuple[str, ...]] = ()

    def datasets(self, config) -> list[tuple[str, str]]:
        """``[(dataset, who)]``: the datasets this stage reads under the report settings ``config`` and who
        reads each (default: :attr:`reads`, read by the stage)."""
        return [(d, self.name) for d in self.reads]

    # -- what it runs -------------------------------------------------------------------------------

    @abc.abstractmethod
    def request(self, config) -> R:
        """The stage's typed request for the report settings ``config`` (checked at construction)."""

    @abc.abstractmethod
    def commands(self, request: R) -> list[Command]:
        """The normscope commands that reproduce the stage's numbers (run in the report folder)."""

    @abc.abstractmethod
    def run(self, ctx, request: R) -> dict[str, Section]:
        """Run the stage (figures written under ``ctx.out``); its sections, keyed by section key.

        Raises
        ------
        StageUnavailable
            The stage cannot run here (missing data or optional module); the message says why.
        """

    def key(self, request: R, *, fingerprint: dict | None, data_dir: str | None) -> str:
        """The cache key: sha256 of the request, the stage version, the model's fingerprint (model stages:
        weights hash or revision, pooling, backend, precision, not the name) and the data folder."""
        blob = {"stage": self.name, "version": STAGE_VERSION, "request": request.to_json()}
        if self.uses_model:
            blob["model"] = fingerprint
        if self.uses_data:
            blob["data"] = data_dir
        return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()

    def section_results(self, commands: Sequence[Command], outputs: Sequence[dict]) -> dict[str, dict]:
        """Section key -> result, from the ``--json`` outputs of ``commands`` (a section's commands, in order).

        The default: one command whose JSON is the stage's one section's result, or several commands
        each filling the key :attr:`Command.part` of it. The page's numbers are this function of the
        commands' JSON, which is what the reproduce test checks.
        """
        (sec,) = self.sections
        if len(commands) == 1 and commands[0].part is None:
            return {sec: dict(outputs[0])}
        return {sec: {c.part: o for c, o in zip(commands, outputs)}}

    def sizes_used(self, sizes, request: R, sections: Mapping[str, Section]) -> dict[str, int]:
        """The sizes this stage used: its :attr:`size_names` with their values in ``sizes``
        (:class:`~normscope.report.sizes.Sizes`), None ("the command's default") left out. Stages whose
        request leaves a size to the command override this to read the number from their result."""
        return {n: getattr(sizes, n) for n in self.size_names if getattr(sizes, n) is not None}

    # -- what it says -------------------------------------------------------------------------------

    def sentences(self, section: Section, *, explained_by: Sequence[str] = ()) -> list[str]:
        """The section's "what this says" sentences, from its numbers (empty unless it is ok)."""
        return []

    def headline(self, section: Section) -> str:
        """The CLI summary's one-line headline of an ok section (default: its first three key numbers)."""
        return "; ".join(f"{k.label} {num(k.value) if isinstance(k.value, float) else k.value}"
                         for k in section.key_numbers[:3])
