"""Small value types carried inside the stages' results and the report's records.

They are typed all the way to the JSON edge: code reads their attributes, and only
:func:`normscope._io.to_jsonable` turns them into JSON (through ``to_json()``); ``from_json()``
rebuilds them from a stage cache record. The JSON layout of each is the one the commands' ``--json``
has always written (an interval is ``[lo, hi]``, a status its lower-case name).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["Status", "Interval"]


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


def _finite(x) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


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
        """An interval from ``[lo, hi]`` (None, or anything that is not a pair, gives None)."""
        if value is None or isinstance(value, Interval):
            return value
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            return None
        return cls(_finite(value[0]), _finite(value[1]))

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
