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
           "ENGINES", "Junk", "Runtime", "RUNTIMES", "Option", "NO_FLAG", "JUNK_HELP", "option_of", "option_fields",
           "from_options", "library_fields"]

#: Precision of a model's forward passes (docs/embed.md).
Precision = Literal["fp32", "bf16"]
PRECISIONS: tuple[str, ...] = typing.get_args(Precision)
#: Runtime of a model's forward passes (docs/embed.md, "OpenVINO runtime"): ``auto`` (the default) is OpenVINO f32
#: when it is installed and measured equal to torch, else torch.
Runtime = Literal["auto", "torch", "openvino"]
RUNTIMES: tuple[str, ...] = typing.get_args(Runtime)
#: Where a corpus is embedded (docs/scale.md).
Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = typing.get_args(Engine)
#: What happens to junk items (empty, or special tokens only: :func:`normscope.inputs.find_junk`).
Junk = Literal["drop", "error"]
#: The help of ``--junk-error`` (the flag that sets ``junk="error"``).
JUNK_HELP = ("Stop with an error on junk items (empty after normalisation, or only special tokens) instead of leaving "
             "them out and listing them.")


class _NoFlag:
    """The :attr:`Option.flag` of an option that takes a value."""

    def __repr__(self) -> str:
        return "NO_FLAG"


NO_FLAG = _NoFlag()


@dataclasses.dataclass(frozen=True)
class Option:
    """How a request field is set on the command line: declared once, on the field (:func:`param`'s ``cli``).

    The command's typer option is generated from it (:func:`normscope.cli._options.option_for`), the field's value
    is read back from that option (:func:`from_options`), and the request's reproduce command writes it
    (:meth:`Request.argv`), so the three cannot drift apart.

    Attributes
    ----------
    name : str
        The long option, ``--batch-size``; a bool's two flags ``--dropout/--no-dropout``.
    help : str
        The option's help.
    short : str or None
        A short alias (``-m``).
    flag : object
        For a flag (an option without a value): the field value the bare flag sets (``--junk-error``: ``"error"``;
        ``--no-track``: ``False``). :data:`NO_FLAG` for an option with a value.
    none : str or None
        The word that stands for None on the command line (``--fit-split cv``); None: no word (the option left out
        means None, which must then be the default).
    show : bool
        The reproduce command writes the option even at its default (``--model``, ``--seed``: the page's commands
        say them).
    """

    name: str
    help: str = ""
    short: str | None = None
    flag: Any = NO_FLAG
    none: str | None = None
    show: bool = False

    @property
    def is_flag(self) -> bool:
        """True for an option without a value."""
        return self.flag is not NO_FLAG

    def tokens(self, value: Any, field: str) -> list[str]:
        """The command-line words that set ``value`` (``[]``: the option left out).

        Raises
        ------
        ValueError
            ``value`` has no command-line form (None without a :attr:`none` word, a flag's other value).
        """
        if self.is_flag:
            if value == self.flag:
                return [self.name]
            raise ValueError(f"{field} = {value!r}: the flag {self.name} sets only {self.flag!r}")
        if "/" in self.name:  # a bool's two flags, --ignore-identical-ids/--keep-identical-ids
            on, off = self.name.split("/")
            return [on if value else off]
        if value is None:
            if self.none is None:
                raise ValueError(f"{field} = None has no command-line form ({self.name} takes a value)")
            return [self.name, self.none]
        if isinstance(value, tuple):
            return [self.name, ",".join(map(_word, value))]
        return [self.name, _word(value)]


def _word(value: Any) -> str:
    """One value as a command-line word (floats in their shortest exact form, paths as strings)."""
    return repr(value) if isinstance(value, float) else str(value)


def param(default: Any = dataclasses.MISSING, *, min: float | None = None, max: float | None = None,
          below: float | None = None, above: float | None = None, help: str = "", cli: str | None = None,
          short: str | None = None, flag: Any = NO_FLAG, none: str | None = None, show: bool = False,
          omit: tuple[str, ...] = ()) -> Any:
    """A request field with bounds (``min <= value <= max``, ``above < value < below``; None: unbounded) and, with
    ``cli``, its command-line option (:class:`Option`: ``cli`` its name, ``help``, ``short``, ``flag``, ``none``,
    ``show``).

    ``omit`` (a field holding a nested request, such as ``resampling``): the nested fields the command has no option
    for (their values are the library's; :meth:`Request.argv` never writes them).
    """
    meta: dict[str, Any] = {k: v for k, v in (("min", min), ("max", max), ("below", below), ("above", above))
                            if v is not None}
    meta["help"] = help
    if cli is not None:
        meta["option"] = Option(cli, help, short, flag, none, show)
    if omit:
        meta["omit"] = tuple(omit)
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


def option_of(cls: type, name: str) -> Option | None:
    """The command-line :class:`Option` of field ``name`` of the request class ``cls`` (None: the library sets it).

    Raises
    ------
    KeyError
        ``cls`` has no field ``name``.
    """
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.metadata.get("option")
    raise KeyError(f"{cls.__name__} has no field {name!r}")


