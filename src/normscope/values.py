"""Small value types carried inside the stages' results and the report's records.

They are typed all the way to the JSON edge: code reads their attributes, and only
:func:`normscope._io.to_jsonable` turns them into JSON (through ``to_json()``); ``from_json()``
rebuilds them from a stage cache record. The JSON layout of each is the one the commands' ``--json``
has always written (an interval is ``[lo, hi]``, a status its lower-case name).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Sequence
from typing import Any, ClassVar

from normscope._format import finite

__all__ = ["Status", "Interval", "Record", "key", "typed", "field_hints", "Spread", "Correlation", "JunkSummary",
           "Duplicates", "NormError"]


class Status(str, enum.Enum):
    """What happened to a stage or a section of the report (JSON: the value, e.g. ``"not_run"``)."""

    OK = "ok"
    UNAVAILABLE = "unavailable"
    NOT_RUN = "not_run"
    FAILED = "failed"

    @property
    def words(self) -> str:
        """How the page and the CLI say it: ``ok``, ``not available``, ``not run``, ``failed``."""
        return {"ok": "ok", "unavailable": "not available", "not_run": "not run", "failed": "failed"}[self.value]

    def to_json(self) -> str:
        return self.value

    @classmethod
    def of(cls, value: Any) -> Status:
        """The status named by ``value`` (a :class:`Status` or its JSON string).

        Raises
        ------
        ValueError
            Not a status name.
        """
        return value if isinstance(value, cls) else cls(str(value))


@dataclasses.dataclass(frozen=True)
class Interval:
    """A confidence interval ``[lo, hi]`` (JSON: a two-element list; a missing end is ``null``).

    Attributes
    ----------
    lo, hi : float or None
        The ends (None: not computed).
    """

    lo: float | None
    hi: float | None

    @classmethod
    def of(cls, value: Sequence | Interval | None) -> Interval | None:
        """An interval from ``[lo, hi]`` (None, or anything that is not a pair, gives None; a NaN end is None)."""
        if value is None or isinstance(value, Interval):
            return value
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return None
        return cls(*(v if finite(v) is not None else None for v in value))

    from_json = of

    @property
    def known(self) -> bool:
        """Both ends are finite numbers."""
        return self.lo is not None and self.hi is not None

    def excludes(self, x: float = 0.0) -> bool | None:
        """True when ``x`` lies outside ``[lo, hi]``, False inside, None when an end is missing."""
        if not self.known:
            return None
        return self.lo > x or self.hi < x  # type: ignore[operator]

    def side(self, x: float = 0.0) -> int:
        """+1 when the interval lies above ``x``, -1 below, 0 when it contains ``x`` or an end is missing."""
        if not self.known:
            return 0
        return 1 if self.lo > x else (-1 if self.hi < x else 0)  # type: ignore[operator]

    def shifted(self, by: float) -> Interval:
        """``[lo + by, hi + by]``."""
        return Interval(None if self.lo is None else self.lo + by, None if self.hi is None else self.hi + by)

    def to_json(self) -> list:
        return [self.lo, self.hi]

    def __iter__(self):  # ``lo, hi = interval``: an interval reads like the pair it is in JSON
        return iter((self.lo, self.hi))

    def __eq__(self, other):  # ``interval == [lo, hi]``: equal to the pair it is in JSON, as well as to an Interval
        if isinstance(other, (list, tuple)):
            return len(other) == 2 and (self.lo, self.hi) == tuple(other)
        if isinstance(other, Interval):
            return (self.lo, self.hi) == (other.lo, other.hi)
        return NotImplemented

    def __getitem__(self, i: int):
        return (self.lo, self.hi)[i]

    def __len__(self) -> int:
        return 2


def key(name: str, default: Any = None) -> Any:
    """A :class:`Record` field whose JSON key is ``name`` (one that is not a Python name, e.g. ``ndcg@10``)."""
    return dataclasses.field(default=default, metadata={"json": name})


def when_set() -> Any:
    """A :class:`Record` field (default None) that :meth:`Record.to_json` writes only when it is set: a key added
    to an object after others were written, so that an object without the value keeps the keys it always had."""
    return dataclasses.field(default=None, metadata={"when_set": True})


@functools.lru_cache(maxsize=None)
def field_hints(cls) -> dict:
    """The resolved type hints of dataclass ``cls`` (memoised); ``{}`` when an annotation cannot be resolved."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation its module cannot resolve: leave those values as they are
        return {}


def typed(value, tp):
    """JSON ``value`` as the type ``tp`` when ``tp`` is a value type (a class with ``from_json``), ``T | None``,
    ``dict[str, T]`` or ``list[T]`` of one; otherwise ``value`` itself."""
    if value is None or tp is None:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return typed(value, args[0]) if len(args) == 1 else value
    if origin is dict and isinstance(value, dict):
        args = typing.get_args(tp)
        return {k: typed(v, args[1]) for k, v in value.items()} if len(args) == 2 else value
    if origin is list and isinstance(value, list):
        args = typing.get_args(tp)
        return [typed(v, args[0]) for v in value] if args else value
    if isinstance(tp, type) and hasattr(tp, "from_json") and not isinstance(value, tp):
        return tp.from_json(value)
    return value


