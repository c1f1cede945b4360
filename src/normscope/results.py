"""The common shape of every stage's result: summary fields, a per-item table, strict JSON.

Each analysis entry point (``run_probe``, ``run_correlate``, ``run_retrieval``, ``run_lab``,
``run_similarity``) returns a dataclass derived from :class:`StageResult` (``embed_input`` returns
its summary dict and the :class:`~normscope.table.EmbeddingTable`):

- its summary numbers are typed dataclass fields, each declared with :func:`summary_field`, which
  records the display label (and unit) that the CLI table and the report use, so no label is
  written twice;
- ``items`` is the per-item :class:`pandas.DataFrame` (one row per input item, keyed by ``id``),
  written by ``-o``;
- :meth:`StageResult.to_dict` is exactly what the command writes with ``--json`` (strict JSON:
  NaN as ``null``); :meth:`StageResult.from_dict` rebuilds the typed result from it (the report's
  stage cache), value types (:mod:`normscope.values`) included, without the per-item table.

The model is :class:`normscope.stats.CorrelationResult`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from normscope._io import to_jsonable
from normscope.values import field_hints as _hints
from normscope.values import typed as _typed

__all__ = ["StageResult", "summary_field"]


def summary_field(label: str, *, unit: str = "", default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING):
    """A dataclass field of a stage result with its display ``label`` and ``unit``.

    Parameters
    ----------
    label : str
        How the CLI table and the report name the value (e.g. ``"Spearman rho, norm vs frequency"``).
    unit : str, keyword-only
        Unit shown beside it (``"||z||"``, ``"items"``, ``""``).
    default, default_factory : keyword-only
        As for :func:`dataclasses.field`.
    """
    kw: dict[str, Any] = {"metadata": {"label": label, "unit": unit}}
    if default is not dataclasses.MISSING:
        kw["default"] = default
    if default_factory is not dataclasses.MISSING:
        kw["default_factory"] = default_factory
    return dataclasses.field(**kw)


@dataclasses.dataclass
class StageResult:
    """Base class of the stages' results (see the module docstring).

    Subclasses are dataclasses; fields named in :attr:`NOT_IN_JSON` (the per-item table and other
    large or non-JSON members) are left out of :meth:`to_dict`.
    """

    #: Fields that :meth:`to_dict` leaves out (per-item tables, raw arrays, figures' inputs).
    NOT_IN_JSON: ClassVar[tuple[str, ...]] = ("items",)

    def __post_init__(self) -> None:
        """Fields typed with a value type (a class with ``from_json``, or a ``dict``/``list`` of them) hold that
        type also when the entry point built them from plain dicts (:func:`normscope.values.typed`)."""
        hints = _hints(type(self))
        for f in dataclasses.fields(self):
            if f.name in self.NOT_IN_JSON:
                continue
            v = getattr(self, f.name)
            t = _typed(v, hints.get(f.name))
            if t is not v:
                object.__setattr__(self, f.name, t)

    def to_dict(self) -> dict:
        """The ``--json`` summary: every field except :attr:`NOT_IN_JSON`, strict-JSON values."""
        out = {}
        for f in dataclasses.fields(self):
            if f.name in self.NOT_IN_JSON:
                continue
            out[f.name] = to_jsonable(getattr(self, f.name))
        return out

    @classmethod
    def from_dict(cls, d: dict | None):
        """The result whose :meth:`to_dict` is ``d`` (fields absent from ``d`` and those of :attr:`NOT_IN_JSON`
        take their defaults, or None). Fields typed with a value type (a class with ``from_json``, or a
        ``dict``/``list`` of them) are rebuilt as that type."""
        d = d or {}
        hints = _hints(cls)
        kw = {}
        for f in dataclasses.fields(cls):
            if f.name in cls.NOT_IN_JSON:
                continue
            if f.name in d:
                kw[f.name] = _typed(d[f.name], hints.get(f.name))
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                kw[f.name] = None
        return cls(**kw)

    @classmethod
    def labels(cls) -> dict[str, tuple[str, str]]:
        """``{field name: (label, unit)}`` of the fields declared with :func:`summary_field`."""
        return {f.name: (f.metadata["label"], f.metadata.get("unit", "")) for f in dataclasses.fields(cls)
                if "label" in f.metadata}

    @classmethod
    def label(cls, name: str) -> str:
        """The display label of field ``name`` (the name itself when it has none)."""
        return cls.labels().get(name, (name, ""))[0]