_UNSET = object()


def _cli_value(value: Any, tp: Any) -> Any:
    """One value as a command parsed it (a str, Path, int or float) as the field of annotation ``tp`` holds it: a
    path as a string, digits as an int where the field takes int or str (``--probe-items 40``), a number word as a
    float where it takes floats; anything else as it is (the request's check names what is wrong)."""
    args = [a for a in typing.get_args(tp) if a is not type(None)] if typing.get_origin(tp) in (
        typing.Union, types.UnionType) else [tp]
    if isinstance(value, Path) and Path not in args:
        return str(value)
    if isinstance(value, str):
        if int in args and value.lstrip("-").isdigit():
            return int(value)
        if float in args and str not in args:
            try:
                return float(value)
            except ValueError:
                return value
    return value


def _from_cli(opt: Option, value: Any, tp: Any) -> Any:
    """The field value a command's parameter ``value`` stands for (``_UNSET``: not given, the default stays)."""
    if opt.is_flag:
        return opt.flag if value else _UNSET
    if value is None:
        return _UNSET
    if opt.none is not None and value == opt.none:
        return None
    if isinstance(value, (list, tuple)):
        inner = typing.get_args(tp)
        inner = typing.get_args(inner[0]) if typing.get_origin(inner[0]) is tuple else inner  # X | None -> X
        return tuple(_cli_value(v, inner[0] if inner else Any) for v in value if v != "")  # [""]: the empty list
    return _cli_value(value, tp)


def from_options(request_type: type[R], values: typing.Mapping[str, Any], *, base: R | None = None,
                 **fixed: Any) -> R:
    """The request ``request_type`` built from a command's parameters (each named as its field; the inverse of
    :meth:`Request.argv`).

    Parameters
    ----------
    request_type : type of Request
    values : mapping of str to object
        Parameter name -> value as typer parsed it; only fields with an :class:`Option` are read, a nested
        request's (``embedding``, ``resampling``) from the same mapping. None (an option not given), an unset flag
        or an absent name leave the field at its default; a flag sets :attr:`Option.flag`; :attr:`Option.none`
        reads as None; lists become tuples (``[""]``, an option given as ``''``, the empty tuple).
    base : Request or None
        Defaults taken from this request instead of the class's (nested requests: the owner's default).
    **fixed
        Fields set directly (values no option carries).

    Returns
    -------
    Request
        Checked at construction: a bad value raises :class:`~normscope.errors.InputError` naming its option.
    """
    hints = _hints(request_type)
    changes = dict(fixed)
    for f in dataclasses.fields(request_type):
        if f.name in fixed:
            continue
        default = getattr(base, f.name) if base is not None else f.default
        if isinstance(default, Request):
            changes[f.name] = from_options(type(default), values, base=default)
            continue
        opt = f.metadata.get("option")
        if opt is None or f.name not in values:
            continue
        value = _from_cli(opt, values[f.name], hints[f.name])
        if value is not _UNSET:
            changes[f.name] = value
    return dataclasses.replace(base, **changes) if base is not None else request_type(**changes)


