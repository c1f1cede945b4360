"""Options declared once: a request field's :class:`~normscope.requests.Option` (its name, help, flag) generates its
typer option here (:func:`option_for`), and the same declaration writes the reproduce command
(:meth:`normscope.requests.Request.argv`) and reads the parsed value back (:func:`normscope.requests.from_options`).

Adding an option to a command is one field (``param(..., cli="--name", help=...)`` on its request) and one line in
the command's signature (``name: option_for(TheRequest, "name") = _DEFAULT.name``). The options of this module that
belong to no request (``--json``, ``-o``, ``--fig``, ``--trust-remote-code``, several ``--model``) are declared here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from normscope.encoders import DEFAULT_MODEL
from normscope.requests import Embedding, Resampling, option_of
from normscope.requests.retrieval import RetrievalRequest

__all__ = ["Model", "Models", "Device", "Seed", "JsonOut", "TableOut", "FigOut", "JunkError", "TrustRemoteCode",
           "BatchSize", "NBoot", "Precision", "Runtime", "Engine", "Address", "Workers", "DEFAULT_MODEL", "split_list",
           "models_of", "option_for"]


def option_for(cls: type, name: str, *, help: str | None = None, optional: bool = False, bounds: bool = False) -> Any:
    """The typer parameter annotation of field ``name`` of the request class ``cls``, from its
    :class:`~normscope.requests.Option`: ``Annotated[type, typer.Option(name, short, help=...)]``.

    Parameters
    ----------
    cls : type of Request
    name : str
        A field with an option (``param(..., cli=...)``).
    help : str or None
        The option's help where one command shows another (``lab``, whose options serve four requests); None: the
        field's.
    optional : bool
        Parsed as ``X | None`` even where the field is not (a command whose default None means "the request's").
    bounds : bool
        Let typer check the field's ``min`` / ``max`` (for a command that passes the value on without building the
        request, such as ``embed --workers``); by default the request checks them, naming the option.

    Returns
    -------
    typing.Annotated
        A flag is ``bool`` (``--a/--b`` for a two-named bool); a tuple field is a repeatable option whose comma
        lists are split (:func:`split_list`), default None; a ``Literal`` field is ``str`` (the request names a
        wrong choice); a field that takes an int or a string (``--probe-items 40`` / a file) is ``str``.

    Raises
    ------
    TypeError
        The field has no option.
    """
    opt = option_of(cls, name)
    if opt is None:
        raise TypeError(f"{cls.__name__}.{name} has no command-line option (param(..., cli=...))")
    tp = typing.get_type_hints(cls)[name]
    decls = [opt.name] + ([opt.short] if opt.short else [])
    kw: dict[str, Any] = {"help": opt.help if help is None else help}
    union = typing.get_origin(tp) in (typing.Union, types.UnionType)
    args = [a for a in typing.get_args(tp) if a is not type(None)] if union else [tp]
    nullable = optional or (union and len(args) < len(typing.get_args(tp)))
    if bounds:
        kw.update({k: v for k, v in dataclasses.fields(cls)[_index(cls, name)].metadata.items() if k in ("min", "max")})
    if opt.is_flag or "/" in opt.name:
        py: Any = bool
    elif typing.get_origin(args[0]) is tuple:
        py, nullable = list[str], True
        kw["callback"] = _split_or_empty
    elif typing.get_origin(args[0]) is typing.Literal:
        py = str
        choices = "|".join(map(str, typing.get_args(args[0])))
        if len(choices) <= 16:
            kw["metavar"] = f"[{choices}]"
    else:
        py = str if len(args) > 1 else args[0]
    return Annotated[Optional[py] if nullable else py, typer.Option(*decls, **kw)]


def split_list(values: list[str] | None) -> list[str] | None:
    """A list option's values with comma lists split: ``["a,b", "c"]`` -> ``["a", "b", "c"]`` (the callback of
    every repeatable option: ``--scorer a,b`` is ``--scorer a --scorer b``). Empty parts are dropped."""
    if values is None:
        return None
    return [part.strip() for v in values for part in str(v).split(",") if part.strip()]


def _split_or_empty(values: list[str] | None) -> list[str] | None:
    """:func:`split_list`, except that an option given only as ``''`` is ``[""]``: the empty list asked for (typer
    reads an empty list as the option not given), which :func:`normscope.requests.from_options` reads as ``()``."""
    parts = split_list(values)
    return [""] if values and not parts else parts


def models_of(values: list[str] | None) -> list[str]:
    """The models of a ``--model`` list option, in order, each once (default: the bundled model)."""
    return list(dict.fromkeys(values or [DEFAULT_MODEL]))


def _index(cls: type, name: str) -> int:
    return [f.name for f in dataclasses.fields(cls)].index(name)


Model = option_for(Embedding, "model")
Models = Annotated[
    Optional[list[str]],
    typer.Option("--model", "-m", metavar="MODEL", callback=split_list,
                 help="Model (the bundled default, a sentence-transformers dir or hub id, hf:<name>, hf-clip:<name>, "
                 "open_clip:<arch>/<pretrained>, glove:6B-50d); several (repeated, or a comma list) run each and show "
                 "them side by side."),
]
Device = option_for(Embedding, "device")
Seed = option_for(Resampling, "seed")
NBoot = option_for(Resampling, "n_boot")
JsonOut = Annotated[Optional[Path], typer.Option("--json", help="Write the summary as (strict) JSON to this path.")]
TableOut = Annotated[Optional[Path], typer.Option("-o", "--out", help="Write the per-item table (parquet) to this path.")]
FigOut = Annotated[Optional[Path], typer.Option("--fig", help="Write the figure (PNG) to this path; a command with "
                                                "several figures writes the others beside it (<stem>_<name>.png).")]
JunkError = option_for(Embedding, "junk")
TrustRemoteCode = Annotated[
    bool, typer.Option("--trust-remote-code", help="Let the model repository run its own code (off by default).")
]
BatchSize = option_for(Embedding, "batch_size")
#: ``--precision fp32|bf16`` (default fp32). Wiring it into a command that embeds is one line each:
#: a parameter ``precision: Precision = "fp32"`` and ``load_encoder(..., precision=precision)`` (or
#: ``embed_texts(..., precision=precision)`` / ``embed_input(..., precision=precision)``); the
#: fingerprint, cache key, ``precision`` and ``norm_rel_error_vs_fp32`` then follow (docs/embed.md).
Precision = option_for(Embedding, "precision")
#: ``--runtime auto|torch|openvino`` (default auto); named apart from ``embed --backend`` (the model loader) and
#: ``--engine`` (where a corpus is embedded). Wiring: ``load_encoder(..., runtime=runtime)`` or
#: ``Embedding(..., runtime=runtime)``.
Runtime = option_for(Embedding, "runtime")
Engine = option_for(RetrievalRequest, "engine")
Address = option_for(RetrievalRequest, "address")
Workers = option_for(RetrievalRequest, "workers", bounds=True)
