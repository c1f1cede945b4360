"""Typed requests: frozen dataclasses whose fields are checked once, at construction.

This package holds the base (:class:`Request`, :func:`param`) and the values every stage shares
(:class:`Resampling`, :class:`Embedding`); each stage's own request is in a module of it
(:mod:`normscope.requests.similarity` ...). They are plain data: importing them costs nothing (no
torch), so the CLI reads its defaults from them.

A request says everything a run depends on. Its fields are annotated with the types the run accepts
(``Literal`` choices, ``int``, ``float``, ``Path``, ``tuple[...]``, ``X | None``) and, where a number
has bounds, :func:`param` records them; :class:`Request.__post_init__` checks every field against
both, like scikit-learn's ``validate_params``, and raises one :class:`~normscope.errors.InputError`
naming the field as the option that sets it (``--batch-size``), what it accepts and what it got. The cache key of a report stage and the command
that reproduces it are both derived from the request (:meth:`Request.to_json`), so they cannot drift
apart. :class:`Resampling` is the one value shared by every stage that resamples.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import math
import types
import typing
from pathlib import Path
from typing import Any, Literal

from normscope._io import to_jsonable
from normscope.errors import InputError

__all__ = ["Request", "Resampling", "Embedding", "param", "check_value", "Precision", "PRECISIONS", "Engine",
           "ENGINES", "Junk", "Runtime", "RUNTIMES"]

#: Precision of a model's forward passes (docs/embed.md).
Precision = Literal["fp32", "bf16"]
PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
#: Runtime of a model's forward passes (docs/embed.md, "OpenVINO runtime").
Runtime = Literal["torch", "openvino"]
RUNTIMES: tuple[str, ...] = typing.get_args(Runtime)
#: Where a corpus is embedded (docs/scale.md).
Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = typing.get_args(Engine)
#: What happens to junk items (empty, or special tokens only: :func:`normscope.inputs.find_junk`).
Junk = Literal["drop", "error"]


def param(default: Any = dataclasses.MISSING, *, min: float | None = None, max: float | None = None,
          below: float | None = None, above: float | None = None, help: str = "") -> Any:
    """A request field with bounds: ``min <= value <= max``, ``above < value < below`` (None: unbounded).

    ``help`` is the option's help where a command shows it.
    """
    meta = {k: v for k, v in (("min", min), ("max", max), ("below", below), ("above", above)) if v is not None}
    meta["help"] = help
    if isinstance(default, (list, dict, set)):
        raise TypeError("a request default must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata=meta)


def _name(tp) -> str:
    if typing.get_origin(tp) is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if tp is type(None):
        return "None"
    return getattr(tp, "__name__", str(tp))


def _literal(name: str, value: Any, tp: Any) -> Any:
    allowed = typing.get_args(tp)
    if value not in allowed:
        raise InputError(f"unknown {name.lstrip('-').replace('-', ' ')} {value!r}; choose from {', '.join(map(str, allowed))}")
    return value


def _union(name: str, value: Any, tp: Any) -> Any:
    args = typing.get_args(tp)
    if value is None and type(None) in args:
        return None
    errors = []
    for a in args:
        if a is type(None):
            continue
        try:
            return check_value(name, value, a)
        except InputError as exc:
            errors.append(str(exc))
    raise InputError(errors[0] if len(errors) == 1 else f"{name} must be {' or '.join(_name(a) for a in args)}, got {value!r}")


def _tuple(name: str, value: Any, tp: Any) -> tuple:
    args = typing.get_args(tp)
    if not isinstance(value, (tuple, list)):
        raise InputError(f"{name} must be a sequence, got {value!r}")
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(check_value(f"{name}[{i}]", v, args[0]) for i, v in enumerate(value))
    if len(args) != len(value):
        raise InputError(f"{name} must have {len(args)} elements, got {len(value)}")
    return tuple(check_value(f"{name}[{i}]", v, a) for i, (v, a) in enumerate(zip(value, args)))


#: Scalar types: (what the value may be, what to call it, how to convert it).
_SCALARS: dict[type, tuple[tuple[type, ...], str, Any]] = {
    bool: ((bool,), "true or false", bool),
    int: ((int,), "an integer", int),
    float: ((int, float), "a number", float),
    str: ((str,), "a string", str),
    Path: ((str, Path), "a path", Path),
}


def check_value(name: str, value: Any, tp: Any) -> Any:
    """``value`` checked against the annotation ``tp`` (converted where that is lossless: str -> Path,
    int -> float, list -> tuple). Raises :class:`InputError` naming ``name``."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return _literal(name, value, tp)
    if origin in (typing.Union, types.UnionType):
        return _union(name, value, tp)
    if origin is tuple:
        return _tuple(name, value, tp)
    if tp in _SCALARS:
        ok, what, conv = _SCALARS[tp]
        if not isinstance(value, ok) or (isinstance(value, bool) and tp is not bool):
            raise InputError(f"{name} must be {what}, got {value!r}")
        return conv(value)
    if isinstance(tp, type) and tp is not Any and not isinstance(value, tp):
        raise InputError(f"{name} must be a {tp.__name__}, got {type(value).__name__}")
    return value