@dataclasses.dataclass(frozen=True)
class Record:
    """A JSON object with known keys as a typed, frozen value (the base of the results' nested values).

    Fields are the object's keys (:func:`key` names a key that is not a Python name); every field defaults
    to None. :meth:`from_json` reads an object: a key it lacks stays None and is left out again by
    :meth:`to_json`, keys it does not know are kept, and the object's key order is kept, so
    ``from_json(d).to_json()`` is ``d`` key for key and in the same order (the JSON text a command writes
    does not change when a result is read back). A value built from its fields writes them in field order, all
    of them but a :func:`when_set` field that is None.
    """

    _absent: frozenset = dataclasses.field(default=frozenset(), repr=False, compare=False)
    _extra: tuple = dataclasses.field(default=(), repr=False, compare=False)
    _order: tuple = dataclasses.field(default=(), repr=False, compare=False)

    #: Fields that are not JSON keys.
    _PRIVATE: ClassVar[tuple[str, ...]] = ("_absent", "_extra", "_order")

    @classmethod
    def _keys(cls) -> list[tuple[str, str]]:
        return [(f.name, f.metadata.get("json", f.name)) for f in dataclasses.fields(cls) if f.name not in cls._PRIVATE]

    @classmethod
    def from_json(cls, d):
        """The value of the JSON object ``d`` (None stays None; a value of this type is returned as it is).

        Raises
        ------
        TypeError
            ``d`` is not a JSON object.
        """
        if d is None or isinstance(d, cls):
            return d
        if not isinstance(d, dict):
            raise TypeError(f"{cls.__name__}: not a JSON object but {type(d).__name__}")
        hints = field_hints(cls)
        keys = cls._keys()
        known = {k for _, k in keys}
        kw = {name: typed(d[k], hints.get(name)) for name, k in keys if k in d}
        return cls(**kw, _absent=frozenset(k for _, k in keys if k not in d),
                   _extra=tuple((k, v) for k, v in d.items() if k not in known), _order=tuple(d))

    def to_json(self) -> dict:
        """The JSON object: every known key (those absent from the object read stay absent) and the others, in
        the order of the object read (a value built from its fields: field order, then the others)."""
        when_set = {f.name for f in dataclasses.fields(self) if f.metadata.get("when_set")}
        out = {k: getattr(self, name) for name, k in self._keys()
               if not ((k in self._absent or name in when_set) and getattr(self, name) is None)}
        out.update(self._extra)
        if self._order:
            out = {**{k: out[k] for k in self._order if k in out}, **out}
        return out

    def __getitem__(self, k: str):
        """``value[key]``: the JSON key's value (for code written against the JSON object)."""
        for name, j in self._keys():
            if j == k:
                return getattr(self, name)
        return dict(self._extra)[k]

    def get(self, k: str, default=None):
        """``value.get(key)``, as on the JSON object (for code written against it; new code reads attributes)."""
        try:
            v = self[k]
        except KeyError:
            return default
        return default if v is None and k in self._absent else v


@dataclasses.dataclass(frozen=True)
class Spread(Record):
    """A per-item quantity summarised over the items (``{mean, sd, median, min, max, n}``, any subset; the
    producer may add what the quantity is relative to, e.g. ``c``)."""

    mean: float | None = None
    sd: float | None = None
    median: float | None = None
    min: float | None = None
    max: float | None = None
    n: int | None = None


@dataclasses.dataclass(frozen=True)
class Correlation(Record):
    """Pearson and Spearman correlation with CIs and permutation p-values
    (:meth:`normscope.stats.CorrelationResult.to_dict`): ``n`` valid pairs, ``n_dropped`` left out."""

    pearson: float | None = None
    spearman: float | None = None
    pearson_ci: Interval | None = None
    spearman_ci: Interval | None = None
    n: int | None = None
    n_dropped: int | None = None
    p_value: float | None = None
    pearson_p: float | None = None
    ci_level: float | None = None
    ci_method: str | None = None
    n_boot: int | None = None
    n_perm: int | None = None
    p_method: str | None = None
    exact_p: bool | None = None


@dataclasses.dataclass(frozen=True)
class JunkSummary(Record):
    """Items left out as junk (:meth:`normscope.inputs.Junk.to_dict`): ``count``, their ``ids``, counts per
    reason."""

    count: int | None = None
    ids: list[str] | None = None
    reasons: dict[str, int] | None = None


@dataclasses.dataclass(frozen=True)
class Duplicates(Record):
    """Exact duplicate items (:func:`normscope.inputs.collapse_duplicates`): ``count`` left out as copies, ``groups`` of
    copies, the left-out ``ids`` and the ``kept_ids`` (at most 20 each); ``kept`` when copies were kept."""

    count: int | None = None
    groups: int | None = None
    ids: list[str] | None = None
    kept_ids: list[str] | None = None
    kept: bool | None = None


@dataclasses.dataclass(frozen=True)
class NormError(Record):
    """Relative norm error of reduced-precision vectors against fp32 on a sample
    (:func:`normscope.encoders.precision.norm_error_vs_fp32`): ``median``, ``max``, ``cosine_min``, ``n_sample``."""

    median: float | None = None
    max: float | None = None
    cosine_min: float | None = None
    n_sample: int | None = None
    seed: int | None = None
