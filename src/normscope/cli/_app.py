"""The ``normscope`` typer application and its conventions (:class:`_Command`, :class:`_Group`, the global options).

The command modules register their commands on :data:`app`; :mod:`normscope.cli` imports them and runs it. Kept
apart from :mod:`normscope.cli` so that a command module imports this module, not the package that imports it
(no import cycle).
"""

from __future__ import annotations

import copy
import functools
import typing
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from normscope import __version__
from normscope.cli import _options
from normscope.data import set_defaults
from normscope.datasets import set_data_root

__all__ = ["app"]


@functools.lru_cache(maxsize=1)
def _shared_help() -> dict[str, str]:
    """Parameter name -> help of the options declared once in :mod:`normscope.cli._options`."""
    out = {}
    for name in _options.__all__:
        for info in typing.get_args(getattr(_options, name))[1:]:
            # with Annotated, typer keeps the first declaration in ``default``, the rest in ``param_decls``
            decls = [d for d in (info.default, *(info.param_decls or ())) if isinstance(d, str) and d.startswith("--")]
            if decls and info.help:
                out[decls[0][2:].replace("-", "_")] = info.help
    return out


class _HelpParams:
    """Flags without a ``<bool>`` placeholder; missing help filled from the shared options."""

    def get_params(self, ctx):
        params = super().get_params(ctx)  # type: ignore[misc]
        shared = _shared_help()
        for p in params:
            if isinstance(p, TyperOption):
                if p.is_flag and not p.count and p.metavar is None:
                    p.metavar = ""
                elif p.metavar is None:  # argparse's convention (--out OUT), not typer's <path>
                    long = next((o for o in p.opts if o.startswith("--")), "--" + (p.name or "value"))
                    p.metavar = long[2:].upper().replace("-", "_")
            elif isinstance(p, TyperArgument):  # "INPUT  Text file ...", not typer's "INPUT <str>"
                p.display_type_rich = lambda ctx=None: None
                if not p.help and p.name in shared:
                    p.help = shared[p.name]
        return params


def _check_repeats(cmd, ctx, args: list[str]) -> None:
    """A usage error when an option that takes one value (or a flag) is given more than once."""
    cx = _click_exceptions()
    single: dict[str, TyperOption] = {}
    for p in cmd.get_params(ctx):
        if isinstance(p, TyperOption) and not p.multiple and not p.count:
            for opt in (*p.opts, *p.secondary_opts):
                single[opt] = p
    seen: dict[str, list[str]] = {}
    it = iter(args)
    for tok in it:
        if tok == "--":
            break
        name = tok.split("=", 1)[0] if tok.startswith("--") else tok
        p = single.get(name)
        if p is None:
            continue
        seen.setdefault(p.name, []).append(name)
        if not p.is_flag and "=" not in tok:
            next(it, None)  # its value (which may look like an option)
    for names in seen.values():
        if len(names) > 1:
            raise cx.UsageError(f"{' and '.join(dict.fromkeys(names))} given {len(names)} times: the option takes one "
                                "value", ctx)


#: The global options a command also takes after its name (``normscope correlate ... --data DIR`` is
#: ``normscope --data DIR correlate ...``), and how each applies its value (the same as :func:`_root`).
_GLOBAL_AFTER = {
    "data": lambda v: set_data_root(v) if v is not None else None,
    "offline": lambda v: set_defaults(offline=True) if v else None,
    "mirror": lambda v: set_defaults(mirror=v) if v is not None else None,
    "no_verify": lambda v: set_defaults(verify=False) if v else None,
}


def _global_params(ctx, own) -> list:
    """Copies of the root's global options (:data:`_GLOBAL_AFTER`) that the command ``own`` params do not declare
    themselves: not passed to the command's function; each applies its value when parsed, as after ``normscope``."""
    root = ctx.find_root().command if ctx is not None else None
    if root is None or root is ctx.command:
        return []
    taken = {o for p in own for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))}
    out = []
    for p in root.params:
        if p.name in _GLOBAL_AFTER and not taken.intersection(p.opts):
            q = copy.copy(p)
            q.expose_value = False
            q.callback = (lambda apply: lambda _ctx, _param, value: apply(value))(_GLOBAL_AFTER[p.name])
            q.help = (q.help or "") + " Also accepted before the command name."
            out.append(q)
    return out


class _Command(_HelpParams, TyperCommand):
    """A command whose usage line names its arguments ``ITEMS`` / ``[INPUT]``, that refuses a repeated
    single-value option, and that also takes the global options ``--data``, ``--offline``, ``--mirror`` and
    ``--no-verify`` after its name (where it does not declare an option of that name itself)."""

    def get_params(self, ctx):
        params = super().get_params(ctx)
        extra = _global_params(ctx, params)
        if not extra:
            return params
        return params[:-1] + extra + params[-1:] if params and params[-1].name == "help" else params + extra

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        _check_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        """Run the command under a :func:`normscope._progress.heartbeat`: a progress line on stderr whenever it
        printed nothing for 10 s (the step it is in, or its running tracker's count and ETA)."""
        from normscope._progress import heartbeat  # deferred: keeps the CLI's start-up imports light

        with heartbeat(ctx.command_path.removeprefix("normscope ").strip() or "normscope"):
            return super().invoke(ctx)

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if isinstance(p, TyperArgument):
                name = (p.metavar or p.name or "").upper() + ("..." if p.nargs != 1 else "")
                pieces.append(name if p.required else f"[{name}]")
        return pieces


class _Group(_HelpParams, TyperGroup):
    """A command group with the same help conventions; its commands listed in alphabetical order."""

    def list_commands(self, ctx) -> list[str]:
        return sorted(super().list_commands(ctx))


app = typer.Typer(
    name="normscope",
    help="The embedding norm as a measured, theory-backed signal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    cls=_Group,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"normscope {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print normscope's version and exit.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Never download a dataset (also $NORMSCOPE_OFFLINE=1); "
                                          "what needs an absent dataset says which `normscope data fetch` to run.")] = False,
    mirror: Annotated[Optional[str], typer.Option("--mirror", metavar="URL|DIR", help="Fetch datasets from this "
                                                  "mirror (also $NORMSCOPE_DATA_MIRROR); see docs/data.md.")] = None,
    data: Annotated[Optional[Path], typer.Option("--data", metavar="DIR", help="Data folder searched first for "
                                                 "datasets (also $NORMSCOPE_DATA; default ../shared/data when it "
                                                 "exists); see docs/data.md.")] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Use local dataset copies (--data, $NORMSCOPE_DATA, "
                                            "../shared/data) as they are, without checking them against the "
                                            "registry's hashes (also $NORMSCOPE_NO_VERIFY=1).")] = False,
) -> None:
    """The embedding norm as a measured, theory-backed signal."""
    set_defaults(offline=True if offline else None, mirror=mirror, verify=False if no_verify else None)
    if data is not None:
        set_data_root(data)


def _click_exceptions():
    """The click exception classes typer raises (typer >= 0.2x vendors click as ``typer._click``)."""
    try:
        from typer._click import exceptions as cx
    except ImportError:  # older typer: click itself
        from click import exceptions as cx
    return cx