def _check_bounds(name: str, value: Any, meta) -> None:
    if value is None or isinstance(value, (bool, str, tuple, Path)) or not isinstance(value, (int, float)):
        return
    if isinstance(value, float) and math.isinf(value):  # NaN fails every bound below and is named there
        raise InputError(f"{name} must be a finite number, got {value!r}")
    if "min" in meta and value < meta["min"]:
        raise InputError(f"{name} must be >= {meta['min']}, got {value!r}")
    if "max" in meta and value > meta["max"]:
        raise InputError(f"{name} must be <= {meta['max']}, got {value!r}")
    if "above" in meta and not value > meta["above"]:
        raise InputError(f"{name} must be > {meta['above']}, got {value!r}")
    if "below" in meta and not value < meta["below"]:
        raise InputError(f"{name} must be < {meta['below']}, got {value!r}")


#: True while a command of the CLI builds requests (:func:`normscope.cli.run` sets it): errors then name the option
#: (``--max-queries must be >= 1``), else the field (``max_queries must be >= 1``), so an API user reads the name
#: they passed.
CLI_NAMES: contextvars.ContextVar[bool] = contextvars.ContextVar("normscope_cli_names", default=False)


def said(field: str) -> str:
    """How an error names a request field: ``--probe-items`` on the command line, ``probe_items`` in the API."""
    return "--" + field.replace("_", "-") if CLI_NAMES.get() else field


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


@dataclasses.dataclass(frozen=True)
class Request:
    """Base of every request (see the module docstring). Subclasses are frozen dataclasses."""

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        cli = CLI_NAMES.get()
        for f in dataclasses.fields(self):
            # errors name what the caller set: the option on the command line, the field in the API
            name = "--" + f.name.replace("_", "-") if cli else f.name
            value = check_value(name, getattr(self, f.name), hints[f.name])
            _check_bounds(name, value, f.metadata)
            object.__setattr__(self, f.name, value)

    def replace(self, **changes) -> Request:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """Every field as strict JSON (paths as strings, tuples as lists, nested requests as dicts)."""
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Field name -> default (what a command shows as its option's default)."""
        return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}

    @classmethod
    def help(cls, name: str) -> str:
        """The ``help`` recorded for field ``name`` by :func:`param` ("" when none)."""
        return next((f.metadata.get("help", "") for f in dataclasses.fields(cls) if f.name == name), "")


@dataclasses.dataclass(frozen=True)
class Resampling(Request):
    """How a stage resamples: bootstrap CIs, permutation p-values, the seed of both, the confidence level.

    Attributes
    ----------
    n_boot : int
        Bootstrap resamples of every confidence interval (0: no CI).
    n_perm : int
        Permutations of every permutation p-value (0: none).
    seed : int
        Seed of every random choice (subsets, batches, resamples).
    level : float
        Confidence level of every interval (0.95: 95 % intervals).
    """

    n_boot: int = param(1000, min=0, help="Bootstrap resamples of every confidence interval.")
    n_perm: int = param(0, min=0, help="Permutations of every p-value (0: no permutation p-value).")
    seed: int = param(0, help="Seed of every random choice (subsets, batches, resamples).")
    level: float = param(0.95, above=0.0, below=1.0, help="Confidence level of every interval.")

    def argv(self, *, perm: bool = False) -> list[str]:
        """The command-line options that set these values (``--n-perm`` for a command that has it: ``perm``)."""
        out = ["--n-boot", str(self.n_boot)]
        if perm:
            out += ["--n-perm", str(self.n_perm)]
        return out + ["--seed", str(self.seed)]


@dataclasses.dataclass(frozen=True)
class Embedding(Request):
    """How a stage embeds its texts: the model and its forward passes.

    Attributes
    ----------
    model : str or None
        Model name or path (:func:`normscope.load_encoder`); None: the bundled all-MiniLM-L6-v2.
    device : str
        Torch device.
    precision : {"fp32", "bf16"}
        Precision of the forward passes (docs/embed.md).
    batch_size : int
        Texts per model call and per cache shard.
    junk : {"drop", "error"}
        Junk items are left out and listed, or stop the run.
    runtime : {"torch", "openvino"}
        Runtime of the forward passes (``--runtime``; :func:`normscope.load_encoder`); left out of
        :meth:`to_json` when ``"torch"`` (report stage keys as before). The vectors' fingerprint
        records it (``runtime="openvino:f32"``), so results and caches of the two never mix.
    """

    model: str | None = param(None, help="Model (default: the bundled all-MiniLM-L6-v2).")
    device: str = param("cpu", help="Torch device (cpu, cuda, cuda:N, mps).")
    precision: Precision = "fp32"
    batch_size: int = param(64, min=1, help="Texts per model call and per cache shard.")
    junk: Junk = "drop"
    runtime: Runtime = "torch"

    def to_json(self) -> dict:
        """Every field as strict JSON, ``runtime`` only when not ``"torch"``."""
        out = super().to_json()
        if out["runtime"] == "torch":
            del out["runtime"]
        return out

    def argv(self, model: str) -> list[str]:
        """The command-line options that set these values (``model``: the name to print for a None model)."""
        out = ["--model", self.model or model, "--precision", self.precision]
        if self.device != "cpu":
            out += ["--device", self.device]
        if self.batch_size != 64:
            out += ["--batch-size", str(self.batch_size)]
        if self.runtime != "torch":
            out += ["--runtime", self.runtime]
        return out + (["--junk-error"] if self.junk == "error" else [])
