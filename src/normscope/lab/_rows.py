"""Formatting and reading helpers shared by the lab's scorecard builders (:mod:`normscope.lab.claims`,
:mod:`normscope.lab.tower_claims`)."""

from __future__ import annotations

from normscope.values import Record


def _as_result(res, cls):
    """``res`` as the typed result ``cls`` (its ``to_dict()`` given, or any mapping: read back once)."""
    if isinstance(res, cls):
        return res
    return cls.from_dict(res.to_dict() if hasattr(res, "to_dict") else dict(res))


def _given(value: Record | None) -> bool:
    """A nested value that is there and not empty (the JSON object it was read from had keys)."""
    return value is not None and bool(value.to_json())


def _or(x, default):
    return default if x is None else x


def _f(x, spec=".3g") -> str:
    return "n/a" if x is None else format(float(x), spec)


def _ci(ci, spec=".3g") -> str:
    """A CI in the same format as its figure (``spec``, e.g. ``"+.3%"`` beside a percentage)."""
    return "n/a" if not ci or None in ci else f"[{format(float(ci[0]), spec)}, {format(float(ci[1]), spec)}]"