@dataclasses.dataclass(frozen=True)
class Request:
    """Base of every request (see the module docstring). Subclasses are frozen dataclasses."""

    #: The first words of the command that runs the request (``("normscope", "tokens")``); ``()``: :meth:`argv`
    #: gives the options only (the caller writes the rest, e.g. ``normscope probe ITEMS --model M --pairs P``).
    COMMAND: typing.ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        hints = _hints(type(self))
        cli = CLI_NAMES.get()
        for f in dataclasses.fields(self):
            # errors name what the caller set: the option on the command line, the field in the API
            opt = f.metadata.get("option")
            name = (opt.name if opt is not None else "--" + f.name.replace("_", "-")) if cli else f.name
            value = check_value(name, getattr(self, f.name), hints[f.name])
            _check_bounds(name, value, f.metadata)
            object.__setattr__(self, f.name, value)

    def replace(self, **changes) -> Request:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict:
        """Every field as strict JSON (paths as strings, tuples as lists, nested requests as dicts)."""
        return {f.name: to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def argv(self) -> list[str]:
        """The command that runs this request: :attr:`COMMAND`, then :meth:`options`. Generated from the fields'
        :class:`Option` s, the same declarations the command's options are generated from.

        Raises
        ------
        ValueError
            A field holds a value no option can write (:meth:`Option.tokens`).
        """
        return [*self.COMMAND, *self.options()]

    def options(self, base: Request | None = None, omit: tuple[str, ...] = ()) -> list[str]:
        """The command-line options that set this request's fields, in field order: each field with an
        :class:`Option` whose value differs from its default (``base``'s, else the class's), or that is shown
        (:attr:`Option.show`); a nested request's options in its place, less its ``omit`` fields. Fields without an
        option are the library's and are not written (:func:`library_fields`)."""
        out: list[str] = []
        for f in dataclasses.fields(self):
            if f.name in omit:
                continue
            value = getattr(self, f.name)
            default = getattr(base, f.name) if base is not None else f.default
            if isinstance(value, Request):
                out += value.options(default if isinstance(default, Request) else None, f.metadata.get("omit", ()))
                continue
            opt = f.metadata.get("option")
            if opt is None:
                continue
            if value == default and (not opt.show or opt.is_flag or (value is None and opt.none is None)):
                continue
            out += opt.tokens(value, f.name)
        return out

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """Field name -> default (what a command shows as its option's default)."""
        return {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}

    @classmethod
    def help(cls, name: str) -> str:
        """The ``help`` recorded for field ``name`` by :func:`param` ("" when none)."""
        return next((f.metadata.get("help", "") for f in dataclasses.fields(cls) if f.name == name), "")


R = typing.TypeVar("R", bound=Request)


def option_fields(cls: type) -> dict[str, tuple[type, Option, Any]]:
    """Every field of the request class ``cls`` that its command sets, nested requests' included (less their
    ``omit``): field name -> (the class that declares it, its :class:`Option`, its default in ``cls``).

    Raises
    ------
    ValueError
        Two fields of the same name (the command's parameters are named after the fields).
    """
    out: dict[str, tuple[type, Option, Any]] = {}

    def walk(owner: type, default: Any, omit: tuple[str, ...]) -> None:
        for f in dataclasses.fields(owner):
            d = getattr(default, f.name) if default is not None else f.default
            if isinstance(d, Request):
                walk(type(d), d, f.metadata.get("omit", ()))
            elif "option" in f.metadata and f.name not in omit:
                if f.name in out:
                    raise ValueError(f"{cls.__name__}: two fields named {f.name!r} have options")
                out[f.name] = (owner, f.metadata["option"], d)

    walk(cls, None, ())
    return out


def library_fields(req: Request, prefix: str = "", omit: tuple[str, ...] = ()) -> list[str]:
    """The field paths of ``req`` (``resampling.level``) that no option of its command sets: fields without an
    :class:`Option`, and a nested request's ``omit`` fields. A value of these other than the default is not
    reproduced by :meth:`Request.argv`."""
    out = []
    for f in dataclasses.fields(req):
        value = getattr(req, f.name)
        if isinstance(value, Request):
            out += library_fields(value, f"{prefix}{f.name}.", f.metadata.get("omit", ()))
        elif f.name in omit or "option" not in f.metadata:
            out.append(prefix + f.name)
    return out


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

    n_boot: int = param(1000, min=0, cli="--n-boot", show=True,
                        help="Bootstrap resamples of every confidence interval.")
    n_perm: int = param(0, min=0, cli="--n-perm", show=True,
                        help="Permutations of every p-value (0: no permutation p-value).")
    seed: int = param(0, cli="--seed", show=True, help="Seed of every random choice (subsets, batches, resamples).")
    level: float = param(0.95, above=0.0, below=1.0, help="Confidence level of every interval.")


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
    runtime : {"auto", "torch", "openvino"}
        Runtime of the forward passes (``--runtime``; :func:`normscope.load_encoder`). ``auto`` (default):
        OpenVINO f32 when ``openvino`` is installed and the converted model equals torch fp32 to 1e-6
        relative in norm on a few check texts, else torch. Left out of :meth:`to_json` when ``"auto"``
        (report stage keys as before); the vectors' fingerprint records the runtime that ran
        (``runtime="openvino:f32"``, or none for torch), so results and caches of the two never mix.
    """

    model: str | None = param(
        None, cli="--model", short="-m", show=True,
        help="Model: the bundled default, a sentence-transformers dir or hub id, hf:<name>, hf-clip:<name> (CLIP), "
        "open_clip:<arch>/<pretrained>, glove:6B-50d, or .npy/.parquet vectors.")
    device: str = param("cpu", cli="--device", help="Torch device (cpu, cuda, cuda:N, mps).")
    precision: Precision = param(
        "fp32", cli="--precision", show=True,
        help="Precision of the model's forward pass: fp32, or bf16 (matrix products in bfloat16 under torch.autocast, "
        "about 2x faster on CPUs with AVX-512 BF16/AMX; vectors stay float32, the norm error vs fp32 is measured on a "
        "sample and written to the JSON).")
    batch_size: int = param(64, min=1, cli="--batch-size", help="Texts per model call and per cache shard.")
    junk: Junk = param("drop", cli="--junk-error", flag="error", help=JUNK_HELP)
    runtime: Runtime = param(
        "auto", cli="--runtime",
        help="Inference runtime of the model's forward passes: auto (default: OpenVINO f32 when openvino is installed "
        "and the converted model equals torch fp32 to 1e-6 relative in norm on 8 check texts, else torch; the "
        "fingerprint records which ran), torch, or openvino (sentence-transformers models on the CPU; pip install "
        "'normscope[openvino]'; the model is converted once and cached; fp32 vectors equal torch's to ~1e-7 relative "
        "in norm; falls back to torch with a warning when openvino is missing). Probes and the lab always run on "
        "torch.")

    def to_json(self) -> dict:
        """Every field as strict JSON, ``runtime`` only when not ``"auto"`` (the default)."""
        out = super().to_json()
        if out["runtime"] == "auto":
            del out["runtime"]
        return out
