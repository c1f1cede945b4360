"""normscope command-line interface (typer + rich).

One sub-command per stage, each in its own module of this package. Exit codes:
0 success, 2 bad input or usage (one-line message, no traceback), 1 internal error.

Conventions, applied to every command here (:class:`_Command`, :class:`_Group`):

- a command that prints nothing for 10 s prints a progress line on stderr (:func:`normscope._progress.heartbeat`);
- help is plain text wrapped at the terminal's width (readable at 80 columns, never cut); a flag
  shows no value placeholder (typer >= 0.22 prints ``<bool>``), positional arguments appear in the
  usage line as ``ITEMS`` / ``[INPUT]`` (click's convention, not typer's ``{items}``), and an option
  declared without help takes the help of the shared option of the same name in
  :mod:`normscope.cli._options` (``--seed``, ``--device``, ``--trust-remote-code`` ...);
- an option that takes one value given twice (``embed --model A --model B``) is a usage error, never
  "the last one wins"; a list option (``--model`` where several models run side by side,
  ``--scorer``, ``--signals``, ``--only``, ``--control``) is repeatable and also takes a comma list:
  ``--scorer a,b`` is ``--scorer a --scorer b`` (:func:`normscope.cli._options.split_list`);
- one name per concept across commands: ``--dataset`` the data a command analyses, ``--data`` (global)
  the folder searched first for datasets, ``--pairs`` training pairs, ``--n-items`` an item count,
  ``wordfreq:N`` the N most frequent English words as items, ``--fig`` the figure (a command with
  several writes the others beside it), ``--json`` the summary, ``-o/--out`` the per-item table.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import warnings
import typing
from typing import Annotated, Optional

from pathlib import Path

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from normscope import __version__
from normscope.cli import _options
from normscope.data import set_defaults
from normscope.datasets import set_data_root
from normscope.errors import NormscopeError


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


class _Command(_HelpParams, TyperCommand):
    """A command whose usage line names its arguments ``ITEMS`` / ``[INPUT]`` and that refuses a repeated
    single-value option."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        _check_repeats(self, ctx, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx):
        """Run the command under a :func:`normscope._progress.heartbeat`: a progress line on stderr whenever it
        printed nothing for 10 s (the step it is in, or its running tracker's count and ETA)."""
        from normscope._progress import heartbeat

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


# Each module registers its command(s) on ``app`` at import.
from normscope.cli import embed as _embed  # noqa: E402,F401
from normscope.cli import probe as _probe  # noqa: E402,F401
from normscope.cli import correlate as _correlate  # noqa: E402,F401
from normscope.cli import report as _report  # noqa: E402,F401
from normscope.cli import lab as _lab  # noqa: E402,F401
from normscope.cli import retrieval as _retrieval  # noqa: E402,F401
from normscope.cli import data as _data  # noqa: E402,F401
from normscope.cli import similarity as _similarity  # noqa: E402,F401
from normscope.cli import index as _index  # noqa: E402,F401
from normscope.cli import tokens as _tokens  # noqa: E402,F401
from normscope.cli import calibrate as _calibrate  # noqa: E402,F401


def _use_help_classes(t: typer.Typer) -> None:
    """Every command and sub-group registered on ``t`` uses :class:`_Command` / :class:`_Group`."""
    for info in t.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = _Command
    for group in t.registered_groups:
        group.typer_instance.info.cls = _Group
        _use_help_classes(group.typer_instance)


_use_help_classes(app)


def run(argv: list[str] | None = None) -> int:
    """Run the CLI on ``argv`` and return the exit code (0 ok, 2 bad input/usage, 1 internal error).

    :class:`NormscopeError` and usage errors (a missing or malformed option) become one line
    ``error: <message>`` on stderr, with no traceback and no box (exit code 2). Each call runs in its
    own :mod:`contextvars` context, so global options (``--offline``, ``--mirror``) end with it.
    """
    cx = _click_exceptions()
    old_show = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        code = contextvars.copy_context().run(_run_app, argv)
    except NormscopeError as exc:
        typer.echo(f"error: {exc}", err=True)
        return 2
    except cx.UsageError as exc:
        if isinstance(exc, getattr(cx, "NoArgsIsHelpError", ())) and exc.ctx is not None:
            typer.echo(exc.ctx.get_help(), err=True)  # a command group called bare: its help, as typer would
            return 2
        where = exc.ctx.command_path if exc.ctx is not None else "normscope"
        typer.echo(f"error: {exc.format_message()} (see `{where} --help`)", err=True)
        return 2
    except cx.ClickException as exc:
        typer.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code
    except typer.Abort:
        typer.echo("error: aborted", err=True)
        return 130
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        warnings.showwarning = old_show
    return code if isinstance(code, int) else 0


def _run_app(argv):
    """The app on ``argv``, its requests' errors naming command-line options (:data:`normscope.requests.CLI_NAMES`)."""
    from normscope.requests import CLI_NAMES

    CLI_NAMES.set(True)
    return app(args=argv, prog_name="normscope", standalone_mode=False)


def _click_exceptions():
    """The click exception classes typer raises (typer >= 0.2x vendors click as ``typer._click``)."""
    try:
        from typer._click import exceptions as cx
    except ImportError:  # older typer: click itself
        from click import exceptions as cx
    return cx


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Every Python warning a command raises prints as one ``warning: <message>`` line on stderr
    (no source line, no file path of normscope's or a library's code)."""
    print(f"warning: {str(message).splitlines()[0] if str(message) else category.__name__}", file=sys.stderr)


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
